//! Relocating a whole BPF object: every core_relo record of every section, in `.BTF.ext` order
//! with one candidate cache per object (libbpf's `bpf_object__relocate_core`), and the patched
//! instructions.

use super::patch::{Patched, patch_insn};
use super::spec::essential_name;
use super::{
    CandidateCache, CandidateIndex, EventSink, RelocEvent, RelocKind, Resolved, Targets, resolve,
};
use crate::btf::{Btf, Kind};
use crate::error::{Error, Result};
use crate::fallible;
use crate::object::{BpfObject, INSN_SIZE, Insn};
use alloc::vec::Vec;
use object::endian::Endian;

/// One CO-RE relocation of an object, located in its program and resolved.
#[derive(Debug)]
pub struct ObjectRelocation<'o, 't> {
    /// ELF section of the relocated instruction.
    pub section: &'o str,
    /// Index of the record within its section's core_relo records (libbpf's `relo #N`).
    pub relo: u32,
    /// Name of the program (function symbol) containing the instruction.
    pub program: &'o str,
    /// Instruction index relative to the program's first instruction.
    pub insn: u32,
    /// Instruction index relative to the section's first instruction.
    pub section_insn: u32,
    /// The relocation kind, `None` for an unknown raw kind (see `raw_kind`).
    pub kind: Option<RelocKind>,
    /// The record's raw kind value.
    pub raw_kind: u32,
    /// Local type id the access string starts from.
    pub local_type_id: u32,
    /// The access string.
    pub access: &'o str,
    /// Resolution and patch outcome, or why it failed.
    pub outcome: Result<(Resolved<'t>, Patched)>,
}

/// The instructions of one program section after CO-RE patching.
#[derive(Debug)]
pub struct PatchedSection<'o> {
    /// ELF section index.
    pub index: usize,
    /// ELF section name.
    pub name: &'o str,
    /// Every instruction of the section, relocated.
    pub insns: Vec<Insn>,
}

/// Everything relocating an object produced.
#[derive(Debug)]
pub struct RelocatedObject<'o, 't> {
    /// Every relocation, in `.BTF.ext` order.
    pub relocations: Vec<ObjectRelocation<'o, 't>>,
    /// The patched instructions of every section that had relocations.
    pub sections: Vec<PatchedSection<'o>>,
}

/// The essential name and kind of every named type `obj`'s CO-RE records start from: what the
/// candidate index must hold before its relocations can be resolved.
pub fn local_type_names<'o>(obj: &BpfObject<'o>, local: &Btf<'o>) -> Result<Vec<(&'o str, Kind)>> {
    let mut names = Vec::new();
    for section in obj.core_relo_sections(local) {
        for (_, rec) in section?.records.indexed() {
            let ty = local.type_by_id(rec.type_id)?;
            let name = essential_name(local.name(ty.name_off)?);
            if let (Some(kind), false) = (ty.kind(), name.is_empty()) {
                fallible::push(&mut names, (name, kind))?;
            }
        }
    }
    Ok(names)
}

/// Relocate every CO-RE record of `obj` (whose parsed `.BTF` is `local`) against `targets`,
/// growing the shared candidate `index` with the names this object needs, and reporting each
/// step to `sink` (pass [`crate::log::LibbpfLog`] for libbpf's log). Errors of single
/// relocations are reported in their `outcome`; only malformed objects fail as a whole.
pub fn relocate_object<'o, 't>(
    obj: &BpfObject<'o>,
    local: &Btf<'o>,
    targets: &Targets<'t>,
    index: &mut CandidateIndex,
    sink: &mut dyn EventSink,
) -> Result<RelocatedObject<'o, 't>> {
    index.ensure(targets, local_type_names(obj, local)?.iter().copied())?;

    let target_is_le = obj.endian().is_little_endian();
    let mut cache = CandidateCache::new();
    // Room for every record at once: the list is kept whole until the object is recorded,
    // and growing it by doubling would leave up to half of it unused.
    let mut records = 0usize;
    for section in obj.core_relo_sections(local) {
        records = records.saturating_add(section?.records.len());
    }
    let mut relocations = Vec::new();
    relocations.try_reserve_exact(records)?;
    let mut sections = Vec::new();
    for section in obj.core_relo_sections(local) {
        let section = section?;
        let code = section.section.ok_or(Error::BadBtfExt {
            reason: "core_relo records name a section without programs",
            offset: section.records.offset,
        })?;
        let mut insns: Vec<Insn> = fallible::vec_with_capacity(code.insn_count())?;
        insns.extend((0..code.insn_count()).filter_map(|i| code.insn(i)));
        sink.event(RelocEvent::SectionRelocations {
            section: section.name,
            count: section.records.len(),
        });
        for (relo, rec) in section.records.indexed() {
            if rec.insn_off as usize % INSN_SIZE != 0 {
                return Err(Error::BadBtfExt {
                    reason: "core_relo instruction offset not a multiple of 8",
                    offset: section.records.record_offset(relo as usize),
                });
            }
            // A record outside every program belongs to an eliminated weak subprogram; libbpf
            // skips it.
            let Some(program) = obj.program_in(code.index, rec.insn_off) else {
                continue;
            };
            let section_insn = rec.insn_off / INSN_SIZE as u32;
            let insn = (rec.insn_off - program.offset) / INSN_SIZE as u32;
            let kind = RelocKind::from_raw(rec.kind);
            let access = local.name(rec.access_str_off)?;
            let outcome = match kind {
                None => Err(Error::BadRelocation {
                    relo,
                    reason: "unknown relocation kind",
                }),
                Some(kind) => resolve(
                    local,
                    rec.type_id,
                    access,
                    kind,
                    program.name,
                    relo,
                    targets,
                    index,
                    &mut cache,
                    target_is_le,
                    sink,
                )
                .and_then(|resolved| {
                    let code = insns.get(section_insn as usize).map_or(0, |i| i.code);
                    let patched = patch_insn(&mut insns, section_insn as usize, &resolved.res)
                        .map_err(|e| match e {
                            Error::BadRelocation { reason, .. } => {
                                Error::BadRelocation { relo, reason }
                            }
                            other => other,
                        })?;
                    sink.event(RelocEvent::Patched {
                        program: program.name,
                        relo,
                        insn,
                        code,
                        resolution: &resolved.res,
                        patched,
                    });
                    Ok((resolved, patched))
                }),
            };
            match &outcome {
                Err(Error::OutOfMemory) => return Err(Error::OutOfMemory),
                Err(error) => sink.event(RelocEvent::Failed {
                    program: program.name,
                    relo,
                    error,
                }),
                Ok(_) => {}
            }
            fallible::push(
                &mut relocations,
                ObjectRelocation {
                    section: section.name,
                    relo,
                    program: program.name,
                    insn,
                    section_insn,
                    kind,
                    raw_kind: rec.kind,
                    local_type_id: rec.type_id,
                    access,
                    outcome,
                },
            )?;
        }
        fallible::push(
            &mut sections,
            PatchedSection {
                index: code.index,
                name: section.name,
                insns,
            },
        )?;
    }
    Ok(RelocatedObject {
        relocations,
        sections,
    })
}
