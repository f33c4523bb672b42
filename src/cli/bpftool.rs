//! bpftool's spellings, so that a script written for bpftool runs with btfgen by changing the
//! program name: `btfgen gen min_core_btf INPUT OUTPUT OBJECT...` (`btfgen min-core-btf`) and
//! `btfgen btf dump file FILE [format raw]` (`btfgen dump`).
//!
//! The exit status is bpftool's: 0 on success, and a failed command's negative errno as a byte,
//! the way bpftool's `main` returns it: 255 for a usage error (`-1`), 254 for a missing file
//! (`-ENOENT`), 251 for a directory (`-EIO`, libbpf cannot read it), 234 for invalid BTF, an
//! invalid object or a relocation libbpf fails (`-EINVAL`), 95 for a file that is neither BTF
//! nor ELF (libbpf's `-LIBBPF_ERRCODE__FORMAT`).

use super::CliResult;
use super::dump::{self, DumpArgs};
use super::min_core_btf::{self, MinCoreBtfArgs};
use btfgen::btf::Btf;
use btfgen::object::BpfObject;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// bpftool's status for a usage error (`return -1`).
const USAGE: u8 = 255;
/// `-ENOENT` as an exit status.
const ENOENT: u8 = (256 - 2) as u8;
/// `-EINVAL` as an exit status.
const EINVAL: u8 = (256 - 22) as u8;
/// `-EIO` as an exit status.
const EIO: u8 = (256 - 5) as u8;
/// libbpf's `-LIBBPF_ERRCODE__FORMAT` (-4001) as an exit status: neither BTF nor ELF.
const FORMAT: u8 = (4096 - 4001) as u8;
/// Raw BTF starts with this magic (either byte order); anything else is tried as ELF.
const BTF_MAGIC: [[u8; 2]; 2] = [[0x9f, 0xeb], [0xeb, 0x9f]];

/// Arguments of `btfgen gen`: bpftool's `gen` command, of which `min_core_btf` is supported.
#[derive(clap::Args)]
pub struct GenArgs {
    /// `min_core_btf INPUT OUTPUT OBJECT...`
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "ARGS"
    )]
    args: Vec<OsString>,
}

/// Arguments of `btfgen btf`: bpftool's `btf` command, of which `dump file FILE [format raw]`
/// is supported.
#[derive(clap::Args)]
pub struct BtfArgs {
    /// `dump file FILE [format raw]`
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "ARGS"
    )]
    args: Vec<OsString>,
}

/// Like bpftool's `is_prefix`: `word` is a (non-empty) prefix of `command`.
fn is_prefix(word: &OsString, command: &str) -> bool {
    !word.is_empty() && command.as_bytes().starts_with(word.as_encoded_bytes())
}

/// Print `message` and return bpftool's status `code`.
fn fail(code: u8, message: impl std::fmt::Display) -> CliResult<ExitCode> {
    stderr_line!("btfgen: {message}");
    Ok(ExitCode::from(code))
}

/// Run `btfgen gen ...`.
pub fn run_gen(args: &GenArgs) -> CliResult<ExitCode> {
    let usage = "usage: btfgen gen min_core_btf INPUT OUTPUT OBJECT [OBJECT...]";
    let Some((command, rest)) = args.args.split_first() else {
        return fail(USAGE, usage);
    };
    if !is_prefix(command, "min_core_btf") {
        return fail(
            USAGE,
            format!(
                "gen {}: not supported by btfgen ({usage})",
                command.to_string_lossy()
            ),
        );
    }
    if rest.len() < 3 {
        return fail(
            USAGE,
            format!(
                "'min_core_btf' needs at least 3 arguments, {} found ({usage})",
                rest.len()
            ),
        );
    }
    let paths: Vec<PathBuf> = rest.iter().map(PathBuf::from).collect();
    let (input, output, objects) = (&paths[0], &paths[1], &paths[2..]);
    let run = min_core_btf::run(&MinCoreBtfArgs::bpftool(
        input.clone(),
        output.clone(),
        objects.to_vec(),
    ));
    match run {
        Ok(code) => Ok(code),
        Err(e) => {
            // Which file failed decides the status, in the order bpftool opens them.
            let code = btf_status(input)
                .or_else(|| objects.iter().find_map(|o| object_status(o)))
                .or_else(|| output_status(output))
                .unwrap_or(EINVAL);
            fail(code, e)
        }
    }
}

