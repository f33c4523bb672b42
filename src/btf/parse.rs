//! Header and type-section parsing: checks the header and sections, builds the type index
//! (checking every record's kind and bounds) and decodes records.
//!
//! Two header lengths are known: 24 bytes (magic through `str_len`) and, since Linux 7.1, 32
//! bytes, which add `layout_off` and `layout_len` for the layout section ([`Layout`]).

use super::index::{Keep, TypeIndex};
use super::layout::{self, Layout, TYPE_HEADER_LEN};
use super::types::{Array, Composite, Datasec, Enum, FuncProto, Records, Type, TypeKind};
use super::{Btf, Kind, KindSet, MAGIC, MAX_NAME_OFFSET, NameFilter, Validation};
use crate::error::{Error, Result};
use crate::fallible;
use alloc::vec::Vec;
use core::sync::atomic::AtomicU64;
use object::endian::{Endian, Endianness};

/// Length of the smallest header the kernel accepts (magic through str_len).
const MIN_HEADER_LEN: usize = 24;
/// Length of Linux 7.1's header, which adds `layout_off` and `layout_len`.
const LAYOUT_HEADER_LEN: usize = 32;
/// Why a type of a kind btfgen does not know cannot be read (its record is skipped).
pub(super) const SKIPPED: &str = "kind unknown to btfgen (skipped by its layout section entry)";

/// The raw BTF bytes in `data`: `data` itself, or its `.BTF` section when it is an ELF file.
pub(super) fn btf_bytes(data: &[u8]) -> Result<&[u8]> {
    if !data.starts_with(b"\x7fELF") {
        return Ok(data);
    }
    crate::elf::section_data(data, ".BTF")?.ok_or(Error::MissingSection(".BTF"))
}

pub(super) struct Header {
    pub(super) endian: Endianness,
    pub(super) hdr_len: usize,
    pub(super) type_off: usize,
    pub(super) type_len: usize,
    pub(super) str_off: usize,
    pub(super) str_len: usize,
    /// Offset and length of the layout section, if the header has one that is not empty.
    pub(super) layout: Option<(usize, usize)>,
}

pub(super) fn read_u32(data: &[u8], offset: usize, endian: Endianness) -> Option<u32> {
    let b = data.get(offset..offset.checked_add(4)?)?;
    Some(endian.read_u32([b[0], b[1], b[2], b[3]]))
}

pub(super) fn parse_header(data: &[u8]) -> Result<Header> {
    if data.len() < MIN_HEADER_LEN {
        return Err(Error::Truncated {
            what: "BTF header",
            offset: 0,
        });
    }
    let endian = match [data[0], data[1]] {
        m if u16::from_le_bytes(m) == MAGIC => Endianness::Little,
        m if u16::from_be_bytes(m) == MAGIC => Endianness::Big,
        _ => return Err(Error::BadHeader("bad magic (not BTF)")),
    };
    if data[2] != 1 {
        return Err(Error::BadHeader("unsupported version"));
    }
    if data[3] != 0 {
        return Err(Error::BadHeader("unsupported flags"));
    }
    let word = |off| read_u32(data, off, endian).unwrap_or(0) as usize;
    let hdr_len = word(4);
    if hdr_len < MIN_HEADER_LEN || hdr_len > data.len() {
        return Err(Error::BadHeader("header length out of range"));
    }
    if hdr_len != MIN_HEADER_LEN && hdr_len != LAYOUT_HEADER_LEN {
        // Fields past the known ones would be read as if they did not matter.
        let known = if hdr_len < LAYOUT_HEADER_LEN {
            MIN_HEADER_LEN
        } else {
            LAYOUT_HEADER_LEN
        };
        return Err(Error::BadHeader(
            if data[known..hdr_len].iter().any(|&b| b != 0) {
                "unsupported non-zero header tail (only 24- and 32-byte headers are known)"
            } else {
                "unsupported header length (only 24 and 32 are known)"
            },
        ));
    }
    let layout_len = if hdr_len == LAYOUT_HEADER_LEN {
        word(28)
    } else {
        0
    };
    let header = Header {
        endian,
        hdr_len,
        type_off: word(8),
        type_len: word(12),
        str_off: word(16),
        str_len: word(20),
        // As the kernel: an empty layout section is none, wherever its offset points.
        layout: (layout_len != 0).then(|| (word(24), layout_len)),
    };
    check_sections(&header, data.len() - hdr_len)?;
    Ok(header)
}

