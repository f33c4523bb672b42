//! Every type DIE of every unit to one BTF record, as pahole 1.24's `-J` encodes it before
//! `btf__dedup` (its `dwarf_loader.c` and `btf_encoder.c` are the reference): the output is
//! one [`Types`] per input, its ids in the units' DFS order, which [`super::dedup`] then
//! deduplicates.
//!
//! Every type DIE gets its id in DFS order over the units; records made of no DIE of their
//! own (a function's `FUNC_PROTO` and `FUNC`, `DECL_TAG`s, the array index `int`) follow all
//! DIEs' ids. Most inputs (no type units, no supplementary file: a distribution's vmlinux
//! and modules) are read in one pass: the walk that converts a unit numbers its DIEs too, a
//! reference into a unit not walked yet (`DW_FORM_ref_addr`) and the extra records get
//! provisional ids, and those are settled once the last unit is numbered
//! ([`Input::settle_ids`]). The others, whose references may reach into type units or a
//! supplementary file's units found on the way, are numbered by a first pass over every unit
//! before the second converts them ([`super::Options::one_pass`] asks for that always; the
//! output is the same).
//!
//! Both passes use two threads when asked ([`super::Options::threads`]): the first scans the
//! two halves of the units at once and numbers their DIEs in unit order after; in the second
//! (or only) one, one thread walks the next unit while the other writes the records of the
//! one before. The ids, records, names and errors are those of one thread, in the same order.
//!
//! This file holds the input (units, references, attributes); `scan` is the first pass,
//! `walk` the converting pass's walk, `plan` how the walk reads each abbreviation's
//! attributes (and which attributes the records read), `values` how their values are kept,
//! and `records` writes each DIE's record.

mod cursor;
mod plan;
mod records;
mod scan;
mod values;
mod walk;

use super::{Record, Types};
use crate::btf::Kind;
use crate::btf::write::BtfWriter;
use crate::error::{Error, Result};
use crate::fallible;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use gimli::{
    AttributeValue, DwTag, EndianSlice, RunTimeEndian, Section, UnitOffset, constants as dw,
};
use hashbrown::HashMap;
use plan::A;
use walk::Attrs;

type Reader<'a> = EndianSlice<'a, RunTimeEndian>;
type Die<'abbrev, 'unit, 'a> = gimli::DebuggingInformationEntry<'abbrev, 'unit, Reader<'a>>;
type Value<'a> = AttributeValue<Reader<'a>>;

/// `DW_TAG_LLVM_annotation` (clang's `btf_type_tag` and `btf_decl_tag` attributes).
const DW_TAG_LLVM_ANNOTATION: DwTag = DwTag(0x6000);
/// How many modifiers an `_Atomic` may be stripped through (a cycle of them is malformed).
const MAX_ALIAS_HOPS: usize = 32;
/// pahole's `max_dimensions`: later subranges of an array are ignored.
const MAX_ARRAY_DIMENSIONS: usize = 64;
/// `BTF_INT_SIGNED`, `BTF_INT_BOOL`.
const INT_SIGNED: u32 = 1;
const INT_BOOL: u32 = 4;

/// What numbering found at a DIE offset, in [`UnitSlots::slots`]: a type DIE's BTF id, or
/// `ALIAS` for a DIE that stands for another (an `_Atomic` qualifier, BTF has no kind for it,
/// for what it qualifies; a skeleton with `DW_AT_signature` for its type unit's type), found
/// in [`UnitSlots::aliases`].
const ALIAS: u32 = u32::MAX;

/// Converting in one pass ([`Input::one_pass`]), the ids of extra records start here until
/// the last unit is numbered ([`Input::settle_ids`]): a DIE's id stays below it.
const EXTRA_BASE: u32 = 1 << 31;
/// Converting in one pass, a reference into a unit not numbered yet gets an id from here, the
/// index of its target in [`Output::pending`], until [`Input::settle_ids`].
const PENDING_BASE: u32 = 3 << 30;

/// A reference into a unit not numbered yet, converting in one pass: resolved once every
/// unit is ([`Input::settle_ids`]).
#[derive(Clone, Copy)]
struct Pending {
    target: Target,
    /// Where the reference was read.
    at: At,
    /// `_Atomic`s the reference went through before it reached the unit.
    hops: usize,
}

/// The slots of one unit's type DIEs and aliases, in offset order: the first pass's (in
/// [`UnitData`]), or, converting in one pass, its walk's (in [`Output::numbered`]).
#[derive(Debug, Default)]
struct UnitSlots {
    /// Offset and id (or [`ALIAS`]) of each type DIE and alias.
    slots: Vec<(u32, u32)>,
    /// Offset and target of each alias.
    aliases: Vec<(u32, Target)>,
    /// For each [`BUCKET_LEN`] bytes of the unit, the first slot at or after them
    /// ([`UnitSlots::index`]): a reference's slot is found among a few, where a binary search
    /// over them all was a chain of a dozen cache misses for each of the millions of
    /// references a kernel has.
    buckets: Vec<u32>,
}

/// Bytes of a unit per bucket of [`UnitSlots::buckets`] (a power of two): a few DIEs.
const BUCKET_LEN: u32 = 256;

impl UnitSlots {
    /// Index the slots, once the last is in.
    fn index(&mut self) -> Result<()> {
        let Some(&(last, _)) = self.slots.last() else {
            return Ok(());
        };
        let buckets = (last / BUCKET_LEN) as usize + 2;
        self.buckets = fallible::vec_with_capacity(buckets)?;
        let mut first = 0;
        for bucket in 0..buckets {
            while self
                .slots
                .get(first)
                .is_some_and(|&(o, _)| ((o / BUCKET_LEN) as usize) < bucket)
            {
                first += 1;
            }
            // Slots are fewer than a unit's bytes, which fit in 32 bits.
            self.buckets.push(first as u32);
        }
        Ok(())
    }

