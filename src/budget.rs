//! Memory budgets: how much a piece of work may allocate, and how much it did at its peak.
//!
//! A [`Budget`] is a limit plus counters (bytes in use, peak). [`BudgetAlloc`] is a
//! [`GlobalAlloc`] that wraps any other (the system allocator, an arena, the C library's hooks)
//! and charges every allocation made inside [`Budget::run`] to that budget; an allocation that
//! would go over the limit returns null, which the core (every allocation fallible) reports as
//! [`Error::OutOfMemory`]. Nothing else changes: the same code, the same containers, the same
//! output.
//!
//! ```no_run
//! use btfgen::budget::{Budget, BudgetAlloc};
//!
//! #[global_allocator]
//! static ALLOC: BudgetAlloc<std::alloc::System> = BudgetAlloc::new(std::alloc::System);
//!
//! # fn work() -> btfgen::Result<()> { Ok(()) }
//! let budget = Budget::new(8 << 20)?; // 8 MiB
//! let result = budget.run(work); // Err(OutOfMemory) past 8 MiB
//! println!("peak: {} bytes", budget.peak());
//! # Ok::<(), btfgen::Error>(())
//! ```
//!
//! # Why a budget in front of the allocator, not containers generic over one
//!
//! The alternative, every `Vec`, `String` and `hashbrown` map of the core generic over an
//! `allocator-api2` allocator, would thread an allocator parameter through every type of every
//! layer (`Btf`, `RelocInfo`, the candidate index, the writer, their errors), and `alloc`'s own
//! collections take a custom allocator only on nightly. A budget in front of the allocator
//! reaches every allocation the core makes (they all go through `alloc` and
//! [`try_reserve`](alloc::vec::Vec::try_reserve)) without touching any of them, and the C library
//! gets both its allocator hooks and its budgets from the same layer.
//!
//! # How allocations are charged
//!
//! Each block carries a small header (two words, more for over-aligned layouts) naming the budget
//! it was charged to, so freeing it credits that budget whenever and on whatever thread it is
//! freed, even after the work, the [`Budget`] handle or the scope that made it are gone: a
//! budget's counters live until its last block is freed. Growing a block (`realloc`) charges the
//! growth to the block's own budget (refused past its limit inside a [`Budget::run`]). Blocks
//! allocated outside any run are charged to none, even when they grow inside one. The counters
//! include the headers: they are the bytes asked of the wrapped allocator.
//!
//! The current budget is per thread under the `std` feature. Without `std` there are no thread
//! locals: the current budget is one global slot (behind a spin lock), so budgeted work should
//! run one thread at a time: other threads' allocations meanwhile are charged to it too. Either
//! way it is sound: the slot and every scope hold a reference to the budget they name, so no
//! interleaving leaves one dangling. As everywhere in btfgen, one object is used by one thread at
//! a time.
//!
//! An allocation that cannot fail in Rust (`Box::new`, `Arc::new`) aborts the process when the
//! allocator returns null; the core has none, and code that needs one inside a budget runs it
//! under [`count_only`], which counts without refusing.
//!
//! This is one of the crate's audited `unsafe` modules: a [`GlobalAlloc`] cannot be written
//! without it. Every block says why it is sound.
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(unsafe_op_in_unsafe_fn)]

use crate::error::{Error, Result};
use core::alloc::{GlobalAlloc, Layout};
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering, fence};

/// The counters a [`Budget`] handle and every block charged to it share.
struct BudgetState {
    /// Most bytes that may be in use at once.
    limit: usize,
    /// Bytes in use (blocks charged and not freed yet, headers included).
    used: AtomicUsize,
    /// Highest `used` seen.
    peak: AtomicUsize,
    /// [`Budget`] handles plus blocks charged to this state; freed at zero.
    refs: AtomicUsize,
}

impl BudgetState {
    /// Add `bytes` to `used`; `false` (nothing added) if that overflows or, when `enforce`,
    /// exceeds the limit.
    fn charge(&self, bytes: usize, enforce: bool) -> bool {
        let mut used = self.used.load(Ordering::Relaxed);
        let new = loop {
            let Some(new) = used.checked_add(bytes) else {
                return false;
            };
            if enforce && new > self.limit {
                return false;
            }
            match self
                .used
                .compare_exchange_weak(used, new, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => break new,
                Err(now) => used = now,
            }
        };
        self.peak.fetch_max(new, Ordering::Relaxed);
        true
    }

