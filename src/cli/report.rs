//! The compatibility report of `btfgen batch --report FILE` and `btfgen min-core-btf --report
//! FILE`: for every kernel × object × entry program, whether the program will load (its
//! verdict, [`btfgen::core::verdict`]) and libbpf's relocation status, with every relocation
//! libbpf applies to it. `FILE.json` is the data (schema below); `FILE.html` is one
//! self-contained page (no network, no external script) with the data inside: a matrix of
//! kernels × programs coloured by verdict, identical kernels collapsed into one row, filters by
//! verdict, distro, arch and status, and each cell's relocations and evidence on a click.
//!
//! Rows are libbpf's entry programs: a `.text` sub-program is not a row of its own, its
//! relocations are in every entry program that calls it (libbpf appends it to each). Each
//! relocation is exactly the object `btfgen relocate --json` prints for it
//! ([`super::relocate::to_json`], `callers` included) plus `prog_insn`, its instruction in the
//! assembled program, and `subprog`, the sub-program it lives in when it lives in one: the
//! report, `relocate` and `min-core-btf --explain` come from the same
//! [`btfgen::core::verdict::entry_programs`] result.
//!
//! JSON schema (`format: "btfgen-report/2"`; every `/1` field is kept):
//!
//! ```text
//! { "format": "btfgen-report/2", "btfgen": VERSION,
//!   "objects": [OBJECT path as given, ...],
//!   "arch_mismatches": [ { "object", "built_for": ARCH, "kernel_arch": ARCH,
//!                          "relocations": [ { "section", "relo", "missing" } ],
//!                          "programs": cells given verdict "arch-mismatch",
//!                          "message": "built for x86_64: struct pt_regs has no di on arm64" } ],
//!   "kernels": [ { "path": output path (BTFHub: DISTRO/VERSION/ARCH/KERNEL.btf),
//!                  "distro", "version", "arch", "kernel": from the path, or null,
//!                  "status": "ok" | "poisoned" | "failed" | "error",
//!                  "error": why the kernel could not be read or its output written (status
//!                           "error"), or the first failed relocation (status "failed"),
//!                  "verdicts": { "loads", "guarded", "rejected", "arch-mismatch", "unknown",
//!                                "failed": number of programs },
//!                  "programs": [ { "object", "program", "section",
//!                                  "status": "ok" | "poisoned" | "failed",
//!                                  "verdict": "loads" | "rejected" | "arch-mismatch"
//!                                             | "unknown" | "failed",
//!                                  "evidence": [ { "tag", "insn", "relo", "text" } ],
//!                                  "relocations": [ relocate --json object
//!                                                   + "prog_insn", "subprog" ] } ] } ] }
//! ```
//!
//! A program's status is libbpf's: `failed` if one of its relocations has an `error` (libbpf
//! refuses the object), else `poisoned` if one has `poison: true`, else `ok`. Its verdict says
//! what the verifier will do: `loads` (no poisoned instruction reachable; `guarded` counts
//! those that load with poison guarded dead), `rejected` (a poisoned instruction is
//! reachable), `unknown` (reachability depends on a value set at load), `failed` (libbpf
//! refuses it at relocation), and `arch-mismatch`: rejected only at relocations that an
//! `arch_mismatches` entry lists for its kernel's architecture ([`super::verdicts`]). Evidence
//! tags are the verdict pass's: `guarded` (the guard that made a poison dead), `reached` (the
//! poisoned instruction reached), `load_time`, `failed`, `budget`. A kernel's status is its
//! worst program's, or `error`; `arch_mismatches` is filled only when the tree has kernels of
//! at least two architectures.

use super::relocate::to_json;
use super::verdicts::{ArchMismatch, KernelVerdicts, VerdictCounts, program_status, worst_status};
use super::{CliResult, context, write_atomic};
use btfgen::btf::Btf;
use btfgen::core::Targets;
use btfgen::core::relocate::RelocatedObject;
use btfgen::core::verdict::{EntryProgram, callers, describe, entry_programs};
use btfgen::object::BpfObject;
use serde_json::{Value, json};
use std::path::Path;

/// Format tag of the JSON report.
const REPORT_FORMAT: &str = "btfgen-report/2";
/// The page; `/*REPORT_DATA*/` is replaced by the report's JSON.
const HTML_TEMPLATE: &str = include_str!("report.html");
const DATA_MARK: &str = "/*REPORT_DATA*/";

/// Object number `object` (`name`, `obj` with `.BTF` `local`) relocated against one kernel's
/// `targets`: its entry programs' verdicts go to `kernel`, and with `cells`, their report
/// cells there. Its entry programs, for more uses of the same result.
pub fn record_object<'o>(
    kernel: &mut KernelVerdicts,
    cells: Option<&mut Vec<Value>>,
    (object, name): (usize, &str),
    obj: &BpfObject<'o>,
    local: &Btf<'o>,
    targets: &Targets<'_>,
    relocated: &RelocatedObject<'o, '_>,
) -> CliResult<Vec<EntryProgram<'o>>> {
    let programs = entry_programs(obj, local, relocated).map_err(context(name))?;
    kernel.add_object(object, local, relocated, &programs);
    if let Some(cells) = cells {
        cells.extend(object_cells(name, local, targets, relocated, &programs));
    }
    Ok(programs)
}

