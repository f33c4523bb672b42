//! Runtime selection in C ([`crate::select`]): from an archive embedded in the program (or a
//! file), the minimized BTF of the running kernel, or word that the kernel has its own.
//!
//! `btfgen_ensure_core_btf()` / `btfgen_cleanup_core_btf()` replace libbpf-tools'
//! `ensure_core_btf()` / `cleanup_core_btf()`: they fill and clear
//! `bpf_object_open_opts.btf_custom_path` (passed as a pointer to that field, so the call does
//! not depend on which libbpf's struct layout the program was built with).

use super::errno::Errno;
use super::guard::{guard, guard_int, guard_ptr};
use super::handle::{self, Tagged};
use super::{files, opts_size};
use crate::fallible;
use crate::select::archive::Catalogue;
use crate::select::host::Host;
use crate::select::{MatchKind, choose};
use alloc::ffi::CString;
use alloc::vec::Vec;
use core::ffi::{CStr, c_char, c_int, c_void};
use core::mem::{offset_of, size_of};
use core::ptr;
use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Options of the selection functions (libbpf's opts convention: zero it, set `sz` to
/// `sizeof(struct btfgen_select_opts)`; a `sz` below `sizeof(size_t)` or non-zero bytes past
/// the fields this library knows are `EINVAL`). Every field may be zero/NULL.
#[repr(C)]
#[allow(non_camel_case_types)]
pub struct btfgen_select_opts {
    /// Size of this struct, for forward/backward compatibility.
    pub sz: usize,
    /// Where the host's files are (default `/`; `/host` in a container that mounts the host
    /// there): `ROOT/etc/os-release`, else `ROOT/usr/lib/os-release`, and
    /// `ROOT/sys/kernel/btf/vmlinux`.
    pub root: *const c_char,
    /// os-release text to use instead of the root's (NUL-terminated).
    pub os_release: *const c_char,
    /// Kernel release instead of the running kernel's (`uname -r`).
    pub release: *const c_char,
    /// Machine instead of the running one's (`uname -m`).
    pub machine: *const c_char,
    /// Accept `series` matches (off by default).
    pub series: bool,
}

/// End of the last field of [`btfgen_select_opts`] this library knows.
const SELECT_OPTS_KNOWN_END: usize = offset_of!(btfgen_select_opts, series) + size_of::<bool>();

/// How a selection matched (`btfgen select`'s `match`).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum btfgen_match {
    /// No entry for this kernel.
    BTFGEN_MATCH_NONE = 0,
    /// The kernel has its own BTF: nothing to load.
    BTFGEN_MATCH_NATIVE = 1,
    /// `ID/VERSION_ID/uname -m/uname -r` as they are.
    BTFGEN_MATCH_EXACT = 2,
    /// After normalizing the version or machine folder (`8.6` → `8`, `aarch64` → `arm64`).
    BTFGEN_MATCH_NORMALIZED = 3,
    /// Under another distribution (`ID_LIKE`, an Ubuntu derivative, openSUSE Leap on SLES).
    BTFGEN_MATCH_LIKE = 4,
    /// The kernel release alone (the only kernel of that name for this arch).
    BTFGEN_MATCH_RELEASE = 5,
    /// Between two neighbours of the same flavour that share one output (`series` option).
    BTFGEN_MATCH_SERIES = 6,
}

impl From<MatchKind> for btfgen_match {
    fn from(kind: MatchKind) -> Self {
        match kind {
            MatchKind::None => btfgen_match::BTFGEN_MATCH_NONE,
            MatchKind::Native => btfgen_match::BTFGEN_MATCH_NATIVE,
            MatchKind::Exact => btfgen_match::BTFGEN_MATCH_EXACT,
            MatchKind::Normalized => btfgen_match::BTFGEN_MATCH_NORMALIZED,
            MatchKind::Like => btfgen_match::BTFGEN_MATCH_LIKE,
            MatchKind::Release => btfgen_match::BTFGEN_MATCH_RELEASE,
            MatchKind::Series => btfgen_match::BTFGEN_MATCH_SERIES,
        }
    }
}

/// The result of a selection. Created by `btfgen_select_mem()` / `btfgen_select_file()`,
/// freed by `btfgen_selection__free()`.
#[allow(non_camel_case_types)]
pub struct btfgen_selection {
    kind: btfgen_match,
    /// The archive entry (NUL-terminated), empty for `native` and `none`.
    entry: CString,
    /// `DISTRO/VERSION/ARCH/RELEASE` matched or looked for.
    key: CString,
    /// The selected BTF, empty for `native` and `none`.
    btf: Vec<u8>,
}

