//! The first pass, for inputs with type units or a supplementary file (the others are
//! numbered by the converting walk, `walk`): every type DIE of every unit numbered (ids must
//! be known before a DIE can refer to one further down, in another unit or a type unit),
//! `_Atomic`s and type-unit skeletons recorded as aliases, and the supplementary units the
//! input refers to found.
//! With two threads the halves of the units are scanned at once and numbered in unit order
//! after: the same ids, and the same first error, as one thread.

use super::plan::{Plans, WANTED};
use super::values::Values;
use super::{
    A, ALIAS, At, Attrs, DW_TAG_LLVM_ANNOTATION, Input, Reader, UnitSlots, gimli_reason,
    is_type_tag, next_die, walk,
};
use crate::error::{Error, Result};
use crate::fallible;
use alloc::vec::Vec;
use gimli::{AttributeValue, DwTag, constants as dw};

/// The first pass's result for one unit: its slots and aliases with its type DIEs numbered
/// from 0 (the ids before them are known only once the units before it are numbered), the
/// supplementary units it refers to in the order found, and the error that stopped it.
#[derive(Default)]
struct Scanned {
    numbered: UnitSlots,
    count: u32,
    sup_refs: Vec<usize>,
    error: Option<Error>,
}

/// The supplementary units to convert, each queued once, in the order first referred to.
struct SupQueue {
    queued: Vec<bool>,
    order: Vec<usize>,
}

impl SupQueue {
    fn new(units: usize) -> Result<SupQueue> {
        let mut queued = fallible::vec_with_capacity(units)?;
        queued.resize(units, false);
        Ok(SupQueue {
            queued,
            order: Vec::new(),
        })
    }

    fn queue(&mut self, sup: usize) -> Result<()> {
        if let Some(queued @ false) = self.queued.get_mut(sup) {
            *queued = true;
            fallible::push(&mut self.order, sup)?;
        }
        Ok(())
    }
}

/// Whether an attribute of `form` refers into the supplementary file: `DW_FORM_GNU_ref_alt`
/// and DWARF 5's `ref_sup4/8`, and `DW_FORM_ref_addr` in a unit of that file itself.
fn refers_to_sup(form: gimli::DwForm, in_sup: bool) -> bool {
    matches!(
        form,
        dw::DW_FORM_GNU_ref_alt | dw::DW_FORM_ref_sup4 | dw::DW_FORM_ref_sup8
    ) || (in_sup && form == dw::DW_FORM_ref_addr)
}

impl<'a> Input<'a> {
    /// The first pass: the input's units numbered, then the supplementary units they refer
    /// to (and that those refer to), each added to the units as it is found. Returns the id
    /// after the last.
    pub(super) fn number_types(&mut self) -> Result<u32> {
        let mut next_id = 1u32;
        // The supplementary units referred to, in the order found; each one's own references
        // are found while it is read, so this also grows as it is walked.
        let mut wanted = SupQueue::new(self.sup_units.len())?;
        self.assign_main_ids(&mut next_id, &mut wanted)?;
        let mut next = 0;
        while let Some(&sup) = wanted.order.get(next) {
            next += 1;
            let index = self.add_sup_unit(sup)?;
            let scanned = self.scan(index);
            self.place(index, scanned, &mut next_id, &mut wanted)?;
        }
        Ok(next_id)
    }

    /// First pass over the input's own units: their type DIEs numbered in unit order from
    /// `next_id`, the supplementary units they refer to queued in `wanted`. With
    /// [`Input::threads`], the second half of the units (by bytes) is scanned on a thread of
    /// its own while this one scans the first; either way the ids, the queue and the error
    /// (the first failing unit's) are the same.
    fn assign_main_ids(&mut self, next_id: &mut u32, wanted: &mut SupQueue) -> Result<()> {
        #[cfg(feature = "std")]
        if self.threads
            && let Some([first, second]) = self.scan_halves()
        {
            for (index, scanned) in first?.into_iter().chain(second?).enumerate() {
                self.place(index, scanned, next_id, wanted)?;
            }
            return Ok(());
        }
        for index in 0..self.main_units {
            let scanned = self.scan(index);
            self.place(index, scanned, next_id, wanted)?;
        }
        Ok(())
    }

