//! The type index: where each type's record starts in the type section.
//!
//! Records have variable lengths, so reaching record `n` means walking the `n` before it: a
//! chain of dependent loads, ~14 cycles a record, ~0.7 ms for the 126,622 types of a 6.18
//! vmlinux. Two things make that cheaper:
//!
//! - The index keeps the offset of every [`STRIDE`]-th record only; a lookup walks at most
//!   `STRIDE - 1` records from there. A dense `u32` per type cost as much again in page faults
//!   on a fresh 500 KiB array as the walk itself. A small section (an object's own `.BTF`,
//!   under [`LANES_MIN_LEN`]) keeps every offset: a few KiB, and no walk on the lookups that
//!   validation and relocation make by the thousand. A large one remembers the offsets its
//!   lookups walked to in a small memo ([`MEMO_LEN`] slots): relocation looks the same few
//!   hundred kernel types up thousands of times (53 libbpf-tools objects: 3.7% fewer
//!   instructions in all, the same with 256 slots as with 1,024).
//! - Whole-section walks run [`LANES`] independent chains interleaved in one loop, so the CPU
//!   overlaps them. For the build, where segment starts can only be guessed (a position from
//!   which many records decode plausibly), each guess is proven by the segment before it
//!   ending exactly there; if any is not, or any lane meets an invalid record, the section is
//!   walked again from the start alone, which also finds the exact first error. The build walks
//!   [`GROUPS`] groups of four adjacent segments one after another, so that the lanes of a
//!   group end together, and its loop calls nothing, so that the lanes stay in registers:
//!   ~330 us instead of ~460 us with four quarter-section lanes (~720 us walked alone).
//!
//! Records of kinds btfgen does not know are sized by the BTF's layout section ([`Layout`]).
//! The fast walks know only btfgen's kinds, so they fail on such a record and the section is
//! walked alone with the layout; an index that holds one keeps the layout, and walks with it.

use super::layout::{Layout, RECORD_LAYOUT, TYPE_HEADER_LEN, UNUSED_INFO_BITS};
use super::{Endianness, KindSet, MAX_TYPE_ID};
use crate::error::{Error, Result};
use crate::fallible;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use object::endian::{BigEndian, Endian, LittleEndian};

/// One checkpoint per this many records: `1 << STRIDE_SHIFT`.
pub(super) const STRIDE: u32 = 1 << STRIDE_SHIFT;
const STRIDE_SHIFT: u32 = 3;
/// Slots of [`TypeIndex`]'s memo of walked offsets (a power of two).
const MEMO_LEN: usize = 256;
/// Chains walked at once ([`walk_lanes`] is written out for four).
const LANES: usize = 4;
/// Groups of [`LANES`] adjacent segments the build walks one after another. A record's length
/// varies along the section (large structs first, small functions last), so four lanes over
/// quarters of it end far apart and the last ones walk alone; adjacent segments have about the
/// same density, so the lanes of a group end close together.
const GROUPS: usize = 8;
/// Segments of the build.
const SEGMENTS: usize = GROUPS * LANES;
/// Below this section size a single walk is cheap enough.
const LANES_MIN_LEN: usize = 64 * 1024;
/// Records that must decode plausibly in a row from a guessed lane start.
const PLAUSIBLE_RUN: usize = 16;
/// How far past its nominal start a lane start is searched for.
const LANE_SEARCH_LEN: usize = 16 * 1024;

/// [`RECORD_LAYOUT`] in words, one `u32` per raw kind: words without entries in the low byte,
/// words per entry above it; 0 for kinds btfgen does not know. One load and a multiply size a
/// record, which keeps the walk's step short (the lanes make it throughput-bound, not
/// latency-bound).
const RECORD_WORDS: [u32; 32] = {
    let mut table = [0u32; 32];
    let mut raw = 0;
    while raw < 32 {
        let (len, per_entry) = RECORD_LAYOUT[raw];
        if len != 0 {
            table[raw] = (len as u32 / 4) | ((per_entry as u32 / 4) << 8);
        }
        raw += 1;
    }
    table
};

