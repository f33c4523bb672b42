//! The abstract values and one instruction's effect on them: the kernel verifier's
//! `do_check`, reduced to what decides whether a poisoned instruction is reachable.
//!
//! A state holds registers r0-r10 and 8-byte stack slots per call frame. Values are constants
//! (with the relocation whose patched immediate they come from), values the loader sets before
//! load (`.rodata`, `.kconfig`, ksyms), pointers, or unknown scalars. Like the verifier, a
//! conditional jump whose operands are both known takes only its live edge
//! (`is_branch_taken`), any other has both edges live; stack slots keep what the verifier
//! keeps (`check_stack_write_fixed_off` / `check_stack_read_fixed_off`): spilled registers and
//! `BPF_ST` immediates at 8-byte aligned offsets, bytes known to be zero, everything else
//! unknown. Static sub-programs and callbacks are entered with a new frame; global
//! sub-programs are checked on their own with unknown arguments and return an unknown value,
//! as the verifier does. Where two paths meet, `State::join` keeps what both agree on; the
//! `solver` propagates states over the control-flow graph.
//!
//! The state itself (values, frames, stack slots, the join, stack reads and writes) is in
//! `state`; this file holds what the exploration is given and finds, and each instruction's
//! effect.

mod state;

use super::cfg::{CLASS_JMP32, OP_CALL, OP_EXIT, OP_JA, PSEUDO_CALL, PSEUDO_FUNC};
use super::{Branch, Operand};
use crate::core::patch::{
    CLASS_ALU, CLASS_ALU64, CLASS_JMP, CLASS_LD, CLASS_LDX, CLASS_ST, CLASS_STX, LD_IMM64,
    POISON_HELPER_ID, SRC_X,
};
use crate::error::Result;
use crate::fallible;
use crate::object::Insn;
use alloc::vec::Vec;
use hashbrown::HashMap;
use state::{Frame, clobber_args, clobber_frame, read_stack, write_stack};
pub(super) use state::{State, Value};

const MODE_MEM: u8 = 0x60;
const MODE_MEMSX: u8 = 0x80;
const MODE_ATOMIC: u8 = 0xc0;
const OP_JCOND: u8 = 0xe0;
const ATOMIC_FETCH: i32 = 0x01;
const ATOMIC_CMPXCHG: i32 = 0xf1;
const LOAD_ACQUIRE: i32 = 0x100;
/// The frame pointer, r10.
const FP: usize = 10;
/// `MAX_CALL_FRAMES`.
const MAX_FRAMES: usize = 8;

/// What the assembled program says about one instruction beyond its bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Annotation {
    /// Nothing.
    None,
    /// Its immediate was patched by CO-RE relocation `n` (index into the object's relocations).
    Relocated(u32),
    /// An `ld_imm64` of an address in data the loader fills and freezes before load (`.rodata*`,
    /// `.kconfig`): never null, and what it points at is known only at load time.
    LoadTimeData,
    /// An `ld_imm64` of an undefined extern (ksym or kconfig): its address, possibly 0 for a
    /// weak ksym, and what it points at are known only at load time.
    Extern,
    /// An `ld_imm64` of other data (maps, `.data`, `.bss`): a pointer to runtime values.
    RuntimeData,
    /// A call of an undefined extern: a kfunc, which libbpf turns into a kfunc call
    /// (`BPF_PSEUDO_KFUNC_CALL`) though clang emits it as a BPF-to-BPF call to itself.
    Kfunc,
}

/// The program to explore.
pub(super) struct Code<'c> {
    /// The assembled instructions.
    pub insns: &'c [Insn],
    /// One annotation per instruction.
    pub annotations: &'c [Annotation],
    /// Their control-flow graph.
    pub cfg: &'c super::cfg::Cfg,
    /// First instructions of the global sub-programs, which the verifier checks on their own.
    pub global_subprogs: &'c [u32],
    /// Per instruction, whether a block starting there is evaluated at all: the verdicts pass
    /// [`super::relevance::relevant`] (no other block can change one); an instruction past its
    /// end is evaluated, so an empty slice evaluates every block.
    pub relevant: &'c [bool],
}

