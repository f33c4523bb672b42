//! The guards every C entry point runs inside: they turn a result into libbpf 1.x's return
//! conventions (NULL with `errno` set, or a negative errno), catch panics so that none unwinds
//! into C, and route the library's log to `libbpf_set_print`'s printer first.

use super::errno::{Errno, set_errno};
use super::handle::{self, Tagged};
use super::print;
use alloc::boxed::Box;
use core::ffi::c_int;
use core::ptr;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// errno reported when a Rust panic (a bug in btfgen) was caught at the boundary. A
/// `btf_reloc_info` that was being changed at that moment reports it from then on.
pub(super) const PANIC_ERRNO: c_int = libc::ENOTRECOVERABLE;

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
    guard_value(|| f().map(|()| 0))
}

/// Run an `int` function whose success is a value `>= 0`; a failure is a negative errno, as
/// for [`guard_int`].
pub(super) fn guard_value(f: impl FnOnce() -> Result<c_int, Errno>) -> c_int {
    print::install();
    let errno = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(value)) => return value,
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
    use crate::ffi::errno::errno;

    struct Seven(u32);
    impl Tagged for Seven {
        const TAG: u64 = u64::from_le_bytes(*b"\xb7BTFG777");
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
