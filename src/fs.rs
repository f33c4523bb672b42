//! File helpers of the `std` feature, shared by the C ABI and the command-line tool.

use std::format;
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
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

/// Symbolic links followed before a path is given up on, as the kernel's `ELOOP` limit.
const MAX_SYMLINKS: usize = 40;

/// The file `path` names after following symbolic links in its last component (a dangling
/// link gives the path it points to): where `fopen(path, "w")` would write.
fn resolve_symlinks(path: &Path) -> io::Result<PathBuf> {
    let mut path = path.to_path_buf();
    for _ in 0..MAX_SYMLINKS {
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(&path)?;
                // A relative target is relative to the link's directory.
                path = match path.parent() {
                    Some(dir) => dir.join(target),
                    None => target,
                };
            }
            _ => return Ok(path),
        }
    }
    Err(io::Error::from_raw_os_error(ELOOP))
}

/// Linux's `ELOOP` (the same on every architecture; `libc` is not a dependency of `std`).
const ELOOP: i32 = 40;

/// Write `bytes` to `path` atomically, with the file semantics of `fopen(path, "w")`: a symbolic
/// link is written through (its target is replaced, the link stays), a new file gets mode
/// `0666 & ~umask`, an existing file keeps its mode. The bytes go into a new temporary file in
/// the target's directory, renamed over the target; on failure the temporary file is removed
/// and the target is untouched.
pub fn write_atomic(path: &Path, bytes: &[u8], durability: Durability) -> io::Result<()> {
    write_atomic_with(path, durability, |file| file.write_all(bytes))
}

/// [`write_atomic`] of what `fill` writes into the file, for outputs too large to hold in
/// memory (the compatibility report of a whole BTFHub tree).
pub fn write_atomic_with(
    path: &Path,
    durability: Durability,
    fill: impl FnOnce(&mut std::fs::File) -> io::Result<()>,
) -> io::Result<()> {
    write_then(path, fill, durability, |tmp, path| {
        std::fs::rename(tmp, path)
    })
}

/// Write `bytes` to `path` atomically unless a file is already there, which is left as it is:
/// for content-addressed stores, where a file at the path holds these very bytes. Unlike
/// [`write_atomic`], writers racing for the same path never replace each other's file, so a
/// hard link one of them made to it keeps naming the stored file.
pub fn write_once(path: &Path, bytes: &[u8], durability: Durability) -> io::Result<()> {
    write_then(
        path,
        |file| file.write_all(bytes),
        durability,
        |tmp, path| {
            // link(2) never replaces an existing name, unlike rename(2).
            match std::fs::hard_link(tmp, path) {
                Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(e),
                _ => std::fs::remove_file(tmp),
            }
        },
    )
}

/// A hidden name beside `path` for a file that is then moved over it, `.NAME.tmp.PID.N`: unique
/// per process and call, so threads writing side by side never share one, and the process id
/// tells a later run whether its writer is gone.
pub fn temporary_path(path: &Path) -> io::Result<PathBuf> {
    static SEQUENCE: AtomicU32 = AtomicU32::new(0);
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file path"))?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let seq = SEQUENCE.fetch_add(1, Ordering::Relaxed);
    Ok(dir.join(format!(
        ".{}.tmp.{}.{seq}",
        name.to_string_lossy(),
        std::process::id()
    )))
}

/// Write what `fill` writes into a new temporary file beside `path` (after following symbolic
/// links), then `publish` it at the resolved path; the temporary file is removed on failure.
fn write_then(
    path: &Path,
    fill: impl FnOnce(&mut std::fs::File) -> io::Result<()>,
    durability: Durability,
    publish: impl FnOnce(&Path, &Path) -> io::Result<()>,
) -> io::Result<()> {
    let path = &resolve_symlinks(path)?;
    let existing_mode = std::fs::metadata(path)
        .ok()
        .filter(|meta| meta.is_file())
        .map(|meta| meta.permissions().mode() & 0o7777);
    let tmp = temporary_path(path)?;
    let result = (|| {
        // `create_new`: never follow or reuse a file someone else put there. The kernel applies
        // the umask to the mode, as for `fopen`'s 0666.
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(existing_mode.unwrap_or(0o666))
            .open(&tmp)?;
        if let Some(mode) = existing_mode
            && file.metadata()?.permissions().mode() & 0o7777 != mode
        {
            // The umask took bits away: set them, so the file keeps exactly its mode. Only
            // then: a chmod writes the inode even when the mode is unchanged, which costs a
            // short run as much as its output's write.
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        fill(&mut file)?;
        if durability == Durability::Synced {
            file.sync_all()?;
        }
        publish(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_through_symlinks_and_keeps_modes() {
        let dir = std::env::temp_dir().join(format!("btfgen-fs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;

        // An existing file keeps its mode.
        let kept = dir.join("kept");
        std::fs::write(&kept, b"old").unwrap();
        std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o600)).unwrap();
        write_atomic(&kept, b"new", Durability::Unsynced).unwrap();
        assert_eq!(std::fs::read(&kept).unwrap(), b"new");
        assert_eq!(mode(&kept), 0o600);
        // Also bits the umask (022 as a rule) takes from a new file's mode.
        std::fs::set_permissions(&kept, std::fs::Permissions::from_mode(0o666)).unwrap();
        write_atomic(&kept, b"newer", Durability::Unsynced).unwrap();
        assert_eq!(std::fs::read(&kept).unwrap(), b"newer");
        assert_eq!(mode(&kept), 0o666);

        // A symlink (relative, two hops, the last dangling) is written through and stays a link.
        let link = dir.join("link");
        let hop = dir.join("hop");
        std::os::unix::fs::symlink("hop", &link).unwrap();
        std::os::unix::fs::symlink("target", &hop).unwrap();
        write_atomic(&link, b"through", Durability::Unsynced).unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read(dir.join("target")).unwrap(), b"through");

        // A link cycle is ELOOP, and nothing is written.
        let cycle = dir.join("cycle");
        std::os::unix::fs::symlink("cycle", &cycle).unwrap();
        let err = write_atomic(&cycle, b"x", Durability::Unsynced).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(ELOOP));

        let mut names: std::vec::Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["cycle", "hop", "kept", "link", "target"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
