//! Program assembly: what libbpf hands to `BPF_PROG_LOAD` for each entry-point program.
//!
//! Functions in `.text` are subprograms; every other program is an entry point. An entry point
//! is loaded with the subprograms it reaches appended after its own code, each once, in the
//! order libbpf appends them (`bpf_object__reloc_code`): scanning the program, the first call
//! into a subprogram not yet appended appends it and scans it right away, before the scan of
//! the caller goes on (depth first). Call offsets are rewritten for the new layout, and the
//! `.BTF.ext` func_info, line_info and CO-RE records of each piece move with it.
//!
//! Assembly reads each section's instructions from the ELF file or from a caller-given copy
//! ([`SectionCode`]): libbpf applies CO-RE to each section before it appends anything, so
//! CO-RE-patched sections assemble into exactly what libbpf loads.
//!
//! As current libbpf: `.text` functions are always subprograms (libbpf up to 1.4 made a lone
//! `.text` function an entry point), calls go only into `.text` (libbpf rejects others), and a
//! call into the middle of a function calls its start. Unlike libbpf, func_info or line_info
//! records out of instruction order are an error rather than offsets the kernel rejects.
//! Exception callbacks (`__exception_cb`) are not appended.

use super::{
    BpfObject, CoreRelo, ExtInfo, ExtRecord, FuncInfo, INSN_SIZE, Insn, LineInfo, Program,
    Relocation,
};
use crate::btf::Btf;
use crate::error::{Error, Result};
use crate::fallible;
use ::object::elf;
use alloc::vec::Vec;

/// `BPF_JMP | BPF_CALL`.
const CALL: u8 = 0x85;
/// `BPF_LD | BPF_IMM | BPF_DW`: the first slot of a 64-bit immediate load.
const LD_IMM64: u8 = 0x18;
/// `src_reg` of a call to a BPF function (rather than a helper).
const PSEUDO_CALL: u8 = 1;
/// `src_reg` of an `ld_imm64` that loads a BPF function's address (a callback).
const PSEUDO_FUNC: u8 = 4;

/// Instructions to assemble a section from instead of its ELF bytes, e.g. the section after
/// CO-RE patching.
#[derive(Clone, Copy, Debug)]
pub struct SectionCode<'i> {
    /// ELF index of the executable section.
    pub section_index: usize,
    /// Every instruction of the section; as many as the section has.
    pub insns: &'i [Insn],
}

/// One function within an assembled program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part<'a> {
    /// The function: the entry point itself, or a `.text` subprogram.
    pub program: Program<'a>,
    /// Index of its first instruction in the assembled program.
    pub start: u32,
}

impl Part<'_> {
    /// Number of instructions.
    pub fn insn_count(&self) -> u32 {
        self.program.size / INSN_SIZE as u32
    }

    /// Index of its first instruction within its ELF section.
    pub fn section_insn(&self) -> u32 {
        self.program.offset / INSN_SIZE as u32
    }
}

/// A CO-RE record of an assembled program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlacedCoreRelo<'a> {
    /// Byte offset of the relocated instruction from the start of the assembled program, as
    /// the kernel's `struct bpf_core_relo` takes it.
    pub insn_off: u32,
    /// Local (object `.BTF`) type id the access string starts from.
    pub type_id: u32,
    /// `.BTF` string offset of the access string.
    pub access_str_off: u32,
    /// Raw `enum bpf_core_relo_kind`.
    pub kind: u32,
    /// ELF section the record came from.
    pub section: &'a str,
    /// Index of the record among that section's CO-RE records (libbpf's `relo #N`).
    pub relo: u32,
    /// Index of the relocated instruction within that section.
    pub section_insn: u32,
}

/// An ELF relocation that assembly leaves to the loader (maps, global data, externs), moved to
/// the assembled program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlacedRelocation<'a> {
    /// Index of the relocated instruction in the assembled program.
    pub insn: u32,
    /// The relocation as the ELF file has it (its offset is within its section).
    pub relocation: Relocation<'a>,
}

