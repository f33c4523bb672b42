//! File helpers of the `std` feature, shared by the C ABI and the command-line tool.

use std::format;
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// Whether [`write_atomic`] syncs the file before renaming it into place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// fsync before the rename: the new contents survive a power loss (libbpf's
    /// `btf__save_to_file` callers expect a finished file).
    Synced,
    /// Rename only: no reader and no failed run ever sees a partial file, but a power loss may
    /// lose the new contents (bpftool does not sync either, and a sync costs more than the
    /// whole main job).
    Unsynced,
}

/// Write `bytes` to `path` atomically: into a new temporary file in the same directory, then
/// renamed over `path`. On failure the temporary file is removed and `path` is untouched.
pub fn write_atomic(path: &Path, bytes: &[u8], durability: Durability) -> io::Result<()> {
    // Unique per process and call, so threads writing side by side never share a name.
    static SEQUENCE: AtomicU32 = AtomicU32::new(0);
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file path"))?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let seq = SEQUENCE.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(
        ".{}.tmp.{}.{seq}",
        name.to_string_lossy(),
        std::process::id()
    ));
    let result = (|| {
        // `create_new`: never follow or reuse a file someone else put there.
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(&tmp)?;
        file.write_all(bytes)?;
        if durability == Durability::Synced {
            file.sync_all()?;
        }
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
