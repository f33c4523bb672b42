//! Minimized BTF (the seed's `bpf_reloc_info` API): accumulate, over any number of objects,
//! what every CO-RE relocation's matched target types need, then emit a BTF holding only that.

mod emit;
pub mod marks;

use crate::btf::Btf;
use crate::core::programs::{self, AppliedRelocations};
use crate::core::relocate::{RelocatedObject, local_type_names, relocate_object};
use crate::core::{Candidate, CandidateIndex, RelocKind, Targets};
use crate::error::{Error, Result};
use crate::fallible;
use crate::log::LibbpfLog;
use crate::object::BpfObject;
use alloc::string::String;
use alloc::vec::Vec;
use hashbrown::HashMap;
use marks::{Marks, ReasonId, Recorder};

/// One relocation that needed something kept (for `--explain`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    /// Object name as given to [`RelocInfo::add_object`].
    pub object: String,
    /// Program containing the relocated instruction.
    pub program: String,
    /// Record index within its section.
    pub relo: u32,
    /// Relocation kind.
    pub kind: RelocKind,
    /// Access string.
    pub access: String,
    /// The entry programs libbpf appends the relocated instruction to: the program itself, or
    /// every caller of the sub-program it lives in (none for a sub-program nothing calls).
    pub callers: Vec<String>,
}

/// Counts for a summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Objects added.
    pub objects: usize,
    /// CO-RE relocations seen.
    pub relocations: usize,
    /// Relocations with at least one matching target type.
    pub resolved: usize,
}

/// The minimized BTF and what it holds.
#[derive(Debug)]
pub struct Minimized {
    /// Raw BTF bytes, ready to be written or handed to libbpf as `btf_custom_path`.
    pub bytes: Vec<u8>,
    /// Number of types (excluding void).
    pub types: usize,
}

/// Accumulated reloc info for one set of target BTFs.
#[derive(Debug)]
pub struct RelocInfo<'t> {
    targets: Targets<'t>,
    index: CandidateIndex,
    marks: Marks,
    reasons: Vec<Reason>,
    /// Whether [`RelocInfo::keep_provenance`] asked for `reasons`.
    provenance: bool,
    stats: Stats,
}

impl<'t> RelocInfo<'t> {
    /// Start with nothing recorded against `targets`.
    pub fn new(targets: Targets<'t>) -> Self {
        RelocInfo {
            targets,
            index: CandidateIndex::new(),
            marks: Marks::new(),
            reasons: Vec::new(),
            provenance: false,
            stats: Stats::default(),
        }
    }

    /// Keep, for every type and member recorded from now on, the relocations that needed it
    /// and the entry programs they are applied to, for [`RelocInfo::explain`]. Off by default:
    /// the minimized BTF does not depend on it, and it costs memory per relocation.
    pub fn keep_provenance(&mut self) {
        self.provenance = true;
    }

    /// Whether [`RelocInfo::keep_provenance`] was asked for: only then do the callers passed
    /// to [`RelocInfo::add_relocated`] matter.
    pub fn keeps_provenance(&self) -> bool {
        self.provenance
    }

    /// Start with nothing recorded against `targets`, with candidates already indexed (see
    /// [`CandidateIndex::absorb`]: a caller that parses the targets itself can index them by
    /// the same pass, instead of [`RelocInfo::prepare`]'s second one).
    pub fn with_index(targets: Targets<'t>, index: CandidateIndex) -> Self {
        RelocInfo {
            index,
            ..RelocInfo::new(targets)
        }
    }

