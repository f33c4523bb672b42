//! STUB of the load verdict pass (replaced by i-verdict at merge): assembles each entry
//! program for real, but decides naively (failed if a relocation failed, rejected if one is
//! poisoned, else loads).

use crate::btf::Btf;
use crate::core::patch::Patched;
use crate::core::relocate::RelocatedObject;
use crate::error::Result;
use crate::fallible;
use crate::object::BpfObject;
use crate::object::assemble::{SectionCode, assemble_all};
use alloc::vec::Vec;

/// What the verifier will do with an entry program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No failed relocation and no reachable poisoned instruction.
    Loads,
    /// A poisoned instruction is reachable.
    Rejected,
    /// Reachability depends on a value known only at load.
    Unknown,
    /// libbpf refuses the object at relocation.
    Failed,
}

impl Verdict {
    /// The verdict's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Loads => "loads",
            Verdict::Rejected => "rejected",
            Verdict::Unknown => "unknown",
            Verdict::Failed => "failed",
        }
    }
}

/// A relocation libbpf applies to an entry program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgramRelocation {
    /// Index into `RelocatedObject::relocations`.
    pub relocation: usize,
    /// Instruction index in the assembled entry program.
    pub insn: u32,
    /// Whether it lives in an appended sub-program.
    pub in_subprog: bool,
}

/// An entry program with its relocations and verdict.
#[derive(Debug)]
pub struct EntryProgram<'o> {
    /// Name of the entry program.
    pub program: &'o str,
    /// Its ELF section.
    pub section: &'o str,
    /// Every relocation applied to it, in assembled order.
    pub relocations: Vec<ProgramRelocation>,
    /// The load verdict.
    pub verdict: Verdict,
    /// Why.
    pub evidence: Vec<Evidence>,
}

/// Why a verdict was reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Evidence {
    /// A poisoned instruction reached.
    Reached {
        /// Instruction in the assembled program.
        insn: u32,
        /// Index into `RelocatedObject::relocations`.
        relocation: usize,
    },
    /// A failed relocation.
    Failed {
        /// Index into `RelocatedObject::relocations`.
        relocation: usize,
    },
}

impl Evidence {
    /// Short tag.
    pub fn tag(&self) -> &'static str {
        match self {
            Evidence::Reached { .. } => "reached",
            Evidence::Failed { .. } => "failed",
        }
    }

    /// The instruction, if any.
    pub fn insn(&self) -> Option<u32> {
        match self {
            Evidence::Reached { insn, .. } => Some(*insn),
            Evidence::Failed { .. } => None,
        }
    }

    /// The relocation, if any.
    pub fn relocation(&self) -> Option<usize> {
        match self {
            Evidence::Reached { relocation, .. } | Evidence::Failed { relocation } => {
                Some(*relocation)
            }
        }
    }
}

/// Every entry program of `obj` with its relocations and verdict.
pub fn entry_programs<'o>(
    obj: &BpfObject<'o>,
    local: &Btf<'o>,
    relocated: &RelocatedObject<'o, '_>,
) -> Result<Vec<EntryProgram<'o>>> {
    let mut code = fallible::vec_with_capacity(relocated.sections.len())?;
    code.extend(relocated.sections.iter().map(|s| SectionCode {
        section_index: s.index,
        insns: &s.insns,
    }));
    let mut out = Vec::new();
    for assembled in assemble_all(obj, Some(local), &code)? {
        let subprogs_start = assembled.parts.get(1).map_or(u32::MAX, |p| p.start);
        let mut relocations = Vec::new();
        let mut evidence = Vec::new();
        let mut verdict = Verdict::Loads;
        for placed in &assembled.core_relos {
            let Some(at) = relocated
                .relocations
                .iter()
                .position(|r| r.section == placed.section && r.relo == placed.relo)
            else {
                continue;
            };
            let insn = placed.insn_off / 8;
            fallible::push(
                &mut relocations,
                ProgramRelocation {
                    relocation: at,
                    insn,
                    in_subprog: insn >= subprogs_start,
                },
            )?;
            match relocated.relocations.get(at).map(|r| &r.outcome) {
                Some(Err(_)) => {
                    verdict = Verdict::Failed;
                    fallible::push(&mut evidence, Evidence::Failed { relocation: at })?;
                }
                Some(Ok((_, Patched::Poisoned(_)))) => {
                    if verdict != Verdict::Failed {
                        verdict = Verdict::Rejected;
                    }
                    fallible::push(
                        &mut evidence,
                        Evidence::Reached {
                            insn,
                            relocation: at,
                        },
                    )?;
                }
                _ => {}
            }
        }
        fallible::push(
            &mut out,
            EntryProgram {
                program: assembled.program.name,
                section: assembled.program.section_name,
                relocations,
                verdict,
                evidence,
            },
        )?;
    }
    Ok(out)
}

/// The entry programs relocation `relocation` is applied to.
pub fn callers<'p, 'o>(
    programs: &'p [EntryProgram<'o>],
    relocation: usize,
) -> impl Iterator<Item = &'o str> + 'p {
    programs
        .iter()
        .filter(move |p| p.relocations.iter().any(|r| r.relocation == relocation))
        .map(|p| p.program)
}

/// `e` in words.
pub fn describe<'a>(
    e: &'a Evidence,
    _local: &'a Btf<'_>,
    _relocated: &'a RelocatedObject<'_, '_>,
) -> impl core::fmt::Display + 'a {
    struct Words<'a>(&'a Evidence);
    impl core::fmt::Display for Words<'_> {
        fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            match self.0 {
                Evidence::Reached { insn, relocation } => {
                    write!(f, "insn {insn}: poisoned relocation {relocation} reached")
                }
                Evidence::Failed { relocation } => write!(f, "relocation {relocation} failed"),
            }
        }
    }
    Words(e)
}
