//! The compatibility report of `btfgen batch --report FILE` and `btfgen min-core-btf --report
//! FILE`: for every kernel × object × entry program, whether the program will load (its
//! verdict, [`btfgen::core::verdict`]) and libbpf's relocation status, with every relocation
//! libbpf applies to it. `FILE.json` is the data (schema below); `FILE.html` is one
//! self-contained page (no network, no external script) with the same data inside: a matrix of
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
//! A BTFHub tree has thousands of kernels, most of them alike for a given set of objects, so
//! every fact that repeats is stored once ([`RowStore`]): each distinct relocation record, each
//! distinct program row (which names its relocations by number), each distinct list of program
//! rows a kernel has; a kernel names its list. The distinct records go to a scratch file as the
//! kernels finish (the memory kept is their hashes and numbers), and the report is written
//! from it at the end, numbered in the order of first use over the kernels sorted by path, so
//! that the same run gives the same bytes whatever the order kernels finished in. Its size
//! grows with the distinct rows, not with the kernels.
//!
//! JSON schema (`format: "btfgen-report/3"`; every fact of `/2` is kept, the repeated ones
//! once; one record a line):
//!
//! ```text
//! { "format": "btfgen-report/3", "btfgen": VERSION,
//!   "objects": [OBJECT path as given, ...],
//!   "arch_mismatches": [ { "object", "built_for": ARCH, "kernel_arch": ARCH,
//!                          "relocations": [ { "section", "relo", "missing" } ],
//!                          "programs": cells given verdict "arch-mismatch",
//!                          "message": "built for x86_64: struct pt_regs has no di on arm64" } ],
//!   "relocations": [ relocate --json object + "prog_insn", "subprog" ],
//!   "programs": [ { "object", "program", "section",
//!                   "status": "ok" | "poisoned" | "failed",
//!                   "verdict": "loads" | "rejected" | "arch-mismatch" | "unknown" | "failed",
//!                   "evidence": [ { "tag", "insn", "relo", "text" } ],
//!                   "relocations": [index into "relocations", ...] } ],
//!   "program_sets": [ { "programs": [index into "programs", ...],
//!                       "verdicts": { "loads", "guarded", "rejected", "arch-mismatch",
//!                                     "unknown", "failed": number of programs } } ],
//!   "kernels": [ { "path": output path (BTFHub: DISTRO/VERSION/ARCH/KERNEL.btf),
//!                  "distro", "version", "arch", "kernel": from the path, or null,
//!                  "input_kind": "btf" | "dwarf" (what its BTF was read from; absent when
//!                                the kernel was not computed this run),
//!                  "status": "ok" | "poisoned" | "failed" | "error",
//!                  "error": why the kernel could not be read or its output written (status
//!                           "error"), or the first failed relocation (status "failed"),
//!                  "program_set": index into "program_sets" } ] }
//! ```
//!
//! `/2`'s kernel with its `verdicts` and `programs` (each with its relocations) is the kernel
//! here with its program set's `verdicts` and `programs`, each index replaced by the record it
//! names. Kernels are sorted by path.
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
use super::{CliError, CliResult, context, write_atomic_with};
use btfgen::btf::Btf;
use btfgen::core::Targets;
use btfgen::core::relocate::RelocatedObject;
use btfgen::core::verdict::{EntryProgram, callers, describe, entry_programs, entry_verdicts};
use btfgen::object::BpfObject;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Mutex;

/// Format tag of the JSON report.
const REPORT_FORMAT: &str = "btfgen-report/3";
/// The page; `/*REPORT_DATA*/` is replaced by the report's JSON.
const HTML_TEMPLATE: &str = include_str!("report.html");
const DATA_MARK: &str = "/*REPORT_DATA*/";

/// Identity of a record: the first 128 bits of its SHA-256 (a collision among the few million
/// records of any tree has odds below 2^-80).
type Digest128 = u128;

