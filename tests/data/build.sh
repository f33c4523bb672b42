#!/bin/sh
# SPDX-License-Identifier: MIT OR Apache-2.0
#
# Rebuilds every generated fixture under tests/data/ from its C source:
#   progs/NAME.bpf.c       -> progs/NAME.bpf.o        (clang -target bpfel -g -O2)
#   progs/{bitfields,enums,fields}.bpf.c
#                          -> progs/NAME.bpfeb.o      (same, -target bpfeb)
#   targets/btf__NAME.c    -> targets/btf__NAME.btf   (raw .BTF of clang -target bpfel -g -c)
#   targets/btf__{bitfields,enums}.c
#                          -> targets/btf__NAME_be.btf (same, -target bpfeb)
#   targets/modbase.c      -> targets/base.btf
#   targets/mkmodule.c     -> targets/module.btf      (split BTF on base.btf, via libbpf)
#
# The outputs are committed: tests never need clang. Needs clang-19,
# llvm-objcopy-19, a C compiler and libbpf-dev (for mkmodule).
# Override the tools with CLANG=, OBJCOPY=, CC=.
set -eu

CLANG=${CLANG:-clang-19}
OBJCOPY=${OBJCOPY:-llvm-objcopy-19}
CC=${CC:-cc}

cd "$(dirname "$0")"
here=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Keep the checkout's path out of the objects (DWARF, BTF line info) so
# rebuilding anywhere gives the same bytes.
prefix_map="-fdebug-prefix-map=$here=."

bpf_obj() { # SRC OUT TARGET
	"$CLANG" -target "$3" -g -O2 $prefix_map -Wall -Werror -c "$1" -o "$2"
}

target_btf() { # SRC OUT TARGET
	"$CLANG" -target "$3" -g $prefix_map -Wall -Werror -c "$1" -o "$tmp/btf.o"
	"$OBJCOPY" --dump-section .BTF="$2" "$tmp/btf.o"
}

for src in progs/*.bpf.c; do
	bpf_obj "$src" "${src%.c}.o" bpfel
done
for name in bitfields enums fields; do
	bpf_obj "progs/$name.bpf.c" "progs/$name.bpfeb.o" bpfeb
done

for src in targets/btf__*.c; do
	target_btf "$src" "${src%.c}.btf" bpfel
done
for name in bitfields enums; do
	target_btf "targets/btf__$name.c" "targets/btf__${name}_be.btf" bpfeb
done

target_btf targets/modbase.c targets/base.btf bpfel
"$CC" -O2 -Wall -Werror -o "$tmp/mkmodule" targets/mkmodule.c -lbpf -lelf -lz
"$tmp/mkmodule" targets/base.btf targets/module.btf

echo "build.sh: fixtures rebuilt in $here"