    /// The index of the slot at `offset`, if it has one.
    fn find(&self, offset: u32) -> Option<usize> {
        let bucket = (offset / BUCKET_LEN) as usize;
        let start = *self.buckets.get(bucket)? as usize;
        let end = *self.buckets.get(bucket + 1)? as usize;
        let i = self
            .slots
            .get(start..end)?
            .binary_search_by_key(&offset, |&(o, _)| o)
            .ok()?;
        Some(start + i)
    }
}

/// A DIE a reference points to.
#[derive(Debug, Clone, Copy)]
enum Target {
    Void,
    Die { unit: usize, offset: UnitOffset },
}

/// One unit: its header, and the slots of its DIEs in offset order. Its abbreviations are
/// parsed only while a pass is in it ([`Input::load`]), not kept for the whole run.
struct UnitData<'a> {
    header: gimli::UnitHeader<Reader<'a>>,
    section: &'static str,
    /// Offset of the unit's header in its section.
    start: u64,
    in_debug_types: bool,
    /// A unit of the supplementary file (`dwz -m`), which the input refers to.
    in_sup: bool,
    /// Its type DIEs numbered by the first pass (empty converting in one pass).
    numbered: UnitSlots,
}

/// Where in the input an error was found.
#[derive(Clone, Copy)]
struct At {
    section: &'static str,
    unit: u64,
    die: u64,
}

/// The next DIE of a raw walk over the unit starting at `unit_start`: its depth, offset and
/// abbreviation, with `at` pointed at it and its attributes next in `raw`; `None` at the
/// unit's end. Null entries (the ends of sibling lists) are passed over. Inlined: it runs
/// for each of a kernel's 14 million DIEs.
#[inline(always)]
fn next_die<'abbrev>(
    raw: &mut gimli::EntriesRaw<'abbrev, '_, Reader<'_>>,
    at: &mut At,
    unit_start: u64,
) -> Result<Option<(isize, UnitOffset, &'abbrev gimli::Abbreviation)>> {
    while !raw.is_empty() {
        let depth = raw.next_depth();
        let offset = raw.next_offset();
        at.die = unit_start + offset.0 as u64;
        if let Some(abbrev) = raw
            .read_abbreviation()
            .map_err(|e| at.err(gimli_reason(e)))?
        {
            return Ok(Some((depth, offset, abbrev)));
        }
    }
    Ok(None)
}

impl At {
    fn err(self, reason: &'static str) -> Error {
        Error::BadDwarf {
            section: self.section,
            unit: self.unit,
            die: self.die,
            reason,
        }
    }
}

fn gimli_reason(error: gimli::Error) -> &'static str {
    match error {
        gimli::Error::UnexpectedEof(_) => "truncated: data ends inside a record",
        gimli::Error::UnknownForm(_) => "an attribute has an unknown form",
        gimli::Error::UnknownVersion(_) => "unsupported DWARF version",
        gimli::Error::UnknownAbbreviation(_) => "a DIE names an abbreviation that does not exist",
        gimli::Error::OffsetOutOfBounds => "an offset points outside its section",
        _ => "malformed DWARF",
    }
}

/// The input, read-only while records are written: DIEs borrow from it.
struct Input<'a> {
    /// The input's DWARF, with its supplementary file's as `sup()`.
    dwarf: gimli::Dwarf<Reader<'a>>,
    /// The input's own units (`.debug_types`' first, then `.debug_info`'s in offset order:
    /// `main_units` of them), then the supplementary file's that they refer to, in the order
    /// found.
    units: Vec<UnitData<'a>>,
    main_units: usize,
    /// Every unit of the supplementary file, by offset, and its index in `units` once
    /// added.
    sup_units: Vec<(gimli::UnitHeader<Reader<'a>>, Option<usize>)>,
    /// Type unit signatures and where their types are, sorted by signature.
    signatures: Vec<(u64, usize, UnitOffset)>,
    /// Byte order, which `DW_AT_bit_offset` depends on.
    little: bool,
    /// Told of each unit's bytes once a pass is done with them (they may be read again).
    release: &'a (dyn Fn(&[u8]) + Sync),
    /// Whether the passes may run on two threads (read only with `std`, which has them).
    #[cfg_attr(not(feature = "std"), allow(dead_code))]
    threads: bool,
    /// Told how far the passes are.
    progress: &'a (dyn Fn(super::Progress) + Sync),
    /// Units the first pass has scanned, on either thread.
    scanned: core::sync::atomic::AtomicUsize,
    /// Whether the units are numbered as they are converted, in one pass, rather than by a
    /// first pass over all of them: for an input without type units or a supplementary file,
    /// whose references into other units (rare: `DW_FORM_ref_addr`) wait for their unit to
    /// be numbered ([`Output::pending`]). Without a pass of its own, numbering costs almost
    /// nothing: the walk that converts a unit reads every DIE of it anyway.
    one_pass: bool,
    /// Whether subprograms become `FUNC` records ([`super::Options::functions`]).
    functions: bool,
    /// The names the records' thread interned recently (its [`Output`] writes them), which
    /// the walks read too ([`RecentNames`]).
    recent_names: RecentNames,
}

/// The unit a pass is in, with its abbreviations (parsed for the pass, dropped after it): a
/// reference into it needs no other unit loaded.
type Current<'a> = Option<(usize, gimli::Unit<Reader<'a>>)>;