/// Bounds on the analysis, far above what a program of the verifier's size needs.
#[derive(Clone, Copy, Debug)]
pub(super) struct Budget {
    /// Instructions executed over all block evaluations.
    pub visits: u32,
    /// Block entry states (one per block and call context).
    pub states: usize,
}

/// The first load-time branch on a path to a poison.
#[derive(Clone, Copy, Debug)]
pub(super) struct LoadTimeEdge {
    /// The branch.
    pub branch: Branch,
    /// Which edge the path took.
    pub taken: bool,
    /// Whether it is the only load-time branch on the path: then the poison is reached
    /// whenever the loader's value sends the branch this way.
    pub sole: bool,
}

/// How a path reached a poisoned instruction.
#[derive(Debug)]
pub(super) struct Reach {
    /// The poisoned instruction.
    pub poison: u32,
    /// The first load-time branch on the path, if any.
    pub load_time: Option<LoadTimeEdge>,
    /// The forks on the path (both edges live), oldest first.
    pub forks: Vec<Branch>,
}

/// What the exploration found.
#[derive(Debug, Default)]
pub(super) struct Outcome {
    /// Poisoned instructions reached: one per (poison, load-time or not).
    pub reached: Vec<Reach>,
    /// Each branch decided on a path, keyed by (jump, dead edge's target).
    pub decided: HashMap<(u32, u32), Branch>,
    /// Instructions executed on some path.
    pub visited: Vec<bool>,
    /// Instructions executed over all block evaluations.
    pub visits: u32,
    /// Whether the budget (or the call depth limit) stopped the analysis.
    pub exhausted: bool,
}

/// Whether `insn` is libbpf's poisoned instruction: a call to helper `POISON_HELPER_ID`.
pub(super) fn is_poison(insn: &Insn) -> bool {
    insn.code == CLASS_JMP | OP_CALL && insn.src_reg == 0 && insn.imm == POISON_HELPER_ID
}

fn mem_size(code: u8) -> u32 {
    match code & 0x18 {
        0x18 => 8,
        0x00 => 4,
        0x08 => 2,
        _ => 1,
    }
}

/// The kernel's `is_branch_taken` on two known values: `Some(taken)`, or `None` for an op that
/// is not a conditional jump.
pub(super) fn branch_taken(op: u8, is32: bool, left: u64, right: u64) -> Option<bool> {
    let (l, r) = if is32 {
        (left as u32 as u64, right as u32 as u64)
    } else {
        (left, right)
    };
    let (sl, sr) = if is32 {
        (i64::from(left as i32), i64::from(right as i32))
    } else {
        (left as i64, right as i64)
    };
    Some(match op {
        0x10 => l == r,
        0x20 => l > r,
        0x30 => l >= r,
        0x40 => l & r != 0,
        0x50 => l != r,
        0x60 => sl > sr,
        0x70 => sl >= sr,
        0xa0 => l < r,
        0xb0 => l <= r,
        0xc0 => sl < sr,
        0xd0 => sl <= sr,
        _ => return None,
    })
}

/// A constant ALU operation as the BPF ISA defines it; `None` where the verifier does not keep
/// the result known (shift amounts out of range).
fn alu(op: u8, is32: bool, off: i16, dst: u64, src: u64) -> Option<u64> {
    let width = if is32 { 32 } else { 64 };
    let (d, s) = if is32 {
        (dst as u32 as u64, src as u32 as u64)
    } else {
        (dst, src)
    };
    let signed = |v: u64| {
        if is32 { i64::from(v as i32) } else { v as i64 }
    };
    let value = match op {
        0x00 => d.wrapping_add(s),
        0x10 => d.wrapping_sub(s),
        0x20 => d.wrapping_mul(s),
        0x30 if off == 1 => {
            let (a, b) = (signed(d), signed(s));
            if b == 0 {
                0
            } else if is32 {
                (a as i32).wrapping_div(b as i32) as u32 as u64
            } else {
                a.wrapping_div(b) as u64
            }
        }
        0x30 => d.checked_div(s).unwrap_or(0),
        0x40 => d | s,
        0x50 => d & s,
        0x60 if s < width => d << s,
        0x70 if s < width => d >> s,
        0x80 => d.wrapping_neg(),
        0x90 if off == 1 => {
            let (a, b) = (signed(d), signed(s));
            if b == 0 {
                d
            } else if is32 {
                (a as i32).wrapping_rem(b as i32) as u32 as u64
            } else {
                a.wrapping_rem(b) as u64
            }
        }
        0x90 => d.checked_rem(s).unwrap_or(d),
        0xa0 => d ^ s,
        0xb0 => match off {
            8 => s as i8 as i64 as u64,
            16 => s as i16 as i64 as u64,
            32 if !is32 => s as i32 as i64 as u64,
            _ => s,
        },
        0xc0 if s < width => {
            if is32 {
                ((d as i32) >> s) as u32 as u64
            } else {
                ((d as i64) >> s) as u64
            }
        }
        _ => return None,
    };
    Some(if is32 { value as u32 as u64 } else { value })
}

