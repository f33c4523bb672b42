//! Applying a [`Resolution`] to an instruction, exactly as libbpf's `bpf_core_patch_insn` does:
//! immediates of ALU/ALU64 and `ld_imm64`, offsets (and, when safe, sizes) of LDX/ST/STX, or
//! poisoning with a call to an invalid helper.

use super::calc::{PoisonReason, Resolution};
use crate::error::{Error, Result};
use crate::object::Insn;

/// The helper id libbpf writes into poisoned instructions (0xbad2310, "bad relo").
pub const POISON_HELPER_ID: i32 = 195_896_080;

pub(crate) const CLASS_LD: u8 = 0x00;
pub(crate) const CLASS_LDX: u8 = 0x01;
pub(crate) const CLASS_ST: u8 = 0x02;
pub(crate) const CLASS_STX: u8 = 0x03;
pub(crate) const CLASS_ALU: u8 = 0x04;
pub(crate) const CLASS_JMP: u8 = 0x05;
pub(crate) const CLASS_ALU64: u8 = 0x07;
pub(crate) const SRC_X: u8 = 0x08;
const OP_CALL: u8 = 0x80;
pub(crate) const LD_IMM64: u8 = 0x18;

/// What patching did to the instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Patched {
    /// The relocated field changed from `orig` to `new` (both as libbpf prints them).
    Value {
        /// The field's value before patching.
        orig: u64,
        /// The field's value after patching.
        new: u64,
    },
    /// The instruction (both slots of an `ld_imm64`) was replaced by an invalid helper call.
    Poisoned(PoisonReason),
}

fn bad(reason: &'static str) -> Error {
    Error::BadRelocation { relo: 0, reason }
}

fn poison(insns: &mut [Insn], idx: usize, reason: PoisonReason) -> Result<Patched> {
    let is_ld_imm64 = insns.get(idx).is_some_and(|i| i.code == LD_IMM64);
    let slots = if is_ld_imm64 { 2 } else { 1 };
    let end = idx
        .checked_add(slots)
        .filter(|&e| e <= insns.len())
        .ok_or(bad("instruction index out of range"))?;
    for insn in &mut insns[idx..end] {
        *insn = Insn {
            code: CLASS_JMP | OP_CALL,
            dst_reg: 0,
            src_reg: 0,
            off: 0,
            imm: POISON_HELPER_ID,
        };
    }
    Ok(Patched::Poisoned(reason))
}

fn size_bytes(code: u8) -> u32 {
    match code & 0x18 {
        0x18 => 8,
        0x00 => 4,
        0x08 => 2,
        _ => 1,
    }
}

fn size_code(bytes: u32) -> Option<u8> {
    Some(match bytes {
        8 => 0x18,
        4 => 0x00,
        2 => 0x08,
        1 => 0x10,
        _ => return None,
    })
}

/// Patch `insns[idx]` (and `insns[idx + 1]` for `ld_imm64`) per `res`.
pub fn patch_insn(insns: &mut [Insn], idx: usize, res: &Resolution) -> Result<Patched> {
    if let Some(reason) = res.poison {
        return poison(insns, idx, reason);
    }
    let insn = *insns
        .get(idx)
        .ok_or(bad("instruction index out of range"))?;
    match insn.code & 0x07 {
        CLASS_ALU | CLASS_ALU64 => {
            if insn.code & SRC_X != 0 {
                return Err(bad(
                    "ALU instruction with a register operand cannot be relocated",
                ));
            }
            // libbpf compares the sign-extended immediate against the 64-bit expected value.
            let current = i64::from(insn.imm) as u64;
            if res.validate && current != res.orig_val {
                return Err(bad(
                    "instruction's immediate differs from the expected original value",
                ));
            }
            insns[idx].imm = res.new_val as i32;
            Ok(Patched::Value {
                orig: current,
                new: res.new_val,
            })
        }
        CLASS_LDX | CLASS_ST | CLASS_STX => {
            let current = i64::from(insn.off) as u64;
            if res.validate && current != res.orig_val {
                return Err(bad(
                    "instruction's offset differs from the expected original value",
                ));
            }
            if res.new_val > i16::MAX as u64 {
                return Err(bad("relocated offset does not fit the instruction"));
            }
            if res.fail_memsz_adjust {
                return poison(insns, idx, PoisonReason::SizeNotAdjustable);
            }
            insns[idx].off = res.new_val as i16;
            if res.new_sz != res.orig_sz {
                if size_bytes(insn.code) != res.orig_sz {
                    return Err(bad("instruction's memory size differs from the field's"));
                }
                let code =
                    size_code(res.new_sz).ok_or(bad("field size is not a valid memory size"))?;
                insns[idx].code = (insn.code & 0xe0) | code | (insn.code & 0x07);
            }
            Ok(Patched::Value {
                orig: current,
                new: res.new_val,
            })
        }
        CLASS_LD => {
            let next = insns.get(idx + 1).copied();
            let well_formed = insn.code == LD_IMM64
                && insn.src_reg == 0
                && insn.off == 0
                && next
                    .is_some_and(|n| n.code == 0 && n.dst_reg == 0 && n.src_reg == 0 && n.off == 0);
            let Some(next) = next.filter(|_| well_formed) else {
                return Err(bad("ld_imm64 instruction has an unexpected form"));
            };
            let current = u64::from(insn.imm as u32) | (u64::from(next.imm as u32) << 32);
            if res.validate && current != res.orig_val {
                return Err(bad(
                    "instruction's immediate differs from the expected original value",
                ));
            }
            insns[idx].imm = res.new_val as i32;
            insns[idx + 1].imm = (res.new_val >> 32) as i32;
            Ok(Patched::Value {
                orig: current,
                new: res.new_val,
            })
        }
        _ => Err(bad("instruction class cannot be relocated")),
    }
}
