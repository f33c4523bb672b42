//! [`Anchor`]: a heap value that never moves, for the one self-referential structure of the C
//! ABI (a [`super::session::Session`] owns target BTF bytes, the [`crate::btf::Btf`] views that
//! borrow them, and the [`crate::minimize::RelocInfo`] that borrows those views).
//!
//! This is the only place that hands out references whose lifetime the compiler cannot check.
//! The rules that keep them sound are spelled out on [`Anchor::get_unbounded`] and followed by
//! `Session`, the only user.

use crate::error::Error;
use alloc::boxed::Box;
use core::alloc::Layout;
use core::ptr::NonNull;

/// Owns a `T` on the heap at an address that never changes until the anchor is dropped.
///
/// Moving the `Anchor` itself moves only a pointer; the `T` stays put. The value is reachable
/// only through shared references, so references handed out by [`Anchor::get_unbounded`] stay
/// valid until the anchor is dropped.
pub(super) struct Anchor<T> {
    /// Allocated as a `Box<T>` is; turned into one exactly once, in `Drop`.
    ptr: *mut T,
}

impl<T> Anchor<T> {
    /// Move `value` to the heap; `OutOfMemory` (with `value` dropped) if that fails. Fallible,
    /// unlike `Box::new`, so that a session under a memory budget stays within it.
    pub(super) fn new(value: T) -> Result<Self, Error> {
        let layout = Layout::new::<T>();
        let ptr = if layout.size() == 0 {
            NonNull::<T>::dangling().as_ptr()
        } else {
            // SAFETY: the layout has a non-zero size.
            unsafe { alloc::alloc::alloc(layout) }.cast::<T>()
        };
        if ptr.is_null() {
            return Err(Error::OutOfMemory);
        }
        // SAFETY: `ptr` is a fresh block (or, for a zero-sized `T`, a dangling aligned pointer)
        // for one `T`, allocated by the global allocator with `T`'s layout: exactly what
        // `Box::from_raw` in `Drop` expects.
        unsafe { ptr.write(value) };
        Ok(Anchor { ptr })
    }

    /// A shared reference to the value, for as long as the anchor is borrowed.
    pub(super) fn get(&self) -> &T {
        // SAFETY: as in `get_unbounded`, the value is valid until the anchor is dropped, which
        // the borrow of `self` rules out while the reference lives.
        unsafe { self.get_unbounded() }
    }

    /// A shared reference to the value with a lifetime of the caller's choosing.
    ///
    /// # Safety
    ///
    /// The caller must not use the returned reference, or anything that borrows from it, after
    /// this anchor is dropped. In practice: store it only in fields of the struct that owns this
    /// anchor, declared *before* the anchor's field (fields drop in declaration order), and never
    /// drop or replace the anchor while those fields hold it.
    pub(super) unsafe fn get_unbounded<'x>(&self) -> &'x T {
        // SAFETY: `ptr` was allocated and written in `new`, so it is non-null, aligned and
        // points to an initialized `T`; it is freed only in `drop`, and nothing ever creates a
        // `&mut T` to it, so shared references are valid until then. The caller promises not to
        // use the reference after the anchor is dropped.
        unsafe { &*self.ptr }
    }
}

impl<T> Drop for Anchor<T> {
    fn drop(&mut self) {
        // SAFETY: `ptr` was allocated in `new` as a `Box<T>` is, and is converted exactly once,
        // here. By the contract of `get_unbounded`, no reference to the value is used after
        // this point.
        drop(unsafe { Box::from_raw(self.ptr) });
    }
}

#[cfg(test)]
mod tests {
    use super::Anchor;
    use alloc::vec;
    use alloc::vec::Vec;

    /// References stay valid while the anchor itself is moved around (into a `Vec` that then
    /// reallocates), which is what `Session` relies on.
    #[test]
    fn value_does_not_move_with_the_anchor() {
        let first = Anchor::new(vec![1u8, 2, 3]).unwrap();
        // SAFETY: `view` is last used before `anchors` (which owns the anchor) is dropped.
        let view: &[u8] = unsafe { first.get_unbounded() };
        let mut anchors: Vec<Anchor<Vec<u8>>> = Vec::new();
        anchors.push(first);
        for i in 0..100u8 {
            anchors.push(Anchor::new(vec![i; 16]).unwrap());
        }
        assert_eq!(view, [1, 2, 3]);
        drop(anchors);
    }
}