/// An entry-point program with the subprograms it calls appended, ready for `BPF_PROG_LOAD`.
#[derive(Debug)]
pub struct AssembledProgram<'a> {
    /// The entry point.
    pub program: Program<'a>,
    /// The instructions: the entry point's, then each appended subprogram's; BPF-to-BPF calls
    /// and callback addresses point at the appended copies.
    pub insns: Vec<Insn>,
    /// The entry point (first, at 0) and the subprograms in the order they were appended.
    pub parts: Vec<Part<'a>>,
    /// `bpf_func_info` records, `insn_off` in instructions of `insns` (the kernel's unit). Empty
    /// when the entry point has none, as libbpf then drops func_info for the whole program.
    pub func_info: Vec<FuncInfo>,
    /// `bpf_line_info` records, `insn_off` in instructions of `insns`; empty like `func_info`.
    pub line_info: Vec<LineInfo>,
    /// CO-RE records sorted by instruction.
    pub core_relos: Vec<PlacedCoreRelo<'a>>,
    /// ELF relocations other than calls and callback addresses, in instruction order.
    pub relocations: Vec<PlacedRelocation<'a>>,
}

impl AssembledProgram<'_> {
    /// The entry point's name.
    pub fn name(&self) -> &str {
        self.program.name
    }
}

/// Whether `program` is a subprogram (any function in `.text`) rather than an entry point.
pub fn is_subprogram(obj: &BpfObject<'_>, program: &Program<'_>) -> bool {
    obj.section_by_name(".text")
        .is_some_and(|text| text.index == program.section_index)
}

/// The entry-point programs of `obj`, in section and offset order.
pub fn entry_points<'s, 'a>(obj: &'s BpfObject<'a>) -> impl Iterator<Item = &'s Program<'a>> {
    obj.programs()
        .iter()
        .filter(move |p| !is_subprogram(obj, p))
}

/// Assemble the entry-point program `name` of `obj`. `btf` is the object's parsed `.BTF`,
/// needed when it has `.BTF.ext`; `code` replaces the ELF instructions of some sections.
pub fn assemble<'a>(
    obj: &BpfObject<'a>,
    btf: Option<&Btf<'a>>,
    name: &str,
    code: &[SectionCode<'_>],
) -> Result<AssembledProgram<'a>> {
    let program = entry_points(obj)
        .find(|p| p.name == name)
        .ok_or(Error::InvalidArgument(
            "no entry-point program of that name",
        ))?;
    Assembler::new(obj, btf, code, true)?.program(program)
}

/// Assemble every entry-point program of `obj`, in section and offset order; arguments as for
/// [`assemble`].
pub fn assemble_all<'a>(
    obj: &BpfObject<'a>,
    btf: Option<&Btf<'a>>,
    code: &[SectionCode<'_>],
) -> Result<Vec<AssembledProgram<'a>>> {
    assemble_each(Assembler::new(obj, btf, code, true)?)
}

/// Every entry-point program of `obj` as [`assemble_all`] assembles it, but without its BTF
/// records (`func_info`, `line_info` and `core_relos` left empty): the code, its parts and
/// loader relocations, all that control flow reads. Those records are most of an assembly's
/// work and matter only to a loader; where a relocation lands follows from `parts`.
pub fn assemble_all_code<'a>(
    obj: &BpfObject<'a>,
    btf: &Btf<'a>,
    code: &[SectionCode<'_>],
) -> Result<Vec<AssembledProgram<'a>>> {
    assemble_each(Assembler::new(obj, Some(btf), code, false)?)
}

fn assemble_each<'a>(mut assembler: Assembler<'_, 'a, '_>) -> Result<Vec<AssembledProgram<'a>>> {
    let mut out = Vec::new();
    for program in entry_points(assembler.obj) {
        fallible::push(&mut out, assembler.program(program)?)?;
    }
    Ok(out)
}

/// Where a code reference (call or callback address) points, per its relocation.
#[derive(Clone, Copy)]
enum Target {
    /// `R_BPF_64_32` call against a `.text` symbol: the callee starts at
    /// `sym_off / 8 + imm + 1`.
    Call { sym_off: u64 },
    /// `ld_imm64` against a `.text` symbol: the callback starts at byte `sym_off + imm`.
    FuncAddr { sym_off: u64 },
}

/// The ELF relocations of one section, sorted by offset.
struct SectionRelocations<'a> {
    index: usize,
    relocations: Vec<Relocation<'a>>,
}

struct Assembler<'s, 'a, 'i> {
    obj: &'s BpfObject<'a>,
    btf: Option<&'s Btf<'a>>,
    code: &'i [SectionCode<'i>],
    text: Option<usize>,
    relocations: Vec<SectionRelocations<'a>>,
    /// Whether programs get their `func_info`, `line_info` and `core_relos`.
    btf_records: bool,
}

fn bad(reason: &'static str, section: usize, offset: u64) -> Error {
    Error::BadElfSection {
        reason,
        section,
        offset,
    }
}

