//! `btfgen encode INPUT OUTPUT`: the whole BTF of an ELF file's DWARF (a debug vmlinux), as
//! `pahole --btf_encode_detached` writes it: every type of every unit, deduplicated, for
//! `bpftool btf dump file OUTPUT format c` (a `vmlinux.h` for a kernel without BTF) or for an
//! archive of full kernel BTFs. The main job never needs it: `min-core-btf` converts only in
//! memory. With `--base-btf BASE`, INPUT is a kernel module's debug `.ko` and the output its
//! split BTF over BASE, as `pahole -J --btf_base BASE` writes it.

use super::{BaseInput, CliError, CliResult, ConvertFor, DwarfArgs, Input, context, write_atomic};
use btfgen::btf::Btf;
use btfgen::btf::split::SplitBase;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

/// Arguments of `btfgen encode`.
#[derive(clap::Args)]
pub struct EncodeArgs {
    /// ELF file with DWARF (a distribution's debug vmlinux); a .BTF section in it is ignored.
    pub input: PathBuf,
    /// Where to write the BTF (raw, as /sys/kernel/btf/vmlinux), replaced atomically.
    pub output: PathBuf,
    /// The supplementary file of a dwz -m INPUT (named by its .gnu_debugaltlink or
    /// .debug_sup); default: looked for at the path it names, next to INPUT, and under
    /// /usr/lib/debug/.build-id/.
    #[arg(long, value_name = "FILE")]
    pub dwarf_alt: Option<PathBuf>,
    /// The kernel whose module INPUT is (raw BTF, an ELF file's .BTF, or an ELF file with
    /// DWARF and no .BTF such as a debug vmlinux, converted first): OUTPUT is then INPUT's
    /// split BTF over it, as pahole -J writes it with BASE as its base BTF.
    #[arg(long, value_name = "BASE")]
    pub base_btf: Option<PathBuf>,
}

/// Run `btfgen encode`.
pub fn run(args: &EncodeArgs) -> CliResult<ExitCode> {
    let started = Instant::now();
    let name = args.input.display();
    let input = Input::open(&args.input)?;
    let dwarf = DwarfArgs {
        from_dwarf: true,
        dwarf_alt: args.dwarf_alt.clone(),
    };
    let (btf, types) = match &args.base_btf {
        Some(base_path) => {
            let base = BaseInput::read(base_path)?;
            let base_btf = base.parse()?;
            let split_base = SplitBase::new(&base_btf).map_err(context(base_path.display()))?;
            let split = super::split_module(
                &args.input,
                &input,
                &split_base,
                &base_path.display().to_string(),
                &dwarf,
                ConvertFor::WholeBtf,
            )?;
            (split.bytes, split.split_types)
        }
        None => {
            let btf = dwarf
                .convert(&args.input, &input, ConvertFor::WholeBtf)?
                .ok_or_else(|| CliError(format!("internal error: {name}: not converted")))?;
            let types = Btf::parse(&btf)
                .map_err(|e| CliError(format!("internal error: {name}: the converted BTF: {e}")))?
                .type_cnt()
                - 1;
            (btf, types)
        }
    };
    // Read while mapped: a change meanwhile fails the write, which leaves no output.
    write_atomic(&args.output, &btf)?;
    if !super::quiet() {
        stderr_line!(
            "btfgen: {name}: {} bytes of ELF -> {types} types / {} bytes of BTF in {} ({:.1} ms)",
            input.len(),
            btf.len(),
            args.output.display(),
            started.elapsed().as_secs_f64() * 1e3,
        );
    }
    Ok(ExitCode::SUCCESS)
}