/// What the conversion writes.
struct Output<'a, 'w> {
    strings: &'w mut BtfWriter,
    types: Types,
    /// Records after the DIEs' own ids (`FUNC_PROTO`, `FUNC`, `DECL_TAG`, index `int`).
    extra: Types,
    /// The first extra record's id: one past the last DIE's ([`EXTRA_BASE`] until it is
    /// known, converting in one pass).
    first_extra: u32,
    /// The largest id an extra record may have (below [`PENDING_BASE`] converting in one
    /// pass).
    extra_limit: u32,
    index_type: Option<u32>,
    /// The function symbols, and whether a `FUNC` was emitted for each: looked up for each
    /// of a kernel's quarter million subprograms (a binary search over the sorted names was
    /// a few percent of `encode`'s records thread, comparing strings).
    functions: HashMap<&'a [u8], bool>,
    /// The name offset of each `.debug_str` offset interned (4-byte keys: half the table of
    /// 8-byte ones, read at random for each of a kernel's millions of names).
    names: HashMap<u32, u32>,
    /// The same for the supplementary file's `.debug_str`.
    sup_names: HashMap<u32, u32>,
    /// The unit whose records are being written.
    current: Current<'a>,
    /// Converting in one pass: the slots of the units numbered so far, by unit.
    numbered: Vec<UnitSlots>,
    /// Converting in one pass: the id after the last DIE's numbered so far.
    next_id: u32,
    /// Converting in one pass: references into units not numbered yet (their ids:
    /// [`PENDING_BASE`] and up).
    pending: Vec<Pending>,
    /// The kind-specific words of the record being made, kept between records: allocated
    /// afresh for each, they were most of the records' allocations (millions in a kernel).
    words: Vec<u32>,
}

/// The converter's state across all units of one input.
pub struct Converter<'a, 'w> {
    input: Input<'a>,
    out: Output<'a, 'w>,
}

impl<'a, 'w> Converter<'a, 'w> {
    /// Read every unit header of `sections` and, unless the units can be numbered as they
    /// are converted (`options` allow it; [`Input::one_pass`]), give every type DIE its id,
    /// and those of the units of `sup` (the supplementary file of a `dwz -m` input) that the
    /// input refers to (imports, or points a reference into), and that those refer to.
    /// Names are interned in `strings`.
    /// As `options` say: each unit's bytes released once a pass is done with them, each pass
    /// on two threads (the result is the same), progress told.
    pub fn new(
        sections: &'a super::sections::Sections<'a>,
        sup: Option<&'a super::sections::Sections<'a>>,
        strings: &'w mut BtfWriter,
        options: &super::Options<'a>,
    ) -> Result<Converter<'a, 'w>> {
        let endian = sections.endian;
        let mut dwarf = load_dwarf(sections, ".debug_info")?;
        if let Some(sup) = sup {
            let sup = load_dwarf(sup, SUP_INFO)?;
            // An `Arc`, which cannot fail: counted, not refused.
            crate::budget::count_only(|| dwarf.set_sup(sup));
        }
        // Read only where functions are converted.
        let mut functions = HashMap::new();
        if options.functions {
            functions.try_reserve(sections.functions.len())?;
            functions.extend(sections.functions.iter().map(|&f| (f, false)));
        }
        let mut input = Input {
            dwarf,
            units: Vec::new(),
            main_units: 0,
            sup_units: Vec::new(),
            signatures: Vec::new(),
            little: endian == RunTimeEndian::Little,
            release: options.release,
            threads: options.threads,
            progress: options.progress,
            scanned: core::sync::atomic::AtomicUsize::new(0),
            one_pass: false,
            functions: options.functions,
            recent_names: RecentNames::new(sections.get(gimli::SectionId::DebugStr).len())?,
        };
        input.read_headers()?;
        // Reading every unit's header mapped a page around each (the kernel maps 16 at a
        // time): let them go before the first pass reads the units one by one.
        input.release_sections();
        input.one_pass = options.one_pass
            && input.dwarf.sup().is_none()
            && input.signatures.is_empty()
            && input.units.iter().all(|u| !u.in_debug_types);
        let mut types = Types::new()?;
        let first_extra = if input.one_pass {
            // Extra records' ids and pending references' both start there.
            const _: () = assert!(EXTRA_BASE < PENDING_BASE);
            types.provisional = Some((EXTRA_BASE, Vec::new()));
            EXTRA_BASE
        } else {
            let next_id = input.number_types()?;
            input.release_sections();
            types.fill(next_id)?;
            next_id
        };
        let out = Output {
            strings,
            types,
            extra: Types::empty(),
            first_extra,
            extra_limit: if input.one_pass {
                PENDING_BASE - 1
            } else {
                super::MAX_RECORD_ID
            },
            index_type: None,
            functions,
            names: HashMap::new(),
            sup_names: HashMap::new(),
            current: None,
            numbered: Vec::new(),
            next_id: 1,
            pending: Vec::new(),
            words: Vec::new(),
        };
        Ok(Converter { input, out })
    }

    /// Every unit's records (the second pass, or the only one), ids from 1, and what
    /// `meanwhile` makes of their count: on a second thread while the ids settle, where
    /// the options allow one (what the deduplication works in, two arrays of 13 MB for a
    /// kernel, filled while the records' provisional ids are rewritten), else after (`None`
    /// only if that was lost: see [`super::beside`]).
    pub fn convert_with<T: Send>(
        self,
        meanwhile: impl FnOnce(usize) -> T + Send,
    ) -> Result<(Types, Option<T>)> {
        let Converter { input, mut out } = self;
        input.convert_units(&mut out)?;
        input.release_sections();
        let made = if input.one_pass {
            let pending = input.resolve_pending(&mut out)?;
            // The units' slots, with the records the peak: gone before the tables come.
            out.numbered = Vec::new();
            let records = out.types.records.len() + out.extra.records.len();
            let (settled, made) = super::beside(
                input.threads,
                || input.settle_ids(&mut out, &pending),
                || meanwhile(records),
            );
            settled?;
            let end = out.first_extra;
            fallible::push(&mut out.types.units, end)?;
            made
        } else {
            Some(meanwhile(out.types.records.len() + out.extra.records.len()))
        };
        let Output {
            mut types, extra, ..
        } = out;
        types.append(extra)?;
        Ok((types, made))
    }
}

