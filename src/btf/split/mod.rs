//! Split BTF over a base: what `pahole -J --btf_base BASE MODULE.ko` writes for a kernel
//! module, libbpf's `btf__dedup` run on the module's types as split BTF over the kernel's.
//!
//! The input is the base BTF (the kernel's, already deduplicated) and the module's types as
//! one standalone, already deduplicated BTF (what [`crate::dwarf::to_btf`] makes of a debug
//! `.ko`). Every module type structurally equivalent to a base type becomes that base type's
//! id, by libbpf's rules: base types are canonical and hashed first; the module's
//! primitives, then structs and unions (equivalence through a hypothetical map, a FWD
//! equivalent to a struct or union of its name), then its forward declarations (to the one
//! struct or union of their name among base and module), then its reference types are
//! matched against the base's and the module's own. What is left is written after the
//! base's last id, names the base has by the base's offsets, the others in a string section
//! that continues the base's.
//!
//! It lives in `btf/`, not `dwarf/`: it takes and writes BTF only, so a module's standalone
//! BTF from anywhere (not only from DWARF) can be split, and the DWARF converter stays as it
//! is. The module side being deduplicated already differs from libbpf's single pass in one
//! corner: a module FWD that the module's own dedup resolved to a module struct, whose name a
//! different base struct also has, stays resolved here, where libbpf leaves it a FWD.
//!
//! [`SplitBase`] holds what is computed from the base alone (its records, hashes, names), so
//! that many modules split over one kernel pay for it once.

use super::dedup_table::{
    Candidates, DedupPhases, DedupRecords, IN_PROGRESS, MAX_DEPTH, PhaseTables, Record,
    UNPROCESSED, combine, name_table_add,
};
use super::write::string_at;
use super::{Btf, Kind};
use crate::error::{Error, Result};
use crate::fallible;
use alloc::vec::Vec;
use core::hash::BuildHasher;
use hashbrown::{DefaultHashBuilder, HashTable};

/// Name keys: a base string offset as it is (below
/// [`MAX_NAME_OFFSET`](crate::btf::MAX_NAME_OFFSET)), a string the base lacks as the module's
/// offset with this bit set. Equal keys are equal names on both sides.
const OWN_STRING: u32 = 1 << 31;

/// Records and the arena of their kind-specific words.
#[derive(Debug, Default)]
struct Arena {
    recs: Vec<Record>,
    words: Vec<u32>,
}

impl Arena {
    fn words(&self, r: &Record) -> &[u32] {
        r.words(&self.words)
    }
}

/// `(stride, index)` of one field of each entry of a kind's kind-specific words.
type Field = Option<(usize, usize)>;

/// Where, among a kind's kind-specific words, names and type ids are: each entry's name
/// field, and its type id field.
fn layout(kind: Kind) -> (Field, Field) {
    match kind {
        Kind::Struct | Kind::Union => (Some((3, 0)), Some((3, 1))),
        Kind::Enum => (Some((2, 0)), None),
        Kind::Enum64 => (Some((3, 0)), None),
        Kind::FuncProto => (Some((2, 0)), Some((2, 1))),
        Kind::Datasec => (None, Some((3, 0))),
        Kind::Array => (None, Some((3, 0))), // words 0 and 1, see `load`
        _ => (None, None),
    }
}

