//! The command's memory where the C library's allocator is musl's.
//!
//! `make cli` links the command statically against musl instead of glibc: glibc's start-up
//! reads the CPU's cache sizes with ~25 `cpuid` instructions, each a VM exit on a virtual
//! machine (~5 µs here), a fixed cost of every run that a one-object `min-core-btf` of a few
//! milliseconds feels. musl's allocator pays it back differently: it maps and unmaps memory for
//! groups of small blocks as they fill and empty (a 20-object `min-core-btf`: 155 `mmap` and
//! 153 `munmap` calls, against glibc's 23 and 23), which made that run slower than with glibc.
//!
//! [`SizeSplit`] takes small blocks from dlmalloc (Doug Lea's allocator, the one glibc's
//! descends from: free lists in memory it keeps) and blocks from [`LARGE_FROM`] bytes on from
//! the C library, which maps each one and unmaps it when it is freed, as glibc's allocator does
//! by default. dlmalloc alone keeps every large block's memory once freed: a debug vmlinux's
//! conversion, whose vectors of tens of MiB grow and are dropped, peaked at 390 MiB with it
//! against 200 MiB this way.
//!
//! This is the binary's one audited `unsafe` module for memory: a [`GlobalAlloc`] cannot be
//! written without it. Every block says why it is sound.
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(unsafe_op_in_unsafe_fn)]

use dlmalloc::Dlmalloc;
use std::alloc::{GlobalAlloc, Layout};
use std::ptr;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Size from which a block goes to the large allocator: the size from which musl's and glibc's
/// allocators map a block on its own (`MMAP_THRESHOLD`, glibc's initial `M_MMAP_THRESHOLD`).
pub const LARGE_FROM: usize = 128 << 10;

/// A [`GlobalAlloc`] that serves blocks under [`LARGE_FROM`] bytes from `Small` and the others
/// from `Large`. A block's size (which every call names, and a `realloc` changes) tells which
/// one holds it; a `realloc` across the boundary moves the block from one to the other.
pub struct SizeSplit<Small, Large> {
    small: Small,
    large: Large,
}

impl<Small, Large> SizeSplit<Small, Large> {
    /// Small blocks from `small`, large ones from `large`.
    pub const fn new(small: Small, large: Large) -> Self {
        SizeSplit { small, large }
    }
}

fn is_large(size: usize) -> bool {
    size >= LARGE_FROM
}

// SAFETY: each call goes to the allocator that holds (or is to hold) the block, chosen by the
// block's size, which the caller names exactly in every call (`GlobalAlloc`'s contract: the
// layout a block was allocated or last reallocated with), so a block is always freed or resized
// by the allocator that made it; both allocators uphold `GlobalAlloc`'s guarantees themselves.
unsafe impl<Small: GlobalAlloc, Large: GlobalAlloc> GlobalAlloc for SizeSplit<Small, Large> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if is_large(layout.size()) {
            // SAFETY: the caller's layout, under the same contract (non-zero size).
            unsafe { self.large.alloc(layout) }
        } else {
            // SAFETY: as above.
            unsafe { self.small.alloc(layout) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if is_large(layout.size()) {
            // SAFETY: the caller's layout, under the same contract (non-zero size).
            unsafe { self.large.alloc_zeroed(layout) }
        } else {
            // SAFETY: as above.
            unsafe { self.small.alloc_zeroed(layout) }
        }
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        if is_large(layout.size()) {
            // SAFETY: a block of this size was allocated by `large` (see `alloc` and `realloc`),
            // with this layout, as the caller guarantees.
            unsafe { self.large.dealloc(block, layout) }
        } else {
            // SAFETY: as above, by `small`.
            unsafe { self.small.dealloc(block, layout) }
        }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        match (is_large(layout.size()), is_large(new_size)) {
            // SAFETY: the block is `large`'s (see `dealloc`), the caller's arguments unchanged.
            (true, true) => unsafe { self.large.realloc(block, layout, new_size) },
            // SAFETY: as above, `small`'s.
            (false, false) => unsafe { self.small.realloc(block, layout, new_size) },
            _ => {
                // `realloc`'s contract makes this layout valid; refused all the same if not.
                let Ok(new_layout) = Layout::from_size_align(new_size, layout.align()) else {
                    return ptr::null_mut();
                };
                // SAFETY: `new_size` is non-zero (`realloc`'s contract).
                let moved = unsafe { self.alloc(new_layout) };
                if !moved.is_null() {
                    // SAFETY: `block` is live with `layout.size()` bytes and `moved` a new block
                    // of `new_size`, so they do not overlap and both hold the bytes copied; the
                    // old block is then freed with the layout it has (on failure it is left as
                    // it was, as `realloc` must).
                    unsafe {
                        ptr::copy_nonoverlapping(block, moved, layout.size().min(new_size));
                        self.dealloc(block, layout);
                    }
                }
                moved
            }
        }
    }
}