/// A direct-mapped cache of the last name interned at each slot (`.debug_str` offset, name
/// offset) in front of [`Output::names`]: a hash table looked up for each of a kernel's
/// millions of names was a tenth of the records' thread. The walking threads read it too,
/// to give the records the names found there ([`Input::walk_unit`]), while the records'
/// thread writes it: each slot is one atomic word holding both offsets, so that a slot read
/// is a pair once written, and a name once interned keeps its offset.
struct RecentNames {
    slots: Vec<AtomicU64>,
}

/// Most slots of [`RecentNames`] (a power of two): 512 KiB.
const RECENT_NAMES: usize = 1 << 16;
/// A slot of [`RecentNames`] holding no name (no key is `u32::MAX`).
const NO_NAME: u64 = u64::MAX;

impl RecentNames {
    /// A cache for names of a `.debug_str` of `strings` bytes: a slot for each 8 bytes, up to
    /// [`RECENT_NAMES`].
    fn new(strings: usize) -> Result<RecentNames> {
        let len = (strings / 8).clamp(1, RECENT_NAMES).next_power_of_two();
        let mut slots = Vec::new();
        slots.try_reserve_exact(len)?;
        slots.resize_with(len, || AtomicU64::new(NO_NAME));
        Ok(RecentNames { slots })
    }

    /// The slot of `.debug_str` offset `key`.
    fn slot(&self, key: u32) -> Option<&AtomicU64> {
        let hash = u64::from(key).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 48;
        self.slots.get(hash as usize & (self.slots.len() - 1))
    }

    /// The name of `key`, if it is the one cached at its slot.
    #[inline]
    fn get(&self, key: u32) -> Option<u32> {
        RecentNames::name_in(self.entry(key), key)
    }

    /// What the slot of `key` holds now ([`RecentNames::name_in`] tells whether it is
    /// `key`'s name).
    #[inline]
    fn entry(&self, key: u32) -> u64 {
        self.slot(key)
            .map_or(NO_NAME, |slot| slot.load(Ordering::Relaxed))
    }

    /// The name of `key` in `entry`, a slot's, if it is `key`'s.
    #[inline]
    fn name_in(entry: u64, key: u32) -> Option<u32> {
        (entry >> 32 == u64::from(key) && key != u32::MAX).then_some(entry as u32)
    }

    /// Cache `key`'s `name` at its slot.
    fn remember(&self, key: u32, name: u32) {
        if let Some(slot) = self.slot(key) {
            slot.store(u64::from(key) << 32 | u64::from(name), Ordering::Relaxed);
        }
    }
}

/// Units between two releases of every DWARF section ([`Input::release_unit`]): a madvise
/// call each, over tens of megabytes that are mostly unmapped.
const RELEASE_EVERY: usize = 64;

/// Units whose bytes are released together ([`Input::release_unit`]): each release drops
/// the pages from this process's page tables, which with two threads interrupts the other
/// core to flush its TLB (a kernel's 2,172 units: as many interrupts, each a VM exit here).
const RELEASE_UNITS: usize = 16;

/// Where a supplementary unit's header starts in its file's `.debug_info`.
fn sup_start(header: &gimli::UnitHeader<Reader<'_>>) -> u64 {
    match header.offset() {
        gimli::UnitSectionOffset::DebugInfoOffset(o) => o.0 as u64,
        gimli::UnitSectionOffset::DebugTypesOffset(o) => o.0 as u64,
    }
}

/// The section errors in a supplementary file's units name.
const SUP_INFO: &str = "the supplementary file's .debug_info";

fn load_dwarf<'a>(
    sections: &'a super::sections::Sections<'a>,
    section: &'static str,
) -> Result<gimli::Dwarf<Reader<'a>>> {
    let endian = sections.endian;
    gimli::Dwarf::load(|id| Ok::<_, gimli::Error>(EndianSlice::new(sections.get(id), endian)))
        .map_err(|e| {
            At {
                section,
                unit: u64::MAX,
                die: u64::MAX,
            }
            .err(gimli_reason(e))
        })
}

impl<'a> Input<'a> {
    fn read_headers(&mut self) -> Result<()> {
        let mut at = At {
            section: ".debug_types",
            unit: u64::MAX,
            die: u64::MAX,
        };
        let mut headers = Vec::new();
        let mut types = self.dwarf.type_units();
        while let Some(header) = types.next().map_err(|e| at.err(gimli_reason(e)))? {
            fallible::push(&mut headers, (header, ".debug_types", true))?;
        }
        at.section = ".debug_info";
        let mut infos = self.dwarf.units();
        while let Some(header) = infos.next().map_err(|e| at.err(gimli_reason(e)))? {
            fallible::push(&mut headers, (header, ".debug_info", false))?;
        }
        self.units.try_reserve_exact(headers.len())?;
        for (header, section, in_debug_types) in headers {
            let start = match header.offset() {
                gimli::UnitSectionOffset::DebugInfoOffset(o) => o.0,
                gimli::UnitSectionOffset::DebugTypesOffset(o) => o.0,
            } as u64;
            if let gimli::UnitType::Type {
                type_signature,
                type_offset,
            } = header.type_()
            {
                fallible::push(
                    &mut self.signatures,
                    (type_signature.0, self.units.len(), type_offset),
                )?;
            }
            self.units.push(UnitData {
                header,
                section,
                start,
                in_debug_types,
                in_sup: false,
                numbered: UnitSlots::default(),
            });
        }
        self.main_units = self.units.len();
        self.signatures.sort_unstable_by_key(|&(s, _, _)| s);
        if let Some(sup) = self.dwarf.sup() {
            let at = At {
                section: SUP_INFO,
                unit: u64::MAX,
                die: u64::MAX,
            };
            let mut infos = sup.units();
            while let Some(header) = infos.next().map_err(|e| at.err(gimli_reason(e)))? {
                fallible::push(&mut self.sup_units, (header, None))?;
            }
        }
        Ok(())
    }