fn is_subprog_call(insn: &Insn) -> bool {
    insn.code == CALL && insn.src_reg == PSEUDO_CALL && insn.dst_reg == 0 && insn.off == 0
}

impl<'s, 'a, 'i> Assembler<'s, 'a, 'i> {
    fn new(
        obj: &'s BpfObject<'a>,
        btf: Option<&'s Btf<'a>>,
        code: &'i [SectionCode<'i>],
        btf_records: bool,
    ) -> Result<Self> {
        if obj.btf_ext().is_some() && btf.is_none() {
            return Err(Error::InvalidArgument(
                "assembly: the object has .BTF.ext, so its parsed .BTF is needed",
            ));
        }
        for c in code {
            let section = obj
                .section_by_index(c.section_index)
                .ok_or(Error::InvalidArgument(
                    "assembly: replacement code for a section that is not executable",
                ))?;
            if section.insn_count() != c.insns.len() {
                return Err(Error::InvalidArgument(
                    "assembly: replacement code is not as long as its section",
                ));
            }
        }
        Ok(Assembler {
            obj,
            btf,
            code,
            text: obj.section_by_name(".text").map(|s| s.index),
            relocations: Vec::new(),
            btf_records,
        })
    }

    /// Append the instructions of `program` to `insns`, which stays within `u32` indexes, so
    /// `part.start + k` cannot overflow for any instruction `k` of a part.
    fn copy_code(&self, program: &Program<'a>, insns: &mut Vec<Insn>) -> Result<()> {
        let first = program.offset / INSN_SIZE as u32;
        let count = program.size / INSN_SIZE as u32;
        if u32::try_from(insns.len() + count as usize).is_err() {
            return Err(Error::Limit {
                what: "instructions in an assembled program",
                limit: u32::MAX as usize,
            });
        }
        insns.try_reserve(count as usize)?;
        let past_end = || {
            bad(
                "function extends past its section",
                program.section_index,
                u64::from(program.offset),
            )
        };
        // Replacement code is copied as one slice; ELF code is decoded instruction by
        // instruction (its byte order may not be the host's).
        match self
            .code
            .iter()
            .find(|c| c.section_index == program.section_index)
        {
            Some(c) => {
                let code = c
                    .insns
                    .get(first as usize..first as usize + count as usize)
                    .ok_or_else(past_end)?;
                insns.extend_from_slice(code);
            }
            None => {
                let section = self
                    .obj
                    .section_by_index(program.section_index)
                    .ok_or_else(past_end)?;
                for idx in first..first + count {
                    insns.push(section.insn(idx as usize).ok_or_else(past_end)?);
                }
            }
        }
        Ok(())
    }

    /// The ELF relocations of section `index`, read once.
    fn section_relocations(&mut self, index: usize) -> Result<&[Relocation<'a>]> {
        let pos = match self.relocations.iter().position(|s| s.index == index) {
            Some(pos) => pos,
            None => {
                let mut relocations = self.obj.relocations(index)?;
                // Stable: of several relocations on one instruction the first in the file wins.
                relocations.sort_by_key(|r| r.offset);
                fallible::push(
                    &mut self.relocations,
                    SectionRelocations { index, relocations },
                )?;
                self.relocations.len() - 1
            }
        };
        Ok(self
            .relocations
            .get(pos)
            .map_or(&[], |s| s.relocations.as_slice()))
    }

    /// Classify relocation `rel` of section `section` as libbpf does when it collects program
    /// relocations: a code reference, something left to the loader (`None`), or an error.
    fn classify(&self, section: usize, rel: &Relocation<'a>) -> Result<Option<Target>> {
        let at = u64::from(rel.offset);
        let idx = rel.offset / INSN_SIZE as u32;
        let insn = self
            .obj
            .section_by_index(section)
            .and_then(|s| s.insn(idx as usize))
            .ok_or(bad("relocation outside its section", section, at))?;
        let is_call = insn.code == CALL;
        if !is_call && insn.code != LD_IMM64 {
            return Err(bad(
                "relocation on an instruction that is neither a call nor a 64-bit load",
                section,
                at,
            ));
        }
        // Undefined (extern: kfuncs, ksyms, kconfig) and special-index symbols: the loader
        // resolves those.
        let Some(sym_section) = rel.symbol_section else {
            return Ok(None);
        };
        let in_text = Some(sym_section) == self.text;
        if is_call {
            if insn.src_reg != PSEUDO_CALL {
                return Err(bad("relocated call is not a BPF-to-BPF call", section, at));
            }
            if !in_text {
                return Err(bad(
                    "call relocation against a symbol outside .text (libbpf only calls into .text)",
                    section,
                    at,
                ));
            }
            if rel.symbol_value % INSN_SIZE as u64 != 0 {
                return Err(bad(
                    "call relocation against a misaligned symbol",
                    section,
                    at,
                ));
            }
            return Ok(Some(Target::Call {
                sym_off: rel.symbol_value,
            }));
        }
        let local_section =
            rel.symbol_bind == elf::STB_LOCAL.0 && rel.symbol_type == elf::STT_SECTION.0;
        let global_func =
            rel.symbol_bind == elf::STB_GLOBAL.0 && rel.symbol_type == elf::STT_FUNC.0;
        if in_text && (local_section || global_func) {
            if rel.symbol_value % INSN_SIZE as u64 != 0 || insn.imm % INSN_SIZE as i32 != 0 {
                return Err(bad(
                    "function address relocation is not instruction-aligned",
                    section,
                    at,
                ));
            }
            return Ok(Some(Target::FuncAddr {
                sym_off: rel.symbol_value,
            }));
        }
        Ok(None)
    }

    /// The relocation at instruction `idx` of section `section`, classified: `None` when there
    /// is none, `Some(None)` for one the loader resolves, `Some(Some(target))` for code.
    fn reference(&mut self, section: usize, idx: u32) -> Result<Option<Option<Target>>> {
        let offset = idx.checked_mul(INSN_SIZE as u32);
        let relocations = self.section_relocations(section)?;
        let Some(offset) = offset else {
            return Ok(None);
        };
        let pos = relocations.partition_point(|r| r.offset < offset);
        match relocations.get(pos).filter(|r| r.offset == offset).copied() {
            Some(rel) => Ok(Some(self.classify(section, &rel)?)),
            None => Ok(None),
        }
    }

    /// Assemble one entry-point program.
    fn program(&mut self, main: &Program<'a>) -> Result<AssembledProgram<'a>> {
        if !main.global {
            return Err(bad(
                "static function in a program section (libbpf only loads global ones)",
                main.section_index,
                u64::from(main.offset),
            ));
        }
        let mut insns = Vec::new();
        self.copy_code(main, &mut insns)?;
        let mut parts = Vec::new();
        fallible::push(
            &mut parts,
            Part {
                program: *main,
                start: 0,
            },
        )?;
        // Depth-first scan without recursion: each frame is a part and the next instruction
        // of it to look at. A subprogram is appended at most once, so the stack is bounded by
        // the number of functions.
        let mut stack: Vec<(usize, u32)> = Vec::new();
        fallible::push(&mut stack, (0, 0))?;
        while let Some(&(part_idx, from)) = stack.last() {
            let part = *parts.get(part_idx).ok_or(Error::InvalidArgument(
                "assembly: internal part index out of range",
            ))?;
            let Some((k, callee)) = self.next_reference(&part, from, &insns)? else {
                stack.pop();
                continue;
            };
            if let Some(frame) = stack.last_mut() {
                frame.1 = k + 1;
            }
            let callee_start = match parts.iter().find(|p| p.program == callee) {
                Some(p) => p.start,
                None => {
                    // `copy_code` keeps the length within u32.
                    let start = insns.len() as u32;
                    self.copy_code(&callee, &mut insns)?;
                    fallible::push(
                        &mut parts,
                        Part {
                            program: callee,
                            start,
                        },
                    )?;
                    fallible::push(&mut stack, (parts.len() - 1, 0))?;
                    start
                }
            };
            let at = part.start + k;
            let imm = i64::from(callee_start) - i64::from(at) - 1;
            let imm = i32::try_from(imm).map_err(|_| Error::Limit {
                what: "call offset in an assembled program",
                limit: i32::MAX as usize,
            })?;
            let insn = insns.get_mut(at as usize).ok_or(Error::InvalidArgument(
                "assembly: internal instruction index out of range",
            ))?;
            insn.imm = imm;
            if insn.code == LD_IMM64 {
                insn.src_reg = PSEUDO_FUNC;
            }
        }
        let (func_info, line_info, core_relos) = if self.btf_records {
            let (func_info, line_info) = self.ext_info(&parts)?;
            (func_info, line_info, self.core_relos(&parts)?)
        } else {
            (Vec::new(), Vec::new(), Vec::new())
        };
        Ok(AssembledProgram {
            program: *main,
            core_relos,
            relocations: self.loader_relocations(&parts)?,
            insns,
            parts,
            func_info,
            line_info,
        })
    }

    /// From instruction `from` of `part` on, the first call or callback address and the
    /// subprogram it points at (libbpf's `bpf_object__reloc_code` loop body).
    fn next_reference(
        &mut self,
        part: &Part<'a>,
        from: u32,
        insns: &[Insn],
    ) -> Result<Option<(u32, Program<'a>)>> {
        let section = part.program.section_index;
        for k in from..part.insn_count() {
            let Some(insn) = insns.get((part.start + k) as usize).copied() else {
                break;
            };
            // Only calls and 64-bit loads can refer to code.
            if insn.code != CALL && insn.code != LD_IMM64 {
                continue;
            }
            let section_insn = part.section_insn() + k;
            let at = u64::from(section_insn) * INSN_SIZE as u64;
            let is_func_addr_form = insn.code == LD_IMM64 && insn.src_reg == PSEUDO_FUNC;
            let reference = if is_subprog_call(&insn) || insn.code == LD_IMM64 {
                self.reference(section, section_insn)?
            } else {
                None
            };
            let target = match reference {
                // A relocation the loader resolves (a kfunc call, a map load): not code.
                Some(None) => continue,
                Some(Some(Target::Call { sym_off })) if is_subprog_call(&insn) => {
                    i64::try_from(sym_off / INSN_SIZE as u64)
                        .ok()
                        .and_then(|t| t.checked_add(i64::from(insn.imm) + 1))
                        .unwrap_or(-1)
                }
                Some(Some(Target::FuncAddr { sym_off })) => i64::try_from(sym_off)
                    .ok()
                    .and_then(|t| t.checked_add(i64::from(insn.imm)))
                    .map_or(-1, |t| t / INSN_SIZE as i64),
                Some(Some(Target::Call { .. })) => continue,
                None if is_func_addr_form => {
                    return Err(bad(
                        "function address load without a relocation",
                        section,
                        at,
                    ));
                }
                // A call within the section needs no relocation: `imm` is relative.
                None if is_subprog_call(&insn) => i64::from(section_insn) + i64::from(insn.imm) + 1,
                None => continue,
            };
            // Out of range (negative, or past 4 GiB) fails the lookup below.
            let callee = u32::try_from(target)
                .ok()
                .and_then(|t| t.checked_mul(INSN_SIZE as u32))
                .zip(self.text)
                .and_then(|(off, text)| self.obj.program_in(text, off))
                .copied()
                .ok_or(bad(
                    "call or function address points outside every .text function",
                    section,
                    at,
                ))?;
            return Ok(Some((k, callee)));
        }
        Ok(None)
    }

    /// The loader's relocations of every part, moved to the assembled program.
    fn loader_relocations(&mut self, parts: &[Part<'a>]) -> Result<Vec<PlacedRelocation<'a>>> {
        let mut out = Vec::new();
        for part in parts {
            let section = part.program.section_index;
            let relocations = self.section_relocations(section)?;
            let first = relocations.partition_point(|r| r.offset < part.program.offset);
            let mut picked: Vec<Relocation<'a>> = Vec::new();
            for rel in relocations.get(first..).unwrap_or_default() {
                if !part.program.contains(rel.offset) {
                    break;
                }
                fallible::push(&mut picked, *rel)?;
            }
            for rel in picked {
                if self.classify(section, &rel)?.is_none() {
                    let k = (rel.offset - part.program.offset) / INSN_SIZE as u32;
                    fallible::push(
                        &mut out,
                        PlacedRelocation {
                            insn: part.start + k,
                            relocation: rel,
                        },
                    )?;
                }
            }
        }
        Ok(out)
    }

    /// func_info and line_info of the assembled program (libbpf's
    /// `reloc_prog_func_and_line_info`, called for each part in append order).
    fn ext_info(&self, parts: &[Part<'a>]) -> Result<(Vec<FuncInfo>, Vec<LineInfo>)> {
        let (Some(ext), Some(btf)) = (self.obj.btf_ext(), self.btf) else {
            return Ok((Vec::new(), Vec::new()));
        };
        let func_info = self.info(
            ext.func_info(),
            btf,
            parts,
            |f| &mut f.insn_off,
            "subprogram has no func_info while its entry point has",
        )?;
        let line_info = self.info(
            ext.line_info(),
            btf,
            parts,
            |l| &mut l.insn_off,
            "subprogram has no line_info while its entry point has",
        )?;
        Ok((func_info, line_info))
    }

    /// One kind of ext info for all parts: none at all when the entry point has none, an error
    /// when it has some and a subprogram has none.
    fn info<T: ExtRecord>(
        &self,
        info: ExtInfo<'a, T>,
        btf: &Btf<'a>,
        parts: &[Part<'a>],
        insn_off: fn(&mut T) -> &mut u32,
        missing: &'static str,
    ) -> Result<Vec<T>> {
        let mut out = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            let found = self.part_info(info, btf, part, insn_off, &mut out)?;
            if !found {
                if i == 0 {
                    return Ok(Vec::new());
                }
                return Err(bad(
                    missing,
                    part.program.section_index,
                    u64::from(part.program.offset),
                ));
            }
        }
        Ok(out)
    }

    /// Append `part`'s records of `info` to `out`, offsets converted to instructions of the
    /// assembled program. Only the first group naming the part's section counts, as in libbpf.
    /// `false` when there are none.
    fn part_info<T: ExtRecord>(
        &self,
        info: ExtInfo<'a, T>,
        btf: &Btf<'a>,
        part: &Part<'a>,
        insn_off: fn(&mut T) -> &mut u32,
        out: &mut Vec<T>,
    ) -> Result<bool> {
        for group in self.obj.ext_sections(info, btf) {
            let group = group?;
            if group.section.map(|s| s.index) != Some(part.program.section_index) {
                continue;
            }
            let (first, end) = (part.section_insn(), part.section_insn() + part.insn_count());
            let mut found = false;
            for (index, mut record) in group.records.indexed() {
                let insn = *insn_off(&mut record) / INSN_SIZE as u32;
                if insn >= end {
                    break;
                }
                if insn < first {
                    if found {
                        return Err(Error::BadBtfExt {
                            reason: "func_info or line_info records not sorted by instruction",
                            offset: group.records.record_offset(index as usize),
                        });
                    }
                    continue;
                }
                *insn_off(&mut record) = insn - first + part.start;
                fallible::push(out, record)?;
                found = true;
            }
            return Ok(found);
        }
        Ok(false)
    }

    /// The CO-RE records of every part, sorted by instruction.
    fn core_relos(&self, parts: &[Part<'a>]) -> Result<Vec<PlacedCoreRelo<'a>>> {
        let mut out = Vec::new();
        let Some(btf) = self.btf else {
            return Ok(out);
        };
        for part in parts {
            for group in self.obj.core_relo_sections(btf) {
                let group = group?;
                if group.section.map(|s| s.index) != Some(part.program.section_index) {
                    continue;
                }
                for (relo, rec) in group.records.indexed() {
                    if rec.insn_off as usize % INSN_SIZE != 0 {
                        return Err(Error::BadBtfExt {
                            reason: "core_relo instruction offset not a multiple of 8",
                            offset: group.records.record_offset(relo as usize),
                        });
                    }
                    if !part.program.contains(rec.insn_off) {
                        continue;
                    }
                    fallible::push(&mut out, placed(part, group.name, relo, &rec)?)?;
                }
            }
        }
        out.sort_by_key(|r| r.insn_off);
        Ok(out)
    }
}

/// `rec` of `part`, moved to the assembled program.
fn placed<'a>(
    part: &Part<'a>,
    section: &'a str,
    relo: u32,
    rec: &CoreRelo,
) -> Result<PlacedCoreRelo<'a>> {
    let k = (rec.insn_off - part.program.offset) / INSN_SIZE as u32;
    let insn_off = (part.start + k)
        .checked_mul(INSN_SIZE as u32)
        .ok_or(Error::Limit {
            what: "CO-RE record byte offset in an assembled program",
            limit: u32::MAX as usize,
        })?;
    Ok(PlacedCoreRelo {
        insn_off,
        type_id: rec.type_id,
        access_str_off: rec.access_str_off,
        kind: rec.kind,
        section,
        relo,
        section_insn: rec.insn_off / INSN_SIZE as u32,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::loadable_btf::loadable_btf;
    use ::object::read::elf::SectionHeader;

    const CALLS: &[u8] = include_bytes!("../../tests/data/progs/calls.bpf.o");
    const MULTI: &[u8] = include_bytes!("../../tests/data/progs/multi.bpf.o");

    fn all(data: &[u8]) -> Vec<AssembledProgram<'_>> {
        let obj = BpfObject::parse(data).unwrap();
        let btf = Btf::parse(obj.btf_bytes().unwrap()).unwrap();
        // `btf` borrows `data`, not `obj`, so the result outlives both locals.
        assemble_all(&obj, Some(&btf), &[]).unwrap()
    }

    fn layout<'a>(p: &AssembledProgram<'a>) -> Vec<(&'a str, u32)> {
        p.parts
            .iter()
            .map(|part| (part.program.name, part.start))
            .collect()
    }

    #[test]
    fn subprograms_are_appended_depth_first_once() {
        // Expected layouts and call offsets as libbpf 1.1 logs them for this object
        // ("added N insns from sub-prog", "insn #I relocated, imm X").
        let progs = all(CALLS);
        let names: Vec<&str> = progs.iter().map(|p| p.name()).collect();
        assert_eq!(names, ["calls_parent", "calls_both", "calls_loop"]);

        let parent = &progs[0];
        assert_eq!(
            layout(parent),
            [("calls_parent", 0), ("via_parent", 4), ("leaf_tgid", 15)]
        );
        assert_eq!(parent.insns.len(), 24);
        assert_eq!(parent.insns[2].imm, 1);
        assert_eq!(parent.insns[4 + 8].imm, 2);

        let both = &progs[1];
        assert_eq!(
            layout(both),
            [
                ("calls_both", 0),
                ("via_leader", 21),
                ("leaf_tgid", 34),
                ("via_parent", 43),
                ("add_ints", 54)
            ]
        );
        assert_eq!(both.insns.len(), 57);
        let imms: Vec<i32> = [3, 6, 9, 21 + 8, 43 + 8]
            .iter()
            .map(|&i| both.insns[i].imm)
            .collect();
        assert_eq!(imms, [17, 36, 44, 4, -18]);

        let lp = &progs[2];
        assert_eq!(layout(lp), [("calls_loop", 0), ("loop_cb", 11)]);
        let ld = lp.insns[5];
        assert_eq!((ld.code, ld.src_reg, ld.imm), (LD_IMM64, PSEUDO_FUNC, 5));
        assert_eq!(lp.insns[6].imm, 0);
        assert!(progs.iter().all(|p| p.relocations.is_empty()));
    }

    #[test]
    fn ext_records_follow_their_code() {
        let progs = all(CALLS);
        let both = &progs[1];
        let funcs: Vec<u32> = both.func_info.iter().map(|f| f.insn_off).collect();
        assert_eq!(funcs, [0, 21, 34, 43, 54]);
        // Each part's first line_info record is at its first instruction (the kernel requires
        // it), and the records stay sorted.
        for part in &both.parts {
            assert!(both.line_info.iter().any(|l| l.insn_off == part.start));
        }
        assert!(
            both.line_info
                .windows(2)
                .all(|w| w[0].insn_off < w[1].insn_off)
        );
        // libbpf: calls_both relo #0 at insn 11, via_leader #1 and #2 at 1 and 9, leaf_tgid
        // #4 at 1, via_parent #0 at 1 (of .text's records).
        let relos: Vec<(u32, &str, u32)> = both
            .core_relos
            .iter()
            .map(|r| (r.insn_off, r.section, r.relo))
            .collect();
        assert_eq!(
            relos,
            [
                (11 * 8, "raw_tp/sys_enter", 0),
                (22 * 8, ".text", 1),
                (30 * 8, ".text", 2),
                (35 * 8, ".text", 4),
                (44 * 8, ".text", 0),
            ]
        );
        let lp = &progs[2];
        let relos: Vec<u32> = lp.core_relos.iter().map(|r| r.insn_off).collect();
        assert_eq!(relos, [11 * 8]);
        assert_eq!(lp.core_relos[0].section_insn, 27);
    }

    #[test]
    fn multi_shares_its_subprogram() {
        let progs = all(MULTI);
        assert_eq!(layout(&progs[0]), [("multi_a", 0), ("parent_tgid", 15)]);
        assert_eq!(progs[0].insns[3].imm, 11);
        assert_eq!(layout(&progs[1]), [("multi_b", 0), ("parent_tgid", 22)]);
        assert_eq!(layout(&progs[2]), [("multi_c", 0)]);
        let offs: Vec<u32> = progs[1].core_relos.iter().map(|r| r.insn_off / 8).collect();
        assert_eq!(offs, [5, 12, 23, 29, 36]);
    }

    #[test]
    fn one_program_by_name_and_replacement_code() {
        let obj = BpfObject::parse(CALLS).unwrap();
        let btf = Btf::parse(obj.btf_bytes().unwrap()).unwrap();
        assert_eq!(
            assemble(&obj, Some(&btf), "via_parent", &[]).unwrap_err(),
            Error::InvalidArgument("no entry-point program of that name")
        );
        assert!(matches!(
            assemble(&obj, None, "calls_both", &[]),
            Err(Error::InvalidArgument(_))
        ));
        let text = obj.section_by_name(".text").unwrap();
        let mut insns: Vec<Insn> = (0..text.insn_count())
            .map(|i| text.insn(i).unwrap())
            .collect();
        // leaf_tgid's CO-RE load of tgid's offset, as if patched.
        insns[37].imm = 1234;
        let code = [SectionCode {
            section_index: text.index,
            insns: &insns,
        }];
        let both = assemble(&obj, Some(&btf), "calls_both", &code).unwrap();
        assert_eq!(both.insns[35].imm, 1234);
        let short = [SectionCode {
            section_index: text.index,
            insns: &insns[1..],
        }];
        assert!(matches!(
            assemble(&obj, Some(&btf), "calls_both", &short),
            Err(Error::InvalidArgument(_))
        ));
    }

    /// `CALLS` with `f` applied to the bytes of its `.text` section.
    fn with_text(f: impl Fn(&mut [u8])) -> Vec<u8> {
        let obj = BpfObject::parse(CALLS).unwrap();
        let text = obj.section_by_name(".text").unwrap().data;
        let start = text.as_ptr() as usize - CALLS.as_ptr() as usize;
        let mut data = CALLS.to_vec();
        f(&mut data[start..start + text.len()]);
        data
    }

    #[test]
    fn bad_call_targets_are_errors() {
        // via_parent's call to leaf_tgid (.text insn 11, no relocation) sent past .text.
        let data = with_text(|t| t[11 * 8 + 4] = 0x7f);
        let obj = BpfObject::parse(&data).unwrap();
        let btf = Btf::parse(obj.btf_bytes().unwrap()).unwrap();
        assert_eq!(
            assemble(&obj, Some(&btf), "calls_parent", &[]).unwrap_err(),
            bad(
                "call or function address points outside every .text function",
                obj.section_by_name(".text").unwrap().index,
                88
            )
        );
        // calls_loop does not reach it.
        assert!(assemble(&obj, Some(&btf), "calls_loop", &[]).is_ok());
    }

    #[test]
    fn calls_into_the_middle_of_a_function_go_to_its_start() {
        // libbpf looks the callee up by the instruction it lands on and calls its start.
        let data = with_text(|t| t[11 * 8 + 4] = 0x19);
        let obj = BpfObject::parse(&data).unwrap();
        let btf = Btf::parse(obj.btf_bytes().unwrap()).unwrap();
        let parent = assemble(&obj, Some(&btf), "calls_parent", &[]).unwrap();
        assert_eq!(
            layout(&parent),
            [("calls_parent", 0), ("via_parent", 4), ("leaf_tgid", 15)]
        );
        assert_eq!(parent.insns[12].imm, 2);
    }

    /// Byte ranges of `CALLS` that assembly reads: everything but DWARF and its relocations.
    fn read_ranges() -> Vec<core::ops::Range<usize>> {
        let obj = BpfObject::parse(CALLS).unwrap();
        let endian = obj.endian;
        // The ELF header, then every section but DWARF.
        let mut ranges = Vec::new();
        ranges.push(0..64);
        for sh in obj.elf_sections.iter() {
            let name = obj.elf_sections.section_name(endian, sh).unwrap();
            if name.starts_with(b".debug") || name.starts_with(b".rel.debug") {
                continue;
            }
            let start = sh.sh_offset(endian) as usize;
            ranges.push(start..start + sh.sh_size(endian) as usize);
        }
        ranges
    }

    #[test]
    fn corrupt_objects_never_panic() {
        let ranges = read_ranges();
        for flip in [0x01, 0xff] {
            for pos in ranges.iter().flat_map(|r| r.clone()) {
                let mut data = CALLS.to_vec();
                data[pos] ^= flip;
                let Ok(obj) = BpfObject::parse(&data) else {
                    continue;
                };
                let btf = obj.btf_bytes().and_then(|b| Btf::parse(b).ok());
                let _ = assemble_all(&obj, btf.as_ref(), &[]);
                let _ = loadable_btf(&obj);
            }
        }
    }
}
