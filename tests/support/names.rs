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
