//! Paths from C strings, input files (read or mapped) and atomic writes.

use super::errno::Errno;
use crate::mapped::FileBytes;
use alloc::vec::Vec;
use core::ffi::{CStr, c_char};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The path a C string names; `EINVAL` for NULL.
///
/// # Safety
///
/// `path` must be NULL or point to a NUL-terminated string that stays valid and unchanged for
/// `'a`.
pub(super) unsafe fn c_path<'a>(path: *const c_char) -> Result<&'a Path, Errno> {
    if path.is_null() {
        return Err(Errno::INVAL);
    }
    // SAFETY: `path` is non-null and, by this function's contract, a NUL-terminated string
    // valid for `'a`.
    let bytes = unsafe { CStr::from_ptr(path) }.to_bytes();
    Ok(Path::new(OsStr::from_bytes(bytes)))
}

/// The UTF-8 name (a program's) a C string holds; `EINVAL` for NULL or non-UTF-8 bytes.
///
/// # Safety
///
/// `name` must be NULL or point to a NUL-terminated string that stays valid and unchanged for
/// `'a`.
pub(super) unsafe fn c_name<'a>(name: *const c_char) -> Result<&'a str, Errno> {
    if name.is_null() {
        return Err(Errno::INVAL);
    }
    // SAFETY: `name` is non-null and, by this function's contract, a NUL-terminated string
    // valid for `'a`.
    let bytes = unsafe { CStr::from_ptr(name) }.to_bytes();
    core::str::from_utf8(bytes).map_err(|_| Errno::INVAL)
}

/// The whole contents of the file at `path`, read ([`crate::mapped::read`]): for objects and
/// BTFs a handle keeps. A directory is `EISDIR`; other failures are the `errno` of the failing
/// system call. The buffer is reserved fallibly from the file's size.
pub(super) fn read(path: &Path) -> Result<Vec<u8>, Errno> {
    crate::mapped::read(path).map_err(super::print::warn_rejected(
        "failed to read",
        &path.display(),
    ))
}

/// The file at `path`, mapped when it is a regular file, read otherwise, as the command maps
/// its inputs ([`crate::mapped::FileBytes::open`]: pages as they are read): for target BTFs,
/// which a session only reads. Errors as [`read`].
pub(super) fn open_input(path: &Path) -> Result<FileBytes, Errno> {
    FileBytes::open(path).map_err(super::print::warn_rejected(
        "failed to read",
        &path.display(),
    ))
}

/// Write `bytes` to `path` atomically and synced ([`crate::fs::write_atomic`]); `EINVAL` for a
/// path without a file name.
pub(super) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Errno> {
    if path.file_name().is_none() {
        return Err(Errno::INVAL);
    }
    crate::fs::write_atomic(path, bytes, crate::fs::Durability::Synced).map_err(Errno::from)
}

/// `Ok` if the input `bytes` is still what was opened ([`FileBytes::check`]); else the change
/// is logged as a rejected input and the error is `EIO`, as the session's own inputs fail.
pub(super) fn check_unchanged(bytes: &FileBytes) -> Result<(), Errno> {
    bytes.check().map_err(|changed| {
        crate::log::bad_input("failed to read", &changed.path, &changed.reason());
        Errno(libc::EIO)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    #[test]
    fn reads_whole_files_and_reports_errno() {
        let dir = std::env::temp_dir().join(format!("btfgen-ffi-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("out.bin");
        write_atomic(&file, b"hello").unwrap();
        assert_eq!(read(&file).unwrap(), b"hello");
        write_atomic(&file, b"bye").unwrap();
        assert_eq!(read(&file).unwrap(), b"bye");
        assert_eq!(read(&dir), Err(Errno(libc::EISDIR)));
        assert_eq!(read(&dir.join("missing")), Err(Errno(libc::ENOENT)));
        // Regular files are mapped, directories refused as when read.
        assert!(matches!(open_input(&file), Ok(FileBytes::Mapped(m)) if &m[..] == b"bye"));
        assert!(matches!(open_input(&dir), Err(Errno(libc::EISDIR))));
        assert_eq!(
            write_atomic(&dir.join("no/such/dir"), b"x"),
            Err(Errno(libc::ENOENT))
        );
        // Only the output is left: no temporary files.
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["out.bin"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
