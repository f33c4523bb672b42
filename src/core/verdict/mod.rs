//! Load verdicts: per libbpf entry program, which CO-RE relocations libbpf applies to it and
//! whether the kernel verifier will load it.
//!
//! libbpf appends every `.text` sub-program an entry program calls (or takes as a callback)
//! to it (`object::assemble`), so a relocation poisoned in a sub-program is poisoned in each
//! caller. A poisoned instruction (a call to helper `POISON_HELPER_ID`) makes the verifier
//! refuse the program only if a path reaches it; guards such as `bpf_core_field_exists()`
//! relocate to a constant the verifier branches on, and it never visits the dead edge. The
//! `interp` pass follows the verifier's exploration over the relocated, assembled
//! instructions and says which poisons it reaches, and through which branches. Where only the
//! verdicts are asked ([`entry_verdicts`]), a first look (`screen`) settles before it the
//! programs whose poisons all sit behind a test of an immediate moved into its register just
//! before (how a CO-RE guard compiles).
//!
//! Limits, where the verifier knows more than this pass: it tracks ranges and known bits of
//! unknown scalars (`r0 &= 1; if r0 > 1` is decided there, forked here) and prunes states by
//! subsumption rather than equality; a pointer is known non-null only against 0 with a 64-bit
//! `==`/`!=`. Each can turn a `loads` of the kernel into `rejected` (or `unknown`, when the
//! budget runs out) here, never the other way: a constant is kept only where the verifier
//! keeps it (registers, 8-byte aligned stack spills, zeroed stack bytes, static calls'
//! return values), and every value this pass does not follow is unknown.

mod cfg;
mod describe;
mod interp;
mod relevance;
mod screen;
mod solver;

pub use describe::describe;

pub use crate::core::programs::{ProgramRelocation, callers};

use crate::btf::Btf;
use crate::core::patch::{LD_IMM64, Patched};
use crate::core::programs::{AppliedRelocations, for_each_assembled};
use crate::core::relocate::RelocatedObject;
use crate::error::Result;
use crate::fallible;
use crate::object::assemble::AssembledProgram;
use crate::object::{BpfObject, Insn};
use alloc::vec::Vec;
use cfg::{CALL, Cfg};
use interp::{Annotation, Budget, Code, is_poison};
use solver::explore;

/// Instructions the exploration may execute over all paths of one program (the verifier's own
/// limit, `BPF_COMPLEXITY_LIMIT_INSNS`).
const VISIT_BUDGET: u32 = 1_000_000;
/// Block entry states (one per block and call context), per program.
const STATE_BUDGET: usize = 65_536;

/// Whether the kernel will load a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// No failed relocation, and no poisoned instruction is reachable.
    Loads,
    /// A poisoned instruction is reachable: the verifier refuses the program with
    /// `invalid func unknown#195896080`.
    Rejected,
    /// A poisoned instruction is reachable only through a branch on a value the loader sets
    /// (`.rodata`, `.kconfig`, a ksym's address), or the analysis ran out of budget.
    Unknown,
    /// libbpf fails to relocate the program.
    Failed,
}

impl Verdict {
    /// `loads`, `rejected`, `unknown` or `failed`.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Loads => "loads",
            Verdict::Rejected => "rejected",
            Verdict::Unknown => "unknown",
            Verdict::Failed => "failed",
        }
    }
}

/// An entry program with the relocations applied to it and its load verdict.
#[derive(Debug)]
pub struct EntryProgram<'o> {
    /// Entry program name (libbpf's).
    pub program: &'o str,
    /// ELF section of the entry program.
    pub section: &'o str,
    /// The relocations of the program and its appended sub-programs, in assembled-instruction
    /// order.
    pub relocations: Vec<ProgramRelocation>,
    /// The verdict.
    pub verdict: Verdict,
    /// Why: one item per failed relocation, per poisoned instruction and for the budget.
    pub evidence: Vec<Evidence>,
}

