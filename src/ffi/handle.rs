//! The objects C callers hold (`struct btf *`, `struct bpf_object *`, `struct btf_reloc_info *`)
//! are allocated with a tag word in front, so that a pointer this library did not create is
//! refused with `EINVAL` instead of being used. That happens when a program links both libbpf
//! and libbtfgen: each shared name resolves to whichever library comes first, and an object made
//! by one library's function can reach the other library's.

use super::errno::{self, Errno};
use alloc::boxed::Box;

/// A type handed to C behind a tagged pointer.
pub(super) trait Tagged {
    /// The tag word, distinct per type. Chosen so that no C string (its first byte is not ASCII)
    /// and no canonical x86_64/aarch64 pointer (its top bytes are neither all 0 nor all 1) starts
    /// with it: the first field of libbpf's objects is one or the other.
    const TAG: u64;
}

/// What a C pointer to a `T` points to: the tag, then the value.
#[repr(C)]
struct Handle<T> {
    tag: u64,
    value: T,
}

/// Move `value` to the heap behind its tag; the pointer goes to C.
pub(super) fn into_raw<T: Tagged>(value: T) -> *mut T {
    Box::into_raw(Box::new(Handle { tag: T::TAG, value })).cast()
}

/// Whether `ptr` (non-NULL) starts with `T`'s tag.
///
/// # Safety
///
/// `ptr` must point to at least 8 readable bytes (any object of this library or of libbpf).
unsafe fn is_tagged<T: Tagged>(ptr: *const T) -> bool {
    // SAFETY: by the caller's contract the first 8 bytes are readable; a foreign object need not
    // be 8-byte aligned, hence the unaligned read.
    unsafe { ptr.cast::<u64>().read_unaligned() == T::TAG }
}

/// The live `T` behind `ptr`: `EINVAL` for NULL or a pointer this library did not make.
///
/// # Safety
///
/// `ptr` must be NULL, a live handle from [`into_raw`], or point to at least 8 readable bytes.
/// The reference must not outlive the handle, nor overlap a mutable one.
pub(super) unsafe fn get<'a, T: Tagged>(ptr: *const T) -> Result<&'a T, Errno> {
    // SAFETY: the caller's contract.
    if ptr.is_null() || !unsafe { is_tagged(ptr) } {
        return Err(Errno::INVAL);
    }
    // SAFETY: the tag shows `ptr` came from `into_raw`, so it points to a live `Handle<T>`.
    Ok(unsafe { &(*ptr.cast::<Handle<T>>()).value })
}

/// As [`get`], mutably.
///
/// # Safety
///
/// As [`get`], and no other reference to the handle may exist during `'a`.
pub(super) unsafe fn get_mut<'a, T: Tagged>(ptr: *mut T) -> Result<&'a mut T, Errno> {
    // SAFETY: the caller's contract.
    if ptr.is_null() || !unsafe { is_tagged(ptr) } {
        return Err(Errno::INVAL);
    }
    // SAFETY: the tag shows `ptr` came from `into_raw`; the caller guarantees exclusivity.
    Ok(unsafe { &mut (*ptr.cast::<Handle<T>>()).value })
}

/// Free the handle at `ptr`. NULL is a no-op; a pointer this library did not make is left
/// alone, with `errno` set to `EINVAL` (the free functions return nothing).
///
/// # Safety
///
/// As [`get`]; a live handle must not be used afterwards.
pub(super) unsafe fn free<T: Tagged>(ptr: *mut T) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: the caller's contract.
    if !unsafe { is_tagged(ptr) } {
        errno::set_errno(libc::EINVAL);
        return;
    }
    let handle = ptr.cast::<Handle<T>>();
    // SAFETY: the tag shows `handle` came from `Box::into_raw` in `into_raw`; by the caller's
    // contract it was not freed yet, so this is the one conversion back. The tag is cleared
    // first so that a second free of the same pointer is refused while the memory is unused.
    unsafe {
        (*handle).tag = 0;
        drop(Box::from_raw(handle));
    }
}

/// A handle owned by a Rust test: the C pointer, freed on drop.
#[cfg(test)]
pub(super) struct Owned<T: Tagged>(*mut T);

#[cfg(test)]
impl<T: Tagged> Owned<T> {
    /// Tag `value` as a constructor would.
    pub(super) fn new(value: T) -> Self {
        Owned(into_raw(value))
    }

    /// The pointer C callers would hold.
    pub(super) fn ptr(&self) -> *mut T {
        self.0
    }
}

#[cfg(test)]
impl<T: Tagged> core::ops::Deref for Owned<T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: the handle lives until `self` is dropped.
        unsafe { get(self.0) }.expect("a live handle")
    }
}

#[cfg(test)]
impl<T: Tagged> Drop for Owned<T> {
    fn drop(&mut self) {
        // SAFETY: made by `into_raw`, freed once, here.
        unsafe { free(self.0) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Thing(u32);
    impl Tagged for Thing {
        const TAG: u64 = u64::from_le_bytes(*b"\xb7BTFGtst");
    }

    #[test]
    fn foreign_pointers_are_refused() {
        let mine = into_raw(Thing(7));
        // 16 bytes of something else: zeros, a C string, a pointer.
        let zeros = [0u64; 2];
        let text = *b"task.bpf\0\0\0\0\0\0\0\0";
        let pointer = [&zeros as *const _ as u64, 0];
        // SAFETY: `mine` is a live handle; the others point to 16 readable bytes.
        unsafe {
            assert_eq!(get(mine).map(|t| t.0), Ok(7));
            for foreign in [
                zeros.as_ptr().cast::<Thing>(),
                text.as_ptr().cast::<Thing>(),
                pointer.as_ptr().cast::<Thing>(),
                core::ptr::null(),
            ] {
                assert!(get(foreign).is_err());
                assert!(get_mut(foreign.cast_mut()).is_err());
            }
            errno::set_errno(0);
            free(text.as_ptr().cast::<Thing>().cast_mut());
            assert_eq!(errno::errno(), libc::EINVAL);
            free(mine);
        }
    }
}
