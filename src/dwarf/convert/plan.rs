//! How the walk reads the attributes of the DIEs of each abbreviation, worked out once per
//! abbreviation of a unit ([`Plans`]) instead of for each of a kernel's 11 million kept DIEs:
//! which runs of attributes to skip, which to read, and where each value read goes among the
//! DIE's values, kept in [`A`]'s order (the walk's `Attrs` reads them). Both passes read
//! attributes through it.
//!
//! Each DIE's values are gimli's `raw_value`s (the form's), not normalized by attribute name
//! as `value` does, which cost a kernel's walk a tenth of its time: the records read
//! constants of any form, and take a member location's block as the expression `value` would
//! make it.
//!
//! Most abbreviations (a kernel's members, pointers, typedefs, enumerators) have only forms
//! of a fixed size: their DIEs all lay their attributes out alike, so a plan measures where
//! each wanted attribute is in the first DIE (gimli skipping one attribute at a time) and
//! reads each DIE's values there with gimli's reader, the attributes then skipped at once:
//! gimli's attribute parser, called for each of a kernel's 26 million values, dispatching
//! on the form each time, was a third of the walk.

use super::values::{Packed, Values};
use crate::btf::dedup_table::{combine, spread};
use crate::error::Result;
use crate::fallible;
use alloc::vec::Vec;
use gimli::{AttributeValue, DwAt, Endianity, Reader, constants as dw};
use hashbrown::HashTable;

/// The attributes the records read, in the order the walk's `Attrs` keeps their values.
#[derive(Debug, Clone, Copy)]
pub(super) enum A {
    Name,
    Type,
    ByteSize,
    BitSize,
    DataBitOffset,
    BitOffset,
    MemberLocation,
    Encoding,
    UpperBound,
    Count,
    ConstValue,
    Declaration,
    External,
    Signature,
}

/// How many attributes the records read.
pub(super) const WANTED: usize = 14;

/// Where attribute `name` goes among a DIE's values (`None`: not read).
fn wanted(name: DwAt) -> Option<usize> {
    Some(match name {
        dw::DW_AT_name => A::Name,
        dw::DW_AT_type => A::Type,
        dw::DW_AT_byte_size => A::ByteSize,
        dw::DW_AT_bit_size => A::BitSize,
        dw::DW_AT_data_bit_offset => A::DataBitOffset,
        dw::DW_AT_bit_offset => A::BitOffset,
        dw::DW_AT_data_member_location => A::MemberLocation,
        dw::DW_AT_encoding => A::Encoding,
        dw::DW_AT_upper_bound => A::UpperBound,
        dw::DW_AT_count => A::Count,
        dw::DW_AT_const_value => A::ConstValue,
        dw::DW_AT_declaration => A::Declaration,
        dw::DW_AT_external => A::External,
        dw::DW_AT_signature => A::Signature,
        _ => return None,
    } as usize)
}

/// Abbreviation codes below this have their plan kept for the rest of the unit (gcc numbers
/// a unit's from 1, a few hundred at most); a larger one is planned again at each DIE.
const MAX_PLANNED_CODE: u64 = 1 << 16;

/// One step of a plan, over the abbreviation's attribute specifications.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// Skip specifications `from..to`.
    Skip { from: u32, to: u32 },
    /// Read specification `spec`, and insert its value at `at` among the values read so far
    /// (the values are kept in [`A`]'s order; most abbreviations have their wanted
    /// attributes in that order, and each value goes after the others).
    Read { spec: u32, at: u8 },
    /// A fixed layout's step (all of them, in [`A`]'s order): read specification `spec`, of
    /// `form`, `offset` bytes into the DIE's attributes, and as many more as its inline
    /// string has bytes if it comes `after` that string ([`Plan::string_at`]).
    Fixed {
        spec: u32,
        offset: u32,
        form: Fixed,
        after: bool,
    },
    /// A fixed layout's inline string ([`Plan::string_at`]), `offset` bytes into the DIE's
    /// attributes: its bytes up to the NUL.
    String { offset: u32 },
}