/// One side of a comparison as the exploration saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operand {
    /// The register, `None` for an immediate.
    pub reg: Option<u8>,
    /// Its value when known.
    pub value: Option<u64>,
    /// The relocation whose patched immediate the value comes from, carried through moves,
    /// arithmetic, spills, fills and returns.
    pub relocation: Option<usize>,
    /// Whether the value is known only at load time.
    pub load_time: bool,
}

/// A conditional jump on a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Branch {
    /// Its instruction index in the assembled entry program.
    pub insn: u32,
    /// The instruction.
    pub jump: Insn,
    /// The `dst_reg` operand.
    pub left: Operand,
    /// The `src_reg` or immediate operand.
    pub right: Operand,
}

/// Why a program got its verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Evidence {
    /// A poisoned instruction no path reaches, and the branch whose dead edge leads to it.
    Guarded {
        /// The poisoned instruction.
        poison: u32,
        /// Its relocation (index into [`RelocatedObject::relocations`]).
        relocation: Option<usize>,
        /// The deciding branch.
        guard: Branch,
        /// The first instruction of the dead edge.
        dead: u32,
    },
    /// A poisoned instruction a path reaches.
    Reached {
        /// The poisoned instruction.
        poison: u32,
        /// Its relocation.
        relocation: Option<usize>,
        /// The branches on one path to it whose both edges were live, first first.
        forks: Vec<Branch>,
    },
    /// A poisoned instruction reached only past a branch on a load-time value.
    LoadTime {
        /// The poisoned instruction.
        poison: u32,
        /// Its relocation.
        relocation: Option<usize>,
        /// The load-time branch.
        branch: Branch,
    },
    /// A relocation libbpf fails on.
    Failed {
        /// Index into [`RelocatedObject::relocations`].
        relocation: usize,
        /// Its instruction in the assembled entry program.
        insn: u32,
    },
    /// The exploration stopped at its budget before it was complete.
    Budget {
        /// Instructions executed.
        visits: u32,
    },
}

impl Evidence {
    /// `guarded`, `reached`, `load_time`, `failed` or `budget`.
    pub fn tag(&self) -> &'static str {
        match self {
            Evidence::Guarded { .. } => "guarded",
            Evidence::Reached { .. } => "reached",
            Evidence::LoadTime { .. } => "load_time",
            Evidence::Failed { .. } => "failed",
            Evidence::Budget { .. } => "budget",
        }
    }

    /// The instruction the item is about: the guard, the reached poison, the load-time branch
    /// or the failed relocation.
    pub fn insn(&self) -> Option<u32> {
        match self {
            Evidence::Guarded { guard, .. } => Some(guard.insn),
            Evidence::Reached { poison, .. } => Some(*poison),
            Evidence::LoadTime { branch, .. } => Some(branch.insn),
            Evidence::Failed { insn, .. } => Some(*insn),
            Evidence::Budget { .. } => None,
        }
    }

    /// The relocation the item is about (index into [`RelocatedObject::relocations`]).
    pub fn relocation(&self) -> Option<usize> {
        match self {
            Evidence::Guarded { relocation, .. }
            | Evidence::Reached { relocation, .. }
            | Evidence::LoadTime { relocation, .. } => *relocation,
            Evidence::Failed { relocation, .. } => Some(*relocation),
            Evidence::Budget { .. } => None,
        }
    }
}

/// Whether every entry program of `obj` loads, known without assembling or judging any: no
/// relocation failed and no instruction of its code (relocated or not) is poisoned, so the
/// verifier has nothing of libbpf's to refuse. Each program's [`entry_programs`] verdict is
/// then [`Verdict::Loads`] with no evidence; a run that needs only verdicts (not which
/// relocations each program has) can take that from here, for most objects on most kernels.
pub fn all_load(obj: &BpfObject<'_>, relocated: &RelocatedObject<'_, '_>) -> bool {
    if relocated.relocations.iter().any(|r| r.outcome.is_err()) {
        return false;
    }
    let patched_poison = relocated
        .sections
        .iter()
        .any(|s| s.insns.iter().any(is_poison));
    let unpatched_poison = obj
        .sections()
        .iter()
        .filter(|s| !relocated.sections.iter().any(|p| p.index == s.index))
        .any(|s| (0..s.insn_count()).any(|i| s.insn(i).is_some_and(|insn| is_poison(&insn))));
    !patched_poison && !unpatched_poison
}

