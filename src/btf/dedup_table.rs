//! What btfgen's two deduplications share of libbpf's `btf__dedup`: the DWARF converter's
//! ([`crate::dwarf`]) and the split of a module's types over its kernel's ([`super::split`]).
//! The hashing and candidate table: a hash maps to its newest candidate; a chain, indexed by
//! the caller's slot for each id, links every candidate to the one before, so candidates come
//! newest first, as libbpf's hashmap yields them. And [`DedupRecords`], the hashes and
//! comparisons of records (libbpf's `btf_hash_*`, `btf_equal_*`, `btf_compat_*`) over however
//! a deduplication holds them.

use crate::btf::Kind;
use crate::error::{Error, Result};
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

/// Spread a combined hash over all bits (the table looks at the top ones too).
pub(crate) fn spread(h: u64) -> u64 {
    let h = (h ^ (h >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}

/// Add `id` with hash `h` to `table`, linking the candidate it replaces through
/// `chain[slot]`.
pub(crate) fn add(
    table: &mut HashTable<(u64, u32)>,
    chain: &mut [u32],
    slot: usize,
    h: u64,
    id: u32,
) -> Result<()> {
    table.try_reserve(1, |&(hash, _)| spread(hash))?;
    match table.find_mut(spread(h), |&(hash, _)| hash == h) {
        Some(entry) => {
            if let Some(link) = chain.get_mut(slot) {
                *link = entry.1;
            }
            entry.1 = id;
        }
        None => {
            table.insert_unique(spread(h), (h, id), |&(hash, _)| spread(hash));
        }
    }
    Ok(())
}

/// The newest candidate with hash `h`, or [`UNPROCESSED`].
pub(crate) fn head(table: &HashTable<(u64, u32)>, h: u64) -> u32 {
    table
        .find(spread(h), |&(hash, _)| hash == h)
        .map_or(UNPROCESSED, |&(_, id)| id)
}

/// Whether `map` (a dedup's type → canonical type map) has processed `id` (not a marker).
pub(crate) fn is_mapped(map: &[u32], id: u32) -> bool {
    map.get(id as usize).is_some_and(|&m| m < IN_PROGRESS)
}

/// The canonical type `id` maps to through `map`'s chain.
pub(crate) fn resolve(map: &[u32], mut id: u32) -> u32 {
    // The chains are acyclic by construction; the bound keeps a bug from hanging.
    for _ in 0..=map.len() {
        if !is_mapped(map, id) || map[id as usize] == id {
            return id;
        }
        id = map[id as usize];
    }
    id
}

/// A type's BTF header as the dedup compares it: `info` is the record's word (kind_flag, kind,
/// vlen), the name a key that is equal exactly for equal names.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Header {
    pub(crate) name: u32,
    pub(crate) kind: Option<Kind>,
    pub(crate) info: u32,
    pub(crate) size_or_type: u32,
    pub(crate) vlen: u16,
}

/// The records a deduplication reads, by id; the comparisons are libbpf's, the same for both.
pub(crate) trait DedupRecords {
    /// The header of type `id` (`void`'s, all zero, for an id out of range).
    fn header(&self, id: u32) -> Header;
    /// The kind-specific words of type `id`.
    fn words(&self, id: u32) -> &[u32];
    /// The error of a walk deeper than [`MAX_DEPTH`].
    fn too_deep(&self) -> Error;

    fn kind(&self, id: u32) -> Option<Kind> {
        self.header(id).kind
    }

    fn hash_common(&self, id: u32) -> u64 {
        let r = self.header(id);
        combine(combine(combine(0, r.name), r.info), r.size_or_type)
    }

    fn equal_common(&self, a: u32, b: u32) -> bool {
        let (a, b) = (self.header(a), self.header(b));
        a.name == b.name && a.info == b.info && a.size_or_type == b.size_or_type
    }

    /// Common fields and every kind-specific word equal (INT, DECL_TAG, ARRAY, FUNC_PROTO and
    /// enums once their references are canonical).
    fn equal_all(&self, a: u32, b: u32) -> bool {
        self.equal_common(a, b) && self.words(a) == self.words(b)
    }

    fn hash_all(&self, id: u32) -> u64 {
        self.words(id)
            .iter()
            .fold(self.hash_common(id), |h, &w| combine(h, w))
    }

    fn is_enum(&self, id: u32) -> bool {
        matches!(self.kind(id), Some(Kind::Enum | Kind::Enum64))
    }

    fn is_enum_fwd(&self, id: u32) -> bool {
        self.is_enum(id) && self.header(id).vlen == 0
    }

    fn compat_enum(&self, a: u32, b: u32) -> bool {
        if !self.is_enum_fwd(a) && !self.is_enum_fwd(b) {
            return self.equal_all(a, b);
        }
        self.header(a).name == self.header(b).name && self.is_enum(a) && self.is_enum(b)
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
        let (ra, rb) = (self.header(a), self.header(b));
        ra.name == rb.name
            && ra.info == rb.info
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
