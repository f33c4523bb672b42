//! The hashing and candidate table of libbpf's `btf__dedup`, shared by btfgen's two
//! deduplications: the DWARF converter's ([`crate::dwarf`]) and the split of a module's types
//! over its kernel's ([`super::split`]). A hash maps to its newest candidate; a chain, indexed
//! by the caller's slot for each id, links every candidate to the one before, so candidates
//! come newest first, as libbpf's hashmap yields them.

use crate::error::Result;
use hashbrown::HashTable;

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
