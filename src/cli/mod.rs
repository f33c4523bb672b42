//! Subcommands of the `btfgen` binary, plus the file helpers they share.

/// `eprintln!` in one `write`: Rust's stderr is unbuffered, so `eprintln!` writes each piece of
/// its format on its own (a summary line took two dozen system calls), and the lines of
/// processes sharing a log, such as a parallel build's, could interleave mid-line. Defined
/// before the subcommands' modules so that they all see it; a line stderr refuses is dropped,
/// where `eprintln!` would panic.
macro_rules! stderr_line {
    ($($arg:tt)*) => {
        $crate::cli::write_stderr_line(format_args!($($arg)*))
    };
}
pub(crate) use stderr_line;

// The command's allocator where the C library's is musl's (`make cli`), tested everywhere. A
// `GlobalAlloc` cannot be written without `unsafe`; audited block by block.
#[cfg(any(target_env = "musl", test))]
#[allow(unsafe_code)]
mod allocator;
pub mod batch;
pub mod bpftool;
pub mod dedup;
pub mod docs;
pub mod dump;
mod dwarf_progress;
pub mod encode;
// Its tests ask `libc` for the page size and a FIFO.
#[cfg_attr(test, allow(unsafe_code))]
pub mod input;
pub mod min_core_btf;
pub mod modules;
pub mod objects;
pub mod relocate;
pub mod report;
pub mod select;
pub mod verdicts;

use btfgen::btf::split::SplitBase;
use btfgen::btf::{Btf, NameFilter, Validation};
use btfgen::core::relocate::local_type_names;
use btfgen::core::{BtfSource, CandidateIndex, ScanPlan, Targets};
use btfgen::fs::Durability;
use btfgen::object::BpfObject;
use input::Input;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Write `args` and a newline on stderr with one `write` ([`stderr_line!`]).
pub fn write_stderr_line(args: fmt::Arguments<'_>) {
    use std::io::Write;
    let mut line = fmt::format(args);
    line.push('\n');
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Where the running kernel exposes its BTF; every file there but vmlinux's is a loaded
/// module's BTF, split on vmlinux.
pub const SYSFS_BTF_DIR: &str = "/sys/kernel/btf";
/// The running kernel's own BTF.
pub const SYSFS_VMLINUX: &str = "/sys/kernel/btf/vmlinux";

/// How much the tool prints on stderr besides errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verbosity {
    /// Errors only (`-q`).
    Quiet,
    /// libbpf's warnings and info messages (as libbpf's default printer), and summary lines.
    Normal,
    /// Also libbpf's debug log of every relocation (`-d`).
    Debug,
}

static QUIET: AtomicBool = AtomicBool::new(false);

/// Whether `-q` asked for errors only: subcommands then print no summary or progress lines.
pub fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

/// Prints the library's log ([`btfgen::log`]) on stderr as libbpf's printer does: one
/// `libbpf: ` line per message.
struct StderrLog;

impl log::Log for StderrLog {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.target() == btfgen::log::TARGET && metadata.level() <= log::max_level()
    }

    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            stderr_line!("{}{}", btfgen::log::PREFIX, record.args());
        }
    }

    fn flush(&self) {}
}

/// Install the stderr log for this run, at `verbosity`.
pub fn init_log(verbosity: Verbosity) {
    static LOGGER: StderrLog = StderrLog;
    QUIET.store(verbosity == Verbosity::Quiet, Ordering::Relaxed);
    // Only fails if a logger is already set, which only this function does.
    let _ = log::set_logger(&LOGGER);
    log::set_max_level(match verbosity {
        Verbosity::Quiet => log::LevelFilter::Off,
        Verbosity::Normal => log::LevelFilter::Info,
        Verbosity::Debug => log::LevelFilter::Debug,
    });
}

/// A CLI error: a one-line message with the path or argument it concerns.
#[derive(Debug)]
pub struct CliError(pub String);

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Result type of every subcommand.
pub type CliResult<T> = Result<T, CliError>;

/// Attach `context` (usually a path) to a library or I/O error.
pub fn context<E: fmt::Display>(context: impl fmt::Display) -> impl FnOnce(E) -> CliError {
    move |e| CliError(format!("{context}: {e}"))
}