/// dlmalloc behind std's lock, a futex: one atomic operation to take it and one to give it
/// back when no other thread holds it (the crate's own global instance takes a
/// `pthread_mutex_t`, whose unlock alone was 3.7% of a one-object run's instructions on musl).
pub struct LockedDlmalloc(Mutex<Dlmalloc>);

impl LockedDlmalloc {
    /// An empty heap; it takes memory from the system as blocks are asked for.
    pub const fn new() -> Self {
        LockedDlmalloc(Mutex::new(Dlmalloc::new()))
    }

    /// The heap. A panic never happens while it is held (dlmalloc does not panic), so a poisoned
    /// lock is only ever a lock.
    fn heap(&self) -> MutexGuard<'_, Dlmalloc> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

// SAFETY: every call is forwarded to dlmalloc with the caller's size and alignment, under the
// lock, and dlmalloc's functions have `GlobalAlloc`'s contracts (a block it returns is aligned
// and sized as asked, or null).
unsafe impl GlobalAlloc for LockedDlmalloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: a non-zero size and a power-of-two alignment (`Layout`'s and `alloc`'s contract).
        unsafe { self.heap().malloc(layout.size(), layout.align()) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        unsafe { self.heap().calloc(layout.size(), layout.align()) }
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        // SAFETY: `block` came from this heap with this layout (`dealloc`'s contract).
        unsafe { self.heap().free(block, layout.size(), layout.align()) }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as in `dealloc`, and a non-zero `new_size` (`realloc`'s contract).
        unsafe {
            self.heap()
                .realloc(block, layout.size(), layout.align(), new_size)
        }
    }
}

/// Size from which a block [`DropPagesOnFree`] frees has its pages dropped first.
const DROP_PAGES_FROM: usize = 16 << 20;

/// Bytes dropped at a time: a multiple of every page size Linux has (4, 16 and 64 KiB).
const DROP_PIECE: usize = 2 << 20;

/// An allocator whose blocks of [`DROP_PAGES_FROM`] bytes or more have their whole pages
/// dropped (`MADV_DONTNEED`), [`DROP_PIECE`] at a time, before they are freed. musl's allocator
/// unmaps such a block (each has a mapping of its own), which holds the process's memory map
/// lock for writing through the whole call, and freeing the pages of tens of megabytes takes
/// milliseconds: a DWARF conversion's records, freed on a thread of their own while the
/// command goes on, held the command's next `mmap` for 12-15 ms that way (`munmap` in pieces
/// did no better: a writer waiting on a writer may wait for several calls in a row). Dropping
/// pages holds the lock for reading, which a waiting writer stops new readers from taking: an
/// `mmap` waits for one piece, a tenth of a millisecond, and the unmapping after is quick.
pub struct DropPagesOnFree<A>(A);

impl<A> DropPagesOnFree<A> {
    /// `allocator`, its large blocks' pages dropped before they are freed.
    pub const fn new(allocator: A) -> Self {
        DropPagesOnFree(allocator)
    }
}

/// Drop the contents of the whole [`DROP_PIECE`]s inside `block` (`size` bytes), one piece at
/// a time; nothing outside the block, where the allocator keeps what it knows of it.
fn drop_pages_in_pieces(block: *mut u8, size: usize) {
    let mut piece = (block as usize).div_ceil(DROP_PIECE) * DROP_PIECE;
    let end = (block as usize).saturating_add(size) / DROP_PIECE * DROP_PIECE;
    while piece < end {
        // SAFETY: the range is whole pages inside a block the caller is about to free (no
        // reference to its bytes is left, and no allocator reads a block's bytes once it is
        // freed), so zeroing them changes no memory anything reads. A failure leaves them be.
        unsafe { libc::madvise(piece as *mut libc::c_void, DROP_PIECE, libc::MADV_DONTNEED) };
        piece += DROP_PIECE;
    }
}

// SAFETY: every call is forwarded to the wrapped allocator with the caller's arguments; before
// a large block is freed, only the contents of whole pages inside it are dropped (see
// `drop_pages_in_pieces`).
unsafe impl<A: GlobalAlloc> GlobalAlloc for DropPagesOnFree<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, under the same contract.
        unsafe { self.0.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        unsafe { self.0.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
        if layout.size() >= DROP_PAGES_FROM {
            drop_pages_in_pieces(block, layout.size());
        }
        // SAFETY: `block` came from the wrapped allocator with this layout.
        unsafe { self.0.dealloc(block, layout) }
    }

    unsafe fn realloc(&self, block: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as in `dealloc`, and a non-zero `new_size` (`realloc`'s contract).
        unsafe { self.0.realloc(block, layout, new_size) }
    }
}

/// The command's allocator on musl (`make cli`); glibc's own is kept elsewhere.
#[cfg(target_env = "musl")]
#[global_allocator]
static ALLOCATOR: SizeSplit<LockedDlmalloc, DropPagesOnFree<std::alloc::System>> = SizeSplit::new(
    LockedDlmalloc::new(),
    DropPagesOnFree::new(std::alloc::System),
);

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::System;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The system allocator, counting the blocks it holds.
    #[derive(Default)]
    struct Counted {
        live: AtomicUsize,
    }

    // SAFETY: every call goes to `System` with the caller's arguments; the counter is only
    // bookkeeping.
    unsafe impl GlobalAlloc for Counted {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            self.live.fetch_add(1, Ordering::Relaxed);
            // SAFETY: the caller's layout.
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, block: *mut u8, layout: Layout) {
            self.live.fetch_sub(1, Ordering::Relaxed);
            // SAFETY: a block `alloc` made with this layout.
            unsafe { System.dealloc(block, layout) }
        }
    }

