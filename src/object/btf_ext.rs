//! `.BTF.ext`: per-section func_info, line_info and CO-RE relocation records.
//!
//! Layout, every integer in the object's byte order:
//!
//! ```text
//! header:      magic u16 (0xeB9F), version u8 (1), flags u8 (0), hdr_len u32,
//!              func_info_off u32, func_info_len u32, line_info_off u32, line_info_len u32,
//!              [core_relo_off u32, core_relo_len u32]          (when hdr_len >= 32)
//! sub-section: at hdr_len + *_off, *_len bytes long (empty when the length is 0):
//!              rec_size u32, then until the end:
//!              { sec_name_off u32, num_info u32, num_info records of rec_size bytes }
//! ```
//!
//! [`BtfExt::parse`] validates all of it up front without allocating, so the iterators
//! afterwards cannot fail. Records larger than this crate's structs (a newer producer) are read
//! by their known prefix.

use crate::error::{Error, Result};
use ::object::endian::{Endian, Endianness};
use core::marker::PhantomData;

/// `.BTF.ext` magic, the same as BTF's.
pub const BTF_EXT_MAGIC: u16 = 0xeb9f;
/// The only `.BTF.ext` version there is.
pub const BTF_EXT_VERSION: u8 = 1;
/// Header length up to and including `line_info_len`; shorter headers are rejected.
const HEADER_MIN_LEN: u32 = 24;
/// Header length up to and including `core_relo_len`; shorter headers have no CO-RE records.
const HEADER_CORE_RELO_LEN: u32 = 32;
/// `struct btf_ext_info_sec` without its records: `sec_name_off`, `num_info`.
const SEC_HEADER_LEN: usize = 8;
/// Longest known record prefix read by [`ExtRecord`] decoding (`bpf_core_relo`, line_info).
const MAX_KNOWN_RECORD: usize = 16;

/// A parsed, validated `.BTF.ext` section, borrowing its bytes.
#[derive(Clone, Copy, Debug)]
pub struct BtfExt<'a> {
    data: &'a [u8],
    endian: Endianness,
    func_info: RawInfo<'a>,
    line_info: RawInfo<'a>,
    core_relo: RawInfo<'a>,
}

/// One validated sub-section: its section entries after `rec_size`.
#[derive(Clone, Copy, Debug, Default)]
struct RawInfo<'a> {
    /// The `{ sec_name_off, num_info, records }` entries.
    entries: &'a [u8],
    /// Byte offset of `entries` within `.BTF.ext`.
    offset: usize,
    /// Record size; at least the record's `MIN_SIZE` unless `entries` is empty.
    rec_size: usize,
}

/// What differs between the three sub-sections.
struct SubSection {
    /// Header offset of its `*_off` field; `*_len` follows.
    field: usize,
    /// Size of its C record struct.
    min_rec_size: u32,
    /// Error reasons, each naming the sub-section.
    why: Reasons,
}

/// Error reasons for one sub-section.
struct Reasons {
    misaligned: &'static str,
    out_of_bounds: &'static str,
    no_rec_size: &'static str,
    rec_size_small: &'static str,
    rec_size_unaligned: &'static str,
    no_sections: &'static str,
    sec_header_truncated: &'static str,
    zero_records: &'static str,
    records_out_of_bounds: &'static str,
}

macro_rules! reasons {
    ($what:literal, $min:literal) => {
        Reasons {
            misaligned: concat!($what, " offset is not 4-byte aligned"),
            out_of_bounds: concat!($what, " extends past the end of .BTF.ext"),
            no_rec_size: concat!($what, " is too short to hold its record size"),
            rec_size_small: concat!($what, " record size is smaller than ", $min, " bytes"),
            rec_size_unaligned: concat!($what, " record size is not a multiple of 4"),
            no_sections: concat!($what, " has a record size but no sections"),
            sec_header_truncated: concat!($what, " section header is truncated"),
            zero_records: concat!($what, " section has zero records"),
            records_out_of_bounds: concat!($what, " section records extend past its end"),
        }
    };
}