/// `BPF_END`: byte swaps (ALU64, and ALU to big endian on this little-endian model) or
/// truncations (ALU to little endian) to `bits`.
fn endian(value: u64, bits: i32, swap: bool) -> Option<u64> {
    Some(match (bits, swap) {
        (16, false) => value as u16 as u64,
        (32, false) => value as u32 as u64,
        (64, false) => value,
        (16, true) => (value as u16).swap_bytes() as u64,
        (32, true) => (value as u32).swap_bytes() as u64,
        (64, true) => value.swap_bytes(),
        _ => return None,
    })
}

/// Where control goes after one instruction.
pub(super) enum Flow {
    /// On at this instruction, in the same frame.
    Next(u32),
    /// A conditional jump the values decide: on at `live`.
    Decided {
        branch: Branch,
        live: u32,
        dead: u32,
    },
    /// A conditional jump (or `may_goto`) both of whose edges are live.
    Fork {
        branch: Branch,
        taken_to: u32,
        /// Whether values the loader sets alone decide it.
        load_time: bool,
    },
    /// A static call: the state has the callee's frame pushed, on at `start`.
    Call { start: u32 },
    /// A helper taking a callback at `start`: `callee` enters it (`None` when that would nest
    /// deeper than the verifier's 8 frames), the state goes on at the next instruction (the
    /// callback's exit returns there too).
    Callback { start: u32, callee: Option<State> },
    /// A global sub-program called, checked on its own; the state goes on at `next`.
    Global { start: u32, next: u32 },
    /// A callee's exit: the state has its frame popped, on at `ret` in the caller.
    Return { ret: u32 },
    /// A poisoned call.
    Poison,
    /// Calls nested deeper than the verifier's 8 frames.
    TooDeep,
    /// The path ends: the outermost frame's exit, or an instruction the verifier rejects.
    End,
}