impl Tagged for btfgen_selection {
    const TAG: u64 = u64::from_le_bytes(*b"\xb7BTFGsel");
}

/// A C string option, `None` for NULL.
///
/// # Safety
///
/// `s` must be NULL or a NUL-terminated string valid for `'a`.
unsafe fn c_str<'a>(s: *const c_char) -> Option<&'a [u8]> {
    // SAFETY: the caller's contract.
    (!s.is_null()).then(|| unsafe { CStr::from_ptr(s) }.to_bytes())
}

fn utf8(bytes: &[u8]) -> Result<&str, Errno> {
    core::str::from_utf8(bytes).map_err(|_| Errno::INVAL)
}

fn c_string(s: &str) -> Result<CString, Errno> {
    let mut bytes = fallible::vec_with_capacity(s.len().saturating_add(1))?;
    bytes.extend_from_slice(s.as_bytes());
    CString::new(bytes).map_err(|_| Errno::INVAL)
}

/// Select from `archive` for the machine `opts` describes.
///
/// # Safety
///
/// `opts` must be NULL or valid for reading `opts->sz` bytes, its strings NULL or
/// NUL-terminated.
unsafe fn select(
    archive: &[u8],
    opts: *const btfgen_select_opts,
) -> Result<btfgen_selection, Errno> {
    // SAFETY: the caller's contract.
    let sz = unsafe { opts_size(opts.cast(), SELECT_OPTS_KNOWN_END) }?.unwrap_or(0);
    let field = |end: usize| sz >= end;
    // SAFETY (each read below): `opts` is non-null when `sz > 0`, and a field is read only when
    // it lies within the first `sz` bytes.
    let read_str = |offset: usize| -> Option<&[u8]> {
        if !field(offset + size_of::<*const c_char>()) {
            return None;
        }
        // SAFETY: see above; the string is NULL or NUL-terminated (the caller's contract).
        unsafe { c_str(opts.cast::<u8>().add(offset).cast::<*const c_char>().read()) }
    };
    let root = read_str(offset_of!(btfgen_select_opts, root));
    let os_release = read_str(offset_of!(btfgen_select_opts, os_release));
    let release = read_str(offset_of!(btfgen_select_opts, release))
        .map(utf8)
        .transpose()?;
    let machine = read_str(offset_of!(btfgen_select_opts, machine))
        .map(utf8)
        .transpose()?;
    let series = field(SELECT_OPTS_KNOWN_END)
        // SAFETY: see above.
        && unsafe { ptr::addr_of!((*opts).series).read() };
    let root = Path::new(OsStr::from_bytes(root.unwrap_or(b"/")));
    let host = Host::read(
        root,
        os_release.map(|text| (Path::new("btfgen_select_opts.os_release"), text)),
        release,
        machine,
    )
    .map_err(|e| {
        crate::log::bad_input("unreadable identity file", &e.path.display(), &e.error);
        e.error
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::raw_os_error)
            .map_or(Errno::INVAL, Errno)
    })?;
    let request = host.request(series);
    let catalogue = if request.native {
        Catalogue::default()
    } else {
        Catalogue::read(archive)?
    };
    let selection = choose(&catalogue, &request)?;
    let entry = selection.entry.and_then(|i| catalogue.entries.get(i));
    let btf = match entry {
        Some(e) => Catalogue::extract(archive, e)?,
        None => Vec::new(),
    };
    let k = &selection.key;
    let mut key = alloc::string::String::new();
    for (i, part) in [&k.distro, &k.version, &k.arch, &k.release]
        .into_iter()
        .enumerate()
    {
        if i > 0 {
            fallible::extend_str(&mut key, "/")?;
        }
        fallible::extend_str(&mut key, part)?;
    }
    Ok(btfgen_selection {
        kind: selection.kind.into(),
        entry: c_string(entry.map_or("", |e| e.path.as_str()))?,
        key: c_string(&key)?,
        btf,
    })
}