    /// Give back `bytes` charged earlier.
    fn credit(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// Drop one reference to `state`, freeing it with the last one.
///
/// # Safety
///
/// `state` must come from [`Budget::new`] and the caller must own one of its references, which
/// it gives up here.
unsafe fn release(state: NonNull<BudgetState>) {
    // SAFETY: the caller owns a reference, so the state is still allocated.
    let refs = unsafe { &state.as_ref().refs };
    // As `Arc`: release our writes, and acquire everyone's before freeing.
    if refs.fetch_sub(1, Ordering::Release) == 1 {
        fence(Ordering::Acquire);
        // SAFETY: this was the last reference: no handle or block can reach the state any more.
        // It was allocated in `Budget::new` with this very layout.
        unsafe { alloc::alloc::dealloc(state.as_ptr().cast(), Layout::new::<BudgetState>()) };
    }
}

/// A memory budget: a limit and the bytes charged against it (see the [module docs](self)).
///
/// Cloning gives another handle on the same counters.
pub struct Budget {
    state: NonNull<BudgetState>,
}

// SAFETY: the shared state is only read and changed through atomics, and freed by the last of
// its references (handles or blocks) on whatever thread drops it, as an `Arc` of atomics is.
unsafe impl Send for Budget {}
// SAFETY: as above: `&Budget` only reads the atomics or takes a new reference.
unsafe impl Sync for Budget {}

impl Budget {
    /// A budget of `limit` bytes (`usize::MAX`: no limit, only counting). `OutOfMemory` if its
    /// counters cannot be allocated.
    pub fn new(limit: usize) -> Result<Budget> {
        let layout = Layout::new::<BudgetState>();
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc::alloc::alloc(layout) }.cast::<BudgetState>();
        let state = NonNull::new(raw).ok_or(Error::OutOfMemory)?;
        // SAFETY: `raw` is a fresh, suitably aligned allocation for one `BudgetState`.
        unsafe {
            state.as_ptr().write(BudgetState {
                limit,
                used: AtomicUsize::new(0),
                peak: AtomicUsize::new(0),
                refs: AtomicUsize::new(1),
            })
        };
        Ok(Budget { state })
    }

    fn state(&self) -> &BudgetState {
        // SAFETY: this handle owns a reference, so the state is allocated and initialized.
        unsafe { self.state.as_ref() }
    }

    /// The limit in bytes (`usize::MAX`: none).
    pub fn limit(&self) -> usize {
        self.state().limit
    }

    /// Bytes charged to this budget and not freed yet.
    pub fn used(&self) -> usize {
        self.state().used.load(Ordering::Relaxed)
    }

    /// The most bytes this budget had in use at once.
    pub fn peak(&self) -> usize {
        self.state().peak.load(Ordering::Relaxed)
    }

    /// Run `f` with every allocation of this thread charged to this budget; one that would
    /// exceed the limit fails (returns null to its caller). Nested runs replace the outer
    /// budget until they return. Only effective when the global allocator is a
    /// [`BudgetAlloc`] ([`installed`] tells).
    pub fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        // The current slot gets a reference of its own (this handle's `clone`, never dropped
        // as a handle).
        let slot_ref = core::mem::ManuallyDrop::new(self.clone());
        let _scope = Scope::enter(Current {
            state: slot_ref.state.as_ptr(),
            enforce: true,
        });
        f()
    }
}

/// This thread's current budget (if any), to be made current on another thread
/// ([`Inherited::run`]): work that splits itself over threads charges every thread's
/// allocations to the budget its caller runs in, under the same limit. Start the thread, and
/// block on what connects the threads, under [`uncharged`] (`std`'s own allocations for them
/// cannot fail, and outlive the work).
pub fn inherit() -> Inherited {
    Inherited {
        current: current::acquire(),
    }
}

/// A budget carried to another thread: see [`inherit`]. Dropped unused, it gives up its
/// reference.
pub struct Inherited {
    /// The budget and whether its limit is enforced, with a reference of its own.
    current: Current,
}

// SAFETY: `current` owns a reference to a state that is only read and changed through atomics,
// and freed by the last of its references on whatever thread gives it up: moving it to another
// thread is moving a `Budget` handle.
unsafe impl Send for Inherited {}

