//! What btfgen's two deduplications share of libbpf's `btf__dedup`: the DWARF converter's
//! ([`crate::dwarf`]) and the split of a module's types over its kernel's ([`super::split`]).
//! The hashing and [`Candidates`], canonical types by hash, newest first, as libbpf's hashmap
//! yields them. And [`DedupRecords`], the hashes and
//! comparisons of records (libbpf's `btf_hash_*`, `btf_equal_*`, `btf_compat_*`) over however
//! a deduplication holds them.

use crate::btf::Kind;
use crate::error::{Error, Result};
use alloc::vec::Vec;
use hashbrown::HashTable;

/// How deep the equivalence and reference walks recurse before giving up (libbpf has no
/// limit; the kernel's type graphs stay far below it).
pub(crate) const MAX_DEPTH: usize = 4096;

/// libbpf's `BTF_UNPROCESSED_ID` and `BTF_IN_PROGRESS_ID`, the markers of a dedup's maps (any
/// value below is a type id); `UNPROCESSED` also ends a chain of candidates.
pub(crate) const UNPROCESSED: u32 = u32::MAX;
pub(crate) const IN_PROGRESS: u32 = u32::MAX - 1;

/// libbpf's `hash_combine`, on 64 bits.
pub(crate) fn combine(h: u64, value: u32) -> u64 {
    h.wrapping_mul(31).wrapping_add(u64::from(value))
}

