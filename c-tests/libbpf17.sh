#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
#
# Builds libbpf 1.7 (the second oracle of the differential tests, next to Debian's 1.1) once,
# into target/libbpf-1.7/ (lib/libbpf.a, include/bpf/*.h, include/linux/*.h), and prints that
# directory. Reused when it is already there.
#
# The source comes through cargo only: the crates.io crate libbpf-sys =1.7.0+v1.7.0 carries
# libbpf's source tree (libbpf/src). A throwaway manifest depending on it is fetched with
# `cargo fetch`; `cargo metadata` says where cargo unpacked it. Nothing of the crate is built
# by cargo. Needs make, a C compiler, libelf-dev, zlib1g-dev, pkg-config.
set -euo pipefail

version=1.7.0+v1.7.0
root=$(cd "$(dirname "$0")/.." && pwd)
cache=$root/target/libbpf-1.7
stamp=$cache/.built-$version

if [[ -f $stamp && -f $cache/lib/libbpf.a ]]; then
    echo "$cache"
    exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src"
: >"$work/src/lib.rs"
cat >"$work/Cargo.toml" <<TOML
[package]
name = "btfgen-libbpf-source"
version = "0.0.0"
edition = "2021"
publish = false

[lib]
path = "src/lib.rs"

[dependencies]
libbpf-sys = { version = "=${version%%+*}", default-features = false }

[workspace]
TOML
cargo fetch --manifest-path "$work/Cargo.toml" >&2
crate=$(cargo metadata --format-version 1 --manifest-path "$work/Cargo.toml" |
    python3 -c 'import json, os, sys
for p in json.load(sys.stdin)["packages"]:
    if p["name"] == "libbpf-sys" and p["version"] == sys.argv[1]:
        print(os.path.dirname(p["manifest_path"]))' "$version")
src=$crate/libbpf/src
[[ -f $src/relo_core.c ]] || { echo "libbpf17.sh: no libbpf source under $crate" >&2; exit 1; }

rm -rf "$cache"
mkdir -p "$cache/obj"
# OBJDIR keeps every build product out of cargo's registry copy.
make -C "$src" -j2 BUILD_STATIC_ONLY=y OBJDIR="$cache/obj" >&2
make -C "$src" BUILD_STATIC_ONLY=y OBJDIR="$cache/obj" DESTDIR="$cache" PREFIX= \
    LIBDIR=/lib INCLUDEDIR=/include UAPIDIR=/include install_headers install_uapi_headers >&2
mkdir -p "$cache/lib"
cp "$cache/obj/libbpf.a" "$cache/lib/libbpf.a"
rm -rf "$cache/obj"
touch "$stamp"
echo "$cache"
