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
#
# crt-static (glibc) reaches every crate built for the target, and no build script or
# proc-macro crate, which cannot be static: those are built for the host, which --target keeps
# apart even when it is the host's own.
#
# Environment: CARGO, CLI_TARGET (default ARCH-unknown-linux-musl), CLI_CC (musl-gcc).
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

"$cargo" rustc --release --bin btfgen --target "$target" --target-dir target/static \
    -- -C relocation-model=static
mkdir -p target/static/release
ln -f "target/static/$target/release/btfgen" target/static/release/btfgen
echo "make cli: target/static/release/btfgen ($target)" >&2
