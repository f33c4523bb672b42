//! The type index: where each type's record starts in the type section.
//!
//! Records have variable lengths, so reaching record `n` means walking the `n` before it: a
//! chain of dependent loads, ~14 cycles a record, ~0.7 ms for the 126,622 types of a 6.18
//! vmlinux. Two things make that cheaper:
//!
//! - The index keeps the offset of every [`STRIDE`]-th record only; a lookup walks at most
//!   `STRIDE - 1` records from there. A dense `u32` per type cost as much again in page faults
//!   on a fresh 500 KiB array as the walk itself.
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
use object::endian::{BigEndian, Endian, LittleEndian};

/// One checkpoint per this many records.
pub(super) const STRIDE: u32 = 8;
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
    /// The layout section, kept only when a record is of a kind btfgen does not know: walks
    /// then size records with it.
    layout: Option<Layout>,
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

    /// Byte offset of record `index` (0-based), walking from its checkpoint.
    pub(super) fn offset(&self, types: &[u8], endian: Endianness, index: u32) -> Option<usize> {
        if index >= self.count {
            return None;
        }
        let segment = self
            .segments
            .partition_point(|s| s.0 <= index)
            .checked_sub(1)?;
        let &(first, base) = self.segments.get(segment)?;
        let local = index - first;
        let at = base as usize + (local / STRIDE) as usize;
        let mut pos = *self.checkpoints.get(at)? as usize;
        for _ in 0..local % STRIDE {
            pos += self.record(types, endian, pos)?.0;
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
        first + (at - base) * STRIDE
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
    let mut checkpoints =
        fallible::vec_with_capacity(types.len() / TYPE_HEADER_LEN / STRIDE as usize + 1)?;
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
        if count % STRIDE == 0 {
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
        layout: if unknown_kinds { layout.copied() } else { None },
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
        layout: None,
    };
    Ok(Some((index, kept)))
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
mod tests {
    use super::*;
    use crate::btf::Kind;
    use alloc::vec;

    const NOTHING: Keep<fn(usize, u32) -> bool> = Keep {
        kinds: KindSet::EMPTY,
        test: |_, _| false,
    };

    /// A type section of `count` pseudo-random valid records (seeded), and each record's
    /// offset and info word.
    fn section(seed: u64, count: usize, endian: Endianness) -> (Vec<u8>, Vec<(usize, u32)>) {
        let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        let mut next = move |n: u32| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % u64::from(n)) as u32
        };
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
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
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
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
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
}