const FUNC_INFO: SubSection = SubSection {
    field: 8,
    min_rec_size: FuncInfo::MIN_SIZE as u32,
    why: reasons!("func_info", "8"),
};
const LINE_INFO: SubSection = SubSection {
    field: 16,
    min_rec_size: LineInfo::MIN_SIZE as u32,
    why: reasons!("line_info", "16"),
};
const CORE_RELO: SubSection = SubSection {
    field: 24,
    min_rec_size: CoreRelo::MIN_SIZE as u32,
    why: reasons!("core_relo", "16"),
};

fn bad(reason: &'static str, offset: usize) -> Error {
    Error::BadBtfExt { reason, offset }
}

fn read_u32(data: &[u8], pos: usize, endian: Endianness) -> Option<u32> {
    let bytes = data.get(pos..)?.first_chunk::<4>()?;
    Some(endian.read_u32(*bytes))
}

impl<'a> BtfExt<'a> {
    /// Parse and validate `.BTF.ext` bytes in byte order `endian` (the ELF header's).
    ///
    /// Errors are [`Error::BadBtfExt`] with the byte offset of the offending field.
    pub fn parse(data: &'a [u8], endian: Endianness) -> Result<BtfExt<'a>> {
        let preamble = data
            .first_chunk::<8>()
            .ok_or(bad("shorter than the 8-byte header", 0))?;
        let [m0, m1, version, flags, h0, h1, h2, h3] = *preamble;
        let magic = endian.read_u16([m0, m1]);
        if magic != BTF_EXT_MAGIC {
            let reason = if magic == BTF_EXT_MAGIC.swap_bytes() {
                "magic is byte-swapped: .BTF.ext byte order differs from the ELF's"
            } else {
                "bad magic"
            };
            return Err(bad(reason, 0));
        }
        if version != BTF_EXT_VERSION {
            return Err(bad("unsupported version", 2));
        }
        if flags != 0 {
            return Err(bad("unsupported flags", 3));
        }
        let hdr_len = endian.read_u32([h0, h1, h2, h3]);
        if hdr_len < HEADER_MIN_LEN {
            return Err(bad("header length too short for the line_info fields", 4));
        }
        let hdr_end = usize::try_from(hdr_len).map_err(|_| bad("header length too large", 4))?;
        if hdr_end > data.len() {
            return Err(bad("header length extends past the end of .BTF.ext", 4));
        }
        // As libbpf: a header without any sub-section data is malformed.
        if hdr_end == data.len() {
            return Err(bad("no data after the header", hdr_end));
        }
        let func_info = parse_info(data, endian, hdr_end, &FUNC_INFO)?;
        let line_info = parse_info(data, endian, hdr_end, &LINE_INFO)?;
        let core_relo = if hdr_len >= HEADER_CORE_RELO_LEN {
            parse_info(data, endian, hdr_end, &CORE_RELO)?
        } else {
            RawInfo::default()
        };
        Ok(BtfExt {
            data,
            endian,
            func_info,
            line_info,
            core_relo,
        })
    }

    /// The raw section bytes.
    pub fn raw(&self) -> &'a [u8] {
        self.data
    }

    /// Byte order of the section.
    pub fn endian(&self) -> Endianness {
        self.endian
    }

    /// `bpf_func_info` records: one per (sub)program, giving its BTF `FUNC` type.
    pub fn func_info(&self) -> ExtInfo<'a, FuncInfo> {
        ExtInfo::new(self.func_info, self.endian)
    }

    /// `bpf_line_info` records: source line of instructions.
    pub fn line_info(&self) -> ExtInfo<'a, LineInfo> {
        ExtInfo::new(self.line_info, self.endian)
    }

    /// `bpf_core_relo` records: the CO-RE relocations (empty when the header predates them).
    pub fn core_relos(&self) -> ExtInfo<'a, CoreRelo> {
        ExtInfo::new(self.core_relo, self.endian)
    }
}

