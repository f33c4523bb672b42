//! The C library's memory: the allocator hooks of `btfgen_set_allocator()` and the budgets of
//! `bpf_reloc_info__new_opts()`.
//!
//! With the `ffi-global-alloc` feature (`make lib`), the library's global allocator is a
//! [`BudgetAlloc`](crate::budget::BudgetAlloc) in front of `HookAlloc`: every block the
//! library allocates, Rust's standard library included, goes to the client's hooks when they
//! are set (the C library's `malloc` otherwise) and is charged to the budget of the
//! `bpf_reloc_info` call that made it.
//! Without that feature (a Rust program using the C ABI), the program's own global allocator
//! serves everything, and `btfgen_set_allocator()` and memory limits are `EOPNOTSUPP`.

use super::errno::{Errno, set_errno};
use super::guard::{guard, guard_int, guard_ptr};
use super::{btf_reloc_info, files, handle, new_reloc_info};
use crate::budget::Budget;
use core::ffi::{c_char, c_int, c_void};

/// `malloc`-style allocator hooks for `btfgen_set_allocator()`.
///
/// Zero it, set `sz` to `sizeof(struct btfgen_allocator)` (as libbpf's opts: bytes past the
/// fields this library knows must be zero), `malloc` and `free`; `realloc` is optional. Every
/// callback gets `ctx` first. Blocks must be aligned for any C type (as `malloc`'s: 16 bytes on
/// 64-bit Linux); the library asks for nothing more aligned. The hooks may be called from any
/// thread that calls into the library, and must not call into the library themselves.
#[repr(C)]
#[allow(non_camel_case_types)]
pub struct btfgen_allocator {
    /// Size of this struct, for forward/backward compatibility.
    pub sz: usize,
    /// Allocate `size` (> 0) bytes; NULL when out of memory (the library call then fails with
    /// `ENOMEM`).
    pub malloc: Option<unsafe extern "C" fn(ctx: *mut c_void, size: usize) -> *mut c_void>,
    /// Resize the block `ptr` of `old_size` bytes to `new_size` (> 0) bytes, keeping its first
    /// bytes; NULL (the block left as it was) when out of memory. NULL: the library uses
    /// `malloc`, copy, `free`.
    pub realloc: Option<
        unsafe extern "C" fn(
            ctx: *mut c_void,
            ptr: *mut c_void,
            old_size: usize,
            new_size: usize,
        ) -> *mut c_void,
    >,
    /// Free the block `ptr` of `size` bytes (never NULL).
    pub free: Option<unsafe extern "C" fn(ctx: *mut c_void, ptr: *mut c_void, size: usize)>,
    /// Passed to every callback.
    pub ctx: *mut c_void,
}

/// End of the last field of [`btfgen_allocator`] this library knows.
const ALLOCATOR_KNOWN_END: usize =
    core::mem::offset_of!(btfgen_allocator, ctx) + size_of::<*mut c_void>();

/// How the library converts DWARF: on two threads, unless the client gave allocator hooks
/// (`btfgen_set_allocator()`), which may serve one thread at a time and are called only from
/// the client's own threads; types only (the library relocates against them: no function
/// is read).
pub(super) fn convert_options() -> crate::dwarf_input::ConvertOptions<'static> {
    #[cfg(feature = "ffi-global-alloc")]
    let threads = !global::hooks_given();
    #[cfg(not(feature = "ffi-global-alloc"))]
    let threads = true;
    crate::dwarf_input::ConvertOptions {
        threads,
        functions: false,
        ..Default::default()
    }
}

/// The library's global allocator (`ffi-global-alloc`): budgets in front of the hooks.
#[cfg(feature = "ffi-global-alloc")]
mod global {
    use crate::budget::BudgetAlloc;
    use core::alloc::{GlobalAlloc, Layout};
    use core::ffi::c_void;
    use core::ptr;
    use std::alloc::System;

    /// The hooks, validated.
    #[derive(Clone, Copy)]
    pub(super) struct Hooks {
        pub(super) malloc: unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void,
        pub(super) realloc:
            Option<unsafe extern "C" fn(*mut c_void, *mut c_void, usize, usize) -> *mut c_void>,
        pub(super) free: unsafe extern "C" fn(*mut c_void, *mut c_void, usize),
        pub(super) ctx: *mut c_void,
    }

