//! Subcommands of the `btfgen` binary, plus the file helpers they share.

pub mod dump;

use std::fmt;
use std::path::{Path, PathBuf};

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

/// Write `bytes` to `path` atomically: a temporary file in the same directory, then rename, so
/// no partial output is ever left behind.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> CliResult<()> {
    use std::io::Write;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let file_name = path
        .file_name()
        .ok_or_else(|| CliError(format!("{}: not a file path", path.display())))?;
    let tmp = dir.join(format!(".{}.tmp.{}", file_name.to_string_lossy(), std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        CliError(format!("{}: {e}", path.display()))
    })
}