/// Every entry program of `obj` assembled from `relocated`'s patched sections, with its
/// verdict. `local` is the object's parsed `.BTF`. Which relocations each program has, without
/// a verdict, is [`crate::core::programs::entry_relocations`].
pub fn entry_programs<'o>(
    obj: &BpfObject<'o>,
    local: &Btf<'o>,
    relocated: &RelocatedObject<'o, '_>,
) -> Result<Vec<EntryProgram<'o>>> {
    judge_entries(obj, local, relocated, Guards::Found)
}

/// [`entry_programs`] without the [`Evidence::Guarded`] items: the same verdicts and the same
/// other evidence, without the search for the branch that made each dead poison dead, which
/// only a reader of the evidence wants (a report, not a count of verdicts).
pub fn entry_verdicts<'o>(
    obj: &BpfObject<'o>,
    local: &Btf<'o>,
    relocated: &RelocatedObject<'o, '_>,
) -> Result<Vec<EntryProgram<'o>>> {
    judge_entries(obj, local, relocated, Guards::Skipped)
}

/// Whether [`analyse`] looks for the guard of each dead poison.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Guards {
    Found,
    Skipped,
}

fn judge_entries<'o>(
    obj: &BpfObject<'o>,
    local: &Btf<'o>,
    relocated: &RelocatedObject<'o, '_>,
    guards: Guards,
) -> Result<Vec<EntryProgram<'o>>> {
    let mut out = Vec::new();
    for_each_assembled(obj, local, relocated, |assembled, relocations| {
        let failed = relocations.iter().filter(|r| {
            relocated
                .relocations
                .get(r.relocation)
                .is_some_and(|o| o.outcome.is_err())
        });
        let mut evidence = Vec::new();
        for r in failed {
            fallible::push(
                &mut evidence,
                Evidence::Failed {
                    relocation: r.relocation,
                    insn: r.insn,
                },
            )?;
        }
        let verdict = if evidence.is_empty() {
            analyse(
                obj,
                assembled,
                &relocations,
                relocated,
                guards,
                &mut evidence,
            )?
        } else {
            Verdict::Failed
        };
        fallible::push(
            &mut out,
            EntryProgram {
                program: assembled.program.name,
                section: assembled.program.section_name,
                relocations,
                verdict,
                evidence,
            },
        )
    })?;
    Ok(out)
}

impl AppliedRelocations for EntryProgram<'_> {
    fn program(&self) -> &str {
        self.program
    }

    fn relocations(&self) -> &[ProgramRelocation] {
        &self.relocations
    }
}

/// What the loader does to each instruction of `assembled` that the exploration must know.
fn annotations(
    obj: &BpfObject<'_>,
    assembled: &AssembledProgram<'_>,
    relocations: &[ProgramRelocation],
    relocated: &RelocatedObject<'_, '_>,
) -> Result<Vec<Annotation>> {
    let mut out = fallible::vec_with_capacity(assembled.insns.len())?;
    out.resize(assembled.insns.len(), Annotation::None);
    for r in relocations {
        let patched = relocated
            .relocations
            .get(r.relocation)
            .and_then(|o| o.outcome.as_ref().ok())
            .is_some_and(|(_, p)| matches!(p, Patched::Value { .. }));
        if let (true, Some(a), Ok(index)) = (
            patched,
            out.get_mut(r.insn as usize),
            u32::try_from(r.relocation),
        ) {
            *a = Annotation::Relocated(index);
        }
    }
    for placed in &assembled.relocations {
        let code = assembled.insns.get(placed.insn as usize).map(|i| i.code);
        let Some(a) = out.get_mut(placed.insn as usize) else {
            continue;
        };
        if code == Some(CALL) {
            // Only extern calls are left to the loader: kfuncs.
            if placed.relocation.symbol_section.is_none() {
                *a = Annotation::Kfunc;
            }
            continue;
        }
        if code != Some(LD_IMM64) {
            continue;
        }
        *a = match placed.relocation.symbol_section {
            None => Annotation::Extern,
            Some(section) => match obj.elf_section_name(section) {
                Some(name) if name.starts_with(".rodata") || name == ".kconfig" => {
                    Annotation::LoadTimeData
                }
                _ => Annotation::RuntimeData,
            },
        };
    }
    Ok(out)
}

