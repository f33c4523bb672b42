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

use crate::error::Result;
use crate::fallible;
use alloc::vec::Vec;
use gimli::{DwAt, constants as dw};

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
    /// Its DIEs have a `DW_AT_signature`.
    pub(super) signed: bool,
}

/// The plans of one unit's abbreviations, by code; emptied for each unit (its memory kept).
#[derive(Debug, Default)]
pub(super) struct Plans {
    /// By code: its plan, if planned yet.
    by_code: Vec<Option<Plan>>,
    steps: Vec<Step>,
    /// The steps of the last plan of a code past [`MAX_PLANNED_CODE`].
    scratch: Vec<Step>,
    /// That plan.
    scratch_plan: Plan,
}

impl Plans {
    /// Forget the plans (of the unit before).
    pub(super) fn clear(&mut self) {
        self.by_code.clear();
        self.steps.clear();
    }

    /// The plan of `abbrev`, made now if it is the first DIE of its code. Either way it is
    /// read back from where it is kept: a plan just made and returned through the stack was
    /// stored in two parts and loaded in two others, and the load, spanning both stores,
    /// waited for every store before it to reach the cache (half of a kernel's walk).
    #[inline]
    pub(super) fn get(&mut self, abbrev: &gimli::Abbreviation) -> Result<Plan> {
        let code = abbrev.code();
        if code >= MAX_PLANNED_CODE || !matches!(self.by_code.get(code as usize), Some(Some(_))) {
            self.plan(abbrev)?;
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
    fn plan(&mut self, abbrev: &gimli::Abbreviation) -> Result<()> {
        let code = abbrev.code();
        if code >= MAX_PLANNED_CODE {
            self.scratch.clear();
            self.scratch_plan = make(abbrev.attributes(), &mut self.scratch, true)?;
            return Ok(());
        }
        let code = code as usize;
        if code >= self.by_code.len() {
            self.by_code.try_reserve(code + 1 - self.by_code.len())?;
            self.by_code.resize(code + 1, None);
        }
        let plan = make(abbrev.attributes(), &mut self.steps, false)?;
        self.by_code[code] = Some(plan);
        Ok(())
    }

    /// Read the attributes `specs` of the DIE at `raw` as `plan` says, into `values` (with
    /// room for [`WANTED`] more reserved by the caller, so that nothing is allocated here):
    /// the first of each name that [`wanted`] names, as gimli's `attr_value` finds it.
    /// Returns which are present.
    pub(super) fn read<'a>(
        &self,
        plan: Plan,
        raw: &mut gimli::EntriesRaw<'_, '_, super::Reader<'a>>,
        specs: &[gimli::AttributeSpecification],
        values: &mut Vec<super::Value<'a>>,
    ) -> gimli::Result<u16> {
        let steps = if plan.scratch {
            &self.scratch
        } else {
            &self.steps
        };
        let first = values.len();
        let steps = steps
            .get(plan.first as usize..(plan.first + plan.len) as usize)
            .unwrap_or(&[]);
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
                    let at = first + usize::from(at);
                    // Always true with the room reserved: a value is never allocated for here.
                    if values.len() < values.capacity() && at <= values.len() {
                        values.insert(at, value);
                    }
                }
            }
        }
        Ok(plan.present)
    }
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
        signed: specs.iter().any(|s| s.name() == dw::DW_AT_signature),
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
}
