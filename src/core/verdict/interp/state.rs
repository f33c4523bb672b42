//! The abstract state `interp` steps: values, call frames with their stack slots, the join
//! where two paths meet, and the stack reads and writes, apart from the instructions that
//! drive them.
//!
//! Stack slots keep what the kernel verifier keeps (`check_stack_write_fixed_off` /
//! `check_stack_read_fixed_off`): spilled registers and `BPF_ST` immediates at 8-byte aligned
//! offsets, bytes known to be zero, everything else unknown. A call may write the stack its
//! arguments point to; a write at an unknown offset may change any slot of its frame.

use super::FP;
use crate::core::verdict::Operand;
use crate::error::{Error, Result};
use crate::fallible;
use alloc::vec::Vec;

/// `MAX_BPF_STACK`.
const STACK_SIZE: i32 = 512;

/// An abstract register value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::core::verdict) enum Value {
    /// Never written (`NOT_INIT`).
    Uninit,
    /// A scalar the verifier does not know.
    Unknown,
    /// A known scalar, and the relocation it was patched by.
    Const { value: u64, origin: Option<u32> },
    /// A scalar the loader sets; `at` is the instruction that loaded its address.
    LoadTime { at: u32 },
    /// A pointer into load-time data, or an extern's address (`nullable`).
    LoadTimePtr { at: u32, nullable: bool },
    /// A pointer this pass does not follow: a map value (`non_null`, as the verifier's
    /// `reg_not_null` says), the context or anything derived from a pointer.
    Pointer { non_null: bool },
    /// A pointer into frame `frame`'s stack, `off` bytes from its frame pointer.
    Stack { frame: u8, off: i32 },
    /// A pointer into frame `frame`'s stack at an offset this pass does not know: a write
    /// through it may change any slot.
    StackAt { frame: u8 },
    /// A sub-program's address (callback), by first instruction.
    Func { start: u32 },
}

impl Value {
    pub(super) fn known(value: u64) -> Value {
        Value::Const {
            value,
            origin: None,
        }
    }

    pub(super) fn is_scalar(self) -> bool {
        matches!(
            self,
            Value::Unknown | Value::Const { .. } | Value::LoadTime { .. }
        )
    }

    pub(super) fn operand(self, reg: Option<u8>) -> Operand {
        let (value, origin) = match self {
            Value::Const { value, origin } => (Some(value), origin),
            _ => (None, None),
        };
        Operand {
            reg,
            value,
            relocation: origin.map(|r| r as usize),
            load_time: matches!(self, Value::LoadTime { .. } | Value::LoadTimePtr { .. }),
        }
    }
}

/// What the verifier knows of one stack byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Byte {
    Misc,
    Zero,
    Spill,
}

/// One 8-byte stack slot; `bytes[0]` is its lowest address (the verifier's `slot_type[7]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    spilled: Option<Value>,
    bytes: [Byte; 8],
}

const EMPTY_SLOT: Slot = Slot {
    spilled: None,
    bytes: [Byte::Misc; 8],
};

#[derive(Debug, PartialEq, Eq)]
pub(in crate::core::verdict) struct Frame {
    pub(super) regs: [Value; 11],
    /// Slots by offset of their lowest byte from the frame pointer, sorted.
    stack: Vec<(i32, Slot)>,
    /// Where the caller goes on when this frame exits.
    pub(super) ret: u32,
    /// A callback's frame: its return value does not reach the caller.
    pub(super) callback: bool,
}

impl Frame {
    pub(super) fn new(depth: usize, args: [Value; 5], ret: u32, callback: bool) -> Frame {
        let mut regs = [Value::Uninit; 11];
        for (reg, arg) in regs.iter_mut().skip(1).zip(args) {
            *reg = arg;
        }
        regs[FP] = Value::Stack {
            frame: depth as u8,
            off: 0,
        };
        Frame {
            regs,
            stack: Vec::new(),
            ret,
            callback,
        }
    }