/// Execute instruction `pc` of `code` on `state` (the kernel verifier's `do_check` for one
/// instruction, reduced to the values this pass tracks).
pub(super) fn step(code: &Code<'_>, state: &mut State, pc: u32) -> Result<Flow> {
    let Some(insn) = code.insns.get(pc as usize).copied() else {
        // Falling off the program: the verifier rejects it for that, not for a poison.
        return Ok(Flow::End);
    };
    let annotation = code
        .annotations
        .get(pc as usize)
        .copied()
        .unwrap_or(Annotation::None);
    let class = insn.code & 0x07;
    let dst = usize::from(insn.dst_reg);
    let Some(frame) = state.frames.last_mut() else {
        return Ok(Flow::End);
    };
    if dst > FP || (usize::from(insn.src_reg) > FP && class != CLASS_LD) {
        return Ok(Flow::End);
    }
    let next = pc.wrapping_add(1);
    match class {
        CLASS_LD if insn.code == LD_IMM64 => {
            let high = code.insns.get(next as usize).map_or(0, |i| i.imm);
            let imm = u64::from(insn.imm as u32) | (u64::from(high as u32) << 32);
            let value = match (insn.src_reg, annotation) {
                (PSEUDO_FUNC, _) => Value::Func {
                    start: (i64::from(pc) + i64::from(insn.imm) + 1) as u32,
                },
                (0, Annotation::Relocated(r)) => Value::Const {
                    value: imm,
                    origin: Some(r),
                },
                (0, Annotation::LoadTimeData) => Value::LoadTimePtr {
                    at: pc,
                    nullable: false,
                },
                (0, Annotation::Extern) => Value::LoadTimePtr {
                    at: pc,
                    nullable: true,
                },
                (0, Annotation::None) => Value::known(imm),
                (0, Annotation::RuntimeData) => Value::Pointer { non_null: true },
                _ => Value::Pointer { non_null: false },
            };
            set(frame, dst, value);
            Ok(Flow::Next(pc.wrapping_add(2)))
        }
        CLASS_LD => {
            // Legacy packet loads: a helper-like call.
            clobber_call(frame, Value::Unknown);
            Ok(Flow::Next(next))
        }
        CLASS_LDX => {
            let mode = insn.code & 0xe0;
            let addr = reg(frame, insn.src_reg);
            let value = match (mode, addr) {
                (MODE_MEM | MODE_MEMSX, Value::Stack { frame: f, off }) => read_stack(
                    &state.frames,
                    f,
                    off.saturating_add(i32::from(insn.off)),
                    mem_size(insn.code),
                    mode == MODE_MEMSX,
                ),
                (_, Value::LoadTimePtr { at, .. }) => Value::LoadTime { at },
                _ => Value::Unknown,
            };
            if let Some(frame) = state.frames.last_mut() {
                set(frame, dst, value);
            }
            Ok(Flow::Next(next))
        }
        CLASS_ST | CLASS_STX => {
            let mode = insn.code & 0xe0;
            let target = reg(frame, insn.dst_reg);
            let size = mem_size(insn.code);
            let stored = if class == CLASS_ST {
                Some(Value::known(i64::from(insn.imm) as u64))
            } else if mode == MODE_MEM {
                Some(reg(frame, insn.src_reg))
            } else {
                None
            };
            if mode == MODE_ATOMIC && class == CLASS_STX {
                if insn.imm == LOAD_ACQUIRE {
                    set(frame, dst, Value::Unknown);
                } else if insn.imm == ATOMIC_CMPXCHG {
                    set(frame, 0, Value::Unknown);
                } else if insn.imm & ATOMIC_FETCH != 0 {
                    set(frame, usize::from(insn.src_reg), Value::Unknown);
                }
            }
            let is_load = mode == MODE_ATOMIC && insn.imm == LOAD_ACQUIRE;
            match (target, is_load) {
                (Value::Stack { frame: f, off }, false) => write_stack(
                    &mut state.frames,
                    f,
                    off.saturating_add(i32::from(insn.off)),
                    size,
                    stored,
                )?,
                (Value::StackAt { frame: f }, false) => {
                    clobber_frame(&mut state.frames, f);
                }
                _ => {}
            }
            Ok(Flow::Next(next))
        }
        CLASS_ALU | CLASS_ALU64 => {
            let is32 = class == CLASS_ALU;
            let op = insn.code & 0xf0;
            let src = if insn.code & SRC_X != 0 {
                reg(frame, insn.src_reg)
            } else {
                Value::Const {
                    value: i64::from(insn.imm) as u64,
                    origin: match annotation {
                        Annotation::Relocated(r) => Some(r),
                        _ => None,
                    },
                }
            };
            let value = alu_value(insn, is32, op, reg(frame, insn.dst_reg), src);
            set(frame, dst, value);
            Ok(Flow::Next(next))
        }
        CLASS_JMP | CLASS_JMP32 => jump(code, state, pc, insn, class == CLASS_JMP32),
        _ => Ok(Flow::End),
    }
}

