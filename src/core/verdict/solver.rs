//! The linear pass: sparse conditional constant propagation (Wegman–Zadeck, as LLVM's
//! `SCCPSolver`) over each entry program's control-flow graph, with `interp`'s values as the
//! lattice.
//!
//! A block's entry state is the join of the states on its executable incoming edges; an edge
//! is executable only when its branch can be taken under those values (the verifier's
//! `is_branch_taken`). A work list holds the blocks whose entry state changed; each value only
//! goes down its finite lattice, so every block is evaluated a bounded number of times and
//! states are kept at block entries only. Static calls and callbacks are analysed per call
//! context (the chain of call sites, at most the verifier's 8 frames deep), so a callee sees
//! its caller's frames and returns to the one call site; global sub-programs are analysed
//! alone with unknown arguments. The executable-edge graph then gives the evidence: the
//! branches on one path to each reached poison (`paths`).

use super::Branch;
use super::interp::{Budget, Code, Flow, LoadTimeEdge, Outcome, Reach, State, Value, step};
use crate::error::{Error, Result};
use crate::fallible;
use alloc::collections::BinaryHeap;
use alloc::vec::Vec;
use core::cmp::Reverse;
use hashbrown::HashMap;

/// How an executable edge leaves its block, for the evidence.
#[derive(Clone, Copy, Debug)]
enum Label {
    /// Straight on, a decided branch's live edge, a call or a return.
    Plain,
    /// One edge of a branch both of whose edges are executable.
    Fork(Branch),
    /// One edge of a branch values the loader sets decide; `taken`: the jump's target.
    LoadTime(Branch, bool),
}

#[derive(Clone, Copy, Debug)]
struct Edge {
    to: u32,
    label: Label,
}

/// How the last evaluation of a block ended.
// One per block and context, rewritten on each evaluation: boxing the branches would allocate
// each time for no memory saved.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug)]
enum Term {
    /// Not evaluated (the budget stopped the pass first).
    Open,
    /// The path ends.
    End,
    /// At the poisoned call at this instruction.
    Poison(u32),
    /// Into these blocks, the fall-through first.
    Edges([Option<Edge>; 2]),
}

/// One block in one call context.
struct Node {
    context: u32,
    start: u32,
    state: State,
    term: Term,
    queued: bool,
}

/// A call context: the chain of call sites from its root.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum ContextKey {
    /// An entry point: the program's or a global sub-program's first instruction.
    Root(u32),
    /// Entered from the call at `site` in context `parent`; `callback` for a helper's callback.
    Callee {
        parent: u32,
        site: u32,
        callback: bool,
    },
}

struct Solver<'c> {
    code: &'c Code<'c>,
    budget: Budget,
    contexts: HashMap<ContextKey, u32>,
    /// Each context's parent, by id.
    parents: Vec<Option<u32>>,
    /// Root contexts' entry nodes, in the order they were found.
    roots: Vec<u32>,
    nodes: Vec<Node>,
    node_at: HashMap<(u32, u32), u32>,
    /// Queued blocks, by (context, first instruction), lowest first: a context's blocks in
    /// program order, so most are evaluated once, after all their predecessors.
    work: BinaryHeap<Reverse<(u32, u32, u32)>>,
    /// The state a block is evaluated in, kept between evaluations so that its buffers are
    /// reused: each evaluation starts from a copy of the block's entry state.
    scratch: State,
    out: Outcome,
}

/// Analyse `code` from instruction 0, and every global sub-program called on the way.
pub(super) fn explore(code: &Code<'_>, budget: Budget) -> Result<Outcome> {
    let len = code.insns.len();
    let mut visited = fallible::vec_with_capacity(len)?;
    visited.resize(len, false);
    let mut solver = Solver {
        code,
        budget,
        contexts: HashMap::new(),
        parents: Vec::new(),
        roots: Vec::new(),
        nodes: Vec::new(),
        node_at: HashMap::new(),
        work: BinaryHeap::new(),
        scratch: State::default(),
        out: Outcome {
            visited,
            ..Outcome::default()
        },
    };
    // The program's context: a pointer the verifier does not branch on.
    let args = [
        Value::Pointer { non_null: false },
        Value::Uninit,
        Value::Uninit,
        Value::Uninit,
        Value::Uninit,
    ];
    solver.root(0, args)?;
    solver.run()?;
    let reached = reaches(&solver.nodes, &solver.roots)?;
    solver.out.reached = reached;
    Ok(solver.out)
}