    /// The target BTFs.
    pub fn targets(&self) -> &Targets<'t> {
        &self.targets
    }

    /// Counts so far.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Index the candidates of every object about to be added, in one scan of the targets
    /// (otherwise each [`RelocInfo::add_object`] that brings new type names scans them again).
    pub fn prepare(&mut self, objects: &[(&BpfObject<'_>, &Btf<'_>)]) -> Result<()> {
        let mut names = Vec::new();
        for (obj, local) in objects {
            let more = local_type_names(obj, local)?;
            names.try_reserve(more.len())?;
            names.extend(more);
        }
        self.index.ensure(&self.targets, names.iter().copied())
    }

    /// Relocate every CO-RE record of `obj` (local BTF `local`) and record what the matched
    /// target types need. A relocation libbpf would fail (ambiguous candidates, malformed
    /// record) fails the whole object, as `bpftool gen min_core_btf` does; nothing of that
    /// object is recorded then, also when recording runs out of memory part way.
    pub fn add_object(&mut self, name: &str, obj: &BpfObject<'_>, local: &Btf<'_>) -> Result<()> {
        let relocated = self.relocate(obj, local)?;
        let programs = if self.provenance {
            programs::entry_relocations(obj, local, &relocated)?
        } else {
            Vec::new()
        };
        self.add_relocated(name, &relocated, &programs)
    }

    /// Relocate every CO-RE record of `obj` against the targets, with this info's candidate
    /// index, without recording anything: each relocation's result, for a caller that reports
    /// them before [`RelocInfo::add_relocated`] (what [`RelocInfo::add_object`] does in one step).
    /// Each step goes to libbpf's log ([`LibbpfLog`]).
    pub fn relocate<'o>(
        &mut self,
        obj: &BpfObject<'o>,
        local: &Btf<'o>,
    ) -> Result<RelocatedObject<'o, 't>> {
        relocate_object(obj, local, &self.targets, &mut self.index, &mut LibbpfLog)
    }

    /// Record what the relocations of one object (from [`RelocInfo::relocate`] on this info)
    /// need, as [`RelocInfo::add_object`] does: a failed relocation fails the whole object and
    /// nothing of it is recorded. `programs` (the object's entry programs with the relocations
    /// applied to each: [`programs::entry_relocations`], or the judged
    /// [`crate::core::verdict::entry_programs`] of the same relocations) names each
    /// relocation's callers in [`RelocInfo::explain`].
    pub fn add_relocated<P: AppliedRelocations>(
        &mut self,
        name: &str,
        relocated: &RelocatedObject<'_, 't>,
        programs: &[P],
    ) -> Result<()> {
        for r in &relocated.relocations {
            if let Err(e) = &r.outcome {
                return Err(e.clone());
            }
        }
        // Recording can run out of memory part way (a type marked, the types it refers to not
        // yet): then everything goes back to how it was before this object.
        let mut marks = self.marks.try_clone()?;
        let (reasons, stats) = (self.reasons.len(), self.stats);
        if let Err(e) = self.record(name, relocated, programs, &mut marks) {
            self.reasons.truncate(reasons);
            self.stats = stats;
            return Err(e);
        }
        self.marks = marks;
        self.stats.objects += 1;
        Ok(())
    }

    fn record<P: AppliedRelocations>(
        &mut self,
        name: &str,
        relocated: &RelocatedObject<'_, '_>,
        programs: &[P],
        marks: &mut Marks,
    ) -> Result<()> {
        // libbpf prunes each local type's candidates to those that matched, so the match sets of
        // one local type's relocations shrink along the object: every candidate of the last
        // non-empty set matched all earlier non-empty ones too. Keeping just that one candidate
        // (with every relocation's members) makes libbpf reach the same results against the
        // output, and keeps it no larger than keeping the first match of each relocation.
        let mut chosen: HashMap<u32, Candidate> = HashMap::new();
        for r in &relocated.relocations {
            if let Ok((resolved, _)) = &r.outcome
                && let Some((cand, _)) = resolved.target()
            {
                chosen.try_reserve(1)?;
                chosen.insert(r.local_type_id, *cand);
            }
        }
        for (at, r) in relocated.relocations.iter().enumerate() {
            let Ok((resolved, _)) = &r.outcome else {
                continue;
            };
            self.stats.relocations += 1;
            let Some(keep) = chosen.get(&r.local_type_id) else {
                continue;
            };
            if resolved.matches.is_empty() {
                continue;
            }
            self.stats.resolved += 1;
            let kind = r.kind.ok_or(Error::BadRelocation {
                relo: r.relo,
                reason: "unknown relocation kind",
            })?;
            let reason = if self.provenance {
                Some(self.reasons.len() as ReasonId)
            } else {
                None
            };
            let mut recorder = Recorder {
                marks,
                targets: &self.targets,
                reason,
            };
            match resolved.matches.iter().find(|(cand, _)| cand == keep) {
                Some((cand, spec)) => recorder.record(cand.source, spec)?,
                // Not reachable while pruning holds; keeping every match is always safe.
                None => {
                    for (cand, spec) in &resolved.matches {
                        recorder.record(cand.source, spec)?;
                    }
                }
            }
            if !self.provenance {
                continue;
            }
            let mut callers = Vec::new();
            for caller in programs::callers(programs, at) {
                fallible::push(&mut callers, fallible::to_string(caller)?)?;
            }
            fallible::push(
                &mut self.reasons,
                Reason {
                    object: fallible::to_string(name)?,
                    program: fallible::to_string(r.program)?,
                    relo: r.relo,
                    kind,
                    access: fallible::to_string(r.access)?,
                    callers,
                },
            )?;
        }
        Ok(())
    }

    /// Emit the minimized BTF.
    pub fn to_btf(&self) -> Result<Minimized> {
        let emitted = emit::emit(&self.targets, &self.marks)?;
        // Targets may be validated only on use; the output is always checked in full, so a
        // flaw in an input type that was copied (say, a struct containing itself) is an error
        // here rather than a bad file.
        Btf::parse(&emitted.bytes)?;
        Ok(Minimized {
            bytes: emitted.bytes,
            types: emitted.keys.len(),
        })
    }

    /// Describe, for each kept type and member, the relocations that needed it. Needs
    /// [`RelocInfo::keep_provenance`] before the first object (an `InvalidArgument` error
    /// otherwise: the reasons were not kept).
    pub fn explain(&self, out: &mut String) -> Result<()> {
        use core::fmt::Write;
        if !self.provenance {
            return Err(Error::InvalidArgument(
                "explain needs keep_provenance before objects are added",
            ));
        }
        // The output's own ids: emission may add types (`long`, an array index type) and order
        // them other than by source id.
        let keys = emit::output_keys(&self.targets, &self.marks)?;
        let mut sink = fallible::StringSink::new(out);
        for (pos, key) in keys.iter().enumerate() {
            let Some(mark) = self.marks.get(key) else {
                continue;
            };
            let btf = self.targets.btf(key.0);
            let ty = btf.type_by_id(key.1)?;
            let kind = ty.kind().map_or("void", |k| k.libbpf_name());
            let name = or_anon(btf.name(ty.name_off)?);
            let _ = writeln!(sink, "[{}] {kind} {name} (was [{}])", pos + 1, key.1);
            self.write_reasons(&mut sink, "    ", &mark.reasons);
            for (index, reasons) in &mark.members {
                let entry = match ty.kind.composite() {
                    Some(c) => c.member(*index as usize).map(|m| m.name_off),
                    None => ty
                        .kind
                        .any_enum()
                        .and_then(|e| e.value(*index as usize))
                        .map(|v| v.name_off),
                };
                let entry = or_anon(entry.map(|off| btf.name(off)).transpose()?.unwrap_or(""));
                let _ = writeln!(sink, "    .{entry} (#{index})");
                self.write_reasons(&mut sink, "        ", reasons);
            }
        }
        sink.finish()
    }

    fn write_reasons(
        &self,
        sink: &mut fallible::StringSink<'_>,
        indent: &str,
        reasons: &[ReasonId],
    ) {
        use core::fmt::Write;
        for r in reasons
            .iter()
            .filter_map(|&id| self.reasons.get(id as usize))
        {
            let _ = write!(
                sink,
                "{indent}needed by {}: prog '{}' relo #{} {} {} [callers: ",
                r.object,
                r.program,
                r.relo,
                r.kind.name(),
                r.access
            );
            if r.callers.is_empty() {
                let _ = write!(sink, "none");
            }
            for (i, caller) in r.callers.iter().enumerate() {
                let _ = write!(sink, "{}{caller}", if i == 0 { "" } else { ", " });
            }
            let _ = writeln!(sink, "]");
        }
    }
}

fn or_anon(name: &str) -> &str {
    if name.is_empty() { "<anon>" } else { name }
}