/// `(length, info)` of the record at `pos` if its kind is one btfgen knows, whether or not the
/// record fits in the section: the step of the interleaved walks, which prove the bounds by
/// ending exactly where the next lane starts.
#[inline(always)]
fn record_unbounded<E: Endian>(types: &[u8], pos: usize, endian: E) -> Option<(usize, u32)> {
    let b = types.get(pos + 4..pos + 8)?;
    let info = endian.read_u32([b[0], b[1], b[2], b[3]]);
    let words = RECORD_WORDS[((info >> 24) & 0x1f) as usize];
    if words == 0 {
        return None;
    }
    let len = 4 * ((words & 0xff) + (words >> 8) * (info & 0xffff)) as usize;
    Some((len, info))
}

/// `(length, info)` of the record at `pos`: `None` for an unknown kind or a record running
/// past the section.
#[inline(always)]
pub(super) fn record_at<E: Endian>(types: &[u8], pos: usize, endian: E) -> Option<(usize, u32)> {
    let (len, info) = record_unbounded(types, pos, endian)?;
    (types.len() - pos >= len).then_some((len, info))
}

/// [`record_at`], also sizing the kinds btfgen does not know by `layout`, if given.
#[inline(always)]
fn record_in<E: Endian>(
    types: &[u8],
    pos: usize,
    endian: E,
    layout: Option<&Layout>,
) -> Option<(usize, u32)> {
    record_at(types, pos, endian).or_else(|| {
        let b = types.get(pos + 4..pos + 8)?;
        let info = endian.read_u32([b[0], b[1], b[2], b[3]]);
        let len = layout?.record_len(info)?;
        (types.len() - pos >= len).then_some((len, info))
    })
}

/// Whether raw kind `raw` is one btfgen knows.
fn is_known(raw: u32) -> bool {
    RECORD_LAYOUT[(raw & 0x1f) as usize].0 != 0
}

/// Which records a build also picks out: those of `kinds` (a bit test in the walk's loop) for
/// which `test(pos, info)` holds (called for those kinds only).
pub(super) struct Keep<F> {
    pub(super) kinds: KindSet,
    pub(super) test: F,
}

impl<F: Fn(usize, u32) -> bool> Keep<F> {
    #[inline(always)]
    fn keeps(&self, pos: usize, info: u32) -> bool {
        self.kinds.contains_raw((info >> 24) & 0x1f) && (self.test)(pos, info)
    }
}

/// Offsets of every [`STRIDE`]-th record of the type section.
#[derive(Debug, Default)]
pub(super) struct TypeIndex {
    /// Checkpoints of each segment, one segment after another.
    checkpoints: Vec<u32>,
    /// Per segment (one per lane of each group of the build, or just one), in section order:
    /// index of its first record, index of its first checkpoint. A segment has a checkpoint at
    /// each of its records whose index within the segment is a multiple of [`STRIDE`].
    segments: Vec<(u32, u32)>,
    /// Number of records.
    count: u32,
    /// Records per checkpoint as a shift, `log2(STRIDE)` or 0 (every record) for a small
    /// section: a lookup shifts and masks where a division by a stride read from memory would
    /// cost more than the rest of it.
    stride_shift: u32,
    /// The layout section, kept only when a record is of a kind btfgen does not know: walks
    /// then size records with it.
    layout: Option<Layout>,
    /// Offsets found by walking from a checkpoint, direct-mapped by record index: `(index + 1)
    /// << 32 | offset`, 0 when empty; a walk costs ~40 times a hit. Empty for a small section
    /// (every offset is a checkpoint there). Atomic so a parsed BTF stays shareable between
    /// threads; a slot is one word, so a reader sees an index with its own offset or a miss.
    memo: Vec<AtomicU64>,
}

impl TypeIndex {
    /// Index `types` (whose first record has id `start_id`), checking every record's kind and
    /// bounds. Also returns, in order, the index of every record `keep` keeps: a scan done by
    /// the same walk.
    /// `layout` sizes the records of kinds btfgen does not know; without it they are errors.
    pub(super) fn build<F: Fn(usize, u32) -> bool>(
        types: &[u8],
        endian: Endianness,
        start_id: u32,
        keep: &Keep<F>,
        layout: Option<&Layout>,
    ) -> Result<(TypeIndex, Vec<u32>)> {
        match endian {
            Endianness::Little => build_in(types, LittleEndian, start_id, keep, layout),
            Endianness::Big => build_in(types, BigEndian, start_id, keep, layout),
        }
    }

    /// Whether some record is of a kind btfgen does not know (skipped by the layout section).
    pub(super) fn has_unknown_kinds(&self) -> bool {
        self.layout.is_some()
    }

