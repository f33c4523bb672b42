#!/usr/bin/env python3
"""Seed the fuzz corpora (fuzz/corpus/TARGET/) from the committed fixtures in tests/data/.

Raw BTF comes from targets/*.btf and from the .BTF sections of progs/*.o, each also rewritten
with Linux 7.1's 32-byte header and layout section, and with types of kinds btfgen does not
know appended (sized by the layout section); .BTF.ext from the objects; whole objects for the object and pipeline targets. Targets whose first input byte
selects a mode get one seed per mode. The structured target gets deterministic pseudo-random
bytes (its generator makes valid BTF from any bytes), and so does dwarf_structured (DWARF); dwarf_elf
gets the ELF files of tests/data/dwarf/, dwarf_sup its dwz -m inputs with their supplementary
files; btf_split_dedup a base and a module's standalone BTF (the kbase/kmod fixtures).
Existing corpus files are kept; seeds are
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


# Linux 7.1's layout section entries for kinds 0..19: (info_sz, elem_sz).
LAYOUT_7_1 = [(0, 0), (4, 0), (0, 0), (12, 0), (0, 12), (0, 12), (0, 8), (0, 0), (0, 0),
              (0, 0), (0, 0), (0, 0), (0, 0), (0, 8), (4, 0), (0, 12), (0, 0), (4, 0),
              (0, 0), (0, 12)]
# Kinds btfgen does not know, as the seeds describe them: (kind, info_sz, elem_sz, vlen).
UNKNOWN = [(20, 4, 8, 2), (21, 0, 0, 0), (23, 8, 4, 3)]


def joined(base, split):
    """Split BTF `split` and its base `base` (little-endian, 24-byte headers) as one
    standalone BTF: the split's type ids and string offsets continue the base's already."""
    _, base_types, base_strings = sections_of(base)
    _, split_types, split_strings = sections_of(split)
    types, strings = base_types + split_types, base_strings + split_strings
    header = struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0, len(types), len(types), len(strings))
    return header + types + strings


def sections_of(btf):
    """(byte order, type section, string section) of a raw BTF."""
    e = "<" if btf[:2] == b"\x9f\xeb" else ">"
    hdr_len, type_off, type_len, str_off, str_len = struct.unpack_from(e + "IIIII", btf, 4)
    body = btf[hdr_len:]
    return e, body[type_off:type_off + type_len], body[str_off:str_off + str_len]


def with_layout(btf, unknown=()):
    """`btf` with a 32-byte header and a layout section (between types and strings, as Linux
    7.1 writes it), with a type of each `unknown` kind appended to its types."""
    e, types, strs = sections_of(btf)
    entries = list(LAYOUT_7_1)
    for kind, info_sz, elem_sz, vlen in unknown:
        entries += [(0, 0)] * (kind + 1 - len(entries))
        entries[kind] = (info_sz, elem_sz)
        extra = bytes((kind + i) & 0xff for i in range(info_sz + vlen * elem_sz))
        types += struct.pack(e + "III", 0, kind << 24 | vlen, 0) + extra
    layout = b"".join(struct.pack(e + "BBH", i, el, 0) for i, el in entries)
    header = struct.pack(e + "HBBIIIIIII", 0xEB9F, 1, 0, 32, 0, len(types),
                         len(types) + len(layout), len(strs), len(types), len(layout))
    return header + types + layout + strs


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
        for variant in (btf, with_layout(btf), with_layout(btf, UNKNOWN)):
            for mode in (0, 1):
                add("btf_parse", bytes([mode]) + variant)
        if btf[:2] == b"\x9f\xeb":  # little-endian: btf_index takes a bare type section
            _, types, _ = sections_of(btf)
            add("btf_index", b"\0" + types)  # no layout section
            # Layout entries for kinds 20..23 (the prefix), and types of those kinds.
            sizes = {kind: (i, el) for kind, i, el, _ in UNKNOWN}
            prefix = bytes([5]) + b"".join(bytes(sizes.get(k, (0, 0))) for k in range(20, 24))
            _, types, _ = sections_of(with_layout(btf, UNKNOWN))
            add("btf_index", prefix + types)
    module = (DATA / "targets" / "module.btf").read_bytes()
    base = (DATA / "targets" / "base.btf").read_bytes()
    for split in (module, with_layout(module), with_layout(module, UNKNOWN)):
        add("btf_split", b"\0" + split)
    for base_variant in (base, with_layout(base), with_layout(base, UNKNOWN)):
        add("btf_split", b"\1" + base_variant)
    # btf_split_dedup, mode 0: a base's length (u32 LE), the base, a module's standalone BTF:
    # each kbase fixture's BTF with its kmod's types as one standalone BTF (pahole's split BTF
    # joined to its base), with the other compiler's kbase, and with itself.
    for cc in ("gcc", "clang-19"):
        kbase = (DATA / "dwarf" / f"kbase-{cc}-dwarf5.pahole.btf").read_bytes()
        kmod = (DATA / "dwarf" / f"kmod-{cc}-dwarf5-rel.pahole.btf").read_bytes()
        other = "clang-19" if cc == "gcc" else "gcc"
        other = (DATA / "dwarf" / f"kbase-{other}-dwarf5.pahole.btf").read_bytes()
        for module in (joined(kbase, kmod), other, kbase):
            add("btf_split_dedup", b"\0" + len(kbase).to_bytes(4, "little") + kbase + module)
    # Mode 1 (and 3: the module in the other byte order): generator bytes (their own random
    # sequence: the other targets' seeds stay as they were).
    split_rng = random.Random(0x5EED + 1)
    for i in range(16):
        size = split_rng.choice([256, 1024, 4096, 16384])
        add("btf_split_dedup", bytes([1 + 2 * (i % 2)]) + bytes(split_rng.getrandbits(8) for _ in range(size)))
    for name in ("btf__fields", "btf__fields_flat", "btf__types", "btf__enums"):
        btf = (DATA / "targets" / f"{name}.btf").read_bytes()
        for variant in (btf, with_layout(btf, UNKNOWN)):
            for mode in (0, 2):
                add("pipeline_target", bytes([mode]) + variant)
    add("pipeline_target", b"\1" + module)
    add("pipeline_target", b"\1" + with_layout(module, UNKNOWN))
    rng = random.Random(0x5EED)
    for i in range(24):
        size = rng.choice([64, 512, 4096, 16384, 65536])
        add("structured", bytes([i % 6]) + bytes(rng.getrandbits(8) for _ in range(size)))
    # ELF files with DWARF: gcc and clang, DWARF 4 and 5, type units, zlib/zstd/.zdebug
    # sections, relocatable objects (.ko: RELA debug relocations) and a BPF object
    # (relocatable, with .BTF) for dwarf_elf.
    for path in (
        sorted((DATA / "dwarf").glob("*.so"))
        + sorted((DATA / "dwarf").glob("*.o"))
        + sorted((DATA / "dwarf").glob("*.ko"))
    ):
        add("dwarf_elf", path.read_bytes())
    # dwarf_sup: a dwz -m input's length (u32 LE), the input, then its supplementary file.
    for sup in sorted((DATA / "dwarf").glob("*.sup")):
        main = sup.with_suffix(".so").read_bytes()
        add("dwarf_sup", len(main).to_bytes(4, "little") + main + sup.read_bytes())
    # dwarf_structured: mode byte (bit 0 corrupt, bit 1 wild) + generator bytes.
    for i in range(32):
        size = rng.choice([256, 1024, 4096, 16384])
        add("dwarf_structured", bytes([i % 4]) + bytes(rng.getrandbits(8) for _ in range(size)))
    # Committed seeds of the runtime selection targets (fuzz/seeds/TARGET/): real os-release
    # files (os_release takes a machine-picking byte first) and small archives of each format.
    for path in sorted((FUZZ / "seeds" / "os_release").iterdir()):
        for pick in (0, 1, 0x81):
            add("os_release", bytes([pick]) + path.read_bytes())
    for path in sorted((FUZZ / "seeds" / "select_archive").iterdir()):
        add("select_archive", path.read_bytes())
    for d in sorted((FUZZ / "corpus").iterdir()):
        print(f"{d.name}: {len(list(d.iterdir()))} seeds", file=sys.stderr)


if __name__ == "__main__":
    main()
