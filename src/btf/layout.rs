//! How long a type record is: btfgen's own table for the kinds it knows ([`RECORD_LAYOUT`]),
//! and for the others the BTF layout section.
//!
//! The BTF layout section (Linux 7.1): one `struct btf_layout { u8 info_sz; u8 elem_sz;
//! u16 flags; }` per kind, indexed by the raw kind value. It says how long a record of each
//! kind is (`12 + info_sz + vlen * elem_sz`), so a reader can step over a kind it does not know
//! instead of failing the whole BTF.
//!
//! Linux 7.1 keeps the 5-bit kind field (bits 24..28 of `info`) and the 16-bit vlen: bits
//! 16..23 and 29..30 stay unused. A section with entries for kinds a 5-bit field cannot name
//! comes from an encoder with a wider kind field, whose records this reader would misread, so
//! it is refused rather than half understood. The flags are "currently unused" in 7.1's UAPI
//! header; a non-zero one would mean something this reader cannot know, and is refused too.

use crate::error::{Error, Result};
use object::endian::{Endian, Endianness};

/// Size of `struct btf_type`.
pub(super) const TYPE_HEADER_LEN: usize = 12;

/// Per raw kind value: (bytes of the record without entries, bytes per vlen entry); a zero
/// first field marks an unknown kind. Mirrors [`super::Kind::extra_len`].
pub(super) const RECORD_LAYOUT: [(u8, u8); 32] = {
    let mut table = [(0u8, 0u8); 32];
    let mut raw = 1;
    while raw < 20 {
        table[raw] = match raw {
            1 | 14 | 17 => (16, 0),      // INT, VAR, DECL_TAG: one extra word
            3 => (24, 0),                // ARRAY
            4 | 5 | 15 | 19 => (12, 12), // STRUCT, UNION, DATASEC, ENUM64
            6 | 13 => (12, 8),           // ENUM, FUNC_PROTO
            _ => (12, 0),
        };
        raw += 1;
    }
    table
};

/// Size of one `struct btf_layout`.
pub(super) const ENTRY_LEN: usize = 4;
/// Raw kind values the 5-bit kind field can hold.
const KIND_VALUES: usize = 32;
/// `info` bits Linux 7.1 leaves unused (16..23 and 29..30); the kernel rejects them.
pub(super) const UNUSED_INFO_BITS: u32 = 0x60ff_0000;

/// What a layout section says about the kinds btfgen does not know: enough to skip their
/// records. (Its entries for known kinds are checked against btfgen's own layouts when parsed.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Layout {
    /// Per raw kind: (`info_sz`, `elem_sz`), for the unknown kinds the section describes.
    unknown: [(u8, u8); KIND_VALUES],
    /// One bit per raw kind in `unknown` that the section describes.
    described: u32,
}

fn bad(kind: usize, reason: &'static str) -> Error {
    Error::BadLayout {
        kind: kind as u32,
        reason,
    }
}

impl Layout {
    /// Parse and check a layout section (its bounds, alignment and length were checked with the
    /// header): no flags, no kinds beyond the 5-bit field, and every kind btfgen knows
    /// described exactly as btfgen lays it out.
    pub(super) fn parse(section: &[u8], endian: Endianness) -> Result<Layout> {
        let mut layout = Layout::default();
        for (kind, entry) in section.chunks_exact(ENTRY_LEN).enumerate() {
            let (info_sz, elem_sz) = (entry[0], entry[1]);
            if endian.read_u16([entry[2], entry[3]]) != 0 {
                return Err(bad(kind, "non-zero flags (Linux 7.1 defines none)"));
            }
            if kind >= KIND_VALUES {
                return Err(bad(
                    kind,
                    "a kind the 5-bit kind field of Linux 7.1 cannot name (BTF from a newer \
                     encoder)",
                ));
            }
            let (len, per_entry) = RECORD_LAYOUT[kind];
            if kind == 0 || len != 0 {
                // BTF_KIND_UNKN has no record; a known kind must match its fixed layout.
                let expected = (len.saturating_sub(TYPE_HEADER_LEN as u8), per_entry);
                if (info_sz, elem_sz) != expected {
                    return Err(bad(kind, "sizes differ from the kind's record layout"));
                }
            } else {
                layout.unknown[kind] = (info_sz, elem_sz);
                layout.described |= 1 << kind;
            }
        }
        Ok(layout)
    }