    /// The input's own units scanned on two threads, split where half of their bytes are
    /// behind; `None` if the second thread cannot be started.
    #[cfg(feature = "std")]
    fn scan_halves(&self) -> Option<[Result<Vec<Scanned>>; 2]> {
        let units = &self.units[..self.main_units];
        let size = |u: &super::UnitData<'_>| u.header.length_including_self() as u64;
        let total: u64 = units.iter().map(size).sum();
        let mut behind = 0u64;
        let mid = units
            .iter()
            .position(|u| {
                behind += size(u);
                behind > total / 2
            })
            .map_or(units.len(), |i| i + 1);
        std::thread::scope(|scope| {
            let budget = crate::budget::inherit();
            let second = crate::budget::uncharged(|| {
                std::thread::Builder::new()
                    .name("btfgen-dwarf".into())
                    .spawn_scoped(scope, || budget.run(|| self.scan_range(mid..units.len())))
            })
            .ok()?;
            let first = self.scan_range(0..mid);
            let second = second.join().unwrap_or(Err(Error::InvalidArgument(
                "DWARF conversion: the second thread's scan did not finish",
            )));
            Some([first, second])
        })
    }

    /// The units `range` scanned, up to the first that fails.
    #[cfg(feature = "std")]
    fn scan_range(&self, range: core::ops::Range<usize>) -> Result<Vec<Scanned>> {
        let mut all = fallible::vec_with_capacity(range.len())?;
        for index in range {
            let scanned = self.scan(index);
            let failed = scanned.error.is_some();
            all.push(scanned);
            if failed {
                break;
            }
        }
        Ok(all)
    }

    /// Number unit `index`'s type DIEs from `next_id`, keep its slots and queue the
    /// supplementary units it refers to, as a scan of it in order would have; then its
    /// scan's error, if it failed.
    fn place(
        &mut self,
        index: usize,
        mut scanned: Scanned,
        next_id: &mut u32,
        wanted: &mut SupQueue,
    ) -> Result<()> {
        let base = *next_id;
        for slot in &mut scanned.numbered.slots {
            if slot.1 != ALIAS {
                let id = base
                    .checked_add(slot.1)
                    .filter(|&id| id <= crate::dwarf::MAX_RECORD_ID)
                    .ok_or_else(crate::dwarf::too_many_records)?;
                *next_id = crate::dwarf::next_record_id(id)?;
                slot.1 = id;
            }
        }
        for &sup in &scanned.sup_refs {
            wanted.queue(sup)?;
        }
        if let Some(error) = scanned.error {
            return Err(error);
        }
        scanned.numbered.index()?;
        self.units[index].numbered = scanned.numbered;
        Ok(())
    }

    /// First pass over unit `index` (its bytes released after it): its slots, type DIEs
    /// numbered from 0.
    fn scan(&self, index: usize) -> Scanned {
        let mut scanned = Scanned::default();
        if let Err(error) = self.scan_into(index, &mut scanned) {
            scanned.error = Some(error);
        }
        self.release_unit(index);
        let done = 1 + self
            .scanned
            .fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        (self.progress)(crate::dwarf::Progress::Numbered {
            done,
            total: self.units.len(),
        });
        scanned
    }