/// Explore `assembled`, push the evidence for each poisoned instruction (for a dead one, its
/// guard, only with [`Guards::Found`]) and return the verdict.
// Never inlined: benches/real-objects.sh counts the verdict pass's share by this function's
// name (callgrind, inclusive), and whole-program LTO (`make cli`) would fold it into its
// caller. One call per program.
#[inline(never)]
fn analyse(
    obj: &BpfObject<'_>,
    assembled: &AssembledProgram<'_>,
    relocations: &[ProgramRelocation],
    relocated: &RelocatedObject<'_, '_>,
    guards: Guards,
    evidence: &mut Vec<Evidence>,
) -> Result<Verdict> {
    // Only a poisoned instruction can make the verifier refuse what libbpf relocated: a
    // program without one loads, and most programs on most kernels have none, so the
    // propagation runs only where its answer can differ.
    if !assembled.insns.iter().any(is_poison) {
        return Ok(Verdict::Loads);
    }
    let mut global_subprogs = Vec::new();
    for part in assembled.parts.iter().skip(1).filter(|p| p.program.global) {
        fallible::push(&mut global_subprogs, part.start)?;
    }
    // Most poisons are dead by the guard right before them: then the program loads, which the
    // propagation would only confirm (it reaches no more), so it runs for the evidence alone.
    if guards == Guards::Skipped && screen::poisons_dead(&assembled.insns, &global_subprogs)? {
        return Ok(Verdict::Loads);
    }
    let annotations = annotations(obj, assembled, relocations, relocated)?;
    let kfunc = |pc: u32| annotations.get(pc as usize) == Some(&Annotation::Kfunc);
    let cfg = Cfg::new(&assembled.insns, &global_subprogs, kfunc)?;
    let relevant = relevance::relevant(&assembled.insns, &cfg)?;
    let code = Code {
        insns: &assembled.insns,
        annotations: &annotations,
        cfg: &cfg,
        global_subprogs: &global_subprogs,
        relevant: &relevant,
    };
    let budget = Budget {
        visits: VISIT_BUDGET,
        states: STATE_BUDGET,
    };
    let outcome = explore(&code, budget)?;
    let guards = match guards {
        Guards::Found => DeadCode::label(&cfg, &outcome)?,
        Guards::Skipped => DeadCode::default(),
    };
    let relocation_at = |poison: u32| {
        relocations
            .iter()
            .find(|r| r.insn == poison)
            .map(|r| r.relocation)
    };
    // A load-time branch both of whose edges reach a poison (with no other load-time branch
    // on the way) rejects the program whatever the loader sets.
    let mut either_way: Vec<u32> = Vec::new();
    for r in &outcome.reached {
        let Some(edge) = r.load_time.filter(|l| l.sole) else {
            continue;
        };
        let other_edge = outcome.reached.iter().any(|o| {
            o.load_time.is_some_and(|l| {
                l.sole && l.branch.insn == edge.branch.insn && l.taken != edge.taken
            })
        });
        if other_edge {
            fallible::push(&mut either_way, edge.branch.insn)?;
        }
    }
    let mut verdict = Verdict::Loads;
    for (pc, insn) in assembled.insns.iter().enumerate() {
        // The second slot of a poisoned ld_imm64 is poisoned too; the first one is the one.
        let pc = pc as u32;
        let after_poison = pc
            .checked_sub(1)
            .and_then(|p| assembled.insns.get(p as usize))
            .is_some_and(is_poison);
        if !is_poison(insn) || (after_poison && relocation_at(pc).is_none()) {
            continue;
        }
        let relocation = relocation_at(pc);
        // One item per poison: a path that reaches it whatever the loader sets, else one
        // that depends on the loader, else the guard that made it dead.
        let reaches = || outcome.reached.iter().filter(|r| r.poison == pc);
        let unconditional = reaches().find(|r| {
            r.load_time
                .is_none_or(|l| l.sole && either_way.contains(&l.branch.insn))
        });
        let item = if let Some(reach) = unconditional {
            verdict = Verdict::Rejected;
            Evidence::Reached {
                poison: pc,
                relocation,
                forks: fallible::to_vec(&reach.forks)?,
            }
        } else if let Some(edge) = reaches().find_map(|r| r.load_time) {
            if verdict == Verdict::Loads {
                verdict = Verdict::Unknown;
            }
            Evidence::LoadTime {
                poison: pc,
                relocation,
                branch: edge.branch,
            }
        } else if let Some((guard, dead)) = guards.guard(pc) {
            Evidence::Guarded {
                poison: pc,
                relocation,
                guard,
                dead,
            }
        } else {
            continue;
        };
        fallible::push(evidence, item)?;
    }
    if outcome.exhausted {
        // The screen needs no budget: a program it settles loads however far the propagation
        // got, as when verdicts are only counted.
        if verdict == Verdict::Loads && !screen::poisons_dead(&assembled.insns, &global_subprogs)? {
            verdict = Verdict::Unknown;
        }
        fallible::push(
            evidence,
            Evidence::Budget {
                visits: outcome.visits,
            },
        )?;
    }
    Ok(verdict)
}

