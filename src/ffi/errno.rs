//! errno values at the C boundary: [`Errno`], what a failed operation reports (libbpf 1.x
//! conventions: NULL and `errno` set, or a negative errno), and the calling thread's `errno`.

use crate::error::Error;
use core::ffi::c_int;

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

/// A DWARF input whose supplementary file is missing is `ENOENT`, as a missing input is; a
/// module of another kernel is `EINVAL`.
impl From<crate::dwarf_input::DwarfInputError> for Errno {
    fn from(e: crate::dwarf_input::DwarfInputError) -> Self {
        match e {
            crate::dwarf_input::DwarfInputError::Convert(e) => e.into(),
            crate::dwarf_input::DwarfInputError::Supplementary(_) => Errno(libc::ENOENT),
            // Split BTF over the wrong base: invalid, as a module BTF not split on the target.
            crate::dwarf_input::DwarfInputError::NotTheBase(_) => Errno::INVAL,
        }
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