/// Validate sub-section `sub`, described by header fields within `data[..hdr_end]`.
fn parse_info<'a>(
    data: &'a [u8],
    endian: Endianness,
    hdr_end: usize,
    sub: &SubSection,
) -> Result<RawInfo<'a>> {
    let (field, why) = (sub.field, &sub.why);
    let header_field = |pos| read_u32(data, pos, endian).ok_or(bad("header truncated", pos));
    let (off, len) = (header_field(field)?, header_field(field + 4)?);
    if len == 0 {
        return Ok(RawInfo::default());
    }
    if off % 4 != 0 {
        return Err(bad(why.misaligned, field));
    }
    let start = usize::try_from(off)
        .ok()
        .and_then(|off| hdr_end.checked_add(off));
    let end = start
        .zip(usize::try_from(len).ok())
        .and_then(|(s, l)| s.checked_add(l));
    let (Some(start), Some(body)) = (start, end.and_then(|end| data.get(start?..end))) else {
        return Err(bad(why.out_of_bounds, field));
    };
    let rec_size = read_u32(body, 0, endian).ok_or(bad(why.no_rec_size, start))?;
    if rec_size < sub.min_rec_size {
        return Err(bad(why.rec_size_small, start));
    }
    if rec_size % 4 != 0 {
        return Err(bad(why.rec_size_unaligned, start));
    }
    let entries = body.get(4..).unwrap_or_default();
    if entries.is_empty() {
        return Err(bad(why.no_sections, start + 4));
    }
    let mut pos = 0;
    while let Some(rest) = entries.get(pos..).filter(|rest| !rest.is_empty()) {
        let at = start + 4 + pos;
        let num_info = match read_u32(rest, 4, endian) {
            Some(n) if rest.len() >= SEC_HEADER_LEN => n,
            _ => return Err(bad(why.sec_header_truncated, at)),
        };
        if num_info == 0 {
            return Err(bad(why.zero_records, at + 4));
        }
        // u32 * u32 cannot overflow u64; the comparison bounds the usize conversion.
        let bytes = u64::from(num_info) * u64::from(rec_size);
        let left = rest.len() - SEC_HEADER_LEN;
        match usize::try_from(bytes) {
            Ok(bytes) if bytes <= left => pos += SEC_HEADER_LEN + bytes,
            _ => return Err(bad(why.records_out_of_bounds, at + 4)),
        }
    }
    Ok(RawInfo {
        entries,
        offset: start + 4,
        rec_size: rec_size as usize,
    })
}

/// A `.BTF.ext` record type. Sealed: implemented by [`FuncInfo`], [`LineInfo`], [`CoreRelo`].
pub trait ExtRecord: Copy + 'static + private::Sealed {
    /// Size of the C struct, the smallest record size accepted.
    const MIN_SIZE: usize;
}

mod private {
    /// Decoding, kept out of the public API.
    pub trait Sealed: Sized {
        /// Build the record from the first four `u32` words of its bytes (zero-padded past
        /// the record's end, which validation guarantees is beyond the fields read).
        fn from_words(words: [u32; 4]) -> Self;
    }
}

/// `struct bpf_func_info` as stored in an object file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FuncInfo {
    /// Byte offset of the function's first instruction within its ELF section.
    pub insn_off: u32,
    /// BTF id of the function's `FUNC` type in the object's `.BTF`.
    pub type_id: u32,
}

/// `struct bpf_line_info` as stored in an object file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineInfo {
    /// Byte offset of the instruction within its ELF section.
    pub insn_off: u32,
    /// `.BTF` string offset of the source file name.
    pub file_name_off: u32,
    /// `.BTF` string offset of the source line text.
    pub line_off: u32,
    /// Line number (upper 22 bits) and column (lower 10 bits).
    pub line_col: u32,
}

/// `struct bpf_core_relo`: one CO-RE relocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoreRelo {
    /// Byte offset of the relocated instruction within its ELF section.
    pub insn_off: u32,
    /// Local (object `.BTF`) type id the access string starts from.
    pub type_id: u32,
    /// `.BTF` string offset of the access string (e.g. `"0:1:2"`).
    pub access_str_off: u32,
    /// `enum bpf_core_relo_kind`.
    pub kind: u32,
}