impl Solver<'_> {
    /// The context `key`, new or known.
    fn context(&mut self, key: ContextKey, parent: Option<u32>) -> Result<(u32, bool)> {
        if let Some(&id) = self.contexts.get(&key) {
            return Ok((id, false));
        }
        let id = u32::try_from(self.parents.len()).map_err(|_| Error::Limit {
            what: "call contexts in a verdict analysis",
            limit: u32::MAX as usize,
        })?;
        self.contexts
            .try_reserve(1)
            .map_err(|_| Error::OutOfMemory)?;
        self.contexts.insert(key, id);
        fallible::push(&mut self.parents, parent)?;
        Ok((id, true))
    }

    /// Start an entry point's context at `start` with `args`, once.
    fn root(&mut self, start: u32, args: [Value; 5]) -> Result<()> {
        let (context, new) = self.context(ContextKey::Root(start), None)?;
        if new {
            if let Some(node) = self.flow(context, start, &State::entry(args)?)? {
                fallible::push(&mut self.roots, node)?;
            }
        }
        Ok(())
    }

    /// Join `state` into the entry of block `start` of `context` (a copy of it, for a block
    /// first reached), queueing the block when that changed it; the block's node, `None` when
    /// the state budget is spent or the block is not to be evaluated ([`Code::relevant`]).
    fn flow(&mut self, context: u32, start: u32, state: &State) -> Result<Option<u32>> {
        if !self
            .code
            .relevant
            .get(start as usize)
            .copied()
            .unwrap_or(true)
        {
            return Ok(None);
        }
        if let Some(&id) = self.node_at.get(&(context, start)) {
            let Some(node) = self.nodes.get_mut(id as usize) else {
                return Ok(None);
            };
            if node.state.join(state) && !node.queued {
                node.queued = true;
                self.work.try_reserve(1).map_err(|_| Error::OutOfMemory)?;
                self.work.push(Reverse((context, start, id)));
            }
            return Ok(Some(id));
        }
        if self.nodes.len() >= self.budget.states {
            self.out.exhausted = true;
            return Ok(None);
        }
        let id = self.nodes.len() as u32;
        fallible::push(
            &mut self.nodes,
            Node {
                context,
                start,
                state: state.try_clone()?,
                term: Term::Open,
                queued: true,
            },
        )?;
        self.node_at
            .try_reserve(1)
            .map_err(|_| Error::OutOfMemory)?;
        self.node_at.insert((context, start), id);
        self.work.try_reserve(1).map_err(|_| Error::OutOfMemory)?;
        self.work.push(Reverse((context, start, id)));
        Ok(Some(id))
    }

    fn run(&mut self) -> Result<()> {
        while let Some(Reverse((_, _, id))) = self.work.pop() {
            if !self.evaluate(id)? {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Execute block `id` from its entry state and push the result along its executable
    /// edges; `false` when the visit budget stopped it.
    fn evaluate(&mut self, id: u32) -> Result<bool> {
        let Some(node) = self.nodes.get_mut(id as usize) else {
            return Ok(true);
        };
        node.queued = false;
        let (context, mut pc) = (node.context, node.start);
        let mut state = core::mem::take(&mut self.scratch);
        state.assign_from(&node.state)?;
        let plain = |to| {
            Some(Edge {
                to,
                label: Label::Plain,
            })
        };
        let term = loop {
            if self.out.visits >= self.budget.visits {
                self.out.exhausted = true;
                return Ok(false);
            }
            self.out.visits += 1;
            if let Some(v) = self.out.visited.get_mut(pc as usize) {
                *v = true;
            }
            let next = match step(self.code, &mut state, pc)? {
                Flow::Next(next) => next,
                Flow::Decided { branch, live, dead } => {
                    self.out
                        .decided
                        .try_reserve(1)
                        .map_err(|_| Error::OutOfMemory)?;
                    self.out.decided.insert((pc, dead), branch);
                    live
                }
                Flow::Fork {
                    branch,
                    taken_to,
                    load_time,
                } => {
                    let label = |taken| match load_time {
                        true => Label::LoadTime(branch, taken),
                        false => Label::Fork(branch),
                    };
                    let fall = pc.wrapping_add(1);
                    let taken = self.flow(context, taken_to, &state)?;
                    let other = self.flow(context, fall, &state)?;
                    let edge = |to: Option<u32>, taken| {
                        to.map(|to| Edge {
                            to,
                            label: label(taken),
                        })
                    };
                    break Term::Edges([edge(other, false), edge(taken, true)]);
                }
                Flow::Call { start } => {
                    let key = ContextKey::Callee {
                        parent: context,
                        site: pc,
                        callback: false,
                    };
                    let (callee, _) = self.context(key, Some(context))?;
                    let to = self.flow(callee, start, &state)?;
                    break Term::Edges([to.and_then(plain), None]);
                }
                Flow::Callback { start, callee } => {
                    let entered = match callee {
                        Some(callee) => {
                            let key = ContextKey::Callee {
                                parent: context,
                                site: pc,
                                callback: true,
                            };
                            let (cb, _) = self.context(key, Some(context))?;
                            self.flow(cb, start, &callee)?
                        }
                        None => {
                            self.out.exhausted = true;
                            None
                        }
                    };
                    let on = self.flow(context, pc.wrapping_add(1), &state)?;
                    break Term::Edges([on.and_then(plain), entered.and_then(plain)]);
                }
                Flow::Global { start, next } => {
                    self.root(start, [Value::Unknown; 5])?;
                    next
                }
                Flow::Return { ret } => {
                    let parent = self.parents.get(context as usize).copied().flatten();
                    let Some(parent) = parent else {
                        break Term::End;
                    };
                    let to = self.flow(parent, ret, &state)?;
                    break Term::Edges([to.and_then(plain), None]);
                }
                Flow::Poison => break Term::Poison(pc),
                Flow::TooDeep => {
                    self.out.exhausted = true;
                    break Term::End;
                }
                Flow::End => break Term::End,
            };
            if self.code.cfg.is_leader(next) {
                let to = self.flow(context, next, &state)?;
                break Term::Edges([to.and_then(plain), None]);
            }
            pc = next;
        };
        if let Some(node) = self.nodes.get_mut(id as usize) {
            node.term = term;
        }
        self.scratch = state;
        Ok(true)
    }
}

/// A depth-first walk of the executable-edge graph from one node, the fall-through first,
/// as the verifier explores.
struct Walk {
    /// The nodes reached, in the order walked.
    order: Vec<u32>,
    /// For each node reached but the start, the node and edge it was first reached by.
    parent: Vec<Option<(u32, Label)>>,
    /// Whether each node was reached.
    seen: Vec<bool>,
}

/// Walk from `from`; `load_time`: whether load-time edges are followed.
fn walk(nodes: &[Node], from: u32, load_time: bool) -> Result<Walk> {
    let mut parent: Vec<Option<(u32, Label)>> = fallible::vec_with_capacity(nodes.len())?;
    parent.resize(nodes.len(), None);
    let mut seen: Vec<bool> = fallible::vec_with_capacity(nodes.len())?;
    seen.resize(nodes.len(), false);
    let mut order = Vec::new();
    let mut stack: Vec<u32> = Vec::new();
    if let Some(s) = seen.get_mut(from as usize) {
        *s = true;
        fallible::push(&mut stack, from)?;
    }
    // A node is marked when pushed, so each is pushed once.
    while let Some(id) = stack.pop() {
        fallible::push(&mut order, id)?;
        let Some(Term::Edges(edges)) = nodes.get(id as usize).map(|n| n.term) else {
            continue;
        };
        // The fall-through is pushed last, so it is walked first.
        for edge in edges.iter().rev().flatten() {
            if !load_time && matches!(edge.label, Label::LoadTime(..)) {
                continue;
            }
            let to = edge.to as usize;
            if seen.get(to) == Some(&false) {
                seen[to] = true;
                parent[to] = Some((id, edge.label));
                fallible::push(&mut stack, edge.to)?;
            }
        }
    }
    Ok(Walk {
        order,
        parent,
        seen,
    })
}

impl Walk {
    /// The branches with both edges executable on the walk's path to `to`, first first.
    fn forks(&self, to: u32) -> Result<Vec<Branch>> {
        let mut forks = Vec::new();
        let mut at = to as usize;
        // Each node's parent was reached before it, so the chain ends at the start.
        for _ in 0..self.parent.len() {
            let Some(&Some((from, label))) = self.parent.get(at) else {
                break;
            };
            if let Label::Fork(branch) | Label::LoadTime(branch, _) = label {
                fallible::push(&mut forks, branch)?;
            }
            at = from as usize;
        }
        forks.reverse();
        Ok(forks)
    }
}

fn poison_at(nodes: &[Node], id: u32) -> Option<u32> {
    match nodes.get(id as usize).map(|n| n.term) {
        Some(Term::Poison(pc)) => Some(pc),
        _ => None,
    }
}

/// Record that a path reaches `poison`, once per poison and first load-time edge.
fn push_reach(out: &mut Vec<Reach>, reach: Reach) -> Result<()> {
    let key = |l: Option<LoadTimeEdge>| l.map(|l| (l.branch.insn, l.taken, l.sole));
    let duplicate = out
        .iter()
        .any(|r| r.poison == reach.poison && key(r.load_time) == key(reach.load_time));
    if duplicate {
        return Ok(());
    }
    fallible::push(out, reach)
}

/// The poisons the executable-edge graph reaches from each root, with one path each: first
/// those reached without a load-time edge; then, for a poison only reached past one, from each
/// first load-time edge on the way, those reached with no other load-time edge after it
/// (`sole`), then those reached only through more.
fn reaches(nodes: &[Node], roots: &[u32]) -> Result<Vec<Reach>> {
    let mut out = Vec::new();
    if !nodes.iter().any(|n| matches!(n.term, Term::Poison(_))) {
        return Ok(out);
    }
    // (forks before it, branch, taken, edge's target) of each first load-time edge.
    let mut first_load_time: Vec<(Vec<Branch>, Branch, bool, u32)> = Vec::new();
    for &root in roots {
        let w = walk(nodes, root, false)?;
        for &id in &w.order {
            if let Some(poison) = poison_at(nodes, id) {
                let forks = w.forks(id)?;
                push_reach(
                    &mut out,
                    Reach {
                        poison,
                        load_time: None,
                        forks,
                    },
                )?;
            }
        }
        for &id in &w.order {
            let Some(Term::Edges(edges)) = nodes.get(id as usize).map(|n| n.term) else {
                continue;
            };
            for edge in edges.iter().flatten() {
                if let Label::LoadTime(branch, taken) = edge.label {
                    let forks = w.forks(id)?;
                    fallible::push(&mut first_load_time, (forks, branch, taken, edge.to))?;
                }
            }
        }
    }
    let unconditional = |out: &[Reach], poison: u32| {
        out.iter()
            .any(|r| r.poison == poison && r.load_time.is_none())
    };
    let rest = nodes
        .iter()
        .filter_map(|n| match n.term {
            Term::Poison(pc) => Some(pc),
            _ => None,
        })
        .any(|pc| !unconditional(&out, pc));
    if !rest {
        return Ok(out);
    }
    for (before, branch, taken, to) in &first_load_time {
        let sole = walk(nodes, *to, false)?;
        let any = walk(nodes, *to, true)?;
        for (w, is_sole) in [(&sole, true), (&any, false)] {
            for &id in &w.order {
                let Some(poison) = poison_at(nodes, id) else {
                    continue;
                };
                if !is_sole && sole.seen.get(id as usize) == Some(&true) {
                    continue;
                }
                let after = w.forks(id)?;
                let mut forks = fallible::vec_with_capacity(before.len() + 1 + after.len())?;
                forks.extend_from_slice(before);
                forks.push(*branch);
                forks.extend(after);
                push_reach(
                    &mut out,
                    Reach {
                        poison,
                        load_time: Some(LoadTimeEdge {
                            branch: *branch,
                            taken: *taken,
                            sole: is_sole,
                        }),
                        forks,
                    },
                )?;
            }
        }
    }
    Ok(out)
}