/// Read a whole input file, naming it in the error.
pub fn read_file(path: &Path) -> CliResult<Vec<u8>> {
    std::fs::read(path).map_err(context(path.display()))
}

/// Write `bytes` to `path` atomically, unsynced ([`btfgen::fs::write_atomic`]): no partial
/// output is ever left behind, naming the path in the error. Nothing is written if a mapped
/// input changed during the run ([`input::check_inputs`]).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> CliResult<()> {
    input::check_inputs()?;
    btfgen::fs::write_atomic(path, bytes, Durability::Unsynced).map_err(context(path.display()))
}

/// As [`write_atomic`], of what `fill` writes ([`btfgen::fs::write_atomic_with`]).
pub fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> CliResult<()> {
    input::check_inputs()?;
    btfgen::fs::write_atomic_with(path, Durability::Unsynced, fill).map_err(context(path.display()))
}

/// As [`write_atomic`], but a file already at `path` is left as it is
/// ([`btfgen::fs::write_once`]: content-addressed outputs).
pub fn write_once(path: &Path, bytes: &[u8]) -> CliResult<()> {
    input::check_inputs()?;
    btfgen::fs::write_once(path, bytes, Durability::Unsynced).map_err(context(path.display()))
}

/// How a kernel input with DWARF is read.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct DwarfArgs {
    /// Convert the input's DWARF to BTF even though it has a .BTF section (an ELF file with
    /// DWARF and no .BTF, such as a distribution's debug vmlinux, is converted anyway).
    #[arg(long)]
    pub from_dwarf: bool,
    /// The supplementary file of a dwz -m input (named by its .gnu_debugaltlink or
    /// .debug_sup); default: looked for at the path it names, next to the input, and under
    /// /usr/lib/debug/.build-id/.
    #[arg(long, value_name = "FILE")]
    pub dwarf_alt: Option<PathBuf>,
}

/// What a DWARF input is converted for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConvertFor {
    /// Relocating against it: its types alone, which are all relocation reads.
    Relocating,
    /// The whole BTF, functions included, as pahole writes it (`encode`, `dump`).
    WholeBtf,
}

impl ConvertFor {
    /// How [`btfgen::dwarf_input`] converts for this.
    fn options(self) -> btfgen::dwarf_input::ConvertOptions<'static> {
        btfgen::dwarf_input::ConvertOptions {
            functions: self == ConvertFor::WholeBtf,
            // The command goes on to relocate or write meanwhile, and exits soon after.
            free_in_background: true,
            ..Default::default()
        }
    }
}

impl DwarfArgs {
    /// The BTF converted from `data`'s DWARF (read from `path`) for `purpose`, if it is
    /// converted ([`btfgen::dwarf_input::convert`]).
    pub fn convert(
        &self,
        path: &Path,
        data: &[u8],
        purpose: ConvertFor,
    ) -> CliResult<Option<Vec<u8>>> {
        let progress = dwarf_progress::DwarfProgress::new(path);
        let how = btfgen::dwarf_input::ConvertOptions {
            progress: &|p| progress.tell(p),
            ..purpose.options()
        };
        btfgen::dwarf_input::convert(path, data, self.from_dwarf, self.dwarf_alt.as_deref(), &how)
            .map_err(|e| match e {
                btfgen::dwarf_input::DwarfInputError::Supplementary(_)
                    if self.dwarf_alt.is_none() =>
                {
                    CliError(format!(
                        "{}: {e}; give it with --dwarf-alt FILE",
                        path.display()
                    ))
                }
                e => CliError(format!("{}: {e}", path.display())),
            })
    }
}

/// A kernel's BTF to split modules over: its file, and the BTF converted from its DWARF when
/// it has DWARF and no `.BTF` (a debug vmlinux).
pub struct BaseInput {
    name: String,
    file: Input,
    converted: Option<Vec<u8>>,
}

impl BaseInput {
    /// Read (and if need be convert, whole: a split BTF's ids count the base's functions) the
    /// kernel at `path`.
    pub fn read(path: &Path) -> CliResult<BaseInput> {
        let file = Input::open(path)?;
        let converted = DwarfArgs::default().convert(path, &file, ConvertFor::WholeBtf)?;
        Ok(BaseInput {
            name: path.display().to_string(),
            file,
            converted,
        })
    }