/// Run `btfgen btf ...`.
pub fn run_btf(args: &BtfArgs) -> CliResult<ExitCode> {
    let usage = "usage: btfgen btf dump file FILE [format raw]";
    let words = &args.args;
    match words.first() {
        Some(w) if is_prefix(w, "dump") => {}
        Some(w) => {
            return fail(
                USAGE,
                format!(
                    "btf {}: not supported by btfgen ({usage})",
                    w.to_string_lossy()
                ),
            );
        }
        None => return fail(USAGE, usage),
    }
    let rest = &words[1..];
    if rest.len() < 2 {
        return fail(
            USAGE,
            format!(
                "'dump' needs at least 2 arguments, {} found ({usage})",
                rest.len()
            ),
        );
    }
    if rest[0] != "file" {
        return fail(
            USAGE,
            format!(
                "btf dump {}: only 'file FILE' is supported by btfgen ({usage})",
                rest[0].to_string_lossy()
            ),
        );
    }
    let file = PathBuf::from(&rest[1]);
    match &rest[2..] {
        [] => {}
        [format] if is_prefix(format, "format") => {
            return fail(EINVAL, "expecting value for 'format' option");
        }
        [format, value] if is_prefix(format, "format") => {
            if value == "c" {
                return fail(
                    EINVAL,
                    "format c is not supported by btfgen (format raw is)",
                );
            }
            if value != "raw" {
                return fail(
                    EINVAL,
                    format!(
                        "unrecognized format specifier: '{}', possible values: raw, c",
                        value.to_string_lossy()
                    ),
                );
            }
        }
        [format, _, other, ..] if is_prefix(format, "format") => {
            return fail(
                EINVAL,
                format!("unrecognized option: '{}'", other.to_string_lossy()),
            );
        }
        [other, ..] => {
            return fail(
                EINVAL,
                format!("unrecognized option: '{}'", other.to_string_lossy()),
            );
        }
    }
    match dump::run(&DumpArgs {
        file: file.clone(),
        base_btf: None,
        dwarf: super::DwarfArgs::default(),
    }) {
        Ok(code) => Ok(code),
        Err(e) => {
            let code = btf_status(&file).unwrap_or(EINVAL);
            fail(code, e)
        }
    }
}

/// The status of a file that cannot be read: its `-errno` (a directory: `-EIO`, as libbpf).
fn read_status(path: &Path) -> Result<Vec<u8>, u8> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::IsADirectory => Err(EIO),
        Err(e) => Err(e
            .raw_os_error()
            .map_or(EIO, |errno| (256 - (errno & 0xff)) as u8)),
    }
}

/// bpftool's status for a BTF file (raw, or an ELF file's `.BTF`) that fails to load, or
/// `None` if it loads.
fn btf_status(path: &Path) -> Option<u8> {
    let data = match read_status(path) {
        Ok(data) => data,
        Err(code) => return Some(code),
    };
    if BTF_MAGIC.iter().any(|m| data.starts_with(m)) {
        return Btf::parse(&data).err().map(|_| EINVAL);
    }
    match BpfObject::parse(&data) {
        Err(_) => Some(FORMAT),
        Ok(obj) => match obj.btf_bytes().map(Btf::parse) {
            Some(Ok(_)) => None,
            _ => Some(EINVAL),
        },
    }
}

/// bpftool's status for an object that fails to open, or `None` if it opens.
fn object_status(path: &Path) -> Option<u8> {
    let data = match read_status(path) {
        Ok(data) => data,
        Err(code) => return Some(code),
    };
    match BpfObject::parse(&data) {
        Err(btfgen::Error::BadElf(_)) => Some(FORMAT),
        Err(_) => Some(EINVAL),
        Ok(_) => None,
    }
}

/// `-ENOENT` when OUTPUT's directory does not exist (bpftool's save fails so).
fn output_status(output: &Path) -> Option<u8> {
    let dir = match output.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    (!dir.is_dir()).then_some(ENOENT)
}