impl Inherited {
    /// Run `f` on this thread with the inherited budget current, as [`Budget::run`] does
    /// (enforcing its limit if the thread it came from did).
    pub fn run<R>(self, f: impl FnOnce() -> R) -> R {
        // The scope takes over the reference: not given up by `drop` as well.
        let this = core::mem::ManuallyDrop::new(self);
        let _scope = Scope::enter(this.current);
        f()
    }
}

impl Drop for Inherited {
    fn drop(&mut self) {
        release_current(self.current);
    }
}

/// Run `f` with no budget current: for what `std` allocates for a thread and keeps until the
/// thread ends (a thread's handle, a channel's wait context), which no piece of work owns and
/// whose freeing, after the work is done, would otherwise be charged to whichever budget the
/// thread first needed it in.
pub fn uncharged<R>(f: impl FnOnce() -> R) -> R {
    let _scope = Scope::enter(NO_BUDGET);
    f()
}

/// Run `f` with the current budget (if any) counting its allocations without refusing any:
/// for the few that cannot fail (`Box::new`, `Arc::new`, the path buffer of a long file name in
/// `std`), which would abort the process instead.
pub fn count_only<R>(f: impl FnOnce() -> R) -> R {
    let Current { state, .. } = current::acquire();
    let _scope = Scope::enter(Current {
        state,
        enforce: false,
    });
    f()
}

impl Clone for Budget {
    fn clone(&self) -> Budget {
        self.state().refs.fetch_add(1, Ordering::Relaxed);
        Budget { state: self.state }
    }
}

impl Drop for Budget {
    fn drop(&mut self) {
        // SAFETY: this handle owns one reference and gives it up.
        unsafe { release(self.state) }
    }
}

impl core::fmt::Debug for Budget {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Budget")
            .field("limit", &self.limit())
            .field("used", &self.used())
            .field("peak", &self.peak())
            .finish()
    }
}

/// The budget allocations are charged to now, and whether its limit is enforced.
///
/// Every non-null `state` held in the current slot or by a [`Scope`] (the one it restores)
/// owns one reference to it, so no interleaving of scopes, threads and drops can leave one
/// pointing to a freed state.
#[derive(Clone, Copy)]
struct Current {
    state: *const BudgetState,
    enforce: bool,
}

const NO_BUDGET: Current = Current {
    state: ptr::null(),
    enforce: false,
};

/// Give up the reference `current` owns, if any.
fn release_current(current: Current) {
    if let Some(state) = NonNull::new(current.state.cast_mut()) {
        // SAFETY: a non-null `Current` owns a reference to its state (see `Current`).
        unsafe { release(state) }
    }
}

/// The current slot: one per thread.
#[cfg(feature = "std")]
mod current {
    use super::{Current, NO_BUDGET};
    use core::cell::Cell;
    use core::sync::atomic::Ordering;

    std::thread_local! {
        // `const`-initialized and without a destructor: using it never allocates, which the
        // allocator that reads it relies on.
        static CURRENT: Cell<Current> = const { Cell::new(NO_BUDGET) };
    }

    /// Put `new` (with the reference it owns) in the slot; the previous one is returned with
    /// its reference.
    pub(super) fn replace(new: Current) -> Current {
        CURRENT.with(|c| c.replace(new))
    }

    /// The current budget with a new reference for the caller.
    pub(super) fn acquire() -> Current {
        let current = CURRENT.with(Cell::get);
        // SAFETY: the slot owns a reference, so the state is allocated; only this thread
        // can change the slot.
        if let Some(state) = unsafe { current.state.as_ref() } {
            state.refs.fetch_add(1, Ordering::Relaxed);
        }
        current
    }

    /// Whether the current budget's limit is enforced.
    pub(super) fn enforcing() -> bool {
        CURRENT.with(Cell::get).enforce
    }
}

/// The current slot without `std`: one for the whole program (no thread locals; see the module
/// docs), behind a spin lock so that reading it and taking a reference are one step.
#[cfg(not(feature = "std"))]
mod current {
    use super::{Current, NO_BUDGET};
    use core::cell::UnsafeCell;
    use core::sync::atomic::{AtomicBool, Ordering};

    struct Slot {
        locked: AtomicBool,
        current: UnsafeCell<Current>,
    }

    // SAFETY: `current` is only reached by `with`, under `locked`.
    unsafe impl Sync for Slot {}