/// The forms a fixed layout reads, as gimli's parser reads them (its `raw_value`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fixed {
    Data1,
    Data2,
    /// Only from DWARF 4 on (before, gimli reads some attributes' `data4` as an offset).
    Data4,
    Flag,
    FlagPresent,
    ImplicitConst,
    Ref4,
    /// A 32-bit DWARF `.debug_str` offset.
    Strp,
}

impl Fixed {
    /// How a fixed layout reads a wanted attribute of `spec`, in a unit of `encoding`; `None`:
    /// not one it reads.
    fn of(spec: &gimli::AttributeSpecification, encoding: gimli::Encoding) -> Option<Fixed> {
        Some(match spec.form() {
            dw::DW_FORM_data1 => Fixed::Data1,
            dw::DW_FORM_data2 => Fixed::Data2,
            dw::DW_FORM_data4 if encoding.version >= 4 => Fixed::Data4,
            dw::DW_FORM_flag => Fixed::Flag,
            dw::DW_FORM_flag_present => Fixed::FlagPresent,
            dw::DW_FORM_implicit_const if spec.implicit_const_value().is_some() => {
                Fixed::ImplicitConst
            }
            dw::DW_FORM_ref4 => Fixed::Ref4,
            dw::DW_FORM_strp if encoding.format == gimli::Format::Dwarf32 => Fixed::Strp,
            _ => return None,
        })
    }
}

/// How many bytes the attributes `specs` take in every DIE of a unit with `header` (gimli's
/// sizes of the forms), and where their inline string starts if they have one: then counted
/// as empty (`DW_FORM_string`, as gcc writes a member's name of up to 3 bytes: a third of a
/// kernel's DIEs that are not all of fixed size, which gimli's reader read one attribute at
/// a time). `None` if any other form has no size, or a second string.
pub(super) fn layout(
    specs: &[gimli::AttributeSpecification],
    header: &gimli::UnitHeader<super::Reader<'_>>,
) -> Option<(u32, Option<u32>)> {
    let (mut size, mut string_at) = (0u32, None);
    for spec in specs {
        let bytes = if spec.form() == dw::DW_FORM_string && string_at.is_none() {
            string_at = Some(size);
            1
        } else {
            u32::try_from(spec.size(header)?).ok()?
        };
        size = size.checked_add(bytes)?;
    }
    Some((size, string_at))
}

/// The plan of one abbreviation: its steps in [`Plans`], which attributes its DIEs have, and
/// whether they stand for a type unit's type (`DW_AT_signature`).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Plan {
    first: u32,
    len: u32,
    present: u16,
    /// Whether its steps are in [`Plans::scratch`] (a code past [`MAX_PLANNED_CODE`]).
    scratch: bool,
    /// Whether its steps are a fixed layout's ([`Step::Fixed`]).
    pub(super) fixed: bool,
    /// Its DIEs have a `DW_AT_signature`.
    pub(super) signed: bool,
    /// How many bytes its attributes take, if as many in every DIE (all of them of forms of
    /// a fixed size; always so for a fixed layout), or (with [`Plan::string_at`]) as many
    /// with its inline string empty.
    pub(super) size: Option<u32>,
    /// Where its DIEs' one inline string starts among their attributes ([`layout`]), if they
    /// have one and every other attribute has a fixed size.
    pub(super) string_at: Option<u32>,
}

