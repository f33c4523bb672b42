#!/usr/bin/env python3
# SPDX-License-Identifier: MIT OR Apache-2.0
"""Cut the kernel's own BTF out of a distribution's kernel image:

    scripts/kernel-btf.py VMLINUZ OUT.btf

writes the raw BTF that BTFHub would ship for that kernel (what /sys/kernel/btf/vmlinux holds
when it runs). Used by benches/make-btf-tree.sh and c-tests/fetch-kernels.sh, through
scripts/debian-kernel-btf.sh.

Two image forms are read:
  - x86's bzImage: the compressed vmlinux inside it is found where the setup header says it
    is, else by the magic bytes of every format the kernel supports (as
    scripts/extract-vmlinux does), decompressed, and its `.BTF` ELF section is the BTF;
  - arm64's `Image` (Debian ships it as is, other distributions gzip'd): no ELF sections are
    left in it, so the BTF is found by its header: magic 0xeb9f, version 1, hdr_len 24, the
    type section right after the header and the string section after it, with a NUL first
    string, all inside the image. The largest such blob is vmlinux's BTF; the caller should
    still check it with a BTF reader (`bpftool btf dump file`).
Exit status 1 with a message when no BTF is found.
"""
import lzma
import struct
import subprocess
import sys
import zlib

BTF_MAGIC_LE = b"\x9f\xeb\x01\x00"  # magic 0xeb9f, version 1, flags 0
BTF_HDR_LEN = 24


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


def compressed_candidates(image):
    """(offset, format) of the compressed vmlinux in a bzImage: first where the setup header
    says it is (payload_offset, relative to the protected-mode code after the setup sectors),
    then at every magic of a format the kernel supports."""
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


def bzimage_btf(image):
    for pos, kind in compressed_candidates(image):
        try:
            vmlinux = decompress(image[pos:], kind)
        except Exception:
            continue
        btf = elf_btf(vmlinux)
        if btf:
            return btf
    return None


def scanned_btf(image):
    """The largest well-formed little-endian BTF blob in a raw kernel image, or None."""
    best = None
    pos = image.find(BTF_MAGIC_LE)
    while pos != -1:
        if pos + BTF_HDR_LEN <= len(image):
            hdr_len, type_off, type_len, str_off, str_len = struct.unpack_from("<5I", image, pos + 4)
            body = pos + BTF_HDR_LEN
            end = body + str_off + str_len
            if (hdr_len == BTF_HDR_LEN and type_off == 0 and type_len > 0 and str_off == type_len
                    and str_len > 0 and end <= len(image) and image[body + str_off] == 0
                    and image[end - 1] == 0 and (best is None or end - pos > len(best))):
                best = image[pos:end]
        pos = image.find(BTF_MAGIC_LE, pos + 1)
    return best


def kernel_btf(image):
    if image[:3] == b"\x1f\x8b\x08":  # a gzip'd Image (arm64 as most distributions ship it)
        image = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(image)
    if image[0x202:0x206] == b"HdrS":
        return bzimage_btf(image)
    return elf_btf(image) or scanned_btf(image)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: kernel-btf.py VMLINUZ OUT.btf")
    with open(sys.argv[1], "rb") as f:
        btf = kernel_btf(f.read())
    if not btf:
        sys.exit("kernel-btf.py: no BTF found in " + sys.argv[1])
    with open(sys.argv[2], "wb") as f:
        f.write(btf)


if __name__ == "__main__":
    main()
