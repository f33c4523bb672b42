//! DWARF to BTF: the BTF `pahole -J --btf_gen_floats` writes for an ELF file with DWARF and
//! no `.BTF` (a distribution's debug vmlinux), deduplicated as libbpf's `btf__dedup` does,
//! as raw BTF bytes that [`crate::btf::Btf`] parses.
//!
//! `sections` reads (and decompresses) the DWARF sections, `convert` turns each type DIE
//! into one BTF record as pahole 1.24 does, `dedup` merges the records the units repeat.
//! The records in between are laid out like BTF's own (a header and kind-specific words)
//! so that deduplication reads as libbpf's.

mod convert;
mod dedup;
mod sections;

use crate::btf::Kind;
use crate::btf::write::BtfWriter;
use crate::error::{Error, Result};
use crate::fallible;
use alloc::vec::Vec;

/// Whether `data` is an ELF file with DWARF debug information and no `.BTF` section: the
/// input that [`to_btf`] converts (a `.BTF` is used as it is, unless the caller forces
/// DWARF).
pub fn has_dwarf_without_btf(data: &[u8]) -> bool {
    sections::has_debug_info(data) && matches!(crate::elf::section_data(data, ".BTF"), Ok(None))
}

/// The one decision every front end (CLI, C ABI) makes about a kernel input: `None` when
/// `data` is read as BTF as it is (raw BTF, or an ELF file's `.BTF`); the BTF converted
/// from its DWARF when it has DWARF and no `.BTF`, or when `force_dwarf` asks for DWARF
/// although a `.BTF` is there.
pub fn btf_for_input(data: &[u8], force_dwarf: bool) -> Result<Option<Vec<u8>>> {
    if force_dwarf || has_dwarf_without_btf(data) {
        to_btf(data).map(Some)
    } else {
        Ok(None)
    }
}

/// The BTF of the DWARF types of ELF file `data`, in the file's byte order: every type of
/// every unit, deduplicated. The result is checked as [`crate::btf::Btf::parse`] checks
/// any BTF: DWARF that is well-formed but describes impossible types (a member past the end
/// of its struct) fails there, with the id of the type it became.
pub fn to_btf(data: &[u8]) -> Result<Vec<u8>> {
    if !sections::has_debug_info(data) {
        return Err(Error::MissingSection(".debug_info"));
    }
    let sections = sections::Sections::read(data)?;
    let endian = match sections.endian {
        gimli::RunTimeEndian::Little => crate::btf::Endianness::Little,
        gimli::RunTimeEndian::Big => crate::btf::Endianness::Big,
    };
    let mut writer = BtfWriter::new(endian)?;
    let mut types = convert::Converter::new(&sections, &mut writer)?.convert()?;
    dedup::dedup(&mut types, &mut writer)?;
    let btf = writer.finish()?;
    crate::btf::Btf::parse(&btf)?;
    Ok(btf)
}

/// One BTF type before deduplication, as its BTF record: header fields, names as offsets
/// into the string section being built, and where its kind-specific words start.
#[derive(Debug, Clone, Copy)]
struct Record {
    name: u32,
    /// `None`: `void` (id 0), or a slot not written yet.
    kind: Option<Kind>,
    kind_flag: bool,
    vlen: u16,
    size_or_type: u32,
    first_word: u32,
}

impl Record {
    fn new(name: u32, kind: Kind, kind_flag: bool, vlen: u16, size_or_type: u32) -> Record {
        Record {
            name,
            kind: Some(kind),
            kind_flag,
            vlen,
            size_or_type,
            first_word: 0,
        }
    }

    /// An anonymous modifier or pointer to `target`.
    fn reference(kind: Kind, target: u32) -> Record {
        Record::new(0, kind, false, 0, target)
    }

    /// How many 32-bit words follow the header.
    fn word_count(&self) -> usize {
        self.kind.map_or(0, |k| k.extra_len(self.vlen) / 4)
    }
}

/// Records by id, and the arena of their kind-specific words.
#[derive(Debug)]
struct Types {
    records: Vec<Record>,
    words: Vec<u32>,
}

const VOID: Record = Record {
    name: 0,
    kind: None,
    kind_flag: false,
    vlen: 0,
    size_or_type: 0,
    first_word: 0,
};

impl Types {
    /// Holding only `void`, id 0.
    fn new() -> Result<Types> {
        let mut types = Types::empty();
        fallible::push(&mut types.records, VOID)?;
        Ok(types)
    }

    /// No records at all (ids given by the caller's offset).
    fn empty() -> Types {
        Types {
            records: Vec::new(),
            words: Vec::new(),
        }
    }

    /// Unwritten slots up to id `count - 1`.
    fn fill(&mut self, count: u32) -> Result<()> {
        let count = count as usize;
        self.records
            .try_reserve_exact(count.saturating_sub(self.records.len()))?;
        self.records.resize(count.max(self.records.len()), VOID);
        Ok(())
    }

    /// Write slot `id`.
    fn set(&mut self, id: u32, mut record: Record, words: &[u32]) -> Result<()> {
        debug_assert_eq!(record.word_count(), words.len());
        record.first_word = self.words.len() as u32;
        fallible::extend(&mut self.words, words)?;
        let slot = self
            .records
            .get_mut(id as usize)
            .ok_or(Error::InvalidArgument(
                "DWARF conversion: no slot for a type id",
            ))?;
        *slot = record;
        Ok(())
    }

    /// Append a record (its id: the current length, plus the caller's offset).
    fn push(&mut self, mut record: Record, words: &[u32]) -> Result<()> {
        record.first_word = self.words.len() as u32;
        fallible::extend(&mut self.words, words)?;
        fallible::push(&mut self.records, record)
    }

    /// Append all of `other`'s records after this one's.
    fn append(&mut self, other: Types) -> Result<()> {
        let shift = self.words.len() as u32;
        fallible::extend(&mut self.words, &other.words)?;
        self.records.try_reserve(other.records.len())?;
        self.records
            .extend(other.records.into_iter().map(|r| Record {
                first_word: r.first_word + shift,
                ..r
            }));
        Ok(())
    }

    fn words(&self, record: &Record) -> &[u32] {
        let start = record.first_word as usize;
        self.words
            .get(start..start + record.word_count())
            .unwrap_or(&[])
    }
}
