//! `btfgen batch --btf-dir DIR --out-dir OUT OBJECT...`: minimize the same objects against
//! every kernel BTF in a BTFHub-style tree, in parallel.
//!
//! DIR is searched recursively for `KERNEL.btf` (raw BTF, or an ELF with a `.BTF` section) and
//! `KERNEL.btf.tar.xz` (an xz-compressed tar holding one `KERNEL.btf`, as BTFHub ships them; it
//! is decompressed in memory). Each kernel's minimized BTF goes to the same relative path under
//! OUT, always as `KERNEL.btf` (BTFHub: `DISTRO/VERSION/ARCH/KERNEL.btf`), written atomically.
//! The output for one kernel is byte-identical to `btfgen min-core-btf KERNEL.btf OUT OBJECT...`.
//!
//! The objects are read and parsed once; their parsed views are shared by every thread. Kernel
//! BTFs are handed out through a shared counter to `--jobs` compute threads, and the outputs are
//! written by a few writer threads, so that one kernel's `fsync` overlaps the next kernel's
//! work. A kernel that fails (unreadable, corrupt, or a relocation libbpf would fail) is
//! reported on one line naming its file, and the others go on; the exit status is non-zero if
//! any failed.
//!
//! `--dedup` stores each distinct output once and links the tree to it, `--archive` packs that
//! set reproducibly, and `OUT/index.json` records every kernel's output and input hashes
//! ([`super::dedup`]); `--resume` redoes only the kernels whose entry is missing or out of date.
//! `--report` writes the compatibility report ([`super::report`]), `--json` the summary as JSON
//! on stdout.

mod tree;

use crate::cli::dedup::{self, LinkMode};
use crate::cli::objects::{LocalObject, parse_objects};
use crate::cli::verdicts::{self, ArchMismatch, KernelVerdicts, VerdictCounts};
use crate::cli::{
    CliError, CliResult, context, parse_target, read_file, report, scan_plan, write_atomic,
};
use btfgen::core::verdict;
use btfgen::core::{BtfSource, CandidateIndex, ScanPlan, Targets};
use btfgen::minimize::RelocInfo;
use btfgen::select::identity::arch_folder;
use serde_json::{Value, json};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, mpsc};
use std::time::{Duration, Instant};
use tree::{BTF_SUFFIX, Kernel, PACKED_SUFFIX, Skipped, find_kernels, read_input, unpack};

/// Arguments of `btfgen batch`.
#[derive(clap::Args)]
pub struct BatchArgs {
    /// Tree of kernel BTFs, searched recursively for KERNEL.btf and KERNEL.btf.tar.xz
    /// (BTFHub layout: DISTRO/VERSION/ARCH/KERNEL.btf[.tar.xz]), and for KERNEL.debug: a debug
    /// vmlinux whose BTF is converted from its DWARF (output KERNEL.btf).
    #[arg(long, value_name = "DIR")]
    btf_dir: PathBuf,
    /// Where to write the minimized BTFs, mirroring --btf-dir: OUT/DISTRO/VERSION/ARCH/KERNEL.btf.
    #[arg(long, value_name = "OUT")]
    out_dir: PathBuf,
    /// Compute threads (default: the number of CPUs).
    #[arg(long, short = 'j', value_name = "N")]
    jobs: Option<NonZeroUsize>,
    /// Store each distinct output once, as OUT/by-hash/SHA256.btf, and make the mirrored
    /// paths relative symlinks to it (`--dedup=hardlink`: hard links); OUT/index.json maps
    /// every kernel to its file and hash.
    #[arg(long, value_enum, value_name = "MODE", num_args = 0..=1, require_equals = true,
          default_missing_value = "symlink")]
    dedup: Option<LinkMode>,
    /// Also write the deduplicated set (by-hash files, index.json, the tree as links) as one
    /// reproducible .tar.xz: sorted members, owner 0, mtime SOURCE_DATE_EPOCH or 0.
    #[arg(long, value_name = "FILE", requires = "dedup")]
    archive: Option<PathBuf>,
    /// Write the compatibility report (every kernel x object x entry program: its load
    /// verdict, libbpf's relocation status, each relocation): HTML if FILE ends in .html,
    /// else JSON.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Take only the kernels of this architecture (the ARCH directory of the BTFHub layout;
    /// aarch64 is arm64, amd64 is x86_64).
    #[arg(long, value_name = "ARCH")]
    arch: Option<String>,
    /// Redo only the kernels whose output is missing or out of date: input hashes, objects and
    /// output recorded in OUT/index.json (or the journal of a run that was killed).
    #[arg(long)]
    resume: bool,
    /// Also write the whole BTF of every kernel converted from DWARF (a KERNEL.debug), as
    /// `btfgen encode` writes it, mirroring --btf-dir: DIR/DISTRO/VERSION/ARCH/KERNEL.btf (for
    /// an archive of full BTFs, or a vmlinux.h). Kernels given as BTF are not copied; with
    /// --resume, a kernel whose output is up to date is not converted again.
    #[arg(long, value_name = "DIR")]
    keep_full: Option<PathBuf>,
    /// Print the final summary as one JSON object on stdout.
    #[arg(long)]
    json: bool,
    /// BPF objects whose CO-RE relocations decide what is kept, for every kernel.
    #[arg(required = true, value_name = "OBJECT")]
    objects: Vec<PathBuf>,
}