    /// Whether the section describes raw kind `kind`, which btfgen does not know.
    pub(super) fn describes(&self, kind: u32) -> bool {
        kind < KIND_VALUES as u32 && self.described & (1 << kind) != 0
    }

    /// Length of a record of an unknown kind with header word `info`: `None` if the section
    /// does not describe its kind or `info` uses bits Linux 7.1 leaves unused.
    #[inline]
    pub(super) fn record_len(&self, info: u32) -> Option<usize> {
        let kind = (info >> 24) & 0x1f;
        if !self.describes(kind) || info & UNUSED_INFO_BITS != 0 {
            return None;
        }
        let (info_sz, elem_sz) = self.unknown[kind as usize];
        Some(
            TYPE_HEADER_LEN
                + usize::from(info_sz)
                + usize::from(elem_sz) * (info & 0xffff) as usize,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    /// Layout entries of the real Linux 7.1 BTF (kinds 0..19), plus `extra` for kinds 20...
    fn section(extra: &[[u8; 4]]) -> Vec<u8> {
        let real: [(u8, u8); 20] = [
            (0, 0),
            (4, 0),
            (0, 0),
            (12, 0),
            (0, 12),
            (0, 12),
            (0, 8),
            (0, 0),
            (0, 0),
            (0, 0),
            (0, 0),
            (0, 0),
            (0, 0),
            (0, 8),
            (4, 0),
            (0, 12),
            (0, 0),
            (4, 0),
            (0, 0),
            (0, 12),
        ];
        let mut bytes: Vec<u8> = real.iter().flat_map(|&(i, e)| [i, e, 0, 0]).collect();
        bytes.extend(extra.iter().flatten());
        bytes
    }

    #[test]
    fn the_real_7_1_section_describes_no_unknown_kind() {
        let layout = Layout::parse(&section(&[]), Endianness::Little).unwrap();
        assert_eq!(layout, Layout::default());
        assert_eq!(layout.record_len(20 << 24), None);
    }

    #[test]
    fn unknown_kinds_are_sized_by_their_entries() {
        let bytes = section(&[[4, 4, 0, 0], [0, 0, 0, 0], [8, 12, 0, 0]]);
        let layout = Layout::parse(&bytes, Endianness::Big).unwrap();
        assert_eq!(layout.record_len(20 << 24 | 3), Some(12 + 4 + 3 * 4));
        assert_eq!(layout.record_len(21 << 24 | 9), Some(12));
        assert_eq!(
            layout.record_len(22 << 24 | 0xffff),
            Some(12 + 8 + 0xffff * 12)
        );
        assert_eq!(
            layout.record_len(1 << 31 | 22 << 24),
            Some(20),
            "kind_flag is free"
        );
        assert_eq!(layout.record_len(23 << 24), None, "no entry");
        assert_eq!(
            layout.record_len(4 << 24),
            None,
            "known kinds are not its business"
        );
        assert_eq!(
            layout.record_len(20 << 24 | 1 << 16),
            None,
            "bit 16 unused in 7.1"
        );
        assert_eq!(
            layout.record_len(20 << 24 | 1 << 29),
            None,
            "bit 29 unused in 7.1"
        );
    }

    #[test]
    fn bad_entries_name_their_kind() {
        let reject = |bytes: Vec<u8>, endian, kind| match Layout::parse(&bytes, endian) {
            Err(Error::BadLayout { kind: k, .. }) => assert_eq!(k, kind),
            other => panic!("kind {kind}: {other:?}"),
        };
        let mut flags = section(&[]);
        flags[4 * 7 + 2] = 1;
        reject(flags.clone(), Endianness::Little, 7);
        reject(flags, Endianness::Big, 7);
        let mut int = section(&[]);
        int[4] = 8; // INT with two extra words
        reject(int, Endianness::Little, 1);
        let mut structs = section(&[]);
        structs[4 * 4 + 1] = 8;
        reject(structs, Endianness::Little, 4);
        let mut unkn = section(&[]);
        unkn[0] = 4;
        reject(unkn, Endianness::Little, 0);
        reject(section(&[[0; 4]; 13]), Endianness::Little, 32);
        let mut unknown_flags = section(&[[0, 4, 0, 0]]);
        unknown_flags[4 * 20 + 3] = 0x80;
        reject(unknown_flags, Endianness::Little, 20);
        // Fewer entries than kinds: the rest keep btfgen's own layouts.
        assert!(Layout::parse(&section(&[])[..8], Endianness::Little).is_ok());
    }
}