impl private::Sealed for FuncInfo {
    fn from_words([insn_off, type_id, _, _]: [u32; 4]) -> Self {
        FuncInfo { insn_off, type_id }
    }
}

impl ExtRecord for FuncInfo {
    const MIN_SIZE: usize = 8;
}

impl private::Sealed for LineInfo {
    fn from_words([insn_off, file_name_off, line_off, line_col]: [u32; 4]) -> Self {
        LineInfo {
            insn_off,
            file_name_off,
            line_off,
            line_col,
        }
    }
}

impl ExtRecord for LineInfo {
    const MIN_SIZE: usize = 16;
}

impl private::Sealed for CoreRelo {
    fn from_words([insn_off, type_id, access_str_off, kind]: [u32; 4]) -> Self {
        CoreRelo {
            insn_off,
            type_id,
            access_str_off,
            kind,
        }
    }
}

impl ExtRecord for CoreRelo {
    const MIN_SIZE: usize = 16;
}

fn decode<T: ExtRecord>(record: &[u8], endian: Endianness) -> T {
    let mut prefix = [0u8; MAX_KNOWN_RECORD];
    prefix
        .iter_mut()
        .zip(record)
        .for_each(|(dst, src)| *dst = *src);
    let [
        a0,
        a1,
        a2,
        a3,
        b0,
        b1,
        b2,
        b3,
        c0,
        c1,
        c2,
        c3,
        d0,
        d1,
        d2,
        d3,
    ] = prefix;
    T::from_words([
        endian.read_u32([a0, a1, a2, a3]),
        endian.read_u32([b0, b1, b2, b3]),
        endian.read_u32([c0, c1, c2, c3]),
        endian.read_u32([d0, d1, d2, d3]),
    ])
}

/// One sub-section of `.BTF.ext` (func_info, line_info or core_relo): a list of per-ELF-section
/// record groups.
#[derive(Debug)]
pub struct ExtInfo<'a, T> {
    raw: RawInfo<'a>,
    endian: Endianness,
    record: PhantomData<fn() -> T>,
}

impl<T> Clone for ExtInfo<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for ExtInfo<'_, T> {}

impl<'a, T: ExtRecord> ExtInfo<'a, T> {
    fn new(raw: RawInfo<'a>, endian: Endianness) -> Self {
        ExtInfo {
            raw,
            endian,
            record: PhantomData,
        }
    }

    /// Whether the sub-section is absent or empty.
    pub fn is_empty(&self) -> bool {
        self.raw.entries.is_empty()
    }

    /// The record size the producer used (0 when empty); at least `T::MIN_SIZE` otherwise.
    pub fn record_size(&self) -> usize {
        self.raw.rec_size
    }

    /// The per-section record groups, in file order.
    pub fn sections(&self) -> ExtSections<'a, T> {
        ExtSections {
            rest: self.raw.entries,
            offset: self.raw.offset,
            rec_size: self.raw.rec_size,
            endian: self.endian,
            record: PhantomData,
        }
    }
}

impl<'a, T: ExtRecord> IntoIterator for ExtInfo<'a, T> {
    type Item = ExtSection<'a, T>;
    type IntoIter = ExtSections<'a, T>;

    fn into_iter(self) -> ExtSections<'a, T> {
        self.sections()
    }
}

/// Iterator over the record groups of an [`ExtInfo`].
#[derive(Debug)]
pub struct ExtSections<'a, T> {
    rest: &'a [u8],
    offset: usize,
    rec_size: usize,
    endian: Endianness,
    record: PhantomData<fn() -> T>,
}

impl<'a, T: ExtRecord> Iterator for ExtSections<'a, T> {
    type Item = ExtSection<'a, T>;