/// Selects, from the archive of `size` bytes at `archive` (embedded in the program with
/// `ld -r -b binary` or `.incbin`, or read by the caller), the BTF of the running kernel or of
/// the machine `opts` describes (NULL: this machine, root `/`). The archive is one
/// `btfgen batch --dedup --archive` writes, a BTFHub tree or bcc's `btfs/` layout, as `.tar`,
/// `.tar.gz` or `.tar.xz`; it is read in two streaming passes, without inflating more than
/// its index and the one member.
///
/// Returns the selection (`btfgen_selection__match()` says how it matched; `none` is a
/// selection too), or NULL with `errno` set: `EINVAL` (NULL `archive`, invalid `opts`, a
/// corrupt or truncated archive, an unreadable os-release), `E2BIG` (a limit of the archive
/// reader), `ENOMEM`. Free with `btfgen_selection__free()`.
///
/// # Safety
///
/// `archive` must be valid for reading `size` bytes; `opts` NULL or valid for reading
/// `opts->sz` bytes, its strings NULL or NUL-terminated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn btfgen_select_mem(
    archive: *const c_void,
    size: usize,
    opts: *const btfgen_select_opts,
) -> *mut btfgen_selection {
    guard_ptr(|| {
        if archive.is_null() {
            return Err(Errno::INVAL);
        }
        // SAFETY: the caller guarantees `size` readable bytes at `archive`.
        let bytes = unsafe { core::slice::from_raw_parts(archive.cast::<u8>(), size) };
        // SAFETY: the caller's contract on `opts`.
        unsafe { select(bytes, opts) }
    })
}

/// As `btfgen_select_mem()`, with the archive read from the file at `path`. Also `ENOENT`,
/// `EISDIR` or another `open`/`read` errno.
///
/// # Safety
///
/// `path` must be NULL or a NUL-terminated string; `opts` as for `btfgen_select_mem()`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn btfgen_select_file(
    path: *const c_char,
    opts: *const btfgen_select_opts,
) -> *mut btfgen_selection {
    guard_ptr(|| {
        // SAFETY: the caller passes NULL or a NUL-terminated string, valid during this call.
        let path = unsafe { files::c_path(path) }?;
        let bytes = files::read(path)?;
        // SAFETY: the caller's contract on `opts`.
        unsafe { select(&bytes, opts) }
    })
}

/// How `sel` matched; `BTFGEN_MATCH_NONE` for NULL (or a pointer this library did not make,
/// with `errno` = `EINVAL`).
///
/// # Safety
///
/// `sel` must be NULL or a selection not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn btfgen_selection__match(sel: *const btfgen_selection) -> btfgen_match {
    guard(btfgen_match::BTFGEN_MATCH_NONE, || {
        // SAFETY: the caller's contract.
        unsafe { handle::get(sel) }.map_or(btfgen_match::BTFGEN_MATCH_NONE, |s| s.kind)
    })
}

/// The archive entry selected (`ubuntu/20.04/x86_64/5.4.0-100-generic.btf`), or NULL for
/// `native`, `none` and a NULL `sel`. Valid until `btfgen_selection__free(sel)`.
///
/// # Safety
///
/// `sel` must be NULL or a selection not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn btfgen_selection__entry(sel: *const btfgen_selection) -> *const c_char {
    guard(ptr::null(), || {
        // SAFETY: the caller's contract.
        match unsafe { handle::get(sel) } {
            Ok(s) if !s.entry.is_empty() => s.entry.as_ptr(),
            _ => ptr::null(),
        }
    })
}

/// The key matched (`DISTRO/VERSION/ARCH/RELEASE`; for `none`, the first one looked for), or
/// NULL for a NULL `sel`. Valid until `btfgen_selection__free(sel)`.
///
/// # Safety
///
/// `sel` must be NULL or a selection not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn btfgen_selection__key(sel: *const btfgen_selection) -> *const c_char {
    guard(ptr::null(), || {
        // SAFETY: the caller's contract.
        unsafe { handle::get(sel) }.map_or(ptr::null(), |s| s.key.as_ptr())
    })
}

/// The selected BTF's bytes, its size in `*size` (if `size` is not NULL); NULL (size 0) for
/// `native`, `none` and a NULL `sel`. Valid until `btfgen_selection__free(sel)`.
///
/// # Safety
///
/// `sel` must be NULL or a selection not yet freed; `size` NULL or valid for writing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn btfgen_selection__btf(
    sel: *const btfgen_selection,
    size: *mut usize,
) -> *const c_void {
    guard(ptr::null(), || {
        // SAFETY: the caller's contract.
        let btf = unsafe { handle::get(sel) }.map_or(&[][..], |s| s.btf.as_slice());
        if !size.is_null() {
            // SAFETY: `size` is non-null and valid for writing (the caller's contract).
            unsafe { size.write(btf.len()) };
        }
        if btf.is_empty() {
            ptr::null()
        } else {
            btf.as_ptr().cast()
        }
    })
}

/// Frees `sel`. NULL is a no-op.
///
/// # Safety
///
/// `sel` must be NULL or a selection not yet freed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn btfgen_selection__free(sel: *mut btfgen_selection) {
    // SAFETY: the caller's contract.
    guard((), || unsafe { handle::free(sel) })
}