    /// `(length, info)` of the record at `pos`, which the index was built over.
    #[inline]
    pub(super) fn record(
        &self,
        types: &[u8],
        endian: Endianness,
        pos: usize,
    ) -> Option<(usize, u32)> {
        record_in(types, pos, endian, self.layout.as_ref())
    }

    /// Why the record of `id` at `pos` does not decode ([`TypeIndex::record`] gave `None`).
    pub(super) fn bad_record(
        &self,
        types: &[u8],
        endian: Endianness,
        pos: usize,
        id: u32,
    ) -> Error {
        bad_record(types, pos, endian, id, self.layout.as_ref())
    }

    /// Number of records.
    pub(super) fn len(&self) -> u32 {
        self.count
    }

    /// Byte offset of record `index` (0-based), walking from its checkpoint (or remembered
    /// from the last such walk).
    pub(super) fn offset(&self, types: &[u8], endian: Endianness, index: u32) -> Option<usize> {
        if index >= self.count {
            return None;
        }
        let key = u64::from(index) + 1;
        let slot = self.memo.get(index as usize & (MEMO_LEN - 1));
        if let Some(memo) = slot.map(|s| s.load(Ordering::Relaxed))
            && memo >> 32 == key
        {
            return Some(memo as u32 as usize);
        }
        let segment = self
            .segments
            .partition_point(|s| s.0 <= index)
            .checked_sub(1)?;
        let &(first, base) = self.segments.get(segment)?;
        let local = index - first;
        let at = base as usize + (local >> self.stride_shift) as usize;
        let mut pos = *self.checkpoints.get(at)? as usize;
        let walk = local & ((1 << self.stride_shift) - 1);
        if walk == 0 {
            return Some(pos);
        }
        for _ in 0..walk {
            pos += self.record(types, endian, pos)?.0;
        }
        if let Some(slot) = slot {
            slot.store(key << 32 | pos as u64, Ordering::Relaxed);
        }
        Some(pos)
    }

    /// Call `visit(index, pos, info)` for every record, in no particular order, walking
    /// [`LANES`] parts of the section at once.
    pub(super) fn for_each_record(
        &self,
        types: &[u8],
        endian: Endianness,
        visit: impl FnMut(u32, usize, u32) -> Result<()>,
    ) -> Result<()> {
        match endian {
            Endianness::Little => self.for_each_in(types, LittleEndian, visit),
            Endianness::Big => self.for_each_in(types, BigEndian, visit),
        }
    }

    fn for_each_in<E: Endian>(
        &self,
        types: &[u8],
        endian: E,
        mut visit: impl FnMut(u32, usize, u32) -> Result<()>,
    ) -> Result<()> {
        if let Some(layout) = &self.layout {
            // The lanes know only btfgen's kinds: one walk, sized by the layout.
            let mut pos = 0;
            for index in 0..self.count {
                let (len, info) =
                    record_in(types, pos, endian, Some(layout)).ok_or_else(changed)?;
                visit(index, pos, info)?;
                pos += len;
            }
            return Ok(());
        }
        // Lane k starts at an evenly spaced checkpoint and runs to the next lane's start.
        let cuts = self.checkpoints.len();
        let mut starts = [types.len(); LANES];
        let mut firsts = [self.count; LANES];
        for (lane, (start, first)) in starts.iter_mut().zip(&mut firsts).enumerate() {
            let at = cuts * lane / LANES;
            if let Some(&pos) = self.checkpoints.get(at) {
                *start = pos as usize;
                *first = self.checkpoint_index(at);
            }
        }
        let mut ends = [types.len(); LANES];
        ends[..LANES - 1].copy_from_slice(&starts[1..]);
        let walked = walk_lanes(
            types,
            endian,
            starts,
            ends,
            |_, _, _| {},
            |lane, local, pos, info| visit(firsts[lane] + local, pos, info),
        )?;
        // The index was built from these bytes, so every walk ends where it should.
        walked.map(drop).ok_or_else(changed)
    }

    /// Record index of checkpoint `at`.
    fn checkpoint_index(&self, at: usize) -> u32 {
        let at = at as u32;
        let segment = self
            .segments
            .partition_point(|s| s.1 <= at)
            .saturating_sub(1);
        let &(first, base) = self.segments.get(segment).unwrap_or(&(0, 0));
        first + ((at - base) << self.stride_shift)
    }
}