    // SAFETY: `ctx` is only ever passed back to the client's hooks, which the client provides for
    // calls from any thread that calls into the library (`btfgen_allocator`'s contract).
    unsafe impl Send for Hooks {}
    // SAFETY: as above; `Hooks` is never changed once set.
    unsafe impl Sync for Hooks {}

    /// Decided once, by `btfgen_set_allocator()` (the hooks) or by the library's first allocation
    /// (none: `malloc` for good), whichever comes first; so every block is freed by the allocator
    /// that made it.
    static HOOKS: spin::Once<Option<Hooks>> = spin::Once::new();

    /// The most alignment the hooks guarantee (`malloc`'s, `alignof(max_align_t)`).
    const HOOK_ALIGN: usize = 16;

    /// The library's allocator under the budgets: the client's hooks, or the system allocator.
    pub struct HookAlloc;

    impl HookAlloc {
        fn hooks() -> Option<&'static Hooks> {
            HOOKS.call_once(|| None).as_ref()
        }
    }

    /// Whether the client's hooks serve the library's allocations.
    pub(super) fn hooks_given() -> bool {
        HookAlloc::hooks().is_some()
    }

    // SAFETY: without hooks every call goes to `System`, which upholds the contract. With
    // hooks, blocks come from the client's `malloc`/`realloc`, which by `btfgen_allocator`'s
    // contract return NULL or `size` usable bytes aligned to `HOOK_ALIGN`; layouts needing
    // more alignment get null. Hooks, once decided, never change, so each block is freed by
    // the allocator that made it.
    unsafe impl GlobalAlloc for HookAlloc {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            match Self::hooks() {
                // SAFETY: the caller's `layout` contract is `System`'s.
                None => unsafe { System.alloc(layout) },
                Some(_) if layout.align() > HOOK_ALIGN => ptr::null_mut(),
                // SAFETY: the client's `malloc`, called as its contract says (size > 0: a
                // `GlobalAlloc` is never asked for zero bytes).
                Some(hooks) => unsafe { (hooks.malloc)(hooks.ctx, layout.size()) }.cast(),
            }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            match Self::hooks() {
                // SAFETY: `ptr` came from `System` for `layout` (hooks never change).
                None => unsafe { System.dealloc(ptr, layout) },
                // SAFETY: `ptr` is a live block of the client's allocator of `layout.size()` bytes.
                Some(hooks) => unsafe { (hooks.free)(hooks.ctx, ptr.cast(), layout.size()) },
            }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            match Self::hooks() {
                // SAFETY: `ptr` came from `System` for `layout`; the caller's contract is its.
                None => unsafe { System.realloc(ptr, layout, new_size) },
                Some(Hooks {
                    realloc: Some(realloc),
                    ctx,
                    ..
                }) => {
                    // SAFETY: `ptr` is a live block of the client's allocator of `layout.size()`
                    // bytes; `new_size` > 0 with the same alignment.
                    unsafe { realloc(*ctx, ptr.cast(), layout.size(), new_size) }.cast()
                }
                Some(hooks) => {
                    // SAFETY: a fresh block of `new_size` bytes with `layout`'s alignment, which
                    // `alloc` checks like any other.
                    let new = unsafe {
                        self.alloc(Layout::from_size_align_unchecked(new_size, layout.align()))
                    };
                    if !new.is_null() {
                        // SAFETY: both blocks are live, distinct, and at least this long.
                        unsafe { ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size)) };
                        // SAFETY: `ptr` is a live block of the client's allocator, freed once.
                        unsafe { (hooks.free)(hooks.ctx, ptr.cast(), layout.size()) };
                    }
                    new
                }
            }
        }
    }

    #[global_allocator]
    static GLOBAL: BudgetAlloc<HookAlloc> = BudgetAlloc::new(HookAlloc);

    /// Make `hooks` the allocator for good; `false` if that was decided already.
    pub(super) fn install(hooks: Hooks) -> bool {
        let mut installed = false;
        HOOKS.call_once(|| {
            installed = true;
            Some(hooks)
        });
        installed
    }
}
/// `EOPNOTSUPP` unless this build's global allocator is the library's own.
fn own_allocator() -> Result<(), Errno> {
    if cfg!(feature = "ffi-global-alloc") {
        Ok(())
    } else {
        Err(Errno(libc::EOPNOTSUPP))
    }
}