    fn try_clone(&self) -> Result<Frame> {
        Ok(Frame {
            regs: self.regs,
            stack: fallible::to_vec(&self.stack)?,
            ret: self.ret,
            callback: self.callback,
        })
    }

    fn assign_from(&mut self, other: &Frame) -> Result<()> {
        self.regs = other.regs;
        self.stack.clear();
        self.stack.try_reserve(other.stack.len())?;
        self.stack.extend_from_slice(&other.stack);
        self.ret = other.ret;
        self.callback = other.callback;
        Ok(())
    }

    fn slot(&self, base: i32) -> Option<&Slot> {
        let pos = self.stack.binary_search_by_key(&base, |s| s.0).ok()?;
        self.stack.get(pos).map(|s| &s.1)
    }

    fn slot_mut(&mut self, base: i32) -> Result<&mut Slot> {
        let pos = match self.stack.binary_search_by_key(&base, |s| s.0) {
            Ok(pos) => pos,
            Err(pos) => {
                self.stack.try_reserve(1)?;
                self.stack.insert(pos, (base, EMPTY_SLOT));
                pos
            }
        };
        self.stack
            .get_mut(pos)
            .map(|s| &mut s.1)
            .ok_or(Error::InvalidArgument("verdict: stack slot vanished"))
    }

    /// Lower `self` to its join with `other`; whether anything changed. A slot only `self`
    /// has is joined with an empty one; one only `other` has would join to an empty one,
    /// which is what a missing slot reads as.
    fn join(&mut self, other: &Frame) -> bool {
        let mut changed = false;
        for (mine, theirs) in self.regs.iter_mut().zip(other.regs) {
            if *mine != theirs {
                let joined = join_value(*mine, theirs);
                changed |= joined != *mine;
                *mine = joined;
            }
        }
        // Both stacks are sorted by offset: one walk pairs them up.
        let mut theirs = other.stack.iter().peekable();
        for (base, slot) in self.stack.iter_mut() {
            while theirs.next_if(|(b, _)| b < base).is_some() {}
            let other_slot = theirs
                .next_if(|(b, _)| b == base)
                .map_or(&EMPTY_SLOT, |(_, s)| s);
            if slot != other_slot {
                let joined = join_slot(slot, other_slot);
                changed |= joined != *slot;
                *slot = joined;
            }
        }
        changed
    }
}

/// The abstract state at one point of one call context: the frames, outermost first.
#[derive(Debug, Default, PartialEq, Eq)]
pub(in crate::core::verdict) struct State {
    pub frames: Vec<Frame>,
}

impl State {
    /// A context's entry state: one frame with `args` in r1-r5.
    pub fn entry(args: [Value; 5]) -> Result<State> {
        let mut frames = Vec::new();
        fallible::push(&mut frames, Frame::new(0, args, u32::MAX, false))?;
        Ok(State { frames })
    }

    pub fn try_clone(&self) -> Result<State> {
        let mut copy = State::default();
        copy.assign_from(self)?;
        Ok(copy)
    }

    /// Make `self` a copy of `other`, in the buffers `self` already has where they are large
    /// enough (a solver copies each block's entry state before evaluating it).
    pub fn assign_from(&mut self, other: &State) -> Result<()> {
        self.frames.truncate(other.frames.len());
        for (mine, theirs) in self.frames.iter_mut().zip(&other.frames) {
            mine.assign_from(theirs)?;
        }
        let have = self.frames.len();
        self.frames.try_reserve_exact(other.frames.len() - have)?;
        for frame in &other.frames[have..] {
            self.frames.push(frame.try_clone()?);
        }
        Ok(())
    }

    /// Lower `self` to the join of `self` and `other` (the states of two paths meeting at a
    /// block); whether anything changed. Both belong to one context, so their frames pair up.
    pub fn join(&mut self, other: &State) -> bool {
        let mut changed = false;
        for (mine, theirs) in self.frames.iter_mut().zip(&other.frames) {
            changed |= mine.join(theirs);
        }
        changed
    }
}

