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
pub mod supplementary;

use crate::btf::Kind;
use crate::btf::dedup_table::Record;
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

/// The one decision every front end (CLI, C ABI) makes about a kernel input: whether it is
/// converted from DWARF ([`to_btf`]), rather than read as BTF as it is (raw BTF, or an ELF
/// file's `.BTF`): when it has DWARF and no `.BTF`, or when `force_dwarf` asks for DWARF
/// although a `.BTF` is there.
pub fn converts(data: &[u8], force_dwarf: bool) -> bool {
    force_dwarf || has_dwarf_without_btf(data)
}

/// Whether a kernel module's file `data` is converted from its DWARF to split BTF, rather
/// than its `.BTF` read as it is: when it has DWARF and no `.BTF`, or when `force_dwarf`
/// asks for DWARF (a kernel converted from DWARF numbers its types otherwise than the
/// `.BTF` the module was built with) and it has DWARF. A module with neither is read as BTF,
/// and fails there.
pub fn module_converts(data: &[u8], force_dwarf: bool) -> bool {
    sections::has_debug_info(data)
        && (force_dwarf || matches!(crate::elf::section_data(data, ".BTF"), Ok(None)))
}

/// Whether the DWARF of ELF file `data` may define a type named one of `names` (or one of
/// them with a `___flavor` suffix, which CO-RE matches too): `false` only when its
/// `.debug_str` is plain, holds none of them, and every name is long enough (4 bytes and
/// more) that gcc writes it there rather than inline. Lets a caller skip converting modules
/// that cannot hold a relocation's candidate.
pub fn may_name(data: &[u8], names: &[&str]) -> bool {
    use object::{Object, ObjectSection};
    if names.iter().any(|n| n.len() < 4) {
        return true;
    }
    let Ok(file) = crate::elf::parse(data) else {
        return true;
    };
    if file.section_by_name(".zdebug_str").is_some()
        || file.section_by_name(".gnu_debugaltlink").is_some()
        || file.section_by_name(".debug_sup").is_some()
    {
        return true;
    }
    let Some(section) = file.section_by_name(".debug_str") else {
        return true;
    };
    let plain = section
        .compressed_file_range()
        .is_ok_and(|r| r.format == object::CompressionFormat::None);
    let Some(strings) = section.data().ok().filter(|_| plain) else {
        return true;
    };
    strings.split(|&b| b == 0).any(|s| {
        let essential = match s.windows(3).position(|w| w == b"___") {
            Some(at) => &s[..at],
            None => s,
        };
        names.iter().any(|n| n.as_bytes() == essential)
    })
}

/// The BTF of the DWARF types of ELF file `data`, in the file's byte order: every type of
/// every unit, and of the units of `sup` (its [`supplementary`] file, which a `dwz -m` input
/// needs) that it imports or refers into, deduplicated. The result is checked as
/// [`crate::btf::Btf::parse`] checks any BTF: DWARF that is well-formed but describes
/// impossible types (a member past the end of its struct) fails there, with the id of the
/// type it became. With `std`, the units are read on two threads ([`Options::threads`]).
pub fn to_btf(data: &[u8], sup: Option<&[u8]>) -> Result<Vec<u8>> {
    to_btf_with(data, sup, &Options::default())
}

/// How [`to_btf_with`] converts.
#[derive(Clone, Copy)]
pub struct Options<'r> {
    /// Told of each unit's bytes (in the input or its supplementary file) once a pass over
    /// the units is done with them: a caller whose input is mapped lets the kernel drop those
    /// pages from its resident set ([`crate::mapped::release`] with the `mapped` feature). The
    /// bytes may be read again later, and from either thread.
    pub release: &'r (dyn Fn(&[u8]) + Sync),
    /// Whether each pass over the units may run on two threads (with `std`; without it, or
    /// if a thread cannot be started, on the caller's). The output is the same either way,
    /// and the second thread's allocations are charged to the caller's
    /// [`crate::budget::Budget`], if it runs in one.
    pub threads: bool,
    /// Told how far the conversion is, from either thread: for a progress line.
    pub progress: &'r (dyn Fn(Progress) + Sync),
    /// Whether the type DIEs may be numbered as their units are converted, in one pass over
    /// the units (where the input has no type units and no supplementary file), rather than
    /// by a first pass of their own. The output is the same either way; the first pass costs
    /// a read of every DIE (a kernel's: ~0.6 s of CPU).
    pub one_pass: bool,
    /// Whether functions become `FUNC` records with their `FUNC_PROTO`s, as pahole writes
    /// them for the kernel. CO-RE relocation reads types and never a function, so a
    /// conversion for relocating leaves them out (a kernel's: 17% less time, half the BTF's
    /// bytes); every type is converted either way.
    pub functions: bool,
    /// Whether the records, once deduplicated into the output, are freed on a thread of
    /// their own (with `std`) that the call does not wait for: a kernel's are most of the
    /// peak (a hundred megabytes, ~10 ms of the kernel taking its pages back), which a
    /// caller going on to other work (a command relocating against the output) need not
    /// wait for. Not where allocations must be freed on the caller's threads (allocator
    /// hooks), nor where the memory held when the call returns is measured.
    pub free_in_background: bool,
}

