//! What a loader passes to `BPF_PROG_LOAD` for a CO-RE program, both ways libbpf loads one.
//!
//! - **Kernel-side CO-RE** ([`kernel_core`]), the light skeleton's way (libbpf's gen_loader):
//!   the instructions go to the kernel unpatched, with each program's CO-RE records as
//!   `struct bpf_core_relo` (`insn_off` in bytes from the program start, `type_id`,
//!   `access_str_off`, `kind`) in `core_relos`; the kernel applies them against its own BTF
//!   while it loads the program.
//! - **User-space CO-RE** ([`user_core`]), libbpf's default: the instructions are patched here
//!   against a target BTF, and no records go to the kernel.
//!
//! Both assemble programs exactly as libbpf does ([`crate::object::assemble`]) and load the
//! object's `.BTF` (made loadable) as the program BTF (`prog_btf_fd`) with func_info and
//! line_info. The kernel only reads `core_relos` when func_info or line_info is given as well
//! (its `check_btf_info` returns early otherwise), so [`kernel_core`] refuses a program with CO-RE
//! records and neither.

use super::relocate::relocate_object;
use super::{CandidateIndex, EventSink, Targets};
use crate::btf::Btf;
use crate::error::{Error, Result};
use crate::fallible;
use crate::object::assemble::{AssembledProgram, SectionCode, assemble_all};
use crate::object::loadable_btf::loadable_btf;
use crate::object::{BpfObject, Endianness, INSN_SIZE};
use alloc::vec::Vec;
use object::endian::Endian;

/// `sizeof(struct bpf_core_relo)`: `core_relo_rec_size`.
pub const CORE_RELO_REC_SIZE: u32 = 16;
/// `sizeof(struct bpf_func_info)`: `func_info_rec_size`.
pub const FUNC_INFO_REC_SIZE: u32 = 8;
/// `sizeof(struct bpf_line_info)`: `line_info_rec_size`.
pub const LINE_INFO_REC_SIZE: u32 = 16;

/// `struct bpf_core_relo` of `include/uapi/linux/bpf.h`, as `BPF_PROG_LOAD`'s `core_relos`
/// array holds it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BpfCoreRelo {
    /// Byte offset of the relocated instruction from the start of the loaded program.
    pub insn_off: u32,
    /// Type id in the program BTF the access string starts from.
    pub type_id: u32,
    /// Offset of the access string in the program BTF's string section.
    pub access_str_off: u32,
    /// `enum bpf_core_relo_kind`.
    pub kind: u32,
}

/// One program's part of a `BPF_PROG_LOAD`.
#[derive(Debug)]
pub struct ProgramLoad<'a> {
    /// The assembled program: `insns`/`insn_cnt`, `func_info`, `line_info`. Its instructions are
    /// unpatched for kernel-side CO-RE and patched for user-space CO-RE.
    pub program: AssembledProgram<'a>,
    /// `core_relos`, sorted by instruction; empty for user-space CO-RE.
    pub core_relos: Vec<BpfCoreRelo>,
}

impl<'a> ProgramLoad<'a> {
    /// The program's name (`prog_name`, which the kernel truncates to 15 bytes).
    pub fn name(&self) -> &'a str {
        self.program.program.name
    }

    /// Its ELF section name, from which loaders derive the program type (`raw_tp/...`).
    pub fn section_name(&self) -> &'a str {
        self.program.program.section_name
    }

    /// `insns` as bytes in byte order `endian`.
    pub fn insn_bytes(&self, endian: Endianness) -> Result<Vec<u8>> {
        let mut out = fallible::vec_with_capacity(self.program.insns.len() * INSN_SIZE)?;
        for insn in &self.program.insns {
            out.extend_from_slice(&insn.encode(endian));
        }
        Ok(out)
    }

    /// `func_info` records (`FUNC_INFO_REC_SIZE` bytes each) in byte order `endian`.
    pub fn func_info_bytes(&self, endian: Endianness) -> Result<Vec<u8>> {
        words(
            self.program
                .func_info
                .iter()
                .map(|f| [f.insn_off, f.type_id]),
            endian,
        )
    }

    /// `line_info` records (`LINE_INFO_REC_SIZE` bytes each) in byte order `endian`.
    pub fn line_info_bytes(&self, endian: Endianness) -> Result<Vec<u8>> {
        words(
            self.program
                .line_info
                .iter()
                .map(|l| [l.insn_off, l.file_name_off, l.line_off, l.line_col]),
            endian,
        )
    }

    /// `core_relos` records (`CORE_RELO_REC_SIZE` bytes each) in byte order `endian`.
    pub fn core_relo_bytes(&self, endian: Endianness) -> Result<Vec<u8>> {
        words(
            self.core_relos
                .iter()
                .map(|r| [r.insn_off, r.type_id, r.access_str_off, r.kind]),
            endian,
        )
    }
}

