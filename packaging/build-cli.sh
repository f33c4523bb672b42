#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
#
# `make cli`: the command linked statically, the build benches/ time, at
# target/static/release/btfgen.
#
# - Against musl, not glibc: glibc's start-up reads the CPU's cache sizes with ~25 cpuid
#   instructions, a VM exit each on a virtual machine, and musl's makes none
#   (src/cli/allocator.rs: what replaces musl's allocator, and why). Needs Rust's musl target
#   (rustup target add ARCH-unknown-linux-musl) and musl-gcc (Debian's musl-tools), for the C of
#   liblzma's bundled xz; without them, a warning, and glibc linked statically instead.
# - One code-generation unit for the whole program (fat LTO), and a fixed-address executable,
#   not a static PIE: nothing to relocate at start-up (a static PIE rewrote every page of
#   pointers first, one copy-on-write fault each). The price is no address randomization of
#   this binary; the package's (`make bin`, `make deb`) stays a PIE.
# - Profile-guided on the binary's crate: built once with -Cprofile-generate, run over the
#   repository's own inputs (benches/pgo-train.sh), built again with the profile. The flags go
#   to that crate alone (`cargo rustc -- ...`), so the profile shapes the command's own code and
#   what it instantiates (the allocator most of all), not the library's analyses: on every
#   crate, the verdict pass (issue 30's <= 5% of a report run) grew 11% while the rest shrank.
#   The profile is made again only when the instrumented binary changed; its counts, and so the
#   binary's bytes (never its outputs), vary a little from one training run to the next (hash
#   seeds, allocation order), so two builds of one tree differ; the package's (`make bin`)
#   takes no profile.
#   Needs llvm-profdata of rustc's own LLVM (rustup component add llvm-tools); without it, a
#   warning, and no profile.
#
# crt-static (glibc) reaches every crate built for the target, and no build script or
# proc-macro crate, which cannot be static: those are built for the host, which --target keeps
# apart even when it is the host's own.
#
# Environment: CARGO, CLI_TARGET (default ARCH-unknown-linux-musl), CLI_CC (musl-gcc),
# LLVM_PROFDATA, CLI_PGO=0 to build without a profile.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo=${CARGO:-cargo}
target=${CLI_TARGET:-$(uname -m)-unknown-linux-musl}
cc=${CLI_CC:-musl-gcc}
sysroot=$(rustc --print sysroot)
export CARGO_PROFILE_RELEASE_LTO=fat CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1

warn() {
    echo "make cli: WARNING: $*" >&2
}

if [[ -d $sysroot/lib/rustlib/$target/lib ]] && command -v "$cc" >/dev/null; then
    export "CC_${target//-/_}=$cc"
else
    warn "Rust's $target target (rustup target add $target) or $cc (Debian: apt-get install" \
        "musl-tools) is missing: linking glibc statically instead, whose start-up probes the" \
        "CPU (~0.2 ms more a run)"
    target=$(rustc -vV | sed -n 's/^host: //p')
    export RUSTFLAGS="${RUSTFLAGS:+$RUSTFLAGS }-C target-feature=+crt-static"
fi

# build TARGET_DIR FLAGS...: the command for $target, FLAGS on the binary's crate.
build() {
    local dir=$1
    shift
    "$cargo" rustc --release --bin btfgen --target "$target" --target-dir "$dir" \
        -- -C relocation-model=static "$@"
}

profile=()
profdata=${LLVM_PROFDATA:-$(find "$sysroot/lib/rustlib" -path '*/bin/llvm-profdata' 2>/dev/null | head -n 1)}
pgo=$PWD/target/static-pgo
if [[ ${CLI_PGO:-1} == 0 ]]; then
    echo "make cli: CLI_PGO=0: no profile" >&2
elif [[ ! -x $profdata ]]; then
    warn "llvm-profdata is missing (rustup component add llvm-tools): no profile-guided build"
else
    # Its own target directory, so that neither build undoes the other's on the next run.
    build "$pgo/build" "-Cprofile-generate=$pgo/raw"
    instrumented=$pgo/build/$target/release/btfgen
    trained=$(sha256sum <"$instrumented")
    if [[ ! -f $pgo/trained-on || $(cat "$pgo/trained-on") != "$trained" ]]; then
        rm -rf "$pgo/raw" "$pgo"/profile-*.profdata "$pgo/trained-on"
        bash benches/pgo-train.sh "$instrumented" "$pgo/train"
        "$profdata" merge -o "$pgo/merged.profdata" "$pgo/raw"
        # Named by its content, so that a new profile rebuilds the command and the same one
        # does not.
        hash=$(sha256sum <"$pgo/merged.profdata")
        mv "$pgo/merged.profdata" "$pgo/profile-${hash:0:16}.profdata"
        echo "$trained" >"$pgo/trained-on"
    fi
    profile=("-Cprofile-use=$(echo "$pgo"/profile-*.profdata)")
fi

build target/static "${profile[@]}"
mkdir -p target/static/release
ln -f "target/static/$target/release/btfgen" target/static/release/btfgen
echo "make cli: target/static/release/btfgen ($target${profile[*]:+, ${profile[*]}})" >&2