/// The kernel wants the sections back to back with nothing after them, and libbpf wants the
/// type section first: so types at 0, then the strings and the layout section (in either
/// order, the layout 4-byte aligned), and the blob ends there.
fn check_sections(header: &Header, body: usize) -> Result<()> {
    if header.type_off != 0 {
        return Err(Error::BadHeader(
            "type section does not start right after the header",
        ));
    }
    let Some((layout_off, layout_len)) = header.layout else {
        if header.str_off != header.type_len {
            return Err(Error::BadHeader(
                "string section does not follow the type section",
            ));
        }
        return section_ends_blob(header.str_off, header.str_len, body, AFTER_STRINGS);
    };
    if layout_off % 4 != 0 {
        return Err(Error::BadHeader("layout section not 4-byte aligned"));
    }
    if layout_len % layout::ENTRY_LEN != 0 {
        return Err(Error::BadHeader(
            "layout section length not a multiple of its 4-byte entries",
        ));
    }
    if layout_off < header.type_len {
        return Err(Error::BadHeader("layout section overlaps the type section"));
    }
    let layout_end = layout_off.checked_add(layout_len);
    if layout_off == header.type_len {
        // Types, layout, strings: how Linux 7.1 and libbpf lay them out.
        if Some(header.str_off) != layout_end {
            return Err(Error::BadHeader(if Some(header.str_off) < layout_end {
                "layout section overlaps the string section"
            } else {
                "string section does not follow the layout section"
            }));
        }
        return section_ends_blob(header.str_off, header.str_len, body, AFTER_STRINGS);
    }
    if header.str_off != header.type_len {
        return Err(Error::BadHeader(
            "neither the string nor the layout section follows the type section",
        ));
    }
    // Types, strings, layout.
    match header.str_off.checked_add(header.str_len) {
        Some(str_end) if str_end == layout_off => {}
        Some(str_end) if str_end > layout_off => {
            return Err(Error::BadHeader(
                "layout section overlaps the string section",
            ));
        }
        _ => {
            return Err(Error::BadHeader(
                "layout section does not follow the string section",
            ));
        }
    }
    section_ends_blob(
        layout_off,
        layout_len,
        body,
        "data after the layout section",
    )
}

/// What is wrong when the string section is the last and the blob goes on.
const AFTER_STRINGS: &str = "data after the string section";

/// The last section, at `off` with `len` bytes, must end exactly where the blob does (else
/// `trailing` says what is wrong).
fn section_ends_blob(off: usize, len: usize, body: usize, trailing: &'static str) -> Result<()> {
    match off.checked_add(len) {
        Some(end) if end == body => Ok(()),
        Some(end) if end < body => Err(Error::BadHeader(trailing)),
        _ => Err(Error::BadHeader("section extends past end of data")),
    }
}

pub(super) fn parse<'a>(
    data: &'a [u8],
    base: Option<&'a Btf<'a>>,
    validation: Validation,
    filter: Option<&NameFilter>,
) -> Result<(Btf<'a>, Vec<u32>)> {
    let header = parse_header(data)?;
    if let Some(base) = base
        && base.endian() != header.endian
    {
        return Err(Error::BadHeader(
            "split BTF byte order differs from its base",
        ));
    }
    let body = &data[header.hdr_len..];
    let types = &body[header.type_off..header.type_off + header.type_len];
    let raw_strings = &body[header.str_off..header.str_off + header.str_len];
    let (strings, text) = check_strings(raw_strings, base.is_some(), validation)?;
    let layout = header
        .layout
        .map(|(off, len)| Layout::parse(&body[off..off + len], header.endian))
        .transpose()?;
    let (start_id, start_str_off) = match base {
        Some(b) => (b.type_cnt(), b.start_str_off() + b.strings_len()),
        None => (1, 0),
    };
    if u64::from(start_str_off) + strings.len() as u64 > u64::from(MAX_NAME_OFFSET) + 1 {
        return Err(Error::Limit {
            what: "string section length",
            limit: MAX_NAME_OFFSET as usize,
        });
    }
    // The BTF without its index yet: enough to read names while the index is built.
    let unindexed = Btf {
        base,
        endian: header.endian,
        types,
        strings,
        text,
        index: TypeIndex::default(),
        start_id,
        start_str_off,
        long_type: None,
        validated: Vec::new(),
    };
    let keep = Keep {
        kinds: filter.map_or(KindSet::EMPTY, NameFilter::kinds),
        test: |pos, info| filter.is_some_and(|filter| unindexed.passes(filter, pos, info)),
    };
    let (index, mut kept) =
        TypeIndex::build(types, header.endian, start_id, &keep, layout.as_ref())?;
    let words = (index.len() as usize).div_ceil(64);
    let mut btf = Btf {
        index,
        validated: match validation {
            Validation::Full => Vec::new(),
            Validation::OnUse => {
                let mut bits = fallible::vec_with_capacity(words)?;
                bits.extend((0..words).map(|_| AtomicU64::new(0)));
                bits
            }
        },
        ..unindexed
    };
    btf.long_type = match validation {
        Validation::Full => super::validate::validate(&btf)?,
        Validation::OnUse => super::validate::find_long_type(&btf)?,
    };
    // Record indices to ids, in place (no allocation).
    for index in &mut kept {
        *index += start_id;
    }
    Ok((btf, kept))
}