/// Validate `a` and make its hooks the library's allocator.
///
/// # Safety
///
/// `a` must be NULL or valid for reading `a->sz` bytes.
pub(super) unsafe fn set_allocator(a: *const btfgen_allocator) -> Result<(), Errno> {
    own_allocator()?;
    // SAFETY: the caller's contract.
    let sz = unsafe { super::opts_size(a.cast(), ALLOCATOR_KNOWN_END) }?;
    if sz.is_none_or(|sz| sz < ALLOCATOR_KNOWN_END) {
        return Err(Errno::INVAL);
    }
    // SAFETY: `a` is non-null and its `sz` readable bytes hold every field.
    let a = unsafe { &*a };
    let (Some(malloc), Some(free)) = (a.malloc, a.free) else {
        return Err(Errno::INVAL);
    };
    #[cfg(feature = "ffi-global-alloc")]
    if !global::install(global::Hooks {
        malloc,
        realloc: a.realloc,
        free,
        ctx: a.ctx,
    }) {
        return Err(Errno(libc::EBUSY));
    }
    #[cfg(not(feature = "ffi-global-alloc"))]
    let _ = (malloc, free); // unreachable: `own_allocator` failed
    Ok(())
}

/// Options of `bpf_reloc_info__new_opts()` (libbpf's opts convention).
///
/// Zero it (as `LIBBPF_OPTS()` does) and set `sz` to `sizeof(struct bpf_reloc_info_opts)`: a
/// `sz` below `sizeof(size_t)` or non-zero bytes past the fields this library knows are
/// `EINVAL`.
#[repr(C)]
#[allow(non_camel_case_types)]
pub struct bpf_reloc_info_opts {
    /// Size of this struct, for forward/backward compatibility.
    pub sz: usize,
    /// Most bytes the `bpf_reloc_info` may have allocated at once on the heap, over every call
    /// on it (a target BTF read into memory included, a mapped one not); 0: no limit. A call that would exceed it fails
    /// with `ENOMEM` and changes nothing. Needs the library's own allocator (`EOPNOTSUPP`
    /// otherwise: a Rust program using the C ABI without the `ffi-global-alloc` feature).
    pub mem_limit: usize,
}

/// End of the last field of [`bpf_reloc_info_opts`] this library knows.
const RELOC_INFO_OPTS_KNOWN_END: usize =
    core::mem::offset_of!(bpf_reloc_info_opts, mem_limit) + size_of::<usize>();

/// The budget `opts` asks for: its `mem_limit` (0 or absent: none).
///
/// # Safety
///
/// `opts` must be NULL or valid for reading `opts->sz` bytes.
pub(super) unsafe fn budget_opt(opts: *const bpf_reloc_info_opts) -> Result<Budget, Errno> {
    // SAFETY: the caller's contract.
    let sz = unsafe { super::opts_size(opts.cast(), RELOC_INFO_OPTS_KNOWN_END) }?;
    let limit = match sz {
        // SAFETY: `opts` is non-null and its `sz` readable bytes cover `mem_limit`.
        Some(sz) if sz >= RELOC_INFO_OPTS_KNOWN_END => unsafe { (*opts).mem_limit },
        _ => 0,
    };
    if limit == 0 {
        return Ok(Budget::new(usize::MAX)?);
    }
    own_allocator()?;
    Ok(Budget::new(limit)?)
}

/// Makes the hooks in `a` the allocator of everything this library allocates from then on.
///
/// Must be called before any other function of this library (once it has allocated, its
/// blocks belong to the C library's `malloc` for good), and only once: both give `-EBUSY`. The
/// struct is copied; `ctx` must stay valid as long as the library is used.
///
/// Returns 0, or a negative errno: `-EINVAL` (NULL `a`, invalid `sz`, NULL `malloc` or `free`),
/// `-EBUSY`, `-EOPNOTSUPP` (the library was built without its own allocator: a Rust program
/// using the C ABI without the `ffi-global-alloc` feature).
///
/// # Safety
///
/// `a` must be NULL or valid for reading `a->sz` bytes; its callbacks must behave as
/// `struct btfgen_allocator` describes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn btfgen_set_allocator(a: *const btfgen_allocator) -> c_int {
    // SAFETY: the caller's contract.
    guard_int(|| unsafe { set_allocator(a) })
}