impl BatchArgs {
    /// Whether this run keeps OUT/index.json (and its journal) up to date.
    fn keeps_index(&self) -> bool {
        self.dedup.is_some() || self.resume
    }
}

/// What one kernel gave.
#[derive(Default, Clone, Copy)]
struct Done {
    /// Size of the kernel's file on disk (the archive, when packed).
    disk_bytes: u64,
    /// Size of the kernel BTF (decompressed).
    btf_bytes: u64,
    /// Types in the kernel BTF (excluding void).
    btf_types: u64,
    /// Size of the minimized BTF.
    out_bytes: u64,
    /// Types in the minimized BTF.
    out_types: u64,
    /// CO-RE relocations seen, and how many resolved.
    relocations: u64,
    resolved: u64,
    /// Kernels whose BTF was converted from DWARF (1 or 0 for one kernel).
    from_dwarf: u64,
}

/// What every compute thread reads: the objects, their scan plan, the earlier run's index
/// entries (`--resume`) and the report's rows (`--report`).
type Shared<'a, 'o> = (
    &'a [LocalObject<'o>],
    &'a ScanPlan<'o>,
    &'a BTreeMap<String, Value>,
    Option<&'a report::RowStore>,
);

/// A computed output on its way to a writer thread.
struct WriteJob {
    index: usize,
    bytes: Vec<u8>,
    done: Done,
    input_sha256: Option<String>,
    rows: Vec<u32>,
    verdicts: KernelVerdicts,
}

/// What became of one kernel, sent to the main thread.
struct Finished {
    index: usize,
    /// SHA-256 of the kernel's file, when the index is kept.
    input_sha256: Option<String>,
    result: Result<Output, String>,
    /// The kernel's report rows by number ([`report::RowStore`], with `--report`).
    rows: Vec<u32>,
    /// Its entry programs' verdicts (empty when it was not relocated).
    verdicts: KernelVerdicts,
}

/// A kernel's output, written now or still valid from an earlier run.
struct Output {
    /// What the computation took and gave; `None` when reused.
    done: Option<Done>,
    /// Its SHA-256 and size, when the index is kept.
    sha256: Option<String>,
    size: u64,
}

/// What a compute thread does with one kernel: hand its output to a writer, or report it done.
enum Step {
    Write(WriteJob),
    Done(Finished),
}

/// What the run has done so far, kernel by kernel (kept by the main thread).
#[derive(Default)]
struct Tally {
    ok: usize,
    /// Kernels whose earlier output was up to date (`--resume`).
    reused: usize,
    /// Totals over the kernels computed now.
    sum: Done,
    /// (output path, error) of each failed kernel.
    failures: Vec<(String, String)>,
    /// Errors writing the run's own files (journal, index, archive, report).
    errors: Vec<String>,
    /// Index entries by output path.
    entries: BTreeMap<String, Value>,
    /// The report's kernels (with `--report`), in the order of `verdicts`.
    report: Vec<report::ReportKernel>,
    /// Every finished kernel's verdicts.
    verdicts: Vec<KernelVerdicts>,
    /// The objects that do not fit an architecture, found once every kernel is done.
    mismatches: Vec<ArchMismatch>,
    /// Temporary files of an interrupted run, removed before this one.
    removed_temporaries: usize,
    /// Stored outputs no kernel uses any more, removed after this run.
    pruned: usize,
}

