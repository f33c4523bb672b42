#!/bin/sh
# SPDX-License-Identifier: MIT OR Apache-2.0
#
# Rebuilds the instruction-count guard's corpus: NAME.bpf.c -> NAME.bpf.o (clang -target bpfel
# -g -O2, x86-64 kprobe register names). See guard.h for what the programs are made of and
# benches/insn-guard.sh for what measures them; the outputs are committed. Needs clang-19 and
# libbpf-dev. Override the compiler with CLANG=.
set -eu

CLANG=${CLANG:-clang-19}

cd "$(dirname "$0")"
here=$(pwd)
# Keep the checkout's path out of the objects (DWARF, BTF line info).
repo=$(cd ../.. && pwd)
for src in *.bpf.c; do
	"$CLANG" -target bpfel -D__TARGET_ARCH_x86 -g -O2 -fdebug-prefix-map="$repo=." \
		-Wall -Werror -c "$src" -o "${src%.c}.o"
done
echo "build.sh: guard corpus rebuilt in $here"
