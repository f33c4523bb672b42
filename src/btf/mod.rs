//! BTF: zero-copy parsing and validation of raw BTF blobs (base and split), queries the CO-RE
//! engine needs, and a writer for new BTF.
//!
//! A [`Btf`] borrows its bytes and keeps only a sparse offset index (one `u32` per eight types),
//! so parsing the 5 MiB kernel BTF is one pass over its type headers and a 60 KiB allocation.

pub(crate) mod dedup_table;
pub mod dump;
mod filter;
mod index;
pub mod kind;
mod layout;
mod parse;
pub mod split;
mod types;
mod validate;
pub mod write;

pub use filter::NameFilter;
pub use kind::{Kind, KindSet};
pub use object::endian::Endianness;
pub use types::{
    Array, Composite, Datasec, Enum, EnumValue, FuncProto, Member, Param, Type, TypeKind,
    VarSecInfo,
};

use crate::error::{Error, Result};
use crate::fallible;
use alloc::vec::Vec;
use core::ops::ControlFlow;
use core::sync::atomic::{AtomicU64, Ordering};
use index::TypeIndex;

/// `BTF_MAGIC`.
pub const MAGIC: u16 = 0xeb9f;
/// Length of the BTF header this crate writes (`struct btf_header`).
pub const HEADER_LEN: usize = 24;
/// Largest type id the kernel accepts (`BTF_MAX_TYPE`).
pub const MAX_TYPE_ID: u32 = 0x000f_ffff;
/// Largest string offset the kernel accepts (`BTF_MAX_NAME_OFFSET`).
pub const MAX_NAME_OFFSET: u32 = 0x00ff_ffff;
/// How many modifiers, typedefs and nested arrays a type walk follows before giving up (the
/// kernel's `MAX_RESOLVE_DEPTH`).
pub const MAX_RESOLVE_DEPTH: usize = 32;

/// A parsed, validated BTF: base (ids from 1) or split on top of a base.
#[derive(Debug)]
pub struct Btf<'a> {
    base: Option<&'a Btf<'a>>,
    endian: Endianness,
    /// The type section.
    types: &'a [u8],
    /// The string section (NUL first and last; checked to be UTF-8 throughout only under
    /// [`Validation::Full`], else each name when read).
    strings: &'a [u8],
    /// The string section as text, when [`Validation::Full`] found it UTF-8 throughout: a name
    /// is then a slice of it, with no check of its own.
    text: Option<&'a str>,
    /// Where each local type's record starts.
    index: TypeIndex,
    /// Id of the first local type: 1 for base BTF, the base's `type_cnt()` for split BTF.
    start_id: u32,
    /// String offset of `strings[0]`: 0 for base BTF, the base's string length for split BTF.
    start_str_off: u32,
    /// The integer type named like C's `long`, whose size is the target's pointer size.
    long_type: Option<u32>,
    /// [`Validation::OnUse`]: one bit per own type, set once the type has been checked (empty
    /// under [`Validation::Full`], where everything was checked at parse time). Atomic so a
    /// parsed BTF stays shareable between threads; checking twice is harmless.
    validated: Vec<AtomicU64>,
}

/// One record of the type section, as [`Btf::entries`] gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry<'a> {
    /// A type of a kind btfgen knows, decoded.
    Type(Type<'a>),
    /// A type of a kind btfgen does not know.
    Unknown(UnknownType),
}

/// A type of a kind btfgen does not know, which the BTF's layout section gave the length of:
/// it keeps its id, so later ids stay right, but only its header is read. Nothing btfgen
/// decodes may refer to it, and it is never a CO-RE candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnknownType {
    /// The type's id.
    pub id: u32,
    /// String offset of its name (0 = anonymous), unchecked.
    pub name_off: u32,
    /// Its raw kind value.
    pub kind: u32,
    /// Its vlen (the number of entries the layout section sized).
    pub vlen: u16,
}

/// How much of a BTF is checked when it is parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validation {
    /// Every type is checked at parse time, as strictly as the kernel's BTF checker checks
    /// structure, including reference cycles that do not pass through a pointer.
    Full,
    /// The header, section layout, string section and every record's bounds and kind are
    /// checked at parse time; each type's fields, names and references are checked whenever
    /// the type is decoded. For a large target BTF of which a run reads a few hundred types:
    /// reading stays bounded (every walk has a depth limit), and what is emitted from it is
    /// re-validated in full.
    OnUse,
}