impl Default for Options<'_> {
    /// Nothing released, no progress told; two threads, one pass where the input allows,
    /// functions converted, the records freed before the call returns.
    fn default() -> Self {
        Options {
            release: &|_| {},
            threads: true,
            progress: &|_| {},
            one_pass: true,
            functions: true,
            free_in_background: false,
        }
    }
}

/// How far a conversion is ([`Options::progress`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// The first pass has numbered the type DIEs of `done` of the `total` units known (a
    /// `dwz -m` input's supplementary units add to `total` as they are found).
    Numbered {
        /// Units scanned.
        done: usize,
        /// Units known.
        total: usize,
    },
    /// The second pass has written the records of `done` of `total` units.
    Converted {
        /// Units converted.
        done: usize,
        /// All units.
        total: usize,
    },
    /// The records are being deduplicated (the last step).
    Deduplicating,
}

/// [`to_btf`], as `options` say.
pub fn to_btf_with(data: &[u8], sup: Option<&[u8]>, options: &Options<'_>) -> Result<Vec<u8>> {
    if !sections::has_debug_info(data) {
        return Err(Error::MissingSection(".debug_info"));
    }
    if sup.is_none()
        && let Some(link) = supplementary::link(data)?
    {
        return Err(Error::BadDwarf {
            section: link.section,
            unit: u64::MAX,
            die: u64::MAX,
            reason: "names a supplementary file (dwz -m), which was not given",
        });
    }
    let sections = sections::Sections::read(data, options.functions)?;
    // The functions are the input's own.
    let sup = sup
        .map(|sup| sections::Sections::read(sup, false))
        .transpose()?;
    let endian = match sections.endian {
        gimli::RunTimeEndian::Little => crate::btf::Endianness::Little,
        gimli::RunTimeEndian::Big => crate::btf::Endianness::Big,
    };
    let mut writer = BtfWriter::new(endian)?;
    let (mut types, prepared) =
        convert::Converter::new(&sections, sup.as_ref(), &mut writer, options)?
            .convert_with(dedup::Prepared::new)?;
    (options.progress)(Progress::Deduplicating);
    let prepared = prepared.ok_or(Error::InvalidArgument(
        "DWARF conversion: the deduplication's tables were not made",
    ))??;
    dedup::dedup(&mut types, prepared, &mut writer, options.threads)?;
    // Every unit's records, most of the peak: gone before the output is laid out and checked,
    // or going meanwhile.
    free(types, options.free_in_background);
    let btf = writer.finish()?;
    crate::btf::Btf::parse(&btf)?;
    Ok(btf)
}

/// `a` on this thread and `b` on a second one if `threads` (with `std`), else (or if the
/// second thread cannot be started or has not started by the time `a` is done) both on this
/// one. `b`'s result is `None` only if it was lost, which cannot happen: a panic on either
/// thread goes on here.
fn beside<A, B: Send>(
    threads: bool,
    a: impl FnOnce() -> A,
    b: impl FnOnce() -> B + Send,
) -> (A, Option<B>) {
    #[cfg(feature = "std")]
    if threads {
        // Taken by whichever thread comes to it first.
        let work = std::sync::Mutex::new(Some(b));
        let take = || {
            work.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .take()
        };
        return std::thread::scope(|scope| {
            let budget = crate::budget::inherit();
            // std's thread, allocated as it cannot fail: outside any budget (as the walks'
            // helper is).
            let second = crate::budget::uncharged(|| {
                std::thread::Builder::new()
                    .name("btfgen-beside".into())
                    .spawn_scoped(scope, || take().map(|b| budget.run(b)))
            })
            .ok();
            let a = a();
            let here = take().map(|b| b());
            let there = match second.map(|second| crate::budget::uncharged(|| second.join())) {
                Some(Ok(made)) => made,
                Some(Err(panic)) => std::panic::resume_unwind(panic),
                None => None,
            };
            (a, here.or(there))
        });
    }
    let _ = threads;
    (a(), Some(b()))
}

