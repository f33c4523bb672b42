//! No-std check for btfgen: a `#![no_std]` static library with its own panic handler and a
//! bounded global allocator, talc over a static arena behind btfgen's budget layer
//! ([`BudgetAlloc`]). Through it (and `main.c`), the core runs without `std`: it parses a tiny
//! hand-written BTF blob, copies it through `BtfWriter` and parses the result again; it
//! minimizes a CO-RE object against a kernel BTF (the whole pipeline: parse, relocate, emit)
//! for `main.c` to compare with `btfgen min-core-btf`'s output; and it reports running out of
//! memory, under a budget, as `Error::OutOfMemory`.
#![no_std]

extern crate alloc;

use btfgen::btf::Btf;
use btfgen::btf::write::BtfWriter;
use btfgen::budget::{Budget, BudgetAlloc};
use btfgen::core::Targets;
use btfgen::minimize::RelocInfo;
use btfgen::object::BpfObject;
use spinning_top::RawSpinlock;
use talc::TalcLock;
use talc::source::Claim;

/// Bytes of the arena: all the memory btfgen gets.
const ARENA_SIZE: usize = 4 << 20;

#[global_allocator]
static ALLOCATOR: BudgetAlloc<TalcLock<RawSpinlock, Claim>> = BudgetAlloc::new(TalcLock::new(
    // SAFETY: the arena is used by this allocator only (nothing else names it), for the whole
    // program.
    unsafe {
        static mut ARENA: [u8; ARENA_SIZE] = [0; ARENA_SIZE];
        Claim::array(&raw mut ARENA)
    },
));

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

/// Minimize the object in `obj` against the kernel BTF in `target` into `out`.
fn minimize(target: &[u8], obj: &[u8], out: &mut [u8]) -> btfgen::Result<usize> {
    let target = Btf::parse_raw_or_elf(target, None)?;
    let mut info = RelocInfo::new(Targets::new(&target));
    let object = BpfObject::parse(obj)?;
    let local = Btf::parse(
        object
            .btf_bytes()
            .ok_or(btfgen::Error::MissingSection(".BTF"))?,
    )?;
    info.add_object("object", &object, &local)?;
    let bytes = info.to_btf()?.bytes;
    out.get_mut(..bytes.len())
        .ok_or(btfgen::Error::InvalidArgument("output buffer too small"))?
        .copy_from_slice(&bytes);
    Ok(bytes.len())
}

/// Minimize the object (`obj`, `obj_len` bytes) against the kernel BTF (`target`,
/// `target_len` bytes) into `out` (`out_cap` bytes) under a budget of `limit` bytes; returns
/// the output's length, -1 on an error other than out-of-memory, -2 on out-of-memory. The
/// budget's peak is stored in `*peak`.
///
/// # Safety
///
/// Each pointer must be valid for its length (`out` for writing), and `peak` for a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn btfgen_no_std_minimize(
    target: *const u8,
    target_len: usize,
    obj: *const u8,
    obj_len: usize,
    out: *mut u8,
    out_cap: usize,
    limit: usize,
    peak: *mut usize,
) -> isize {
    // SAFETY: the caller's contract.
    let (target, obj, out) = unsafe {
        (
            core::slice::from_raw_parts(target, target_len),
            core::slice::from_raw_parts(obj, obj_len),
            core::slice::from_raw_parts_mut(out, out_cap),
        )
    };
    let Ok(budget) = Budget::new(limit) else {
        return -2;
    };
    let result = budget.run(|| minimize(target, obj, out));
    // SAFETY: the caller's contract.
    unsafe { peak.write(budget.peak()) };
    match result {
        Ok(len) => len as isize,
        Err(btfgen::Error::OutOfMemory) => -2,
        Err(_) => -1,
    }
}

/// 1 when asking for the whole arena fails as out-of-memory (the arena is the bound: there is
/// nothing behind it), 0 otherwise.
#[unsafe(no_mangle)]
pub extern "C" fn btfgen_no_std_arena_bounded() -> i32 {
    let mut hog: alloc::vec::Vec<u8> = alloc::vec::Vec::new();
    i32::from(hog.try_reserve_exact(ARENA_SIZE).is_err())
}