    fn next(&mut self) -> Option<ExtSection<'a, T>> {
        let (header, tail) = self.rest.split_first_chunk::<SEC_HEADER_LEN>()?;
        let [n0, n1, n2, n3, c0, c1, c2, c3] = *header;
        let num_info = self.endian.read_u32([c0, c1, c2, c3]) as usize;
        // Parsing checked every group fits; stop rather than panic if that ever fails.
        let Some((records, rest)) = num_info
            .checked_mul(self.rec_size)
            .and_then(|len| tail.split_at_checked(len))
        else {
            self.rest = &[];
            return None;
        };
        let section = ExtSection {
            sec_name_off: self.endian.read_u32([n0, n1, n2, n3]),
            offset: self.offset,
            records,
            rec_size: self.rec_size,
            endian: self.endian,
            record: PhantomData,
        };
        self.offset += SEC_HEADER_LEN + records.len();
        self.rest = rest;
        Some(section)
    }
}

/// The records of one ELF section within an [`ExtInfo`].
#[derive(Debug)]
pub struct ExtSection<'a, T> {
    /// `.BTF` string offset of the ELF section name.
    pub sec_name_off: u32,
    /// Byte offset of this group's header (`sec_name_off`) within `.BTF.ext`.
    pub offset: usize,
    records: &'a [u8],
    rec_size: usize,
    endian: Endianness,
    record: PhantomData<fn() -> T>,
}

impl<T> Clone for ExtSection<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for ExtSection<'_, T> {}

impl<'a, T: ExtRecord> ExtSection<'a, T> {
    /// Number of records (`num_info`).
    pub fn len(&self) -> usize {
        self.records.len().checked_div(self.rec_size).unwrap_or(0)
    }

    /// Whether there are no records (never true for a parsed `.BTF.ext`).
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Record `index`, or `None` past the end.
    pub fn get(&self, index: usize) -> Option<T> {
        let start = index.checked_mul(self.rec_size)?;
        let record = self.records.get(start..start.checked_add(self.rec_size)?)?;
        Some(decode(record, self.endian))
    }

    /// Byte offset of record `index` within `.BTF.ext`, for error messages.
    pub fn record_offset(&self, index: usize) -> usize {
        index
            .saturating_mul(self.rec_size)
            .saturating_add(self.offset + SEC_HEADER_LEN)
    }

    /// The records in order.
    pub fn records(&self) -> ExtRecords<'a, T> {
        ExtRecords {
            rest: self.records,
            rec_size: self.rec_size,
            endian: self.endian,
            record: PhantomData,
        }
    }

    /// `(index within this section, record)` pairs; the index is what libbpf reports as the
    /// relocation number.
    pub fn indexed(&self) -> impl Iterator<Item = (u32, T)> + use<'a, T> {
        (0u32..).zip(self.records())
    }
}

/// Iterator over the records of an [`ExtSection`].
#[derive(Debug)]
pub struct ExtRecords<'a, T> {
    rest: &'a [u8],
    rec_size: usize,
    endian: Endianness,
    record: PhantomData<fn() -> T>,
}

impl<T: ExtRecord> Iterator for ExtRecords<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        if self.rec_size == 0 {
            return None;
        }
        let (record, rest) = self.rest.split_at_checked(self.rec_size)?;
        self.rest = rest;
        Some(decode(record, self.endian))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.rest.len().checked_div(self.rec_size).unwrap_or(0);
        (n, Some(n))
    }
}