/// The plans of one unit's abbreviations, by code; emptied for each unit (its memory kept).
/// A plan depends only on its abbreviation's attribute specifications and its unit's
/// encoding, which a kernel's units repeat (2,172 units, 315 thousand abbreviations, a few
/// thousand distinct): each is made once and found again for the units after.
#[derive(Debug, Default)]
pub(super) struct Plans {
    /// By code: its plan, if planned yet.
    by_code: Vec<Option<Plan>>,
    /// The steps of every plan made so far.
    steps: Vec<Step>,
    /// The plans made so far: (hash of their specifications and encoding, index in `made`).
    known: HashTable<(u64, u32)>,
    /// Per plan made: its unit's encoding, where its specifications are in `specs`, and it.
    made: Vec<(gimli::Encoding, u32, u32, Plan)>,
    specs: Vec<gimli::AttributeSpecification>,
    /// The steps of the last plan of a code past [`MAX_PLANNED_CODE`].
    scratch: Vec<Step>,
    /// That plan.
    scratch_plan: Plan,
}

impl Plans {
    /// Forget which plan each code has (in the unit before).
    pub(super) fn clear(&mut self) {
        self.by_code.clear();
    }

    /// The plan made for `specs` in a unit of `encoding`, if one was.
    fn known(
        &self,
        h: u64,
        specs: &[gimli::AttributeSpecification],
        encoding: gimli::Encoding,
    ) -> Option<Plan> {
        let same = |&(hash, at): &(u64, u32)| {
            hash == h
                && self
                    .made
                    .get(at as usize)
                    .is_some_and(|&(e, start, len, _)| {
                        e == encoding
                            && self.specs.get(start as usize..(start + len) as usize) == Some(specs)
                    })
        };
        let &(_, at) = self.known.find(h, same)?;
        self.made.get(at as usize).map(|&(_, _, _, plan)| plan)
    }

    /// Keep `plan`, made for `specs` in a unit of `encoding` (hashed `h`), to be found again.
    fn remember(
        &mut self,
        h: u64,
        specs: &[gimli::AttributeSpecification],
        encoding: gimli::Encoding,
        plan: Plan,
    ) -> Result<()> {
        let too_many = |_| crate::error::Error::OutOfMemory;
        let (at, start, len) = (
            u32::try_from(self.made.len()).map_err(too_many)?,
            u32::try_from(self.specs.len()).map_err(too_many)?,
            u32::try_from(specs.len()).map_err(too_many)?,
        );
        fallible::extend(&mut self.specs, specs)?;
        fallible::push(&mut self.made, (encoding, start, len, plan))?;
        self.known.try_reserve(1, |&(hash, _)| hash)?;
        self.known.insert_unique(h, (h, at), |&(hash, _)| hash);
        Ok(())
    }

