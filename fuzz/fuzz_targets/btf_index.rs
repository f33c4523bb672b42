//! The type index against a reference walk: the input, after a layout prefix and tiled past
//! the size from which the index is built by interleaved walks with guessed starts, is a type
//! section. Whenever the parse succeeds, it must have found exactly the records a plain
//! one-after-another walk finds, with their kinds (none for kinds btfgen does not know); and
//! whenever that walk fails, the parse must fail.
//!
//! The prefix: a byte `n` (mod 13); 0 is a 24-byte header without a layout section, else a
//! 32-byte header whose layout section has Linux 7.1's 20 entries plus `n - 1` for kinds 20..,
//! each sized by the next two bytes (`info_sz`, `elem_sz`).
#![no_main]

use btfgen::btf::{Btf, Kind, Validation};
use libfuzzer_sys::fuzz_target;

/// Enough for four lanes (the index walks alone below 64 KiB).
const MIN_TYPES_LEN: usize = 96 * 1024;

/// Layout entries of Linux 7.1 for kinds 0..19: (`info_sz`, `elem_sz`).
const LAYOUT_7_1: [(u8, u8); 20] = [
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

/// The records a plain walk finds: the raw kind of each, or `None` if the section is
/// malformed. `unknown` sizes kinds 20.. (`info_sz`, `elem_sz`).
fn reference_walk(types: &[u8], unknown: &[(u8, u8)]) -> Option<Vec<u32>> {
    let mut kinds = Vec::new();
    let mut pos = 0;
    while pos < types.len() {
        let info = u32::from_le_bytes(types.get(pos + 4..pos + 8)?.try_into().ok()?);
        let raw = (info >> 24) & 0x1f;
        let vlen = (info & 0xffff) as usize;
        let len = match Kind::from_raw(raw) {
            Some(kind) => 12 + kind.extra_len(vlen as u16),
            // Linux 7.1 leaves bits 16..23 and 29..30 unused.
            None if raw >= 20 && info & 0x60ff_0000 == 0 => {
                let &(info_sz, elem_sz) = unknown.get(raw as usize - 20)?;
                12 + usize::from(info_sz) + usize::from(elem_sz) * vlen
            }
            None => return None,
        };
        if types.len() - pos < len {
            return None;
        }
        kinds.push(raw);
        pos += len;
    }
    Some(kinds)
}

fuzz_target!(|data: &[u8]| {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let extra = usize::from(n % 13).saturating_sub(1);
    let layout_entries = if n % 13 == 0 { 0 } else { 20 + extra };
    if rest.len() < 2 * extra + 12 {
        return;
    }
    let (sizes, section) = rest.split_at(2 * extra);
    let unknown: Vec<(u8, u8)> = sizes.chunks_exact(2).map(|s| (s[0], s[1])).collect();
    // Whole 4-byte words, tiled: records stay word-aligned, as in every real BTF.
    let unit = &section[..section.len() / 4 * 4];
    let mut types = Vec::with_capacity(MIN_TYPES_LEN + unit.len());
    while types.len() < MIN_TYPES_LEN {
        types.extend_from_slice(unit);
    }
    let type_len = types.len() as u32;
    let layout_len = 4 * layout_entries as u32;
    let mut blob = Vec::with_capacity(32 + types.len() + layout_len as usize + 1);
    let mut header = vec![0x0001_eb9f_u32, 24, 0, type_len, type_len + layout_len, 1];
    if layout_entries != 0 {
        header[1] = 32;
        header.extend([type_len, layout_len]);
    }
    for word in header {
        blob.extend_from_slice(&word.to_le_bytes());
    }
    blob.extend_from_slice(&types);
    if layout_entries != 0 {
        for &(info_sz, elem_sz) in LAYOUT_7_1.iter().chain(&unknown) {
            blob.extend_from_slice(&[info_sz, elem_sz, 0, 0]);
        }
    }
    blob.push(0);
    let reference = reference_walk(&types, if layout_entries != 0 { &unknown } else { &[] });
    let Ok(btf) = Btf::parse_with(&blob, None, Validation::OnUse) else {
        return;
    };
    let kinds = reference.expect("the parse succeeded where a plain walk fails");
    assert_eq!(btf.type_cnt() as usize, kinds.len() + 1, "record count");
    for (id, &raw) in (1..).zip(&kinds) {
        let (_, kind) = btf.name_off_and_kind(id).expect("every id resolves");
        let known = Kind::from_raw(raw);
        assert_eq!(kind, known, "kind of type {id}");
        assert_eq!(
            btf.is_unknown_kind(id),
            known.is_none(),
            "type {id} unknown"
        );
    }
});
