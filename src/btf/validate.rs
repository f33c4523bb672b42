//! Structural validation, at least as strict as the kernel's BTF checker on structure: every
//! kind's fixed fields, every referenced id and string offset, and no cycle that does not pass
//! through a pointer (such a cycle would make size resolution loop).

use super::layout::{TYPE_HEADER_LEN, UNUSED_INFO_BITS};
use super::types::{Member, Records, TypeKind};
use super::{Btf, Kind};
use crate::error::{Error, Result};
use crate::fallible;
use alloc::vec::Vec;

/// Spellings of C's `long` whose size gives the target's pointer size, as libbpf looks for
/// them.
const LONG_NAMES: [&str; 11] = [
    "long",
    "long int",
    "int long",
    "unsigned long",
    "long unsigned",
    "unsigned long int",
    "unsigned int long",
    "long unsigned int",
    "long int unsigned",
    "int unsigned long",
    "int long unsigned",
];

/// The first 4- or 8-byte integer named like `long` (its base's first), reading only the
/// headers of other types: the pointer size without validating everything.
pub(super) fn find_long_type(btf: &Btf<'_>) -> Result<Option<u32>> {
    if let Some(id) = btf.base().and_then(|b| b.long_type_id()) {
        return Ok(Some(id));
    }
    // One walk over the headers: looking each id up (`name_off_and_kind`) costs a short walk
    // from its index checkpoint, and a sorted BTF (Linux 7.1) puts `long` far from the start.
    for (id, record) in btf.headers() {
        let (_, _, info) = record;
        if Kind::from_raw((info >> 24) & 0x1f) != Some(Kind::Int) {
            continue;
        }
        if is_long(btf, id, record)? {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

/// Whether own type `id`, an INT whose record is `record`, is a 4- or 8-byte integer named
/// like `long`.
fn is_long(btf: &Btf<'_>, id: u32, record: (usize, usize, u32)) -> Result<bool> {
    let ty = btf.type_in_record(id, record)?;
    Ok(matches!(ty.kind, TypeKind::Int { size: 4 | 8, .. })
        && LONG_NAMES.contains(&btf.name(ty.name_off)?))
}

/// Validate every type this BTF defines; returns the first 4- or 8-byte integer named like
/// `long` (which fixes the pointer size), found on the way.
pub(super) fn validate(btf: &Btf<'_>) -> Result<Option<u32>> {
    let start = btf.start_id();
    let mut long_type = btf.base().and_then(|b| b.long_type_id());
    let mut graph = ValueGraph {
        ends: fallible::vec_with_capacity((btf.type_cnt() - start) as usize)?,
        edges: Vec::new(),
    };
    for (id, record) in btf.headers() {
        let (_, _, info) = record;
        // A type of a kind btfgen does not know is only stepped over; nothing may refer to it.
        if let Some(kind) = Kind::from_raw((info >> 24) & 0x1f) {
            // A pointer's target is no value edge: a struct may point to itself.
            let is_ptr = kind == Kind::Ptr;
            // Within this reservation (a record's references: its entries', or at most two),
            // the edges `check_record` reports are pushed without allocating.
            graph.edges.try_reserve(if is_ptr {
                0
            } else {
                (info & 0xffff) as usize + 2
            })?;
            check_record(btf, id, kind, record, |target| {
                if !is_ptr && target >= start {
                    graph.edges.push(target - start);
                }
            })?;
            if long_type.is_none() && kind == Kind::Int && is_long(btf, id, record)? {
                long_type = Some(id);
            }
        }
        // Within `ends`' capacity: one entry per own type.
        graph.ends.push(graph.edges.len() as u32);
    }
    graph.check_cycles(start)?;
    Ok(long_type)
}

fn bad(id: u32, reason: &'static str) -> Error {
    Error::BadType { id, reason }
}

/// Check reference `target` of type `id`, then report it to `reference`.
#[inline(always)]
fn check_ref(btf: &Btf<'_>, id: u32, target: u32, reference: &mut impl FnMut(u32)) -> Result<()> {
    if target >= btf.type_cnt() {
        return Err(bad(id, "references a type id that does not exist"));
    }
    if btf.is_unknown_kind(target) {
        return Err(bad(id, "references a type of a kind btfgen does not know"));
    }
    reference(target);
    Ok(())
}

/// vlen and kind_flag must be zero where the kind gives them no meaning, as the kernel checks.
fn check_header_flags(id: u32, kind: Kind, vlen: u16, kind_flag: bool) -> Result<()> {
    use Kind::*;
    let takes_vlen = matches!(
        kind,
        Struct | Union | Enum | Enum64 | FuncProto | Datasec | Func
    );
    if vlen != 0 && !takes_vlen {
        return Err(bad(id, "vlen set on a kind without entries"));
    }
    // Newer kernels give DECL_TAG and TYPE_TAG a kind_flag (attribute tags).
    let takes_flag = matches!(
        kind,
        Struct | Union | Enum | Enum64 | Fwd | DeclTag | TypeTag
    );
    if kind_flag && !takes_flag {
        return Err(bad(id, "kind_flag set on a kind without one"));
    }
    Ok(())
}

/// Check a name offset; `true` when the name is empty. A name must start on a character
/// boundary: a UTF-8 string section read from the middle of a character is not UTF-8.
fn check_name(btf: &Btf<'_>, id: u32, name_off: u32) -> Result<bool> {
    let first = btf
        .name_first_byte(name_off)
        .map_err(|_| bad(id, "name offset out of range"))?;
    if first & 0xc0 == 0x80 {
        return Err(bad(id, "name starts inside a UTF-8 character"));
    }
    Ok(first == 0)
}

/// Check own type `id`, of known kind `kind`, whose record (offset, length, header word) is
/// `record` in the type section, calling `reference` with each type id it refers to, once
/// checked (in [`Type::referenced_ids`]'s order). Reads the record's words, not a decoded
/// [`Type`]: validation in full checks every record once, and decoding them cost more than
/// the checks.
///
/// [`Type`]: super::Type
/// [`Type::referenced_ids`]: super::Type::referenced_ids
pub(super) fn check_record(
    btf: &Btf<'_>,
    id: u32,
    kind: Kind,
    (record, len, info): (usize, usize, u32),
    mut reference: impl FnMut(u32),
) -> Result<()> {
    let word = |i: usize| btf.raw_word(record, i);
    // The entries after the header, as the type's decoded view reads them.
    let entries = |record_len| Records {
        bytes: btf
            .types
            .get(record + TYPE_HEADER_LEN..record + len)
            .unwrap_or(&[]),
        endian: btf.endian,
        record_len,
    };
    let anonymous = check_name(btf, id, word(0)?)?;
    // Linux 7.1 keeps a 5-bit kind and a 16-bit vlen; later encoders widen both into these
    // bits, and such records would be misread.
    if info & UNUSED_INFO_BITS != 0 {
        return Err(bad(
            id,
            "info bits unused up to Linux 7.1 (16..23, 29..30) are set",
        ));
    }
    let vlen = (info & 0xffff) as u16;
    let kind_flag = info >> 31 != 0;
    check_header_flags(id, kind, vlen, kind_flag)?;
    let size_or_type = word(2)?;
    use Kind::*;
    // Each kind checks its references as it reads them, in record order, and its own fields.
    match kind {
        Int => {
            let data = word(3)?;
            if data & 0xf000_0000 != 0 {
                return Err(bad(id, "INT has unused bits set"));
            }
            let (encoding, offset, bits) = ((data >> 24) & 0x0f, (data >> 16) & 0xff, data & 0xff);
            if !matches!(size_or_type, 1 | 2 | 4 | 8 | 16) {
                return Err(bad(id, "INT size must be 1, 2, 4, 8 or 16"));
            }
            if bits > 128 || offset + bits > size_or_type * 8 {
                return Err(bad(id, "INT bits exceed its size"));
            }
            if encoding.count_ones() > 1 {
                return Err(bad(id, "INT has more than one encoding"));
            }
        }
        Ptr | Volatile | Const | Restrict => {
            check_ref(btf, id, size_or_type, &mut reference)?;
            if !anonymous {
                return Err(bad(id, "pointer or modifier has a name"));
            }
        }
        Typedef | TypeTag | DeclTag => {
            check_ref(btf, id, size_or_type, &mut reference)?;
            if anonymous {
                return Err(bad(id, "typedef, type tag or decl tag has no name"));
            }
        }
        Func => {
            check_ref(btf, id, size_or_type, &mut reference)?;
            if anonymous {
                return Err(bad(id, "FUNC has no name"));
            }
            // static, global, extern (BPF objects declare extern kfuncs)
            if vlen > 2 {
                return Err(bad(id, "FUNC linkage unknown"));
            }
            if btf.name_off_and_kind(size_or_type)?.1 != Some(Kind::FuncProto) {
                return Err(bad(id, "FUNC does not point at a FUNC_PROTO"));
            }
        }
        Var => {
            check_ref(btf, id, size_or_type, &mut reference)?;
            if anonymous {
                return Err(bad(id, "VAR has no name"));
            }
            // static, global, extern (BPF objects declare extern variables)
            if word(3)? > 2 {
                return Err(bad(id, "VAR linkage unknown"));
            }
        }
        Array => {
            let element = word(3)?;
            check_ref(btf, id, element, &mut reference)?;
            check_ref(btf, id, word(4)?, &mut reference)?;
            if element == 0 {
                return Err(bad(id, "ARRAY of void"));
            }
        }
        Struct | Union => {
            let mut last_offset = 0;
            for words in entries(12).words() {
                let m = Member::from_words(words, kind_flag);
                check_ref(btf, id, m.type_id, &mut reference)?;
                check_name(btf, id, m.name_off)?;
                if kind_flag && m.bitfield_size > 128 {
                    return Err(bad(id, "member bitfield larger than 128 bits"));
                }
                if kind == Union && m.bit_offset != 0 {
                    return Err(bad(id, "union member at non-zero offset"));
                }
                if m.bit_offset < last_offset {
                    return Err(bad(id, "member offsets not increasing"));
                }
                if m.bit_offset.div_ceil(8) > size_or_type {
                    return Err(bad(id, "member offset past the end of the struct"));
                }
                last_offset = m.bit_offset;
            }
        }
        Enum | Enum64 => {
            if !matches!(size_or_type, 1 | 2 | 4 | 8) {
                return Err(bad(id, "enum size must be 1, 2, 4 or 8"));
            }
            let values = entries(if kind == Enum64 { 12 } else { 8 });
            for index in 0..values.len() {
                if check_name(btf, id, values.word(index, 0))? {
                    return Err(bad(id, "enumerator has no name"));
                }
            }
        }
        Fwd => {
            if anonymous {
                return Err(bad(id, "FWD has no name"));
            }
        }
        FuncProto => {
            check_ref(btf, id, size_or_type, &mut reference)?;
            for [name_off, type_id] in entries(8).words() {
                check_ref(btf, id, type_id, &mut reference)?;
                check_name(btf, id, name_off)?;
            }
        }
        Datasec => {
            if anonymous {
                return Err(bad(id, "DATASEC has no name"));
            }
            for [type_id, _, _] in entries(12).words() {
                check_ref(btf, id, type_id, &mut reference)?;
                if type_id == 0 {
                    return Err(bad(id, "DATASEC entry of void"));
                }
            }
        }
        Float => {
            if !matches!(size_or_type, 2 | 4 | 8 | 12 | 16) {
                return Err(bad(id, "FLOAT size must be 2, 4, 8, 12 or 16"));
            }
        }
    }
    Ok(())
}

const WHITE: u8 = 0;
const GREY: u8 = 1;
const BLACK: u8 = 2;

/// The edges that must not form a cycle (every reference but a pointer's: a struct may point
/// to itself) between this BTF's own types (base types were checked when the base was parsed,
/// and cannot refer back into split types), gathered by each type's checks as they go, so
/// the cycle search decodes nothing again: own type `start + i`'s targets, as
/// indexes from `start`, are `edges[ends[i - 1]..ends[i]]`.
struct ValueGraph {
    ends: Vec<u32>,
    edges: Vec<u32>,
}

impl ValueGraph {
    fn targets(&self, node: usize) -> core::ops::Range<usize> {
        let begin = node.checked_sub(1).map_or(0, |prev| self.ends[prev]);
        begin as usize..self.ends[node] as usize
    }

    /// Iterative three-colour DFS: each type entered once, each edge followed once.
    fn check_cycles(&self, start: u32) -> Result<()> {
        let mut colour: Vec<u8> = fallible::vec_with_capacity(self.ends.len())?;
        colour.resize(self.ends.len(), WHITE);
        // (type, position of its next edge in `edges`, end of its edges)
        let mut stack: Vec<(usize, usize, usize)> = Vec::new();
        for root in 0..self.ends.len() {
            if colour[root] != WHITE {
                continue;
            }
            colour[root] = GREY;
            let edges = self.targets(root);
            fallible::push(&mut stack, (root, edges.start, edges.end))?;
            while let Some((node, next, end)) = stack.last_mut() {
                if next == end {
                    colour[*node] = BLACK;
                    stack.pop();
                    continue;
                }
                let target = self.edges[*next] as usize;
                *next += 1;
                match colour[target] {
                    WHITE => {
                        colour[target] = GREY;
                        let edges = self.targets(target);
                        fallible::push(&mut stack, (target, edges.start, edges.end))?;
                    }
                    GREY => {
                        return Err(bad(
                            start + target as u32,
                            "reference cycle not through a pointer",
                        ));
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }
}
