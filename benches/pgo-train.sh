#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
#
# The training run of `make cli`'s profile-guided build (packaging/build-cli.sh): the jobs users
# run, on the repository's own inputs only, by a btfgen built with -Cprofile-generate. Every
# command must succeed: a failure here is a broken build.
#
# - min-core-btf of every committed object together (plain: the summary line counts the load
#   verdicts) and of each of benches/objs/ alone (-q), against Linux 7.1's BTF;
# - relocate, dump, and batch on two threads with its JSON report over a small tree;
# - encode and min-core-btf of the DWARF fixtures (gcc and clang, DWARF 4 and 5, type units).
#
# usage: bash benches/pgo-train.sh BTFGEN WORK_DIR
set -euo pipefail
cd "$(dirname "$0")/.."

btfgen=$1
work=$2
rm -rf "$work"
mkdir -p "$work/tree/debian/12/x86_64" "$work/tree/ubuntu/22.04/x86_64"
tar -xJf tests/data/targets/vmlinux-7.1.btf.tar.xz -C "$work"
target=$work/vmlinux-7.1.btf
objects=(benches/guard/*.bpf.o benches/objs/*.bpf.o)

"$btfgen" min-core-btf "$target" "$work/all.btf" "${objects[@]}" 2>/dev/null
for object in benches/objs/*.bpf.o; do
    "$btfgen" min-core-btf -q "$target" "$work/one.btf" "$object"
done
"$btfgen" relocate --btf "$target" "${objects[@]}" >/dev/null
"$btfgen" dump "$target" >/dev/null
cp "$target" "$work/tree/debian/12/x86_64/7.1.btf"
cp tests/data/targets/btf__example_kernel.btf "$work/tree/ubuntu/22.04/x86_64/example.btf"
"$btfgen" batch -q -j2 --btf-dir "$work/tree" --out-dir "$work/batch" \
    --report "$work/batch.json" "${objects[@]}"
for dwarf in tests/data/dwarf/{gcc,clang-19}-dwarf{4,5}.so tests/data/dwarf/*-types.so; do
    "$btfgen" encode -q "$dwarf" "$work/encode.btf"
    "$btfgen" min-core-btf -q "$dwarf" "$work/dwarf.btf" tests/data/dwarf/core.bpf.o
done