/// A walk over an indexed section failed: only if the bytes changed since.
fn changed() -> Error {
    Error::BadType {
        id: 0,
        reason: "type section changed after indexing",
    }
}

type Built = (TypeIndex, Vec<u32>);

fn build_in<E: Endian, F: Fn(usize, u32) -> bool>(
    types: &[u8],
    endian: E,
    start_id: u32,
    keep: &Keep<F>,
    layout: Option<&Layout>,
) -> Result<Built> {
    if types.len() >= LANES_MIN_LEN
        && let Some(built) = build_lanes(types, endian, keep)?
    {
        if u64::from(start_id) + u64::from(built.0.count) > u64::from(MAX_TYPE_ID) + 1 {
            return Err(type_count_limit());
        }
        return Ok(built);
    }
    build_sequential(types, endian, start_id, keep, layout)
}

fn type_count_limit() -> Error {
    Error::Limit {
        what: "type count",
        limit: MAX_TYPE_ID as usize,
    }
}

/// The reference walk: one record after another, failing at the first bad one; records of
/// kinds btfgen does not know sized by `layout`.
fn build_sequential<E: Endian, F: Fn(usize, u32) -> bool>(
    types: &[u8],
    endian: E,
    start_id: u32,
    keep: &Keep<F>,
    layout: Option<&Layout>,
) -> Result<Built> {
    let mut kept = Vec::new();
    let stride_shift = if types.len() < LANES_MIN_LEN {
        0
    } else {
        STRIDE_SHIFT
    };
    let mut checkpoints =
        fallible::vec_with_capacity(((types.len() / TYPE_HEADER_LEN) >> stride_shift) + 1)?;
    let mut pos = 0usize;
    let mut count = 0u32;
    let mut unknown_kinds = false;
    while pos + 8 <= types.len() {
        let id = start_id.saturating_add(count);
        if id > MAX_TYPE_ID {
            return Err(type_count_limit());
        }
        let Some((len, info)) = record_in(types, pos, endian, layout) else {
            return Err(bad_record(types, pos, endian, id, layout));
        };
        unknown_kinds |= !is_known(info >> 24);
        if keep.keeps(pos, info) {
            fallible::push(&mut kept, count)?;
        }
        if count & ((1 << stride_shift) - 1) == 0 {
            // Every record is at least 12 bytes: the capacity reserved above suffices.
            checkpoints.push(pos as u32);
        }
        pos += len;
        count += 1;
    }
    if pos < types.len() {
        return Err(Error::Truncated {
            what: "BTF type header",
            offset: pos,
        });
    }
    let mut segments = Vec::new();
    fallible::push(&mut segments, (0, 0))?;
    let index = TypeIndex {
        checkpoints,
        segments,
        count,
        stride_shift,
        layout: if unknown_kinds { layout.copied() } else { None },
        memo: if stride_shift == 0 {
            Vec::new()
        } else {
            empty_memo()?
        },
    };
    Ok((index, kept))
}

/// Why the record at `pos` does not decode ([`record_in`] with `layout` gave `None`).
fn bad_record<E: Endian>(
    types: &[u8],
    pos: usize,
    endian: E,
    id: u32,
    layout: Option<&Layout>,
) -> Error {
    let info = types
        .get(pos + 4..pos + 8)
        .map_or(0, |b| endian.read_u32([b[0], b[1], b[2], b[3]]));
    let raw_kind = (info >> 24) & 0x1f;
    let described = layout.is_some_and(|l| l.describes(raw_kind));
    if raw_kind == 0 {
        // BTF_KIND_UNKN names no kind at all: never a record, layout or not.
        Error::BadType {
            id,
            reason: "unknown kind",
        }
    } else if !is_known(raw_kind) && !described {
        Error::UnknownKind { id, kind: raw_kind }
    } else if described && info & UNUSED_INFO_BITS != 0 {
        Error::BadType {
            id,
            reason: "info bits unused up to Linux 7.1 (16..23, 29..30) are set",
        }
    } else {
        Error::Truncated {
            what: "BTF type record",
            offset: pos,
        }
    }
}