/// Read every own type of `btf` into `arena`, names through `name` and type ids through `id`.
fn load(
    btf: &Btf<'_>,
    arena: &mut Arena,
    mut name: impl FnMut(u32) -> Result<u32>,
    mut id: impl FnMut(u32) -> Result<u32>,
) -> Result<()> {
    arena
        .recs
        .try_reserve((btf.type_cnt() - btf.start_id()) as usize)?;
    for (type_id, (at, _, info)) in btf.headers() {
        let kind = Kind::from_raw((info >> 24) & 0x1f).ok_or(Error::BadType {
            id: type_id,
            reason: "a kind btfgen does not know cannot be split",
        })?;
        let vlen = (info & 0xffff) as u16;
        let first_word = u32::try_from(arena.words.len()).map_err(|_| Error::Limit {
            what: "BTF kind-specific words",
            limit: u32::MAX as usize,
        })?;
        let size_or_type = btf.raw_word(at, 2)?;
        let rec = Record {
            name: name(btf.raw_word(at, 0)?)?,
            kind: Some(kind),
            kind_flag: info >> 31 != 0,
            vlen,
            size_or_type: if kind.has_type_ref() {
                id(size_or_type)?
            } else {
                size_or_type
            },
            first_word,
        };
        let count = kind.extra_len(vlen) / 4;
        arena.words.try_reserve(count)?;
        let (names, ids) = layout(kind);
        for i in 0..count {
            let word = btf.raw_word(at, 3 + i)?;
            let is = |pos: Option<(usize, usize)>| pos.is_some_and(|(s, o)| i % s == o);
            let word = if is(names) {
                name(word)?
            } else if is(ids) || (kind == Kind::Array && i < 2) {
                id(word)?
            } else {
                word
            };
            arena.words.push(word);
        }
        fallible::push(&mut arena.recs, rec)?;
    }
    Ok(())
}

/// What splitting over one base needs of the base, computed once.
#[derive(Debug)]
pub struct SplitBase<'a> {
    btf: &'a Btf<'a>,
    /// Base records by id, void at 0.
    arena: Arena,
    /// The base's types by hash, as a module's deduplication meets them after its own.
    candidates: Candidates,
    /// Base string offsets by the hash of their bytes (the first of equal strings).
    strings: HashTable<u32>,
    hasher: DefaultHashBuilder,
    /// Name key → the base struct or union of that name, 0 when several have it.
    composites: HashTable<(u32, u32)>,
}

/// What [`SplitBase::split`] wrote.
#[derive(Debug)]
pub struct Split {
    /// The split BTF, raw (as `/sys/kernel/btf/MODULE`).
    pub bytes: Vec<u8>,
    /// Types in the module's standalone BTF.
    pub module_types: u32,
    /// Types written after the base's.
    pub split_types: u32,
    /// Named structs and unions of the module.
    pub named: u32,
    /// How many of those are base types: none, for a base that is not the module's kernel.
    pub named_in_base: u32,
}

