//! Which instructions can lead to a poisoned one: the only ones whose states a verdict reads.
//!
//! A block from which no path reaches a poisoned instruction passes its state only to blocks
//! from which none does either, so the propagation need not evaluate it. The paths are those
//! of the static control flow: fall-through and jumps, calls and callback references into
//! their sub-programs, and from each sub-program's exits back to the instruction after every
//! reference to it (what a callee returns, or writes through a pointer it was given, reaches
//! its caller there). A backward walk from every poisoned instruction over that graph marks
//! them, in time linear in the instructions: a program's tail after its last guarded read
//! (maps, ring buffers, histograms) is then never evaluated, and what is evaluated is
//! evaluated exactly as before.

use super::cfg::{CALL, Cfg, EXIT, PSEUDO_CALL, PSEUDO_FUNC};
use super::interp::is_poison;
use crate::core::patch::LD_IMM64;
use crate::error::Result;
use crate::fallible;
use crate::object::Insn;
use alloc::vec::Vec;

/// For each instruction of `insns` (whose graph is `cfg`), whether a path from it reaches a
/// poisoned instruction.
pub(super) fn relevant(insns: &[Insn], cfg: &Cfg) -> Result<Vec<bool>> {
    let len = insns.len();
    // References to sub-programs: (first instruction, where the referring code goes on).
    let mut references: Vec<(u32, u32)> = Vec::new();
    for (pc, insn) in insns.iter().enumerate() {
        let pc = pc as u32;
        let after = if insn.code == CALL && insn.src_reg == PSEUDO_CALL {
            1
        } else if insn.code == LD_IMM64 && insn.src_reg == PSEUDO_FUNC {
            2
        } else {
            continue;
        };
        if let [_, Some(start)] = cfg.successors(pc) {
            fallible::push(&mut references, (start, pc.saturating_add(after)))?;
        }
    }
    let mut starts: Vec<u32> = fallible::vec_with_capacity(references.len() + 1)?;
    starts.push(0);
    starts.extend(references.iter().map(|&(start, _)| start));
    starts.sort_unstable();
    starts.dedup();
    let graph = Graph {
        insns,
        cfg,
        starts: &starts,
        references: &references,
    };
    let node_count = len + starts.len();
    // Predecessor lists in one array, by destination, for the walk: the edges are counted,
    // then listed, each time from the decoded graph.
    let mut first: Vec<u32> = fallible::vec_with_capacity(node_count + 1)?;
    first.resize(node_count + 1, 0);
    graph.edges(|_, to| first[to as usize + 1] += 1);
    for i in 1..first.len() {
        first[i] += first[i - 1];
    }
    let edge_count = first.last().copied().unwrap_or(0) as usize;
    let mut fill = fallible::to_vec(&first)?;
    let mut preds: Vec<u32> = fallible::vec_with_capacity(edge_count)?;
    preds.resize(edge_count, 0);
    graph.edges(|from, to| {
        let slot = &mut fill[to as usize];
        preds[*slot as usize] = from;
        *slot += 1;
    });
    let mut marked: Vec<bool> = fallible::vec_with_capacity(node_count)?;
    marked.resize(node_count, false);
    let mut work: Vec<u32> = Vec::new();
    for (pc, insn) in insns.iter().enumerate() {
        if is_poison(insn) {
            marked[pc] = true;
            fallible::push(&mut work, pc as u32)?;
        }
    }
    while let Some(node) = work.pop() {
        let (from, to) = (first[node as usize], first[node as usize + 1]);
        for &pred in &preds[from as usize..to as usize] {
            if !marked[pred as usize] {
                marked[pred as usize] = true;
                fallible::push(&mut work, pred)?;
            }
        }
    }
    marked.truncate(len);
    Ok(marked)
}

/// The static flow: one node per instruction, then one per sub-program standing for all its
/// exits, so that exits × references do not become edges × edges.
struct Graph<'g> {
    insns: &'g [Insn],
    cfg: &'g Cfg,
    /// First instructions of the main program (0) and of every sub-program, sorted.
    starts: &'g [u32],
    /// (sub-program, where the referring code goes on) for every call and callback reference.
    references: &'g [(u32, u32)],
}

impl Graph<'_> {
    /// The node standing for the exits of the function holding instruction `pc`.
    fn exits_of(&self, pc: u32) -> u32 {
        let function = self.starts.partition_point(|&s| s <= pc).saturating_sub(1);
        (self.insns.len() + function) as u32
    }

    /// Call `edge(from, to)` for every edge.
    fn edges(&self, mut edge: impl FnMut(u32, u32)) {
        let len = self.insns.len();
        for (pc, insn) in self.insns.iter().enumerate() {
            let pc = pc as u32;
            for to in self.cfg.successors_of(pc) {
                edge(pc, to);
            }
            if insn.code == EXIT {
                edge(pc, self.exits_of(pc));
            }
        }
        for &(start, after) in self.references {
            if (after as usize) < len {
                edge(self.exits_of(start), after);
            }
        }
    }
}