    /// Its BTF, parsed and checked in full.
    pub fn parse(&self) -> CliResult<Btf<'_>> {
        match &self.converted {
            Some(btf) => Btf::parse(btf),
            None => Btf::parse_raw_or_elf(&self.file, None),
        }
        .map_err(context(&self.name))
    }
}

/// Kernel module `path` (its bytes `data`), a debug `.ko`, converted to split BTF over
/// `base` (named `base_name`; [`btfgen::dwarf_input::convert_module`]) for `purpose`;
/// `dwarf.dwarf_alt` is its supplementary file, if it names one.
pub fn split_module(
    path: &Path,
    data: &[u8],
    base: &SplitBase<'_>,
    base_name: &str,
    dwarf: &DwarfArgs,
    purpose: ConvertFor,
) -> CliResult<btfgen::btf::split::Split> {
    let how = purpose.options();
    btfgen::dwarf_input::convert_module(path, data, base, dwarf.dwarf_alt.as_deref(), &how).map_err(
        |e| match e {
            btfgen::dwarf_input::DwarfInputError::NotTheBase(_) => {
                CliError(format!("{}: {e} ({})", path.display(), base_name))
            }
            e => CliError(format!("{}: {e}", path.display())),
        },
    )
}

/// An input file, by its name as messages give it.
fn load(path: &Path) -> CliResult<(String, Input)> {
    Ok((path.display().to_string(), Input::open(path)?))
}

/// The bytes of a run's target BTFs: the main BTF, its base when it is split, and module BTFs
/// split on it.
pub struct TargetFiles {
    main: (String, Input),
    base: Option<(String, Input)>,
    modules: Vec<(String, Input)>,
    /// The main input's own file when its BTF was converted from its DWARF (kept open so the
    /// check of mapped inputs still covers it).
    dwarf_file: Option<Input>,
    /// Likewise, the debug `.ko` files of the modules converted from their DWARF (held, never
    /// read).
    _module_files: Vec<Input>,
}

impl TargetFiles {
    /// Read every file, naming the one that fails; a main input with DWARF is converted as
    /// `dwarf` says ([`DwarfArgs::convert`]), and so is a module's debug `.ko`, to split BTF
    /// over the main BTF ([`TargetFiles::add_modules`]): their types, for relocating, without
    /// their functions.
    pub fn read(
        main: &Path,
        base: Option<&Path>,
        modules: &[PathBuf],
        dwarf: &DwarfArgs,
    ) -> CliResult<Self> {
        let (name, file) = load(main)?;
        let (main, dwarf_file) = match dwarf.convert(main, &file, ConvertFor::Relocating)? {
            Some(btf) => ((name, Input::Read(btf)), Some(file)),
            None => ((name, file), None),
        };
        let mut files = TargetFiles {
            main,
            base: base.map(load).transpose()?,
            modules: Vec::new(),
            dwarf_file,
            _module_files: Vec::new(),
        };
        files.add_modules(modules, dwarf)?;
        Ok(files)
    }

    /// Read module files `modules` after those already read, keeping the main BTF as it was
    /// read (a debug vmlinux is not converted again when a run falls back on module BTFs).
    /// A module's debug `.ko` is converted to split BTF over the main BTF ([`split_module`];
    /// with `--from-dwarf` even if it has a `.BTF`, whose ids are those of the kernel's own
    /// BTF, not of the converted one); the main BTF is parsed, and its [`SplitBase`] built,
    /// once for all of them.
    pub fn add_modules(&mut self, modules: &[PathBuf], dwarf: &DwarfArgs) -> CliResult<()> {
        let mut loaded: Vec<(String, Input)> =
            modules.iter().map(|p| load(p)).collect::<CliResult<_>>()?;
        if loaded
            .iter()
            .any(|(_, data)| btfgen::dwarf::module_converts(data, dwarf.from_dwarf))
        {
            let main = &self.main;
            if self.base.is_some() {
                return Err(CliError(format!(
                    "{}: a module's DWARF is split over the kernel's BTF, not over split BTF",
                    main.0
                )));
            }
            let kernel = Btf::parse_raw_or_elf(&main.1, None).map_err(context(&main.0))?;
            let split_base = SplitBase::new(&kernel).map_err(context(&main.0))?;
            let module_dwarf = DwarfArgs {
                from_dwarf: true,
                dwarf_alt: None,
            };
            for ((_, data), path) in loaded.iter_mut().zip(modules) {
                if !btfgen::dwarf::module_converts(data, dwarf.from_dwarf) {
                    continue;
                }
                let split = split_module(
                    path,
                    data,
                    &split_base,
                    &main.0,
                    &module_dwarf,
                    ConvertFor::Relocating,
                )?;
                let file = std::mem::replace(data, Input::Read(split.bytes));
                self._module_files.push(file);
            }
        }
        self.modules.extend(loaded);
        Ok(())
    }

