#!/usr/bin/env bash
# SPDX-License-Identifier: MIT OR Apache-2.0
#
# Real kernel BTFs for check_verdicts.py, from Debian's archive:
#
#     c-tests/fetch-kernels.sh DIR
#
# prints the path of each kernel's BTF (DIR/btf/KERNEL.btf), one a line. The pick, among what
# `apt-cache search` lists today: the oldest and the newest 6.1 cloud kernel and the newest
# 6.12 cloud kernel for amd64, and the newest 6.1 and 6.12 cloud kernels for arm64 (objects
# built for x86 meet an arm64 `struct pt_regs` there). For arm64, dpkg must know the
# architecture: as root, where it does not, this runs `dpkg --add-architecture arm64` and
# `apt-get update` (FETCH_ARM64=0: amd64 only). Downloads and extraction are
# scripts/debian-kernel-btf.sh's; DIR keeps the .debs and BTFs, so a second run reads no
# network. A kernel that cannot be fetched gets a `SKIP:` line on stderr and is left out.
# Exit status 0 even if nothing could be fetched (the caller goes on with the kernels it has).
#
# Environment: VERDICT_KERNELS, space-separated package names to use instead of the pick.
set -uo pipefail

if (($# != 1)); then
    echo "usage: $0 DIR" >&2
    exit 2
fi
dir=$1
root=$(cd "$(dirname "$0")/.." && pwd)

if ! command -v apt-get >/dev/null; then
    echo "SKIP: no apt-get here: no Debian kernels" >&2
    exit 0
fi

has_arm64() {
    [[ $(dpkg --print-architecture) == arm64 ]] || dpkg --print-foreign-architectures | grep -qx arm64
}

# Every linux-image-6.* package name (one apt-cache run: each takes seconds).
list_images() {
    names=$(apt-cache pkgnames linux-image-6. | sort -V)
}

# The newest (tail) or oldest (head) package of `names` matching an extended regex.
pick() {
    grep -E -- "$1" <<<"$names" | "$2" -n1 || true
}

if [[ -z ${VERDICT_KERNELS:-} ]]; then
    if [[ ${FETCH_ARM64:-1} != 0 ]] && ! has_arm64 && ((EUID == 0)); then
        dpkg --add-architecture arm64 && apt-get update -qq -o DPkg::Lock::Timeout=60 >/dev/null 2>&1 ||
            echo "SKIP: adding arm64 to dpkg's architectures or apt-get update failed: amd64 kernels only" >&2
    fi
    list_images
    if [[ -z $(pick '^linux-image-6\.1\.0-[0-9]+-cloud-amd64$' tail) ]] && ((EUID == 0)); then
        apt-get update -qq -o DPkg::Lock::Timeout=60 >/dev/null 2>&1
        list_images
    fi
    VERDICT_KERNELS="$(pick '^linux-image-6\.1\.0-[0-9]+-cloud-amd64$' head)
        $(pick '^linux-image-6\.1\.0-[0-9]+-cloud-amd64$' tail)
        $(pick '^linux-image-6\.12\.[0-9.]+\+deb[0-9]+-cloud-amd64$' tail)"
    if [[ ${FETCH_ARM64:-1} != 0 ]] && has_arm64; then
        for newest in $(pick '^linux-image-6\.1\.0-[0-9]+-cloud-arm64$' tail) \
            $(pick '^linux-image-6\.12\.[0-9.]+\+deb[0-9]+-cloud-arm64$' tail); do
            VERDICT_KERNELS+=" $newest:arm64"
        done
    fi
fi
if [[ -z ${VERDICT_KERNELS// /} ]]; then
    echo "SKIP: apt-cache lists no Debian cloud kernel (no package lists?)" >&2
    exit 0
fi

# shellcheck disable=SC2086 # one word per package
bash "$root/scripts/debian-kernel-btf.sh" "$dir" $VERDICT_KERNELS || true
