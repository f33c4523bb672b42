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
#     package lists must be current: `apt-get update`). Their vmlinuz is a bzImage: the
#     compressed vmlinux inside it is found by its magic bytes (xz or zstd), decompressed, and
#     the raw bytes of its `.BTF` section are what BTFHub ships. Debian's 6.1 and 6.12 kernels
#     are built with CONFIG_DEBUG_INFO_BTF, so no pahole run is needed.
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
mkdir -p "$cache/debs" "$cache/btf" "$dir"
cache=$(cd "$cache" && pwd)

# Print the raw .BTF section of the vmlinux inside a bzImage (argument 1) to file (argument 2).
extract_btf() {
    python3 - "$1" "$2" <<'PY'
import lzma, struct, subprocess, sys, zlib

def elf_btf(elf):
    """Raw bytes of the .BTF section of a 64-bit little-endian ELF, or None."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    def sh(i):
        # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size
        return struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize)
    stroff = sh(shstrndx)[4]
    for i in range(shnum):
        name_off, _, _, _, off, size = sh(i)
        end = elf.index(b"\0", stroff + name_off)
        if elf[stroff + name_off:end] == b".BTF":
            return elf[off:off + size]
    return None

def candidates(image):
    """(offset, format) of the compressed vmlinux: first where the bzImage setup header says
    it is (payload_offset, relative to the protected-mode code after the setup sectors),
    then at every magic of a format the kernel supports, as scripts/extract-vmlinux does."""
    magics = [(b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd"), (b"\x02\x21\x4c\x18", "lz4"),
              (b"\x1f\x8b\x08", "gzip")]
    if image[0x202:0x206] == b"HdrS":
        start = (image[0x1F1] or 4) * 512 + 512 + struct.unpack_from("<I", image, 0x248)[0]
        for magic, kind in magics:
            if image.startswith(magic, start):
                yield start, kind
    for magic, kind in magics:
        pos = image.find(magic)
        while pos != -1:
            yield pos, kind
            pos = image.find(magic, pos + 1)

def decompress(data, kind):
    if kind == "xz":
        d = lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
        return d.decompress(data)  # stops at the end of the stream; trailing bytes ignored
    if kind == "gzip":
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data)
    # zstd and lz4 (the kernel's legacy lz4 format): the stream is followed by other data, so
    # the tool reports an error after it, but what it wrote before that is the whole vmlinux.
    tool = {"zstd": ["zstd", "-dc", "-q"], "lz4": ["lz4", "-dc", "-q"]}[kind]
    out = subprocess.run(tool, input=data, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return out.stdout

image = open(sys.argv[1], "rb").read()
for pos, kind in candidates(image):
    try:
        vmlinux = decompress(image[pos:], kind)
    except Exception:
        continue
    btf = elf_btf(vmlinux)
    if btf:
        open(sys.argv[2], "wb").write(btf)
        sys.exit(0)
sys.exit("no vmlinux with a .BTF section found in " + sys.argv[1])
PY
}

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
for pkg in $KERNEL_PACKAGES; do
    kernel=${pkg#linux-image-}
    btf=$cache/btf/$kernel.btf
    if [[ ! -s $btf ]]; then
        echo "make-btf-tree: $pkg: downloading and extracting" >&2
        if ! deb=$(ls "$cache"/debs/"${pkg}"_*.deb 2>/dev/null | head -n1) || [[ -z $deb ]]; then
            (cd "$cache/debs" && apt-get download "$pkg" >/dev/null)
            deb=$(ls "$cache"/debs/"${pkg}"_*.deb | head -n1)
        fi
        tmp=$(mktemp -d)
        dpkg-deb -x "$deb" "$tmp"
        extract_btf "$tmp/boot/vmlinuz-$kernel" "$btf.part"
        mv "$btf.part" "$btf"
        rm -rf "$tmp"
    fi
    sources+=("$btf")
done
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
