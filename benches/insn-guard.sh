#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
#
# The instruction-count guard (issue 30), a step of .ci/test: the main job,
# `btfgen min-core-btf TARGET OUTPUT OBJECT...` (not quiet: its summary line counts every entry
# program's load verdict, the work issue 30 found on the main path), against
# `bpftool gen min_core_btf` counted the
# same way, in instructions (callgrind's total Ir: stable under load, where times are not), and
# the C ABI's peak heap in bytes. Fails when a ratio falls under, or a heap share rises over, its
# threshold in benches/insn-guard.thresholds.
#
# The target is Linux 7.1's BTF (tests/data/targets/vmlinux-7.1.btf.tar.xz, unpacked into a
# temporary directory); the objects are benches/guard/'s corpus, built to be expensive the way
# real tools are (see benches/guard/guard.h). Two cases: one object (ONE_OBJECT, default
# taskwalk.bpf.o) and every object of the corpus in one run; the heap also for one
# libbpf-tools-sized object (REAL_OBJECT, default benches/objs/execsnoop.bpf.o).
#
# Builds nothing: it uses what .ci/test's earlier steps built, `target/release/btfgen` (BTFGEN=)
# and `make lib`'s target/release/libbtfgen.so (LIB_DIR=), and compiles only the small C client
# benches/capi_heap.c. Needs valgrind, bpftool (BPFTOOL=), xz, nm and a C compiler (CC=).
#
# Last, a check no count can make: neither the command nor the C library links std's runtime
# CPU feature detection (cpuid, a VM exit each on a virtual machine).
#
# usage: bash benches/insn-guard.sh
set -euo pipefail
cd "$(dirname "$0")/.."

BTFGEN=${BTFGEN:-target/release/btfgen}
BPFTOOL=${BPFTOOL:-bpftool}
LIB_DIR=${LIB_DIR:-target/release}
CC=${CC:-cc}
THRESHOLDS=${THRESHOLDS:-benches/insn-guard.thresholds}
ONE_OBJECT=${ONE_OBJECT:-benches/guard/taskwalk.bpf.o}
# A libbpf-tools-sized object, for the C ABI's heap at issue 30's bound for one real object.
REAL_OBJECT=${REAL_OBJECT:-benches/objs/execsnoop.bpf.o}
archive=tests/data/targets/vmlinux-7.1.btf.tar.xz
objects=(benches/guard/*.bpf.o)

die() {
    echo "insn-guard: $*" >&2
    exit 2
}

[[ -x $BTFGEN ]] || die "$BTFGEN is missing: build it first (cargo build --release)"
[[ -e $LIB_DIR/libbtfgen.so ]] || die "$LIB_DIR/libbtfgen.so is missing: build it first (make lib)"
command -v valgrind >/dev/null || die "valgrind is not installed"
command -v "$BPFTOOL" >/dev/null || die "$BPFTOOL is not installed"

# threshold KEY: its value in $THRESHOLDS.
threshold() {
    local value
    value=$(awk -v key="$1" '{ sub(/#.*/, "") } $1 == key { print $2 }' "$THRESHOLDS")
    [[ -n $value ]] || die "$THRESHOLDS has no $1"
    echo "$value"
}

# Every threshold is read before anything runs: a missing one fails at once.
for key in insn.one insn.all heap.one heap.all heap.real; do
    threshold "$key" >/dev/null
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xJf "$archive" -C "$work"
target=$work/vmlinux-7.1.btf
[[ -f $target ]] || die "$archive holds no vmlinux-7.1.btf"

# count NAME COMMAND...: run COMMAND under callgrind in the background; `total NAME` reads its
# count once `wait` returned. Counts do not depend on what else runs, so the runs overlap.
pids=()
count() {
    local name=$1
    shift
    valgrind --tool=callgrind --callgrind-out-file="$work/$name.cg" "$@" \
        >"$work/$name.log" 2>&1 &
    pids+=("$!:$name")
}
total() {
    sed -n 's/^totals: \([0-9]*\).*/\1/p' "$work/$1.cg"
}

mkdir "$work/out"
count one-btfgen "$BTFGEN" min-core-btf "$target" "$work/out/one-btfgen.btf" "$ONE_OBJECT"
count one-bpftool "$BPFTOOL" gen min_core_btf "$target" "$work/out/one-bpftool.btf" "$ONE_OBJECT"
count all-btfgen "$BTFGEN" min-core-btf "$target" "$work/out/all-btfgen.btf" "${objects[@]}"
count all-bpftool "$BPFTOOL" gen min_core_btf "$target" "$work/out/all-bpftool.btf" "${objects[@]}"

