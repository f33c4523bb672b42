//! libbpf's `btf__dedup` (libbpf 1.1, the one Debian's pahole 1.24 links) over the
//! converted records: primitives by value, structs and unions by structural equivalence
//! through a hypothetical map, forward declarations resolved to the one definition of their
//! name, reference types by their (already deduplicated) targets; then the canonical types
//! are written out in id order with their references remapped. The struct phase maps the
//! copies of a definition that every unit holds alike by their [`shapes`], without a walk
//! each, where that gives what the walks give.
//!
//! Names are compared as string offsets: the writer interns every name once, so equal
//! offsets are equal names, as after libbpf's own string deduplication.

mod shapes;

use super::Types;
use crate::btf::dedup_table::{
    self, DedupPhases, DedupRecords, IN_PROGRESS, MAX_DEPTH, PhaseTables, Record,
};
use crate::btf::write::BtfWriter;
use crate::error::{Error, Result};
use crate::fallible;
use alloc::vec::Vec;

// Record ids stay below the map's markers.
const _: () = assert!(super::MAX_RECORD_ID < IN_PROGRESS);

/// Deduplicate `types` and write the result into `writer` (whose strings it names); the
/// records' shapes made on two threads if `threads`.
pub fn dedup(types: &mut Types, writer: &mut BtfWriter, threads: bool) -> Result<()> {
    let n = types.records.len();
    let mut d = Dedup {
        tables: PhaseTables::new(n, 0, true)?,
        types,
    };
    d.prim_phase()?;
    let shaped = match d.struct_phase_by_shapes(threads)? {
        Ok(shaped) => Some(shaped),
        Err(shapes::Unsettled) => {
            // Every struct walked, as libbpf walks them, from the start.
            d.tables = PhaseTables::new(n, 0, true)?;
            d.prim_phase()?;
            d.tables.begin_struct_phase(false)?;
            for id in 1..n as u32 {
                d.struct_type(id)?;
            }
            None
        }
    };
    match &shaped {
        Some(shaped) => d.resolve_fwds_by_shapes(shaped)?,
        None => d.resolve_fwds()?,
    }
    // With the shapes, only the units' types they leave, then the extra records.
    let (listed, from) = match shaped {
        Some(shaped) => (d.premap_references(shaped, threads)?, d.first_extra()),
        None => (Vec::new(), 1),
    };
    for id in listed.into_iter().chain(from..n as u32) {
        d.ref_type(id, 0)?;
    }
    // What the search needed (tens of megabytes for a kernel) is gone before the output grows.
    d.tables = PhaseTables {
        map: core::mem::take(&mut d.tables.map),
        ..PhaseTables::default()
    };
    d.emit(writer)
}

struct Dedup<'t> {
    types: &'t mut Types,
    /// The phases' tables, with an [`crate::btf::dedup_table::EnumIndex`]: a kernel's units
    /// repeat thousands of enums.
    tables: PhaseTables,
}

impl Dedup<'_> {
    fn prim_phase(&mut self) -> Result<()> {
        for id in 1..self.tables.map.len() as u32 {
            self.prim_type(id)?;
        }
        Ok(())
    }

    fn resolve(&self, id: u32) -> u32 {
        dedup_table::resolve(&self.tables.map, id)
    }

    /// Write the canonical types in id order, every reference remapped to its new id.
    fn emit(&mut self, writer: &mut BtfWriter) -> Result<()> {
        let n = self.tables.map.len();
        let mut new_ids: Vec<u32> = fallible::vec_with_capacity(n)?;
        new_ids.resize(n, 0);
        let mut next = 1u32;
        for (id, new_id) in new_ids.iter_mut().enumerate().skip(1) {
            if self.tables.map[id] == id as u32 {
                *new_id = next;
                next += 1;
            }
        }
        // Only the deduplicated types must fit BTF's id space (the records before may not).
        if next - 1 > crate::btf::MAX_TYPE_ID {
            return Err(Error::Limit {
                what: "BTF type count after deduplicating the DWARF types",
                limit: crate::btf::MAX_TYPE_ID as usize,
            });
        }
        let remap = |d: &Self, id: u32| new_ids[d.resolve(id) as usize];
        let mut words: Vec<u32> = Vec::new();
        for id in 1..n as u32 {
            if self.tables.map[id as usize] != id {
                continue;
            }
            let r = self.record(id);
            let Some(kind) = r.kind else {
                return Err(Error::BadType {
                    id,
                    reason: "DWARF conversion left a type unwritten",
                });
            };
            words.clear();
            fallible::extend(&mut words, self.words(id))?;
            let mut size_or_type = r.size_or_type;
            super::map_type_ids(kind, &mut size_or_type, &mut words, |id| remap(self, id));
            writer.begin_type_at(r.name, kind, r.kind_flag, r.vlen, size_or_type)?;
            for &w in &words {
                writer.push_word(w)?;
            }
        }
        Ok(())
    }
}

impl DedupRecords for Dedup<'_> {
    fn record(&self, id: u32) -> Record {
        self.types
            .records
            .get(id as usize)
            .copied()
            .unwrap_or(Record::VOID)
    }

    fn words(&self, id: u32) -> &[u32] {
        match self.types.records.get(id as usize) {
            Some(r) => self.types.words(r),
            None => &[],
        }
    }

    fn too_deep(&self) -> Error {
        too_deep()
    }
}

fn too_deep() -> Error {
    Error::Limit {
        what: "depth of a DWARF type graph walk",
        limit: MAX_DEPTH,
    }
}

impl DedupPhases for Dedup<'_> {
    fn tables(&self) -> &PhaseTables {
        &self.tables
    }

    fn tables_mut(&mut self) -> &mut PhaseTables {
        &mut self.tables
    }

    fn set_size_or_type(&mut self, id: u32, value: u32) {
        if let Some(r) = self.types.records.get_mut(id as usize) {
            r.size_or_type = value;
        }
    }

    fn set_word(&mut self, id: u32, index: usize, value: u32) {
        let start = self.record(id).first_word as usize;
        if let Some(word) = self.types.words.get_mut(start + index) {
            *word = value;
        }
    }

    fn unwritten(&self, id: u32) -> Error {
        Error::BadType {
            id,
            reason: "DWARF conversion left a type unwritten",
        }
    }
}
