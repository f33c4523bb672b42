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

use super::{CliError, CliResult, context, parse_target, read_file, scan_plan, write_atomic};
use btfgen::btf::Btf;
use btfgen::core::{BtfSource, CandidateIndex, ScanPlan, Targets};
use btfgen::minimize::RelocInfo;
use btfgen::object::BpfObject;
use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::{IsTerminal, Read};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, mpsc};
use std::time::{Duration, Instant};

/// Suffix of a raw kernel BTF.
const BTF_SUFFIX: &str = ".btf";
/// Suffix of a packed kernel BTF (BTFHub's archive format).
const PACKED_SUFFIX: &str = ".btf.tar.xz";
/// Start of every xz stream.
const XZ_MAGIC: &[u8] = b"\xfd7zXZ\0";
/// Largest `.btf` accepted from an archive (the biggest kernel BTFs are well under 16 MiB).
const MAX_ARCHIVED_BTF: u64 = 1 << 30;
/// Most of an archive member's declared size reserved up front; a larger member grows the buffer
/// as it is actually read, so a lying header cannot make us allocate.
const RESERVE_AT_MOST: u64 = 64 << 20;

/// Arguments of `btfgen batch`.
#[derive(clap::Args)]
pub struct BatchArgs {
    /// Tree of kernel BTFs, searched recursively for KERNEL.btf and KERNEL.btf.tar.xz
    /// (BTFHub layout: DISTRO/VERSION/ARCH/KERNEL.btf[.tar.xz]).
    #[arg(long, value_name = "DIR")]
    btf_dir: PathBuf,
    /// Where to write the minimized BTFs, mirroring --btf-dir: OUT/DISTRO/VERSION/ARCH/KERNEL.btf.
    #[arg(long, value_name = "OUT")]
    out_dir: PathBuf,
    /// Compute threads (default: the number of CPUs).
    #[arg(long, short = 'j', value_name = "N")]
    jobs: Option<NonZeroUsize>,
    /// BPF objects whose CO-RE relocations decide what is kept, for every kernel.
    #[arg(required = true, value_name = "OBJECT")]
    objects: Vec<PathBuf>,
}

/// One kernel BTF found under `--btf-dir`.
struct Kernel {
    /// The file, as found (under `--btf-dir`).
    input: PathBuf,
    /// Output path relative to `--out-dir`: the input's relative path, ending in `.btf`.
    relative: PathBuf,
    /// `KERNEL.btf.tar.xz` rather than `KERNEL.btf`.
    packed: bool,
}

/// One object, parsed once and shared by every thread.
struct LocalObject<'a> {
    name: &'a str,
    object: BpfObject<'a>,
    btf: Btf<'a>,
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
}

/// A computed output on its way to a writer thread.
struct WriteJob {
    index: usize,
    path: PathBuf,
    bytes: Vec<u8>,
    done: Done,
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
    let objects = files
        .iter()
        .map(|(name, data)| parse_object(name, data))
        .collect::<CliResult<Vec<_>>>()?;
    // What every kernel's parse must find for them: the same for all kernels.
    let plan = scan_plan(objects.iter().map(|o| (o.name, &o.object, &o.btf)))?;