    /// The plan of `abbrev`, made now if it is the first DIE of its code. Either way it is
    /// read back from where it is kept: a plan just made and returned through the stack was
    /// stored in two parts and loaded in two others, and the load, spanning both stores,
    /// waited for every store before it to reach the cache (half of a kernel's walk).
    /// `raw` gives gimli's reader at the DIE's attributes (a first DIE of its code is
    /// measured for a fixed layout), in a unit with `header`.
    #[inline]
    pub(super) fn get<'u, 'a: 'u>(
        &mut self,
        abbrev: &gimli::Abbreviation,
        raw: impl FnOnce() -> gimli::Result<gimli::EntriesRaw<'u, 'u, super::Reader<'a>>>,
        header: &gimli::UnitHeader<super::Reader<'a>>,
    ) -> Result<Plan> {
        let code = abbrev.code();
        if code >= MAX_PLANNED_CODE || !matches!(self.by_code.get(code as usize), Some(Some(_))) {
            self.plan(abbrev, raw, header)?;
        }
        Ok(if code >= MAX_PLANNED_CODE {
            self.scratch_plan
        } else {
            self.by_code
                .get(code as usize)
                .copied()
                .flatten()
                .unwrap_or(self.scratch_plan)
        })
    }

    /// Plan `abbrev` ([`Plans::get`] of a code not planned yet): kept by its code, or in
    /// [`Plans::scratch_plan`] for a code past [`MAX_PLANNED_CODE`].
    #[inline(never)]
    fn plan<'u, 'a: 'u>(
        &mut self,
        abbrev: &gimli::Abbreviation,
        raw: impl FnOnce() -> gimli::Result<gimli::EntriesRaw<'u, 'u, super::Reader<'a>>>,
        header: &gimli::UnitHeader<super::Reader<'a>>,
    ) -> Result<()> {
        let code = abbrev.code();
        let specs = abbrev.attributes();
        let encoding = header.encoding();
        // A DIE cut short (no reader at its attributes) is read by the general plan, which
        // says so (and reads any DIE of the same specifications as well, in any unit).
        let make = |steps: &mut Vec<Step>, scratch: bool| {
            let layout = layout(specs, header);
            make_plan(specs, raw().ok().as_ref(), layout, encoding, steps, scratch)
        };
        if code >= MAX_PLANNED_CODE {
            self.scratch.clear();
            self.scratch_plan = make(&mut self.scratch, true)?;
            return Ok(());
        }
        let h = specs_hash(specs, encoding);
        let plan = match self.known(h, specs, encoding) {
            Some(plan) => plan,
            None => {
                let plan = make(&mut self.steps, false)?;
                self.remember(h, specs, encoding, plan)?;
                plan
            }
        };
        let code = code as usize;
        if code >= self.by_code.len() {
            self.by_code.try_reserve(code + 1 - self.by_code.len())?;
            self.by_code.resize(code + 1, None);
        }
        self.by_code[code] = Some(plan);
        Ok(())
    }

    /// Read the attributes `specs` of a DIE as `plan`, a fixed layout's, says, from
    /// `attributes` (the DIE's, its [`Plan::size`] bytes), into `values` (with room for
    /// [`WANTED`] more reserved by the caller). Returns which are present.
    #[inline]
    pub(super) fn read_fixed<'a>(
        &self,
        plan: Plan,
        attributes: super::Reader<'a>,
        specs: &[gimli::AttributeSpecification],
        values: &mut Values<'a>,
    ) -> gimli::Result<u16> {
        let steps = self.steps_of(plan);
        for &step in steps {
            if let Step::Fixed {
                spec, offset, form, ..
            } = step
            {
                read_fixed(attributes, offset, form, specs, spec, values)?;
            }
        }
        Ok(plan.present)
    }

    /// [`Plans::read_fixed`] of a layout with an inline string ([`Plan::string_at`]) of
    /// `stretch` bytes before its NUL: the attributes after it that many bytes further.
    #[inline(never)]
    pub(super) fn read_with_string<'a>(
        &self,
        plan: Plan,
        attributes: super::Reader<'a>,
        stretch: u32,
        specs: &[gimli::AttributeSpecification],
        values: &mut Values<'a>,
    ) -> gimli::Result<u16> {
        let steps = self.steps_of(plan);
        for &step in steps {
            match step {
                Step::Fixed {
                    spec,
                    offset,
                    form,
                    after,
                } => {
                    let offset = if after { offset + stretch } else { offset };
                    read_fixed(attributes, offset, form, specs, spec, values)?
                }
                Step::String { offset, .. } => {
                    let string = attributes
                        .slice()
                        .get(offset as usize..)
                        .and_then(|at| at.get(..stretch as usize))
                        .ok_or(gimli::Error::UnexpectedEof(attributes.offset_id()))?;
                    values.push(AttributeValue::String(gimli::EndianSlice::new(
                        string,
                        attributes.endian(),
                    )));
                }
                Step::Skip { .. } | Step::Read { .. } => {}
            }
        }
        Ok(plan.present)
    }

    /// `plan`'s steps.
    fn steps_of(&self, plan: Plan) -> &[Step] {
        let all = if plan.scratch {
            &self.scratch
        } else {
            &self.steps
        };
        all.get(plan.first as usize..(plan.first + plan.len) as usize)
            .unwrap_or(&[])
    }

    /// Read the attributes `specs` of the DIE at `raw` as `plan` says, into `values` (with
    /// room for [`WANTED`] more reserved by the caller, so that nothing is allocated here):
    /// the first of each name that [`wanted`] names, as gimli's `attr_value` finds it.
    /// Returns which are present.
    pub(super) fn read<'a>(
        &self,
        plan: Plan,
        raw: &mut gimli::EntriesRaw<'_, '_, super::Reader<'a>>,
        header: &gimli::UnitHeader<super::Reader<'a>>,
        specs: &[gimli::AttributeSpecification],
        values: &mut Values<'a>,
    ) -> gimli::Result<u16> {
        if plan.fixed {
            let attributes = header.range_from(raw.next_offset()..)?;
            let present = match plan.string_at {
                Some(at) => {
                    let stretch = string_length(attributes.slice(), at)
                        .ok_or(gimli::Error::UnexpectedEof(attributes.offset_id()))?;
                    self.read_with_string(plan, attributes, stretch, specs, values)?
                }
                None => self.read_fixed(plan, attributes, specs, values)?,
            };
            raw.skip_attributes(specs)?;
            return Ok(present);
        }
        let first = values.len();
        let steps = self.steps_of(plan);
        for &step in steps {
            match step {
                Step::Skip { from, to } => {
                    raw.skip_attributes(specs.get(from as usize..to as usize).unwrap_or(&[]))?
                }
                Step::Read { spec, at } => {
                    let Some(&spec) = specs.get(spec as usize) else {
                        continue;
                    };
                    let value = raw_value(raw, spec)?;
                    values.insert(first + usize::from(at), value);
                }
                // Only in a fixed layout's plan.
                Step::Fixed { .. } | Step::String { .. } => {}
            }
        }
        Ok(plan.present)
    }
}

