//! The static control-flow graph of one assembled program: each instruction's successors and
//! the instructions that start a block, decoded in one walk.
//!
//! The propagation's blocks, the relevance walk and the dead-code labels all follow the static
//! flow; each decoding it again from the instructions was most of what those linear passes
//! cost (`biolatency`'s report run: 2,682 decodings of its 1,054 instructions).

use crate::core::patch::{CLASS_JMP, CLASS_LD, LD_IMM64};
use crate::error::Result;
use crate::fallible;
use crate::object::Insn;
use alloc::vec::Vec;

// The encodings the graph decodes, shared with the rest of the verdict pass.
pub(super) const CLASS_JMP32: u8 = 0x06;
pub(super) const OP_JA: u8 = 0x00;
pub(super) const OP_CALL: u8 = 0x80;
pub(super) const OP_EXIT: u8 = 0x90;
/// `BPF_JMP | BPF_CALL`.
pub(super) const CALL: u8 = CLASS_JMP | OP_CALL;
/// `BPF_JMP | BPF_EXIT`.
pub(super) const EXIT: u8 = CLASS_JMP | OP_EXIT;
/// A call's `src_reg` for a BPF-to-BPF call.
pub(super) const PSEUDO_CALL: u8 = 1;
/// An `ld_imm64`'s `src_reg` for a function's address (a callback).
pub(super) const PSEUDO_FUNC: u8 = 4;
/// No successor in that position, or one outside the program.
const NONE: u32 = u32::MAX;

/// Successors ([`successors`], those inside the program) and block leaders.
pub(super) struct Cfg {
    successors: Vec<[u32; 2]>,
    leader: Vec<bool>,
}

impl Cfg {
    /// The graph of `insns`, entered at 0 and at each of `global_subprogs`; `kfunc` tells the
    /// calls to kernel functions (which go straight on, as helper calls do) from BPF-to-BPF
    /// calls, which share their encoding until the loader resolves them.
    pub(super) fn new(
        insns: &[Insn],
        global_subprogs: &[u32],
        kfunc: impl Fn(u32) -> bool,
    ) -> Result<Cfg> {
        let len = insns.len();
        let mut table = fallible::vec_with_capacity(len)?;
        table.resize(len, [NONE; 2]);
        let mut leader = fallible::vec_with_capacity(len)?;
        leader.resize(len, false);
        let mut mark = |pc: u32| {
            if let Some(l) = leader.get_mut(pc as usize) {
                *l = true;
            }
        };
        mark(0);
        for &start in global_subprogs {
            mark(start);
        }
        for ((pc, insn), slot) in insns.iter().enumerate().zip(table.iter_mut()) {
            let pc = pc as u32;
            // A block ends at a jump, a BPF-to-BPF call or an exit; a helper or kfunc call goes
            // straight on (a callback's return joins there as a new block).
            let class = insn.code & 0x07;
            let helper = insn.code == CALL && (insn.src_reg != PSEUDO_CALL || kfunc(pc));
            if (class == CLASS_JMP || class == CLASS_JMP32) && !helper {
                mark(pc.wrapping_add(1));
            }
            let straight = pc.wrapping_add(if insn.code == LD_IMM64 { 2 } else { 1 });
            for (to, out) in successors(insns, pc).into_iter().zip(slot) {
                let Some(to) = to else { continue };
                if to != straight {
                    mark(to);
                }
                if (to as usize) < len {
                    *out = to;
                }
            }
        }
        Ok(Cfg {
            successors: table,
            leader,
        })
    }

    /// The successors of `pc` inside the program, in [`successors`]' positions.
    pub(super) fn successors(&self, pc: u32) -> [Option<u32>; 2] {
        let some = |to: u32| (to != NONE).then_some(to);
        self.successors
            .get(pc as usize)
            .map_or([None, None], |&[first, second]| [some(first), some(second)])
    }

    /// The successors of `pc` inside the program, the fall-through first.
    pub(super) fn successors_of(&self, pc: u32) -> impl Iterator<Item = u32> {
        let pair = self
            .successors
            .get(pc as usize)
            .copied()
            .unwrap_or([NONE; 2]);
        pair.into_iter().filter(|&to| to != NONE)
    }

    /// Whether a block starts at `pc`; past the program's end, where a path falls off, always.
    pub(super) fn is_leader(&self, pc: u32) -> bool {
        self.leader.get(pc as usize).is_none_or(|l| *l)
    }
}

/// The static successors of instruction `pc`, paths or not: fall-through, jump target, callee
/// or callback.
pub(super) fn successors(insns: &[Insn], pc: u32) -> [Option<u32>; 2] {
    let Some(insn) = insns.get(pc as usize) else {
        return [None, None];
    };
    let at = |off: i64| u32::try_from(i64::from(pc) + off + 1).ok();
    let class = insn.code & 0x07;
    match (class, insn.code & 0xf0) {
        (CLASS_LD, _) if insn.code == LD_IMM64 => {
            let callback = (insn.src_reg == PSEUDO_FUNC)
                .then(|| at(i64::from(insn.imm)))
                .flatten();
            [at(1), callback]
        }
        (CLASS_JMP32, OP_JA) => [at(i64::from(insn.imm)), None],
        (CLASS_JMP, OP_JA) => [at(i64::from(insn.off)), None],
        (CLASS_JMP, OP_EXIT) => [None, None],
        (CLASS_JMP, OP_CALL) if insn.src_reg == PSEUDO_CALL => [at(0), at(i64::from(insn.imm))],
        (CLASS_JMP, OP_CALL) => [at(0), None],
        (CLASS_JMP | CLASS_JMP32, _) => [at(0), at(i64::from(insn.off))],
        _ => [at(0), None],
    }
}
