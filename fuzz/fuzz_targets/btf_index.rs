//! The type index against a reference walk: the input, tiled past the size from which the
//! index is built by interleaved walks with guessed starts, is a type section. Whenever the
//! parse succeeds, it must have found exactly the records a plain one-after-another walk
//! finds, with their kinds; and whenever that walk fails, the parse must fail.
#![no_main]

use btfgen::btf::{Btf, Kind, Validation};
use libfuzzer_sys::fuzz_target;

/// Enough for four lanes (the index walks alone below 64 KiB).
const MIN_TYPES_LEN: usize = 96 * 1024;

/// The records a plain walk finds: (kind, vlen) of each, or `None` if the section is malformed.
fn reference_walk(types: &[u8]) -> Option<Vec<u32>> {
    let mut kinds = Vec::new();
    let mut pos = 0;
    while pos < types.len() {
        let info = u32::from_le_bytes(types.get(pos + 4..pos + 8)?.try_into().ok()?);
        let kind = Kind::from_raw((info >> 24) & 0x1f)?;
        let len = 12 + kind.extra_len((info & 0xffff) as u16);
        if types.len() - pos < len {
            return None;
        }
        kinds.push((info >> 24) & 0x1f);
        pos += len;
    }
    Some(kinds)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 12 {
        return;
    }
    // Whole 4-byte words, tiled: records stay word-aligned, as in every real BTF.
    let unit = &data[..data.len() / 4 * 4];
    let mut types = Vec::with_capacity(MIN_TYPES_LEN + unit.len());
    while types.len() < MIN_TYPES_LEN {
        types.extend_from_slice(unit);
    }
    let mut blob = Vec::with_capacity(24 + types.len() + 1);
    for word in [
        0x0001_eb9f_u32,
        24,
        0,
        types.len() as u32,
        types.len() as u32,
        1,
    ] {
        blob.extend_from_slice(&word.to_le_bytes());
    }
    blob.extend_from_slice(&types);
    blob.push(0);
    let reference = reference_walk(&types);
    let Ok(btf) = Btf::parse_with(&blob, None, Validation::OnUse) else {
        return;
    };
    let kinds = reference.expect("the parse succeeded where a plain walk fails");
    assert_eq!(btf.type_cnt() as usize, kinds.len() + 1, "record count");
    for (id, &raw) in (1..).zip(&kinds) {
        let (_, kind) = btf.name_off_and_kind(id).expect("every id resolves");
        assert_eq!(kind.map(|k| k as u32), Some(raw), "kind of type {id}");
    }
});