/// Records of `N` `u32` words, encoded back to back.
fn words<const N: usize>(
    records: impl ExactSizeIterator<Item = [u32; N]>,
    endian: Endianness,
) -> Result<Vec<u8>> {
    let mut out = fallible::vec_with_capacity(records.len() * N * 4)?;
    for record in records {
        for word in record {
            out.extend_from_slice(&endian.write_u32(word));
        }
    }
    Ok(out)
}

/// Everything `BPF_BTF_LOAD` and `BPF_PROG_LOAD` need for the programs of one object.
#[derive(Debug)]
pub struct ObjectLoad<'a> {
    /// Byte order of the object; the kernel must share it.
    pub endian: Endianness,
    /// The object's `.BTF`, made loadable: load it with `BPF_BTF_LOAD` and pass the fd as every
    /// program's `prog_btf_fd`.
    pub btf: Vec<u8>,
    /// Every entry-point program, in section and offset order.
    pub programs: Vec<ProgramLoad<'a>>,
}

impl<'a> ObjectLoad<'a> {
    /// The program named `name`.
    pub fn program(&self, name: &str) -> Option<&ProgramLoad<'a>> {
        self.programs.iter().find(|p| p.name() == name)
    }
}

/// Kernel-side CO-RE: every entry-point program of `obj` (whose parsed `.BTF` is `local`)
/// assembled from unpatched code, with its CO-RE records as the kernel takes them, as libbpf's
/// gen_loader records them (`bpf_program_record_relos`).
pub fn kernel_core<'a>(obj: &BpfObject<'a>, local: &Btf<'a>) -> Result<ObjectLoad<'a>> {
    let mut programs = Vec::new();
    for program in assemble_all(obj, Some(local), &[])? {
        let has_btf_info = !program.func_info.is_empty() || !program.line_info.is_empty();
        if !program.core_relos.is_empty() && !has_btf_info {
            return Err(Error::BadElfSection {
                reason: "program has CO-RE records but no func_info or line_info; the kernel \
                         ignores CO-RE records without them",
                section: program.program.section_index,
                offset: u64::from(program.program.offset),
            });
        }
        let mut core_relos = fallible::vec_with_capacity(program.core_relos.len())?;
        core_relos.extend(program.core_relos.iter().map(|r| BpfCoreRelo {
            insn_off: r.insn_off,
            type_id: r.type_id,
            access_str_off: r.access_str_off,
            kind: r.kind,
        }));
        fallible::push(
            &mut programs,
            ProgramLoad {
                program,
                core_relos,
            },
        )?;
    }
    Ok(ObjectLoad {
        endian: obj.endian(),
        btf: loadable_btf(obj)?,
        programs,
    })
}