/// Whether `a` and `b` hold the same words, compared word by word: a slice's `==` calls the
/// C library's `memcmp`, which musl (`make cli`'s static build) runs a byte at a time, a
/// loop that was 3% of a kernel's `encode` (2.5 million shapes compared in the struct phase).
pub(crate) fn same_words(a: &[u32], b: &[u32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// Spread a combined hash over all bits (the table looks at the top ones too).
pub(crate) fn spread(h: u64) -> u64 {
    let h = (h ^ (h >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

/// A position among the candidates of one hash ([`Candidates::first`]): a slot, or past the
/// last ([`UNPROCESSED`], or any slot [`Candidates::id`] has no type for).
pub(crate) type Cursor = u32;

/// Canonical types by hash, newest first (as libbpf's hashmap yields them), each in a slot of
/// its own: only the types added take room, not every id (a kernel's DWARF has 3.3 million
/// records, 0.1 million of them canonical).
#[derive(Debug, Default)]
pub(crate) struct Candidates {
    /// Hash → the newest slot with it.
    table: HashTable<(u64, u32)>,
    /// The type in each slot.
    ids: Vec<u32>,
    /// Per slot, the slot added before it with the same hash ([`UNPROCESSED`]: none).
    chain: Vec<u32>,
}

impl Candidates {
    /// Add type `id` with hash `h`, as the newest of its hash.
    pub(crate) fn add(&mut self, h: u64, id: u32) -> Result<()> {
        let slot = u32::try_from(self.ids.len()).map_err(|_| Error::OutOfMemory)?;
        // Room first: a failed allocation leaves the candidates as they were.
        self.table.try_reserve(1, |&(hash, _)| spread(hash))?;
        self.ids.try_reserve(1)?;
        self.chain.try_reserve(1)?;
        let before = match self.table.find_mut(spread(h), |&(hash, _)| hash == h) {
            Some(entry) => core::mem::replace(&mut entry.1, slot),
            None => {
                self.table
                    .insert_unique(spread(h), (h, slot), |&(hash, _)| spread(hash));
                UNPROCESSED
            }
        };
        self.ids.push(id);
        self.chain.push(before);
        Ok(())
    }

    /// The newest slot with hash `h`.
    pub(crate) fn first(&self, h: u64) -> Cursor {
        self.table
            .find(spread(h), |&(hash, _)| hash == h)
            .map_or(UNPROCESSED, |&(_, slot)| slot)
    }

    /// The slot before `at` with the same hash.
    pub(crate) fn next(&self, at: Cursor) -> Cursor {
        self.chain.get(at as usize).copied().unwrap_or(UNPROCESSED)
    }

    /// The type at `at`, if there is one.
    pub(crate) fn id(&self, at: Cursor) -> Option<u32> {
        self.ids.get(at as usize).copied()
    }

    /// The types with hash `h`, newest first.
    fn newest(&self, h: u64) -> impl Iterator<Item = u32> + '_ {
        let mut at = self.first(h);
        core::iter::from_fn(move || {
            let id = self.id(at)?;
            at = self.next(at);
            Some(id)
        })
    }
}

/// Add `name` → `id` to a name table (a forward declaration's resolution: name → the one
/// canonical struct or union of that name), or mark the name as had by several (0).
pub(crate) fn name_table_add(table: &mut HashTable<(u32, u32)>, name: u32, id: u32) -> Result<()> {
    let hash = |n: u32| spread(u64::from(n));
    table.try_reserve(1, |&(n, _)| hash(n))?;
    match table.find_mut(hash(name), |&(n, _)| n == name) {
        Some(entry) => entry.1 = 0,
        None => {
            table.insert_unique(hash(name), (name, id), |&(n, _)| hash(n));
        }
    }
    Ok(())
}

/// What [`name_table_add`] holds for `name` (0: several), if anything.
pub(crate) fn name_table_get(table: &HashTable<(u32, u32)>, name: u32) -> Option<u32> {
    table
        .find(spread(u64::from(name)), |&(n, _)| n == name)
        .map(|&(_, id)| id)
}

/// The kinds libbpf's prim phase deduplicates ([`DedupPhases::prim_type`]): INT, FLOAT,
/// FWD, ENUM and ENUM64.
pub(crate) fn is_primitive_kind(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Int | Kind::Float | Kind::Fwd | Kind::Enum | Kind::Enum64
    )
}

/// The kinds libbpf's reference phase deduplicates (`btf_dedup_ref_type`): modifiers,
/// typedefs, pointers, functions, tags, arrays and prototypes.
pub(crate) fn is_reference_kind(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Const
            | Kind::Volatile
            | Kind::Restrict
            | Kind::Ptr
            | Kind::Typedef
            | Kind::Func
            | Kind::TypeTag
            | Kind::DeclTag
            | Kind::Array
            | Kind::FuncProto
    )
}

/// Whether the reference phase hashes and compares the kind-specific words of a reference
/// type of `kind` (a tag's component, an array's types and size, a prototype's parameters),
/// not only its common fields.
fn compares_words(kind: Kind) -> bool {
    matches!(kind, Kind::DeclTag | Kind::Array | Kind::FuncProto)
}

/// Whether `map` (a dedup's type → canonical type map) has processed `id` (not a marker).
pub(crate) fn is_mapped(map: &[u32], id: u32) -> bool {
    map.get(id as usize).is_some_and(|&m| is_mapped_to(m))
}

/// Whether a map entry names a type (is no marker).
#[inline]
pub(crate) fn is_mapped_to(entry: u32) -> bool {
    entry < IN_PROGRESS
}

/// The canonical type `id` maps to through `map`'s chain.
pub(crate) fn resolve(map: &[u32], mut id: u32) -> u32 {
    // The chains are acyclic by construction; the bound keeps a bug from hanging.
    for _ in 0..=map.len() {
        // One load a hop: the equivalence walk resolves two ids at every step.
        match map.get(id as usize) {
            Some(&next) if is_mapped_to(next) && next != id => id = next,
            _ => return id,
        }
    }
    id
}

/// One type as a deduplication holds it: its BTF record's header fields (the name as a key
/// that is equal exactly for equal names) and where its kind-specific words start in the
/// arena of words beside the records.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Record {
    pub(crate) name: u32,
    /// `None`: `void` (id 0), or a slot not written yet.
    pub(crate) kind: Option<Kind>,
    pub(crate) kind_flag: bool,
    pub(crate) vlen: u16,
    pub(crate) size_or_type: u32,
    pub(crate) first_word: u32,
}

impl Record {
    /// `void`, and an unwritten slot.
    pub(crate) const VOID: Record = Record {
        name: 0,
        kind: None,
        kind_flag: false,
        vlen: 0,
        size_or_type: 0,
        first_word: 0,
    };

    /// The record's info word: kind_flag, kind, vlen.
    pub(crate) fn info(&self) -> u32 {
        (u32::from(self.kind_flag) << 31)
            | (self.kind.map_or(0, |k| k as u32) << 24)
            | u32::from(self.vlen)
    }

    /// Whether the info words of `self` and `other` are equal, compared field by field (the
    /// equivalence walk's comparisons; building both words cost more than the rest of them).
    pub(crate) fn same_info(&self, other: &Record) -> bool {
        self.kind == other.kind && self.kind_flag == other.kind_flag && self.vlen == other.vlen
    }

    /// How many 32-bit words follow the header.
    pub(crate) fn word_count(&self) -> usize {
        self.kind.map_or(0, |k| k.extra_len(self.vlen) / 4)
    }

    /// Its kind-specific words in `arena` (none if they are not all there).
    pub(crate) fn words<'w>(&self, arena: &'w [u32]) -> &'w [u32] {
        let start = self.first_word as usize;
        arena.get(start..start + self.word_count()).unwrap_or(&[])
    }
}

/// The records a deduplication reads, by id; the comparisons are libbpf's, the same for both.
pub(crate) trait DedupRecords {
    /// The record of type `id` (`void`'s, all zero, for an id out of range).
    fn record(&self, id: u32) -> Record;
    /// The kind-specific words of type `id`.
    fn words(&self, id: u32) -> &[u32];
    /// The error of a walk deeper than [`MAX_DEPTH`].
    fn too_deep(&self) -> Error;

    fn kind(&self, id: u32) -> Option<Kind> {
        self.record(id).kind
    }

    fn hash_common(&self, id: u32) -> u64 {
        let r = self.record(id);
        combine(combine(combine(0, r.name), r.info()), r.size_or_type)
    }

    fn equal_common(&self, a: u32, b: u32) -> bool {
        let (a, b) = (self.record(a), self.record(b));
        a.name == b.name && a.same_info(&b) && a.size_or_type == b.size_or_type
    }

    /// Common fields and every kind-specific word equal (INT, DECL_TAG, ARRAY, FUNC_PROTO and
    /// enums once their references are canonical).
    fn equal_all(&self, a: u32, b: u32) -> bool {
        self.equal_common(a, b) && same_words(self.words(a), self.words(b))
    }