    /// The supplementary unit holding offset `offset` of its file's `.debug_info`, as an
    /// index into `sup_units`.
    fn sup_unit_at(&self, offset: u64) -> Option<usize> {
        self.sup_units
            .partition_point(|(h, _)| sup_start(h) <= offset)
            .checked_sub(1)
    }

    /// Add supplementary unit `sup` to the units: its index in `units`.
    fn add_sup_unit(&mut self, sup: usize) -> Result<usize> {
        let index = self.units.len();
        let (header, added) = &mut self.sup_units[sup];
        *added = Some(index);
        let header = *header;
        fallible::push(
            &mut self.units,
            UnitData {
                header,
                section: SUP_INFO,
                start: sup_start(&header),
                in_debug_types: false,
                in_sup: true,
                numbered: UnitSlots::default(),
            },
        )?;
        Ok(index)
    }

    /// The DWARF unit `index` belongs to: the input's, or its supplementary file's.
    fn dwarf_of(&self, index: usize) -> Result<&gimli::Dwarf<Reader<'a>>> {
        if self.units[index].in_sup {
            self.sup(self.unit_at(index))
        } else {
            Ok(&self.dwarf)
        }
    }

    /// The supplementary file's DWARF; an error at `at` (which refers into it) without one.
    fn sup(&self, at: At) -> Result<&gimli::Dwarf<Reader<'a>>> {
        self.dwarf.sup().ok_or_else(|| {
            at.err("a reference into a supplementary file (dwz -m), which was not given")
        })
    }

    /// Tell `release` that the DWARF sections' bytes (the input's and its supplementary
    /// file's) are not needed now: between the passes, and after them.
    fn release_sections(&self) {
        for dwarf in core::iter::once(&self.dwarf).chain(self.dwarf.sup()) {
            for section in [
                dwarf.debug_info.reader(),
                dwarf.debug_types.reader(),
                dwarf.debug_abbrev.reader(),
                dwarf.debug_line.reader(),
                dwarf.debug_str.reader(),
                dwarf.debug_str_offsets.reader(),
                dwarf.debug_line_str.reader(),
                dwarf.debug_addr.reader(),
            ] {
                (self.release)(section.slice());
            }
        }
    }

    /// Tell `release` that a pass is done with unit `index`'s bytes, those of
    /// [`RELEASE_UNITS`] units at a time; every [`RELEASE_EVERY`] units, all sections'
    /// (abbreviations, strings, line program headers: read a page at a time, so they gather
    /// over a pass).
    fn release_unit(&self, index: usize) {
        if index % RELEASE_EVERY == RELEASE_EVERY - 1 {
            self.release_sections();
            return;
        }
        if index % RELEASE_UNITS != RELEASE_UNITS - 1 && index + 1 != self.units.len() {
            return;
        }
        // The window's units, each range joined to the one before where it follows it.
        let mut pending: Option<(&[u8], usize, usize)> = None;
        for unit in index - index % RELEASE_UNITS..=index {
            let Some((section, start, end)) = self.unit_range(unit) else {
                continue;
            };
            match &mut pending {
                Some((s, _, e)) if core::ptr::eq(*s, section) && *e == start => *e = end,
                _ => {
                    if let Some((s, start, end)) = pending.replace((section, start, end)) {
                        (self.release)(&s[start..end]);
                    }
                }
            }
        }
        if let Some((s, start, end)) = pending {
            (self.release)(&s[start..end]);
        }
    }

    /// Unit `index`'s bytes: its section's, and where in it they are.
    fn unit_range(&self, index: usize) -> Option<(&'a [u8], usize, usize)> {
        let data = &self.units[index];
        let dwarf = self.dwarf_of(index).ok()?;
        let section = if data.in_debug_types {
            dwarf.debug_types.reader().slice()
        } else {
            dwarf.debug_info.reader().slice()
        };
        let start = usize::try_from(data.start).ok()?;
        let end = start
            .saturating_add(data.header.length_including_self())
            .min(section.len());
        (start <= end).then_some((section, start, end))
    }

    /// Where unit `index` starts, for its errors.
    fn unit_at(&self, index: usize) -> At {
        let data = &self.units[index];
        At {
            section: data.section,
            unit: data.start,
            die: u64::MAX,
        }
    }

    /// Unit `index` with its abbreviations, parsed. gimli allocates them (and its line
    /// program's header) as allocations that cannot fail: counted by the caller's budget, if
    /// any, but not refused, so a budget may pass its limit by one unit's share (with
    /// threads, that of each unit walked and not yet converted: a few) before its next
    /// allocation is refused.
    fn load(&self, index: usize) -> Result<gimli::Unit<Reader<'a>>> {
        let dwarf = self.dwarf_of(index)?;
        let mut unit = crate::budget::count_only(|| dwarf.unit(self.units[index].header))
            .map_err(|e| self.unit_at(index).err(gimli_reason(e)))?;
        // Its line program (every unit's file names) is never read: not kept.
        unit.line_program = None;
        Ok(unit)
    }

    /// `f` of unit `index`: the pass's `current` one, or (a reference into another unit,
    /// rare) that unit loaded for the call.
    fn with_unit<T>(
        &self,
        current: &Current<'a>,
        index: usize,
        f: impl FnOnce(&gimli::Unit<Reader<'a>>) -> Result<T>,
    ) -> Result<T> {
        match current {
            Some((i, unit)) if *i == index => f(unit),
            _ => f(&self.load(index)?),
        }
    }

    /// The DIE attribute `attr` of `die` (in unit `unit`) refers to, `Void` when it has none.
    fn target(
        &self,
        unit: usize,
        die: &Die<'_, '_, 'a>,
        attr: gimli::DwAt,
        at: At,
    ) -> Result<Target> {
        let value = die.attr_value(attr).map_err(|e| at.err(gimli_reason(e)))?;
        self.target_value(unit, value, at)
    }

    /// The DIE a reference attribute's `value` (of a DIE in unit `unit`) refers to, `Void`
    /// when there is none.
    fn target_value(&self, unit: usize, value: Option<Value<'a>>, at: At) -> Result<Target> {
        match value {
            None => Ok(Target::Void),
            Some(AttributeValue::UnitRef(offset)) => Ok(Target::Die { unit, offset }),
            Some(AttributeValue::DebugInfoRef(offset)) if self.units[unit].in_sup => {
                self.sup_target(offset.0 as u64, at)
            }
            Some(AttributeValue::DebugInfoRefSup(offset)) => self.sup_target(offset.0 as u64, at),
            Some(AttributeValue::DebugInfoRef(offset)) => {
                let offset = offset.0 as u64;
                // The unit of .debug_info holding `offset`: the last to start at or before it
                // (.debug_types' units come first, .debug_info's follow in offset order).
                let units = &self.units[..self.main_units];
                let first = units.partition_point(|u| u.in_debug_types);
                let after = first + units[first..].partition_point(|u| u.start <= offset);
                if after == first {
                    return Err(at.err("a reference points before the first unit"));
                }
                let unit = after - 1;
                Ok(Target::Die {
                    unit,
                    offset: UnitOffset((offset - self.units[unit].start) as usize),
                })
            }
            Some(AttributeValue::DebugTypesRef(signature)) => {
                let i = self
                    .signatures
                    .binary_search_by_key(&signature.0, |&(s, _, _)| s)
                    .map_err(|_| at.err("a type signature names no type unit"))?;
                let (_, unit, offset) = self.signatures[i];
                Ok(Target::Die { unit, offset })
            }
            Some(_) => Err(at.err("a type reference has a form that is no reference")),
        }
    }

    /// The DIE at `offset` of the supplementary file's `.debug_info`, in a unit the input
    /// imports.
    fn sup_target(&self, offset: u64, at: At) -> Result<Target> {
        self.sup(at)?;
        let unit = self
            .sup_unit_at(offset)
            .and_then(|sup| self.sup_units[sup].1)
            .ok_or_else(|| at.err("a reference into a supplementary unit not read"))?;
        Ok(Target::Die {
            unit,
            offset: UnitOffset((offset - self.units[unit].start) as usize),
        })
    }

    /// The BTF id a reference stands for: its type DIE's, through `_Atomic`s. A reference to
    /// a DIE that is no type BTF has (C++ references, `DW_TAG_unspecified_type`) is `void`,
    /// as pahole leaves it. Converting in one pass, a reference into a unit not numbered yet
    /// gets a pending id ([`Output::pending`]).
    fn resolve(&self, out: &mut Output<'a, '_>, target: Target, at: At) -> Result<u32> {
        self.resolve_from(
            out,
            Pending {
                target,
                at,
                hops: 0,
            },
        )
    }

    /// [`Input::resolve`], `reference.hops` hops into the chain of `_Atomic`s.
    fn resolve_from(&self, out: &mut Output<'a, '_>, reference: Pending) -> Result<u32> {
        let Pending { mut target, at, .. } = reference;
        for hops in reference.hops..MAX_ALIAS_HOPS {
            let Target::Die { unit, offset } = target else {
                return Ok(0);
            };
            if self.one_pass && unit >= out.numbered.len() {
                return out.pending_id(Pending { target, at, hops });
            }
            let numbered = if self.one_pass {
                &out.numbered[unit]
            } else {
                &self.units[unit].numbered
            };
            let Ok(offset) = u32::try_from(offset.0) else {
                return Ok(0);
            };
            match numbered.find(offset).map(|i| numbered.slots[i].1) {
                Some(id) if id != ALIAS => return Ok(id),
                Some(_) => {
                    let i = numbered
                        .aliases
                        .binary_search_by_key(&offset, |&(o, _)| o)
                        .map_err(|_| at.err("an alias without its target"))?;
                    target = numbered.aliases[i].1;
                }
                None => return Ok(0),
            }
        }
        Err(at.err("a cycle of _Atomic qualifiers"))
    }

    /// Converting in one pass, once every unit is numbered: the last DIE's id is known, and
    /// with it every record's slot; the id of each reference into a unit not numbered then
    /// ([`Output::pending`]), in order.
    fn resolve_pending(&self, out: &mut Output<'a, '_>) -> Result<Vec<u32>> {
        out.types.fill(out.next_id)?;
        let pending = core::mem::take(&mut out.pending);
        let mut ids = fallible::vec_with_capacity(pending.len())?;
        for &reference in &pending {
            ids.push(self.resolve_from(out, reference)?);
        }
        Ok(ids)
    }

    /// Converting in one pass, once the pending references have their `ids`
    /// ([`Input::resolve_pending`]): the extra records' ids follow the last DIE's, and each
    /// record's references to either get their final ids.
    fn settle_ids(&self, out: &mut Output<'a, '_>, ids: &[u32]) -> Result<()> {
        let count = out.next_id;
        let extras =
            u32::try_from(out.extra.records.len()).map_err(|_| super::too_many_records())?;
        count
            .checked_add(extras)
            .filter(|&end| end <= super::MAX_RECORD_ID)
            .ok_or_else(super::too_many_records)?;
        let settle = |id: u32| {
            if id >= PENDING_BASE {
                ids.get((id - PENDING_BASE) as usize).copied().unwrap_or(0)
            } else if id >= EXTRA_BASE {
                count + (id - EXTRA_BASE)
            } else {
                id
            }
        };
        out.types.map_provisional_ids(settle);
        out.extra.map_type_ids(settle);
        out.first_extra = count;
        Ok(())
    }

    /// The id of what the `DW_AT_type` of a DIE with `attrs` (in unit `unit`) refers to.
    fn type_of(
        &self,
        out: &mut Output<'a, '_>,
        unit: usize,
        attrs: &Attrs<'_, 'a>,
        at: At,
    ) -> Result<u32> {
        if let Some(id) = attrs.resolved_type() {
            return Ok(id);
        }
        let target = self.target_value(unit, attrs.get(A::Type), at)?;
        self.resolve(out, target, at)
    }

    /// The string a string attribute's `value` (of a DIE in unit `unit`) holds.
    fn string_of(
        &self,
        current: &Current<'a>,
        unit: usize,
        value: Option<Value<'a>>,
        at: At,
    ) -> Result<Option<&'a [u8]>> {
        match value {
            None => Ok(None),
            Some(value) => {
                if let AttributeValue::DebugStrRefSup(_) = value {
                    self.sup(at)?;
                }
                let dwarf = self.dwarf_of(unit)?;
                let s = self.with_unit(current, unit, |u| {
                    dwarf
                        .attr_string(u, value)
                        .map_err(|e| at.err(gimli_reason(e)))
                })?;
                Ok(Some(s.slice()))
            }
        }
    }

    /// Intern the string of string attribute `value` (of a DIE in unit `unit`): a string of
    /// `.debug_str` once for each of its offsets.
    fn intern_value(
        &self,
        out: &mut Output<'a, '_>,
        unit: usize,
        value: Option<Value<'a>>,
        at: At,
    ) -> Result<u32> {
        let own = self.dwarf_of(unit)?;
        // (the file whose .debug_str holds it, whether that is the supplementary file, offset)
        let (file, in_sup, offset) = match value {
            Some(AttributeValue::DebugStrRef(offset)) => (own, self.units[unit].in_sup, offset.0),
            Some(AttributeValue::DebugStrRefSup(offset)) => (self.sup(at)?, true, offset.0),
            Some(AttributeValue::DebugStrOffsetsIndex(index)) => {
                let offset = self.with_unit(&out.current, unit, |u| {
                    own.string_offset(u, index)
                        .map_err(|e| at.err(gimli_reason(e)))
                })?;
                (own, self.units[unit].in_sup, offset.0)
            }
            _ => {
                let s = self.string_of(&out.current, unit, value, at)?;
                return out.intern(s, at);
            }
        };
        // An offset past 4 GiB (DWARF64) is interned without the cache.
        let key = u32::try_from(offset).ok();
        // The cache holds the input's own names only.
        let recent = key.filter(|_| !in_sup);
        if let Some(name) = recent.and_then(|key| self.recent_names.get(key)) {
            return Ok(name);
        }
        if let Some(&name) = key.and_then(|key| out.name_cache(in_sup).get(&key)) {
            if let Some(key) = recent {
                self.recent_names.remember(key, name);
            }
            return Ok(name);
        }
        let s = file
            .string(gimli::DebugStrOffset(offset))
            .map_err(|e| at.err(gimli_reason(e)))?;
        let name = out.intern(Some(s.slice()), at)?;
        if let Some(key) = key {
            let names = out.name_cache(in_sup);
            names.try_reserve(1)?;
            names.insert(key, name);
            if let Some(key) = recent {
                self.recent_names.remember(key, name);
            }
        }
        Ok(name)
    }

    /// The interned `DW_AT_name` of a DIE with `attrs` (in unit `unit`; 0: none).
    fn name_of(
        &self,
        out: &mut Output<'a, '_>,
        unit: usize,
        attrs: &Attrs<'_, 'a>,
        at: At,
    ) -> Result<u32> {
        match attrs.recalled_name() {
            Some(name) => Ok(name),
            None => self.intern_value(out, unit, attrs.get(A::Name), at),
        }
    }

    fn udata(&self, die: &Die<'_, '_, 'a>, attr: gimli::DwAt, at: At) -> Result<Option<u64>> {
        let value = die.attr_value(attr).map_err(|e| at.err(gimli_reason(e)))?;
        Ok(value.and_then(|v| numeric(&v)))
    }
}

