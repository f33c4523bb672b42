//! `btfgen dump FILE [--base-btf BASE]`: print every type of a BTF exactly as
//! `bpftool btf dump file FILE [--base-btf BASE]` does.

use super::{
    CliError, CliResult, ConvertFor, DwarfArgs, SYSFS_BTF_DIR, SYSFS_VMLINUX, context, read_file,
};
use btfgen::btf::{Btf, dump};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Flush the dump to stdout in chunks of about this many bytes, so memory stays bounded and
/// each write is one large syscall.
const CHUNK: usize = 64 * 1024;

/// Arguments of `btfgen dump`.
#[derive(clap::Args)]
pub struct DumpArgs {
    /// Raw BTF file, ELF file with a .BTF section, or ELF file with DWARF and no .BTF
    /// (converted to BTF first).
    pub file: PathBuf,
    /// Base BTF when FILE is split BTF; only FILE's own types are printed, numbered after the
    /// base's. Defaults to /sys/kernel/btf/vmlinux for other files under /sys/kernel/btf/, as
    /// bpftool does.
    #[arg(long)]
    pub base_btf: Option<PathBuf>,
    #[command(flatten)]
    pub dwarf: DwarfArgs,
}

/// Run `btfgen dump`.
pub fn run(args: &DumpArgs) -> CliResult<ExitCode> {
    let base_path = args.base_btf.as_deref().or_else(|| sysfs_base(&args.file));
    let base_data = base_path.map(read_file).transpose()?;
    let base = match (base_path, &base_data) {
        (Some(path), Some(data)) => {
            Some(Btf::parse_raw_or_elf(data, None).map_err(context(path.display()))?)
        }
        _ => None,
    };
    let data = read_file(&args.file)?;
    let converted = args
        .dwarf
        .convert(&args.file, &data, ConvertFor::WholeBtf)?;
    let bytes = converted.as_deref().unwrap_or(&data);
    let btf = Btf::parse_raw_or_elf(bytes, base.as_ref()).map_err(context(args.file.display()))?;
    match write_dump(&btf, &args.file) {
        // The reader went away (`btfgen dump ... | head`): the output it wanted is written.
        Err(DumpError::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(DumpError::Io(e)) => Err(CliError(format!("writing to stdout: {e}"))),
        Err(DumpError::Cli(e)) => Err(e),
        Ok(()) => Ok(ExitCode::SUCCESS),
    }
}

/// bpftool's implicit base: module BTF under /sys/kernel/btf/ is split on vmlinux.
fn sysfs_base(file: &Path) -> Option<&'static Path> {
    (file.starts_with(SYSFS_BTF_DIR) && file != Path::new(SYSFS_VMLINUX))
        .then(|| Path::new(SYSFS_VMLINUX))
}

/// Output errors are told apart from dump errors so a closed pipe can end the dump quietly.
enum DumpError {
    Io(io::Error),
    Cli(CliError),
}

fn write_dump(btf: &Btf<'_>, path: &Path) -> Result<(), DumpError> {
    let mut stdout = io::stdout().lock();
    let mut buf = String::new();
    buf.try_reserve(CHUNK * 2)
        .map_err(|e| DumpError::Cli(context(path.display())(e)))?;
    for entry in btf.entries() {
        entry
            .and_then(|entry| dump::dump_entry(btf, &entry, &mut buf))
            .map_err(|e| DumpError::Cli(context(path.display())(e)))?;
        if buf.len() >= CHUNK {
            stdout.write_all(buf.as_bytes()).map_err(DumpError::Io)?;
            buf.clear();
        }
    }
    stdout.write_all(buf.as_bytes()).map_err(DumpError::Io)?;
    stdout.flush().map_err(DumpError::Io)
}