/// Writes `btf` to a new private file (`$TMPDIR` or `/tmp`, `mkstemp`: created exclusively,
/// mode 0600) and returns its path.
fn write_private(btf: &[u8]) -> Result<CString, Errno> {
    let dir = std::env::var_os("TMPDIR")
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| "/tmp".into());
    let mut template = fallible::to_vec(dir.as_bytes())?;
    fallible::extend(&mut template, b"/btfgen-core-btf.XXXXXX\0")?;
    // SAFETY: `template` is a writable NUL-terminated buffer ending in "XXXXXX", as `mkstemp`
    // requires; it replaces the X's in place.
    let fd = unsafe { libc::mkstemp(template.as_mut_ptr().cast()) };
    if fd < 0 {
        return Err(Errno(super::errno::errno()));
    }
    // SAFETY: `fd` is a file descriptor `mkstemp` just opened, owned by nothing else.
    let mut file = unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    template.pop();
    let path = CString::new(template).map_err(|_| Errno::INVAL)?;
    if let Err(e) = file.write_all(btf) {
        let _ = std::fs::remove_file(OsStr::from_bytes(path.as_bytes()));
        return Err(e.into());
    }
    Ok(path)
}

/// libbpf-tools' `ensure_core_btf()` in one call: selects as `btfgen_select_mem()` does and,
/// unless the kernel has its own BTF, writes the selected BTF to a private temporary file
/// (`mkstemp` under `$TMPDIR` or `/tmp`, mode 0600) and stores its path in
/// `*btf_custom_path` (pass `&open_opts.btf_custom_path`). For a `native` kernel
/// `*btf_custom_path` is set to NULL: libbpf then uses the kernel's BTF.
///
/// Returns 0, or a negative errno: `-ENOENT` (the archive has no BTF for this kernel), and as
/// `btfgen_select_mem()`; `*btf_custom_path` is then NULL. Undo with
/// `btfgen_cleanup_core_btf(btf_custom_path)` after `bpf_object__open*()`.
///
/// # Safety
///
/// As `btfgen_select_mem()`; `btf_custom_path` must be valid for reading and writing a
/// pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn btfgen_ensure_core_btf(
    archive: *const c_void,
    size: usize,
    opts: *const btfgen_select_opts,
    btf_custom_path: *mut *const c_char,
) -> c_int {
    guard_int(|| {
        if archive.is_null() || btf_custom_path.is_null() {
            return Err(Errno::INVAL);
        }
        // SAFETY: `btf_custom_path` is non-null and writable (the caller's contract).
        unsafe { btf_custom_path.write(ptr::null()) };
        // SAFETY: the caller guarantees `size` readable bytes at `archive`.
        let bytes = unsafe { core::slice::from_raw_parts(archive.cast::<u8>(), size) };
        // SAFETY: the caller's contract on `opts`.
        let sel = unsafe { select(bytes, opts) }?;
        match sel.kind {
            btfgen_match::BTFGEN_MATCH_NATIVE => Ok(()),
            btfgen_match::BTFGEN_MATCH_NONE => Err(Errno(libc::ENOENT)),
            _ => {
                let path = write_private(&sel.btf)?;
                // SAFETY: as above; the string is freed by `btfgen_cleanup_core_btf`.
                unsafe { btf_custom_path.write(path.into_raw()) };
                Ok(())
            }
        }
    })
}

/// libbpf-tools' `cleanup_core_btf()`: removes the file `btfgen_ensure_core_btf()` wrote, frees
/// its path and sets `*btf_custom_path` to NULL. NULL, or a NULL `*btf_custom_path`, is a
/// no-op.
///
/// # Safety
///
/// `btf_custom_path` must be NULL or valid for reading and writing a pointer that is NULL or
/// was set by `btfgen_ensure_core_btf()` and not cleaned up since.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn btfgen_cleanup_core_btf(btf_custom_path: *mut *const c_char) {
    guard((), || {
        if btf_custom_path.is_null() {
            return;
        }
        // SAFETY: non-null and readable (the caller's contract).
        let path = unsafe { btf_custom_path.read() };
        if path.is_null() {
            return;
        }
        // SAFETY: `path` came from `CString::into_raw` in `btfgen_ensure_core_btf` and is
        // reclaimed once: the field is cleared right after.
        let path = unsafe { CString::from_raw(path.cast_mut()) };
        // SAFETY: writable (the caller's contract).
        unsafe { btf_custom_path.write(ptr::null()) };
        let _ = std::fs::remove_file(OsStr::from_bytes(path.as_bytes()));
    })
}