/// One cell per entry program of the object `name` (`programs`, from `relocated`): its
/// status, verdict, evidence and every relocation libbpf applies to it.
fn object_cells(
    name: &str,
    local: &Btf<'_>,
    targets: &Targets<'_>,
    relocated: &RelocatedObject<'_, '_>,
    programs: &[EntryProgram<'_>],
) -> Vec<Value> {
    // Each relocation's JSON once, shared by every program it is applied to.
    let records: Vec<Value> = relocated
        .relocations
        .iter()
        .enumerate()
        .map(|(at, r)| {
            let names: Vec<&str> = callers(programs, at).collect();
            to_json(name, local, targets, r, &names)
        })
        .collect();
    programs
        .iter()
        .map(|p| {
            let relocations: Vec<Value> = p
                .relocations
                .iter()
                .filter_map(|pr| {
                    let r = relocated.relocations.get(pr.relocation)?;
                    let mut record = records.get(pr.relocation)?.clone();
                    record["prog_insn"] = json!(pr.insn);
                    if pr.in_subprog {
                        record["subprog"] = json!(r.program);
                    }
                    Some(record)
                })
                .collect();
            let status = program_status(p, relocated);
            let evidence: Vec<Value> = p
                .evidence
                .iter()
                .map(|e| {
                    let relo = e
                        .relocation()
                        .and_then(|at| relocated.relocations.get(at))
                        .map(|r| r.relo);
                    json!({"tag": e.tag(), "insn": e.insn(), "relo": relo,
                           "text": describe(e, local, relocated).to_string()})
                })
                .collect();
            json!({"object": name, "program": p.program, "section": p.section,
                   "status": status, "verdict": p.verdict.name(), "evidence": evidence,
                   "relocations": relocations})
        })
        .collect()
}

/// One kernel's row: its path fields, its cells, and the error that stopped it, if any.
pub fn kernel_row(path: &str, fields: Value, cells: Vec<Value>, error: Option<&str>) -> Value {
    let mut status = cells
        .iter()
        .filter_map(|c| c["status"].as_str())
        .fold("ok", worst_status)
        .to_string();
    let mut row = fields;
    if let Some(e) = error {
        if status != "failed" {
            status = "error".to_string();
        }
        row["error"] = json!(e);
    }
    row["path"] = json!(path);
    row["status"] = json!(status);
    row["verdicts"] = VerdictCounts::default().to_json();
    row["programs"] = Value::Array(cells);
    row
}

/// Give `row`'s programs their final verdicts from `verdicts` (the same kernel's, programs in
/// the same order: after [`super::verdicts::apply_arch_mismatches`]) and the row its counts.
pub fn set_verdicts(row: &mut Value, verdicts: &KernelVerdicts) {
    if let Some(cells) = row["programs"].as_array_mut() {
        for (cell, p) in cells.iter_mut().zip(&verdicts.programs) {
            cell["verdict"] = json!(p.verdict);
        }
    }
    let mut counts = VerdictCounts::default();
    counts.add(&verdicts.programs);
    row["verdicts"] = counts.to_json();
}

/// Write the report to `path`: HTML if it ends in `.html`/`.htm`, else JSON. Atomic.
pub fn write(
    path: &Path,
    objects: &[String],
    mismatches: &[ArchMismatch],
    kernels: Vec<Value>,
) -> CliResult<()> {
    let mismatches: Vec<Value> = mismatches.iter().map(|m| m.to_json(objects)).collect();
    let report = json!({
        "format": REPORT_FORMAT,
        "btfgen": env!("CARGO_PKG_VERSION"),
        "objects": objects,
        "arch_mismatches": mismatches,
        "kernels": kernels,
    });
    let html = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"));
    let text = if html {
        // Inside <script>, `</script>` or `<!--` in a string would end the data early; JSON
        // allows `<` only in strings, where `\u003c` means the same.
        let data = report.to_string().replace('<', "\\u003c");
        HTML_TEMPLATE.replacen(DATA_MARK, &data, 1)
    } else {
        let mut text = serde_json::to_string_pretty(&report).map_err(context("report"))?;
        text.push('\n');
        text
    };
    write_atomic(path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_has_one_data_mark() {
        assert_eq!(HTML_TEMPLATE.matches(DATA_MARK).count(), 1);
        // Self-contained: nothing loaded from elsewhere.
        for external in ["src=", "href=\"http", "@import", "url("] {
            assert!(!HTML_TEMPLATE.contains(external), "{external}");
        }
    }

    #[test]
    fn statuses_order_from_ok_to_error() {
        assert_eq!(worst_status("ok", "poisoned"), "poisoned");
        assert_eq!(worst_status("failed", "poisoned"), "failed");
        assert_eq!(worst_status("failed", "error"), "error");
    }
}