/// The identity of the record made of `parts`.
fn digest(parts: &[&[u8]]) -> Digest128 {
    let mut hasher = Sha256::new();
    for part in parts {
        // Length-prefixed, so that no two part lists hash the same bytes.
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    let full = hasher.finalize();
    let mut first = [0u8; 16];
    first.copy_from_slice(&full[..16]);
    u128::from_le_bytes(first)
}

/// Where a record's text is in the scratch file.
#[derive(Clone, Copy)]
struct Span {
    at: u64,
    len: usize,
}

/// A distinct program row: its fields other than `verdict` and `relocations` as JSON text in
/// the scratch file, its verdict as the verdict pass gave it (a kernel's final one may be
/// `arch-mismatch` instead), and its relocations by number.
struct Row {
    text: Span,
    verdict: &'static str,
    relocations: Vec<u32>,
}

/// What [`RowStore`] guards.
struct Store {
    /// Distinct records' text, appended as they are first seen (unlinked: gone with the run).
    scratch: BufWriter<File>,
    /// Bytes appended to the scratch file so far.
    end: u64,
    /// Each distinct relocation record's number, and its text by number.
    relocation_ids: HashMap<Digest128, u32>,
    relocations: Vec<Span>,
    /// Each distinct program row's number, and the row by number.
    row_ids: HashMap<Digest128, u32>,
    rows: Vec<Row>,
    /// The first error writing the scratch file: the report cannot be written.
    failed: Option<String>,
}

impl Store {
    /// Append `text` to the scratch file.
    fn spill(&mut self, text: &str) -> Span {
        let span = Span {
            at: self.end,
            len: text.len(),
        };
        if self.failed.is_none()
            && let Err(e) = self.scratch.write_all(text.as_bytes())
        {
            self.failed = Some(format!("report scratch file: {e}"));
        }
        self.end += text.len() as u64;
        span
    }

    /// Read a record back.
    fn read(&self, span: Span, out: &mut Vec<u8>) -> io::Result<()> {
        out.clear();
        out.resize(span.len, 0);
        self.scratch.get_ref().read_exact_at(out, span.at)
    }
}

/// One object's program rows on one kernel, made outside the lock.
struct ObjectRows {
    /// Each relocation record applied to some program: (digest, text).
    relocations: Vec<(Digest128, String)>,
    /// Each entry program: (digest, fixed text, verdict, indices into `relocations`).
    programs: Vec<(Digest128, String, &'static str, Vec<usize>)>,
}

/// The distinct relocation records and program rows of every kernel so far, shared by the
/// threads that relocate kernels; each kernel keeps only the numbers of its rows.
pub struct RowStore {
    store: Mutex<Store>,
}

impl RowStore {
    /// A store whose scratch file lies beside the report `path` (and is unlinked at once).
    pub fn new(path: &Path) -> CliResult<Self> {
        let scratch = btfgen::fs::temporary_path(path).map_err(context(path.display()))?;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&scratch)
            .map_err(context(scratch.display()))?;
        std::fs::remove_file(&scratch).map_err(context(scratch.display()))?;
        Ok(RowStore {
            store: Mutex::new(Store {
                scratch: BufWriter::with_capacity(1 << 16, file),
                end: 0,
                relocation_ids: HashMap::new(),
                relocations: Vec::new(),
                row_ids: HashMap::new(),
                rows: Vec::new(),
                failed: None,
            }),
        })
    }

    /// Add the rows of `made` and push their numbers to `ids`.
    fn add(&self, made: ObjectRows, ids: &mut Vec<u32>) {
        let Ok(mut store) = self.store.lock() else {
            return;
        };
        let store = &mut *store;
        let mut numbers = Vec::with_capacity(made.relocations.len());
        for (key, text) in &made.relocations {
            let id = match store.relocation_ids.get(key) {
                Some(&id) => id,
                None => {
                    let id = store.relocations.len() as u32;
                    let span = store.spill(text);
                    store.relocations.push(span);
                    store.relocation_ids.insert(*key, id);
                    id
                }
            };
            numbers.push(id);
        }
        for (key, text, verdict, relocations) in made.programs {
            let id = match store.row_ids.get(&key) {
                Some(&id) => id,
                None => {
                    let id = store.rows.len() as u32;
                    let text = store.spill(&text);
                    let relocations = relocations
                        .iter()
                        .filter_map(|&at| numbers.get(at).copied())
                        .collect();
                    store.rows.push(Row {
                        text,
                        verdict,
                        relocations,
                    });
                    store.row_ids.insert(key, id);
                    id
                }
            };
            ids.push(id);
        }
    }
}

/// Object number `object` (`name`, `obj` with `.BTF` `local`) relocated against one kernel's
/// `targets`: its entry programs' verdicts go to `kernel`, and with `rows`, their report rows
/// to the store, their numbers to the list. Its entry programs, for more uses of the same
/// result.
pub fn record_object<'o>(
    kernel: &mut KernelVerdicts,
    rows: Option<(&RowStore, &mut Vec<u32>)>,
    (object, name): (usize, &str),
    obj: &BpfObject<'o>,
    local: &Btf<'o>,
    targets: &Targets<'_>,
    relocated: &RelocatedObject<'o, '_>,
) -> CliResult<Vec<EntryProgram<'o>>> {
    // Only the report shows the guard of each dead poison.
    let programs = match rows {
        Some(_) => entry_programs(obj, local, relocated),
        None => entry_verdicts(obj, local, relocated),
    }
    .map_err(context(name))?;
    kernel.add_object(object, local, relocated, &programs);
    if let Some((store, ids)) = rows {
        store.add(object_rows(name, local, targets, relocated, &programs), ids);
    }
    Ok(programs)
}

