#!/usr/bin/env python3
"""Seed the fuzz corpora (fuzz/corpus/TARGET/) from the committed fixtures in tests/data/.

Raw BTF comes from targets/*.btf and from the .BTF sections of progs/*.o; .BTF.ext from the
objects; whole objects for the object and pipeline targets. Targets whose first input byte
selects a mode get one seed per mode. The structured target gets deterministic pseudo-random
bytes (its generator makes valid BTF from any bytes). Existing corpus files are kept; seeds are
named by content hash, so re-running is idempotent. Standard library only.
"""
import hashlib
import random
import struct
import sys
from pathlib import Path

FUZZ = Path(__file__).resolve().parent
DATA = FUZZ.parent / "tests" / "data"


def elf_sections(data):
    """{name: bytes} of an ELF64 file of either byte order."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        return {}
    e = "<" if data[5] == 1 else ">"
    shoff = struct.unpack_from(e + "Q", data, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from(e + "HHH", data, 0x3A)

    def header(i):
        at = shoff + i * shentsize
        name, _type, _flags, _addr, off, size = struct.unpack_from(e + "IIQQQQ", data, at)
        return name, off, size

    _, str_off, _ = header(shstrndx)
    out = {}
    for i in range(shnum):
        name, off, size = header(i)
        end = data.index(b"\0", str_off + name)
        out[data[str_off + name:end].decode()] = data[off:off + size]
    return out


def add(target, payload):
    d = FUZZ / "corpus" / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(payload).hexdigest()).write_bytes(payload)


def main():
    objects = sorted((DATA / "progs").glob("*.o"))
    btfs = sorted((DATA / "targets").glob("*.btf"))
    raw_btf = [p.read_bytes() for p in btfs]
    for obj in objects:
        data = obj.read_bytes()
        sections = elf_sections(data)
        add("object", data)
        add("pipeline_object", data)
        if ".BTF" in sections:
            raw_btf.append(sections[".BTF"])
        if ".BTF.ext" in sections:
            big_endian = data[5] == 2
            add("btf_ext", bytes([int(big_endian)]) + sections[".BTF.ext"])
        add("btf_parse", b"\0" + data)  # an ELF: parse_with reads its .BTF
    for btf in raw_btf:
        for mode in (0, 1):
            add("btf_parse", bytes([mode]) + btf)
        if btf[:2] == b"\x9f\xeb":  # little-endian: btf_index takes a bare type section
            hdr_len, type_off, type_len = struct.unpack_from("<III", btf, 4)
            start = hdr_len + type_off
            add("btf_index", btf[start : start + type_len])
    add("btf_split", b"\0" + (DATA / "targets" / "module.btf").read_bytes())
    add("btf_split", b"\1" + (DATA / "targets" / "base.btf").read_bytes())
    for name in ("btf__fields", "btf__fields_flat", "btf__types", "btf__enums"):
        btf = (DATA / "targets" / f"{name}.btf").read_bytes()
        for mode in (0, 2):
            add("pipeline_target", bytes([mode]) + btf)
    add("pipeline_target", b"\1" + (DATA / "targets" / "module.btf").read_bytes())
    rng = random.Random(0x5EED)
    for i in range(24):
        size = rng.choice([64, 512, 4096, 16384, 65536])
        add("structured", bytes([i % 6]) + bytes(rng.getrandbits(8) for _ in range(size)))
    for d in sorted((FUZZ / "corpus").iterdir()):
        print(f"{d.name}: {len(list(d.iterdir()))} seeds", file=sys.stderr)


if __name__ == "__main__":
    main()
