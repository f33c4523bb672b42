//! Load verdicts over a set of kernels: what the summary lines of `batch` and `min-core-btf`
//! count, and the architecture mismatches of the compatibility report ([`super::report`]).
//!
//! Each kernel keeps, per entry program, its verdict ([`btfgen::core::verdict`]), its
//! relocation status and the poisoned relocations the verdict pass found reached, and per
//! object the relocations poisoned on it. An object built for one architecture (clang's
//! `__TARGET_ARCH_x86` reads `struct pt_regs` fields by their x86 names) has relocations that
//! are poisoned on every kernel of another architecture and on none of its own: those are an
//! [`ArchMismatch`], said once per object and architecture, and the programs rejected only at
//! them get the verdict `arch-mismatch` instead of `rejected` (their status stays libbpf's
//! `poisoned`).

use btfgen::btf::Btf;
use btfgen::core::patch::Patched;
use btfgen::core::relocate::{ObjectRelocation, RelocatedObject};
use btfgen::core::spec::parse_local_spec;
use btfgen::core::verdict::{EntryProgram, Verdict};
use btfgen::object::BpfObject;
use btfgen::object::assemble::entry_points;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// The verdicts of the report, in the order the summaries list them.
pub const VERDICTS: [&str; 5] = ["loads", "rejected", "arch-mismatch", "unknown", "failed"];
/// Verdict of a program rejected only at relocations its kernel's architecture cannot have.
pub const ARCH_MISMATCH: &str = "arch-mismatch";

/// A relocation of one object, as libbpf numbers it: (object index, section, `relo #N`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RelocKey {
    /// Index of the object among the run's objects.
    pub object: usize,
    /// ELF section of the relocated instruction.
    pub section: String,
    /// libbpf's `relo #N` within that section.
    pub relo: u32,
}

/// One entry program on one kernel.
#[derive(Clone, Debug)]
pub struct ProgramVerdict {
    /// Index of its object among the run's objects.
    pub object: usize,
    /// `loads`, `rejected`, `arch-mismatch`, `unknown` or `failed`.
    pub verdict: &'static str,
    /// libbpf's relocation status: `ok`, `poisoned` or `failed`.
    pub status: &'static str,
    /// The poisoned relocations the verdict pass found reachable.
    pub reached: Vec<RelocKey>,
}

impl ProgramVerdict {
    /// Loads although libbpf poisoned some of its instructions (each one guarded dead).
    pub fn guarded(&self) -> bool {
        self.verdict == "loads" && self.status == "poisoned"
    }
}

/// What one kernel gave for every object: its programs and its poisoned relocations.
#[derive(Clone, Debug, Default)]
pub struct KernelVerdicts {
    /// The kernel's architecture from its BTFHub path, as BTFHub spells it
    /// ([`arch_folder`](btfgen::select::identity::arch_folder)).
    pub arch: Option<String>,
    /// Every entry program of every object, in object then libbpf's program order.
    pub programs: Vec<ProgramVerdict>,
    /// Every poisoned relocation, with what it reads in words (`struct pt_regs has no di`).
    pub poisoned: BTreeMap<RelocKey, String>,
}

/// libbpf's relocation status of a relocation: `ok`, `poisoned` or `failed`.
pub fn relocation_status(r: &ObjectRelocation<'_, '_>) -> &'static str {
    match &r.outcome {
        Err(_) => "failed",
        Ok((_, Patched::Poisoned(_))) => "poisoned",
        Ok(_) => "ok",
    }
}

/// Statuses from best to worst; a program takes its worst relocation's, a kernel its worst
/// program's.
const STATUSES: [&str; 4] = ["ok", "poisoned", "failed", "error"];

/// The worse of two statuses ([`STATUSES`]).
pub fn worst_status<'a>(a: &'a str, b: &'a str) -> &'a str {
    let rank = |s| STATUSES.iter().position(|x| *x == s).unwrap_or(0);
    if rank(b) > rank(a) { b } else { a }
}

