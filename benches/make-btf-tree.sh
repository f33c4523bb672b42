#!/usr/bin/env bash
# Build a BTFHub-like tree of kernel BTFs for the batch benchmark (benches/compare.sh) and for
# trying `btfgen batch` by hand:
#
#     benches/make-btf-tree.sh DIR [COUNT]
#
# DIR gets COUNT (default 60) kernels in BTFHub's layout, `DISTRO/VERSION/ARCH/KERNEL.btf`,
# every third one (every PACK_EVERY-th; PACK_EVERY=0: none) packed as `KERNEL.btf.tar.xz` (one
# KERNEL.btf inside, made with `tar -cJf`, as BTFHub ships them).
#
# The distinct BTFs come from
#   - the running kernel's /sys/kernel/btf/vmlinux (if present), and
#   - Debian's linux-image packages (`apt-get download`; no root needed for that, but the
#     package lists must be current: `apt-get update`), their BTF cut out of the vmlinuz by
#     scripts/debian-kernel-btf.sh (which says how).
# The remaining kernels are copies of those under other distro/version names (same bytes, so
# every kernel still costs a full minimization: btfgen does not deduplicate inputs).
#
# Environment:
#   KERNEL_PACKAGES  space-separated linux-image package names to use instead of the default
#                    pick (oldest and newest 6.1 cloud image, newest 6.1 generic, newest 6.12
#                    cloud image, among what `apt-cache search` lists today).
#   BTF_CACHE        where downloaded .debs and extracted BTFs are kept between runs
#                    (default /var/tmp/btfgen-bench-cache); delete it to start over.
#
# Needs: apt-get, dpkg-deb, python3, lz4 and zstd (Debian's kernels are lz4-compressed), tar and xz.
# Nothing here goes into git: DIR and the cache are yours to delete.
set -euo pipefail

if (($# < 1 || $# > 2)); then
    echo "usage: $0 DIR [COUNT]" >&2
    exit 2
fi
dir=$1
count=${2:-60}
pack_every=${PACK_EVERY:-3}
cache=${BTF_CACHE:-/var/tmp/btfgen-bench-cache}
mkdir -p "$cache/btf" "$dir"
cache=$(cd "$cache" && pwd)

# The default package pick: a spread of versions and flavours that are in the archive today.
if [[ -z ${KERNEL_PACKAGES:-} ]]; then
    list=$(apt-cache search '^linux-image-6\.' | awk '{print $1}' | grep -E -- '-amd64$' |
        grep -v -- '-dbg\|unsigned\|template' | sort -V)
    pick() { grep -E -- "$1" <<<"$list" | "$2" -n1 || true; }
    KERNEL_PACKAGES="$(pick '^linux-image-6\.1\.0-[0-9]+-cloud-amd64$' head)
        $(pick '^linux-image-6\.1\.0-[0-9]+-cloud-amd64$' tail)
        $(pick '^linux-image-6\.1\.0-[0-9]+-amd64$' tail)
        $(pick '^linux-image-6\.12\.[0-9.]+\+deb[0-9]+-cloud-amd64$' tail)"
fi

sources=()
if [[ -r /sys/kernel/btf/vmlinux ]]; then
    cp /sys/kernel/btf/vmlinux "$cache/btf/host-$(uname -r).btf"
    sources+=("$cache/btf/host-$(uname -r).btf")
fi
# shellcheck disable=SC2086 # one word per package
while read -r btf; do
    sources+=("$btf")
done < <(bash "$(dirname "$0")/../scripts/debian-kernel-btf.sh" "$cache" $KERNEL_PACKAGES || true)
if ((${#sources[@]} == 0)); then
    echo "make-btf-tree: no kernel BTF available" >&2
    exit 1
fi

# Lay out COUNT kernels over made-up distro/version/arch directories, cycling through the
# distinct BTFs; every PACK_EVERY-th one is a .btf.tar.xz.
distros=(ubuntu/20.04 ubuntu/22.04 debian/11 debian/12 fedora/38 centos/8 amzn/2 rhel/9)
for ((i = 0; i < count; i++)); do
    src=${sources[i % ${#sources[@]}]}
    kernel=$(basename "$src" .btf)-v$i
    sub=$dir/${distros[i % ${#distros[@]}]}/x86_64
    mkdir -p "$sub"
    if ((pack_every > 0 && i % pack_every == pack_every - 1)); then
        tmp=$(mktemp -d)
        cp "$src" "$tmp/$kernel.btf"
        tar -C "$tmp" -cJf "$sub/$kernel.btf.tar.xz" "$kernel.btf"
        rm -rf "$tmp"
    else
        cp "$src" "$sub/$kernel.btf"
    fi
done

plain=$(find "$dir" -name '*.btf' | wc -l)
packed=$(find "$dir" -name '*.btf.tar.xz' | wc -l)
echo "make-btf-tree: $dir: $((plain + packed)) kernels ($plain .btf, $packed .btf.tar.xz)" \
    "from ${#sources[@]} distinct BTFs:" >&2
for s in "${sources[@]}"; do
    echo "    $(basename "$s") ($(stat -c %s "$s") bytes)" >&2
done