impl<'a, 'w> Output<'a, 'w> {
    /// The interned names of the input's `.debug_str`, or of the supplementary file's.
    fn name_cache(&mut self, in_sup: bool) -> &mut HashMap<u32, u32> {
        if in_sup {
            &mut self.sup_names
        } else {
            &mut self.names
        }
    }

    /// Intern a name (`None` and empty: anonymous, offset 0).
    fn intern(&mut self, name: Option<&[u8]>, at: At) -> Result<u32> {
        match name {
            None => Ok(0),
            Some(bytes) => self
                .strings
                .add_bytes_if(bytes, |new| core::str::from_utf8(new).is_ok())?
                .ok_or_else(|| at.err("a name is not UTF-8")),
        }
    }

    /// A pending id for `reference`, into a unit not numbered yet.
    fn pending_id(&mut self, reference: Pending) -> Result<u32> {
        let id = u32::try_from(self.pending.len())
            .ok()
            .and_then(|n| PENDING_BASE.checked_add(n))
            .filter(|&id| id <= super::MAX_RECORD_ID)
            .ok_or_else(super::too_many_records)?;
        fallible::push(&mut self.pending, reference)?;
        Ok(id)
    }

    /// The next extra record's id.
    fn next_extra(&self) -> Result<u32> {
        u32::try_from(self.extra.records.len())
            .ok()
            .and_then(|n| self.first_extra.checked_add(n))
            .filter(|&id| id <= self.extra_limit)
            .ok_or_else(super::too_many_records)
    }