impl<'a> SplitBase<'a> {
    /// Read base BTF `btf` (a base BTF, ids from 1) for splitting modules over it.
    pub fn new(btf: &'a Btf<'a>) -> Result<SplitBase<'a>> {
        if btf.base().is_some() {
            return Err(Error::InvalidArgument(
                "the base to split over is itself split BTF",
            ));
        }
        let count = btf.type_cnt();
        let mut arena = Arena::default();
        fallible::push(&mut arena.recs, Record::VOID)?;
        load(btf, &mut arena, Ok, |id| {
            if id < count {
                Ok(id)
            } else {
                Err(Error::NoSuchType(id))
            }
        })?;
        let mut base = SplitBase {
            btf,
            arena,
            candidates: Candidates::default(),
            strings: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
            composites: HashTable::new(),
        };
        for id in 1..count {
            let (r, h) = {
                let view = View::base(&base);
                let r = view.rec(id);
                let h = match r.kind {
                    Some(Kind::Var | Kind::Datasec) | None => continue,
                    Some(Kind::Int | Kind::DeclTag | Kind::Array | Kind::FuncProto) => {
                        view.hash_all(id)
                    }
                    Some(Kind::Enum | Kind::Enum64) => combine(0, r.name),
                    Some(Kind::Struct | Kind::Union) => view.hash_struct(id),
                    Some(_) => view.hash_common(id),
                };
                (r, h)
            };
            base.candidates.add(h, id)?;
            if matches!(r.kind, Some(Kind::Struct | Kind::Union)) {
                name_table_add(&mut base.composites, r.name, id)?;
            }
        }
        let mut off = 0usize;
        let strings = btf.strings;
        while off < strings.len() {
            let end = strings[off..]
                .iter()
                .position(|&b| b == 0)
                .map_or(strings.len(), |p| off + p);
            let s = &strings[off..end];
            let hash = base.hasher.hash_one(s);
            if base
                .strings
                .find(hash, |&o| string_at(strings, o) == s)
                .is_none()
            {
                let hasher = &base.hasher;
                base.strings
                    .try_reserve(1, |&o| hasher.hash_one(string_at(strings, o)))?;
                base.strings.insert_unique(hash, off as u32, |&o| {
                    hasher.hash_one(string_at(strings, o))
                });
            }
            off = end + 1;
        }
        Ok(base)
    }

    /// The base BTF.
    pub fn btf(&self) -> &'a Btf<'a> {
        self.btf
    }

    fn find_string(&self, s: &[u8]) -> Option<u32> {
        let strings = self.btf.strings;
        self.strings
            .find(self.hasher.hash_one(s), |&o| string_at(strings, o) == s)
            .copied()
    }

    /// The split BTF of `module` (a standalone BTF, deduplicated: one module's types) over
    /// this base, in the base's byte order, checked as [`Btf::parse_split`] checks any.
    pub fn split(&self, module: &Btf<'_>) -> Result<Split> {
        if module.base().is_some() {
            return Err(Error::InvalidArgument(
                "the module's BTF to split is already split BTF",
            ));
        }
        if module.endian() != self.btf.endian() {
            return Err(Error::InvalidArgument(
                "the module's BTF and the base have different byte orders",
            ));
        }
        let b = self.btf.type_cnt();
        let module_types = module.type_cnt() - 1;
        let total = b
            .checked_add(module_types)
            .filter(|&t| t < IN_PROGRESS)
            .ok_or(Error::Limit {
                what: "base and module types",
                limit: IN_PROGRESS as usize,
            })?;
        let mut own = Arena::default();
        load(
            module,
            &mut own,
            |off| {
                if off == 0 {
                    return Ok(0);
                }
                let s = module.name_bytes(off).ok_or(Error::BadString {
                    offset: off,
                    reason: "offset out of range or unterminated",
                })?;
                Ok(self.find_string(s).unwrap_or(OWN_STRING | off))
            },
            |id| match id {
                0 => Ok(0),
                id if id <= module_types => Ok(b + id - 1),
                id => Err(Error::NoSuchType(id)),
            },
        )?;
        let mut d = SplitDedup {
            view: View { base: self, own, b },
            tables: PhaseTables::new(total as usize, b, false)?,
        };
        for id in b..total {
            if matches!(d.view.rec(id).kind, Some(Kind::Var | Kind::Datasec)) {
                d.tables.map[id as usize] = id;
            }
        }
        for id in b..total {
            d.prim_type(id)?;
        }
        d.tables.begin_struct_phase(false)?;
        for id in b..total {
            d.struct_type(id)?;
        }
        d.resolve_fwds()?;
        for id in b..total {
            d.ref_type(id, 0)?;
        }
        let mut split = d.emit(module)?;
        split.module_types = module_types;
        Btf::parse_split(&split.bytes, self.btf)?;
        Ok(split)
    }
}

/// Base and module records, by unified id: base ids as they are, module id `i` as
/// `b + i - 1`.
struct View<'s, 'a> {
    base: &'s SplitBase<'a>,
    own: Arena,
    /// The base's `type_cnt`: the first module id.
    b: u32,
}

impl<'s, 'a> View<'s, 'a> {
    /// A view of the base alone, for hashing its types.
    fn base(base: &'s SplitBase<'a>) -> Self {
        View {
            base,
            own: Arena::default(),
            b: u32::MAX,
        }
    }

    fn rec(&self, id: u32) -> Record {
        let (arena, at) = self.arena(id);
        arena.recs.get(at).copied().unwrap_or(Record::VOID)
    }

    fn arena(&self, id: u32) -> (&Arena, usize) {
        if id < self.b {
            (&self.base.arena, id as usize)
        } else {
            (&self.own, (id - self.b) as usize)
        }
    }
}

impl DedupRecords for View<'_, '_> {
    fn record(&self, id: u32) -> Record {
        self.rec(id)
    }

    fn words(&self, id: u32) -> &[u32] {
        let (arena, at) = self.arena(id);
        match arena.recs.get(at) {
            Some(r) => arena.words(r),
            None => &[],
        }
    }

    fn too_deep(&self) -> Error {
        too_deep()
    }
}

fn too_deep() -> Error {
    Error::Limit {
        what: "depth of a BTF type graph walk while splitting",
        limit: MAX_DEPTH,
    }
}

mod dedup;
use dedup::SplitDedup;