/// For each instruction no path reached, the decided branch whose dead edge leads to it (the
/// nearest, by a breadth-first walk of the static control flow from every dead edge at once,
/// through instructions no path reached).
#[derive(Default)]
struct DeadCode {
    /// Each decided branch by (jump, first instruction of its dead edge), sorted.
    guards: Vec<((u32, u32), Branch)>,
    /// Per instruction, its guard's index in `guards`; [`DeadCode::UNLABELLED`] for none.
    label: Vec<u32>,
}

impl DeadCode {
    const UNLABELLED: u32 = u32::MAX;

    /// Label the instructions of the program `cfg` describes that `outcome` never reached.
    fn label(cfg: &Cfg, outcome: &interp::Outcome) -> Result<DeadCode> {
        let len = outcome.visited.len();
        let mut label: Vec<u32> = fallible::vec_with_capacity(len)?;
        label.resize(len, Self::UNLABELLED);
        let mut guards: Vec<((u32, u32), Branch)> =
            fallible::vec_with_capacity(outcome.decided.len())?;
        guards.extend(outcome.decided.iter().map(|(&key, &branch)| (key, branch)));
        guards.sort_unstable_by_key(|&(key, _)| key);
        // Labels `pc` with guard `index` unless it has a label or a path reached it.
        let mark = |label: &mut [u32], pc: u32, index: u32| {
            let unvisited = outcome.visited.get(pc as usize) == Some(&false);
            match label.get_mut(pc as usize) {
                Some(l) if unvisited && *l == Self::UNLABELLED => {
                    *l = index;
                    true
                }
                _ => false,
            }
        };
        let mut queue: Vec<u32> = Vec::new();
        for (index, &((_, dead), _)) in guards.iter().enumerate() {
            if mark(&mut label, dead, index as u32) {
                fallible::push(&mut queue, dead)?;
            }
        }
        // Each instruction is labelled and queued at most once.
        let mut next = 0;
        while let Some(&pc) = queue.get(next) {
            next += 1;
            let from = label.get(pc as usize).copied().unwrap_or(Self::UNLABELLED);
            for succ in cfg.successors_of(pc) {
                if mark(&mut label, succ, from) {
                    fallible::push(&mut queue, succ)?;
                }
            }
        }
        Ok(DeadCode { guards, label })
    }

    /// The guard of instruction `pc`: the branch and its dead edge's first instruction.
    fn guard(&self, pc: u32) -> Option<(Branch, u32)> {
        let index = *self.label.get(pc as usize)?;
        let &((_, dead), branch) = self.guards.get(index as usize)?;
        Some((branch, dead))
    }
}

#[cfg(test)]
mod tests;