    /// `make` with the kind-specific word buffer ([`Output::words`]), emptied, taken out of
    /// `self` meanwhile.
    fn with_words<T>(
        &mut self,
        make: impl FnOnce(&mut Self, &mut Vec<u32>) -> Result<T>,
    ) -> Result<T> {
        let mut words = core::mem::take(&mut self.words);
        words.clear();
        let made = make(self, &mut words);
        self.words = words;
        made
    }

    /// pahole's array index type: a signed 4-byte `int`, made once, when first needed.
    fn index_type(&mut self) -> Result<u32> {
        if let Some(id) = self.index_type {
            return Ok(id);
        }
        let id = self.next_extra()?;
        let name = self.strings.add_string("int")?;
        self.extra.push(
            Record::new(name, Kind::Int, false, 0, 4),
            &[(INT_SIGNED << 24) | 32],
        )?;
        self.index_type = Some(id);
        Ok(id)
    }
}

fn is_type_tag(tag: DwTag) -> bool {
    matches!(
        tag,
        dw::DW_TAG_base_type
            | dw::DW_TAG_pointer_type
            | dw::DW_TAG_const_type
            | dw::DW_TAG_volatile_type
            | dw::DW_TAG_restrict_type
            | dw::DW_TAG_typedef
            | dw::DW_TAG_structure_type
            | dw::DW_TAG_class_type
            | dw::DW_TAG_union_type
            | dw::DW_TAG_enumeration_type
            | dw::DW_TAG_array_type
            | dw::DW_TAG_subroutine_type
    )
}

