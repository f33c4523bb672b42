//! Filters for whole-BTF scans.

use super::KindSet;
use crate::error::{Error, Result};
use crate::fallible;
use alloc::boxed::Box;

/// The types a whole-BTF scan is after: a set of kinds, and names by their first two bytes (a
/// 64 Kibit table), so that most types are rejected by their kind alone and most of the rest
/// without reading their names to the end. It may let through names it was not given: callers
/// compare whole names afterwards.
#[derive(Debug, Clone)]
pub struct NameFilter {
    kinds: KindSet,
    /// One bit per slot ([`slot`]): a fixed-size array, so lookups need no bounds check.
    prefixes: Box<[u64; PREFIX_WORDS]>,
}

/// Words of the prefix table: one bit for each pair of first bytes.
const PREFIX_WORDS: usize = (1 << 16) / 64;

/// Slot of a name in the prefix table: its first two bytes (a one-byte name: the byte and 0).
fn slot(name: &[u8]) -> usize {
    let first = name.first().copied().unwrap_or(0);
    let second = if first == 0 {
        0
    } else {
        name.get(1).copied().unwrap_or(0)
    };
    (usize::from(first) << 8) | usize::from(second)
}

impl NameFilter {
    /// A filter that lets nothing through.
    pub fn new() -> Result<Self> {
        let mut prefixes = fallible::vec_with_capacity(PREFIX_WORDS)?;
        prefixes.resize(PREFIX_WORDS, 0);
        // Length equal to capacity: the conversions neither copy nor fail.
        let prefixes: Box<[u64]> = prefixes.into_boxed_slice();
        let prefixes = prefixes.try_into().map_err(|_| Error::OutOfMemory)?;
        Ok(NameFilter {
            kinds: KindSet::EMPTY,
            prefixes,
        })
    }

    /// Let through types of `kinds` named `name`, or `name` followed by more bytes (such as a
    /// `___flavor` suffix).
    pub fn add(&mut self, name: &[u8], kinds: KindSet) {
        self.kinds = self.kinds.union(kinds);
        let slot = slot(name);
        self.prefixes[slot / 64] |= 1 << (slot % 64);
    }

    /// The kinds let through.
    pub fn kinds(&self) -> KindSet {
        self.kinds
    }

    /// Whether a name starting with `name` (the string section from the name on) may be one
    /// that was added. A one-byte name was filed under (byte, 0), so a longer name starting
    /// with that byte is let through too.
    #[inline]
    pub fn accepts_name(&self, name: &[u8]) -> bool {
        let wanted = |slot: usize| self.prefixes[slot / 64] & (1 << (slot % 64)) != 0;
        let slot = slot(name);
        wanted(slot) || wanted(slot & 0xff00)
    }
}