/// Run `btfgen batch`.
pub fn run(args: &BatchArgs) -> CliResult<ExitCode> {
    let started = Instant::now();

    // The objects: read and parsed once, before any kernel.
    let files = args
        .objects
        .iter()
        .map(|p| Ok((p.display().to_string(), read_file(p)?)))
        .collect::<CliResult<Vec<_>>>()?;
    let objects = parse_objects(&files)?;
    // What every kernel's parse must find for them: the same for all kernels.
    let plan = scan_plan(objects.iter().map(|o| (o.name, &o.object, &o.btf)))?;
    // Only the index (and --resume's journal, by the run key) names the objects by hash.
    let object_hashes: Vec<(String, String)> = if args.keeps_index() {
        files
            .iter()
            .map(|(name, data)| (name.clone(), dedup::sha256_hex(data)))
            .collect()
    } else {
        Vec::new()
    };
    let hashes: Vec<String> = object_hashes.iter().map(|(_, h)| h.clone()).collect();
    let run_key = dedup::run_key(&hashes, args.dedup);

    let (mut kernels, mut skipped) = find_kernels(&args.btf_dir, &args.out_dir)?;
    if let Some(arch) = &args.arch {
        let wanted = arch_folder(arch);
        let on_arch = |rel: &Path| kernel_arch(rel).as_deref() == Some(wanted);
        kernels.retain(|k| on_arch(&k.relative));
        skipped.retain(|(rel, _)| on_arch(Path::new(rel)));
    }
    let total = kernels.len() + skipped.len();
    if total == 0 {
        return Err(CliError(format!(
            "{}: no *{BTF_SUFFIX} or *{PACKED_SUFFIX} files found{}",
            args.btf_dir.display(),
            args.arch
                .as_ref()
                .map_or(String::new(), |a| format!(" for arch {a}"))
        )));
    }
    let jobs = args
        .jobs
        .or_else(|| std::thread::available_parallelism().ok())
        .map_or(1, NonZeroUsize::get)
        .min(kernels.len().max(1));
    // Writers mostly wait for fsync, so a few more of them than compute threads keep the
    // compute threads busy.
    let writers = (2 * jobs).clamp(2, 16).min(kernels.len().max(1));

    // What a killed run left: its temporary files go, its finished kernels count for --resume.
    let stale = dedup::remove_stale_temporaries(&args.out_dir);
    let previous = if args.resume {
        dedup::previous_entries(&args.out_dir, &run_key)
    } else {
        BTreeMap::new()
    };
    let mut tally = Tally {
        removed_temporaries: stale,
        ..Tally::default()
    };
    // The report's rows, stored once each as kernels finish; without it the run goes on.
    let store = args
        .report
        .as_deref()
        .and_then(|path| match report::RowStore::new(path) {
            Ok(store) => Some(store),
            Err(e) => {
                tally.errors.push(e.0);
                None
            }
        });
    let mut journal = None;
    if args.keeps_index() {
        match dedup::Journal::create(&args.out_dir, &run_key) {
            Ok(j) => journal = Some(j),
            Err(e) => tally.errors.push(e.0),
        }
    }

    let progress = Reporter::new(total as u64);
    for (path, line) in &skipped {
        progress.failed(line);
        tally.failures.push((path.clone(), line.clone()));
    }

    let next = AtomicUsize::new(0);
    let (done_tx, done_rx) = mpsc::channel::<Finished>();
    let (write_tx, write_rx) = mpsc::channel::<WriteJob>();
    let write_rx = Mutex::new(write_rx);
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let (done_tx, write_tx) = (done_tx.clone(), write_tx.clone());
            let (kernels, objects, plan, next, previous, store) =
                (&kernels, &objects, &plan, &next, &previous, store.as_ref());
            scope.spawn(move || {
                let (mut input, mut unpacked) = (Vec::new(), Vec::new());
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(kernel) = kernels.get(index) else {
                        break;
                    };
                    let buffers = (&mut input, &mut unpacked);
                    // The writers and the main thread outlive every compute thread, so the
                    // sends cannot fail.
                    let shared = (objects.as_slice(), plan, previous, store);
                    match process(args, kernel, index, shared, buffers) {
                        Step::Write(job) => drop(write_tx.send(job)),
                        Step::Done(finished) => drop(done_tx.send(finished)),
                    }
                }
            });
        }
        for _ in 0..writers {
            let (done_tx, write_rx, kernels) = (done_tx.clone(), &write_rx, &kernels);
            scope.spawn(move || {
                loop {
                    // Hold the lock only while taking a job, not while writing it.
                    let job = match write_rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => break,
                    };
                    let Ok(job) = job else { break };
                    let result = write_kernel(args, &kernels[job.index], &job.bytes)
                        .map(|sha256| Output {
                            done: Some(job.done),
                            sha256,
                            size: job.bytes.len() as u64,
                        })
                        .map_err(|e| e.0);
                    let _ = done_tx.send(Finished {
                        index: job.index,
                        input_sha256: job.input_sha256,
                        result,
                        rows: job.rows,
                        verdicts: job.verdicts,
                    });
                }
            });
        }
        // Only the threads hold senders now: the loop below ends when they are all done.
        drop((done_tx, write_tx));
        for finished in done_rx {
            let entry = tally.record(args, &kernels[finished.index], finished, &progress);
            if let Some(j) = &mut journal
                && let Err(e) = j.append(&entry)
            {
                // Only --resume after a kill needs it; the run itself goes on (the error is
                // reported with the summary).
                tally.errors.push(e.0);
                journal = None;
            }
        }
    });
    progress.finish();
    tally.mismatches = verdicts::apply_arch_mismatches(&mut tally.verdicts);

    let names: Vec<String> = files.iter().map(|(name, _)| name.clone()).collect();
    write_products(
        args,
        &mut tally,
        (store, &skipped),
        journal,
        &run_key,
        &object_hashes,
        &names,
    );
    for e in &tally.errors {
        stderr_line!("btfgen: FAILED {e}");
    }
    print_summary(args, &tally, &names, total, jobs, started);
    Ok(if tally.failures.is_empty() && tally.errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// One kernel on a compute thread: read it, reuse its earlier output if `--resume` finds it up
/// to date (relocating it anyway for `--report`), else minimize it for a writer.
fn process(
    args: &BatchArgs,
    kernel: &Kernel,
    index: usize,
    (objects, plan, previous, store): Shared<'_, '_>,
    (input, unpacked): (&mut Vec<u8>, &mut Vec<u8>),
) -> Step {
    // Each kernel's verdicts know its architecture from the start: add_object keeps what is
    // poisoned on the kernels of one (apply_arch_mismatches compares them).
    let new_verdicts = || KernelVerdicts {
        arch: kernel_arch(&kernel.relative),
        ..KernelVerdicts::default()
    };
    let finished = |input_sha256, result, rows, verdicts| {
        Step::Done(Finished {
            index,
            input_sha256,
            result,
            rows,
            verdicts,
        })
    };
    if let Err(e) = read_input(kernel, input) {
        return finished(None, Err(e.0), Vec::new(), new_verdicts());
    }
    let input_sha256 = args.keeps_index().then(|| dedup::sha256_hex(input));
    let up_to_date = input_sha256.as_deref().and_then(|hash| {
        previous
            .get(kernel.relative.to_string_lossy().as_ref())
            .filter(|entry| dedup::still_valid(&args.out_dir, entry, hash))
    });
    let reuse = |entry: &Value, rows, verdicts| {
        let output = Output {
            done: None,
            sha256: entry["sha256"].as_str().map(str::to_string),
            size: entry["size"].as_u64().unwrap_or(0),
        };
        finished(input_sha256.clone(), Ok(output), rows, verdicts)
    };
    if let (Some(entry), None) = (up_to_date, store) {
        return reuse(entry, Vec::new(), new_verdicts());
    }
    let mut rows = Vec::new();
    let mut verdicts = new_verdicts();
    let minimized = minimize(
        kernel,
        objects,
        plan,
        (input, unpacked),
        args.keep_full.as_deref(),
        &mut verdicts,
        store.map(|s| (s, &mut rows)),
    );
    match (minimized, up_to_date) {
        // The report needed the relocations; the output on disk stands.
        (Ok(_), Some(entry)) => reuse(entry, rows, verdicts),
        (Ok((bytes, done)), None) => Step::Write(WriteJob {
            index,
            bytes,
            done,
            input_sha256,
            rows,
            verdicts,
        }),
        (Err(e), _) => finished(input_sha256, Err(e.0), rows, verdicts),
    }
}

impl Tally {
    /// Count one finished kernel, report its progress, and return its index entry.
    fn record(
        &mut self,
        args: &BatchArgs,
        kernel: &Kernel,
        finished: Finished,
        progress: &Reporter,
    ) -> Value {
        let rel = kernel.relative.to_string_lossy().into_owned();
        let mut fields = dedup::kernel_fields(&kernel.relative);
        // What the kernel's BTF was read from, when it was computed this run.
        if let Ok(Output {
            done: Some(done), ..
        }) = &finished.result
        {
            fields["input_kind"] = json!(if done.from_dwarf > 0 { "dwarf" } else { "btf" });
        }
        let verdicts = finished.verdicts;
        if args.report.is_some() {
            let error = finished.result.as_ref().err().map(String::as_str);
            let (path, rows) = (&rel, finished.rows);
            let kernel = report::ReportKernel::new(path, fields.clone(), rows, &verdicts, error);
            self.report.push(kernel);
        }
        self.verdicts.push(verdicts);
        let mut entry = fields;
        entry["path"] = json!(rel);
        let input = kernel.input.strip_prefix(&args.btf_dir);
        entry["input"] = json!(input.unwrap_or(&kernel.input).to_string_lossy());
        entry["input_sha256"] = json!(finished.input_sha256);
        match finished.result {
            Ok(output) => {
                self.ok += 1;
                match &output.done {
                    Some(done) => {
                        self.sum.add(done);
                        progress.ok(kernel, done);
                    }
                    None => {
                        self.reused += 1;
                        progress.reused(kernel);
                    }
                }
                let file = match (&args.dedup, &output.sha256) {
                    (Some(_), Some(hash)) => dedup::stored_path(hash),
                    _ => kernel.relative.clone(),
                };
                entry["file"] = json!(file.to_string_lossy());
                entry["sha256"] = json!(output.sha256);
                entry["size"] = json!(output.size);
            }
            Err(e) => {
                progress.failed(&e);
                if args.dedup.is_some() {
                    // An earlier run's link would outlive the stored file it points to once
                    // that is pruned; the index says this kernel has no output now.
                    let _ = std::fs::remove_file(args.out_dir.join(&kernel.relative));
                }
                entry["error"] = json!(e);
                self.failures.push((rel.clone(), e));
            }
        }
        self.entries.insert(rel, entry.clone());
        entry
    }
}

/// After the kernels: the index (then the journal goes), the store's unused files, the archive
/// and the report (its rows in `store`, the kernels `skipped` in it too). Errors go to
/// `tally.errors`.
fn write_products(
    args: &BatchArgs,
    tally: &mut Tally,
    (store, skipped): (Option<report::RowStore>, &[Skipped]),
    journal: Option<dedup::Journal>,
    run_key: &str,
    object_hashes: &[(String, String)],
    object_names: &[String],
) {
    if args.keeps_index() {
        let entries = &tally.entries;
        match dedup::write_index(&args.out_dir, run_key, object_hashes, args.dedup, entries) {
            Ok(()) => {
                if let Some(j) = journal {
                    j.remove();
                }
                if args.dedup.is_some() {
                    tally.pruned = dedup::prune_unreferenced(&args.out_dir, entries);
                }
                if let (Some(archive), Some(mode)) = (&args.archive, args.dedup)
                    && let Err(e) = dedup::write_archive(archive, &args.out_dir, mode, entries)
                {
                    tally.errors.push(e.0);
                }
            }
            Err(e) => tally.errors.push(e.0),
        }
    }
    if let (Some(path), Some(store)) = (&args.report, store) {
        // Skipped kernels (a second file for the same output) are in the report too.
        let none = KernelVerdicts::default();
        let mut kernels: Vec<(report::ReportKernel, &KernelVerdicts)> = skipped
            .iter()
            .map(|(rel, line)| {
                let fields = dedup::kernel_fields(Path::new(rel));
                let kernel = report::ReportKernel::new(rel, fields, Vec::new(), &none, Some(line));
                (kernel, &none)
            })
            .collect();
        kernels.extend(
            std::mem::take(&mut tally.report)
                .into_iter()
                .zip(&tally.verdicts),
        );
        let written = report::write(path, object_names, &tally.mismatches, store, kernels);
        if let Err(e) = written {
            tally.errors.push(e.0);
        }
    }
}

/// The final summary on stderr, with the deduplication saving; with `--json`, also as JSON on
/// stdout.
fn print_summary(
    args: &BatchArgs,
    tally: &Tally,
    object_names: &[String],
    total: usize,
    jobs: usize,
    started: Instant,
) {
    let objects = object_names.len();
    let programs = verdict_counts(tally);
    let (ok, reused, sum) = (tally.ok, tally.reused, &tally.sum);
    let failed = tally.failures.len();
    let computed = (ok - reused) as u64;
    let relocations = sum.relocations.checked_div(computed).unwrap_or(0);
    let resolved = if sum.relocations == 0 {
        0.0
    } else {
        100.0 * sum.resolved as f64 / sum.relocations as f64
    };
    // Distinct outputs among the kernels that have one (known where the index is kept).
    let mut distinct: BTreeMap<&str, u64> = BTreeMap::new();
    let mut output_bytes = 0u64;
    for e in tally.entries.values() {
        if let (Some(hash), Some(size)) = (e["sha256"].as_str(), e["size"].as_u64()) {
            distinct.insert(hash, size);
            output_bytes += size;
        }
    }
    let stored_bytes: u64 = distinct.values().sum();
    let seconds = started.elapsed().as_secs_f64();
    let reused_note = if reused > 0 {
        format!(" ({reused} up to date, not redone)")
    } else {
        String::new()
    };
    if !super::quiet() {
        stderr_line!(
            "btfgen batch: {ok} kernel(s) ok{reused_note}, {failed} failed; {objects} object(s), {relocations} CO-RE relocation(s) per kernel \
             ({resolved:.1}% resolved); {} of kernel BTF{} ({} on disk) -> {} in {} ({seconds:.2} s, {jobs} thread(s)); programs: {}",
            human_bytes(sum.btf_bytes),
            if sum.from_dwarf > 0 {
                format!(" ({} from DWARF)", sum.from_dwarf)
            } else {
                String::new()
            },
            human_bytes(sum.disk_bytes),
            human_bytes(sum.out_bytes),
            args.out_dir.display(),
            programs.line(),
        );
        for m in &tally.mismatches {
            stderr_line!(
                "btfgen batch: {}: {} ({} program(s) rejected only there: arch-mismatch)",
                object_names.get(m.object).map_or("?", String::as_str),
                m.message(),
                m.programs
            );
        }
        if args.dedup.is_some() && ok > 0 {
            let saved = 100.0 * (1.0 - stored_bytes as f64 / output_bytes.max(1) as f64);
            stderr_line!(
                "btfgen batch: dedup: {ok} output(s) stored as {} distinct file(s) in {}/{}: {} instead of {} ({saved:.1}% saved)",
                distinct.len(),
                args.out_dir.display(),
                dedup::BY_HASH,
                human_bytes(stored_bytes),
                human_bytes(output_bytes),
            );
        }
        if tally.removed_temporaries > 0 {
            stderr_line!(
                "btfgen batch: removed {} temporary file(s) an interrupted run left",
                tally.removed_temporaries
            );
        }
        if tally.pruned > 0 {
            stderr_line!(
                "btfgen batch: removed {} stored output(s) no kernel uses any more",
                tally.pruned
            );
        }
    }
    if !args.json {
        return;
    }
    let path = |p: &Path| p.to_string_lossy().into_owned();
    let indexed = args.keeps_index();
    let summary = json!({
        "kernels": total,
        "ok": ok,
        "reused": reused,
        "failed": failed,
        "failures": tally
            .failures
            .iter()
            .map(|(path, error)| json!({"path": path, "error": error}))
            .collect::<Vec<_>>(),
        "errors": tally.errors,
        "objects": args.objects.iter().map(|p| path(p)).collect::<Vec<_>>(),
        "relocations_per_kernel": relocations,
        "kernel_btf_bytes": sum.btf_bytes,
        "disk_bytes": sum.disk_bytes,
        "written_bytes": sum.out_bytes,
        "distinct_outputs": indexed.then_some(distinct.len()),
        "output_bytes": indexed.then_some(output_bytes),
        "stored_bytes": indexed.then_some(stored_bytes),
        "out_dir": path(&args.out_dir),
        "index": indexed.then(|| path(&args.out_dir.join(dedup::INDEX))),
        "archive": args.archive.as_deref().map(path),
        "report": args.report.as_deref().map(path),
        "programs": programs.to_json(),
        "arch_mismatches": tally
            .mismatches
            .iter()
            .map(|m| m.to_json(object_names))
            .collect::<Vec<_>>(),
        "removed_temporaries": tally.removed_temporaries,
        "pruned": tally.pruned,
        "seconds": seconds,
        "threads": jobs,
    });
    println!("{summary}");
}

/// A kernel's architecture: the ARCH directory of its BTFHub path, normalized.
fn kernel_arch(relative: &Path) -> Option<String> {
    let fields = dedup::kernel_fields(relative);
    let arch = fields["arch"].as_str()?;
    Some(arch_folder(arch).to_string())
}

/// The programs of every kernel relocated this run, counted by verdict.
fn verdict_counts(tally: &Tally) -> VerdictCounts {
    let mut counts = VerdictCounts::default();
    counts.add(tally.verdicts.iter().flat_map(|k| &k.programs));
    counts
}

/// Minimize `objects` (whose candidates `plan` finds) against one kernel, whose file's bytes are
/// `input`: the output bytes and what went in and out. `unpacked` is the calling thread's buffer
/// for a packed kernel. A kernel converted from DWARF has its whole BTF written under
/// `keep_full` (`--keep-full`) too. Each entry program's verdict goes to `verdicts`, and with
/// `rows`, its report row to the store and the row's number to the list (also when a
/// relocation fails the kernel: every object is relocated).
fn minimize(
    kernel: &Kernel,
    objects: &[LocalObject<'_>],
    plan: &ScanPlan<'_>,
    (input, unpacked): (&[u8], &mut Vec<u8>),
    keep_full: Option<&Path>,
    verdicts: &mut KernelVerdicts,
    mut rows: Option<(&report::RowStore, &mut Vec<u32>)>,
) -> CliResult<(Vec<u8>, Done)> {
    let name = kernel.input.display();
    let data: &[u8] = if kernel.packed {
        let expected = kernel.relative.file_name().unwrap_or_default();
        unpack(input, expected, unpacked).map_err(context(&name))?;
        unpacked
    } else {
        input
    };
    // A debug vmlinux's DWARF becomes its BTF here, as min-core-btf converts its INPUT: its
    // types, and its functions too only for the whole BTF kept.
    let how = if keep_full.is_some() {
        super::ConvertFor::WholeBtf
    } else {
        super::ConvertFor::Relocating
    }
    .options();
    let converted = btfgen::dwarf_input::convert(&kernel.input, data, false, None, &how)
        .map_err(context(&name))?;
    if let (Some(dir), Some(full)) = (keep_full, &converted) {
        write_mirrored(dir, kernel, full)?;
    }
    let data: &[u8] = converted.as_deref().unwrap_or(data);
    // Parsed and indexed as min-core-btf parses its INPUT (candidates found by the parse's
    // own pass), so that the outputs are the same.
    let (btf, ids) = parse_target(data, None, &name.to_string(), Some(plan.filter()))?;
    let targets = Targets::new(&btf);
    let mut index = CandidateIndex::new();
    index
        .absorb(plan, &targets, &[(BtfSource::Main, &ids)])
        .map_err(context(format!("{name}: indexing candidates")))?;
    let mut info = RelocInfo::with_index(targets, index);
    let mut failed = None;
    for (at, o) in objects.iter().enumerate() {
        let relocated = info
            .relocate(&o.object, &o.btf)
            .map_err(context(format!("{name}: {}", o.name)))?;
        let programs = if rows.is_none() && verdict::all_load(&o.object, &relocated) {
            // Nothing to judge, and no report asks which relocations each program has.
            verdicts.add_loading_object(at, &o.object);
            Vec::new()
        } else {
            report::record_object(
                verdicts,
                rows.as_mut().map(|(store, ids)| (*store, &mut **ids)),
                (at, o.name),
                &o.object,
                &o.btf,
                info.targets(),
                &relocated,
            )
            .map_err(context(&name))?
        };
        // The other objects' verdicts still count.
        if let Err(e) = info.add_relocated(o.name, &relocated, &programs) {
            failed.get_or_insert(CliError(format!("{name}: {}: {e}", o.name)));
        }
    }
    if let Some(e) = failed {
        return Err(e);
    }
    let minimized = info
        .to_btf()
        .map_err(context(format!("{name}: emitting minimized BTF")))?;
    let stats = info.stats();
    let done = Done {
        disk_bytes: input.len() as u64,
        btf_bytes: data.len() as u64,
        btf_types: u64::from(btf.type_cnt().saturating_sub(1)),
        out_bytes: minimized.bytes.len() as u64,
        out_types: minimized.types as u64,
        relocations: stats.relocations as u64,
        resolved: stats.resolved as u64,
        from_dwarf: u64::from(converted.is_some()),
    };
    Ok((minimized.bytes, done))
}

/// Write one kernel's output under OUT: stored by hash and linked with `--dedup`, else at its
/// mirrored path. Its SHA-256 when the index is kept.
fn write_kernel(args: &BatchArgs, kernel: &Kernel, bytes: &[u8]) -> CliResult<Option<String>> {
    let hash = args.keeps_index().then(|| dedup::sha256_hex(bytes));
    match (args.dedup, &hash) {
        (Some(mode), Some(hash)) => {
            dedup::store(&args.out_dir, &kernel.relative, hash, bytes, mode)?;
        }
        _ => write_mirrored(&args.out_dir, kernel, bytes)?,
    }
    Ok(hash)
}

/// Write `bytes` at `kernel`'s path mirrored under `dir`, making its directories.
fn write_mirrored(dir: &Path, kernel: &Kernel, bytes: &[u8]) -> CliResult<()> {
    let path = dir.join(&kernel.relative);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(context(dir.display()))?;
    }
    write_atomic(&path, bytes)
}

impl Done {
    fn add(&mut self, other: &Done) {
        self.disk_bytes += other.disk_bytes;
        self.btf_bytes += other.btf_bytes;
        self.btf_types += other.btf_types;
        self.out_bytes += other.out_bytes;
        self.out_types += other.out_types;
        self.relocations += other.relocations;
        self.resolved += other.resolved;
        self.from_dwarf += other.from_dwarf;
    }
}

/// Progress: a bar when stderr is a terminal, one plain line per kernel otherwise. Failures are
/// one line each either way.
struct Reporter {
    bar: Option<indicatif::ProgressBar>,
    total: u64,
    count: Cell<u64>,
}

impl Reporter {
    fn new(total: u64) -> Self {
        let bar = (std::io::stderr().is_terminal() && !super::quiet()).then(|| {
            let style = indicatif::ProgressStyle::with_template(
                "{elapsed_precise} [{bar:40}] {pos}/{len} kernels, eta {eta} {wide_msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> ");
            let bar = indicatif::ProgressBar::new(total).with_style(style);
            bar.enable_steady_tick(Duration::from_millis(200));
            bar
        });
        Reporter {
            bar,
            total,
            count: Cell::new(0),
        }
    }

    fn ok(&self, kernel: &Kernel, done: &Done) {
        let n = self.count.get() + 1;
        self.count.set(n);
        match &self.bar {
            Some(bar) => {
                bar.set_message(kernel.relative.display().to_string());
                bar.inc(1);
            }
            None if super::quiet() => {}
            None => stderr_line!(
                "btfgen: [{n}/{}] {}: {} types / {} bytes{} -> {} types / {} bytes",
                self.total,
                kernel.relative.display(),
                done.btf_types,
                done.btf_bytes,
                if done.from_dwarf > 0 {
                    " (BTF from DWARF)"
                } else {
                    ""
                },
                done.out_types,
                done.out_bytes
            ),
        }
    }

    fn reused(&self, kernel: &Kernel) {
        let n = self.count.get() + 1;
        self.count.set(n);
        match &self.bar {
            Some(bar) => bar.inc(1),
            None => stderr_line!(
                "btfgen: [{n}/{}] {}: up to date",
                self.total,
                kernel.relative.display()
            ),
        }
    }

    fn failed(&self, line: &str) {
        let n = self.count.get() + 1;
        self.count.set(n);
        match &self.bar {
            Some(bar) => {
                bar.println(format!("btfgen: FAILED {line}"));
                bar.inc(1);
            }
            None => stderr_line!("btfgen: [{n}/{}] FAILED {line}", self.total),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// `1234567` → `1.2 MiB`.
fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["bytes", "KiB", "MiB", "GiB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} bytes")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}
