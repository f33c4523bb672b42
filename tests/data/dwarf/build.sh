#!/bin/sh
# SPDX-License-Identifier: MIT OR Apache-2.0
#
# Rebuilds the DWARF fixtures of tests/dwarf.rs from their C sources, and the BTF pahole
# writes for each (the reference the test compares btfgen's conversion with):
#   unit_a.c unit_b.c [tags.c] -> CC-dwarfV.so          (gcc and clang-19, -gdwarf-4 and -5;
#                                                        tags.c with clang only)
#                              -> CC-dwarf4-types.so    (-gdwarf-4 -fdebug-types-section)
#   atomic.c                   -> atomic-CC-dwarf5.so
#   unit_a.c unit_b.c          -> gcc-dwarf5-lto.so     (-flto: the link-time unit refers
#                                                        into the units compiled first with
#                                                        DW_FORM_ref_addr; no pahole BTF)
#   unit_a.c                   -> CC-dwarf5-rel.ko      (-c: a relocatable object, its debug
#                                                        sections relocated by .rela.debug_*,
#                                                        as a kernel module's .ko is; named
#                                                        .ko so that no test takes it for a
#                                                        BPF object)
#   kbase.c                    -> kbase-CC-dwarf5.so    (a small "kernel"; its BTF, by the
#                                                        *.so rule below, is the base)
#   kmod.c                     -> kmod-CC-dwarf5-rel.ko (-c: a module of it, through kbase.h)
#                              -> kmod-CC-dwarf5-rel.pahole.btf (pahole -J --btf_base
#                                 kbase-CC-dwarf5.pahole.btf: its split BTF over the base)
#   kmod.bpf.c                 -> kmod.bpf.o            (CO-RE relocations into the module)
#   kbase.bpf.c                -> kbase.bpf.o           (CO-RE relocations into the base only)
#   clang-19-dwarf5.so         -> clang-19-dwarf5-{zlib,zstd,zlib-gnu}.so
#                                 (objcopy --compress-debug-sections)
#   gcc-dwarf4.so              -> gcc-dwarf4-dwz.so     (dwz: partial units in the file)
#   gcc-dwarfV.so, twice       -> gcc-dwarfV-dwzm.so + gcc-dwarfV-dwzm.sup
#                                 (dwz -m: the shared DWARF moved to the supplementary
#                                 file, named by .gnu_debugaltlink for 4, by DWARF 5's
#                                 .debug_sup with --dwarf-5 for 5; the second copy dropped;
#                                 dwz 0.15 cannot read clang's DWARF 5)
#   core.bpf.c                 -> core.bpf.o            (clang-19 -target bpfel -g -O2)
#   each X.so                  -> X.pahole.btf          (pahole -J --btf_gen_floats)
#                                 but gcc-dwarf4-types.so: pahole 1.24's btf__dedup fails on
#                                 gcc's type units, so the test compares it with
#                                 gcc-dwarf4.pahole.btf (the same types, laid out in units)
#
# Shared objects, linked without the C runtime: their DWARF needs no relocations applied,
# like a vmlinux's, and their symbol table names their functions, as pahole wants.
# The outputs are committed: tests need neither the compilers nor pahole (Debian 12's
# dwarves 1.24; dwz writes no BTF for pahole 1.24 to compare with: it exits 0 without any).
# Override the tools with GCC=, CLANG=, PAHOLE=, OBJCOPY=, DWZ=.
set -eu

GCC=${GCC:-gcc}
CLANG=${CLANG:-clang-19}
PAHOLE=${PAHOLE:-pahole}
OBJCOPY=${OBJCOPY:-objcopy}
DWZ=${DWZ:-dwz}

cd "$(dirname "$0")"
here=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