fn jump(code: &Code<'_>, state: &mut State, pc: u32, insn: Insn, is32: bool) -> Result<Flow> {
    let next = pc.wrapping_add(1);
    let op = insn.code & 0xf0;
    let target = |off: i32| (i64::from(pc) + i64::from(off) + 1) as u32;
    match op {
        OP_JA => Ok(Flow::Next(target(if is32 {
            insn.imm
        } else {
            i32::from(insn.off)
        }))),
        OP_CALL if !is32 => call(code, state, pc, insn),
        OP_EXIT if !is32 => {
            let Some(callee) = state.frames.pop() else {
                return Ok(Flow::End);
            };
            let Some(caller) = state.frames.last_mut() else {
                return Ok(Flow::End);
            };
            let ret = if callee.callback {
                Value::Unknown
            } else {
                callee.regs[0]
            };
            clobber_call(caller, ret);
            Ok(Flow::Return { ret: callee.ret })
        }
        OP_JCOND if !is32 => {
            // may_goto: the verifier explores both edges.
            let branch = Branch {
                insn: pc,
                jump: insn,
                left: Value::Unknown.operand(None),
                right: Value::Unknown.operand(None),
            };
            Ok(Flow::Fork {
                branch,
                taken_to: target(i32::from(insn.off)),
                load_time: false,
            })
        }
        _ if branch_taken(op, false, 0, 0).is_none() => Ok(Flow::End),
        _ => {
            let Some(frame) = state.frames.last() else {
                return Ok(Flow::End);
            };
            let left = reg(frame, insn.dst_reg);
            let right = if insn.code & SRC_X != 0 {
                reg(frame, insn.src_reg)
            } else {
                Value::known(i64::from(insn.imm) as u64)
            };
            let branch = Branch {
                insn: pc,
                jump: insn,
                left: left.operand(Some(insn.dst_reg)),
                right: right.operand((insn.code & SRC_X != 0).then_some(insn.src_reg)),
            };
            let taken_to = target(i32::from(insn.off));
            Ok(match decide(op, is32, left, right) {
                Some(true) => Flow::Decided {
                    branch,
                    live: taken_to,
                    dead: next,
                },
                Some(false) => Flow::Decided {
                    branch,
                    live: next,
                    dead: taken_to,
                },
                None => {
                    // Load-time only when the loader's values alone decide it: against a
                    // runtime value the verifier explores both edges whatever they are.
                    let settled = |o: &Operand| o.load_time || o.value.is_some();
                    let load_time = (branch.left.load_time || branch.right.load_time)
                        && settled(&branch.left)
                        && settled(&branch.right);
                    Flow::Fork {
                        branch,
                        taken_to,
                        load_time,
                    }
                }
            })
        }
    }
}

fn call(code: &Code<'_>, state: &mut State, pc: u32, insn: Insn) -> Result<Flow> {
    let next = pc.wrapping_add(1);
    let depth = state.frames.len();
    let Some(frame) = state.frames.last_mut() else {
        return Ok(Flow::End);
    };
    let kfunc = code.annotations.get(pc as usize) == Some(&Annotation::Kfunc);
    if insn.src_reg == PSEUDO_CALL && !kfunc {
        let start = (i64::from(pc) + i64::from(insn.imm) + 1) as u32;
        if code.global_subprogs.contains(&start) {
            clobber_args(&mut state.frames, false)?;
            if let Some(frame) = state.frames.last_mut() {
                clobber_call(frame, Value::Unknown);
            }
            return Ok(Flow::Global { start, next });
        }
        if depth >= MAX_FRAMES {
            return Ok(Flow::TooDeep);
        }
        let args = [1, 2, 3, 4, 5].map(|r| frame.regs[r]);
        fallible::push(&mut state.frames, Frame::new(depth, args, next, false))?;
        return Ok(Flow::Call { start });
    }
    if is_poison(&insn) {
        return Ok(Flow::Poison);
    }
    // A helper or kfunc; a callback among its arguments is entered like a call.
    let callback = [1, 2, 3, 4, 5].iter().find_map(|&r| match frame.regs[r] {
        Value::Func { start } => Some(start),
        _ => None,
    });
    clobber_args(&mut state.frames, callback.is_none())?;
    let entered = match callback {
        Some(start) if depth >= MAX_FRAMES => Some((start, None)),
        Some(start) => {
            let mut callee = state.try_clone()?;
            fallible::push(
                &mut callee.frames,
                Frame::new(depth, [Value::Unknown; 5], next, true),
            )?;
            Some((start, Some(callee)))
        }
        None => None,
    };
    if let Some(frame) = state.frames.last_mut() {
        clobber_call(frame, Value::Unknown);
    }
    Ok(match entered {
        Some((start, callee)) => Flow::Callback { start, callee },
        None => Flow::Next(next),
    })
}

fn reg(frame: &Frame, r: u8) -> Value {
    frame
        .regs
        .get(usize::from(r))
        .copied()
        .unwrap_or(Value::Unknown)
}

fn set(frame: &mut Frame, r: usize, value: Value) {
    // r10 is read-only; the verifier rejects writes to it.
    if r < FP {
        if let Some(slot) = frame.regs.get_mut(r) {
            *slot = value;
        }
    }
}