/// Drop `value`, on a thread of its own that nothing waits for if `background` (with `std`;
/// on this one if the thread cannot be started).
fn free<T: Send + 'static>(value: T, background: bool) {
    #[cfg(feature = "std")]
    if background {
        // std's thread, allocated as it cannot fail: outside any budget (as the walks' helper
        // is). One that cannot be started drops its closure, and `value` with it, here.
        let _ = crate::budget::uncharged(|| {
            std::thread::Builder::new()
                .name("btfgen-free".into())
                .spawn(move || drop(value))
        });
        return;
    }
    let _ = background;
    drop(value);
}

/// The largest id a record may have before deduplication. Those ids number every type DIE
/// of every unit (a distribution kernel has 3.3 million, 95 thousand after deduplication),
/// so BTF's [`crate::btf::MAX_TYPE_ID`] binds only the deduplicated result (checked when
/// [`dedup`] writes it); the two ids above are `dedup`'s map markers.
const MAX_RECORD_ID: u32 = u32::MAX - 2;

fn too_many_records() -> Error {
    Error::Limit {
        what: "DWARF type DIEs and records before deduplication",
        limit: MAX_RECORD_ID as usize,
    }
}

/// The id after record id `id`, if there may be one.
fn next_record_id(id: u32) -> Result<u32> {
    id.checked_add(1)
        .filter(|&next| next <= MAX_RECORD_ID)
        .ok_or_else(too_many_records)
}

/// Which of the `len` kind-specific words of a record of `kind` are type ids: an array's
/// element and index types, members' and parameters' types.
fn type_id_words(kind: Kind, len: usize) -> impl Iterator<Item = usize> {
    let (first, stride, count) = match kind {
        Kind::Array => (0, 1, len.min(2)),
        Kind::Struct | Kind::Union => (1, 3, len / 3),
        Kind::FuncProto => (1, 2, len / 2),
        _ => (0, 1, 0),
    };
    (0..count).map(move |i| first + i * stride)
}

/// The type ids of a record of `kind`, in order: its `size_or_type` where the kind refers to
/// a type, then those among its kind-specific `words` ([`type_id_words`]).
fn type_ids(kind: Kind, size_or_type: u32, words: &[u32]) -> impl Iterator<Item = u32> + '_ {
    kind.has_type_ref()
        .then_some(size_or_type)
        .into_iter()
        .chain(type_id_words(kind, words.len()).map(|i| words[i]))
}

/// Pass each type id of a record of `kind` through `f` ([`type_ids`]).
fn map_type_ids(
    kind: Kind,
    size_or_type: &mut u32,
    words: &mut [u32],
    mut f: impl FnMut(u32) -> u32,
) {
    if kind.has_type_ref() {
        *size_or_type = f(*size_or_type);
    }
    for i in type_id_words(kind, words.len()) {
        words[i] = f(words[i]);
    }
}

/// Where the next kind-specific word of `words` starts, as [`Record::first_word`] holds it.
fn word_index(words: &[u32]) -> Result<u32> {
    u32::try_from(words.len()).map_err(|_| Error::Limit {
        what: "DWARF kind-specific words before deduplication",
        limit: u32::MAX as usize,
    })
}

/// A record before deduplication (names as offsets into the string section being built):
/// the converter's constructors.
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
}

/// Records by id, and the arena of their kind-specific words.
#[derive(Debug)]
struct Types {
    records: Vec<Record>,
    words: Vec<u32>,
    /// Converting in one pass: the first id of each unit's records, then the first extra
    /// record's id (empty otherwise); what [`dedup`]'s shapes read a unit by.
    units: Vec<u32>,
    /// Converting in one pass: the provisional ids' least (an extra record's or a reference
    /// into a unit not numbered yet), and the records [`Types::set`] wrote with one, which
    /// alone have ids to settle ([`Types::map_provisional_ids`]; a pass over every record
    /// was most of the time between the conversion and the deduplication).
    provisional: Option<(u32, Vec<u32>)>,
    /// The ids of the primitive records (INT, FLOAT, FWD, ENUM, ENUM64), in the order they
    /// were written: all the prim phase reads (a kernel's 314 thousand of 3.3 million
    /// records, which a pass over every id read through).
    prims: Vec<u32>,
}

