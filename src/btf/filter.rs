//! Filters for whole-BTF scans.

use super::KindSet;
use crate::error::{Error, Result};
use crate::fallible;
use alloc::boxed::Box;

/// The types a whole-BTF scan is after: a set of kinds, and names by their first two bytes (a
/// 64 Kibit table) and their lengths, so that most types are rejected by their kind alone,
/// most of the rest by two bytes of their names, and most of what remains by the length: a
/// name whose first two bytes match one asked for usually only shares a prefix with it. It may
/// let through names it was not given: callers compare whole names afterwards.
#[derive(Debug, Clone)]
pub struct NameFilter {
    kinds: KindSet,
    /// One bit per slot ([`slot`]): a fixed-size array, so lookups need no bounds check.
    prefixes: Box<[u64; PREFIX_WORDS]>,
    /// Bit `n` for each name of length `n` added, bit 63 also for every longer one.
    lengths: u64,
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
            lengths: 0,
        })
    }

    /// Let through types of `kinds` named `name`, or `name` with a flavor suffix (`___` and
    /// more: a CO-RE flavor, which candidate search ignores).
    pub fn add(&mut self, name: &[u8], kinds: KindSet) {
        self.kinds = self.kinds.union(kinds);
        self.lengths |= 1 << name.len().min(63);
        let slot = slot(name);
        self.prefixes[slot / 64] |= 1 << (slot % 64);
    }

    /// The kinds let through.
    pub fn kinds(&self) -> KindSet {
        self.kinds
    }

    /// Whether the name at the start of `name` (the string section from the name on, up to
    /// its NUL) may be one that was added: its first two bytes are those of a name added (a
    /// one-byte name was filed under (byte, 0), so a longer name starting with that byte
    /// passes too), and its length is that of a name added, or a `___` follows its first `n`
    /// bytes for a length `n` of a name added (a flavor of such a name).
    #[inline]
    pub fn accepts_name(&self, name: &[u8]) -> bool {
        let wanted = |slot: usize| self.prefixes[slot / 64] & (1 << (slot % 64)) != 0;
        let slot = slot(name);
        if !(wanted(slot) || wanted(slot & 0xff00)) {
            return false;
        }
        let Some(len) = super::nul_position(name) else {
            return false;
        };
        if self.lengths & (1 << len.min(63)) != 0 {
            return true;
        }
        // The lengths below this one (a name of 63 bytes or more was let through above).
        let mut shorter = self.lengths & ((1 << len.min(63)) - 1);
        while shorter != 0 {
            let essential = shorter.trailing_zeros() as usize;
            shorter &= shorter - 1;
            // A pattern, not a slice comparison: most candidates fail at their first byte.
            if matches!(
                name[..len].get(essential..essential + 3),
                Some([b'_', b'_', b'_'])
            ) {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btf::Kind;

    #[test]
    fn names_of_other_lengths_are_rejected_unless_flavored() {
        let mut filter = NameFilter::new().unwrap();
        filter.add(b"task_struct", KindSet::EMPTY.with(Kind::Struct));
        filter.add(b"a", KindSet::EMPTY.with(Kind::Struct));
        // The scanned string runs on past the name's NUL, as a string section does.
        let accepts = |name: &[u8]| {
            let mut tail = name.to_vec();
            tail.extend_from_slice(b"\0next_name\0");
            filter.accepts_name(&tail)
        };
        assert!(accepts(b"task_struct"));
        assert!(accepts(b"task_struct___old"), "a flavor of a wanted name");
        assert!(accepts(b"a"));
        assert!(accepts(b"a___b"), "a flavor of a one-byte name");
        assert!(!accepts(b"task_struct_ext"), "a longer name, no flavor");
        assert!(!accepts(b"task_stru"), "a shorter name");
        assert!(!accepts(b"task_struct__x"), "two underscores are no flavor");
        assert!(
            !accepts(b"task___struct"),
            "a flavor of a name of no wanted length"
        );
        assert!(
            !accepts(b"ab"),
            "a longer name starting with a one-byte name"
        );
        assert!(!accepts(b"mm_struct"), "another prefix");
        // Unterminated: what Btf::name refuses.
        assert!(!filter.accepts_name(b"task_struct"));
    }

    #[test]
    fn long_names_share_the_last_length_bit() {
        let long = [b'x'; 80];
        let mut filter = NameFilter::new().unwrap();
        filter.add(&long, KindSet::EMPTY.with(Kind::Typedef));
        let mut tail = [b'x'; 70].to_vec();
        tail.push(0);
        assert!(filter.accepts_name(&tail), "63 bytes or more: let through");
        let mut short = [b'x'; 62].to_vec();
        short.push(0);
        assert!(!filter.accepts_name(&short));
    }
}
