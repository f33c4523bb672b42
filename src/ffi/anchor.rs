//! [`Anchor`]: a heap value that never moves, for the one self-referential structure of the C
//! ABI (a [`super::session::Session`] owns target BTF bytes, the [`crate::btf::Btf`] views that
//! borrow them, and the [`crate::minimize::RelocInfo`] that borrows those views).
//!
//! This is the only place that hands out references whose lifetime the compiler cannot check.
//! The rules that keep them sound are spelled out on [`Anchor::get_unbounded`] and followed by
//! `Session`, the only user.

use alloc::boxed::Box;

/// Owns a `T` on the heap at an address that never changes until the anchor is dropped.
///
/// Moving the `Anchor` itself moves only a pointer; the `T` stays put. The value is reachable
/// only through shared references, so references handed out by [`Anchor::get_unbounded`] stay
/// valid until the anchor is dropped.
pub(super) struct Anchor<T> {
    /// From `Box::into_raw`; turned back into a `Box` exactly once, in `Drop`.
    ptr: *mut T,
}

impl<T> Anchor<T> {
    /// Move `value` to the heap.
    pub(super) fn new(value: T) -> Self {
        Anchor {
            // Counted against the current budget but never refused: `Box::new` cannot fail
            // without aborting (and the box is a few words).
            ptr: Box::into_raw(crate::budget::count_only(|| Box::new(value))),
        }
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
        // SAFETY: `ptr` comes from `Box::into_raw`, so it is non-null, aligned and points to an
        // initialized `T`; it is freed only in `drop`, and nothing ever creates a `&mut T` to
        // it, so shared references are valid until then. The caller promises not to use the
        // reference after the anchor is dropped.
        unsafe { &*self.ptr }
    }
}

impl<T> Drop for Anchor<T> {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `Box::into_raw` in `new` and is converted back exactly once,
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
        let first = Anchor::new(vec![1u8, 2, 3]);
        // SAFETY: `view` is last used before `anchors` (which owns the anchor) is dropped.
        let view: &[u8] = unsafe { first.get_unbounded() };
        let mut anchors: Vec<Anchor<Vec<u8>>> = Vec::new();
        anchors.push(first);
        for i in 0..100u8 {
            anchors.push(Anchor::new(vec![i; 16]));
        }
        assert_eq!(view, [1, 2, 3]);
        drop(anchors);
    }
}