/// The join of two values of one register or slot on two paths: equal values stay, `Uninit`
/// (never written on one path: compiled code does not read it there) takes the other's, a
/// constant met by a load-time value is known at load time, pointers keep what both agree on,
/// anything else is unknown. `old`'s relocation and load site are kept, so a value changes
/// only a bounded number of times.
fn join_value(old: Value, new: Value) -> Value {
    use Value::*;
    match (old, new) {
        _ if old == new => old,
        (Uninit, v) | (v, Uninit) => v,
        (
            Const { value: a, origin },
            Const {
                value: b,
                origin: other,
            },
        ) if a == b => Const {
            value: a,
            origin: origin.or(other),
        },
        (LoadTime { at }, Const { .. } | LoadTime { .. }) | (Const { .. }, LoadTime { at }) => {
            LoadTime { at }
        }
        (
            LoadTimePtr { at, nullable },
            LoadTimePtr {
                nullable: other, ..
            },
        ) => LoadTimePtr {
            at,
            nullable: nullable || other,
        },
        (Pointer { non_null: a }, Pointer { non_null: b }) => Pointer { non_null: a && b },
        (Pointer { non_null }, LoadTimePtr { nullable, .. })
        | (LoadTimePtr { nullable, .. }, Pointer { non_null }) => Pointer {
            non_null: non_null && !nullable,
        },
        (
            Stack { frame: a, .. } | StackAt { frame: a },
            Stack { frame: b, .. } | StackAt { frame: b },
        ) if a == b => StackAt { frame: a },
        _ => Unknown,
    }
}

/// The join of one stack slot on two paths: a byte keeps its kind where both agree, a spill
/// its joined value where both spilled.
fn join_slot(old: &Slot, new: &Slot) -> Slot {
    let mut bytes = old.bytes;
    for (byte, other) in bytes.iter_mut().zip(new.bytes) {
        if *byte != other {
            *byte = Byte::Misc;
        }
    }
    let spilled = match (old.spilled, new.spilled) {
        (Some(a), Some(b)) => Some(join_value(a, b)),
        _ => None,
    };
    if spilled.is_none() {
        for byte in bytes.iter_mut().filter(|b| **b == Byte::Spill) {
            *byte = Byte::Misc;
        }
    }
    Slot { spilled, bytes }
}

/// `value` truncated to `bytes` bytes, sign-extended when `signed`.
fn truncate(value: u64, bytes: u32, signed: bool) -> u64 {
    match (bytes, signed) {
        (1, false) => value as u8 as u64,
        (2, false) => value as u16 as u64,
        (4, false) => value as u32 as u64,
        (1, true) => value as i8 as i64 as u64,
        (2, true) => value as i16 as i64 as u64,
        (4, true) => value as i32 as i64 as u64,
        _ => value,
    }
}

/// A call may write the stack memory its arguments point to: a helper `size` bytes (its
/// `ARG_CONST_SIZE` argument follows the pointer) when `sized`, a callback or global function
/// anything up to the frame pointer.
pub(super) fn clobber_args(frames: &mut [Frame], sized: bool) -> Result<()> {
    let Some(regs) = frames.last().map(|f| f.regs) else {
        return Ok(());
    };
    for r in 1..=5 {
        let (frame, off) = match regs[r] {
            Value::Stack { frame, off } => (frame, off),
            Value::StackAt { frame } => {
                clobber_frame(frames, frame);
                continue;
            }
            _ => continue,
        };
        let size = match (sized, regs.get(r + 1)) {
            (true, Some(Value::Const { value, .. })) if *value <= STACK_SIZE as u64 => {
                *value as i32
            }
            _ => off.saturating_neg(),
        };
        let Some(frame) = frames.get_mut(usize::from(frame)) else {
            continue;
        };
        let end = off.saturating_add(size).min(0);
        let mut at = off.max(-STACK_SIZE);
        while at < end {
            let base = at.div_euclid(8) * 8;
            if frame.slot(base).is_some() {
                let slot = frame.slot_mut(base)?;
                slot.spilled = None;
                let first = (at - base) as usize;
                let last = ((end - base).min(8)) as usize;
                for byte in slot.bytes.iter_mut().take(last).skip(first) {
                    *byte = Byte::Misc;
                }
                for byte in slot.bytes.iter_mut() {
                    if *byte == Byte::Spill {
                        *byte = Byte::Misc;
                    }
                }
            }
            at = base + 8;
        }
    }
    Ok(())
}