    /// First pass over unit `index` into `scanned`: slots for its type DIEs (numbered from
    /// 0), aliases for its `_Atomic`s, and the supplementary units it refers to. Only the DIEs
    /// that may be aliases or type tags, or have an attribute of a form that refers into the
    /// supplementary file, have their attributes read.
    fn scan_into(&self, index: usize, scanned: &mut Scanned) -> Result<()> {
        let has_sup = self.dwarf.sup().is_some();
        let data = &self.units[index];
        let mut at = At {
            section: data.section,
            unit: data.start,
            die: u64::MAX,
        };
        let current = Some((index, self.load(index)?));
        let Some((_, unit)) = &current else {
            return Ok(());
        };
        let Scanned {
            numbered: UnitSlots { slots, aliases, .. },
            count,
            sup_refs,
            ..
        } = scanned;
        let mut parents: Vec<DwTag> = Vec::new();
        let mut values = Values::default();
        values.start_unit(super::cursor::entries(unit).map_err(|e| at.err(gimli_reason(e)))?);
        let mut plans = Plans::default();
        let mut raw = unit
            .entries_raw(None)
            .map_err(|e| at.err(gimli_reason(e)))?;
        while let Some((depth, offset, abbrev)) = next_die(&mut raw, &mut at, data.start)? {
            let level = usize::try_from(depth).map_err(|_| at.err(walk::DEPTH_BELOW_ZERO))?;
            parents.truncate(level);
            let parent = parents.last().copied();
            let tag = abbrev.tag();
            let specs = abbrev.attributes();
            let plan = plans.get(abbrev, || Ok(raw.clone()), &unit.header)?;
            let annotation =
                tag == DW_TAG_LLVM_ANNOTATION && parent == Some(dw::DW_TAG_pointer_type);
            if has_sup && specs.iter().any(|s| refers_to_sup(s.form(), data.in_sup)) {
                self.sup_references(&raw, specs, data.in_sup, sup_refs, at)?;
            }
            let slot = if !plan.signed && !annotation && tag != dw::DW_TAG_atomic_type {
                raw.skip_attributes(specs)
                    .map_err(|e| at.err(gimli_reason(e)))?;
                is_type_tag(tag).then_some(None)
            } else {
                values.clear();
                values.reserve(WANTED)?;
                let present = plans
                    .read(plan, &mut raw, &unit.header, specs, &mut values)
                    .map_err(|e| at.err(gimli_reason(e)))?;
                let attrs = Attrs::new(present, &values, 0);
                if let Some(signature) = attrs.get(A::Signature) {
                    // gcc's skeleton of a type that a type unit defines: it stands for that
                    // type.
                    Some(Some(self.target_value(index, Some(signature), at)?))
                } else if is_type_tag(tag)
                    || (annotation
                        && self.string_of(&current, index, attrs.get(A::Name), at)?
                            == Some(&b"btf_type_tag"[..]))
                {
                    Some(None)
                } else if tag == dw::DW_TAG_atomic_type {
                    Some(Some(self.target_value(index, attrs.get(A::Type), at)?))
                } else {
                    None
                }
            };
            // `Some(None)`: a type DIE; `Some(Some(target))`: an alias.
            if let Some(alias) = slot {
                let offset = walk::slot_offset(offset, at)?;
                let id = match alias {
                    None => {
                        let id = *count;
                        *count = crate::dwarf::next_record_id(id)?;
                        id
                    }
                    Some(target) => {
                        fallible::push(aliases, (offset, target))?;
                        ALIAS
                    }
                };
                fallible::push(slots, (offset, id))?;
            }
            fallible::push(&mut parents, tag)?;
        }
        Ok(())
    }

    /// Add to `refs` the supplementary units the attributes `specs` of the DIE at `raw` refer
    /// to (read from a copy of `raw`, which stays where it is). In a unit of the supplementary
    /// file, a `DW_FORM_ref_addr` refers into that file too.
    fn sup_references(
        &self,
        raw: &gimli::EntriesRaw<'_, '_, Reader<'a>>,
        specs: &[gimli::AttributeSpecification],
        in_sup: bool,
        refs: &mut Vec<usize>,
        at: At,
    ) -> Result<()> {
        let mut raw = raw.clone();
        for spec in specs {
            let attr = raw
                .read_attribute(*spec)
                .map_err(|e| at.err(gimli_reason(e)))?;
            let offset = match attr.value() {
                AttributeValue::DebugInfoRefSup(o) => o.0,
                AttributeValue::DebugInfoRef(o) if in_sup => o.0,
                _ => continue,
            };
            let sup = self
                .sup_unit_at(offset as u64)
                .ok_or_else(|| at.err("a reference before the supplementary file's first unit"))?;
            fallible::push(refs, sup)?;
        }
        Ok(())
    }
}