/// The interleaved build, [`GROUPS`] groups of [`LANES`] segments one after another; `None`
/// when a segment start was not found or not proven.
///
/// The walk itself calls nothing (a call in the loop would push the lanes' positions out of
/// registers): it writes checkpoints, and the records of `keep`'s kinds, into scratch arrays
/// sized beforehand. `keep`'s test then runs over those records alone.
fn build_lanes<E: Endian, F: Fn(usize, u32) -> bool>(
    types: &[u8],
    endian: E,
    keep: &Keep<F>,
) -> Result<Option<Built>> {
    // bounds[s]..bounds[s + 1] is segment s.
    let mut bounds = [types.len(); SEGMENTS + 1];
    bounds[0] = 0;
    for segment in 1..SEGMENTS {
        match lane_start(types, endian, types.len() * segment / SEGMENTS) {
            Some(start) if start > bounds[segment - 1] => bounds[segment] = start,
            _ => return Ok(None),
        }
    }
    // Every record is at least 12 bytes: a segment of n bytes has at most n / 12 + 1 records.
    let most_checkpoints = |bytes: usize| bytes / TYPE_HEADER_LEN / STRIDE as usize + 1;
    let widest = bounds.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    let mut checkpoints = fallible::vec_with_capacity(most_checkpoints(types.len()) + SEGMENTS)?;
    let mut segments = fallible::vec_with_capacity(SEGMENTS)?;
    let mut kept = Vec::new();
    // Checkpoint `c` of lane `k` of the group being walked at `LANES * c + k`.
    let mut lane_checkpoints = zeroed::<u32>(LANES * most_checkpoints(widest))?;
    // The group's records of `keep`'s kinds: (position, index within the lane * LANES + lane),
    // as many as fit; grown and the group walked again when more were found.
    let mut of_kinds = zeroed::<(u32, u32)>(4096)?;
    let mut group = 0;
    let mut first = 0u32;
    while group < GROUPS {
        let mut starts = [0; LANES];
        starts.copy_from_slice(&bounds[group * LANES..][..LANES]);
        let mut ends = [0; LANES];
        ends.copy_from_slice(&bounds[group * LANES + 1..][..LANES]);
        let mut found = 0usize;
        let mut overflow = false;
        let walked = walk_lanes(
            types,
            endian,
            starts,
            ends,
            |lane, local, pos| match lane_checkpoints
                .get_mut(LANES * (local / STRIDE) as usize + lane)
            {
                Some(slot) => *slot = pos as u32,
                // Cannot happen (the array holds a segment's most checkpoints); were it to,
                // the sequential build would run instead.
                None => overflow = true,
            },
            |lane, local, pos, info| {
                if keep.kinds.contains_raw((info >> 24) & 0x1f) {
                    if let Some(slot) = of_kinds.get_mut(found) {
                        *slot = (pos as u32, local * LANES as u32 + lane as u32);
                    }
                    found += 1;
                }
                Ok(())
            },
        )?;
        let Some(counts) = walked.filter(|_| !overflow) else {
            return Ok(None);
        };
        if found > of_kinds.len() {
            of_kinds = zeroed(found)?;
            continue;
        }
        let mut lane_kept: [Vec<u32>; LANES] = Default::default();
        for &(pos, tag) in &of_kinds[..found] {
            let info = read_info(types, pos as usize, endian);
            if (keep.test)(pos as usize, info) {
                fallible::push(&mut lane_kept[tag as usize % LANES], tag / LANES as u32)?;
            }
        }
        for lane in 0..LANES {
            fallible::push(&mut segments, (first, checkpoints.len() as u32))?;
            let cuts = counts[lane].div_ceil(STRIDE) as usize;
            checkpoints.try_reserve(cuts)?;
            checkpoints.extend(lane_checkpoints.iter().skip(lane).step_by(LANES).take(cuts));
            kept.try_reserve(lane_kept[lane].len())?;
            kept.extend(lane_kept[lane].iter().map(|local| first + local));
            first = first.saturating_add(counts[lane]);
        }
        group += 1;
    }
    let index = TypeIndex {
        checkpoints,
        segments,
        count: first,
        stride_shift: STRIDE_SHIFT,
        layout: None,
        memo: empty_memo()?,
    };
    Ok(Some((index, kept)))
}

/// [`TypeIndex`]'s memo, every slot empty.
fn empty_memo() -> Result<Vec<AtomicU64>> {
    let mut memo = fallible::vec_with_capacity(MEMO_LEN)?;
    memo.extend((0..MEMO_LEN).map(|_| AtomicU64::new(0)));
    Ok(memo)
}

