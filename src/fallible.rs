//! Fallible-allocation helpers: the core never aborts on out-of-memory, it returns
//! [`Error::OutOfMemory`]. Every growth of a `Vec`, `String` or map goes through here or
//! through `try_reserve` directly.

use crate::error::{Error, Result};
use alloc::string::String;
use alloc::vec::Vec;

/// Push onto a vector, reserving fallibly first.
pub fn push<T>(vec: &mut Vec<T>, value: T) -> Result<()> {
    vec.try_reserve(1)?;
    vec.push(value);
    Ok(())
}

/// An empty vector with room for `capacity` elements, allocated fallibly.
pub fn vec_with_capacity<T>(capacity: usize) -> Result<Vec<T>> {
    let mut vec = Vec::new();
    vec.try_reserve_exact(capacity)?;
    Ok(vec)
}

/// Copy a slice into a new vector, allocated fallibly.
pub fn to_vec<T: Clone>(slice: &[T]) -> Result<Vec<T>> {
    let mut vec = vec_with_capacity(slice.len())?;
    vec.extend_from_slice(slice);
    Ok(vec)
}

/// Append a slice to a vector, reserving fallibly first.
pub fn extend<T: Clone>(vec: &mut Vec<T>, slice: &[T]) -> Result<()> {
    vec.try_reserve(slice.len())?;
    vec.extend_from_slice(slice);
    Ok(())
}

/// Copy a string, allocated fallibly.
pub fn to_string(s: &str) -> Result<String> {
    let mut out = String::new();
    out.try_reserve_exact(s.len())?;
    out.push_str(s);
    Ok(out)
}

/// Append a string slice to a string, reserving fallibly first.
pub fn extend_str(out: &mut String, s: &str) -> Result<()> {
    out.try_reserve(s.len())?;
    out.push_str(s);
    Ok(())
}

/// A `core::fmt::Write` sink over a `String` that reserves fallibly and remembers whether an
/// allocation failed, so `write!` into it never aborts.
pub struct StringSink<'a> {
    out: &'a mut String,
    failed: bool,
}

impl<'a> StringSink<'a> {
    /// Wrap `out`.
    pub fn new(out: &'a mut String) -> Self {
        StringSink { out, failed: false }
    }

    /// `Ok` unless a write ran out of memory.
    pub fn finish(self) -> Result<()> {
        if self.failed {
            Err(Error::OutOfMemory)
        } else {
            Ok(())
        }
    }
}

impl core::fmt::Write for StringSink<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        if self.out.try_reserve(s.len()).is_err() {
            self.failed = true;
            return Err(core::fmt::Error);
        }
        self.out.push_str(s);
        Ok(())
    }
}