/// libbpf's relocation status of entry program `p`: its worst relocation's.
pub fn program_status(p: &EntryProgram<'_>, relocated: &RelocatedObject<'_, '_>) -> &'static str {
    p.relocations
        .iter()
        .filter_map(|pr| relocated.relocations.get(pr.relocation))
        .map(relocation_status)
        .fold("ok", worst_status)
}

/// The key of `relocated`'s relocation `at` of object `object`.
pub fn reloc_key(
    object: usize,
    relocated: &RelocatedObject<'_, '_>,
    at: usize,
) -> Option<RelocKey> {
    relocated.relocations.get(at).map(|r| RelocKey {
        object,
        section: r.section.to_string(),
        relo: r.relo,
    })
}

impl KernelVerdicts {
    /// Record object `object`'s entry `programs` (from `relocated`, its relocations against
    /// this kernel).
    pub fn add_object(
        &mut self,
        object: usize,
        local: &Btf<'_>,
        relocated: &RelocatedObject<'_, '_>,
        programs: &[EntryProgram<'_>],
    ) {
        // Only kernels of a known architecture are compared across architectures
        // (apply_arch_mismatches), the one use of their poisoned relocations.
        if self.arch.is_some() {
            for (at, r) in relocated.relocations.iter().enumerate() {
                if let (Some(key), "poisoned") =
                    (reloc_key(object, relocated, at), relocation_status(r))
                {
                    self.poisoned.insert(key, missing_in_words(local, r));
                }
            }
        }
        for p in programs {
            let status = program_status(p, relocated);
            let reached = p
                .evidence
                .iter()
                .filter(|e| e.tag() == "reached")
                .filter_map(|e| e.relocation())
                .filter_map(|at| reloc_key(object, relocated, at))
                .collect();
            self.programs.push(ProgramVerdict {
                object,
                verdict: p.verdict.name(),
                status,
                reached,
            });
        }
    }

    /// Record object `object` (`obj`) as loading whole: every entry program `loads` with
    /// status `ok`, as [`btfgen::core::verdict::all_load`] found without judging them.
    pub fn add_loading_object(&mut self, object: usize, obj: &BpfObject<'_>) {
        for _ in entry_points(obj) {
            self.programs.push(ProgramVerdict {
                object,
                verdict: Verdict::Loads.name(),
                status: "ok",
                reached: Vec::new(),
            });
        }
    }
}

/// What a poisoned relocation looks for and the kernel lacks: `struct pt_regs has no di`, or
/// `no struct foo` for a type-based relocation.
fn missing_in_words(local: &Btf<'_>, r: &ObjectRelocation<'_, '_>) -> String {
    let ty = super::relocate::local_type_name(local, r.local_type_id);
    let last_name = r
        .kind
        .and_then(|kind| parse_local_spec(local, r.local_type_id, r.access, kind).ok())
        .and_then(|spec| {
            let is_type = spec.kind.is_type_based();
            (!is_type)
                .then(|| spec.accessors.iter().rev().find_map(|a| a.name))
                .flatten()
        });
    match last_name {
        Some(name) => format!("{ty} has no {name}"),
        None => format!("no {ty}"),
    }
}

/// One object's relocations that no kernel of `kernel_arch` has and every kernel of
/// `built_for` has.
#[derive(Clone, Debug)]
pub struct ArchMismatch {
    /// Index of the object among the run's objects.
    pub object: usize,
    /// The architecture on whose kernels none of `relocations` is poisoned.
    pub built_for: String,
    /// The architecture on whose kernels every one of `relocations` is poisoned.
    pub kernel_arch: String,
    /// The relocations, each with what the kernels lack in words.
    pub relocations: Vec<(RelocKey, String)>,
    /// Programs rejected only at these relocations, now `arch-mismatch`.
    pub programs: usize,
}

impl ArchMismatch {
    /// `built for x86_64: struct pt_regs has no di, struct pt_regs has no si on arm64`.
    pub fn message(&self) -> String {
        let mut words: Vec<&str> = Vec::new();
        for (_, what) in &self.relocations {
            if !words.contains(&what.as_str()) {
                words.push(what);
            }
        }
        format!(
            "built for {}: {} on {}",
            self.built_for,
            words.join(", "),
            self.kernel_arch
        )
    }

    /// The report's JSON for it, `objects` naming the run's objects.
    pub fn to_json(&self, objects: &[String]) -> Value {
        let relocations: Vec<Value> = self
            .relocations
            .iter()
            .map(|(k, what)| json!({"section": k.section, "relo": k.relo, "missing": what}))
            .collect();
        json!({
            "object": objects.get(self.object),
            "built_for": self.built_for,
            "kernel_arch": self.kernel_arch,
            "relocations": relocations,
            "programs": self.programs,
            "message": self.message(),
        })
    }
}

/// Find the architecture mismatches of `kernels` (only where at least two architectures have
/// kernels) and turn the verdict of each program rejected only at one of them into
/// `arch-mismatch`.
pub fn apply_arch_mismatches(kernels: &mut [KernelVerdicts]) -> Vec<ArchMismatch> {
    // The kernels that were relocated, by architecture.
    let mut by_arch: BTreeMap<&str, Vec<&KernelVerdicts>> = BTreeMap::new();
    for k in kernels.iter() {
        if let Some(arch) = &k.arch
            && !k.programs.is_empty()
        {
            by_arch.entry(arch).or_default().push(k);
        }
    }
    if by_arch.len() < 2 {
        return Vec::new();
    }
    // Per architecture: the relocations poisoned on every one of its kernels, and on any.
    let mut everywhere: BTreeMap<&str, BTreeMap<&RelocKey, &String>> = BTreeMap::new();
    let mut anywhere: BTreeMap<&str, BTreeSet<&RelocKey>> = BTreeMap::new();
    for (arch, list) in &by_arch {
        let mut all: BTreeMap<&RelocKey, &String> = match list.first() {
            Some(first) => first.poisoned.iter().collect(),
            None => BTreeMap::new(),
        };
        for k in list.iter().skip(1) {
            all.retain(|key, _| k.poisoned.contains_key(key));
        }
        everywhere.insert(arch, all);
        anywhere.insert(arch, list.iter().flat_map(|k| k.poisoned.keys()).collect());
    }
    let mut found = Vec::new();
    for (kernel_arch, all) in &everywhere {
        let objects: BTreeSet<usize> = all.keys().map(|k| k.object).collect();
        for object in objects {
            // The architecture the object fits best: the one of the most relocations.
            let best = anywhere
                .iter()
                .filter(|(arch, _)| *arch != kernel_arch)
                .map(|(arch, any)| {
                    let only_here: Vec<(RelocKey, String)> = all
                        .iter()
                        .filter(|(k, _)| k.object == object && !any.contains(*k))
                        .map(|(k, what)| ((*k).clone(), (*what).clone()))
                        .collect();
                    (arch, only_here)
                })
                .max_by_key(|(arch, list)| (list.len(), std::cmp::Reverse(**arch)));
            if let Some((built_for, relocations)) = best
                && !relocations.is_empty()
            {
                found.push(ArchMismatch {
                    object,
                    built_for: built_for.to_string(),
                    kernel_arch: kernel_arch.to_string(),
                    relocations,
                    programs: 0,
                });
            }
        }
    }
    for k in kernels.iter_mut() {
        let Some(arch) = &k.arch else { continue };
        for p in &mut k.programs {
            let Some(m) = found
                .iter_mut()
                .find(|m| m.object == p.object && m.kernel_arch == *arch)
            else {
                continue;
            };
            let only_mismatch = !p.reached.is_empty()
                && p.reached
                    .iter()
                    .all(|r| m.relocations.iter().any(|(k, _)| k == r));
            if p.verdict == "rejected" && only_mismatch {
                p.verdict = ARCH_MISMATCH;
                m.programs += 1;
            }
        }
    }
    found
}

/// Programs counted by verdict, and the `loads` among them with guarded poison.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerdictCounts {
    /// Count per verdict, in [`VERDICTS`] order.
    pub by_verdict: [usize; VERDICTS.len()],
    /// Programs that load with poisoned instructions guarded dead.
    pub guarded: usize,
}

impl VerdictCounts {
    /// Count `programs`.
    pub fn add<'a>(&mut self, programs: impl IntoIterator<Item = &'a ProgramVerdict>) {
        for p in programs {
            if let Some(i) = VERDICTS.iter().position(|v| *v == p.verdict) {
                self.by_verdict[i] += 1;
            }
            self.guarded += usize::from(p.guarded());
        }
    }

    /// `{"loads": N, "guarded": N, "rejected": N, ...}`.
    pub fn to_json(&self) -> Value {
        let mut counts = serde_json::Map::new();
        for (v, n) in VERDICTS.iter().zip(self.by_verdict) {
            counts.insert((*v).to_string(), json!(n));
            if *v == "loads" {
                counts.insert("guarded".to_string(), json!(self.guarded));
            }
        }
        Value::Object(counts)
    }

    /// `120 loads (8 with guarded poison), 3 rejected, 40 arch-mismatch, 0 unknown, 1 failed`.
    pub fn line(&self) -> String {
        let mut parts = Vec::new();
        for (v, n) in VERDICTS.iter().zip(self.by_verdict) {
            if *v == "loads" {
                parts.push(format!("{n} loads ({} with guarded poison)", self.guarded));
            } else {
                parts.push(format!("{n} {v}"));
            }
        }
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(relo: u32) -> RelocKey {
        RelocKey {
            object: 0,
            section: "kprobe/x".into(),
            relo,
        }
    }

    fn kernel(arch: &str, poisoned: &[u32], verdict: &'static str) -> KernelVerdicts {
        let reached: Vec<RelocKey> = poisoned.iter().map(|&r| key(r)).collect();
        KernelVerdicts {
            arch: Some(arch.into()),
            programs: vec![ProgramVerdict {
                object: 0,
                verdict,
                status: if poisoned.is_empty() {
                    "ok"
                } else {
                    "poisoned"
                },
                reached: if verdict == "rejected" {
                    reached
                } else {
                    Vec::new()
                },
            }],
            poisoned: poisoned
                .iter()
                .map(|&r| (key(r), format!("struct pt_regs has no f{r}")))
                .collect(),
        }
    }

    #[test]
    fn a_relocation_poisoned_on_every_kernel_of_one_arch_and_none_of_another_is_a_mismatch() {
        let mut kernels = vec![
            kernel("x86_64", &[], "loads"),
            kernel("x86_64", &[3], "rejected"),
            kernel("arm64", &[1, 2], "rejected"),
            kernel("arm64", &[1, 3], "rejected"),
            kernel("arm64", &[1], "rejected"),
        ];
        let found = apply_arch_mismatches(&mut kernels);
        assert_eq!(found.len(), 1);
        let m = &found[0];
        assert_eq!(
            (m.built_for.as_str(), m.kernel_arch.as_str()),
            ("x86_64", "arm64")
        );
        assert_eq!(m.relocations.len(), 1);
        assert_eq!(
            m.message(),
            "built for x86_64: struct pt_regs has no f1 on arm64"
        );
        // Rejected at relo 1 only: a mismatch; also at 2 or 3: still rejected.
        let verdicts: Vec<&str> = kernels.iter().map(|k| k.programs[0].verdict).collect();
        assert_eq!(
            verdicts,
            ["loads", "rejected", "rejected", "rejected", "arch-mismatch"]
        );
        assert_eq!(m.programs, 1);
    }

    #[test]
    fn one_arch_has_no_mismatch() {
        let mut kernels = vec![
            kernel("arm64", &[1], "rejected"),
            kernel("arm64", &[1], "rejected"),
        ];
        assert!(apply_arch_mismatches(&mut kernels).is_empty());
        assert_eq!(kernels[0].programs[0].verdict, "rejected");
    }

    #[test]
    fn counts_say_each_verdict() {
        let mut counts = VerdictCounts::default();
        let programs = [
            kernel("x86_64", &[1], "loads"),
            kernel("x86_64", &[], "failed"),
        ];
        counts.add(programs.iter().flat_map(|k| &k.programs));
        assert_eq!(
            counts.line(),
            "1 loads (1 with guarded poison), 0 rejected, 0 arch-mismatch, 0 unknown, 1 failed"
        );
    }
}