/// A vector of `len` zeros (`T::default()`), allocated fallibly.
fn zeroed<T: Default + Clone>(len: usize) -> Result<Vec<T>> {
    let mut vec = fallible::vec_with_capacity(len)?;
    vec.resize(len, T::default());
    Ok(vec)
}

/// The info word of the record at `pos`, which a walk has read before (0 if out of range).
fn read_info<E: Endian>(types: &[u8], pos: usize, endian: E) -> u32 {
    types
        .get(pos + 4..pos + 8)
        .map_or(0, |b| endian.read_u32([b[0], b[1], b[2], b[3]]))
}

/// A position at or after `from` from which [`PLAUSIBLE_RUN`] records decode as a valid BTF
/// would have them: known kinds, unused `info` bits clear, no entries for kinds without any.
/// A guess only; the build proves it.
fn lane_start<E: Endian>(types: &[u8], endian: E, from: usize) -> Option<usize> {
    let plausible = |mut pos: usize| {
        for _ in 0..PLAUSIBLE_RUN {
            let Some((len, info)) = record_at(types, pos, endian) else {
                return false;
            };
            let raw_kind = (info >> 24) & 0x1f;
            // FUNC keeps its linkage in vlen; the other kinds without entries have vlen 0.
            let no_entries = RECORD_LAYOUT[raw_kind as usize].1 == 0 && raw_kind != 12;
            if info & 0x60ff_0000 != 0 || (no_entries && info & 0xffff != 0) {
                return false;
            }
            pos += len;
        }
        true
    };
    let start = from.next_multiple_of(4);
    (start..types.len().min(start + LANE_SEARCH_LEN))
        .step_by(4)
        .find(|&pos| plausible(pos))
}

/// Walk [`LANES`] runs of records at once, lane `k` from `starts[k]` to `ends[k]`, calling
/// `checkpoint(k, index within the lane, pos)` for each record whose index within its lane is a multiple of
/// [`STRIDE`], then `visit(k, index within the lane, pos, info)` for every record. The per-lane
/// record counts, or `None` if a lane met a record of a kind btfgen does not know or did not
/// end exactly at its end (which also catches a record running past the section).
#[inline(always)]
fn walk_lanes<E: Endian>(
    types: &[u8],
    endian: E,
    starts: [usize; LANES],
    ends: [usize; LANES],
    mut checkpoint: impl FnMut(usize, u32, usize),
    mut visit: impl FnMut(usize, u32, usize, u32) -> Result<()>,
) -> Result<Option<[u32; LANES]>> {
    // Each lane's position in its own variable (an array indexed in a loop stays in memory,
    // and its store-to-load round trips serialize the lanes).
    let [mut p0, mut p1, mut p2, mut p3] = starts;
    let [e0, e1, e2, e3] = ends;
    macro_rules! step {
        ($lane:literal, $pos:ident, $local:expr) => {
            let Some((len, info)) = record_unbounded(types, $pos, endian) else {
                return Ok(None);
            };
            visit($lane, $local, $pos, info)?;
            $pos += len;
        };
    }
    // All lanes in step while none has ended: one record count for all of them. Ends clamped
    // so that every header read is in bounds (which spares the check): a lane stopped short
    // walks the rest alone.
    let limit = types.len().saturating_sub(7);
    let [c0, c1, c2, c3] = ends.map(|end| end.min(limit));
    let mut round = 0u32;
    while p0 < c0 && p1 < c1 && p2 < c2 && p3 < c3 {
        if round % STRIDE == 0 {
            checkpoint(0, round, p0);
            checkpoint(1, round, p1);
            checkpoint(2, round, p2);
            checkpoint(3, round, p3);
        }
        step!(0, p0, round);
        step!(1, p1, round);
        step!(2, p2, round);
        step!(3, p3, round);
        round += 1;
    }
    // Then each lane's rest alone.
    let mut counts = [round; LANES];
    macro_rules! rest {
        ($lane:literal, $pos:ident, $end:ident) => {
            while $pos < $end {
                let local = counts[$lane];
                if local % STRIDE == 0 {
                    checkpoint($lane, local, $pos);
                }
                step!($lane, $pos, local);
                counts[$lane] = local + 1;
            }
        };
    }
    rest!(0, p0, e0);
    rest!(1, p1, e1);
    rest!(2, p2, e2);
    rest!(3, p3, e3);
    Ok(([p0, p1, p2, p3] == ends).then_some(counts))
}

#[cfg(test)]
mod tests;