    let (kernels, mut failures) = find_kernels(&args.btf_dir, &args.out_dir)?;
    let total = kernels.len() + failures.len();
    if total == 0 {
        return Err(CliError(format!(
            "{}: no *{BTF_SUFFIX} or *{PACKED_SUFFIX} files found",
            args.btf_dir.display()
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

    let report = Reporter::new(total as u64);
    for line in &failures {
        report.failed(line);
    }

    let mut sum = Done::default();
    let mut ok = 0usize;
    let next = AtomicUsize::new(0);
    let (done_tx, done_rx) = mpsc::channel::<(usize, CliResult<Done>)>();
    let (write_tx, write_rx) = mpsc::channel::<WriteJob>();
    let write_rx = Mutex::new(write_rx);
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let (done_tx, write_tx) = (done_tx.clone(), write_tx.clone());
            let (kernels, objects, plan, next) = (&kernels, &objects, &plan, &next);
            scope.spawn(move || {
                let (mut input, mut unpacked) = (Vec::new(), Vec::new());
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(kernel) = kernels.get(index) else {
                        break;
                    };
                    match minimize(kernel, objects, plan, &mut input, &mut unpacked) {
                        Ok((bytes, done)) => {
                            let path = args.out_dir.join(&kernel.relative);
                            // The writers outlive every compute thread, so this cannot fail.
                            let _ = write_tx.send(WriteJob {
                                index,
                                path,
                                bytes,
                                done,
                            });
                        }
                        Err(e) => {
                            let _ = done_tx.send((index, Err(e)));
                        }
                    }
                }
            });
        }
        for _ in 0..writers {
            let (done_tx, write_rx) = (done_tx.clone(), &write_rx);
            scope.spawn(move || {
                loop {
                    // Hold the lock only while taking a job, not while writing it.
                    let job = match write_rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => break,
                    };
                    let Ok(job) = job else { break };
                    let result = write_output(&job.path, &job.bytes).map(|()| job.done);
                    let _ = done_tx.send((job.index, result));
                }
            });
        }
        // Only the threads hold senders now: the loop below ends when they are all done.
        drop((done_tx, write_tx));
        for (index, result) in done_rx {
            let kernel = &kernels[index];
            match result {
                Ok(done) => {
                    ok += 1;
                    sum.add(&done);
                    report.ok(kernel, &done);
                }
                Err(e) => {
                    failures.push(e.0.clone());
                    report.failed(&e.0);
                }
            }
        }
    });
    report.finish();

    let failed = failures.len();
    let relocations = if ok == 0 {
        0
    } else {
        sum.relocations / ok as u64
    };
    let resolved = if sum.relocations == 0 {
        0.0
    } else {
        100.0 * sum.resolved as f64 / sum.relocations as f64
    };
    if !super::quiet() {
        eprintln!(
            "btfgen batch: {ok} kernel(s) ok, {failed} failed; {} object(s), {relocations} CO-RE relocation(s) per kernel \
         ({resolved:.1}% resolved); {} of kernel BTF ({} on disk) -> {} in {} ({:.2} s, {jobs} thread(s))",
            objects.len(),
            human_bytes(sum.btf_bytes),
            human_bytes(sum.disk_bytes),
            human_bytes(sum.out_bytes),
            args.out_dir.display(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn parse_object<'a>(name: &'a str, data: &'a [u8]) -> CliResult<LocalObject<'a>> {
    let object = BpfObject::parse(data).map_err(context(name))?;
    let btf_bytes = object
        .btf_bytes()
        .ok_or_else(|| CliError(format!("{name}: object has no .BTF section")))?;
    let btf = Btf::parse(btf_bytes).map_err(context(format!("{name}: .BTF")))?;
    Ok(LocalObject { name, object, btf })
}

/// Every kernel BTF under `root`, sorted by path, and a failure line for each one whose output
/// path another one already has (`K.btf` next to `K.btf.tar.xz`). Hidden entries and `out_dir`
/// (when it lies inside `root`) are skipped; symlinks to files are followed, to directories not.
fn find_kernels(root: &Path, out_dir: &Path) -> CliResult<(Vec<Kernel>, Vec<String>)> {
    let skip = std::fs::canonicalize(out_dir).ok();
    let mut found = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(rel) = pending.pop() {
        let dir = root.join(&rel);
        if skip.is_some() && std::fs::canonicalize(&dir).ok() == skip {
            continue;
        }
        for entry in std::fs::read_dir(&dir).map_err(context(dir.display()))? {
            let entry = entry.map_err(context(dir.display()))?;
            let name = entry.file_name();
            if name.as_encoded_bytes().starts_with(b".") {
                continue;
            }
            let file_type = entry.file_type().map_err(context(entry.path().display()))?;
            if file_type.is_dir() {
                pending.push(rel.join(&name));
                continue;
            }
            let is_file = file_type.is_file() || (file_type.is_symlink() && entry.path().is_file());
            if !is_file {
                continue;
            }
            let bytes = name.as_encoded_bytes();
            let (out_name, packed) = if bytes.ends_with(PACKED_SUFFIX.as_bytes()) {
                // "K.btf.tar.xz" -> "K.btf.tar" -> "K.btf".
                let stem = Path::new(&name)
                    .file_stem()
                    .map(Path::new)
                    .and_then(Path::file_stem);
                (PathBuf::from(stem.unwrap_or(&name)), true)
            } else if bytes.ends_with(BTF_SUFFIX.as_bytes()) {
                (PathBuf::from(&name), false)
            } else {
                continue;
            };
            found.push(Kernel {
                input: entry.path(),
                relative: rel.join(out_name),
                packed,
            });
        }
    }
    // Sorted by output path, plain before packed: the order kernels are handed out and
    // duplicates are told apart in.
    found.sort_by(|a, b| (&a.relative, a.packed).cmp(&(&b.relative, b.packed)));
    let mut kernels: Vec<Kernel> = Vec::with_capacity(found.len());
    let mut failures = Vec::new();
    let mut seen: HashMap<PathBuf, PathBuf> = HashMap::new();
    for k in found {
        if let Some(first) = seen.get(&k.relative) {
            failures.push(format!(
                "{}: skipped: same output {} as {}",
                k.input.display(),
                k.relative.display(),
                first.display()
            ));
            continue;
        }
        seen.insert(k.relative.clone(), k.input.clone());
        kernels.push(k);
    }
    Ok((kernels, failures))
}

/// Minimize `objects` (whose candidates `plan` finds) against one kernel: the output bytes and
/// what went in and out. `input`
/// and `unpacked` are the calling thread's buffers, reused from kernel to kernel (a kernel BTF
/// is a few MiB: fresh buffers would cost a page fault every 4 KiB, each time).
fn minimize(
    kernel: &Kernel,
    objects: &[LocalObject<'_>],
    plan: &ScanPlan<'_>,
    input: &mut Vec<u8>,
    unpacked: &mut Vec<u8>,
) -> CliResult<(Vec<u8>, Done)> {
    let name = kernel.input.display();
    input.clear();
    std::fs::File::open(&kernel.input)
        .and_then(|mut f| f.read_to_end(input))
        .map_err(context(&name))?;
    let data: &[u8] = if kernel.packed {
        let expected = kernel.relative.file_name().unwrap_or_default();
        unpack(input, expected, unpacked).map_err(context(&name))?;
        unpacked
    } else {
        input
    };
    // Parsed and indexed as min-core-btf parses its INPUT (candidates found by the parse's
    // own pass), so that the outputs are the same.
    let (btf, ids) = parse_target(data, None, &name.to_string(), Some(plan.filter()))?;
    let targets = Targets::new(&btf);
    let mut index = CandidateIndex::new();
    index
        .absorb(plan, &targets, &[(BtfSource::Main, &ids)])
        .map_err(context(format!("{name}: indexing candidates")))?;
    let mut info = RelocInfo::with_index(targets, index);
    for o in objects {
        info.add_object(o.name, &o.object, &o.btf)
            .map_err(context(format!("{name}: {}", o.name)))?;
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
    };
    Ok((minimized.bytes, done))
}

/// Decompress an xz-compressed tar into `out`: its one regular file, or the entry named
/// `expected` if there are several.
fn unpack(archive: &[u8], expected: &OsStr, out: &mut Vec<u8>) -> Result<(), String> {
    if !archive.starts_with(XZ_MAGIC) {
        return Err("not an xz file".into());
    }
    let mut tar = tar::Archive::new(liblzma::read::XzDecoder::new(archive));
    let (mut have, mut have_by_name, mut files) = (false, false, 0usize);
    for entry in tar.entries().map_err(|e| format!("reading archive: {e}"))? {
        let mut entry = entry.map_err(|e| format!("reading archive: {e}"))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        files += 1;
        let by_name = entry
            .path()
            .ok()
            .and_then(|p| p.file_name().map(|n| n == expected))
            .unwrap_or(false);
        if have && (have_by_name || !by_name) {
            continue;
        }
        let size = entry.size();
        if size > MAX_ARCHIVED_BTF {
            return Err(format!(
                "archive member of {size} bytes is too large for a BTF"
            ));
        }
        out.clear();
        out.try_reserve_exact(size.min(RESERVE_AT_MOST) as usize)
            .map_err(|e| format!("reading archive: {e}"))?;
        entry
            .read_to_end(out)
            .map_err(|e| format!("reading archive: {e}"))?;
        (have, have_by_name) = (true, by_name);
    }
    match (have, have_by_name) {
        (false, _) => Err("archive holds no file".into()),
        (true, false) if files > 1 => Err(format!(
            "archive holds {files} files, none named {}",
            expected.to_string_lossy()
        )),
        _ => Ok(()),
    }
}

fn write_output(path: &Path, bytes: &[u8]) -> CliResult<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(context(dir.display()))?;
    }
    write_atomic(path, bytes)
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
            None => eprintln!(
                "btfgen: [{n}/{}] {}: {} types / {} bytes -> {} types / {} bytes",
                self.total,
                kernel.relative.display(),
                done.btf_types,
                done.btf_bytes,
                done.out_types,
                done.out_bytes
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
            None => eprintln!("btfgen: [{n}/{}] FAILED {line}", self.total),
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