    static SLOT: Slot = Slot {
        locked: AtomicBool::new(false),
        current: UnsafeCell::new(NO_BUDGET),
    };

    /// Run `f` on the slot under the lock. `f` must not allocate (the allocator takes the lock).
    fn with<R>(f: impl FnOnce(&mut Current) -> R) -> R {
        while SLOT
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            core::hint::spin_loop();
        }
        // SAFETY: the lock is held: no other reference to the slot exists until it is released.
        let result = f(unsafe { &mut *SLOT.current.get() });
        SLOT.locked.store(false, Ordering::Release);
        result
    }

    /// Put `new` (with the reference it owns) in the slot; the previous one is returned with
    /// its reference.
    pub(super) fn replace(new: Current) -> Current {
        with(|c| core::mem::replace(c, new))
    }

    /// The current budget with a new reference for the caller.
    pub(super) fn acquire() -> Current {
        with(|c| {
            // SAFETY: the slot owns a reference, so the state is allocated, and it cannot be
            // given up while the lock is held.
            if let Some(state) = unsafe { c.state.as_ref() } {
                state.refs.fetch_add(1, Ordering::Relaxed);
            }
            *c
        })
    }

    /// Whether the current budget's limit is enforced.
    pub(super) fn enforcing() -> bool {
        with(|c| c.enforce)
    }
}

/// Makes a budget current until dropped (also when unwinding), then restores the previous one.
struct Scope {
    /// The budget to restore, with its reference.
    previous: Current,
}

impl Scope {
    /// Make `current` (which owns a reference) current.
    fn enter(current: Current) -> Scope {
        Scope {
            previous: current::replace(current),
        }
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        release_current(current::replace(self.previous));
    }
}

/// Set by the first allocation through a [`BudgetAlloc`].
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Whether a [`BudgetAlloc`] has served an allocation (so is the global allocator): budgets
/// count and limit nothing otherwise.
pub fn installed() -> bool {
    INSTALLED.load(Ordering::Relaxed)
}

/// What precedes every block of a [`BudgetAlloc`].
struct Header {
    /// The budget the block is charged to (holding one of its references), or null.
    state: *const BudgetState,
    /// Bytes charged: the wrapped allocator's block size.
    charged: usize,
}

/// A [`GlobalAlloc`] that charges allocations to the current [`Budget`] and passes them on to
/// `A`. Install it with `#[global_allocator]`; see the [module docs](self).
pub struct BudgetAlloc<A> {
    inner: A,
}

impl<A> BudgetAlloc<A> {
    /// Budgets in front of `inner`.
    pub const fn new(inner: A) -> BudgetAlloc<A> {
        BudgetAlloc { inner }
    }

    /// The wrapped allocator.
    pub const fn inner(&self) -> &A {
        &self.inner
    }
}

/// Bytes in front of a block of `layout`: room for the header, keeping the block aligned.
fn header_offset(layout: Layout) -> usize {
    // Both are powers of two, so the larger is a multiple of the smaller.
    layout.align().max(size_of::<Header>())
}

/// The wrapped allocator's layout for a block of `size` bytes aligned as `layout`.
fn inner_layout(layout: Layout, size: usize) -> Option<Layout> {
    let total = size.checked_add(header_offset(layout))?;
    Layout::from_size_align(total, layout.align().max(align_of::<Header>())).ok()
}

impl<A: GlobalAlloc> BudgetAlloc<A> {
    /// Charge, allocate with `get`, and write the header; null when either fails.
    ///
    /// # Safety
    ///
    /// `get` must return null or a block of `inner` for the layout it is given.
    unsafe fn alloc_with(&self, layout: Layout, get: impl FnOnce(Layout) -> *mut u8) -> *mut u8 {
        if !INSTALLED.load(Ordering::Relaxed) {
            INSTALLED.store(true, Ordering::Relaxed);
        }
        let Some(outer) = inner_layout(layout, layout.size()) else {
            return ptr::null_mut();
        };
        // With a reference of our own: the block keeps it, or it is given up on failure.
        let current = current::acquire();
        // SAFETY: `current` owns a reference, so its state is allocated.
        let state = unsafe { current.state.as_ref() };
        if state.is_some_and(|state| !state.charge(outer.size(), current.enforce)) {
            release_current(current);
            return ptr::null_mut();
        }
        let base = get(outer);
        if base.is_null() {
            if let Some(state) = state {
                state.credit(outer.size());
            }
            release_current(current);
            return ptr::null_mut();
        }
        // `header` finds the block again from its address alone.
        let _ = base.expose_provenance();
        let offset = header_offset(layout);
        // SAFETY: the block is `offset + size` bytes, so `base + offset` is inside it (or its
        // end); the header's two words sit right before it, aligned because `offset` and the
        // block's alignment are multiples of the header's.
        unsafe {
            let block = base.add(offset);
            block.cast::<Header>().sub(1).write(Header {
                state: current.state,
                charged: outer.size(),
            });
            block
        }
    }