/// A constant attribute as libdw's `dwarf_formudata` reads it (pahole's `attr_numeric`):
/// fixed-size data zero-extended, `sdata` sign-extended.
fn numeric(value: &AttributeValue<Reader<'_>>) -> Option<u64> {
    match *value {
        AttributeValue::Data1(v) => Some(v.into()),
        AttributeValue::Data2(v) => Some(v.into()),
        AttributeValue::Data4(v) => Some(v.into()),
        AttributeValue::Data8(v) => Some(v),
        AttributeValue::Udata(v) => Some(v),
        AttributeValue::Sdata(v) => Some(v as u64),
        // gimli's normalized `DW_AT_encoding` (`Input::udata`'s; the walk keeps raw values).
        AttributeValue::Encoding(e) => Some(e.0.into()),
        _ => None,
    }
}

/// The offset of a DWARF 2 member location expression `DW_OP_plus_uconst N`.
fn plus_uconst(expr: &[u8]) -> Option<u64> {
    let (&op, mut rest) = expr.split_first()?;
    if op != dw::DW_OP_plus_uconst.0 {
        return None;
    }
    let mut value = 0u64;
    let mut shift = 0;
    loop {
        let (&byte, tail) = rest.split_first()?;
        rest = tail;
        if shift < 64 {
            value |= u64::from(byte & 0x7f) << shift;
        }
        shift += 7;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
}

/// Each unit of the DWARF gcc and clang write (versions 4 and 5, type units, `dwz`, link-time
/// optimization, relocatable modules: the test fixtures), with its fixture's name: for tests
/// that read every DIE two ways.
#[cfg(test)]
fn for_each_fixture_unit(mut f: impl FnMut(&str, &gimli::Unit<Reader<'_>>)) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/dwarf");
    for name in [
        "gcc-dwarf4.so",
        "gcc-dwarf5.so",
        "gcc-dwarf4-types.so",
        "gcc-dwarf4-dwz.so",
        "gcc-dwarf5-lto.so",
        "gcc-dwarf5-rel.ko",
        "clang-19-dwarf4.so",
        "clang-19-dwarf5.so",
        "clang-19-dwarf4-types.so",
        "clang-19-dwarf5-rel.ko",
    ] {
        let data = std::fs::read(std::format!("{dir}/{name}")).unwrap();
        let sections = super::sections::Sections::read(&data, false).unwrap();
        let dwarf = load_dwarf(&sections, ".debug_info").unwrap();
        let mut headers = dwarf.units();
        while let Some(header) = headers.next().unwrap() {
            f(name, &dwarf.unit(header).unwrap());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plus_uconst_reads_uleb128() {
        // DW_OP_plus_uconst 624 (0xf0 0x04), as DWARF 2 compilers write member locations.
        assert_eq!(plus_uconst(&[0x23, 0xf0, 0x04]), Some(624));
        assert_eq!(plus_uconst(&[0x23, 0x08]), Some(8));
        // Truncated, or another operation: no constant offset.
        assert_eq!(plus_uconst(&[0x23, 0x80]), None);
        assert_eq!(plus_uconst(&[0x10, 0x08]), None);
        assert_eq!(plus_uconst(&[]), None);
    }

    #[test]
    fn numeric_extends_as_libdw_does() {
        assert_eq!(numeric(&AttributeValue::Data1(0xff)), Some(0xff));
        assert_eq!(
            numeric(&AttributeValue::Data4(0xffff_ffff)),
            Some(0xffff_ffff)
        );
        assert_eq!(numeric(&AttributeValue::Sdata(-2)), Some(-2i64 as u64));
        assert_eq!(numeric(&AttributeValue::Flag(true)), None);
    }
}
