//! A counting, failure-injecting global allocator for integration tests (each integration test
//! file is its own binary, so installing it there affects nothing else).
//!
//! Everything is per thread: the test harness and other tests run on other threads and are
//! never counted nor failed. On the calling thread:
//! - [`live`] counts blocks and bytes currently allocated, so a test can check that running
//!   some code and dropping its result leaves them where they were (no leak);
//! - [`run_failing`] runs a closure with allocation number `n` (1-based) failing, and reports how
//!   many allocations it attempted; the allocations after the failing one succeed, so code
//!   that ignores a failure and retries is caught by its result, not by a crash;
//! - [`measure`] runs a closure and reports how many allocations and bytes it asked for, and
//!   its peak of live bytes.
//!
//! The state is `const`-initialized thread-locals without destructors, so the allocator itself
//! never allocates.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The allocator: [`System`] plus the per-thread bookkeeping.
pub struct TestAlloc;

struct State {
    /// Counting/failing is on for this thread.
    armed: Cell<bool>,
    /// Allocation number (1-based, counted while armed) that fails; 0 = none.
    fail_at: Cell<u64>,
    /// Allocations (alloc, alloc_zeroed, realloc) attempted while armed.
    count: Cell<u64>,
    /// Bytes requested while armed (a realloc counts its new size).
    requested: Cell<u64>,
    /// Live blocks and bytes of this thread, armed or not.
    live_blocks: Cell<i64>,
    live_bytes: Cell<i64>,
    /// Highest `live_bytes` seen while armed.
    peak_bytes: Cell<i64>,
}

thread_local! {
    static STATE: State = const {
        State {
            armed: Cell::new(false),
            fail_at: Cell::new(0),
            count: Cell::new(0),
            requested: Cell::new(0),
            live_blocks: Cell::new(0),
            live_bytes: Cell::new(0),
            peak_bytes: Cell::new(0),
        }
    };
}

/// Count one allocation attempt of `size` bytes; `false` when it must fail.
fn attempt(size: usize) -> bool {
    STATE
        .try_with(|s| {
            if !s.armed.get() {
                return true;
            }
            let n = s.count.get() + 1;
            s.count.set(n);
            s.requested.set(s.requested.get() + size as u64);
            n != s.fail_at.get()
        })
        .unwrap_or(true)
}

fn adjust(blocks: i64, bytes: i64) {
    let _ = STATE.try_with(|s| {
        s.live_blocks.set(s.live_blocks.get() + blocks);
        let live = s.live_bytes.get() + bytes;
        s.live_bytes.set(live);
        if s.armed.get() && live > s.peak_bytes.get() {
            s.peak_bytes.set(live);
        }
    });
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged and only
// adds bookkeeping in thread-locals that never allocate.
unsafe impl GlobalAlloc for TestAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if !attempt(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded unchanged.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            adjust(1, layout.size() as i64);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if !attempt(layout.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded unchanged.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            adjust(1, layout.size() as i64);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged.
        unsafe { System.dealloc(ptr, layout) };
        adjust(-1, -(layout.size() as i64));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !attempt(new_size) {
            return std::ptr::null_mut();
        }
        // SAFETY: forwarded unchanged.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            adjust(0, new_size as i64 - layout.size() as i64);
        }
        p
    }
}

/// Live blocks and bytes allocated by this thread.
pub fn live() -> (i64, i64) {
    STATE.with(|s| (s.live_blocks.get(), s.live_bytes.get()))
}

/// What an armed run did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// Allocation attempts (alloc, alloc_zeroed, realloc).
    pub allocations: u64,
    /// Bytes asked for, summed over the attempts.
    pub requested: u64,
    /// Peak live bytes above the level at the start.
    pub peak: i64,
}

fn armed<R>(fail_at: u64, f: impl FnOnce() -> R) -> (R, Usage) {
    let start = STATE.with(|s| {
        s.count.set(0);
        s.requested.set(0);
        s.fail_at.set(fail_at);
        s.peak_bytes.set(s.live_bytes.get());
        s.armed.set(true);
        s.live_bytes.get()
    });
    let result = f();
    let usage = STATE.with(|s| {
        s.armed.set(false);
        s.fail_at.set(0);
        Usage {
            allocations: s.count.get(),
            requested: s.requested.get(),
            peak: s.peak_bytes.get() - start,
        }
    });
    (result, usage)
}

/// Run `f` with its `n`-th allocation (1-based) failing.
pub fn run_failing<R>(n: u64, f: impl FnOnce() -> R) -> (R, Usage) {
    armed(n, f)
}

/// Run `f` with nothing failing, counting its allocations.
pub fn measure<R>(f: impl FnOnce() -> R) -> (R, Usage) {
    armed(0, f)
}