    /// The header and wrapped block of `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` must be a live block of this allocator for `layout`.
    unsafe fn header(ptr: *mut u8, layout: Layout) -> (*mut Header, *mut u8) {
        // Not `ptr.sub(..)`: to the compiler `ptr` is a fresh allocation of `layout.size()`
        // bytes (`__rust_alloc`'s result), so a read before it is out of bounds, undefined
        // behaviour: once this allocator was inlined into a caller, LLVM made the code after a
        // deallocation unreachable (a SIGILL in a release test), and Miri reports the read. The
        // wrapped block is reached through its own provenance, which `alloc_with` and `realloc`
        // exposed.
        let offset = header_offset(layout);
        let base: *mut u8 = ptr::with_exposed_provenance_mut(ptr.addr() - offset);
        // SAFETY: `alloc_with` put the wrapped block `offset` bytes before `ptr` and the header
        // right before `ptr`, inside the block.
        unsafe { (base.add(offset).cast::<Header>().sub(1), base) }
    }
}

// SAFETY: blocks come from `inner` (which upholds `GlobalAlloc`'s contract) with room for the
// header in front; the pointer returned is `header_offset(layout)` bytes in, a multiple of
// `layout.align()` past a base aligned to at least it, with `layout.size()` bytes after it. The
// header is only written by `alloc_with`/`realloc` and read back for the same block.
unsafe impl<A: GlobalAlloc> GlobalAlloc for BudgetAlloc<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: `inner.alloc` returns null or a block for `outer`, which is non-zero-sized.
        unsafe { self.alloc_with(layout, |outer| self.inner.alloc(outer)) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        unsafe { self.alloc_with(layout, |outer| self.inner.alloc_zeroed(outer)) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: by `dealloc`'s contract `ptr` is a live block of ours for `layout`.
        let (header, base) = unsafe { Self::header(ptr, layout) };
        // SAFETY: the header of a live block, written by `alloc_with` or `realloc`.
        let Header { state, charged } = unsafe { header.read() };
        let Some(outer) = inner_layout(layout, layout.size()) else {
            return; // unreachable: `alloc` made this very layout
        };
        // SAFETY: `base` is the wrapped block, allocated by `inner` for `outer`.
        unsafe { self.inner.dealloc(base, outer) };
        if let Some(state) = NonNull::new(state.cast_mut()) {
            // SAFETY: the block held a reference to its state, kept until now.
            unsafe { state.as_ref() }.credit(charged);
            // SAFETY: and gives it up here.
            unsafe { release(state) };
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let (Some(old), Some(new)) = (
            inner_layout(layout, layout.size()),
            inner_layout(layout, new_size),
        ) else {
            return ptr::null_mut();
        };
        // SAFETY: by `realloc`'s contract `ptr` is a live block of ours for `layout`.
        let (header, base) = unsafe { Self::header(ptr, layout) };
        // SAFETY: the header of a live block; it holds a reference to its state, if any.
        let (state, charged) = unsafe { ((*header).state.as_ref(), (*header).charged) };
        let enforce = current::enforcing();
        let growth = new.size().saturating_sub(old.size());
        if let Some(state) = state {
            if !state.charge(growth, enforce) {
                return ptr::null_mut();
            }
        }
        // SAFETY: `base` is `inner`'s block for `old`; `new` has the same alignment and a
        // non-zero size that `inner_layout` checked does not overflow.
        let moved = unsafe { self.inner.realloc(base, old, new.size()) };
        if moved.is_null() {
            if let Some(state) = state {
                state.credit(growth);
            }
            return ptr::null_mut();
        }
        if let Some(state) = state {
            state.credit(old.size().saturating_sub(new.size()));
        }
        let _ = moved.expose_provenance();
        let offset = header_offset(layout);
        // SAFETY: `inner.realloc` kept the first bytes, header included, at the same offsets of
        // the new block, which is large enough for them.
        unsafe {
            let block = moved.add(offset);
            let header = block.cast::<Header>().sub(1);
            (*header).charged = charged - old.size() + new.size();
            block
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    // The unit tests' own global allocator (an integration test or binary that links the
    // crate installs whatever it likes).
    #[cfg(not(feature = "ffi-global-alloc"))]
    #[global_allocator]
    static ALLOC: BudgetAlloc<std::alloc::System> = BudgetAlloc::new(std::alloc::System);

    #[test]
    fn charges_refuses_and_credits() {
        let budget = Budget::new(4096).unwrap();
        assert_eq!((budget.used(), budget.peak()), (0, 0));
        let mut kept: Vec<u8> = Vec::new();
        budget.run(|| kept.try_reserve_exact(1000)).unwrap();
        let one = budget.used();
        assert!((1000..1100).contains(&one), "{one}");
        // Over the limit: refused, nothing charged.
        let mut big: Vec<u8> = Vec::new();
        assert!(budget.run(|| big.try_reserve_exact(4000)).is_err());
        assert_eq!(budget.used(), one);
        // Counted only: allowed past the limit.
        budget
            .run(|| count_only(|| big.try_reserve_exact(4000)))
            .unwrap();
        assert!(budget.used() > 4096 && budget.peak() == budget.used());
        drop(big);
        assert_eq!(budget.used(), one);
        // Growth is charged to the block's budget, even outside its run.
        kept.try_reserve_exact(2000).unwrap();
        assert!(budget.used() >= 2000);
        // Freed after the handle is gone: the counters outlive it, nothing dangles.
        let other = budget.clone();
        drop(budget);
        drop(kept);
        assert_eq!(other.used(), 0);
        assert!(other.peak() > 4096);
        assert!(installed());
    }

    #[test]
    fn blocks_freed_on_another_thread_credit_their_budget() {
        let budget = Budget::new(1 << 20).unwrap();
        let mut block: Vec<u8> = Vec::new();
        budget.run(|| block.try_reserve_exact(100)).unwrap();
        let watcher = budget.clone();
        drop(budget);
        std::thread::spawn(move || drop(block)).join().unwrap();
        assert_eq!(watcher.used(), 0);
        // The other thread's own allocations were never charged to it.
        assert!(watcher.peak() < 200);
    }

    #[test]
    fn an_inherited_budget_charges_its_thread_and_gives_its_reference_up() {
        let budget = Budget::new(4096).unwrap();
        let inherited = budget.run(inherit);
        assert_eq!(budget.state().refs.load(Ordering::Relaxed), 2);
        let (kept, refused) = inherited.run(|| {
            let mut kept: Vec<u8> = Vec::new();
            kept.try_reserve_exact(1000).unwrap();
            (kept, Vec::<u8>::new().try_reserve_exact(8192).is_err())
        });
        assert!(refused, "past the limit");
        assert!(budget.used() >= 1000, "{}", budget.used());
        drop(kept);
        assert_eq!(budget.used(), 0);
        // Dropped unused, it gives its reference up.
        let unused = budget.run(inherit);
        drop(unused);
        assert_eq!(budget.state().refs.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn nested_runs_restore_the_outer_budget() {
        let outer = Budget::new(usize::MAX).unwrap();
        let inner = Budget::new(0).unwrap();
        outer.run(|| {
            let mut v: Vec<u64> = Vec::new();
            assert!(inner.run(|| v.try_reserve(1)).is_err());
            v.try_reserve(1).unwrap();
            assert!(outer.used() > 0);
        });
        assert_eq!((outer.used(), inner.used(), inner.peak()), (0, 0, 0));
    }

    #[test]
    fn over_aligned_blocks_keep_their_alignment() {
        #[repr(align(64))]
        struct Wide(#[allow(dead_code)] u8);
        let budget = Budget::new(usize::MAX).unwrap();
        let mut v: Vec<Wide> = Vec::new();
        budget.run(|| v.try_reserve_exact(3)).unwrap();
        assert_eq!(v.as_ptr() as usize % 64, 0);
        v.push(Wide(1));
        v.try_reserve_exact(100).unwrap();
        assert_eq!(v.as_ptr() as usize % 64, 0);
        assert!(budget.used() >= 101 * 64);
        drop(v);
        assert_eq!(budget.used(), 0);
    }
}