impl<'a> Btf<'a> {
    /// Parse and validate a raw base BTF blob (e.g. `/sys/kernel/btf/vmlinux`).
    pub fn parse(data: &'a [u8]) -> Result<Btf<'a>> {
        Ok(parse::parse(data, None, Validation::Full, None)?.0)
    }

    /// Parse and validate a raw split BTF blob (e.g. `/sys/kernel/btf/<module>`) on `base`.
    pub fn parse_split(data: &'a [u8], base: &'a Btf<'a>) -> Result<Btf<'a>> {
        Ok(parse::parse(data, Some(base), Validation::Full, None)?.0)
    }

    /// Parse raw BTF, or the `.BTF` section when `data` is an ELF file (vmlinux image, `.ko`,
    /// BPF object), optionally split on `base`.
    pub fn parse_raw_or_elf(data: &'a [u8], base: Option<&'a Btf<'a>>) -> Result<Btf<'a>> {
        Ok(parse::parse(parse::btf_bytes(data)?, base, Validation::Full, None)?.0)
    }

    /// Like [`Btf::parse_raw_or_elf`], with the given validation.
    pub fn parse_with(
        data: &'a [u8],
        base: Option<&'a Btf<'a>>,
        validation: Validation,
    ) -> Result<Btf<'a>> {
        Ok(parse::parse(parse::btf_bytes(data)?, base, validation, None)?.0)
    }

    /// Like [`Btf::parse_with`], also returning, in id order, the ids of the types this BTF
    /// defines itself that `filter` lets through (as [`Btf::filtered`] would), found by the
    /// parse's own pass over the types.
    pub fn parse_filtered(
        data: &'a [u8],
        base: Option<&'a Btf<'a>>,
        validation: Validation,
        filter: &NameFilter,
    ) -> Result<(Btf<'a>, Vec<u32>)> {
        parse::parse(parse::btf_bytes(data)?, base, validation, Some(filter))
    }

    /// The base BTF of a split BTF.
    pub fn base(&self) -> Option<&'a Btf<'a>> {
        self.base
    }

    /// Byte order of the blob.
    pub fn endian(&self) -> Endianness {
        self.endian
    }

    /// One past the largest valid type id (libbpf's `btf__type_cnt`): ids `0..type_cnt()` exist.
    pub fn type_cnt(&self) -> u32 {
        self.start_id + self.index.len()
    }

    /// First id defined by this BTF itself (1 for base BTF).
    pub fn start_id(&self) -> u32 {
        self.start_id
    }

    /// Length of this BTF's own string section.
    pub fn strings_len(&self) -> u32 {
        self.strings.len() as u32
    }

    /// First string offset defined by this BTF itself (0 for base BTF).
    pub fn start_str_off(&self) -> u32 {
        self.start_str_off
    }

    /// The type with id `id`, resolving into the base for split BTF. Id 0 is [`TypeKind::Void`].
    pub fn type_by_id(&self, id: u32) -> Result<Type<'a>> {
        if id < self.start_id {
            return match self.base {
                Some(base) => base.type_by_id(id),
                None => Ok(Type {
                    id: 0,
                    name_off: 0,
                    kind: TypeKind::Void,
                }),
            };
        }
        self.type_at(id, self.offset(id)?)
    }

    /// Own type `id`, whose record is at `offset`: decoded, and checked on first use.
    fn type_at(&self, id: u32, offset: usize) -> Result<Type<'a>> {
        let (len, info) = self
            .index
            .record(self.types, self.endian, offset)
            .ok_or_else(|| self.index.bad_record(self.types, self.endian, offset, id))?;
        self.type_in_record(id, (offset, len, info))
    }