/// Creates a `btf_reloc_info` as `bpf_reloc_info__new()` does, with options: `opts` may be
/// NULL (no options); see `struct bpf_reloc_info_opts`.
///
/// With a `mem_limit`, every later call on the info (`bpf_reloc_info__add_module_btf`,
/// `bpf_object__reloc_info_gen`, `bpf_reloc_info__get_btf`) that would take the info's memory
/// past it fails with `-ENOMEM` (NULL and `errno` = `ENOMEM` for `get_btf`), records nothing
/// and frees what it allocated: the info stays usable (a call that needs less can still
/// succeed) and freeable. So does this call: NULL with `errno` = `ENOMEM` when the target BTF
/// does not fit. The memory counted is the heap only, everything the library allocates for the
/// info: the target and module BTFs read into memory (files the kernel does not map: pipes,
/// module BTFs in sysfs), their indexes, relocation records, and the bytes of BTFs
/// `bpf_reloc_info__get_btf()` returns (until their `btf__free()`); not mapped regular files
/// (page cache, shared with every reader), the info's own handle and those of returned BTFs
/// (a few words each).
///
/// Returns NULL on error with `errno` set: as `bpf_reloc_info__new()`, `EINVAL` for invalid
/// `opts`, `EOPNOTSUPP` for a `mem_limit` without the library's own allocator.
///
/// # Safety
///
/// `targ_btf_path` must be NULL or a NUL-terminated string; `opts` NULL or valid for reading
/// `opts->sz` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpf_reloc_info__new_opts(
    targ_btf_path: *const c_char,
    opts: *const bpf_reloc_info_opts,
) -> *mut btf_reloc_info {
    guard_ptr(|| {
        // SAFETY: the caller passes NULL or a NUL-terminated string, valid during this call.
        let path = unsafe { files::c_path(targ_btf_path) }?;
        // SAFETY: the caller passes NULL or `opts` valid for `opts->sz` bytes.
        let budget = unsafe { budget_opt(opts) }?;
        new_reloc_info(path, budget)
    })
}

/// The most heap memory, in bytes, `info` had allocated at once so far (what
/// `bpf_reloc_info_opts.mem_limit` is compared with): the size to give an info that must
/// succeed on the same inputs. 0 for NULL (`errno` = `EINVAL`), and when the library was built
/// without its own allocator (nothing is counted).
///
/// # Safety
///
/// `info` must be NULL or a live `btf_reloc_info`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpf_reloc_info__mem_peak(info: *const btf_reloc_info) -> usize {
    guard(0, || {
        // SAFETY: the caller passes NULL, a live `btf_reloc_info`, or a foreign pointer to
        // readable memory (refused by its tag).
        match unsafe { handle::get(info) } {
            Ok(info) => info.budget.peak(),
            Err(Errno(code)) => {
                set_errno(code);
                0
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::errno::errno;
    use core::ptr;

    fn fields_target() -> alloc::ffi::CString {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/targets/btf__fields.btf"
        );
        alloc::ffi::CString::new(path).unwrap()
    }

    // This test build's global allocator is not the library's (`ffi-global-alloc` is off):
    // hooks and limits are refused, the options are validated all the same.
    #[cfg(not(feature = "ffi-global-alloc"))]
    #[test]
    fn without_the_library_allocator_hooks_and_limits_are_refused() {
        let target = fields_target();
        let mut opts = bpf_reloc_info_opts {
            sz: size_of::<bpf_reloc_info_opts>(),
            mem_limit: 1 << 20,
        };
        // SAFETY: every pointer is NULL, a NUL-terminated string or a live struct/handle.
        unsafe {
            assert_eq!(btfgen_set_allocator(ptr::null()), -libc::EOPNOTSUPP);
            assert!(bpf_reloc_info__new_opts(target.as_ptr(), &opts).is_null());
            assert_eq!(errno(), libc::EOPNOTSUPP);
            opts.mem_limit = 0;
            let info = bpf_reloc_info__new_opts(target.as_ptr(), &opts);
            assert!(!info.is_null());
            super::super::bpf_reloc_info__free(info);
            opts.sz = 4;
            assert!(bpf_reloc_info__new_opts(target.as_ptr(), &opts).is_null());
            assert_eq!(errno(), libc::EINVAL);
            assert_eq!(bpf_reloc_info__mem_peak(ptr::null()), 0);
            assert_eq!(errno(), libc::EINVAL);
        }
    }
}
