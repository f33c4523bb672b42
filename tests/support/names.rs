//! Every name offset of a BTF (types, members, enumerators, parameters) points at the start of
//! a string. cilium/ebpf refuses any other offset ("offset X isn't start of a string"), so
//! every BTF btfgen writes must hold to it.

#![allow(dead_code)]

use btfgen::btf::{Btf, TypeKind};

/// The first name offset of `btf` that is not the start of a string, as `(type id, offset)`.
pub fn name_not_at_string_start(btf: &Btf<'_>) -> Option<(u32, u32)> {
    let starts_string = |off: u32| {
        off == 0
            || btf
                .string_tail(off - 1)
                .is_some_and(|t| t.first() == Some(&0))
    };
    for ty in btf.types() {
        let ty = ty.expect("type parses");
        let mut offsets = vec![ty.name_off];
        if let Some(c) = ty.kind.composite() {
            offsets.extend(c.members().map(|m| m.name_off));
        }
        if let Some(e) = ty.kind.any_enum() {
            offsets.extend(e.values().map(|v| v.name_off));
        }
        if let TypeKind::FuncProto(p) = &ty.kind {
            offsets.extend(p.params().map(|p| p.name_off));
        }
        if let Some(&off) = offsets.iter().find(|&&off| !starts_string(off)) {
            return Some((ty.id, off));
        }
    }
    None
}

/// Whether libbpf up to 1.2, on a little-endian host, would read the BTF's last type as signed
/// when it has nothing after its header (a float, a value-less enum): it takes the word after
/// the header, here the start of the string section, as an int encoding (`BTF_INT_SIGNED` is
/// bit 24). In the full BTF that word is the next type's name, never signed.
pub fn last_type_reads_as_signed(raw: &[u8]) -> bool {
    let btf = Btf::parse(raw).expect("BTF parses");
    let last = btf.type_by_id(btf.type_cnt() - 1).expect("last type");
    let bare = matches!(last.kind, TypeKind::Float { .. })
        || last.kind.any_enum().is_some_and(|e| e.is_empty());
    if !bare {
        return false;
    }
    let word = |at: usize| {
        let b: [u8; 4] = raw[at..at + 4].try_into().unwrap();
        match btf.endian() {
            btfgen::btf::Endianness::Little => u32::from_le_bytes(b),
            btfgen::btf::Endianness::Big => u32::from_be_bytes(b),
        }
    };
    let strings = word(4) as usize + word(16) as usize;
    let mut next = [0u8; 4];
    for (i, b) in raw[strings..].iter().take(4).enumerate() {
        next[i] = *b;
    }
    (u32::from_le_bytes(next) >> 24) & 1 == 1
}