    /// [`Btf::type_at`] for a record whose length and header word the caller has read.
    fn type_in_record(&self, id: u32, record: (usize, usize, u32)) -> Result<Type<'a>> {
        let index = (id - self.start_id) as usize;
        let ty = parse::decode(self.types, self.endian, record, id)?;
        if let Some(word) = self.validated.get(index / 64)
            && let Some(kind) = ty.kind()
        {
            let bit = 1u64 << (index % 64);
            if word.load(Ordering::Relaxed) & bit == 0 {
                validate::check_record(self, id, kind, record, |_| {})?;
                word.fetch_or(bit, Ordering::Relaxed);
            }
        }
        Ok(ty)
    }

    /// Name offset and kind of type `id`, read from its header alone (no decoding): the fast
    /// path for scans over every type. `None` kind for void and for kinds btfgen does not
    /// know (skipped by the layout section), so those are never candidates.
    pub fn name_off_and_kind(&self, id: u32) -> Result<(u32, Option<Kind>)> {
        if id < self.start_id {
            return match self.base {
                Some(base) => base.name_off_and_kind(id),
                None => Ok((0, None)),
            };
        }
        let offset = self.offset(id)?;
        let word = |at| parse::read_u32(self.types, offset + at, self.endian).unwrap_or(0);
        Ok((word(0), Kind::from_raw((word(4) >> 24) & 0x1f)))
    }

    /// Word `word` of the own type record at `offset` (0 = name_off, 1 = info, 2 = size/type,
    /// 3.. = data), for checks on raw fields the decoded view does not keep.
    pub(crate) fn raw_word(&self, offset: usize, word: usize) -> Result<u32> {
        parse::read_u32(self.types, offset + 4 * word, self.endian).ok_or(Error::Truncated {
            what: "BTF type record",
            offset,
        })
    }

    /// The ids of the named types this BTF defines itself that `filter` lets through, in id
    /// order, read from the headers alone: the fast path for whole-BTF scans, which never
    /// touches the names of types of other kinds.
    pub fn filtered(&self, filter: &NameFilter) -> Result<Vec<u32>> {
        let mut ids = Vec::new();
        self.index
            .for_each_record(self.types, self.endian, |index, pos, info| {
                if self.passes(filter, pos, info) {
                    fallible::push(&mut ids, self.start_id + index)?;
                }
                Ok(())
            })?;
        // The walk visits types in no particular order.
        ids.sort_unstable();
        Ok(ids)
    }

    /// Whether the record at `pos` (with `info`) is a named type `filter` lets through.
    #[inline]
    fn passes(&self, filter: &NameFilter, pos: usize, info: u32) -> bool {
        filter.kinds().contains_raw((info >> 24) & 0x1f)
            && parse::read_u32(self.types, pos, self.endian)
                .filter(|&name_off| name_off != 0)
                .and_then(|name_off| self.string_tail(name_off))
                .is_some_and(|name| filter.accepts_name(name))
    }

    /// Byte offset in the type section of own type `id` (`id >= start_id`).
    fn offset(&self, id: u32) -> Result<usize> {
        self.index
            .offset(self.types, self.endian, id - self.start_id)
            .ok_or(Error::NoSuchType(id))
    }

    /// The string section from `offset` to its end (never empty; `None` out of range),
    /// resolving into the base for split BTF: lets a scan reject a name by its first bytes
    /// before finding its end.
    pub fn string_tail(&self, offset: u32) -> Option<&'a [u8]> {
        match offset.checked_sub(self.start_str_off) {
            Some(local) => self
                .strings
                .get(local as usize..)
                .filter(|rest| !rest.is_empty()),
            None => self.base?.string_tail(offset),
        }
    }

    /// [`Btf::string_tail`], with an error naming `offset` when it is out of range.
    fn strings_from(&self, offset: u32) -> Result<&'a [u8]> {
        self.string_tail(offset).ok_or(Error::BadString {
            offset,
            reason: "offset out of range",
        })
    }

    /// The bytes of the string at offset `offset` (without its NUL), resolving into the base
    /// for split BTF; `None` when the offset is out of range or the string unterminated. No
    /// UTF-8 check: for scans that compare names with names they already have.
    pub fn name_bytes(&self, offset: u32) -> Option<&'a [u8]> {
        let rest = self.string_tail(offset)?;
        Some(&rest[..nul_position(rest)?])
    }

    /// The string at offset `offset`, resolving into the base for split BTF.
    pub fn name(&self, offset: u32) -> Result<&'a str> {
        let rest = self.strings_from(offset)?;
        let end = nul_position(rest).ok_or(Error::BadString {
            offset,
            reason: "not NUL-terminated",
        })?;
        let not_utf8 = Error::BadString {
            offset,
            reason: "not UTF-8",
        };
        // In a section known to be UTF-8, a name is text unless it starts inside a character
        // (its NUL ends one): what checking its bytes would find.
        if let (Some(text), Some(local)) = (self.text, offset.checked_sub(self.start_str_off)) {
            let start = local as usize;
            return text.get(start..start + end).ok_or(not_utf8);
        }
        core::str::from_utf8(&rest[..end]).map_err(|_| not_utf8)
    }

    /// The first byte of the string at `offset`, checking only that the offset is in range: the
    /// section ends with a NUL, so every in-range offset starts a terminated string.
    /// Validation uses this to avoid a scan per name.
    pub(crate) fn name_first_byte(&self, offset: u32) -> Result<u8> {
        Ok(self.strings_from(offset)?.first().copied().unwrap_or(0))
    }

    /// The name of type `ty` (empty for anonymous types).
    pub fn type_name(&self, ty: &Type<'_>) -> Result<&'a str> {
        self.name(ty.name_off)
    }

    /// Every type this BTF defines itself (not its base), in id order: one walk of the type
    /// section, not a lookup per type. A type of a kind btfgen does not know is an error here
    /// (see [`Btf::entries`]).
    pub fn types(&self) -> impl Iterator<Item = Result<Type<'a>>> + '_ {
        self.entries().map(|entry| match entry? {
            Entry::Type(ty) => Ok(ty),
            Entry::Unknown(unknown) => Err(Error::BadType {
                id: unknown.id,
                reason: parse::SKIPPED,
            }),
        })
    }

    /// Like [`Btf::types`], with the types of kinds btfgen does not know, which the layout
    /// section let the parse step over, as [`Entry::Unknown`].
    pub fn entries(&self) -> impl Iterator<Item = Result<Entry<'a>>> + '_ {
        self.records().map(|(_, entry)| entry)
    }

    /// [`Btf::entries`], each with the offset of its record in the type section.
    pub(super) fn records(&self) -> impl Iterator<Item = (usize, Result<Entry<'a>>)> + '_ {
        let mut offset = 0;
        (self.start_id..self.type_cnt()).map(move |id| {
            let at = offset;
            let record = self.index.record(self.types, self.endian, at);
            offset += record.map_or(0, |(len, _)| len);
            let entry = match record {
                Some((_, info)) if Kind::from_raw((info >> 24) & 0x1f).is_none() => {
                    Ok(Entry::Unknown(UnknownType {
                        id,
                        name_off: parse::read_u32(self.types, at, self.endian).unwrap_or(0),
                        kind: (info >> 24) & 0x1f,
                        vlen: (info & 0xffff) as u16,
                    }))
                }
                Some((len, info)) => self.type_in_record(id, (at, len, info)).map(Entry::Type),
                None => Err(self.index.bad_record(self.types, self.endian, at, id)),
            };
            (at, entry)
        })
    }

    /// `(id, (offset, length, info))` of every type this BTF defines, in id order, from the
    /// record headers alone (no decoding): one sequential walk, for scans over every type.
    pub(super) fn headers(&self) -> impl Iterator<Item = (u32, (usize, usize, u32))> + '_ {
        let mut offset = 0;
        (self.start_id..self.type_cnt()).map_while(move |id| {
            let at = offset;
            let (len, info) = self.index.record(self.types, self.endian, at)?;
            offset += len;
            Some((id, (at, len, info)))
        })
    }

    /// Whether type `id` (its own or its base's) is of a kind btfgen does not know, skipped
    /// by the layout section.
    pub fn is_unknown_kind(&self, id: u32) -> bool {
        if id < self.start_id {
            return self.base.is_some_and(|base| base.is_unknown_kind(id));
        }
        self.index.has_unknown_kinds() && matches!(self.name_off_and_kind(id), Ok((_, None)))
    }

    /// Follow modifiers (CONST, VOLATILE, RESTRICT, TYPE_TAG) and typedefs from `id` to the
    /// first other type.
    pub fn skip_mods_and_typedefs(&self, id: u32) -> Result<Type<'a>> {
        self.skip_while(id, |k| k.is_mod_or_typedef())
    }

    /// Follow modifiers (not typedefs) from `id` to the first other type.
    pub fn skip_mods(&self, id: u32) -> Result<Type<'a>> {
        self.skip_while(id, |k| k.is_mod_or_typedef() && k != Kind::Typedef)
    }

    fn skip_while(&self, id: u32, skip: impl Fn(Kind) -> bool) -> Result<Type<'a>> {
        follow_chain(id, |id| {
            let ty = self.type_by_id(id)?;
            Ok(match (ty.kind(), ty.kind.modified_type()) {
                (Some(kind), Some(next)) if skip(kind) => ControlFlow::Continue(next),
                _ => ControlFlow::Break(ty),
            })
        })?
        .ok_or(Error::BadType {
            id,
            reason: "modifier/typedef chain loops",
        })
    }

    /// The size in bytes of type `id`, exactly as libbpf's `btf__resolve_size`: through
    /// modifiers, typedefs, variables and tags; pointers have the target's pointer size; arrays
    /// multiply; at most [`MAX_RESOLVE_DEPTH`] steps, and sizes must fit in 32 bits.
    pub fn resolve_size(&self, id: u32) -> Result<u64> {
        let too_big = Error::BadType {
            id,
            reason: "type size exceeds 4 GiB",
        };
        let start = id;
        let mut id = id;
        let mut nelems: u32 = 1;
        for _ in 0..MAX_RESOLVE_DEPTH {
            let ty = self.type_by_id(id)?;
            let size = match ty.kind {
                TypeKind::Void => break,
                TypeKind::Ptr(_) => self.pointer_size(),
                TypeKind::Array(a) => {
                    nelems = nelems.checked_mul(a.nelems).ok_or(too_big.clone())?;
                    id = a.elem_type;
                    continue;
                }
                TypeKind::Var { type_id: next, .. } | TypeKind::DeclTag { type_id: next, .. } => {
                    id = next;
                    continue;
                }
                _ => match (ty.size(), ty.kind.modified_type()) {
                    (Some(size), _) => size,
                    (None, Some(next)) => {
                        id = next;
                        continue;
                    }
                    _ => {
                        return Err(Error::BadType {
                            id,
                            reason: "type has no size",
                        });
                    }
                },
            };
            return size.checked_mul(nelems).map(u64::from).ok_or(too_big);
        }
        // As libbpf: at most MAX_RESOLVE_DEPTH types are visited, the sized one included.
        Err(Error::BadType {
            id: start,
            reason: "type chain too deep to size",
        })
    }

    /// Id of the integer type named like C's `long` (its own or its base's), if any.
    pub fn long_type_id(&self) -> Option<u32> {
        self.long_type
    }

    /// Pointer size of the target, as libbpf determines it: the size of the integer named like
    /// `long`, else 8 (the size of a pointer on the 64-bit hosts this runs on).
    pub fn pointer_size(&self) -> u32 {
        self.long_type
            .and_then(|id| self.type_by_id(id).ok())
            .and_then(|t| t.size())
            .unwrap_or(8)
    }
}