/// The string section must start with a NUL (base BTF) and end with a NUL; with full
/// validation it must be UTF-8 throughout (else each name is checked when read), and is
/// returned as text too.
fn check_strings(raw: &[u8], split: bool, validation: Validation) -> Result<(&[u8], Option<&str>)> {
    if raw.is_empty() {
        if split {
            return Ok((raw, Some("")));
        }
        return Err(Error::BadHeader("empty string section"));
    }
    if !split && raw[0] != 0 {
        return Err(Error::BadString {
            offset: 0,
            reason: "string section must start with NUL",
        });
    }
    if raw[raw.len() - 1] != 0 {
        return Err(Error::BadString {
            offset: (raw.len() - 1) as u32,
            reason: "string section not NUL-terminated",
        });
    }
    if validation == Validation::OnUse {
        return Ok((raw, None));
    }
    match core::str::from_utf8(raw) {
        Ok(text) => Ok((raw, Some(text))),
        Err(e) => Err(Error::BadString {
            offset: e.valid_up_to() as u32,
            reason: "string section is not UTF-8",
        }),
    }
}

/// Decode the record at `pos`, of `len` bytes with header word `info` (as
/// [`TypeIndex::record`] gives them, bounds-checked over `types`). A record of a kind btfgen
/// does not know (skipped by the layout section) does not decode.
// Inline in its one caller, [`Btf::type_in_record`], on every type lookup of the main job:
// left to the code-generation units, the call stayed or went as unrelated modules grew
// (+1.9% of a `min-core-btf` run's instructions when it stayed).
#[inline]
pub(super) fn decode<'a>(
    types: &'a [u8],
    endian: Endianness,
    (pos, len, info): (usize, usize, u32),
    id: u32,
) -> Result<Type<'a>> {
    let word = |i: usize| read_u32(types, pos + 4 * i, endian).unwrap_or(0);
    let name_off = word(0);
    let size_or_type = word(2);
    let vlen = (info & 0xffff) as u16;
    let kind_flag = info >> 31 != 0;
    let kind = Kind::from_raw((info >> 24) & 0x1f).ok_or(Error::BadType {
        id,
        reason: SKIPPED,
    })?;
    let records = |record_len| Records {
        bytes: &types[pos + TYPE_HEADER_LEN..pos + len],
        endian,
        record_len,
    };
    let kind = match kind {
        Kind::Int => {
            let data = word(3);
            TypeKind::Int {
                size: size_or_type,
                encoding: ((data >> 24) & 0x0f) as u8,
                offset: ((data >> 16) & 0xff) as u8,
                bits: (data & 0xff) as u8,
            }
        }
        Kind::Ptr => TypeKind::Ptr(size_or_type),
        Kind::Array => TypeKind::Array(Array {
            elem_type: word(3),
            index_type: word(4),
            nelems: word(5),
        }),
        Kind::Struct => TypeKind::Struct(Composite {
            size: size_or_type,
            kind_flag,
            records: records(12),
        }),
        Kind::Union => TypeKind::Union(Composite {
            size: size_or_type,
            kind_flag,
            records: records(12),
        }),
        Kind::Enum => TypeKind::Enum(Enum {
            size: size_or_type,
            signed: kind_flag,
            records: records(8),
        }),
        Kind::Enum64 => TypeKind::Enum64(Enum {
            size: size_or_type,
            signed: kind_flag,
            records: records(12),
        }),
        Kind::Fwd => TypeKind::Fwd { union: kind_flag },
        Kind::Typedef => TypeKind::Typedef(size_or_type),
        Kind::Volatile => TypeKind::Volatile(size_or_type),
        Kind::Const => TypeKind::Const(size_or_type),
        Kind::Restrict => TypeKind::Restrict(size_or_type),
        Kind::TypeTag => TypeKind::TypeTag(size_or_type),
        Kind::Func => TypeKind::Func {
            proto: size_or_type,
            linkage: vlen,
        },
        Kind::FuncProto => TypeKind::FuncProto(FuncProto {
            return_type: size_or_type,
            records: records(8),
        }),
        Kind::Var => TypeKind::Var {
            type_id: size_or_type,
            linkage: word(3),
        },
        Kind::Datasec => TypeKind::Datasec(Datasec {
            size: size_or_type,
            records: records(12),
        }),
        Kind::Float => TypeKind::Float { size: size_or_type },
        Kind::DeclTag => TypeKind::DeclTag {
            type_id: size_or_type,
            component_idx: word(3) as i32,
        },
    };
    Ok(Type { id, name_off, kind })
}