# The C ABI's peak heap meanwhile, natively: the library counts its own allocations.
"$CC" -std=c99 -O2 -Iinclude -o "$work/capi_heap" benches/capi_heap.c -L"$LIB_DIR" -lbtfgen \
    -Wl,-rpath,"$(cd "$LIB_DIR" && pwd)"
heap_one=$("$work/capi_heap" "$target" "$ONE_OBJECT")
heap_all=$("$work/capi_heap" "$target" "${objects[@]}")
heap_real=$("$work/capi_heap" "$target" "$REAL_OBJECT")

for entry in "${pids[@]}"; do
    if ! wait "${entry%%:*}"; then
        cat "$work/${entry#*:}.log" >&2
        die "${entry#*:}: the command failed under callgrind (its log is above)"
    fi
done

failures=0
printf '%-26s %16s %16s %9s %10s\n' case "bpftool Ir" "btfgen Ir" ratio minimum
# insn CASE KEY: compare bpftool's count with btfgen's for CASE.
insn() {
    local label=$1 key=$2 bpftool btfgen min verdict
    bpftool=$(total "$key-bpftool") btfgen=$(total "$key-btfgen") min=$(threshold "insn.$key")
    verdict=$(awk -v p="$bpftool" -v b="$btfgen" -v m="$min" \
        'BEGIN { r = p / b; printf "%.2f %s", r, (r >= m ? "ok" : "FAILED") }')
    printf '%-26s %16s %16s %8sx %9sx  %s\n' "$label" "$bpftool" "$btfgen" "${verdict% *}" "$min" \
        "${verdict#* }"
    if [[ $verdict == *FAILED ]]; then
        echo "insn-guard: FAILED: $label: bpftool $bpftool instructions / btfgen $btfgen =" \
            "${verdict% *}x, under the threshold ${min}x (insn.$key in $THRESHOLDS)" >&2
        failures=$((failures + 1))
    fi
}
insn "one object (${ONE_OBJECT##*/})" one
insn "all ${#objects[@]} objects" all

printf '\n%-26s %16s %16s %9s %10s\n' case "C ABI peak heap" "target bytes" share maximum
# heap CASE KEY LINE: compare capi_heap's LINE ("N bytes peak (...)") with the target's size.
heap() {
    local label=$1 key=$2 peak size max verdict
    peak=${3%% *} size=$(stat -c %s "$target") max=$(threshold "heap.$key")
    verdict=$(awk -v p="$peak" -v s="$size" -v m="$max" \
        'BEGIN { r = 100 * p / s; printf "%.2f %s", r, (r <= m ? "ok" : "FAILED") }')
    printf '%-26s %16s %16s %8s%% %9s%%  %s\n' "$label" "$peak" "$size" "${verdict% *}" "$max" \
        "${verdict#* }"
    if [[ $verdict == *FAILED ]]; then
        echo "insn-guard: FAILED: $label: C ABI peak heap $peak bytes = ${verdict% *}% of the" \
            "$size-byte target, over the threshold $max% (heap.$key in $THRESHOLDS)" >&2
        failures=$((failures + 1))
    fi
}
heap "one object (${ONE_OBJECT##*/})" one "$heap_one"
heap "all ${#objects[@]} objects" all "$heap_all"
heap "real object (${REAL_OBJECT##*/})" real "$heap_real"

# What instruction counts cannot see: `cpuid`, one instruction to callgrind, is a VM exit on a
# virtual machine. std's runtime CPU feature detection (reached through memchr's `std` feature,
# which a dependency's `std` turns on) runs a dozen at the first `memchr`: 0.2 ms of a 3 ms
# one-object run. Neither the command nor the C library may link it.
printf '\n%-26s %s\n' case "runtime CPU feature probing"
for binary in "$BTFGEN" "$LIB_DIR/libbtfgen.so"; do
    # Read whole first: `grep -q` quitting early would fail `nm` under pipefail.
    symbols=$(nm "$binary") || die "nm $binary failed"
    if grep -q 'std_detect.*detect_and_initialize' <<<"$symbols"; then
        printf '%-26s %s\n' "${binary##*/}" "linked  FAILED"
        echo "insn-guard: FAILED: $binary links std's runtime CPU feature detection" \
            "(std_detect): a dependency turned on memchr's std feature" \
            "(cargo tree -e features -i memchr)" >&2
        failures=$((failures + 1))
    else
        printf '%-26s %s\n' "${binary##*/}" "none  ok"
    fi
done

if ((failures)); then
    echo "insn-guard: $failures case(s) past their threshold" >&2
    exit 1
fi
echo "insn-guard: every case within its threshold"
