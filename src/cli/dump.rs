//! `btfgen dump FILE [--base-btf BASE]`.
use super::CliResult;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `btfgen dump`.
#[derive(clap::Args)]
pub struct DumpArgs {
    /// Raw BTF file or ELF file with a .BTF section.
    pub file: PathBuf,
    /// Base BTF when FILE is split BTF.
    #[arg(long)]
    pub base_btf: Option<PathBuf>,
}

/// Run `btfgen dump`.
pub fn run(_args: &DumpArgs) -> CliResult<ExitCode> {
    Ok(ExitCode::SUCCESS)
}