/// A write at an offset this pass does not know: every slot of the frame may have changed.
pub(super) fn clobber_frame(frames: &mut [Frame], frame: u8) {
    if let Some(frame) = frames.get_mut(usize::from(frame)) {
        for (_, slot) in frame.stack.iter_mut() {
            *slot = EMPTY_SLOT;
        }
    }
}

pub(super) fn read_stack(frames: &[Frame], frame: u8, at: i32, size: u32, signed: bool) -> Value {
    let Some(frame) = frames.get(usize::from(frame)) else {
        return Value::Unknown;
    };
    if at < -STACK_SIZE || at.saturating_add(size as i32) > 0 {
        return Value::Unknown;
    }
    let base = at.div_euclid(8) * 8;
    let first = (at - base) as usize;
    let Some(slot) = frame.slot(base) else {
        return Value::Unknown;
    };
    let Some(bytes) = slot.bytes.get(first..first + size as usize) else {
        return Value::Unknown;
    };
    if let (Some(spilled), Byte::Spill) = (slot.spilled, slot.bytes[0]) {
        if size == 8 {
            return spilled;
        }
        let spill_size = slot.bytes.iter().take_while(|b| **b == Byte::Spill).count();
        if first == 0 && size as usize <= spill_size {
            return match spilled {
                Value::Const { value, origin } => Value::Const {
                    value: truncate(value, size, signed),
                    origin,
                },
                Value::LoadTime { at } => Value::LoadTime { at },
                _ => Value::Unknown,
            };
        }
        let spill_zero = matches!(spilled, Value::Const { value: 0, .. });
        let spills = bytes.iter().filter(|b| **b == Byte::Spill).count();
        if spills == bytes.len() && spill_zero {
            return spilled;
        }
    }
    if bytes.iter().all(|b| *b == Byte::Zero) {
        return Value::known(0);
    }
    Value::Unknown
}

pub(super) fn write_stack(
    frames: &mut [Frame],
    frame: u8,
    at: i32,
    size: u32,
    stored: Option<Value>,
) -> Result<()> {
    let Some(frame) = frames.get_mut(usize::from(frame)) else {
        return Ok(());
    };
    if at < -STACK_SIZE || at.saturating_add(size as i32) > 0 {
        return Ok(());
    }
    let base = at.div_euclid(8) * 8;
    let first = (at - base) as usize;
    let slot = frame.slot_mut(base)?;
    let aligned = first == 0;
    match stored {
        Some(value) if aligned && (value.is_scalar() || size == 8) => {
            for (i, byte) in slot.bytes.iter_mut().enumerate() {
                if i < size as usize {
                    *byte = Byte::Spill;
                } else if *byte == Byte::Spill {
                    *byte = Byte::Misc;
                }
            }
            slot.spilled = Some(value);
        }
        _ => {
            let zero = matches!(stored, Some(Value::Const { value: 0, .. }));
            slot.spilled = None;
            for (i, byte) in slot.bytes.iter_mut().enumerate() {
                if (first..first + size as usize).contains(&i) {
                    *byte = if zero { Byte::Zero } else { Byte::Misc };
                } else if *byte == Byte::Spill {
                    *byte = Byte::Misc;
                }
            }
        }
    }
    Ok(())
}