impl Types {
    /// Holding only `void`, id 0.
    fn new() -> Result<Types> {
        let mut types = Types::empty();
        fallible::push(&mut types.records, Record::VOID)?;
        Ok(types)
    }

    /// No records at all (ids given by the caller's offset).
    fn empty() -> Types {
        Types {
            records: Vec::new(),
            words: Vec::new(),
            units: Vec::new(),
            provisional: None,
            prims: Vec::new(),
        }
    }

    /// Unwritten slots up to id `count - 1`.
    fn fill(&mut self, count: u32) -> Result<()> {
        let count = count as usize;
        self.records
            .try_reserve(count.saturating_sub(self.records.len()))?;
        self.records
            .resize(count.max(self.records.len()), Record::VOID);
        Ok(())
    }

    /// Write slot `id`.
    fn set(&mut self, id: u32, mut record: Record, words: &[u32]) -> Result<()> {
        debug_assert_eq!(record.word_count(), words.len());
        record.first_word = word_index(&self.words)?;
        fallible::extend(&mut self.words, words)?;
        let slot = self
            .records
            .get_mut(id as usize)
            .ok_or(Error::InvalidArgument(
                "DWARF conversion: no slot for a type id",
            ))?;
        *slot = record;
        let Some(kind) = record.kind else {
            return Ok(());
        };
        if crate::btf::dedup_table::is_primitive_kind(kind) {
            fallible::push(&mut self.prims, id)?;
        }
        if let Some((least, ids)) = &mut self.provisional
            && type_ids(kind, record.size_or_type, words).any(|t| t >= *least)
        {
            fallible::push(ids, id)?;
        }
        Ok(())
    }

    /// Append a record (its id: the current length, plus the caller's offset).
    fn push(&mut self, mut record: Record, words: &[u32]) -> Result<()> {
        record.first_word = word_index(&self.words)?;
        if record
            .kind
            .is_some_and(crate::btf::dedup_table::is_primitive_kind)
        {
            let id = u32::try_from(self.records.len()).map_err(|_| too_many_records())?;
            fallible::push(&mut self.prims, id)?;
        }
        fallible::extend(&mut self.words, words)?;
        fallible::push(&mut self.records, record)
    }

    /// Append all of `other`'s records after this one's.
    fn append(&mut self, other: Types) -> Result<()> {
        let shift = word_index(&self.words)?;
        fallible::extend(&mut self.words, &other.words)?;
        // Every record's first word is at most its arena's length: if the joined arena's
        // length fits, so does every shifted index.
        word_index(&self.words)?;
        let base = u32::try_from(self.records.len()).map_err(|_| too_many_records())?;
        self.prims.try_reserve(other.prims.len())?;
        for &id in &other.prims {
            self.prims
                .push(id.checked_add(base).ok_or_else(too_many_records)?);
        }
        self.records.try_reserve(other.records.len())?;
        self.records
            .extend(other.records.into_iter().map(|r| Record {
                first_word: r.first_word + shift,
                ..r
            }));
        Ok(())
    }

    /// Pass every type id the records hold through `f` ([`map_type_ids`]).
    fn map_type_ids(&mut self, mut f: impl FnMut(u32) -> u32) {
        for record in &mut self.records {
            Types::map_record_ids(&mut self.words, record, &mut f);
        }
    }

    /// Pass the type ids of the records written with a provisional id through `f`, those of
    /// the others left as they are (`f` must leave every id below the provisional ones as
    /// it is), and stop tracking them (the list is not kept past the peak to come); every
    /// record's, unless provisional ids are tracked.
    fn map_provisional_ids(&mut self, mut f: impl FnMut(u32) -> u32) {
        let Some((_, ids)) = self.provisional.take() else {
            return self.map_type_ids(f);
        };
        for id in ids {
            if let Some(record) = self.records.get_mut(id as usize) {
                Types::map_record_ids(&mut self.words, record, &mut f);
            }
        }
    }