/// After a call returns: r0 is `ret`, the argument registers are gone.
fn clobber_call(frame: &mut Frame, ret: Value) {
    frame.regs[0] = ret;
    for r in 1..=5 {
        frame.regs[r] = Value::Uninit;
    }
}

fn alu_value(insn: Insn, is32: bool, op: u8, dst: Value, src: Value) -> Value {
    use Value::*;
    const OP_ADD: u8 = 0x00;
    const OP_SUB: u8 = 0x10;
    const OP_NEG: u8 = 0x80;
    const OP_MOV: u8 = 0xb0;
    const OP_END: u8 = 0xd0;
    let computed = |d: u64, s: u64, origin: Option<u32>| match alu(op, is32, insn.off, d, s) {
        Some(value) => Const { value, origin },
        None => Unknown,
    };
    match op {
        OP_MOV if !is32 && insn.off == 0 => src,
        OP_MOV => match src {
            Const { value, origin } => computed(0, value, origin),
            LoadTime { at } => LoadTime { at },
            _ => Unknown,
        },
        OP_END => match dst {
            Const { value, origin } => {
                let swap = !is32 || insn.code & SRC_X != 0;
                endian(value, insn.imm, swap).map_or(Unknown, |value| Const { value, origin })
            }
            LoadTime { at } => LoadTime { at },
            _ => Unknown,
        },
        OP_NEG => match dst {
            Const { value, origin } => computed(value, 0, origin),
            LoadTime { at } => LoadTime { at },
            _ => Unknown,
        },
        _ => match (dst, src) {
            (
                Const {
                    value: d,
                    origin: o1,
                },
                Const {
                    value: s,
                    origin: o2,
                },
            ) => computed(d, s, o1.or(o2)),
            (LoadTime { at }, s) | (s, LoadTime { at }) if s.is_scalar() => LoadTime { at },
            (Stack { frame, off }, Const { value, .. })
                if !is32 && (op == OP_ADD || op == OP_SUB) =>
            {
                let delta = value as i64;
                let delta = if op == OP_SUB {
                    delta.wrapping_neg()
                } else {
                    delta
                };
                i32::try_from(i64::from(off).saturating_add(delta))
                    .map_or(StackAt { frame }, |off| Stack { frame, off })
            }
            (LoadTimePtr { at, nullable }, Const { .. })
                if !is32 && (op == OP_ADD || op == OP_SUB) =>
            {
                LoadTimePtr { at, nullable }
            }
            // A map value stays one at any offset; the rest (context, stack at an unknown
            // offset, function) the verifier does not call non-null.
            (Pointer { non_null }, _) if !is32 && (op == OP_ADD || op == OP_SUB) => {
                Pointer { non_null }
            }
            (LoadTimePtr { nullable, .. }, _) if !is32 && (op == OP_ADD || op == OP_SUB) => {
                Pointer {
                    non_null: !nullable,
                }
            }
            (Stack { frame, .. } | StackAt { frame }, _)
                if !is32 && (op == OP_ADD || op == OP_SUB) =>
            {
                StackAt { frame }
            }
            (Func { .. }, _) if !is32 && (op == OP_ADD || op == OP_SUB) => {
                Pointer { non_null: false }
            }
            _ => Unknown,
        },
    }
}

/// The verifier's `is_branch_taken` for the values this pass tracks.
fn decide(op: u8, is32: bool, left: Value, right: Value) -> Option<bool> {
    use Value::*;
    const OP_JEQ: u8 = 0x10;
    const OP_JNE: u8 = 0x50;
    // `reg_not_null`: map values, not the context, the stack or a function.
    let non_null = |v: Value| {
        matches!(
            v,
            Pointer { non_null: true }
                | LoadTimePtr {
                    nullable: false,
                    ..
                }
        )
    };
    match (left, right) {
        (Const { value: l, .. }, Const { value: r, .. }) => branch_taken(op, is32, l, r),
        (p, Const { value: 0, .. }) | (Const { value: 0, .. }, p)
            if !is32 && non_null(p) && (op == OP_JEQ || op == OP_JNE) =>
        {
            Some(op == OP_JNE)
        }
        _ => None,
    }
}
