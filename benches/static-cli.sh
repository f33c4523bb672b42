#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
#
# The static command, a step of .ci/test: builds `make cli` (packaging/build-cli.sh: btfgen
# linked statically against musl, with src/cli/allocator.rs as its allocator, profile-guided;
# the build benches/ time), then checks what makes it that build and that it does what the
# tested one does:
# - a static executable (no program interpreter), whose start-up probes no CPU: neither glibc's
#   cache-size probing (`init_cacheinfo`'s `cpuid`s) nor std's feature detection is linked,
#   and dlmalloc is; built with a profile;
# - the same bytes as `target/release/btfgen` (the build the test suite runs; CARGO_BIN= to
#   name another): min-core-btf of benches/guard/ and benches/objs/ against Linux 7.1's BTF
#   and its summary line, relocate's results, batch on two threads with its JSON report, and
#   a DWARF input's encode and min-core-btf.
#
# usage: bash benches/static-cli.sh
set -euo pipefail
cd "$(dirname "$0")/.."

TESTED=${CARGO_BIN:-target/release/btfgen}
STATIC=target/static/release/btfgen

die() {
    echo "static-cli: $*" >&2
    exit 2
}

[[ -x $TESTED ]] || die "$TESTED is missing: build it first (cargo build --release)"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The build's log goes on to stderr; its last line says how the binary was built.
make cli 2>"$work/build.log" || { cat "$work/build.log" >&2; die "make cli failed"; }
cat "$work/build.log" >&2
built=$(tail -n 1 "$work/build.log")

failures=0
check() {
    local what=$1
    shift
    if "$@"; then
        printf '%-60s ok\n' "$what"
    else
        printf '%-60s FAILED\n' "$what"
        failures=$((failures + 1))
    fi
}

# Read whole first: `grep -q` quitting early would fail `nm` under pipefail.
symbols=$(nm "$STATIC") || die "nm $STATIC failed"
headers=$(readelf -lW "$STATIC") || die "readelf $STATIC failed"
check "static executable (no INTERP)" eval '! grep -q INTERP <<<"$headers"'
check "no glibc start-up CPU probing (init_cacheinfo)" \
    eval '! grep -qE " (init_cacheinfo|dl_init_cacheinfo|handle_amd|handle_intel)$" <<<"$symbols"'
check "no std runtime CPU feature detection" \
    eval '! grep -q "std_detect.*detect_and_initialize" <<<"$symbols"'
check "dlmalloc linked (src/cli/allocator.rs)" eval 'grep -q dlmalloc <<<"$symbols"'
check "profile-guided (packaging/build-cli.sh)" eval 'grep -q -- "-Cprofile-use=" <<<"$built"'

tar -xJf tests/data/targets/vmlinux-7.1.btf.tar.xz -C "$work"
target=$work/vmlinux-7.1.btf
objects=(benches/guard/*.bpf.o benches/objs/*.bpf.o)

# run BUILD NAME BINARY ARGS...: in BUILD's own directory (so that output paths read the same),
# stdout to NAME.out, stderr to NAME.err without the run's duration.
run() {
    local build=$1 name=$2
    shift 2
    (cd "$work/$build" && "$@" >"$name.out" 2>"$name.err.raw") ||
        die "$build $name: $* failed: $(cat "$work/$build/$name.err.raw")"
    sed -E 's/ \([0-9.]+ m?s\)//' "$work/$build/$name.err.raw" >"$work/$build/$name.err"
}
# same FILE: the tested build's FILE and the static build's are the same bytes.
same() {
    cmp -s "$work/tested/$1" "$work/static/$1"
}

mkdir -p "$work/tree/debian/12/x86_64" "$work/tree/ubuntu/22.04/x86_64"
cp "$target" "$work/tree/debian/12/x86_64/7.1.btf"
cp tests/data/targets/btf__example_kernel.btf "$work/tree/ubuntu/22.04/x86_64/example.btf"
root=$PWD
for build in tested static; do
    binary=$root/$TESTED
    [[ $build == static ]] && binary=$root/$STATIC
    mkdir "$work/$build"
    run "$build" min "$binary" min-core-btf "$target" min.btf "${objects[@]/#/$root/}"
    run "$build" relocate "$binary" relocate --btf "$target" "$root/benches/objs/execsnoop.bpf.o"
    run "$build" batch "$binary" batch -q -j2 --btf-dir "$work/tree" --out-dir batch \
        --report batch.json "${objects[@]/#/$root/}"
    run "$build" encode "$binary" encode -q "$root/tests/data/dwarf/clang-19-dwarf4.so" encode.btf
    run "$build" dwarf-min "$binary" min-core-btf -q "$root/tests/data/dwarf/gcc-dwarf5.so" \
        dwarf-min.btf "$root/tests/data/dwarf/core.bpf.o"
done

check "min-core-btf: output and summary line" eval 'same min.btf && same min.err'
check "relocate: results" same relocate.out
check "batch -j2: outputs and JSON report" \
    eval 'diff -r "$work/tested/batch" "$work/static/batch" >/dev/null && same batch.json'
check "encode of a DWARF input" same encode.btf
check "min-core-btf of a DWARF input" same dwarf-min.btf

if ((failures)); then
    echo "static-cli: $failures check(s) failed" >&2
    exit 1
fi
echo "static-cli: $STATIC is the static musl build and does what $TESTED does"
