//! No-std build check for btfgen: a `#![no_std]` static library with its own panic handler and
//! a bump allocator over a static array. It parses a tiny hand-written BTF blob, copies every
//! type through `BtfWriter` and parses the result again, so the core's parse, validate and
//! write paths are compiled (and, via `main.c`, run) without `std`.
#![no_std]

extern crate alloc;

use btfgen::btf::Btf;
use btfgen::btf::write::BtfWriter;
use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicUsize, Ordering};

/// Bytes available to the allocator.
const HEAP_SIZE: usize = 1 << 20;

/// A bump allocator: hands out increasing, never-reused ranges of a static array and returns
/// null when it is exhausted (which btfgen must turn into `Error::OutOfMemory`).
struct Bump {
    heap: UnsafeCell<[u8; HEAP_SIZE]>,
    /// Offset of the first free byte.
    next: AtomicUsize,
}

// SAFETY: the heap is only reached through `alloc`, which reserves disjoint ranges with an
// atomic compare-exchange, so concurrent callers never receive overlapping memory.
unsafe impl Sync for Bump {}

// SAFETY: `alloc` returns either null or a pointer to `layout.size()` bytes inside `heap`,
// aligned to `layout.align()`, that no other allocation overlaps; `dealloc` never frees.
unsafe impl GlobalAlloc for Bump {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let base = self.heap.get().cast::<u8>();
        let mut used = self.next.load(Ordering::Relaxed);
        loop {
            // Padding that aligns `base + used` to `layout.align()` (a power of two).
            let pad = (base as usize).wrapping_add(used).wrapping_neg() & (layout.align() - 1);
            let Some(end) = used
                .checked_add(pad)
                .and_then(|start| start.checked_add(layout.size()))
                .filter(|&end| end <= HEAP_SIZE)
            else {
                return core::ptr::null_mut();
            };
            match self
                .next
                .compare_exchange_weak(used, end, Ordering::Relaxed, Ordering::Relaxed)
            {
                // SAFETY: `used + pad <= end <= HEAP_SIZE`, so the offset stays inside `heap`.
                Ok(_) => return unsafe { base.add(used + pad) },
                Err(now) => used = now,
            }
        }
    }

    unsafe fn dealloc(&self, _ptr: *mut u8, _layout: Layout) {}
}

#[global_allocator]
static ALLOCATOR: Bump = Bump {
    heap: UnsafeCell::new([0; HEAP_SIZE]),
    next: AtomicUsize::new(0),
};

unsafe extern "C" {
    /// libc's `abort`, resolved when the library is linked into a C program.
    fn abort() -> !;
}

#[panic_handler]
fn panic(_info: &core::panic::PanicInfo<'_>) -> ! {
    // SAFETY: `abort` takes no arguments and never returns.
    unsafe { abort() }
}

/// `[1] INT 'int' size 4, signed 32 bits` and `[2] PTR -> [1]`, little-endian.
const TINY_BTF: [u8; 57] = [
    0x9f, 0xeb, 1, 0, // magic, version, flags
    24, 0, 0, 0, // hdr_len
    0, 0, 0, 0, // type_off
    28, 0, 0, 0, // type_len
    28, 0, 0, 0, // str_off
    5, 0, 0, 0, // str_len
    1, 0, 0, 0, 0, 0, 0, 1, 4, 0, 0, 0, 0x20, 0, 0, 1, // [1] INT "int"
    0, 0, 0, 0, 0, 0, 0, 2, 1, 0, 0, 0, // [2] PTR -> [1]
    0, b'i', b'n', b't', 0, // strings
];

fn round_trip() -> btfgen::Result<u32> {
    let btf = Btf::parse(&TINY_BTF)?;
    let int = btf.type_by_id(1)?;
    if btf.type_name(&int)? != "int" || btf.resolve_size(2)? != 8 {
        return Err(btfgen::Error::InvalidArgument("tiny BTF decoded wrongly"));
    }
    let mut writer = BtfWriter::new(btf.endian())?;
    for ty in btf.types() {
        writer.copy_type(&btf, &ty?, Ok, |_| true)?;
    }
    let out = writer.finish()?;
    if out.as_slice() != TINY_BTF.as_slice() {
        return Err(btfgen::Error::InvalidArgument(
            "copy differs from the original",
        ));
    }
    Ok(Btf::parse(&out)?.type_cnt())
}

/// Parse, copy and re-parse the tiny BTF; returns its type count (3), or -1 on any error.
#[unsafe(no_mangle)]
pub extern "C" fn btfgen_no_std_check() -> i32 {
    match round_trip() {
        Ok(count) => count as i32,
        Err(_) => -1,
    }
}

/// Ask btfgen to parse the tiny BTF with the heap already exhausted; returns 1 when it reports
/// `Error::OutOfMemory` instead of aborting. Call it last: it uses up the heap.
#[unsafe(no_mangle)]
pub extern "C" fn btfgen_no_std_check_oom() -> i32 {
    // Take every remaining byte in one allocation, so every later allocation fails.
    let rest = HEAP_SIZE - ALLOCATOR.next.load(Ordering::Relaxed);
    let mut hog: alloc::vec::Vec<u8> = alloc::vec::Vec::new();
    if hog.try_reserve_exact(rest).is_err() {
        return -1;
    }
    let result = Btf::parse(&TINY_BTF).map(|btf| btf.type_cnt());
    drop(hog);
    i32::from(matches!(result, Err(btfgen::Error::OutOfMemory)))
}
