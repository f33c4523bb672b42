#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
#
# The BTF of Debian kernels, from their linux-image packages:
#
#     scripts/debian-kernel-btf.sh CACHE PACKAGE...
#
# For each PACKAGE (`linux-image-6.1.0-57-cloud-amd64`, or `...-arm64:arm64` for another
# architecture, which dpkg must know: `dpkg --add-architecture arm64; apt-get update`), the
# .deb is fetched with `apt-get download` into CACHE/debs, unpacked, and the BTF of its
# /boot/vmlinuz-KERNEL is cut out by scripts/kernel-btf.py into CACHE/btf/KERNEL.btf, checked
# with `bpftool btf dump file` where bpftool is installed. What is already in CACHE is reused.
# Prints the path of every BTF it has, one a line, in PACKAGE order; a package that cannot be
# downloaded or read gets a `SKIP: PACKAGE: reason` line on stderr and the others go on.
# Exit status 0 if at least one BTF was printed. Debian's 6.1 and 6.12 kernels are built with
# CONFIG_DEBUG_INFO_BTF, so no pahole run is needed.
#
# Used by benches/make-btf-tree.sh and c-tests/fetch-kernels.sh. Needs apt-get (current
# package lists), dpkg-deb, python3, lz4 and zstd (Debian's x86 kernels are lz4-compressed).
set -euo pipefail

if (($# < 1)); then
    echo "usage: $0 CACHE PACKAGE..." >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1/debs" "$1/btf"
cache=$(cd "$1" && pwd)
shift

found=0
for pkg in "$@"; do
    name=${pkg%%:*}
    kernel=${name#linux-image-}
    btf=$cache/btf/$kernel.btf
    if [[ ! -s $btf ]]; then
        deb=$(ls "$cache"/debs/"${name}"_*.deb 2>/dev/null | head -n1 || true)
        if [[ -z $deb ]]; then
            # apt-get download runs as _apt where it can; root's cache dir may not be theirs.
            if ! (cd "$cache/debs" && apt-get download "$pkg" >/dev/null 2>"$cache/debs/.err"); then
                echo "SKIP: $pkg: apt-get download failed: $(grep -m1 '^E:' "$cache/debs/.err" || true)" >&2
                continue
            fi
            deb=$(ls "$cache"/debs/"${name}"_*.deb | head -n1)
        fi
        tmp=$(mktemp -d)
        # only the image: the package's modules are most of its bytes
        if ! dpkg-deb --fsys-tarfile "$deb" | tar -xf - -C "$tmp" "./boot/vmlinuz-$kernel" ||
            ! python3 "$here/kernel-btf.py" "$tmp/boot/vmlinuz-$kernel" "$btf.part"; then
            echo "SKIP: $pkg: no BTF in its vmlinuz" >&2
            rm -rf "$tmp" "$btf.part"
            continue
        fi
        rm -rf "$tmp"
        if command -v bpftool >/dev/null && ! bpftool btf dump file "$btf.part" >/dev/null 2>&1; then
            echo "SKIP: $pkg: bpftool cannot read the BTF cut out of its vmlinuz" >&2
            rm -f "$btf.part"
            continue
        fi
        mv "$btf.part" "$btf"
    fi
    echo "$btf"
    found=$((found + 1))
done
((found > 0))