/// User-space CO-RE: every entry-point program of `obj` (whose parsed `.BTF` is `local`)
/// assembled from code relocated against `targets` ([`relocate_object`], sharing `index` and
/// reporting to `sink`), without CO-RE records. Like libbpf, any relocation that fails fails the whole object; a
/// poisoned instruction is not a failure.
pub fn user_core<'a>(
    obj: &BpfObject<'a>,
    local: &Btf<'a>,
    targets: &Targets<'_>,
    index: &mut CandidateIndex,
    sink: &mut dyn EventSink,
) -> Result<ObjectLoad<'a>> {
    let relocated = relocate_object(obj, local, targets, index, sink)?;
    if let Some(failed) = relocated
        .relocations
        .iter()
        .find_map(|r| r.outcome.as_ref().err())
    {
        return Err(failed.clone());
    }
    let mut code = fallible::vec_with_capacity(relocated.sections.len())?;
    code.extend(relocated.sections.iter().map(|s| SectionCode {
        section_index: s.index,
        insns: &s.insns,
    }));
    let mut programs = Vec::new();
    for program in assemble_all(obj, Some(local), &code)? {
        fallible::push(
            &mut programs,
            ProgramLoad {
                program,
                core_relos: Vec::new(),
            },
        )?;
    }
    Ok(ObjectLoad {
        endian: obj.endian(),
        btf: loadable_btf(obj)?,
        programs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::relocate::relocate_object;
    use crate::log::LibbpfLog;

    const CALLS: &[u8] = include_bytes!("../../tests/data/progs/calls.bpf.o");
    const FIELDS: &[u8] = include_bytes!("../../tests/data/progs/fields.bpf.o");
    const FIELDS_TARGET: &[u8] = include_bytes!("../../tests/data/targets/btf__fields.btf");
    const AMBIGUOUS: &[u8] = include_bytes!("../../tests/data/progs/ambiguous.bpf.o");
    const AMBIGUOUS_TARGET: &[u8] =
        include_bytes!("../../tests/data/targets/btf__ambiguous_off.btf");

    fn parse(data: &[u8]) -> (BpfObject<'_>, Btf<'_>) {
        let obj = BpfObject::parse(data).unwrap();
        let btf = Btf::parse(obj.btf_bytes().unwrap()).unwrap();
        (obj, btf)
    }

    #[test]
    fn kernel_side_records_are_the_placed_ones() {
        let (obj, local) = parse(CALLS);
        let load = kernel_core(&obj, &local).unwrap();
        assert_eq!(load.btf, loadable_btf(&obj).unwrap());
        assert_eq!(load.programs.len(), 3);
        for p in &load.programs {
            let placed: Vec<_> = p
                .program
                .core_relos
                .iter()
                .map(|r| (r.insn_off, r.type_id, r.access_str_off, r.kind))
                .collect();
            let records: Vec<_> = p
                .core_relos
                .iter()
                .map(|r| (r.insn_off, r.type_id, r.access_str_off, r.kind))
                .collect();
            assert_eq!(placed, records);
        }
        let both = load.program("calls_both").unwrap();
        let bytes = both.core_relo_bytes(Endianness::Little).unwrap();
        assert_eq!(bytes.len(), 5 * CORE_RELO_REC_SIZE as usize);
        assert_eq!(bytes[..4], 88u32.to_le_bytes());
        let be = both.core_relo_bytes(Endianness::Big).unwrap();
        assert_eq!(be[..4], 88u32.to_be_bytes());
        assert_eq!(
            both.func_info_bytes(Endianness::Little).unwrap().len(),
            5 * 8
        );
        assert_eq!(
            both.line_info_bytes(Endianness::Little).unwrap().len(),
            both.program.line_info.len() * 16
        );
        assert_eq!(both.insn_bytes(Endianness::Little).unwrap().len(), 57 * 8);
    }

    #[test]
    fn user_space_core_patches_each_section_before_appending() {
        let (obj, local) = parse(FIELDS);
        let target = Btf::parse(FIELDS_TARGET).unwrap();
        let targets = Targets::new(&target);
        let user = user_core(
            &obj,
            &local,
            &targets,
            &mut CandidateIndex::new(),
            &mut LibbpfLog,
        )
        .unwrap();
        let kernel = kernel_core(&obj, &local).unwrap();
        let relocated = relocate_object(
            &obj,
            &local,
            &targets,
            &mut CandidateIndex::new(),
            &mut LibbpfLog,
        )
        .unwrap();
        let mut checked = 0;
        for (u, k) in user.programs.iter().zip(&kernel.programs) {
            assert!(u.core_relos.is_empty());
            assert_eq!(u.program.func_info, k.program.func_info);
            for r in &k.program.core_relos {
                let section = relocated
                    .sections
                    .iter()
                    .find(|s| s.name == r.section)
                    .unwrap();
                let at = (r.insn_off / 8) as usize;
                assert_eq!(u.program.insns[at], section.insns[r.section_insn as usize]);
                checked += 1;
            }
        }
        assert!(checked > 10);
    }

    #[test]
    fn a_failed_relocation_fails_user_space_core() {
        let (obj, local) = parse(AMBIGUOUS);
        let target = Btf::parse(AMBIGUOUS_TARGET).unwrap();
        let targets = Targets::new(&target);
        let err = user_core(
            &obj,
            &local,
            &targets,
            &mut CandidateIndex::new(),
            &mut LibbpfLog,
        )
        .unwrap_err();
        assert!(
            matches!(err, Error::AmbiguousRelocation { relo: 1, .. }),
            "{err:?}"
        );
        // Kernel-side CO-RE leaves the decision to the kernel.
        assert!(kernel_core(&obj, &local).is_ok());
    }
}