    fn hash_all(&self, id: u32) -> u64 {
        self.words(id)
            .iter()
            .fold(self.hash_common(id), |h, &w| combine(h, w))
    }

    /// The reference phase's hash of reference type `id` of `kind`, its references made
    /// canonical.
    fn reference_hash(&self, id: u32, kind: Kind) -> u64 {
        if compares_words(kind) {
            self.hash_all(id)
        } else {
            self.hash_common(id)
        }
    }

    /// The reference phase's equality of reference types `a` and `b` of `kind`.
    fn reference_equal(&self, a: u32, b: u32, kind: Kind) -> bool {
        if compares_words(kind) {
            self.equal_all(a, b)
        } else {
            self.equal_common(a, b)
        }
    }

    fn is_enum(&self, id: u32) -> bool {
        matches!(self.kind(id), Some(Kind::Enum | Kind::Enum64))
    }

    fn is_enum_fwd(&self, id: u32) -> bool {
        self.is_enum(id) && self.record(id).vlen == 0
    }

    fn compat_enum(&self, a: u32, b: u32) -> bool {
        if !self.is_enum_fwd(a) && !self.is_enum_fwd(b) {
            return self.equal_all(a, b);
        }
        self.record(a).name == self.record(b).name && self.is_enum(a) && self.is_enum(b)
    }

    /// Name and offset of every member (not their types).
    fn hash_struct(&self, id: u32) -> u64 {
        self.words(id)
            .chunks_exact(3)
            .fold(self.hash_common(id), |h, m| combine(combine(h, m[0]), m[2]))
    }

    fn shallow_equal_struct(&self, a: u32, b: u32) -> bool {
        self.equal_common(a, b)
            && self
                .words(a)
                .chunks_exact(3)
                .zip(self.words(b).chunks_exact(3))
                .all(|(x, y)| x[0] == y[0] && x[2] == y[2])
    }

    fn compat_fnproto(&self, a: u32, b: u32) -> bool {
        let (ra, rb) = (self.record(a), self.record(b));
        ra.name == rb.name
            && ra.same_info(&rb)
            && self
                .words(a)
                .chunks_exact(2)
                .zip(self.words(b).chunks_exact(2))
                .all(|(x, y)| x[0] == y[0])
    }

    /// A FWD `id` resolved through `map` to the struct or union it stands for, if it was;
    /// any other type as it is.
    fn resolve_fwd(&self, map: &[u32], id: u32) -> u32 {
        if self.kind(id) != Some(Kind::Fwd) {
            return id;
        }
        let resolved = resolve(map, id);
        if self.kind(resolved) != Some(Kind::Fwd) {
            resolved
        } else {
            id
        }
    }

    fn identical_arrays(&self, a: u32, b: u32) -> bool {
        self.kind(a) == Some(Kind::Array)
            && self.kind(b) == Some(Kind::Array)
            && self.equal_all(a, b)
    }

