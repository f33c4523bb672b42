//! libbpf 1.x error conventions at the boundary: pointer-returning functions return NULL and
//! set `errno`, `int` functions return a negative errno. Every entry point runs inside one of
//! the guards below, which also catch panics so that none unwinds into C, and route the
//! library's log to `libbpf_set_print`'s printer.

use super::handle::{self, Tagged};
use super::print;
use crate::error::Error;
use alloc::boxed::Box;
use core::ffi::c_int;
use core::ptr;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// errno reported when a Rust panic (a bug in btfgen) was caught at the boundary. A
/// `btf_reloc_info` that was being changed at that moment reports it from then on.
pub(super) const PANIC_ERRNO: c_int = libc::ENOTRECOVERABLE;

/// A positive errno value carried out of a failed operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Errno(pub(super) c_int);

impl Errno {
    /// Invalid argument or input.
    pub(super) const INVAL: Errno = Errno(libc::EINVAL);
}

/// The system's message for the errno, as `std::io::Error` prints it.
impl core::fmt::Display for Errno {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        std::io::Error::from_raw_os_error(self.0).fmt(f)
    }
}

impl From<Error> for Errno {
    fn from(e: Error) -> Self {
        Errno(match e {
            Error::OutOfMemory => libc::ENOMEM,
            Error::Limit { .. } => libc::E2BIG,
            // libbpf's errno for an ELF file without a `.BTF` section.
            Error::MissingSection(_) => libc::ENODATA,
            _ => libc::EINVAL,
        })
    }
}

impl From<std::io::Error> for Errno {
    fn from(e: std::io::Error) -> Self {
        match e.raw_os_error() {
            Some(code) if code > 0 => Errno(code),
            _ if e.kind() == std::io::ErrorKind::OutOfMemory => Errno(libc::ENOMEM),
            _ => Errno(libc::EIO),
        }
    }
}

impl From<alloc::collections::TryReserveError> for Errno {
    fn from(_: alloc::collections::TryReserveError) -> Self {
        Errno(libc::ENOMEM)
    }
}

/// Set the calling thread's `errno`.
pub(super) fn set_errno(value: c_int) {
    // SAFETY: `__errno_location` returns a valid, aligned pointer to the calling thread's
    // `errno`, which lives as long as the thread; writing an `int` to it is what C's
    // `errno = value` does.
    unsafe { *libc::__errno_location() = value };
}

/// The calling thread's `errno`.
pub(super) fn errno() -> c_int {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Drop a panic payload without letting a panicking `Drop` escape.
fn discard(payload: Box<dyn core::any::Any + Send>) {
    let _ = catch_unwind(AssertUnwindSafe(move || drop(payload)));
}

/// Run a constructor: the new object as an owned, tagged pointer ([`handle::into_raw`]), or
/// NULL with `errno` set.
pub(super) fn guard_ptr<T: Tagged>(f: impl FnOnce() -> Result<T, Errno>) -> *mut T {
    print::install();
    let errno = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(value)) => return handle::into_raw(value),
        Ok(Err(Errno(code))) => code,
        Err(payload) => {
            discard(payload);
            PANIC_ERRNO
        }
    };
    // Last, so that nothing (a destructor calling into libc) can overwrite it.
    set_errno(errno);
    ptr::null_mut()
}

/// Run an `int` function: 0 on success, a negative errno on failure (`errno` is set too, so
/// `errno` and the return value agree).
pub(super) fn guard_int(f: impl FnOnce() -> Result<(), Errno>) -> c_int {
    print::install();
    let errno = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => return 0,
        Ok(Err(Errno(code))) => code,
        Err(payload) => {
            discard(payload);
            PANIC_ERRNO
        }
    };
    set_errno(errno);
    -errno
}

/// Run a function that cannot fail (a destructor, a getter): `fallback` if it panicked, with
/// `errno` set to [`PANIC_ERRNO`].
pub(super) fn guard<R>(fallback: R, f: impl FnOnce() -> R) -> R {
    print::install();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(value) => value,
        Err(payload) => {
            discard(payload);
            set_errno(PANIC_ERRNO);
            fallback
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Seven(u32);
    impl Tagged for Seven {
        const TAG: u64 = u64::from_le_bytes(*b"\xb7BTFG777");
    }

    #[test]
    fn errors_become_errno_values() {
        assert_eq!(Errno::from(Error::OutOfMemory), Errno(libc::ENOMEM));
        assert_eq!(Errno::from(Error::BadHeader("x")), Errno(libc::EINVAL));
        assert_eq!(
            Errno::from(Error::MissingSection(".BTF")),
            Errno(libc::ENODATA)
        );
        let missing = std::fs::File::open("/nonexistent/btfgen").unwrap_err();
        assert_eq!(Errno::from(missing), Errno(libc::ENOENT));
    }

    #[test]
    fn guards_report_errors_through_errno() {
        set_errno(0);
        let p = guard_ptr::<Seven>(|| Err(Errno(libc::ENOENT)));
        assert!(p.is_null());
        assert_eq!(errno(), libc::ENOENT);

        let p = guard_ptr(|| Ok(Seven(7)));
        // SAFETY: `p` came from `guard_ptr` and is freed once.
        unsafe {
            assert_eq!(handle::get(p).map(|s| s.0), Ok(7));
            handle::free(p);
        }

        assert_eq!(guard_int(|| Err(Errno(libc::EBUSY))), -libc::EBUSY);
        assert_eq!(errno(), libc::EBUSY);
        assert_eq!(guard_int(|| Ok(())), 0);
    }

    #[test]
    fn panics_do_not_unwind_out_of_a_guard() {
        let p = guard_ptr::<Seven>(|| panic!("deliberate test panic"));
        assert!(p.is_null());
        assert_eq!(errno(), PANIC_ERRNO);
        assert_eq!(guard_int(|| panic!("deliberate test panic")), -PANIC_ERRNO);
        assert_eq!(guard(5, || panic!("deliberate test panic")), 5);
        assert_eq!(errno(), PANIC_ERRNO);
    }
}