/// The hash of attribute specifications `specs` in a unit of `encoding` ([`Plans::known`]).
fn specs_hash(specs: &[gimli::AttributeSpecification], encoding: gimli::Encoding) -> u64 {
    let start = combine(
        combine(
            u64::from(encoding.version),
            u32::from(encoding.address_size),
        ),
        encoding.format as u32,
    );
    spread(specs.iter().fold(start, |h, spec| {
        let constant = spec.implicit_const_value().unwrap_or(0) as u64;
        let h = combine(
            combine(h, u32::from(spec.name().0)),
            u32::from(spec.form().0),
        );
        combine(combine(h, constant as u32), (constant >> 32) as u32)
    }))
}

/// The plan of an abbreviation with attribute specifications `specs` of `layout` (theirs,
/// [`layout`]), whose first DIE is at `raw`, in a unit of `encoding`: a fixed layout's where
/// it has one ([`make_fixed`]), else the general one ([`make`]); its steps appended to
/// `steps` (`scratch`: they are [`Plans::scratch`]).
fn make_plan(
    specs: &[gimli::AttributeSpecification],
    raw: Option<&gimli::EntriesRaw<'_, '_, super::Reader<'_>>>,
    layout: Option<(u32, Option<u32>)>,
    encoding: gimli::Encoding,
    steps: &mut Vec<Step>,
    scratch: bool,
) -> Result<Plan> {
    let fixed = match (raw, layout) {
        (Some(raw), Some(_)) => make_fixed(specs, raw, encoding, steps, scratch)?,
        _ => None,
    };
    let mut plan = match fixed {
        Some(plan) => plan,
        None => make(specs, steps, scratch)?,
    };
    plan.size = layout.map(|(size, _)| size);
    plan.string_at = layout.and_then(|(_, string_at)| string_at);
    Ok(plan)
}

/// How many bytes the inline string at `at` among a DIE's `attributes` has before its NUL
/// (`None`: no NUL there).
#[inline]
pub(super) fn string_length(attributes: &[u8], at: u32) -> Option<u32> {
    let bytes = attributes.get(at as usize..)?;
    u32::try_from(bytes.iter().position(|&b| b == 0)?).ok()
}

