//! A first look that settles most programs without the propagation: whether any poisoned
//! instruction stays reachable once the branches on a constant set just before them are cut.
//!
//! A CO-RE guard compiles to a relocated immediate moved into a register and tested by the very
//! next instruction (`r1 = field_exists(...)`, `if r1 == 0 goto`). Where the test can only be
//! reached from that move, the register holds the immediate on every path to it, so the
//! verifier takes one edge only (`is_branch_taken`), and so does the propagation, which knows at
//! least that much. Every other edge of the static control flow (fall-through, jumps, calls and
//! callback references into their sub-programs) is kept, which is more than any path takes. A
//! poison this walk cannot reach is therefore reached by no path of the propagation either: the
//! program loads, and the walk costs one pass over the instructions and one over what it reaches,
//! where the propagation evaluates states. Where a poison stays reachable here, only the
//! propagation can tell.

use super::cfg::{CLASS_JMP32, successors};
use super::interp::is_poison;
use crate::core::patch::{CLASS_JMP, LD_IMM64, SRC_X};
use crate::error::Result;
use crate::fallible;
use crate::object::Insn;
use alloc::vec::Vec;

/// `BPF_ALU64 | BPF_MOV | BPF_K`: a 64-bit move of the sign-extended immediate.
const MOV64_IMM: u8 = 0xb7;
/// r10, which a move cannot change.
const FP: u8 = 10;

/// Whether no poisoned instruction of `insns` is reachable from its entry and from the global
/// sub-programs starting at `global_subprogs` once every branch decided by the move before it
/// takes its live edge only.
pub(super) fn poisons_dead(insns: &[Insn], global_subprogs: &[u32]) -> Result<bool> {
    let len = insns.len();
    // Where control arrives other than by falling through: a branch whose test is reached
    // there may see any value.
    let mut entered: Vec<bool> = fallible::vec_with_capacity(len)?;
    entered.resize(len, false);
    let mut enter = |pc: u32| {
        if let Some(e) = entered.get_mut(pc as usize) {
            *e = true;
        }
    };
    enter(0);
    for &start in global_subprogs {
        enter(start);
    }
    for (pc, insn) in insns.iter().enumerate() {
        if !branches(insn) {
            continue;
        }
        let pc = pc as u32;
        let fall = pc.wrapping_add(if insn.code == LD_IMM64 { 2 } else { 1 });
        for to in successors(insns, pc).into_iter().flatten() {
            if to != fall {
                enter(to);
            }
        }
    }
    let mut seen: Vec<bool> = fallible::vec_with_capacity(len)?;
    seen.resize(len, false);
    let mut stack: Vec<u32> = Vec::new();
    for start in core::iter::once(0).chain(global_subprogs.iter().copied()) {
        if let Some(s @ false) = seen.get_mut(start as usize) {
            *s = true;
            fallible::push(&mut stack, start)?;
        }
    }
    while let Some(mut pc) = stack.pop() {
        // Straight runs are followed in place, up to the next instruction that branches.
        while let Some(insn) = insns.get(pc as usize) {
            if is_poison(insn) {
                return Ok(false);
            }
            if !branches(insn) {
                pc = pc.wrapping_add(1);
                match seen.get_mut(pc as usize) {
                    Some(s @ false) => *s = true,
                    _ => break,
                }
                continue;
            }
            let live = match decided(insns, &entered, pc) {
                Some(live) => [Some(live), None],
                None => successors(insns, pc),
            };
            for to in live.into_iter().flatten() {
                if let Some(s @ false) = seen.get_mut(to as usize) {
                    *s = true;
                    fallible::push(&mut stack, to)?;
                }
            }
            break;
        }
    }
    Ok(true)
}

/// Whether `insn` may lead anywhere but to the next instruction: jumps, calls and `ld_imm64`
/// (a callback's address, and its second slot skipped).
fn branches(insn: &Insn) -> bool {
    let class = insn.code & 0x07;
    class == CLASS_JMP || class == CLASS_JMP32 || insn.code == LD_IMM64
}

/// The live successor of the conditional jump at `pc` when the instruction before it moves an
/// immediate into the register it tests against an immediate, and nothing else leads to it.
fn decided(insns: &[Insn], entered: &[bool], pc: u32) -> Option<u32> {
    let jump = insns.get(pc as usize)?;
    let class = jump.code & 0x07;
    let is32 = class == CLASS_JMP32;
    if !(class == CLASS_JMP || is32)
        || jump.code & SRC_X != 0
        || entered.get(pc as usize) != Some(&false)
    {
        return None;
    }
    let before = pc.checked_sub(1)?;
    let mov = insns.get(before as usize)?;
    // The second slot of an `ld_imm64` is no instruction of its own.
    let in_ld_imm64 = before
        .checked_sub(1)
        .and_then(|p| insns.get(p as usize))
        .is_some_and(|i| i.code == LD_IMM64);
    if mov.code != MOV64_IMM
        || mov.off != 0
        || mov.dst_reg >= FP
        || mov.dst_reg != jump.dst_reg
        || in_ld_imm64
    {
        return None;
    }
    let taken = super::interp::branch_taken(
        jump.code & 0xf0,
        is32,
        i64::from(mov.imm) as u64,
        i64::from(jump.imm) as u64,
    )?;
    let [fall, target] = successors(insns, pc);
    if taken { target } else { fall }
}