    /// [`map_type_ids`] of `record`, its words in `words`.
    fn map_record_ids(words: &mut [u32], record: &mut Record, f: impl FnMut(u32) -> u32) {
        let Some(kind) = record.kind else { return };
        let start = record.first_word as usize;
        let count = record.word_count();
        if let Some(words) = words.get_mut(start..start + count) {
            map_type_ids(kind, &mut record.size_or_type, words, f);
        }
    }

    fn words(&self, record: &Record) -> &[u32] {
        record.words(&self.words)
    }

    /// Record `id` (`void`'s past the last).
    fn record_at(&self, id: u32) -> Record {
        self.records
            .get(id as usize)
            .copied()
            .unwrap_or(Record::VOID)
    }

    /// Record `id`'s kind-specific words (none past the last record).
    fn words_at(&self, id: u32) -> &[u32] {
        match self.records.get(id as usize) {
            Some(r) => self.words(r),
            None => &[],
        }
    }

    /// Whether record `id` is of a kind libbpf's reference phase deduplicates.
    fn is_reference(&self, id: u32) -> bool {
        self.record_at(id)
            .kind
            .is_some_and(crate::btf::dedup_table::is_reference_kind)
    }

    /// Record `id`'s `index`th type id, in the order libbpf's reference phase makes them
    /// canonical ([`type_ids`]'s: a prototype's return type, then its parameters' types; an
    /// array's element type, then its index type).
    fn reference_target(&self, id: u32, index: usize) -> Option<u32> {
        let r = self.records.get(id as usize)?;
        type_ids(r.kind?, r.size_or_type, self.words(r)).nth(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::btf::{Btf, MAX_TYPE_ID};
    use alloc::string::String;
    use alloc::vec;

    /// A little-endian ELF64 file with `sections` (name, contents) and a `.shstrtab`.
    fn elf(sections: &[(&str, &[u8])]) -> Vec<u8> {
        let mut shstrtab = b"\0.shstrtab\0".to_vec();
        let mut names = Vec::new();
        for (name, _) in sections {
            names.push(shstrtab.len() as u32);
            shstrtab.extend_from_slice(name.as_bytes());
            shstrtab.push(0);
        }
        let mut out = vec![0u8; 64];
        // (name, type, offset, size) of each section header after the null one.
        let mut headers = vec![(1u32, 3u32, out.len(), shstrtab.len())];
        out.extend_from_slice(&shstrtab);
        for ((_, data), &name) in sections.iter().zip(&names) {
            headers.push((name, 1, out.len(), data.len()));
            out.extend_from_slice(data);
        }
        out.resize(out.len().next_multiple_of(8), 0);
        let shoff = out.len();
        out.extend_from_slice(&[0; 64]);
        for (name, kind, offset, size) in headers {
            out.extend_from_slice(&name.to_le_bytes());
            out.extend_from_slice(&kind.to_le_bytes());
            out.extend_from_slice(&[0; 16]); // flags, addr
            out.extend_from_slice(&(offset as u64).to_le_bytes());
            out.extend_from_slice(&(size as u64).to_le_bytes());
            out.extend_from_slice(&[0; 8]); // link, info
            out.extend_from_slice(&1u64.to_le_bytes());
            out.extend_from_slice(&[0; 8]); // entsize
        }
        let mut header = b"\x7fELF\x02\x01\x01".to_vec();
        header.resize(16, 0);
        header.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
        header.extend_from_slice(&62u16.to_le_bytes()); // EM_X86_64
        header.extend_from_slice(&1u32.to_le_bytes());
        header.extend_from_slice(&[0; 16]); // entry, phoff
        header.extend_from_slice(&(shoff as u64).to_le_bytes());
        header.extend_from_slice(&[0; 4]); // flags
        for half in [64u16, 0, 0, 64, sections.len() as u16 + 2, 1] {
            header.extend_from_slice(&half.to_le_bytes());
        }
        out[..64].copy_from_slice(&header);
        out
    }

    /// An ELF file whose one DWARF 4 unit holds `count` DIEs of `tag`, each named by
    /// `name(i)` when `name` is given (`DW_FORM_string`), with no other attribute.
    fn dwarf(tag: u8, count: u32, name: Option<fn(u32) -> String>) -> Vec<u8> {
        // 1: compile unit with children; 2: `tag`, with DW_AT_name or nothing.
        let mut abbrev = vec![1, 0x11, 1, 0, 0, 2, tag, 0];
        if name.is_some() {
            abbrev.extend_from_slice(&[0x03, 0x08]);
        }
        abbrev.extend_from_slice(&[0, 0, 0]);
        let mut info = Vec::new();
        info.extend_from_slice(&[0; 4]); // unit_length, below
        info.extend_from_slice(&4u16.to_le_bytes());
        info.extend_from_slice(&0u32.to_le_bytes());
        info.push(8);
        info.push(1);
        for i in 0..count {
            info.push(2);
            if let Some(name) = name {
                info.extend_from_slice(name(i).as_bytes());
                info.push(0);
            }
        }
        info.push(0);
        let length = (info.len() - 4) as u32;
        info[..4].copy_from_slice(&length.to_le_bytes());
        elf(&[(".debug_abbrev", &abbrev), (".debug_info", &info)])
    }

    /// More type DIEs than BTF has ids, all the same type: the ids before deduplication
    /// are not BTF's, only the one type left must fit (a distribution kernel has 3.3
    /// million type DIEs and 95 thousand types).
    #[test]
    fn pre_dedup_type_count_is_not_limited_by_btf_ids() {
        let count = MAX_TYPE_ID + 2;
        let btf = to_btf(&dwarf(0x26, count, None), None).unwrap(); // DW_TAG_const_type
        let btf = Btf::parse(&btf).unwrap();
        assert_eq!(btf.type_cnt(), 2); // void and one CONST
        assert_eq!(btf.type_by_id(1).unwrap().kind(), Some(Kind::Const));
    }

    /// Found by the `dwarf_elf` fuzz target: a compressed section's header announcing far
    /// more than its data can decompress to (zlib's `ch_size` of 0x0393000000000408 bytes for
    /// 327 bytes of data) was allocated for (and zero-filled) before decompressing. It fails
    /// before any allocation now.
    #[test]
    fn announced_uncompressed_size_is_bounded_by_the_data() {
        // The empty zlib stream.
        let stream = [0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01];
        let check = |file: &[u8], announced: u64| {
            assert!(has_dwarf_without_btf(file));
            match to_btf(file, None) {
                Err(Error::BadDwarf {
                    section: ".debug_info",
                    reason,
                    ..
                }) => assert!(reason.contains("announced uncompressed size"), "{reason}"),
                other => panic!("{announced:#x}: {:?}", other.map(|b| b.len())),
            }
        };
        for announced in [0x0393_0000_0000_0408u64, 1 << 26] {
            // SHF_COMPRESSED: an Elf64_Chdr (ELFCOMPRESS_ZLIB, the size), the zlib stream.
            let mut info = 1u32.to_le_bytes().to_vec();
            info.extend_from_slice(&[0; 4]);
            info.extend_from_slice(&announced.to_le_bytes());
            info.extend_from_slice(&1u64.to_le_bytes());
            info.extend_from_slice(&stream);
            let mut file = elf(&[(".debug_abbrev", &[0]), (".debug_info", &info)]);
            // .debug_info's header (after the null one and .shstrtab's): sh_flags.
            let shoff = u64::from_le_bytes(file[0x28..0x30].try_into().unwrap()) as usize;
            file[shoff + 3 * 64 + 8] = 0x00; // SHF_COMPRESSED is 0x800
            file[shoff + 3 * 64 + 9] = 0x08;
            check(&file, announced);
        }
        // A legacy .zdebug_info ("ZLIB", the size as 8 big-endian bytes, the stream), whose
        // size object caps at 4 GiB.
        for announced in [1u64 << 26, u64::from(u32::MAX)] {
            let mut zdebug = b"ZLIB".to_vec();
            zdebug.extend_from_slice(&announced.to_be_bytes());
            zdebug.extend_from_slice(&stream);
            let file = elf(&[(".debug_abbrev", &[0]), (".zdebug_info", &zdebug)]);
            check(&file, announced);
        }
    }

    /// Found by the `dwarf_structured` fuzz target: a bit-field's `DW_AT_bit_offset` far past
    /// its storage overflowed the subtraction that turns it into BTF's offset (a panic where
    /// overflows are checked: debug and fuzz builds). It is an offset out of range now.
    #[test]
    fn a_bit_offset_past_any_storage_is_an_error() {
        // 1: compile unit; 2: struct (byte_size data1); 3: member (byte_size, bit_size data1,
        // bit_offset data8, data_member_location data1).
        let abbrev = [
            1, 0x11, 1, 0, 0, //
            2, 0x13, 1, 0x0b, 0x0b, 0, 0, //
            3, 0x0d, 0, 0x0b, 0x0b, 0x0d, 0x0b, 0x0c, 0x07, 0x38, 0x0b, 0, 0, //
            0,
        ];
        for bit_offset in [i64::MIN as u64, i64::MAX as u64] {
            let mut info = vec![0u8; 4]; // unit_length, below
            info.extend_from_slice(&4u16.to_le_bytes());
            info.extend_from_slice(&0u32.to_le_bytes());
            info.extend_from_slice(&[8, 1, 2, 8, 3, 4, 3]);
            info.extend_from_slice(&bit_offset.to_le_bytes());
            info.extend_from_slice(&[0, 0, 0]);
            let length = (info.len() - 4) as u32;
            info[..4].copy_from_slice(&length.to_le_bytes());
            let file = elf(&[(".debug_abbrev", &abbrev), (".debug_info", &info)]);
            match to_btf(&file, None) {
                Err(Error::BadDwarf { reason, .. }) => {
                    assert!(reason.contains("offset does not fit"), "{reason}");
                }
                other => panic!("{bit_offset:#x}: {:?}", other.map(|b| b.len())),
            }
        }
    }

    /// gcc's DWARF 2 writes a member's location as a `DW_FORM_block1` holding
    /// `DW_OP_plus_uconst` (DWARF 4 writes a constant): the walk keeps the form's raw value, a
    /// block, which is read as the expression it holds, as pahole reads it.
    #[test]
    fn a_dwarf2_member_location_block_is_its_offset() {
        // 1: compile unit; 2: struct (byte_size data1); 3: member (type ref4,
        // data_member_location block1); 4: base type (byte_size, encoding data1, name string).
        let abbrev = [
            1, 0x11, 1, 0, 0, //
            2, 0x13, 1, 0x0b, 0x0b, 0, 0, //
            3, 0x0d, 0, 0x49, 0x13, 0x38, 0x0a, 0, 0, //
            4, 0x24, 0, 0x0b, 0x0b, 0x3e, 0x0b, 0x03, 0x08, 0, 0, //
            0,
        ];
        let mut info = vec![0u8; 4]; // unit_length, below
        info.extend_from_slice(&2u16.to_le_bytes());
        info.extend_from_slice(&0u32.to_le_bytes());
        info.push(8);
        // The unit's DIE at 11, the struct's at 12, the member's at 14, the end of the
        // struct's children at 22, the base type's at 23.
        info.extend_from_slice(&[1, 2, 16, 3]);
        info.extend_from_slice(&23u32.to_le_bytes());
        info.extend_from_slice(&[2, 0x23, 8, 0]); // block1: DW_OP_plus_uconst 8; end
        info.extend_from_slice(&[4, 4, 5]);
        info.extend_from_slice(b"int\0");
        info.push(0);
        let length = (info.len() - 4) as u32;
        info[..4].copy_from_slice(&length.to_le_bytes());
        let file = elf(&[(".debug_abbrev", &abbrev), (".debug_info", &info)]);
        let btf = to_btf(&file, None).unwrap();
        let btf = Btf::parse(&btf).unwrap();
        let ty = btf.type_by_id(1).unwrap();
        assert_eq!(ty.kind(), Some(Kind::Struct));
        let member = ty.kind.composite().unwrap().member(0).unwrap();
        assert_eq!(member.bit_offset, 64);
        assert_eq!(
            btf.type_by_id(member.type_id).unwrap().kind(),
            Some(Kind::Int)
        );
    }

    /// More distinct types than BTF has ids: an error that says so, not a panic.
    #[test]
    fn deduplicated_type_count_over_btf_ids_is_an_error() {
        let count = MAX_TYPE_ID + 1;
        let name: fn(u32) -> String = |i| alloc::format!("t{i:x}");
        // DW_TAG_typedef: one distinct type for each name.
        match to_btf(&dwarf(0x16, count, Some(name)), None) {
            Err(Error::Limit { what, limit }) => {
                assert!(what.contains("after deduplicat"), "{what}");
                assert_eq!(limit, MAX_TYPE_ID as usize);
            }
            other => panic!("{:?}", other.map(|b| b.len())),
        }
    }
}