/// Index of the first NUL in `bytes`, eight bytes at a time: names are read from a string
/// section that goes on after them, and a scan per byte was most of a candidate lookup.
fn nul_position(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut chunks = bytes.chunks_exact(8);
    let mut at = 0;
    for chunk in &mut chunks {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        let word = u64::from_le_bytes(word);
        // The lowest high bit set marks the first zero byte (a borrow only marks bytes above).
        let zeros = word.wrapping_sub(ONES) & !word & HIGHS;
        if zeros != 0 {
            return Some(at + (zeros.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    let rest = chunks.remainder().iter().position(|&b| b == 0)?;
    Some(at + rest)
}

/// Follow a chain of type ids from `start`, `step` giving the next id or the result: `None` if
/// the chain comes back on itself. Like libbpf, no depth limit applies to a chain that ends
/// (it visits every type once at most); a cycle, which only BTF not fully validated can have,
/// is found after at most a few times as many steps as the chain has ids (Brent's algorithm:
/// under four times), so a lookup never walks the whole BTF because of one.
pub(crate) fn follow_chain<T>(
    start: u32,
    mut step: impl FnMut(u32) -> Result<ControlFlow<T, u32>>,
) -> Result<Option<T>> {
    let (mut id, mut saved, mut power, mut walked) = (start, start, 1u64, 0u64);
    loop {
        id = match step(id)? {
            ControlFlow::Break(found) => return Ok(Some(found)),
            ControlFlow::Continue(next) => next,
        };
        if id == saved {
            return Ok(None);
        }
        walked += 1;
        if walked == power {
            (saved, power, walked) = (id, power * 2, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Steps taken and result of following `next` from 0 until `end`.
    fn follow(next: impl Fn(u32) -> u32, end: u32) -> (u32, Option<u32>) {
        let mut steps = 0;
        let found = follow_chain(0, |id| {
            steps += 1;
            Ok(if id == end {
                ControlFlow::Break(id)
            } else {
                ControlFlow::Continue(next(id))
            })
        })
        .unwrap();
        (steps, found)
    }

    #[test]
    fn nul_position_finds_the_first_nul() {
        for len in 0..40 {
            for nul in 0..=len {
                // Every byte value before the NUL, 0x80 and 0x01 among them (borrow cases).
                let mut bytes: Vec<u8> =
                    (0..len).map(|i| [0x80, 0x01, b'a', 0xff][i % 4]).collect();
                if nul < len {
                    bytes[nul] = 0;
                    // A second NUL right after must not be taken for the first.
                    if nul + 1 < len {
                        bytes[nul + 1] = 0;
                    }
                }
                let expected = bytes.iter().position(|&b| b == 0);
                assert_eq!(nul_position(&bytes), expected, "len {len}, nul {nul}");
            }
        }
    }

    /// One `int` named "é" (two bytes): a header, one INT record and the strings.
    fn one_int_named_e_acute() -> Vec<u8> {
        let strings = b"\0\xc3\xa9\0";
        let words: [u32; 4] = [1, 1 << 24, 4, 32];
        let mut blob = Vec::new();
        blob.extend_from_slice(&MAGIC.to_le_bytes());
        blob.extend_from_slice(&[1, 0]);
        for field in [24, 0, 16, 16, strings.len() as u32] {
            blob.extend_from_slice(&field.to_le_bytes());
        }
        for word in words {
            blob.extend_from_slice(&word.to_le_bytes());
        }
        blob.extend_from_slice(strings);
        blob
    }

    #[test]
    fn names_inside_a_character_are_not_utf8_under_either_validation() {
        let blob = one_int_named_e_acute();
        for validation in [Validation::Full, Validation::OnUse] {
            let btf = Btf::parse_with(&blob, None, validation).unwrap();
            assert_eq!(btf.name(1).unwrap(), "\u{e9}", "{validation:?}");
            assert_eq!(btf.name(3).unwrap(), "", "{validation:?}");
            match btf.name(2) {
                Err(Error::BadString { offset: 2, reason }) => assert_eq!(reason, "not UTF-8"),
                other => panic!("{validation:?}: {other:?}"),
            }
            assert!(btf.name(4).is_err(), "{validation:?}: past the section");
        }
    }

    #[test]
    fn a_long_chain_is_followed_to_its_end() {
        assert_eq!(follow(|id| id + 1, 100_000), (100_001, Some(100_000)));
    }

    #[test]
    fn a_cycle_is_found_within_a_few_times_the_chain() {
        for (tail, cycle) in [(0, 1), (0, 2), (1, 1), (1000, 1), (1000, 1000), (3, 77_777)] {
            let next = |id: u32| if id + 1 < tail + cycle { id + 1 } else { tail };
            let (steps, found) = follow(next, u32::MAX);
            assert_eq!(found, None, "tail {tail}, cycle {cycle}");
            let bound = 4 * (tail + cycle) + 2;
            assert!(steps <= bound, "tail {tail}, cycle {cycle}: {steps} steps");
        }
    }
}