/// One row per entry program of the object `name` (`programs`, from `relocated`): its
/// status, verdict, evidence and every relocation libbpf applies to it.
fn object_rows(
    name: &str,
    local: &Btf<'_>,
    targets: &Targets<'_>,
    relocated: &RelocatedObject<'_, '_>,
    programs: &[EntryProgram<'_>],
) -> ObjectRows {
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
    let mut made = ObjectRows {
        relocations: Vec::new(),
        programs: Vec::with_capacity(programs.len()),
    };
    for p in programs {
        let mut relocations = Vec::with_capacity(p.relocations.len());
        for pr in &p.relocations {
            let (Some(r), Some(record)) = (
                relocated.relocations.get(pr.relocation),
                records.get(pr.relocation),
            ) else {
                continue;
            };
            let mut record = record.clone();
            record["prog_insn"] = json!(pr.insn);
            if pr.in_subprog {
                record["subprog"] = json!(r.program);
            }
            let text = record.to_string();
            relocations.push(made.relocations.len());
            made.relocations.push((digest(&[text.as_bytes()]), text));
        }
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
        let fixed = json!({"object": name, "program": p.program, "section": p.section,
                           "status": status, "evidence": evidence})
        .to_string();
        let verdict = p.verdict.name();
        // A row is its fields and its relocations' records.
        let mut parts: Vec<&[u8]> = vec![fixed.as_bytes(), verdict.as_bytes()];
        let keys: Vec<[u8; 16]> = relocations
            .iter()
            .filter_map(|&at| made.relocations.get(at))
            .map(|(key, _)| key.to_le_bytes())
            .collect();
        parts.extend(keys.iter().map(|k| &k[..]));
        made.programs
            .push((digest(&parts), fixed, verdict, relocations));
    }
    made
}

/// One kernel of the report: its path fields, its status, the error that stopped it, if any,
/// and its program rows by number ([`RowStore`]).
pub struct ReportKernel {
    path: String,
    fields: Value,
    status: &'static str,
    error: Option<String>,
    rows: Vec<u32>,
}

impl ReportKernel {
    /// The kernel at `path` (`fields`: distro, version, arch, kernel) whose programs are `rows`,
    /// with verdicts and statuses in `verdicts`, stopped by `error` if any.
    pub fn new(
        path: &str,
        fields: Value,
        rows: Vec<u32>,
        verdicts: &KernelVerdicts,
        error: Option<&str>,
    ) -> Self {
        let mut status = verdicts
            .programs
            .iter()
            .map(|p| p.status)
            .fold("ok", worst_status);
        if error.is_some() && status != "failed" {
            status = "error";
        }
        ReportKernel {
            path: path.to_string(),
            fields,
            status,
            error: error.map(str::to_string),
            rows,
        }
    }
}

/// Writes to `W` with every `<` as `\u003c`: inside `<script>`, `</script>` or `<!--` in a
/// string would end the data early; JSON allows `<` only in strings, where `\u003c` means the
/// same.
struct EscapeLt<W>(W);

impl<W: Write> Write for EscapeLt<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        for (n, chunk) in buf.split(|&b| b == b'<').enumerate() {
            if n > 0 {
                self.0.write_all(b"\\u003c")?;
            }
            self.0.write_all(chunk)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// Write the report of `kernels` (each with its final verdicts, after
/// [`super::verdicts::apply_arch_mismatches`]) to `path`: HTML if it ends in `.html`/`.htm`,
/// else JSON. Atomic; what is held in memory is the numbering, not the records.
pub fn write(
    path: &Path,
    objects: &[String],
    mismatches: &[ArchMismatch],
    rows: RowStore,
    mut kernels: Vec<(ReportKernel, &KernelVerdicts)>,
) -> CliResult<()> {
    let mut store = rows
        .store
        .into_inner()
        .map_err(|_| CliError("report: a thread panicked".into()))?;
    if let Some(e) = store.failed.take() {
        return Err(CliError(e));
    }
    store
        .scratch
        .flush()
        .map_err(context("report scratch file"))?;
    kernels.sort_by(|a, b| a.0.path.cmp(&b.0.path));
    let numbered = Numbering::of(&store, &kernels);
    let html = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"));
    let mismatches: Vec<Value> = mismatches.iter().map(|m| m.to_json(objects)).collect();
    write_atomic_with(path, |file| {
        let mut out = BufWriter::with_capacity(1 << 16, file);
        if html {
            let (before, after) = HTML_TEMPLATE
                .split_once(DATA_MARK)
                .unwrap_or((HTML_TEMPLATE, ""));
            out.write_all(before.as_bytes())?;
            let mut data = EscapeLt(&mut out);
            numbered.write_json(&mut data, &store, objects, &mismatches, &kernels)?;
            out.write_all(after.as_bytes())?;
        } else {
            numbered.write_json(&mut out, &store, objects, &mismatches, &kernels)?;
            out.write_all(b"\n")?;
        }
        out.flush()
    })
}

/// The report's numbers, in order of first use over the kernels sorted by path.
struct Numbering {
    /// Each program of the report: (its row in the store, its verdict).
    programs: Vec<(u32, &'static str)>,
    /// Each relocation of the report: its record in the store.
    relocations: Vec<u32>,
    /// Each program set: its programs, and their counts by verdict.
    sets: Vec<(Vec<u32>, VerdictCounts)>,
    /// Each kernel's program set.
    kernel_sets: Vec<u32>,
    /// The report's number of each relocation record of the store.
    relocation_ids: HashMap<u32, u32>,
}

impl Numbering {
    fn of(store: &Store, kernels: &[(ReportKernel, &KernelVerdicts)]) -> Self {
        let mut n = Numbering {
            programs: Vec::new(),
            relocations: Vec::new(),
            sets: Vec::new(),
            kernel_sets: Vec::with_capacity(kernels.len()),
            relocation_ids: HashMap::new(),
        };
        let mut program_ids: HashMap<(u32, &'static str), u32> = HashMap::new();
        let mut set_ids: HashMap<Vec<u32>, u32> = HashMap::new();
        for (kernel, verdicts) in kernels {
            let mut set = Vec::with_capacity(kernel.rows.len());
            for (at, &row) in kernel.rows.iter().enumerate() {
                let Some(stored) = store.rows.get(row as usize) else {
                    continue;
                };
                let verdict = verdicts
                    .programs
                    .get(at)
                    .map_or(stored.verdict, |p| p.verdict);
                let next = n.programs.len() as u32;
                let id = *program_ids.entry((row, verdict)).or_insert_with(|| {
                    n.programs.push((row, verdict));
                    for &r in &stored.relocations {
                        let next = n.relocations.len() as u32;
                        n.relocation_ids.entry(r).or_insert_with(|| {
                            n.relocations.push(r);
                            next
                        });
                    }
                    next
                });
                set.push(id);
            }
            let next = n.sets.len() as u32;
            let id = match set_ids.get(&set) {
                Some(&id) => id,
                None => {
                    let mut counts = VerdictCounts::default();
                    counts.add(&verdicts.programs);
                    n.sets.push((set.clone(), counts));
                    set_ids.insert(set, next);
                    next
                }
            };
            n.kernel_sets.push(id);
        }
        n
    }

    /// The report as JSON, one record a line.
    fn write_json(
        &self,
        out: &mut impl Write,
        store: &Store,
        objects: &[String],
        mismatches: &[Value],
        kernels: &[(ReportKernel, &KernelVerdicts)],
    ) -> io::Result<()> {
        let version = env!("CARGO_PKG_VERSION");
        write!(
            out,
            "{{\"format\":{},\"btfgen\":{},\n\"objects\":{},\n\"arch_mismatches\":[",
            json!(REPORT_FORMAT),
            json!(version),
            json!(objects)
        )?;
        for (at, m) in mismatches.iter().enumerate() {
            write!(out, "{}{m}", separator(at))?;
        }
        out.write_all(b"\n],\n\"relocations\":[")?;
        let mut text = Vec::new();
        for (at, &r) in self.relocations.iter().enumerate() {
            if let Some(&span) = store.relocations.get(r as usize) {
                store.read(span, &mut text)?;
                out.write_all(separator(at).as_bytes())?;
                out.write_all(&text)?;
            }
        }
        out.write_all(b"\n],\n\"programs\":[")?;
        for (at, &(row, verdict)) in self.programs.iter().enumerate() {
            let Some(stored) = store.rows.get(row as usize) else {
                continue;
            };
            store.read(stored.text, &mut text)?;
            // The stored fields' object, closed after the two fields added here.
            let fields = text.strip_suffix(b"}").unwrap_or(&text);
            out.write_all(separator(at).as_bytes())?;
            out.write_all(fields)?;
            let numbers: Vec<u32> = stored
                .relocations
                .iter()
                .filter_map(|r| self.relocation_ids.get(r).copied())
                .collect();
            write!(
                out,
                ",\"verdict\":{},\"relocations\":{}}}",
                json!(verdict),
                json!(numbers)
            )?;
        }
        out.write_all(b"\n],\n\"program_sets\":[")?;
        for (at, (programs, counts)) in self.sets.iter().enumerate() {
            let set = json!({"programs": programs, "verdicts": counts.to_json()});
            write!(out, "{}{set}", separator(at))?;
        }
        out.write_all(b"\n],\n\"kernels\":[")?;
        for (at, ((kernel, _), set)) in kernels.iter().zip(&self.kernel_sets).enumerate() {
            let mut entry = kernel.fields.clone();
            entry["path"] = json!(kernel.path);
            entry["status"] = json!(kernel.status);
            if let Some(e) = &kernel.error {
                entry["error"] = json!(e);
            }
            entry["program_set"] = json!(set);
            write!(out, "{}{entry}", separator(at))?;
        }
        out.write_all(b"\n]}")
    }
}

/// What goes before item `at` of a list written one item a line.
fn separator(at: usize) -> &'static str {
    if at == 0 { "\n" } else { ",\n" }
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
    fn the_page_data_never_closes_its_script() {
        let mut out = Vec::new();
        EscapeLt(&mut out)
            .write_all(br#"{"text":"</script><!--"}"#)
            .unwrap();
        assert_eq!(out, br#"{"text":"\u003c/script>\u003c!--"}"#);
    }

    #[test]
    fn statuses_order_from_ok_to_error() {
        assert_eq!(worst_status("ok", "poisoned"), "poisoned");
        assert_eq!(worst_status("failed", "poisoned"), "failed");
        assert_eq!(worst_status("failed", "error"), "error");
    }
}