    fn live(counted: &Counted) -> usize {
        counted.live.load(Ordering::Relaxed)
    }

    fn fill(block: *mut u8, len: usize) {
        for i in 0..len {
            // SAFETY: `block` holds at least `len` bytes (each caller's own allocation).
            unsafe { block.add(i).write(i as u8 ^ 0x5a) };
        }
    }

    fn holds_fill(block: *const u8, len: usize) -> bool {
        // SAFETY: as in `fill`.
        (0..len).all(|i| unsafe { block.add(i).read() } == i as u8 ^ 0x5a)
    }

    #[test]
    fn blocks_go_by_size_and_move_across_the_boundary_with_their_bytes() {
        let split = SizeSplit::new(Counted::default(), Counted::default());
        let small = Layout::from_size_align(LARGE_FROM - 1, 16).unwrap();
        // SAFETY: non-zero size; every block below is freed with the layout it has.
        unsafe {
            let block = split.alloc(small);
            assert!(!block.is_null());
            assert_eq!((live(&split.small), live(&split.large)), (1, 0));
            fill(block, small.size());

            // Up across the boundary: moved to the large allocator, bytes kept.
            let grown = split.realloc(block, small, LARGE_FROM);
            assert!(!grown.is_null());
            assert_eq!((live(&split.small), live(&split.large)), (0, 1));
            assert!(holds_fill(grown, small.size()));
            assert_eq!(grown as usize % 16, 0, "alignment kept");

            // Within the large side: the large allocator's own realloc.
            let large = Layout::from_size_align(LARGE_FROM, 16).unwrap();
            let larger = split.realloc(grown, large, 4 * LARGE_FROM);
            assert_eq!((live(&split.small), live(&split.large)), (0, 1));
            assert!(holds_fill(larger, small.size()));

            // Down across the boundary: back to the small allocator, the first bytes kept.
            let larger_layout = Layout::from_size_align(4 * LARGE_FROM, 16).unwrap();
            let shrunk = split.realloc(larger, larger_layout, 100);
            assert_eq!((live(&split.small), live(&split.large)), (1, 0));
            assert!(holds_fill(shrunk, 100));
            split.dealloc(shrunk, Layout::from_size_align(100, 16).unwrap());
            assert_eq!((live(&split.small), live(&split.large)), (0, 0));

            let zeroed = split.alloc_zeroed(large);
            assert_eq!(live(&split.large), 1);
            assert!((0..large.size()).all(|i| zeroed.add(i).read() == 0));
            split.dealloc(zeroed, large);
            assert_eq!(live(&split.large), 0);
        }
    }

