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

/// What [`dedup`] works in, made before it: the phases' tables and a shape slot per record
/// for the struct phase, tens of megabytes of pages to fill for a kernel, which another thread
/// may fill while the conversion settles its ids.
pub struct Prepared {
    tables: PhaseTables,
    shapes: Vec<u32>,
}

impl Prepared {
    /// For `records` records.
    pub fn new(records: usize) -> Result<Prepared> {
        Ok(Prepared {
            tables: PhaseTables::new(records, 0, true)?,
            shapes: shapes::unset_slots(records)?,
        })
    }
}

/// Deduplicate `types` in `prepared` (for as many records) and write the result into
/// `writer` (whose strings it names); the records' shapes made on two threads if `threads`.
pub fn dedup(
    types: &mut Types,
    prepared: Prepared,
    writer: &mut BtfWriter,
    threads: bool,
) -> Result<()> {
    let n = types.records.len();
    let Prepared { tables, shapes } = prepared;
    if tables.map.len() != n {
        return Err(Error::InvalidArgument(
            "DWARF deduplication: tables for another number of records",
        ));
    }
    let mut d = Dedup { tables, types };
    d.prim_phase(threads)?;
    let shaped = match d.struct_phase_by_shapes(shapes, threads)? {
        Ok(shaped) => Some(shaped),
        Err(shapes::Unsettled) => {
            // Every struct walked, as libbpf walks them, from the start.
            d.tables = PhaseTables::new(n, 0, true)?;
            d.prim_phase(threads)?;
            d.tables.begin_struct_phase(false)?;
            for id in 1..n as u32 {
                d.struct_type(id)?;
            }
            None
        }
    };
    // With the shapes, the reference phase does only the units' types they leave, then the
    // extra records.
    let (listed, from) = match shaped {
        Some(shaped) => {
            d.resolve_fwds_by_shapes(&shaped)?;
            (d.premap_references(shaped, threads)?, d.first_extra())
        }
        None => {
            d.resolve_fwds()?;
            (Vec::new(), 1)
        }
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
    /// libbpf's prim phase, in id order; with `threads`, its primitives split by name into
    /// [`PRIM_PARTS`] parts made on two threads ([`PrimPart`]), whose map entries are then
    /// written in.
    fn prim_phase(&mut self, threads: bool) -> Result<()> {
        // In id order, each once (the conversion writes them so; a record written twice would
        // be listed twice).
        if !self.types.prims.windows(2).all(|w| w[0] < w[1]) {
            self.types.prims.sort_unstable();
            self.types.prims.dedup();
        }
        if !threads {
            for i in 0..self.types.prims.len() {
                self.prim_type(self.types.prims[i])?;
            }
            return Ok(());
        }
        let mut parts: heapless::Vec<PrimPart<'_>, PRIM_PARTS> = heapless::Vec::new();
        for part in 0..PRIM_PARTS {
            let prim_part = PrimPart {
                types: self.types,
                part,
                tables: PhaseTables::new(0, 0, self.tables.enums.is_some())?,
                mapped: Vec::new(),
            };
            if parts.push(prim_part).is_err() {
                return Err(Error::InvalidArgument(
                    "DWARF deduplication: too many parts",
                ));
            }
        }
        shapes::each_part(threads, &mut parts, |part| {
            part.run()?;
            Ok(true)
        })?;
        for part in &parts {
            for &(id, to) in &part.mapped {
                if let Some(entry) = self.tables.map.get_mut(id as usize) {
                    *entry = to;
                }
            }
        }
        Ok(())
    }

    fn resolve(&self, id: u32) -> u32 {
        dedup_table::resolve(&self.tables.map, id)
    }

    /// Write the canonical types in id order, every reference remapped to its new id.
    fn emit(&mut self, writer: &mut BtfWriter) -> Result<()> {
        let new_ids = NewIds::of(&self.tables.map)?;
        // Only the deduplicated types must fit BTF's id space (the records before may not).
        if new_ids.count > crate::btf::MAX_TYPE_ID {
            return Err(Error::Limit {
                what: "BTF type count after deduplicating the DWARF types",
                limit: crate::btf::MAX_TYPE_ID as usize,
            });
        }
        let remap = |d: &Self, id: u32| new_ids.get(d.resolve(id));
        let mut words: Vec<u32> = Vec::new();
        for id in new_ids.canonical() {
            let r = self.record(id);
            let Some(kind) = r.kind else {
                return Err(unwritten(id));
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

/// Parts the prim phase's primitives are split in, by name ([`prim_part`]).
const PRIM_PARTS: usize = 2;

/// Which of the [`PRIM_PARTS`] parts the primitives named `name` fall in.
fn prim_part(name: u32) -> usize {
    (crate::btf::dedup_table::spread(u64::from(name)) % PRIM_PARTS as u64) as usize
}

/// One part of the prim phase: the primitives of its names, deduplicated in id order with
/// candidates and an enum index of its own. Primitives of different names are never equal,
/// nor is an enum (or its forward declaration) compatible with one of another name, so a
/// part finds what the whole phase would; and no later phase looks a primitive up among the
/// candidates. Its map entries are kept, in the order given, for the phase's map.
struct PrimPart<'t> {
    types: &'t Types,
    part: usize,
    /// Its candidates and enum index; no map.
    tables: PhaseTables,
    mapped: Vec<(u32, u32)>,
}

impl PrimPart<'_> {
    /// The part's primitives, in id order.
    fn run(&mut self) -> Result<()> {
        for &id in &self.types.prims {
            if prim_part(self.record(id).name) == self.part {
                self.prim_type(id)?;
            }
        }
        Ok(())
    }
}

impl DedupPhases for PrimPart<'_> {
    fn tables(&self) -> &PhaseTables {
        &self.tables
    }

    fn tables_mut(&mut self) -> &mut PhaseTables {
        &mut self.tables
    }

    // The prim phase changes no record.
    fn set_size_or_type(&mut self, _: u32, _: u32) {}

    fn set_word(&mut self, _: u32, _: usize, _: u32) {}

    fn unwritten(&self, id: u32) -> Error {
        unwritten(id)
    }

    fn prim_map(&mut self, id: u32, to: u32) -> Result<()> {
        fallible::push(&mut self.mapped, (id, to))
    }
}

/// The output's ids: the canonical records (those a deduplication's map maps to themselves)
/// numbered from 1 in id order, as a bit per record and a count per 64 of them (an id per
/// record was 13 MB for a kernel's, written and read once).
struct NewIds {
    /// Bit `i % 64` of word `i / 64`: whether record `i` is canonical (never 0, `void`).
    bits: Vec<u64>,
    /// Per word of `bits`, the canonical records before it.
    before: Vec<u32>,
    count: u32,
}

impl NewIds {
    fn of(map: &[u32]) -> Result<NewIds> {
        let words = map.len().div_ceil(64);
        let (mut bits, mut before) = (Vec::new(), Vec::new());
        bits.try_reserve_exact(words)?;
        before.try_reserve_exact(words)?;
        let mut count = 0u32;
        for (word, chunk) in map.chunks(64).enumerate() {
            let first = (word * 64) as u32;
            let mut w = 0u64;
            for (bit, &to) in chunk.iter().enumerate() {
                w |= u64::from(to == first + bit as u32 && first + bit as u32 != 0) << bit;
            }
            bits.push(w);
            before.push(count);
            count += w.count_ones();
        }
        Ok(NewIds {
            bits,
            before,
            count,
        })
    }

    /// Canonical record `id`'s new id (0 for any other).
    fn get(&self, id: u32) -> u32 {
        let (word, bit) = (id as usize / 64, id % 64);
        match (self.bits.get(word), self.before.get(word)) {
            (Some(&w), Some(&before)) if w >> bit & 1 == 1 => {
                before + (w & ((1u64 << bit) - 1)).count_ones() + 1
            }
            _ => 0,
        }
    }

    /// The canonical records, ascending.
    fn canonical(&self) -> impl Iterator<Item = u32> + '_ {
        self.bits.iter().enumerate().flat_map(|(word, &w)| {
            core::iter::successors((w != 0).then_some(w), |&rest| {
                let next = rest & (rest - 1);
                (next != 0).then_some(next)
            })
            .map(move |rest| (word * 64) as u32 + rest.trailing_zeros())
        })
    }
}

/// [`DedupRecords`] for a type whose records are those of its `types`.
macro_rules! records_of_types {
    ($type:ty) => {
        impl DedupRecords for $type {
            fn record(&self, id: u32) -> Record {
                self.types.record_at(id)
            }

            fn words(&self, id: u32) -> &[u32] {
                self.types.words_at(id)
            }

            fn too_deep(&self) -> Error {
                too_deep()
            }
        }
    };
}

records_of_types!(Dedup<'_>);
records_of_types!(PrimPart<'_>);

/// The error for record `id`, a slot the conversion never wrote.
fn unwritten(id: u32) -> Error {
    Error::BadType {
        id,
        reason: "DWARF conversion left a type unwritten",
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
        unwritten(id)
    }
}

#[cfg(test)]
mod tests {
    use super::{Dedup, NewIds, PhaseTables};
    use crate::btf::Kind;
    use crate::dwarf::{Record, Types};
    use alloc::vec::Vec;

    /// The prim phase split by name on two threads maps every record as the phase in id order
    /// does, on primitives of every kind drawn from few names (equal ints and floats, forward
    /// declarations of structs and unions, enums and 64-bit enums with and without values:
    /// forward declarations that resolve to a later full enum of their name) among other
    /// records.
    #[test]
    fn the_prim_phase_in_parts_maps_as_in_order() {
        for seed in 1..6 {
            let mut next = crate::test_rng::xorshift64(seed);
            let mut types = Types::new().unwrap();
            for _ in 0..4000 {
                let name = (next() % 6) as u32;
                let flag = next() % 3 == 0;
                let (kind, vlen, size, words): (Kind, u16, u32, Vec<u32>) = match next() % 6 {
                    0 => (
                        Kind::Int,
                        0,
                        4,
                        alloc::vec![(next() % 2) as u32 * 0x0100_0020],
                    ),
                    1 => (Kind::Float, 0, 4 << (next() % 2), Vec::new()),
                    2 => (Kind::Fwd, 0, 0, Vec::new()),
                    3 => (Kind::Ptr, 0, (next() % 50) as u32, Vec::new()),
                    4 if next() % 2 == 0 => (Kind::Enum, 0, 4, Vec::new()),
                    4 => {
                        let values = 1 + (next() % 2) as u16;
                        let words = (0..values * 2).map(|_| (next() % 2) as u32).collect();
                        (Kind::Enum, values, 4, words)
                    }
                    _ => (Kind::Enum64, 1, 8, alloc::vec![1, (next() % 2) as u32, 0]),
                };
                types
                    .push(Record::new(name, kind, flag, vlen, size), &words)
                    .unwrap();
            }
            let n = types.records.len();
            let map = |threads: bool, types: &mut Types| {
                let mut d = Dedup {
                    tables: PhaseTables::new(n, 0, true).unwrap(),
                    types,
                };
                d.prim_phase(threads).unwrap();
                d.tables.map
            };
            let in_order = map(false, &mut types);
            assert!(in_order.iter().enumerate().any(|(id, &to)| to < id as u32));
            assert_eq!(map(true, &mut types), in_order, "seed {seed}");
        }
    }

    /// The new ids are the canonical records numbered in order, as counting them one by one
    /// gives them, on maps of lengths around the words' bounds.
    #[test]
    fn new_ids_number_the_canonical_records_in_order() {
        let mut next = crate::test_rng::xorshift64(7);
        for len in [1usize, 2, 63, 64, 65, 127, 128, 129, 1000] {
            let map: Vec<u32> = (0..len as u32)
                .map(|id| if next() % 3 == 0 { id } else { id / 2 })
                .collect();
            let new_ids = NewIds::of(&map).unwrap();
            let mut count = 0;
            let mut canonical = Vec::new();
            for (id, &to) in map.iter().enumerate().skip(1) {
                let expected = if to == id as u32 {
                    count += 1;
                    canonical.push(id as u32);
                    count
                } else {
                    0
                };
                assert_eq!(new_ids.get(id as u32), expected, "len {len}, id {id}");
            }
            assert_eq!(new_ids.get(0), 0);
            assert_eq!(new_ids.count, count);
            assert_eq!(
                new_ids.canonical().collect::<Vec<_>>(),
                canonical,
                "len {len}"
            );
        }
    }
}
