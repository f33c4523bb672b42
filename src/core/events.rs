//! What the relocation driver does, step by step, for whoever wants to know.
//!
//! [`resolve`](super::resolve) and [`relocate_object`](super::relocate::relocate_object) report
//! each step of libbpf's algorithm (candidates looked up, the local spec, each candidate tried,
//! the outcome, the patch) as a [`RelocEvent`] to the [`EventSink`] their caller passes. The
//! events borrow the engine's own data and say nothing about wording: turning them into
//! libbpf's log messages is [`crate::log`]'s job, a floor above the core ([`crate::log::LibbpfLog`]
//! is the sink that does it).

use super::calc::Resolution;
use super::patch::Patched;
use super::{Candidate, RelocKind, Spec, Targets};
use crate::btf::Btf;
use crate::error::Error;

/// One step of relocating an object. `program` and `relo` name the relocation as libbpf's log
/// does (`prog 'NAME': relo #N`): the function symbol holding the instruction, and the record's
/// index within its section's core_relo records.
#[derive(Debug, Clone, Copy)]
pub enum RelocEvent<'a> {
    /// A program section's CO-RE records are about to be relocated.
    SectionRelocations {
        /// The ELF section.
        section: &'a str,
        /// How many core_relo records it has.
        count: usize,
    },
    /// The candidates of a local type were looked up (once per type and object).
    CandidatesFound {
        /// The object's BTF.
        local_btf: &'a Btf<'a>,
        /// The local type.
        local_type_id: u32,
        /// The BTFs the candidates come from.
        targets: &'a Targets<'a>,
        /// Every candidate, in search order.
        candidates: &'a [Candidate],
    },
    /// A relocation starts: its local spec.
    Relocating {
        /// Program holding the relocated instruction.
        program: &'a str,
        /// The record's index in its section.
        relo: u32,
        /// The object's BTF.
        local_btf: &'a Btf<'a>,
        /// The spec parsed from the record's access string.
        local: &'a Spec<'a>,
    },
    /// A candidate was matched against the local spec.
    CandidateTried {
        /// Program holding the relocated instruction.
        program: &'a str,
        /// The record's index in its section.
        relo: u32,
        /// The candidate's position in the local type's candidate list.
        index: usize,
        /// The BTF the candidate is in.
        target_btf: &'a Btf<'a>,
        /// The candidate's type id.
        candidate_id: u32,
        /// The relocation's kind.
        kind: RelocKind,
        /// The target spec if the candidate matched.
        matched: Option<&'a Spec<'a>>,
    },
    /// No candidate matched: the instruction will be poisoned (or the field reported missing).
    NoMatch {
        /// Program holding the relocated instruction.
        program: &'a str,
        /// The record's index in its section.
        relo: u32,
    },
    /// Two matching candidates disagree; the relocation fails.
    Ambiguity {
        /// Program holding the relocated instruction.
        program: &'a str,
        /// The record's index in its section.
        relo: u32,
        /// Bit offset of the later candidate's field.
        candidate_bit_offset: u32,
        /// What the later candidate resolved to.
        candidate: &'a Resolution,
        /// Bit offset of the first matching candidate's field.
        first_bit_offset: u32,
        /// What the first matching candidate resolved to (the one chosen).
        first: &'a Resolution,
    },
    /// The instruction was patched (or poisoned).
    Patched {
        /// Program holding the relocated instruction.
        program: &'a str,
        /// The record's index in its section.
        relo: u32,
        /// Instruction index within its program.
        insn: u32,
        /// The instruction's opcode before patching.
        code: u8,
        /// The values the instruction was patched with.
        resolution: &'a Resolution,
        /// What patching changed.
        patched: Patched,
    },
    /// The relocation failed (the object fails to load with libbpf).
    Failed {
        /// Program holding the relocated instruction.
        program: &'a str,
        /// The record's index in its section.
        relo: u32,
        /// Why.
        error: &'a Error,
    },
}

