//! libbpf's `btf__dedup` phases on split BTF (libbpf 1.1, which Debian's pahole 1.24 links),
//! over the unified ids of [`View`]: the base's types are canonical, already in the table,
//! and never change; the module's are matched against them and against each other, then
//! the module's canonical types are written after the base's.

use super::{OWN_STRING, Split, UNPROCESSED, View, too_deep};
use crate::btf::dedup_table::{
    self, Cursor, DedupPhases, DedupRecords, PhaseTables, Record, name_table_get,
};
use crate::btf::write::BtfWriter;
use crate::btf::{Btf, Kind, MAX_TYPE_ID};
use crate::error::{Error, Result};
use crate::fallible;
use alloc::vec::Vec;

/// The state of one module's deduplication over a [`super::SplitBase`].
pub(super) struct SplitDedup<'s, 'a> {
    pub(super) view: View<'s, 'a>,
    /// The phases' tables over the unified ids; the candidate table holds the module's
    /// types, and past the module's oldest the base's table goes on.
    pub(super) tables: PhaseTables,
}

impl SplitDedup<'_, '_> {
    fn b(&self) -> u32 {
        self.view.b
    }

    fn resolve(&self, id: u32) -> u32 {
        dedup_table::resolve(&self.tables.map, id)
    }

    /// Write the module's canonical types in id order after the base's, every reference
    /// remapped, names the base lacks in a string section that continues the base's.
    pub(super) fn emit(&self, module: &Btf<'_>) -> Result<Split> {
        let b = self.b();
        let n = self.tables.map.len() as u32 - b;
        let mut new_ids: Vec<u32> = fallible::vec_with_capacity(n as usize)?;
        let mut next = b;
        for id in b..b + n {
            new_ids.push(if self.tables.map[id as usize] == id {
                next += 1;
                next - 1
            } else {
                0
            });
        }
        if next - 1 > MAX_TYPE_ID {
            return Err(Error::Limit {
                what: "base and split BTF type count",
                limit: MAX_TYPE_ID as usize,
            });
        }
        let remap = |id: u32| {
            let r = self.resolve(id);
            if r < b { r } else { new_ids[(r - b) as usize] }
        };
        let base = self.view.base.btf;
        let mut out = BtfWriter::new_split(base.endian(), b, base.strings_len())?;
        let name = |out: &mut BtfWriter, key: u32| -> Result<u32> {
            if key & OWN_STRING == 0 {
                return Ok(key);
            }
            out.add_bytes(module.name_bytes(key & !OWN_STRING).unwrap_or(&[]))
        };
        let (mut named, mut named_in_base) = (0, 0);
        for id in b..b + n {
            let r = self.view.rec(id);
            let Some(kind) = r.kind else {
                return Err(Error::NoSuchType(id));
            };
            if r.name != 0 && matches!(kind, Kind::Struct | Kind::Union) {
                named += 1;
                named_in_base += u32::from(self.resolve(id) < b);
            }
            if self.tables.map[id as usize] != id {
                continue;
            }
            let size_or_type = if kind.has_type_ref() {
                remap(r.size_or_type)
            } else {
                r.size_or_type
            };
            let name_off = name(&mut out, r.name)?;
            out.begin_type_at(name_off, kind, r.kind_flag, r.vlen, size_or_type)?;
            let (names, ids) = super::layout(kind);
            for (i, &w) in self.view.words(id).iter().enumerate() {
                let is = |pos: Option<(usize, usize)>| pos.is_some_and(|(s, o)| i % s == o);
                let w = if is(names) {
                    name(&mut out, w)?
                } else if is(ids) || (kind == Kind::Array && i < 2) {
                    remap(w)
                } else {
                    w
                };
                out.push_word(w)?;
            }
        }
        Ok(Split {
            bytes: out.finish()?,
            module_types: n,
            split_types: next - b,
            named,
            named_in_base,
        })
    }
}

impl DedupRecords for SplitDedup<'_, '_> {
    fn record(&self, id: u32) -> Record {
        self.view.rec(id)
    }

    fn words(&self, id: u32) -> &[u32] {
        self.view.words(id)
    }

    fn too_deep(&self) -> Error {
        too_deep()
    }
}

/// A [`Cursor`] into the base's candidates: its slot there with this bit (a base has fewer
/// types than [`MAX_TYPE_ID`]); the module's own candidates are slots of its tables.
const BASE_CURSOR: u32 = 1 << 31;
const _: () = assert!(MAX_TYPE_ID < BASE_CURSOR);

/// The cursor at the base's slot `at`, or past the last for [`UNPROCESSED`] (a chain's end).
fn base_cursor(at: Cursor) -> Cursor {
    if at == UNPROCESSED {
        UNPROCESSED
    } else {
        at | BASE_CURSOR
    }
}

/// The base's slot at cursor `at`, if it is at one.
fn base_slot(at: Cursor) -> Option<Cursor> {
    (at != UNPROCESSED && at & BASE_CURSOR != 0).then_some(at & !BASE_CURSOR)
}

impl DedupPhases for SplitDedup<'_, '_> {
    fn tables(&self) -> &PhaseTables {
        &self.tables
    }

    fn tables_mut(&mut self) -> &mut PhaseTables {
        &mut self.tables
    }

    fn base_composite(&self, name: u32) -> Option<u32> {
        name_table_get(&self.view.base.composites, name)
    }

    /// The module's newest, else the base's.
    fn first_candidate(&self, h: u64) -> Cursor {
        match self.tables.candidates.first(h) {
            UNPROCESSED => base_cursor(self.view.base.candidates.first(h)),
            at => at,
        }
    }

    /// Past the module's oldest, the base's newest.
    fn next_candidate(&self, at: Cursor, h: u64) -> Cursor {
        if let Some(slot) = base_slot(at) {
            return base_cursor(self.view.base.candidates.next(slot));
        }
        match self.tables.candidates.next(at) {
            UNPROCESSED => base_cursor(self.view.base.candidates.first(h)),
            next => next,
        }
    }

    fn candidate(&self, at: Cursor) -> Option<u32> {
        match base_slot(at) {
            Some(slot) => self.view.base.candidates.id(slot),
            None => self.tables.candidates.id(at),
        }
    }

    /// Only the module's own types are ever set (the base's are canonical already).
    fn set_size_or_type(&mut self, id: u32, value: u32) {
        let at = id.wrapping_sub(self.b()) as usize;
        if let Some(r) = self.view.own.recs.get_mut(at) {
            r.size_or_type = value;
        }
    }

    fn set_word(&mut self, id: u32, index: usize, value: u32) {
        let at = id.wrapping_sub(self.b()) as usize;
        if let Some(start) = self.view.own.recs.get(at).map(|r| r.first_word as usize)
            && let Some(word) = self.view.own.words.get_mut(start + index)
        {
            *word = value;
        }
    }

    fn unwritten(&self, id: u32) -> Error {
        Error::NoSuchType(id)
    }
}
