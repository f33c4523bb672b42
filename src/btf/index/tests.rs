//! The index's tests: builds of made-up, corrupted and (where readable) the running
//! kernel's type sections, checked against a reference walk of one record after another,
//! so that the strided index, the interleaved lanes and their fallbacks all give its offsets
//! or its exact first error.

use super::*;
use crate::btf::Kind;
use crate::test_rng::xorshift64;
use alloc::vec;

const NOTHING: Keep<fn(usize, u32) -> bool> = Keep {
    kinds: KindSet::EMPTY,
    test: |_, _| false,
};

/// A type section of `count` pseudo-random valid records (seeded), and each record's
/// offset and info word.
fn section(seed: u64, count: usize, endian: Endianness) -> (Vec<u8>, Vec<(usize, u32)>) {
    let mut word = xorshift64(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut next = move |n: u32| (word() % u64::from(n)) as u32;
    let (mut bytes, mut records) = (Vec::new(), Vec::new());
    for _ in 0..count {
        let raw = 1 + next(19);
        let (_, per_entry) = RECORD_LAYOUT[raw as usize];
        let vlen = match raw {
            12 => next(3),
            _ if per_entry == 0 => 0,
            _ => next(40),
        };
        let info = raw << 24 | vlen;
        records.push((bytes.len(), info));
        let words = Kind::from_raw(raw).unwrap().extra_len(vlen as u16) / 4 + 3;
        for word in 0..words {
            let value = match word {
                1 => info,
                _ => next(1 << 20),
            };
            bytes.extend_from_slice(&endian.write_u32(value));
        }
    }
    (bytes, records)
}

fn check_index(types: &[u8], endian: Endianness, records: &[(usize, u32)]) -> TypeIndex {
    check_index_with(types, endian, records, None)
}

fn check_index_with(
    types: &[u8],
    endian: Endianness,
    records: &[(usize, u32)],
    layout: Option<&Layout>,
) -> TypeIndex {
    // Keep every record whose kind is FUNC: the walk's scan must find exactly those.
    let is_func = |info: u32| (info >> 24) & 0x1f == Kind::Func as u32;
    let keep = Keep {
        kinds: KindSet::EMPTY.with(Kind::Func).with(Kind::Ptr),
        test: |_, info| is_func(info),
    };
    let (index, kept) = TypeIndex::build(types, endian, 1, &keep, layout).unwrap();
    let funcs: Vec<u32> = (0..records.len() as u32)
        .filter(|&i| is_func(records[i as usize].1))
        .collect();
    assert_eq!(kept, funcs);
    assert_eq!(index.len() as usize, records.len());
    for (i, &(pos, _)) in records.iter().enumerate() {
        assert_eq!(
            index.offset(types, endian, i as u32),
            Some(pos),
            "record {i}"
        );
    }
    assert_eq!(index.offset(types, endian, records.len() as u32), None);
    // Again, with the walked offsets memoized: in reverse, then alternating between records
    // that share a memo slot (each lookup evicts the other's offset).
    for (i, &(pos, _)) in records.iter().enumerate().rev() {
        assert_eq!(
            index.offset(types, endian, i as u32),
            Some(pos),
            "record {i} again"
        );
    }
    for i in 0..records.len().saturating_sub(MEMO_LEN) {
        for j in [i + MEMO_LEN, i, i + MEMO_LEN] {
            assert_eq!(
                index.offset(types, endian, j as u32),
                Some(records[j].0),
                "record {j}, sharing a memo slot"
            );
        }
    }
    let mut seen = vec![false; records.len()];
    index
        .for_each_record(types, endian, |i, pos, info| {
            assert_eq!(records[i as usize], (pos, info), "record {i}");
            assert!(
                !core::mem::replace(&mut seen[i as usize], true),
                "record {i} twice"
            );
            Ok(())
        })
        .unwrap();
    assert!(seen.iter().all(|&s| s));
    index
}

/// The build against the reference walk on `types`: the same offset at every index and the
/// same kept records (STRUCTs and FUNCs with an odd name offset), or the same error.
fn agrees_with_reference(types: &[u8], endian: Endianness) -> bool {
    let odd_name = |pos: usize| {
        types
            .get(pos..pos + 4)
            .is_some_and(|b| endian.read_u32([b[0], b[1], b[2], b[3]]) % 2 == 1)
    };
    let keep = Keep {
        kinds: KindSet::EMPTY.with(Kind::Struct).with(Kind::Func),
        test: |pos, _| odd_name(pos),
    };
    let built = TypeIndex::build(types, endian, 1, &keep, None);
    let reference = match endian {
        Endianness::Little => build_sequential(types, LittleEndian, 1, &keep, None),
        Endianness::Big => build_sequential(types, BigEndian, 1, &keep, None),
    };
    match (built, reference) {
        (Ok((index, kept)), Ok((eager, eager_kept))) => {
            assert_eq!(kept, eager_kept);
            assert_eq!(index.len(), eager.len());
            for i in 0..=eager.len() {
                let expected = eager.offset(types, endian, i);
                assert_eq!(index.offset(types, endian, i), expected, "record {i}");
            }
            index.segments.len() == SEGMENTS
        }
        (Err(got), Err(expected)) => {
            assert_eq!(got, expected);
            false
        }
        (got, expected) => panic!("{:?} vs {:?}", got.map(|_| ()), expected.map(|_| ())),
    }
}

#[test]
fn the_running_kernels_btf_indexes_as_the_reference_walk_does() {
    extern crate std;
    let Ok(data) = std::fs::read("/sys/kernel/btf/vmlinux") else {
        std::eprintln!("SKIP: /sys/kernel/btf/vmlinux not readable");
        return;
    };
    let word = |at: usize| u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as usize;
    let (hdr_len, type_len) = (word(4), word(12));
    let types = &data[hdr_len..hdr_len + type_len];
    assert!(
        agrees_with_reference(types, Endianness::Little),
        "lanes not used"
    );
    // Words overwritten anywhere (lane starts included): the same offsets or error still.
    let mut word = xorshift64(0x9e37_79b9_7f4a_7c15);
    let mut next = |n: usize| (word() % n as u64) as usize;
    for _ in 0..8 {
        let mut bad = types.to_vec();
        for _ in 0..1 + next(3) {
            let at = next(bad.len() / 4) * 4;
            let value = match next(3) {
                0 => 0,
                1 => (next(21) as u32) << 24 | next(0x10000) as u32,
                _ => next(u32::MAX as usize) as u32,
            };
            bad[at..at + 4].copy_from_slice(&value.to_le_bytes());
        }
        agrees_with_reference(&bad, Endianness::Little);
    }
}

#[test]
fn density_changes_and_many_kept_records_index_as_the_reference_walk_does() {
    // Large STRUCTs first, then only FUNCs (the end of a vmlinux BTF): the lanes of a group
    // end at different records; and more records of the kept kinds than the scratch array
    // first holds, so groups are walked again with a larger one.
    for endian in [Endianness::Little, Endianness::Big] {
        let mut types = Vec::new();
        let mut push = |words: &[u32]| {
            for &word in words {
                types.extend_from_slice(&endian.write_u32(word));
            }
        };
        for i in 0..2000u32 {
            let vlen = i % 40;
            push(&[i, ((Kind::Struct as u32) << 24) | vlen, 8]);
            for member in 0..vlen {
                push(&[member, 1, member * 8]);
            }
        }
        for i in 0..60_000u32 {
            push(&[i, ((Kind::Func as u32) << 24) | (i % 3), 1]);
        }
        assert!(agrees_with_reference(&types, endian), "lanes not used");
    }
}

#[test]
fn interleaved_walks_agree_with_the_records() {
    for seed in 0..12 {
        for endian in [Endianness::Little, Endianness::Big] {
            let (types, records) = section(seed, 6000 + 1000 * seed as usize, endian);
            assert!(types.len() >= LANES_MIN_LEN);
            let index = check_index(&types, endian, &records);
            assert_eq!(
                index.segments.len(),
                SEGMENTS,
                "seed {seed}: lanes not used"
            );
        }
    }
}

/// A layout section of Linux 7.1's entries plus kinds 20 (4 bytes, 8 per entry), 21 (none)
/// and 22 (4 per entry).
fn layout_with_unknown_kinds(endian: Endianness) -> Layout {
    let mut bytes = Vec::new();
    for &(len, per_entry) in &RECORD_LAYOUT[..20] {
        bytes.extend([len.saturating_sub(TYPE_HEADER_LEN as u8), per_entry, 0, 0]);
    }
    bytes.extend([4, 8, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0]);
    Layout::parse(&bytes, endian).unwrap()
}

/// `section(seed, count)` with a record of kind 20, 21 or 22 (cycling, sized as
/// [`layout_with_unknown_kinds`] says) before every `every`-th record.
fn section_with_unknown(
    seed: u64,
    count: usize,
    every: usize,
    endian: Endianness,
) -> (Vec<u8>, Vec<(usize, u32)>) {
    let (known, known_records) = section(seed, count, endian);
    let (mut bytes, mut records) = (Vec::new(), Vec::new());
    for (i, &(pos, info)) in known_records.iter().enumerate() {
        if i % every == every / 2 {
            let raw = 20 + (i / every % 3) as u32;
            let vlen = (i % 5) as u32;
            let extra = [4 + 8 * vlen, 0, 4 * vlen][raw as usize - 20];
            let info = raw << 24 | vlen;
            records.push((bytes.len(), info));
            for word in [7, info, 9]
                .into_iter()
                .chain((0..extra / 4).map(|w| w ^ info))
            {
                bytes.extend_from_slice(&endian.write_u32(word));
            }
        }
        let end = known_records.get(i + 1).map_or(known.len(), |r| r.0);
        records.push((bytes.len(), info));
        bytes.extend_from_slice(&known[pos..end]);
    }
    (bytes, records)
}

#[test]
fn unknown_kinds_are_walked_with_the_layout() {
    for endian in [Endianness::Little, Endianness::Big] {
        let layout = layout_with_unknown_kinds(endian);
        let (types, records) = section_with_unknown(3, 9000, 97, endian);
        assert!(types.len() >= LANES_MIN_LEN);
        let index = check_index_with(&types, endian, &records, Some(&layout));
        assert!(index.has_unknown_kinds());
        // Without the layout, the first unknown record is an error naming it.
        let err = TypeIndex::build(&types, endian, 1, &NOTHING, None).unwrap_err();
        let first = records.iter().position(|r| r.1 >> 24 >= 20).unwrap();
        assert_eq!(
            err,
            Error::UnknownKind {
                id: first as u32 + 1,
                kind: 20
            }
        );
        // A layout describing kinds no record has changes nothing: the lanes still run.
        let (plain, plain_records) = section(3, 9000, endian);
        let index = check_index_with(&plain, endian, &plain_records, Some(&layout));
        assert!(!index.has_unknown_kinds());
        assert_eq!(index.segments.len(), SEGMENTS);
    }
}

#[test]
fn small_sections_are_walked_alone() {
    let (types, records) = section(99, 100, Endianness::Little);
    let index = check_index(&types, Endianness::Little, &records);
    assert_eq!(index.segments.len(), 1);
}

#[test]
fn a_bad_record_anywhere_fails_with_the_first_error() {
    let endian = Endianness::Little;
    let (types, records) = section(7, 12000, endian);
    for at in [10, 4000, 7000, 11999] {
        let mut bad = types.clone();
        let (pos, _) = records[at];
        bad[pos + 7] = 0; // kind 0 (UNKN)
        let err = TypeIndex::build(&bad, endian, 1, &NOTHING, None).unwrap_err();
        let reason = "unknown kind";
        assert_eq!(
            err,
            Error::BadType {
                id: at as u32 + 1,
                reason
            },
            "record {at}"
        );
    }
    let truncated = &types[..types.len() - 4];
    let (last, _) = records[records.len() - 1];
    let err = TypeIndex::build(truncated, endian, 1, &NOTHING, None).unwrap_err();
    let expected = match types.len() - 4 - last {
        n if n < 8 => Error::Truncated {
            what: "BTF type header",
            offset: last,
        },
        _ => Error::Truncated {
            what: "BTF type record",
            offset: last,
        },
    };
    assert_eq!(err, expected);
}

/// Offsets of every record by the reference walk, or its error.
fn reference(types: &[u8], endian: Endianness) -> Result<Vec<u32>> {
    let (index, _) = match endian {
        Endianness::Little => build_sequential(types, LittleEndian, 1, &NOTHING, None)?,
        Endianness::Big => build_sequential(types, BigEndian, 1, &NOTHING, None)?,
    };
    Ok((0..index.len())
        .map(|i| index.offset(types, endian, i).unwrap() as u32)
        .collect())
}

#[test]
fn corrupted_sections_index_as_the_reference_walk_does() {
    // Random words overwritten anywhere, lane starts included: whatever the guesses, the
    // interleaved build must give the reference walk's offsets or its exact error.
    let mut word = xorshift64(0x2545_f491_4f6c_dd1d);
    let mut next = |n: usize| (word() % n as u64) as usize;
    let mut lanes_used = 0;
    for seed in 0..150 {
        let endian = [Endianness::Little, Endianness::Big][seed % 2];
        let (mut types, _) = section(seed as u64, 7000, endian);
        for _ in 0..1 + next(6) {
            let at = next(types.len() / 4) * 4;
            let value = match next(4) {
                0 => 0,
                1 => (next(20) as u32) << 24 | next(0x10000) as u32,
                2 => next(0x10000) as u32,
                _ => next(u32::MAX as usize) as u32,
            };
            types[at..at + 4].copy_from_slice(&endian.write_u32(value));
        }
        let built = TypeIndex::build(&types, endian, 1, &NOTHING, None);
        match (built, reference(&types, endian)) {
            (Ok((index, _)), Ok(offsets)) => {
                lanes_used += usize::from(index.segments.len() == SEGMENTS);
                assert_eq!(index.len() as usize, offsets.len(), "seed {seed}");
                for (i, &pos) in offsets.iter().enumerate() {
                    let got = index.offset(&types, endian, i as u32);
                    assert_eq!(got, Some(pos as usize), "seed {seed}, record {i}");
                }
            }
            (Err(got), Err(expected)) => assert_eq!(got, expected, "seed {seed}"),
            (got, expected) => panic!("seed {seed}: {:?} vs {:?}", got.map(|_| ()), expected),
        }
    }
    assert!(lanes_used > 0, "no corrupted section was indexed by lanes");
}

#[test]
fn a_wrong_lane_start_falls_back_to_one_walk() {
    // One STRUCT whose 65535 members, read from a member boundary, look like PTR records:
    // the lane starts guessed inside it are wrong, and the first walk steps over them.
    let endian = Endianness::Little;
    let mut types = Vec::new();
    let info = (Kind::Struct as u32) << 24 | 0xffff;
    for word in [1, info, 8] {
        types.extend_from_slice(&word.to_le_bytes());
    }
    let ptr = (Kind::Ptr as u32) << 24;
    for _ in 0..0xffff {
        for word in [0, ptr, 0] {
            types.extend_from_slice(&word.to_le_bytes());
        }
    }
    let tail = types.len();
    for word in [0, ptr, 1] {
        types.extend_from_slice(&word.to_le_bytes());
    }
    let index = check_index(&types, endian, &[(0, info), (tail, ptr)]);
    assert_eq!(index.segments.len(), 1);
}

#[test]
fn record_layout_table_matches_kind_extra_len() {
    for raw in 0..32u32 {
        let (fixed, per_entry) = RECORD_LAYOUT[raw as usize];
        match Kind::from_raw(raw) {
            None => assert_eq!(fixed, 0, "raw kind {raw}"),
            Some(kind) => {
                for vlen in [0u16, 1, 2, 0xffff] {
                    let table = usize::from(fixed) + usize::from(per_entry) * usize::from(vlen);
                    assert_eq!(
                        table,
                        TYPE_HEADER_LEN + kind.extra_len(vlen),
                        "{kind:?} vlen {vlen}"
                    );
                }
            }
        }
    }
}