    /// Whether the main input's BTF was converted from DWARF.
    pub fn converted_from_dwarf(&self) -> bool {
        self.dwarf_file.is_some()
    }

    /// Targets with only a main BTF built into the binary.
    pub fn embedded(name: &str, bytes: &'static [u8]) -> Self {
        TargetFiles {
            main: (name.to_string(), Input::Embedded(bytes)),
            base: None,
            modules: Vec::new(),
            dwarf_file: None,
            _module_files: Vec::new(),
        }
    }

    /// Total bytes of the main, base and module BTF files.
    pub fn input_len(&self) -> usize {
        self.main.1.len()
            + self.base.as_ref().map_or(0, |b| b.1.len())
            + self.modules.iter().map(|m| m.1.len()).sum::<usize>()
    }

    /// Parse every BTF, then run `f` on the resulting targets. Targets are validated on use
    /// (a run reads a few hundred of a kernel's ~100k types); the minimized output is
    /// validated in full by the library. With a `filter`, each parse also scans its BTF with
    /// it, and `f` gets what each let through, in libbpf's search order
    /// ([`btfgen::core::CandidateIndex::absorb`]).
    pub fn with_targets<T>(
        &self,
        filter: Option<&NameFilter>,
        f: impl FnOnce(&Targets<'_>, &[(BtfSource, &[u32])]) -> CliResult<T>,
    ) -> CliResult<T> {
        let base = match &self.base {
            Some((name, data)) => Some(parse_target(data, None, name, filter)?),
            None => None,
        };
        let (main_name, main_data) = &self.main;
        let main = parse_target(main_data, base.as_ref().map(|b| &b.0), main_name, filter)?;
        let modules = self
            .modules
            .iter()
            .map(|(name, data)| parse_target(data, Some(&main.0), name, filter))
            .collect::<CliResult<Vec<_>>>()?;
        let mut targets = Targets::new(&main.0);
        let mut found = Vec::new();
        if let Some((_, ids)) = &base {
            found.push((BtfSource::Main, &ids[..]));
        }
        found.push((BtfSource::Main, &main.1[..]));
        for (i, (module, ids)) in modules.iter().enumerate() {
            targets.add_module(module).map_err(context("module BTF"))?;
            found.push((BtfSource::Module(i as u16), &ids[..]));
        }
        f(&targets, &found)
    }
}

/// Parse a target BTF (raw or ELF), validated on use; with a filter, also the ids of its own
/// types the filter lets through.
fn parse_target<'a>(
    data: &'a [u8],
    base: Option<&'a Btf<'a>>,
    name: &str,
    filter: Option<&NameFilter>,
) -> CliResult<(Btf<'a>, Vec<u32>)> {
    match filter {
        Some(filter) => Btf::parse_filtered(data, base, Validation::OnUse, filter),
        None => Btf::parse_with(data, base, Validation::OnUse).map(|btf| (btf, Vec::new())),
    }
    .map_err(context(name))
}

/// What a fresh candidate index must find for `objects` (name, object, its parsed `.BTF`), made
/// before the targets are parsed so that each target's parse finds the candidates in its own
/// pass ([`TargetFiles::with_targets`], [`CandidateIndex::absorb`]).
pub fn scan_plan<'a, 'o: 'a>(
    objects: impl IntoIterator<Item = (&'a str, &'a BpfObject<'o>, &'a Btf<'o>)>,
) -> CliResult<ScanPlan<'o>> {
    let mut wanted = Vec::new();
    for (name, object, local) in objects {
        wanted.extend(local_type_names(object, local).map_err(context(name))?);
    }
    CandidateIndex::new()
        .plan(wanted)
        .map_err(context("indexing candidates"))
}