    #[test]
    fn the_command_pair_keeps_bytes_through_growth_and_shrinking() {
        let split = SizeSplit::new(LockedDlmalloc::new(), System);
        let mut layout = Layout::from_size_align(24, 8).unwrap();
        // SAFETY: non-zero sizes; the block is resized and freed with the layout it has.
        unsafe {
            let mut block = split.alloc(layout);
            fill(block, layout.size());
            // A vector's growth by doubling, across the boundary and far past it, then back.
            for size in (0..16).map(|shift| 24 << shift).chain([1000, 40]) {
                let kept = layout.size().min(size);
                block = split.realloc(block, layout, size);
                assert!(!block.is_null());
                assert!(holds_fill(block, kept), "bytes kept at {size}");
                layout = Layout::from_size_align(size, 8).unwrap();
                fill(block, size);
            }
            split.dealloc(block, layout);
        }
    }

    #[test]
    fn two_threads_share_the_heap() {
        static SPLIT: SizeSplit<LockedDlmalloc, System> =
            SizeSplit::new(LockedDlmalloc::new(), System);
        let worker = |seed: usize| {
            move || {
                let mut live = Vec::new();
                for round in 0..4000 {
                    let size = 1 + (round * 7919 + seed) % (2 * LARGE_FROM);
                    let layout = Layout::from_size_align(size, 8).unwrap();
                    // SAFETY: a non-zero size; each block is freed once, with its layout.
                    let block = unsafe { SPLIT.alloc(layout) };
                    assert!(!block.is_null());
                    fill(block, size.min(64));
                    live.push((block, layout));
                    if live.len() > 8 {
                        let (block, layout) = live.swap_remove(round % live.len());
                        assert!(holds_fill(block, layout.size().min(64)));
                        // SAFETY: as above.
                        unsafe { SPLIT.dealloc(block, layout) };
                    }
                }
                for (block, layout) in live {
                    assert!(holds_fill(block, layout.size().min(64)));
                    // SAFETY: as above.
                    unsafe { SPLIT.dealloc(block, layout) };
                }
            }
        };
        let other = std::thread::spawn(worker(1));
        worker(2)();
        other.join().unwrap();
    }

    /// Only the whole pieces inside a block lose their bytes: the bytes before and after it
    /// (another block's, or what the allocator keeps about it) and the block's ends around
    /// the pieces keep theirs.
    #[test]
    fn pages_are_dropped_only_inside_the_block() {
        let len = 4 * DROP_PIECE;
        let mut area = vec![0xa5u8; len + DROP_PIECE];
        // A block from 100 bytes before a piece boundary to 200 bytes past the boundary two
        // pieces on: neither end on a boundary.
        let base = area.as_mut_ptr() as usize;
        let first_boundary = base.div_ceil(DROP_PIECE) * DROP_PIECE;
        let start = first_boundary - 100 - base;
        let size = 2 * DROP_PIECE + 300;
        drop_pages_in_pieces(area[start..].as_mut_ptr(), size);
        let boundary = first_boundary - base;
        for (at, &byte) in area.iter().enumerate() {
            let dropped = (boundary..boundary + 2 * DROP_PIECE).contains(&at);
            assert_eq!(byte, if dropped { 0 } else { 0xa5 }, "byte {at}");
        }
    }

    /// A large block through the wrapper is freed (its pages dropped first), and memory
    /// allocated afterwards holds what is written to it.
    #[test]
    fn large_blocks_are_freed_and_memory_reused() {
        let wrapper = DropPagesOnFree::new(Counted::default());
        for size in [DROP_PAGES_FROM - 1, DROP_PAGES_FROM, DROP_PAGES_FROM + 4097] {
            let layout = Layout::from_size_align(size, 8).unwrap();
            // SAFETY: a non-zero size, freed once with its layout.
            let block = unsafe { wrapper.alloc(layout) };
            assert!(!block.is_null());
            fill(block, size);
            assert!(holds_fill(block, size));
            // SAFETY: as above.
            unsafe { wrapper.dealloc(block, layout) };
            assert_eq!(live(&wrapper.0), 0);
        }
    }
}
