//! The compatibility report of `btfgen batch --report FILE` and `btfgen min-core-btf --report
//! FILE`: for every kernel × object × program, whether its CO-RE relocations all resolved,
//! some were poisoned, or one failed. `FILE.json` is the data (schema below); `FILE.html` is
//! one self-contained page (no network, no external script) with the data inside, a matrix of
//! kernels × programs, filters by distro, arch and status, and each cell's relocations on a
//! click.
//!
//! Each relocation is exactly the object `btfgen relocate --json` prints for it
//! ([`super::relocate::to_json`], with `poison_reason` saying why a poisoned one is): the
//! report and `relocate` come from the same library results.
//!
//! JSON schema (`format: "btfgen-report/1"`):
//!
//! ```text
//! { "format": "btfgen-report/1", "btfgen": VERSION,
//!   "objects": [OBJECT path as given, ...],
//!   "kernels": [ { "path": output path (BTFHub: DISTRO/VERSION/ARCH/KERNEL.btf),
//!                  "distro", "version", "arch", "kernel": from the path, or null,
//!                  "status": "ok" | "poisoned" | "failed" | "error",
//!                  "error": why the kernel could not be read or its output written (status
//!                           "error"), or the first failed relocation (status "failed"),
//!                  "programs": [ { "object", "program", "section",
//!                                  "status": "ok" | "poisoned" | "failed",
//!                                  "relocations": [ relocate --json object ] } ] } ] }
//! ```
//!
//! A program is `failed` if one of its relocations has an `error` (libbpf refuses the object),
//! else `poisoned` if one has `poison: true` (it loads only if those instructions are dead on
//! that kernel), else `ok`. A kernel's status is its worst program's, or `error`.

use super::relocate::to_json;
use super::{CliResult, context, write_atomic};
use btfgen::btf::Btf;
use btfgen::core::Targets;
use btfgen::core::relocate::RelocatedObject;
use btfgen::object::BpfObject;
use serde_json::{Value, json};
use std::path::Path;

/// Format tag of the JSON report.
const REPORT_FORMAT: &str = "btfgen-report/1";
/// The page; `/*REPORT_DATA*/` is replaced by the report's JSON.
const HTML_TEMPLATE: &str = include_str!("report.html");
const DATA_MARK: &str = "/*REPORT_DATA*/";

/// Statuses from best to worst; a kernel or program takes its worst one.
const STATUSES: [&str; 4] = ["ok", "poisoned", "failed", "error"];

fn worst<'a>(a: &'a str, b: &'a str) -> &'a str {
    let rank = |s| STATUSES.iter().position(|x| *x == s).unwrap_or(0);
    if rank(b) > rank(a) { b } else { a }
}

/// One cell per program of `obj` (libbpf's program list, subprograms included), with the
/// relocations `relocated` gave it.
pub fn object_cells(
    name: &str,
    obj: &BpfObject<'_>,
    local: &Btf<'_>,
    targets: &Targets<'_>,
    relocated: &RelocatedObject<'_, '_>,
) -> Vec<Value> {
    let mut cells: Vec<Value> = obj
        .programs()
        .iter()
        .map(|p| cell(name, p.name, p.section_name))
        .collect();
    for r in &relocated.relocations {
        let entry = to_json(name, local, targets, r);
        let status = if r.outcome.is_err() {
            "failed"
        } else if entry["poison"] == true {
            "poisoned"
        } else {
            "ok"
        };
        let at = match cells.iter().position(|c| c["program"] == r.program) {
            Some(at) => at,
            None => {
                cells.push(cell(name, r.program, r.section));
                cells.len() - 1
            }
        };
        let c = &mut cells[at];
        let now = worst(c["status"].as_str().unwrap_or("ok"), status).to_string();
        c["status"] = json!(now);
        if let Some(list) = c["relocations"].as_array_mut() {
            list.push(entry);
        }
    }
    cells
}

fn cell(object: &str, program: &str, section: &str) -> Value {
    json!({"object": object, "program": program, "section": section, "status": "ok",
           "relocations": []})
}

/// One kernel's row: its path fields, its cells, and the error that stopped it, if any.
pub fn kernel_row(path: &str, fields: Value, cells: Vec<Value>, error: Option<&str>) -> Value {
    let mut status = cells
        .iter()
        .filter_map(|c| c["status"].as_str())
        .fold("ok", worst)
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
    row["programs"] = Value::Array(cells);
    row
}

/// Write the report to `path`: HTML if it ends in `.html`/`.htm`, else JSON. Atomic.
pub fn write(path: &Path, objects: &[String], kernels: Vec<Value>) -> CliResult<()> {
    let report = json!({
        "format": REPORT_FORMAT,
        "btfgen": env!("CARGO_PKG_VERSION"),
        "objects": objects,
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
        assert_eq!(worst("ok", "poisoned"), "poisoned");
        assert_eq!(worst("failed", "poisoned"), "failed");
        assert_eq!(worst("failed", "error"), "error");
    }
}