    /// libbpf's `btf_dedup_identical_structs`: the same struct, member types identical
    /// arrays or structs where they are not the same id.
    fn identical_structs(&self, a: u32, b: u32, depth: usize) -> Result<bool> {
        if depth > MAX_DEPTH {
            return Err(self.too_deep());
        }
        if !matches!(self.kind(a), Some(Kind::Struct | Kind::Union))
            || self.kind(a) != self.kind(b)
            || !self.shallow_equal_struct(a, b)
        {
            return Ok(false);
        }
        for (x, y) in self
            .words(a)
            .chunks_exact(3)
            .zip(self.words(b).chunks_exact(3))
        {
            if x[1] != y[1]
                && !self.identical_arrays(x[1], y[1])
                && !self.identical_structs(x[1], y[1], depth + 1)?
            {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// The struct phase's hypothetical map: libbpf's `hypot_map`, `hypot_list` and
/// `hypot_adjust_canon`.
#[derive(Debug, Default)]
pub(crate) struct Hypot {
    /// Canonical id → the candidate id assumed equivalent to it.
    assumed: Assumed,
    /// The canonical ids set in `assumed`, to clear them.
    list: Vec<u32>,
    /// The equivalence went through a base FWD that a module struct would resolve, so the
    /// candidate is not taken.
    adjust_canon: bool,
}

/// Where [`Hypot`] keeps its pairs.
#[derive(Debug)]
enum Assumed {
    /// One entry per id ([`UNPROCESSED`]: none).
    Every(Vec<u32>),
    /// Only the ids set: for a phase that walks few structs.
    Set(hashbrown::HashMap<u32, u32>),
}

impl Default for Assumed {
    fn default() -> Self {
        Assumed::Every(Vec::new())
    }
}

impl Hypot {
    /// An empty map over `len` ids (a table of the ids set if `sparse`).
    fn new(len: usize, sparse: bool) -> Result<Hypot> {
        let assumed = if sparse {
            Assumed::Set(hashbrown::HashMap::new())
        } else {
            let mut map = crate::fallible::vec_with_capacity(len)?;
            map.resize(len, UNPROCESSED);
            Assumed::Every(map)
        };
        Ok(Hypot {
            assumed,
            list: Vec::new(),
            adjust_canon: false,
        })
    }

    /// The candidate assumed equivalent to `canon`, or [`UNPROCESSED`].
    fn get(&self, canon: u32) -> u32 {
        match &self.assumed {
            Assumed::Every(map) => map.get(canon as usize).copied(),
            Assumed::Set(table) => table.get(&canon).copied(),
        }
        .unwrap_or(UNPROCESSED)
    }

    /// Assume `cand` equivalent to `canon`.
    fn set(&mut self, canon: u32, cand: u32) -> Result<()> {
        self.list.try_reserve(1)?;
        match &mut self.assumed {
            Assumed::Every(map) => {
                if let Some(entry) = map.get_mut(canon as usize) {
                    *entry = cand;
                }
            }
            Assumed::Set(table) => {
                table.try_reserve(1)?;
                table.insert(canon, cand);
            }
        }
        self.list.push(canon);
        Ok(())
    }

    fn clear(&mut self) {
        match &mut self.assumed {
            Assumed::Every(map) => {
                for &id in &self.list {
                    map[id as usize] = UNPROCESSED;
                }
            }
            Assumed::Set(table) => table.clear(),
        }
        self.list.clear();
        self.adjust_canon = false;
    }
}

/// A second view of the canonical enums for [`DedupPhases::prim_type`], for a deduplication
/// that has many (the DWARF converter's: a kernel's units repeat thousands of anonymous enums).
/// libbpf hashes an enum by its name alone, so each full enum was compared with every canonical
/// enum of its name, newest first, up to the first equal one, marking on the way the canonical
/// enum forward declarations of the name to resolve to it. This finds the same: the newest
/// equal one by a hash of all of its record, and those declarations by name. Canonical types
/// are added in id order, so "newer than" is "a larger id than".
#[derive(Debug, Default)]
pub(crate) struct EnumIndex {
    /// The full canonical enums by [`DedupRecords::hash_all`].
    full: Candidates,
    /// The canonical enum forward declarations by name.
    fwds: Candidates,
}

/// The tables libbpf's dedup phases keep: every [`DedupPhases`] implementor embeds one set
/// and reaches it through [`DedupPhases::tables`].
#[derive(Debug, Default)]
pub(crate) struct PhaseTables {
    /// Ids below this are a base's (0 without one): canonical already, never changed.
    pub(crate) base_len: u32,
    /// Each type's canonical type (a chain [`resolve`] follows), or a marker.
    pub(crate) map: Vec<u32>,
    /// The struct phase's hypothetical map.
    pub(crate) hypot: Hypot,
    /// The canonical types by hash (a split's own; its base's are its base's).
    pub(crate) candidates: Candidates,
    /// The canonical enums by content and forward declarations by name, for a
    /// deduplication that keeps an [`EnumIndex`] (without, full enums walk their name's
    /// candidates as libbpf does).
    pub(crate) enums: Option<EnumIndex>,
}

impl PhaseTables {
    /// The tables for `len` types, of which the first `base_len` (a split BTF's base) are
    /// canonical already, and `void` (id 0) in any case; with an [`EnumIndex`] if `enums`.
    /// The struct phase's hypothetical map is allocated by
    /// [`PhaseTables::begin_struct_phase`].
    pub(crate) fn new(len: usize, base_len: u32, enums: bool) -> Result<PhaseTables> {
        let mut map = crate::fallible::vec_with_capacity(len)?;
        map.extend(0..base_len.max(1).min(len as u32));
        map.resize(len, UNPROCESSED);
        Ok(PhaseTables {
            base_len,
            map,
            hypot: Hypot::default(),
            candidates: Candidates::default(),
            enums: enums.then(EnumIndex::default),
        })
    }

    /// The struct phase's hypothetical map, one entry per type (or, if `sparse`, a table of
    /// the types it assumes, for a phase that walks few structs): allocated only when the
    /// phase begins, so that what a deduplication needs before it is gone by then.
    pub(crate) fn begin_struct_phase(&mut self, sparse: bool) -> Result<()> {
        self.hypot = Hypot::new(self.map.len(), sparse)?;
        Ok(())
    }
}

/// libbpf's dedup phases for primitive types and structs, over a deduplication's records and
/// [`PhaseTables`]: the DWARF converter's (one BTF) and a module's split over its kernel's
/// (whose base types are canonical already and never change).
pub(crate) trait DedupPhases: DedupRecords + Sized {
    /// The phases' tables.
    fn tables(&self) -> &PhaseTables;
    /// [`DedupPhases::tables`], to change.
    fn tables_mut(&mut self) -> &mut PhaseTables;
    /// Set the `size_or_type` of type `id` (the reference phase makes it canonical).
    fn set_size_or_type(&mut self, id: u32, value: u32);
    /// Set kind-specific word `index` of type `id`, which [`DedupRecords::words`] has.
    fn set_word(&mut self, id: u32, index: usize, value: u32);
    /// The error for type `id`, which has no kind: a slot never written.
    fn unwritten(&self, id: u32) -> Error;

    /// The prim phase's mapping of type `id` to `to`, in the phases' map (a part of the phase
    /// run apart from the map records it instead).
    fn prim_map(&mut self, id: u32, to: u32) -> Result<()> {
        self.tables_mut().map[id as usize] = to;
        Ok(())
    }

    /// Where the candidates with hash `h` start, newest first.
    fn first_candidate(&self, h: u64) -> Cursor {
        self.tables().candidates.first(h)
    }

    /// The candidate after the one at `at`, whose hash is `h`.
    fn next_candidate(&self, at: Cursor, _h: u64) -> Cursor {
        self.tables().candidates.next(at)
    }

    /// The type at `at`, if it is a candidate and not past the last.
    fn candidate(&self, at: Cursor) -> Option<u32> {
        self.tables().candidates.id(at)
    }

    /// Add canonical type `id` with hash `h` to the candidates.
    fn add_candidate(&mut self, h: u64, id: u32) -> Result<()> {
        self.tables_mut().candidates.add(h, id)
    }

    /// The first candidate with hash `h` for which `equal` holds.
    fn find_candidate(&self, h: u64, equal: impl Fn(&Self, u32) -> bool) -> Option<u32> {
        let mut at = self.first_candidate(h);
        while let Some(c) = self.candidate(at) {
            if equal(self, c) {
                return Some(c);
            }
            at = self.next_candidate(at, h);
        }
        None
    }

    /// libbpf's `btf_dedup_prim_type`: INT, ENUM, FWD and FLOAT `id` to an equal canonical
    /// type, or canonical itself.
    fn prim_type(&mut self, id: u32) -> Result<()> {
        let mut new_id = id;
        let h = match self.kind(id) {
            Some(Kind::Int) => {
                let h = self.hash_all(id);
                if let Some(c) = self.find_candidate(h, |d, c| d.equal_all(id, c)) {
                    new_id = c;
                }
                h
            }
            Some(Kind::Enum | Kind::Enum64)
                if !self.is_enum_fwd(id) && self.tables().enums.is_some() =>
            {
                let name = self.record(id).name;
                new_id = self.indexed_enum(id, name)?;
                combine(0, name)
            }
            Some(Kind::Enum | Kind::Enum64) => {
                let h = combine(0, self.record(id).name);
                let mut resolve_canon = Vec::new();
                let mut at = self.first_candidate(h);
                while let Some(c) = self.candidate(at) {
                    if self.equal_all(id, c) {
                        new_id = c;
                        break;
                    }
                    if self.compat_enum(id, c) {
                        if self.is_enum_fwd(id) {
                            new_id = c;
                            break;
                        }
                        // A canonical enum forward resolves to this full enum.
                        crate::fallible::push(&mut resolve_canon, c)?;
                    }
                    at = self.next_candidate(at, h);
                }
                for c in resolve_canon {
                    self.prim_map(c, id)?;
                }
                h
            }
            Some(Kind::Fwd | Kind::Float) => {
                let h = self.hash_common(id);
                if let Some(c) = self.find_candidate(h, |d, c| d.equal_common(id, c)) {
                    new_id = c;
                }
                h
            }
            _ => return Ok(()),
        };
        self.prim_map(id, new_id)?;
        if new_id == id {
            self.add_candidate(h, id)?;
            if self.tables().enums.is_some() && self.is_enum(id) {
                let fwd = self.is_enum_fwd(id);
                let (hash, name) = (self.hash_all(id), self.record(id).name);
                if let Some(index) = self.tables_mut().enums.as_mut() {
                    if fwd {
                        index.fwds.add(u64::from(name), id)?;
                    } else {
                        index.full.add(hash, id)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// [`DedupPhases::prim_type`] of full enum `id` (named `name`) through the [`EnumIndex`]:
    /// the newest canonical enum equal to it (or `id` itself), the canonical enum forward
    /// declarations of its name newer than that resolved to `id`, as libbpf's walk of the
    /// name's candidates resolves them.
    fn indexed_enum(&mut self, id: u32, name: u32) -> Result<u32> {
        let Some(index) = self.tables().enums.as_ref() else {
            return Ok(id);
        };
        let winner = index
            .full
            .newest(self.hash_all(id))
            .find(|&c| self.equal_all(id, c));
        let newer_than = winner.unwrap_or(0);
        let mut resolve_canon = Vec::new();
        for c in index
            .fwds
            .newest(u64::from(name))
            .take_while(|&c| c > newer_than)
        {
            crate::fallible::push(&mut resolve_canon, c)?;
        }
        for c in resolve_canon {
            self.prim_map(c, id)?;
        }
        Ok(winner.unwrap_or(id))
    }

    /// libbpf's `btf_dedup_is_equiv`: whether the type graph at `cand` is equivalent to the
    /// one at canonical `canon`, recording the pairs assumed on the way.
    ///
    /// The two tests that end most visits (a kernel's: 19 of 28.5 million), both sides the
    /// same type already or `canon` assumed already, are made inline in the caller; the rest
    /// of the walk is [`DedupPhases::equiv_walk`].
    #[inline(always)]
    fn is_equiv(&mut self, cand: u32, canon: u32, depth: usize) -> Result<bool> {
        if depth > MAX_DEPTH {
            return Err(self.too_deep());
        }
        if resolve(&self.tables().map, cand) == resolve(&self.tables().map, canon) {
            return Ok(true);
        }
        let canon = self.resolve_fwd(&self.tables().map, canon);
        let hypot = self.tables().hypot.get(canon);
        if hypot != UNPROCESSED {
            return Ok(hypot == cand
                || self.identical_arrays(hypot, cand)
                || self.identical_structs(hypot, cand, depth + 1)?);
        }
        self.equiv_walk(cand, canon, depth)
    }

    /// [`DedupPhases::is_equiv`] of a pair neither of its first tests ended: `canon` (a FWD
    /// resolved) assumed equivalent to `cand`, then their records compared and their
    /// references walked.
    #[inline(never)]
    fn equiv_walk(&mut self, cand: u32, canon: u32, depth: usize) -> Result<bool> {
        self.tables_mut().hypot.set(canon, cand)?;
        let (c, k) = (self.record(cand), self.record(canon));
        if c.name != k.name {
            return Ok(false);
        }
        let fwd = Some(Kind::Fwd);
        if (c.kind == fwd || k.kind == fwd) && c.kind != k.kind {
            let fwd_kind = |r: &Record| {
                if r.kind_flag {
                    Kind::Union
                } else {
                    Kind::Struct
                }
            };
            let (real, fwd_kind) = if c.kind == fwd {
                (k.kind, fwd_kind(&c))
            } else {
                let fwd_kind = fwd_kind(&k);
                // A base FWD the module's struct would resolve: not an equivalence.
                if c.kind == Some(fwd_kind) && canon < self.tables().base_len {
                    self.tables_mut().hypot.adjust_canon = true;
                }
                (c.kind, fwd_kind)
            };
            return Ok(real == Some(fwd_kind));
        }
        if c.kind != k.kind {
            return Ok(false);
        }
        let Some(kind) = c.kind else {
            return Ok(true);
        };
        match kind {
            Kind::Int => Ok(self.equal_all(cand, canon)),
            Kind::Enum | Kind::Enum64 => Ok(self.compat_enum(cand, canon)),
            Kind::Fwd | Kind::Float => Ok(self.equal_common(cand, canon)),
            Kind::Const
            | Kind::Volatile
            | Kind::Restrict
            | Kind::Ptr
            | Kind::Typedef
            | Kind::Func
            | Kind::TypeTag => {
                if !c.same_info(&k) {
                    return Ok(false);
                }
                self.is_equiv(c.size_or_type, k.size_or_type, depth + 1)
            }
            Kind::Array => {
                let (cw, kw) = (self.words(cand), self.words(canon));
                if !self.equal_common(cand, canon) || cw.get(2) != kw.get(2) || cw.len() < 2 {
                    return Ok(false);
                }
                let (ce, ci, ke, ki) = (cw[0], cw[1], kw[0], kw[1]);
                if !self.is_equiv(ci, ki, depth + 1)? {
                    return Ok(false);
                }
                self.is_equiv(ce, ke, depth + 1)
            }
            Kind::Struct | Kind::Union => {
                if !self.shallow_equal_struct(cand, canon) {
                    return Ok(false);
                }
                self.equiv_members(cand, canon, c.vlen, 3, depth)
            }
            Kind::FuncProto => {
                if !self.compat_fnproto(cand, canon)
                    || !self.is_equiv(c.size_or_type, k.size_or_type, depth + 1)?
                {
                    return Ok(false);
                }
                self.equiv_members(cand, canon, c.vlen, 2, depth)
            }
            Kind::Var | Kind::Datasec | Kind::DeclTag => Err(Error::BadType {
                id: cand,
                reason: "a struct refers to a variable, section or tag",
            }),
        }
    }

    /// [`DedupPhases::is_equiv`] of the `vlen` members' (or parameters') types of `cand` and
    /// `canon`, each entry `stride` words with its type second.
    fn equiv_members(
        &mut self,
        cand: u32,
        canon: u32,
        vlen: u16,
        stride: usize,
        depth: usize,
    ) -> Result<bool> {
        // The type pairs are read a batch at a time: the walks below need `self` mutably, and
        // looking both records up again for every member was most of this loop's cost.
        const BATCH: usize = 16;
        let vlen = usize::from(vlen);
        let mut done = 0;
        while done < vlen {
            let mut pairs = [(0u32, 0u32); BATCH];
            let count = BATCH.min(vlen - done);
            let (cw, kw) = (self.words(cand), self.words(canon));
            for (k, pair) in pairs[..count].iter_mut().enumerate() {
                let at = stride * (done + k) + 1;
                let (Some(&ct), Some(&kt)) = (cw.get(at), kw.get(at)) else {
                    return Ok(false);
                };
                *pair = (ct, kt);
            }
            for &(ct, kt) in &pairs[..count] {
                if !self.is_equiv(ct, kt, depth + 1)? {
                    return Ok(false);
                }
            }
            done += count;
        }
        Ok(true)
    }

    /// libbpf's `btf_dedup_merge_hypot_map`: the pairs an equivalence assumed, made canonical.
    fn merge_hypot(&mut self) {
        let fwd = Some(Kind::Fwd);
        for i in 0..self.tables().hypot.list.len() {
            let canon = self.tables().hypot.list[i];
            let target = self.tables().hypot.get(canon);
            let (t, c) = (
                resolve(&self.tables().map, target),
                resolve(&self.tables().map, canon),
            );
            let (tk, ck) = (self.kind(t), self.kind(c));
            if tk != fwd && ck == fwd {
                self.tables_mut().map[c as usize] = t;
            }
            if self.tables().hypot.adjust_canon {
                continue;
            }
            if tk == fwd && ck != fwd {
                self.tables_mut().map[t as usize] = c;
            }
            if matches!(tk, Some(Kind::Struct | Kind::Union))
                && ck != fwd
                && is_mapped(&self.tables().map, c)
                && !is_mapped(&self.tables().map, t)
            {
                self.tables_mut().map[t as usize] = c;
            }
        }
    }

    /// libbpf's `btf_dedup_struct_type`: struct or union `id` to the first candidate whose
    /// type graph is equivalent, or canonical itself.
    fn struct_type(&mut self, id: u32) -> Result<()> {
        if is_mapped(&self.tables().map, id)
            || !matches!(self.kind(id), Some(Kind::Struct | Kind::Union))
        {
            return Ok(());
        }
        let h = self.hash_struct(id);
        let mut new_id = id;
        let mut at = self.first_candidate(h);
        while let Some(cand) = self.candidate(at) {
            at = self.next_candidate(at, h);
            if !self.shallow_equal_struct(id, cand) {
                continue;
            }
            self.tables_mut().hypot.clear();
            if !self.is_equiv(id, cand, 0)? {
                continue;
            }
            self.merge_hypot();
            if self.tables().hypot.adjust_canon {
                continue;
            }
            new_id = cand;
            break;
        }
        self.tables_mut().map[id as usize] = new_id;
        if new_id == id {
            self.add_candidate(h, id)?;
        }
        Ok(())
    }

    /// The base's one canonical struct or union named `name` (0: several), for a
    /// deduplication over a base (a module's split); none without one.
    fn base_composite(&self, _name: u32) -> Option<u32> {
        None
    }

    /// libbpf's `btf_dedup_resolve_fwds`: a canonical FWD of this deduplication's own names
    /// the one canonical struct or union of its name and kind, among its own types and the
    /// base's, when there is exactly one.
    fn resolve_fwds(&mut self) -> Result<()> {
        let (start, end) = (
            self.tables().base_len.max(1),
            self.tables().map.len() as u32,
        );
        self.resolve_fwds_among(start..end, start..end)
    }

    /// [`DedupPhases::resolve_fwds`] where every canonical struct and union is among
    /// `composites` and every canonical FWD among `fwds` (each ascending; others in them are
    /// passed over).
    fn resolve_fwds_among(
        &mut self,
        composites: impl Iterator<Item = u32>,
        fwds: impl Iterator<Item = u32>,
    ) -> Result<()> {
        // Name → the canonical composite of that name, 0 when there are several.
        let mut names: HashTable<(u32, u32)> = HashTable::new();
        for id in composites {
            if matches!(self.kind(id), Some(Kind::Struct | Kind::Union))
                && self.tables().map[id as usize] == id
            {
                name_table_add(&mut names, self.record(id).name, id)?;
            }
        }
        for id in fwds {
            let r = self.record(id);
            if r.kind != Some(Kind::Fwd) || self.tables().map[id as usize] != id {
                continue;
            }
            let cand = match (self.base_composite(r.name), name_table_get(&names, r.name)) {
                (Some(c), None) | (None, Some(c)) => c,
                _ => continue,
            };
            let wanted = if r.kind_flag {
                Kind::Union
            } else {
                Kind::Struct
            };
            if cand != 0 && self.kind(cand) == Some(wanted) {
                self.tables_mut().map[id as usize] = cand;
            }
        }
        Ok(())
    }

    /// libbpf's `btf_dedup_ref_type`: the canonical id of reference type `id`, its own
    /// references made canonical first.
    fn ref_type(&mut self, id: u32, depth: usize) -> Result<u32> {
        if depth > MAX_DEPTH {
            return Err(self.too_deep());
        }
        match self.tables().map.get(id as usize) {
            None => return Err(Error::NoSuchType(id)),
            Some(&IN_PROGRESS) => {
                return Err(Error::BadType {
                    id,
                    reason: "a reference cycle that passes through no struct or union",
                });
            }
            Some(_) if is_mapped(&self.tables().map, id) => {
                return Ok(resolve(&self.tables().map, id));
            }
            Some(_) => {}
        }
        self.tables_mut().map[id as usize] = IN_PROGRESS;
        let r = self.record(id);
        let Some(kind) = r.kind else {
            return Err(self.unwritten(id));
        };
        // Word `index` of `id` made canonical.
        let canonical_word = |d: &mut Self, index: usize| -> Result<()> {
            let Some(&word) = d.words(id).get(index) else {
                return Err(Error::NoSuchType(id));
            };
            let target = d.ref_type(word, depth + 1)?;
            d.set_word(id, index, target);
            Ok(())
        };
        if !is_reference_kind(kind) {
            return Err(Error::BadType {
                id,
                reason: "a type no dedup phase handles",
            });
        }
        match kind {
            Kind::Array => {
                canonical_word(self, 0)?;
                canonical_word(self, 1)?;
            }
            Kind::FuncProto => {
                let ret = self.ref_type(r.size_or_type, depth + 1)?;
                self.set_size_or_type(id, ret);
                for i in 0..usize::from(r.vlen) {
                    canonical_word(self, 2 * i + 1)?;
                }
            }
            // Modifiers, typedefs, pointers, functions and tags: one target each.
            _ => {
                let target = self.ref_type(r.size_or_type, depth + 1)?;
                self.set_size_or_type(id, target);
            }
        }
        let h = self.reference_hash(id, kind);
        let new_id = self
            .find_candidate(h, |d, c| d.reference_equal(id, c, kind))
            .unwrap_or(id);
        self.tables_mut().map[id as usize] = new_id;
        if new_id == id {
            self.add_candidate(h, id)?;
        }
        Ok(new_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::xorshift64;
    use alloc::vec;

    /// The prim phase over enum records, with or without an [`EnumIndex`]: the walk of each
    /// name's candidates (libbpf's) is the reference the index must agree with.
    struct Enums {
        records: Vec<Record>,
        words: Vec<u32>,
        tables: PhaseTables,
    }

    impl DedupRecords for Enums {
        fn record(&self, id: u32) -> Record {
            self.records
                .get(id as usize)
                .copied()
                .unwrap_or(Record::VOID)
        }

        fn words(&self, id: u32) -> &[u32] {
            self.records
                .get(id as usize)
                .map_or(&[], |r| r.words(&self.words))
        }

        fn too_deep(&self) -> Error {
            Error::Limit {
                what: "test walk depth",
                limit: MAX_DEPTH,
            }
        }
    }

    impl DedupPhases for Enums {
        fn tables(&self) -> &PhaseTables {
            &self.tables
        }

        fn tables_mut(&mut self) -> &mut PhaseTables {
            &mut self.tables
        }

        fn set_size_or_type(&mut self, _: u32, _: u32) {}

        fn set_word(&mut self, _: u32, _: usize, _: u32) {}

        fn unwritten(&self, id: u32) -> Error {
            Error::NoSuchType(id)
        }
    }

    /// `count` enum records drawn from few names, sizes and values (so that many are equal, and
    /// a fifth are forward declarations), each deduplicated by the prim phase; the map.
    fn prim_phase(seed: u64, count: usize, indexed: bool) -> Vec<u32> {
        let mut next = xorshift64(seed);
        let mut records = vec![Record::VOID];
        let mut words = Vec::new();
        for _ in 0..count {
            let enum64 = next() % 5 == 0;
            let vlen = if next() % 5 == 0 { 0 } else { 1 + next() % 2 } as u16;
            let kind = if enum64 { Kind::Enum64 } else { Kind::Enum };
            let first_word = words.len() as u32;
            for _ in 0..vlen {
                words.push(10 + (next() % 2) as u32);
                words.push((next() % 2) as u32);
                if enum64 {
                    words.push(0);
                }
            }
            records.push(Record {
                name: (next() % 4) as u32,
                kind: Some(kind),
                kind_flag: next() % 4 == 0,
                vlen,
                size_or_type: if enum64 { 8 } else { 4 },
                first_word,
            });
        }
        let n = records.len();
        let mut d = Enums {
            records,
            words,
            tables: PhaseTables::new(n, 0, indexed).unwrap(),
        };
        for id in 1..n as u32 {
            d.prim_type(id).unwrap();
        }
        d.tables.map
    }

    /// Candidates come back newest first under their own hash only, however the hashes
    /// interleave (libbpf's hashmap order, which decides the canonical type of a tie).
    #[test]
    fn candidates_come_newest_first_by_hash() {
        let mut next = xorshift64(11);
        let mut candidates = Candidates::default();
        let mut added: Vec<(u64, u32)> = Vec::new();
        for id in 0..3000 {
            let h = next() % 97;
            candidates.add(h, id).unwrap();
            added.push((h, id));
        }
        for h in 0..100 {
            let expected: Vec<u32> = added
                .iter()
                .rev()
                .filter(|&&(hash, _)| hash == h)
                .map(|&(_, id)| id)
                .collect();
            assert_eq!(
                candidates.newest(h).collect::<Vec<_>>(),
                expected,
                "hash {h}"
            );
        }
        assert_eq!(candidates.id(UNPROCESSED), None);
    }

    #[test]
    fn the_enum_index_deduplicates_as_the_walk_of_each_names_candidates() {
        for seed in 1..=40 {
            let walked = prim_phase(seed, 600, false);
            assert_eq!(prim_phase(seed, 600, true), walked, "seed {seed}");
            // What the comparison covers: merged enums, and forward declarations made
            // canonical and then resolved to a full enum that came after them.
            let merged = (1..walked.len())
                .filter(|&id| walked[id] != id as u32)
                .count();
            assert!(merged > 300, "seed {seed}: {merged} merged");
        }
        let resolved_later = (1..=40u64).any(|seed| {
            let map = prim_phase(seed, 600, false);
            (1..map.len()).any(|id| map[id] != id as u32 && map[id] > id as u32)
        });
        assert!(
            resolved_later,
            "no forward declaration resolved to a later enum"
        );
    }
}