/// Push the value of a fixed layout's attribute of specification `spec` of `specs`, of
/// `form`, `offset` bytes into `attributes` (a DIE's), as gimli's parser reads it, onto
/// `values`: the bytes taken by gimli's byte order, not through its reader, whose checks and
/// results per value were most of a fixed layout's reading, and packed as they are read.
#[inline(always)]
fn read_fixed<'a>(
    attributes: super::Reader<'a>,
    offset: u32,
    form: Fixed,
    specs: &[gimli::AttributeSpecification],
    spec: u32,
    values: &mut Values<'a>,
) -> gimli::Result<()> {
    // Never short of bytes (a layout's offsets are its abbreviation's), nor an implicit
    // constant without its value (gimli's parser reads none without).
    let eof = || gimli::Error::UnexpectedEof(attributes.offset_id());
    let endian = attributes.endian();
    let at = attributes.slice().get(offset as usize..).ok_or_else(eof)?;
    let bytes = |n: usize| at.get(..n).ok_or_else(eof);
    let packed = match form {
        Fixed::Data1 => Packed::data1(bytes(1)?[0]),
        Fixed::Data2 => Packed::data2(endian.read_u16(bytes(2)?)),
        Fixed::Data4 => Packed::data4(endian.read_u32(bytes(4)?)),
        Fixed::Flag => Packed::flag(bytes(1)?[0] != 0),
        Fixed::FlagPresent => Packed::flag(true),
        // The specification looked up only here, where it holds the value (of any size:
        // packed as the general plan's values are).
        Fixed::ImplicitConst => {
            let spec = specs.get(spec as usize).ok_or_else(eof)?;
            let value = spec.implicit_const_value().ok_or_else(eof)?;
            values.push(AttributeValue::Sdata(value));
            return Ok(());
        }
        Fixed::Ref4 => Packed::unit_ref(endian.read_u32(bytes(4)?)),
        Fixed::Strp => Packed::debug_str_ref(endian.read_u32(bytes(4)?)),
    };
    values.push_packed(packed);
    Ok(())
}

/// The plan of an abbreviation with attribute specifications `specs` whose forms all have a
/// fixed size but for one inline string in a unit of `encoding` ([`layout`]: the caller's to
/// check), and
/// whose wanted attributes are of forms [`read_fixed`] reads: where each of those is in the
/// DIE at `raw` (its first), measured by gimli skipping the attributes one by one. Its steps
/// appended to `steps`; `None` (nothing appended) for any other abbreviation.
fn make_fixed(
    specs: &[gimli::AttributeSpecification],
    raw: &gimli::EntriesRaw<'_, '_, super::Reader<'_>>,
    encoding: gimli::Encoding,
    steps: &mut Vec<Step>,
    scratch: bool,
) -> Result<Option<Plan>> {
    // (slot in `A`'s order, step), the first of each wanted name.
    let mut reads: heapless::Vec<(usize, Step), WANTED> = heapless::Vec::new();
    let mut present = 0u16;
    let mut probe = raw.clone();
    let start = probe.next_offset().0;
    // This DIE's inline string's length, once past it: the offsets after it are measured
    // as if it were empty (the layout's, [`layout`]).
    let mut stretch = None;
    for (i, spec) in specs.iter().enumerate() {
        let offset = probe.next_offset().0 - start - stretch.unwrap_or(0usize);
        if probe.skip_attributes(core::slice::from_ref(spec)).is_err() {
            // A DIE cut short: the general plan reads it (and says so).
            return Ok(None);
        }
        let after = stretch.is_some();
        let string = spec.form() == dw::DW_FORM_string && !after;
        if string {
            // The string and its NUL, of which the layout counts the NUL.
            stretch = Some((probe.next_offset().0 - start - offset).saturating_sub(1));
        }
        let Some(slot) = wanted(spec.name()).filter(|&slot| present & (1 << slot) == 0) else {
            continue;
        };
        let (Ok(index), Ok(offset)) = (u32::try_from(i), u32::try_from(offset)) else {
            return Ok(None);
        };
        let step = if string {
            Step::String { offset }
        } else {
            let Some(form) = Fixed::of(spec, encoding) else {
                return Ok(None);
            };
            Step::Fixed {
                spec: index,
                offset,
                form,
                after,
            }
        };
        present |= 1 << slot;
        // At most one per wanted name: there is room.
        let _ = reads.push((slot, step));
    }
    reads.sort_unstable_by_key(|&(slot, _)| slot);
    let first = u32::try_from(steps.len()).map_err(|_| crate::error::Error::OutOfMemory)?;
    steps.try_reserve(reads.len())?;
    steps.extend(reads.iter().map(|&(_, step)| step));
    Ok(Some(Plan {
        first,
        len: reads.len() as u32,
        present,
        scratch,
        fixed: true,
        signed: specs.iter().any(|s| s.name() == dw::DW_AT_signature),
        ..Plan::default()
    }))
}