so() { # CC OUT FLAGS... -- SOURCES...
	cc=$1 out=$2
	shift 2
	flags=
	while [ "$1" != -- ]; do
		flags="$flags $1"
		shift
	done
	shift
	objs=
	for src in "$@"; do
		obj="$tmp/$(basename "$src" .c).o"
		"$cc" -g $flags -fPIC -O0 -fdebug-prefix-map="$here"=. -Wall -c "$src" -o "$obj"
		objs="$objs $obj"
	done
	"$cc" -shared -nostdlib $objs -o "$out"
}

pahole_btf() { # SO or O
	"$PAHOLE" -J --btf_gen_floats --btf_encode_detached="${1%.*}.pahole.btf" "$1"
}

for v in 4 5; do
	so "$GCC" gcc-dwarf$v.so -gdwarf-$v -- unit_a.c unit_b.c
	so "$CLANG" clang-19-dwarf$v.so -gdwarf-$v -- unit_a.c unit_b.c tags.c
done
so "$GCC" gcc-dwarf4-types.so -gdwarf-4 -fdebug-types-section -- unit_a.c unit_b.c
so "$CLANG" clang-19-dwarf4-types.so -gdwarf-4 -fdebug-types-section -- unit_a.c unit_b.c
so "$GCC" atomic-gcc-dwarf5.so -gdwarf-5 -- atomic.c
so "$GCC" gcc-dwarf5-lto.so -gdwarf-5 -flto -- unit_a.c unit_b.c
for cc in "$GCC" "$CLANG"; do
	name=$(basename "$cc" | sed 's/^gcc.*/gcc/')
	"$cc" -g -gdwarf-5 -fPIC -O0 -fdebug-prefix-map="$here"=. -Wall -c unit_a.c -o "$name-dwarf5-rel.ko"
	pahole_btf "$name-dwarf5-rel.ko"
done
so "$CLANG" atomic-clang-19-dwarf5.so -gdwarf-5 -- atomic.c
for cc in "$GCC" "$CLANG"; do
	name=$(basename "$cc" | sed 's/^gcc.*/gcc/')
	so "$cc" kbase-$name-dwarf5.so -gdwarf-5 -- kbase.c
	pahole_btf kbase-$name-dwarf5.so
	"$cc" -g -gdwarf-5 -fPIC -O0 -fdebug-prefix-map="$here"=. -Wall -c kmod.c -o kmod-$name-dwarf5-rel.ko
	"$PAHOLE" -J --btf_gen_floats --btf_base kbase-$name-dwarf5.pahole.btf \
		--btf_encode_detached=kmod-$name-dwarf5-rel.pahole.btf kmod-$name-dwarf5-rel.ko
done

"$CLANG" -target bpfel -g -O2 -fdebug-prefix-map="$here"=. -Wall -Werror -c core.bpf.c -o core.bpf.o
"$CLANG" -target bpfel -g -O2 -fdebug-prefix-map="$here"=. -Wall -Werror -c kmod.bpf.c -o kmod.bpf.o
"$CLANG" -target bpfel -g -O2 -fdebug-prefix-map="$here"=. -Wall -Werror -c kbase.bpf.c -o kbase.bpf.o

for z in zlib zstd zlib-gnu; do
	"$OBJCOPY" --compress-debug-sections=$z clang-19-dwarf5.so clang-19-dwarf5-$z.so
done

cp gcc-dwarf4.so gcc-dwarf4-dwz.so
"$DWZ" gcc-dwarf4-dwz.so
for v in 4 5; do
	flags=
	[ $v = 5 ] && flags=--dwarf-5
	cp gcc-dwarf$v.so gcc-dwarf$v-dwzm.so
	cp gcc-dwarf$v.so "$tmp/second.so"
	"$DWZ" $flags -m gcc-dwarf$v-dwzm.sup -M gcc-dwarf$v-dwzm.sup gcc-dwarf$v-dwzm.so "$tmp/second.so"
done

for f in *.so; do
	case $f in
	*-zlib.so | *-zstd.so | *-zlib-gnu.so | gcc-dwarf4-types.so | *-dwz.so | *-dwzm.so | *-lto.so) ;;
	*) pahole_btf "$f" ;;
	esac
done
