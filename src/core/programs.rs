//! Which entry programs each CO-RE relocation is applied to.
//!
//! libbpf appends every `.text` sub-program an entry program calls (statically, or as a
//! callback) to that program, so a relocation in a sub-program is applied once per caller.
//! That is a property of the call graph alone: it is read off the assembled programs, with no
//! value analysis, so that `relocate`, [`crate::minimize::RelocInfo`] and the C ABI can name
//! each relocation's callers without paying for [`crate::core::verdict`].

use crate::btf::Btf;
use crate::core::relocate::RelocatedObject;
use crate::error::{Error, Result};
use crate::fallible;
use crate::object::BpfObject;
use crate::object::assemble::{AssembledProgram, SectionCode, assemble_all_code};
use alloc::vec::Vec;
use hashbrown::HashMap;

/// A relocation libbpf applies to an entry program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgramRelocation {
    /// Index into [`RelocatedObject::relocations`].
    pub relocation: usize,
    /// Instruction index in the assembled entry program.
    pub insn: u32,
    /// Whether it lives in an appended sub-program.
    pub in_subprog: bool,
}

/// An entry program and the relocations libbpf applies to it.
#[derive(Debug)]
pub struct EntryRelocations<'o> {
    /// Entry program name (libbpf's).
    pub program: &'o str,
    /// ELF section of the entry program.
    pub section: &'o str,
    /// The relocations of the program and its appended sub-programs, in assembled-instruction
    /// order.
    pub relocations: Vec<ProgramRelocation>,
}

/// Anything that names an entry program and the relocations applied to it: the plain listing
/// ([`EntryRelocations`]) or a judged program ([`crate::core::verdict::EntryProgram`]).
pub trait AppliedRelocations {
    /// Entry program name (libbpf's).
    fn program(&self) -> &str;
    /// The relocations applied to it.
    fn relocations(&self) -> &[ProgramRelocation];
}

impl AppliedRelocations for EntryRelocations<'_> {
    fn program(&self) -> &str {
        self.program
    }

    fn relocations(&self) -> &[ProgramRelocation] {
        &self.relocations
    }
}

/// Every entry program of `obj`, assembled from `relocated`'s patched sections as libbpf
/// assembles it, with the relocations applied to it. `local` is the object's parsed `.BTF`.
pub fn entry_relocations<'o>(
    obj: &BpfObject<'o>,
    local: &Btf<'o>,
    relocated: &RelocatedObject<'o, '_>,
) -> Result<Vec<EntryRelocations<'o>>> {
    let mut out = Vec::new();
    for_each_assembled(obj, local, relocated, |assembled, relocations| {
        fallible::push(
            &mut out,
            EntryRelocations {
                program: assembled.program.name,
                section: assembled.program.section_name,
                relocations,
            },
        )
    })?;
    Ok(out)
}

/// Assemble every entry program of `obj` from `relocated`'s sections and hand each, with the
/// relocations applied to it, to `each`.
pub(crate) fn for_each_assembled<'o>(
    obj: &BpfObject<'o>,
    local: &Btf<'o>,
    relocated: &RelocatedObject<'o, '_>,
    mut each: impl FnMut(&AssembledProgram<'o>, Vec<ProgramRelocation>) -> Result<()>,
) -> Result<()> {
    let mut code = fallible::vec_with_capacity(relocated.sections.len())?;
    code.extend(relocated.sections.iter().map(|s| SectionCode {
        section_index: s.index,
        insns: &s.insns,
    }));
    // Each section's relocations, in record order: a part's are those within its code.
    let mut by_section: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, r) in relocated.relocations.iter().enumerate() {
        by_section.try_reserve(1).map_err(|_| Error::OutOfMemory)?;
        fallible::push(by_section.entry(r.section).or_default(), i)?;
    }
    for assembled in assemble_all_code(obj, local, &code)? {
        let relocations = relocations_of(&assembled, relocated, &by_section)?;
        each(&assembled, relocations)?;
    }
    Ok(())
}

/// The entry programs a relocation is applied to (libbpf appends a sub-program to each
/// caller).
pub fn callers<P: AppliedRelocations>(
    programs: &[P],
    relocation: usize,
) -> impl Iterator<Item = &str> {
    programs
        .iter()
        .filter(move |p| p.relocations().iter().any(|r| r.relocation == relocation))
        .map(|p| p.program())
}

/// The relocations of `assembled`, in assembled-instruction order: each part's, moved from
/// its section to where the part starts (as libbpf moves a sub-program's CO-RE records).
fn relocations_of(
    assembled: &AssembledProgram<'_>,
    relocated: &RelocatedObject<'_, '_>,
    by_section: &HashMap<&str, Vec<usize>>,
) -> Result<Vec<ProgramRelocation>> {
    let mut out = Vec::new();
    let main_len = assembled.parts.first().map_or(0, |p| p.insn_count());
    for part in &assembled.parts {
        let first = part.section_insn();
        let code = first..first.saturating_add(part.insn_count());
        let Some(indices) = by_section.get(part.program.section_name) else {
            continue;
        };
        for &relocation in indices {
            let Some(r) = relocated.relocations.get(relocation) else {
                continue;
            };
            if !code.contains(&r.section_insn) {
                continue;
            }
            let insn = part.start + (r.section_insn - first);
            fallible::push(
                &mut out,
                ProgramRelocation {
                    relocation,
                    insn,
                    in_subprog: insn >= main_len,
                },
            )?;
        }
    }
    // Stable: records of one instruction keep their order.
    out.sort_by_key(|r| r.insn);
    Ok(out)
}