/// The raw value of the attribute `spec` next at `raw`, read in place: not moved out of
/// gimli's result by `?`, a copy with wider loads than the stores that had just written it
/// field by field, which waited for them to reach memory (a kernel's `encode`: 7% less CPU).
#[inline(always)]
fn raw_value<'a>(
    raw: &mut gimli::EntriesRaw<'_, '_, super::Reader<'a>>,
    spec: gimli::AttributeSpecification,
) -> gimli::Result<super::Value<'a>> {
    let read = raw.read_attribute(spec);
    match &read {
        Ok(attr) => Ok(attr.raw_value()),
        Err(e) => Err(*e),
    }
}

/// The plan of an abbreviation with attribute specifications `specs`, its steps appended to
/// `steps`.
fn make(
    specs: &[gimli::AttributeSpecification],
    steps: &mut Vec<Step>,
    scratch: bool,
) -> Result<Plan> {
    let first = u32::try_from(steps.len()).map_err(|_| crate::error::Error::OutOfMemory)?;
    let mut present = 0u16;
    let mut skip_from = None;
    for (i, spec) in specs.iter().enumerate() {
        let i = u32::try_from(i).map_err(|_| crate::error::Error::OutOfMemory)?;
        // The first attribute of each name is read, as gimli's `attr_value` finds it.
        let slot = wanted(spec.name()).filter(|&slot| present & (1 << slot) == 0);
        let Some(slot) = slot else {
            skip_from.get_or_insert(i);
            continue;
        };
        if let Some(from) = skip_from.take() {
            fallible::push(steps, Step::Skip { from, to: i })?;
        }
        let bit = 1u16 << slot;
        // Among the values read before it, those of the attributes before it in `A`'s order.
        let at = (present & (bit - 1)).count_ones() as u8;
        present |= bit;
        fallible::push(steps, Step::Read { spec: i, at })?;
    }
    if let Some(from) = skip_from {
        let to = u32::try_from(specs.len()).map_err(|_| crate::error::Error::OutOfMemory)?;
        fallible::push(steps, Step::Skip { from, to })?;
    }
    const _: () = assert!(WANTED <= 16);
    let len = steps.len() as u32 - first;
    Ok(Plan {
        first,
        len,
        present,
        scratch,
        fixed: false,
        signed: specs.iter().any(|s| s.name() == dw::DW_AT_signature),
        ..Plan::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use gimli::{AttributeSpecification, DwAt, DwForm};

    /// The plan reads the first of each wanted name, skips the rest in runs, and puts each
    /// value in `A`'s order.
    #[test]
    fn plans_read_the_first_of_each_wanted_name_in_a_order() {
        let spec = |name: DwAt, form: DwForm| AttributeSpecification::new(name, form, None);
        let specs = [
            spec(dw::DW_AT_type, dw::DW_FORM_ref4),
            spec(dw::DW_AT_decl_file, dw::DW_FORM_data1),
            spec(dw::DW_AT_decl_line, dw::DW_FORM_data1),
            spec(dw::DW_AT_name, dw::DW_FORM_strp),
            spec(dw::DW_AT_type, dw::DW_FORM_ref4),
            spec(dw::DW_AT_signature, dw::DW_FORM_ref_sig8),
        ];
        let mut steps = Vec::new();
        let plan = make(&specs, &mut steps, false).unwrap();
        assert!(plan.signed);
        assert_eq!(plan.len as usize, steps.len());
        let shape: Vec<(char, u32, u32)> = steps
            .iter()
            .map(|s| match *s {
                Step::Skip { from, to } => ('s', from, to),
                Step::Read { spec, at } => ('r', spec, u32::from(at)),
                Step::Fixed { .. } | Step::String { .. } => ('f', 0, 0),
            })
            .collect();
        // Type read first (at 0), the decl pair skipped, the name read before it (at 0), the
        // second type skipped, the signature read after both (at 2).
        assert_eq!(
            shape,
            [
                ('r', 0, 0),
                ('s', 1, 3),
                ('r', 3, 0),
                ('s', 4, 5),
                ('r', 5, 2)
            ]
        );
        assert_eq!(plan.present, 1 << 0 | 1 << 1 | 1 << 13);
    }

    /// On the DWARF gcc and clang write (versions 4 and 5, type units, `dwz`, link-time
    /// optimization, relocatable modules), a fixed layout (with an inline string or without)
    /// reads every DIE's wanted values as the general plan (gimli's parser) reads them, and
    /// leaves the reader where it does.
    #[test]
    fn fixed_layouts_read_as_gimli_parses() {
        let (mut fixed_dies, mut string_dies) = (0, 0);
        super::super::for_each_fixture_unit(|name, unit| {
            let mut raw = unit.entries_raw(None).unwrap();
            while !raw.is_empty() {
                let Some(abbrev) = raw.read_abbreviation().unwrap() else {
                    continue;
                };
                let specs = abbrev.attributes();
                let mut steps = Vec::new();
                let read = |plan: Plan, steps: &[Step], raw: &mut gimli::EntriesRaw<_>| {
                    let plans = Plans {
                        steps: steps.to_vec(),
                        ..Plans::default()
                    };
                    let mut values = Values::default();
                    values.start_unit(super::super::cursor::entries(unit).unwrap());
                    values.reserve(WANTED).unwrap();
                    let present = plans
                        .read(plan, raw, &unit.header, specs, &mut values)
                        .unwrap();
                    let values: Vec<_> = (0..values.len()).map(|i| values.get(i)).collect();
                    (present, values)
                };
                let layout = layout(specs, &unit.header);
                let string_at = layout.and_then(|(_, string_at)| string_at);
                if let Some(mut fixed) = layout
                    .is_some()
                    .then(|| make_fixed(specs, &raw, unit.encoding(), &mut steps, false))
                    .transpose()
                    .unwrap()
                    .flatten()
                {
                    fixed.string_at = string_at;
                    fixed_dies += 1;
                    string_dies += usize::from(string_at.is_some());
                    let mut general_steps = Vec::new();
                    let general = make(specs, &mut general_steps, false).unwrap();
                    let mut by_parser = raw.clone();
                    assert_eq!(
                        read(fixed, &steps, &mut raw),
                        read(general, &general_steps, &mut by_parser),
                        "{name}: {:?}",
                        abbrev.tag()
                    );
                    assert_eq!(raw.next_offset(), by_parser.next_offset());
                } else {
                    raw.skip_attributes(specs).unwrap();
                }
            }
        });
        assert!(
            fixed_dies > 1000 && string_dies > 100,
            "{fixed_dies} DIEs read by a fixed layout, {string_dies} with an inline string"
        );
    }
}