/// Receives the [`RelocEvent`]s of a relocation run, in the order libbpf logs them.
pub trait EventSink {
    /// Take one event; it borrows the engine's data only for this call.
    fn event(&mut self, event: RelocEvent<'_>);
}

#[cfg(test)]
mod tests {
    //! The event stream for two fixtures, against the steps libbpf 1.1 logs for them (Debian's
    //! libbpf, `c-tests/libbpf_relocs.c` with `LIBBPF_RELOCS_VERBOSE=1`): which relocation, which
    //! candidates, which instruction and values.
    use super::*;
    use crate::core::CandidateIndex;
    use crate::core::relocate::relocate_object;
    use crate::object::BpfObject;
    use alloc::format;
    use alloc::string::String;
    use alloc::vec::Vec;

    /// Each event in short (ids, indices and values, no wording).
    struct Steps(Vec<String>);

    impl EventSink for Steps {
        fn event(&mut self, event: RelocEvent<'_>) {
            self.0.push(match event {
                RelocEvent::SectionRelocations { section, count } => format!("{section}: {count}"),
                RelocEvent::CandidatesFound {
                    local_type_id,
                    candidates,
                    ..
                } => {
                    let ids: Vec<u32> = candidates.iter().map(|c| c.id).collect();
                    format!("[{local_type_id}] candidates {ids:?}")
                }
                RelocEvent::Relocating {
                    program,
                    relo,
                    local,
                    ..
                } => format!(
                    "{program} #{relo}: [{}] {:?}",
                    local.root_type_id, local.raw
                ),
                RelocEvent::CandidateTried {
                    relo,
                    index,
                    candidate_id,
                    matched,
                    ..
                } => format!(
                    "#{relo}: candidate #{index} [{candidate_id}] {:?}",
                    matched.map(|m| &m.raw)
                ),
                RelocEvent::NoMatch { relo, .. } => format!("#{relo}: no match"),
                RelocEvent::Ambiguity {
                    relo,
                    candidate_bit_offset,
                    first_bit_offset,
                    ..
                } => format!("#{relo}: ambiguity {candidate_bit_offset} != {first_bit_offset}"),
                RelocEvent::Patched {
                    relo,
                    insn,
                    patched,
                    ..
                } => format!("#{relo}: insn {insn} {patched:?}"),
                RelocEvent::Failed { relo, .. } => format!("#{relo}: failed"),
            });
        }
    }

    fn steps(object: &[u8], target: &[u8]) -> Vec<String> {
        let obj = BpfObject::parse(object).unwrap();
        let local = Btf::parse(obj.btf_bytes().unwrap()).unwrap();
        let target = Btf::parse(target).unwrap();
        let targets = Targets::new(&target);
        let mut sink = Steps(Vec::new());
        relocate_object(
            &obj,
            &local,
            &targets,
            &mut CandidateIndex::new(),
            &mut sink,
        )
        .unwrap();
        sink.0
    }

    #[test]
    fn events_follow_libbpfs_steps() {
        let fields = steps(
            include_bytes!("../../tests/data/progs/fields.bpf.o"),
            include_bytes!("../../tests/data/targets/btf__fields.btf"),
        );
        assert_eq!(
            fields[..6],
            [
                "raw_tp/sys_enter: 22",
                "[5] candidates [3]",
                "fields_read #0: [5] [0, 0]",
                "#0: candidate #0 [3] Some([0, 2])",
                "#0: insn 4 Value { orig: 0, new: 24 }",
                "fields_read #1: [5] [0, 1, 1, 0]",
            ]
        );
        let ambiguous = steps(
            include_bytes!("../../tests/data/progs/ambiguous.bpf.o"),
            include_bytes!("../../tests/data/targets/btf__ambiguous_off.btf"),
        );
        assert_eq!(
            ambiguous[5..11],
            [
                "[6] candidates [6, 9]",
                "amb_read #1: [6] [0, 1]",
                "#1: candidate #0 [6] Some([0, 1])",
                "#1: candidate #1 [9] Some([0, 0])",
                "#1: ambiguity 0 != 64",
                "#1: failed",
            ]
        );
    }
}