impl<T: ExtRecord> ExactSizeIterator for ExtRecords<'_, T> {}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    const BOTH: [Endianness; 2] = [Endianness::Little, Endianness::Big];

    /// One sub-section to build: record size and `(sec_name_off, records as u32 words)`.
    struct Sub {
        rec_size: u32,
        sections: Vec<(u32, Vec<Vec<u32>>)>,
    }

    fn put(out: &mut Vec<u8>, endian: Endianness, v: u32) {
        out.extend_from_slice(&endian.write_u32(v));
    }

    fn sub_bytes(sub: &Sub, endian: Endianness) -> Vec<u8> {
        let mut out = Vec::new();
        put(&mut out, endian, sub.rec_size);
        for (name, records) in &sub.sections {
            put(&mut out, endian, *name);
            put(&mut out, endian, records.len() as u32);
            for record in records {
                let start = out.len();
                for w in record {
                    put(&mut out, endian, *w);
                }
                out.resize(start + sub.rec_size as usize, 0xaa);
            }
        }
        out
    }

    /// A `.BTF.ext` with the sub-sections laid out back to back after a `hdr_len` header.
    fn build(endian: Endianness, hdr_len: u32, subs: [Option<&Sub>; 3]) -> Vec<u8> {
        let bodies: Vec<Vec<u8>> = subs
            .iter()
            .map(|s| s.map(|s| sub_bytes(s, endian)).unwrap_or_default())
            .collect();
        let mut out = Vec::new();
        out.extend_from_slice(&endian.write_u16(BTF_EXT_MAGIC));
        out.extend_from_slice(&[BTF_EXT_VERSION, 0]);
        put(&mut out, endian, hdr_len);
        let mut off = 0u32;
        for body in &bodies {
            put(&mut out, endian, off);
            put(&mut out, endian, body.len() as u32);
            off += body.len() as u32;
        }
        out.resize(hdr_len as usize, 0);
        for body in &bodies {
            out.extend_from_slice(body);
        }
        out
    }

    fn func_sub() -> Sub {
        Sub {
            rec_size: 8,
            sections: vec![(1, vec![vec![0, 5]]), (9, vec![vec![0, 6], vec![64, 7]])],
        }
    }

    fn line_sub() -> Sub {
        Sub {
            rec_size: 16,
            sections: vec![(1, vec![vec![0, 20, 30, (12 << 10) | 3]])],
        }
    }

    fn core_sub() -> Sub {
        Sub {
            rec_size: 16,
            sections: vec![(
                9,
                vec![vec![8, 2, 40, 0], vec![24, 3, 44, 1], vec![48, 2, 40, 2]],
            )],
        }
    }

    fn sample(endian: Endianness) -> Vec<u8> {
        build(
            endian,
            32,
            [Some(&func_sub()), Some(&line_sub()), Some(&core_sub())],
        )
    }

    #[test]
    fn parses_all_sub_sections() {
        for endian in BOTH {
            let data = sample(endian);
            let ext = BtfExt::parse(&data, endian).unwrap();
            assert_eq!(ext.endian(), endian);
            assert_eq!(ext.raw().len(), data.len());

            let funcs: Vec<_> = ext.func_info().sections().collect();
            assert_eq!(funcs.len(), 2);
            assert_eq!(funcs[0].sec_name_off, 1);
            assert_eq!(funcs[0].offset, 32 + 4);
            assert_eq!(funcs[1].sec_name_off, 9);
            assert_eq!(funcs[1].offset, 32 + 4 + 8 + 8);
            assert_eq!(funcs[1].len(), 2);
            assert_eq!(
                funcs[1].get(1),
                Some(FuncInfo {
                    insn_off: 64,
                    type_id: 7
                })
            );
            assert_eq!(funcs[1].get(2), None);
            assert_eq!(funcs[1].record_offset(1), 32 + 4 + 8 + 8 + 8 + 8);

            let lines: Vec<_> = ext
                .line_info()
                .sections()
                .flat_map(|s| s.records())
                .collect();
            assert_eq!(
                lines,
                [LineInfo {
                    insn_off: 0,
                    file_name_off: 20,
                    line_off: 30,
                    line_col: (12 << 10) | 3
                }]
            );

            let core = ext.core_relos();
            assert_eq!(core.record_size(), 16);
            let sec = core.sections().next().unwrap();
            assert_eq!(sec.sec_name_off, 9);
            let relos: Vec<_> = sec.indexed().collect();
            assert_eq!(relos.len(), 3);
            assert_eq!(
                relos[2],
                (
                    2,
                    CoreRelo {
                        insn_off: 48,
                        type_id: 2,
                        access_str_off: 40,
                        kind: 2
                    }
                )
            );
            assert_eq!(sec.records().len(), 3);
        }
    }

    #[test]
    fn short_header_has_no_core_relos() {
        for endian in BOTH {
            let data = build(endian, 24, [Some(&func_sub()), Some(&line_sub()), None]);
            let ext = BtfExt::parse(&data, endian).unwrap();
            assert!(ext.core_relos().is_empty());
            assert_eq!(ext.core_relos().sections().count(), 0);
            assert_eq!(ext.func_info().sections().count(), 2);
        }
    }

    #[test]
    fn longer_header_and_records_are_forward_compatible() {
        for endian in BOTH {
            let func = Sub {
                rec_size: 12,
                ..func_sub()
            };
            let core = Sub {
                rec_size: 24,
                ..core_sub()
            };
            let data = build(endian, 40, [Some(&func), None, Some(&core)]);
            let ext = BtfExt::parse(&data, endian).unwrap();
            assert!(ext.line_info().is_empty());
            let f: Vec<_> = ext
                .func_info()
                .sections()
                .flat_map(|s| s.records())
                .collect();
            assert_eq!(
                f[2],
                FuncInfo {
                    insn_off: 64,
                    type_id: 7
                }
            );
            let c: Vec<_> = ext
                .core_relos()
                .into_iter()
                .flat_map(|s| s.records())
                .collect();
            assert_eq!(c.len(), 3);
            assert_eq!(
                c[1],
                CoreRelo {
                    insn_off: 24,
                    type_id: 3,
                    access_str_off: 44,
                    kind: 1
                }
            );
        }
    }

    #[test]
    fn every_truncation_is_an_error() {
        for endian in BOTH {
            let data = sample(endian);
            for len in 0..data.len() {
                let err = BtfExt::parse(&data[..len], endian).unwrap_err();
                assert!(matches!(err, Error::BadBtfExt { .. }), "len {len}: {err:?}");
            }
        }
    }

    #[test]
    fn wrong_byte_order_is_reported() {
        let data = sample(Endianness::Little);
        assert_eq!(
            BtfExt::parse(&data, Endianness::Big).unwrap_err(),
            bad(
                "magic is byte-swapped: .BTF.ext byte order differs from the ELF's",
                0
            )
        );
    }

    /// Patch the `u32` at `pos` of a sample, in its byte order.
    fn patched(endian: Endianness, pos: usize, value: u32) -> Vec<u8> {
        let mut data = sample(endian);
        data[pos..pos + 4].copy_from_slice(&endian.write_u32(value));
        data
    }

    #[test]
    fn malformed_inputs_give_specific_errors() {
        // Offsets in the sample: header 0..32; func_info at 32 (rec_size), first group header
        // at 36 (name, num_info at 40), second at 52; line_info at 76; core_relo at 104, its
        // group header at 108 (num_info at 112).
        let func_at = 32;
        let core_at = 104;
        for endian in BOTH {
            let mut bad_magic = sample(endian);
            bad_magic[0] = 0;
            let mut version = sample(endian);
            version[2] = 2;
            let mut flags = sample(endian);
            flags[3] = 1;
            let cases: Vec<(&str, Vec<u8>, Error)> = vec![
                ("bad magic", bad_magic, bad("bad magic", 0)),
                ("version", version, bad("unsupported version", 2)),
                ("flags", flags, bad("unsupported flags", 3)),
                (
                    "hdr_len 20",
                    patched(endian, 4, 20),
                    bad("header length too short for the line_info fields", 4),
                ),
                (
                    "hdr_len past end",
                    patched(endian, 4, 10_000),
                    bad("header length extends past the end of .BTF.ext", 4),
                ),
                (
                    "hdr_len u32::MAX",
                    patched(endian, 4, u32::MAX),
                    bad("header length extends past the end of .BTF.ext", 4),
                ),
                (
                    "func_info off misaligned",
                    patched(endian, 8, 2),
                    bad(FUNC_INFO.why.misaligned, 8),
                ),
                (
                    "line_info off past end",
                    patched(endian, 16, 4000),
                    bad(LINE_INFO.why.out_of_bounds, 16),
                ),
                (
                    "core_relo len overflow",
                    patched(endian, 28, u32::MAX),
                    bad(CORE_RELO.why.out_of_bounds, 24),
                ),
                (
                    "core_relo off overflow",
                    patched(endian, 24, u32::MAX - 3),
                    bad(CORE_RELO.why.out_of_bounds, 24),
                ),
                (
                    "func_info len 2",
                    patched(endian, 12, 2),
                    bad(FUNC_INFO.why.no_rec_size, func_at),
                ),
                (
                    "func_info len 4",
                    patched(endian, 12, 4),
                    bad(FUNC_INFO.why.no_sections, func_at + 4),
                ),
                (
                    "func_info rec_size 4",
                    patched(endian, func_at, 4),
                    bad(FUNC_INFO.why.rec_size_small, func_at),
                ),
                (
                    "core_relo rec_size 12",
                    patched(endian, core_at, 12),
                    bad(CORE_RELO.why.rec_size_small, core_at),
                ),
                (
                    "func_info rec_size 10",
                    patched(endian, func_at, 10),
                    bad(FUNC_INFO.why.rec_size_unaligned, func_at),
                ),
                (
                    // Group 1 then spans 16 bytes; group 2's header lands mid-record and
                    // announces 6 records.
                    "func_info rec_size 16 overruns",
                    patched(endian, func_at, 16),
                    bad(FUNC_INFO.why.records_out_of_bounds, 64),
                ),
                (
                    "zero records",
                    patched(endian, 40, 0),
                    bad(FUNC_INFO.why.zero_records, 40),
                ),
                (
                    "num_info overflow",
                    patched(endian, core_at + 8, u32::MAX),
                    bad(CORE_RELO.why.records_out_of_bounds, core_at + 8),
                ),
                (
                    "num_info one too many",
                    patched(endian, core_at + 8, 4),
                    bad(CORE_RELO.why.records_out_of_bounds, core_at + 8),
                ),
                (
                    // func_info cut to rec_size + group 1 + 4 bytes of group 2's header.
                    "trailing partial group header",
                    patched(endian, 12, 4 + 16 + 4),
                    bad(FUNC_INFO.why.sec_header_truncated, 52),
                ),
            ];
            for (name, data, want) in cases {
                assert_eq!(
                    BtfExt::parse(&data, endian).unwrap_err(),
                    want,
                    "{name} ({endian:?})"
                );
            }
        }
    }

    #[test]
    fn header_with_no_data() {
        for endian in BOTH {
            let mut data = sample(endian)[..32].to_vec();
            for pos in (8..32).step_by(4) {
                data[pos..pos + 4].copy_from_slice(&[0; 4]);
            }
            assert_eq!(
                BtfExt::parse(&data, endian).unwrap_err(),
                bad("no data after the header", 32)
            );
        }
    }

    #[test]
    fn tiny_inputs() {
        for endian in BOTH {
            for data in [&[][..], &[0x9f], &[0xeb, 0x9f, 1, 0]] {
                assert_eq!(
                    BtfExt::parse(data, endian).unwrap_err(),
                    bad("shorter than the 8-byte header", 0)
                );
            }
        }
    }

    #[test]
    fn empty_sub_sections_are_allowed() {
        for endian in BOTH {
            // Only line_info present.
            let data = build(endian, 32, [None, Some(&line_sub()), None]);
            let ext = BtfExt::parse(&data, endian).unwrap();
            assert!(ext.func_info().is_empty());
            assert_eq!(ext.func_info().record_size(), 0);
            assert_eq!(ext.line_info().sections().count(), 1);
            assert!(ext.core_relos().is_empty());
        }
    }

    #[test]
    fn byte_flips_never_panic() {
        for endian in BOTH {
            let data = sample(endian);
            for pos in 0..data.len() {
                for flip in [0x01, 0x80, 0xff] {
                    let mut d = data.clone();
                    d[pos] ^= flip;
                    if let Ok(ext) = BtfExt::parse(&d, endian) {
                        let n: usize = ext
                            .func_info()
                            .sections()
                            .map(|s| s.records().count())
                            .sum::<usize>()
                            + ext
                                .line_info()
                                .sections()
                                .map(|s| s.records().count())
                                .sum::<usize>()
                            + ext
                                .core_relos()
                                .sections()
                                .map(|s| s.records().count())
                                .sum::<usize>();
                        assert!(n * 8 <= d.len());
                    }
                }
            }
        }
    }
}
