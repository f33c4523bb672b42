//! The C ABI (feature `ffi`): the seed's `bpf_reloc_info` API and the libbpf functions a client
//! needs around it, with libbpf's names, prototypes and 1.x error conventions, so that a client
//! written against libbpf + the BTFGen patch builds against `btfgen.h` unchanged.
//!
//! `include/btfgen.h` is generated from this module by cbindgen (`make header`); the C
//! libraries are built by `make lib` (`libbtfgen.so.1`, `libbtfgen.a`), exporting exactly these
//! functions under the version node `BTFGEN_0.1` (`capi.map`).
//!
//! A complete client:
//!
//! ```c
//! struct btf_reloc_info *info = bpf_reloc_info__new("/sys/kernel/btf/vmlinux");
//! if (!info) return -errno;
//! for (int i = 0; i < n; i++) {
//!     struct bpf_object *obj = bpf_object__open_file(paths[i], NULL);
//!     if (!obj) { err = -errno; goto out; }
//!     err = bpf_object__reloc_info_gen(info, obj);
//!     bpf_object__close(obj);
//!     if (err) goto out;
//! }
//! struct btf *btf = bpf_reloc_info__get_btf(info);
//! if (!btf) { err = -errno; goto out; }
//! err = btf__save_to_file(btf, "min.btf");
//! btf__free(btf);
//! out:
//! bpf_reloc_info__free(info);
//! ```
//!
//! Conventions, as libbpf 1.x: a function returning a pointer returns NULL on failure and sets
//! `errno`; a function returning `int` returns 0 or a negative errno (and sets `errno` to
//! match). `libbpf_get_error()` turns a NULL result into `-errno`. Every pointer argument may be
//! NULL (`EINVAL`; free functions do nothing). No panic unwinds into C: one is caught at the
//! boundary and reported as `ENOTRECOVERABLE`. Objects are independent; one object must not be
//! used by two threads at once.
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(unsafe_op_in_unsafe_fn)]

mod allocator;
mod anchor;
pub mod core_relos;
mod errno;
mod files;
mod guard;
mod handle;
mod print;
pub mod select;
mod session;

use crate::btf::Btf;
use crate::budget::Budget;
use crate::core::verdict::Verdict;
use crate::error::Error;
use crate::fallible;
use crate::mapped::FileBytes;
use crate::object::BpfObject;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ffi::{CStr, c_char, c_int, c_long, c_void};
use core::mem::{offset_of, size_of};
use core::ptr;
use errno::Errno;
use guard::{PANIC_ERRNO, guard, guard_int, guard_ptr, guard_value};
use handle::Tagged;
pub use print::libbpf_print_fn_t;
use session::Session;

/// A BTF (libbpf's `struct btf`): raw BTF bytes, base or split, validated.
///
/// Created by `btf__parse()`, `btf__parse_split()` and `bpf_reloc_info__get_btf()`; freed by
/// `btf__free()`.
#[allow(non_camel_case_types)]
pub struct btf {
    data: Arc<BtfData>,
}

/// What a [`btf`] holds. Shared so that a split BTF keeps its base's bytes alive even when the
/// caller frees the base first.
struct BtfData {
    /// This BTF's own raw bytes (for split BTF: without the base's), as `btf__raw_data()`
    /// returns them.
    raw: Vec<u8>,
    /// The base of a split BTF.
    base: Option<Arc<BtfData>>,
    /// `btf__type_cnt`: one more than the largest type id, base included.
    type_cnt: u32,
}

impl BtfData {
    /// Run `f` on the parsed BTF (and its bases).
    fn with_parsed<R>(&self, f: &mut dyn FnMut(&Btf<'_>) -> crate::Result<R>) -> crate::Result<R> {
        match &self.base {
            None => f(&Btf::parse(&self.raw)?),
            Some(base) => base.with_parsed(&mut |base| f(&Btf::parse_split(&self.raw, base)?)),
        }
    }

    /// Validate `raw` (on `base`, when split) and wrap it.
    fn new_handle(raw: Vec<u8>, base: Option<Arc<BtfData>>) -> Result<btf, Errno> {
        let type_cnt = match &base {
            None => Btf::parse(&raw)?.type_cnt(),
            Some(base) => {
                base.with_parsed(&mut |base| Ok(Btf::parse_split(&raw, base)?.type_cnt()))?
            }
        };
        Ok(btf {
            data: Arc::new(BtfData {
                raw,
                base,
                type_cnt,
            }),
        })
    }
}

impl Tagged for btf {
    const TAG: u64 = u64::from_le_bytes(*b"\xb7BTFGbtf");
}

/// Not produced by this library: `btf__parse()` takes a `struct btf_ext **` only for
/// prototype compatibility with libbpf and always stores NULL there.
#[allow(non_camel_case_types)]
pub struct btf_ext {
    _opaque: (),
}

/// A BPF ELF object opened for CO-RE relocation (libbpf's `struct bpf_object`): its bytes,
/// validated at open, and its name.
///
/// Created by `bpf_object__open_file()`, `bpf_object__open_mem()` and `bpf_object__open()`;
/// freed by `bpf_object__close()`.
#[allow(non_camel_case_types)]
pub struct bpf_object {
    name: String,
    data: Vec<u8>,
}

impl bpf_object {
    /// Validate the ELF, its `.BTF.ext` and (when present) its `.BTF`.
    fn open(data: Vec<u8>, name: String) -> Result<bpf_object, Errno> {
        let rejected = || print::warn_rejected("invalid BPF object", &name);
        let obj = BpfObject::parse(&data).map_err(rejected())?;
        if let Some(local) = obj.btf_bytes() {
            Btf::parse(local).map_err(rejected())?;
        }
        Ok(bpf_object { name, data })
    }
}

impl Tagged for bpf_object {
    const TAG: u64 = u64::from_le_bytes(*b"\xb7BTFGobj");
}

/// The seed's `struct btf_reloc_info`: a target BTF (plus optional module BTFs) and what the
/// CO-RE relocations of every object added so far need from it.
///
/// Created by `bpf_reloc_info__new()`; freed by `bpf_reloc_info__free()`.
#[allow(non_camel_case_types)]
pub struct btf_reloc_info {
    session: Session,
    /// What the session may allocate, and its peak (`bpf_reloc_info__new_opts`).
    budget: Budget,
    /// Set while the session is being changed; still set afterwards only if a panic
    /// interrupted the change, and then every later call fails with `ENOTRECOVERABLE`.
    poisoned: bool,
}

impl Tagged for btf_reloc_info {
    const TAG: u64 = u64::from_le_bytes(*b"\xb7BTFGinf");
}

impl btf_reloc_info {
    /// Run `f` on the session, poisoning it if `f` panics.
    fn with_session<R>(
        &mut self,
        f: impl FnOnce(&mut Session) -> Result<R, Errno>,
    ) -> Result<R, Errno> {
        if self.poisoned {
            return Err(Errno(PANIC_ERRNO));
        }
        self.poisoned = true;
        let result = self.budget.run(|| f(&mut self.session));
        self.poisoned = false;
        result
    }
}

/// Options of `bpf_object__open_file()` and `bpf_object__open_mem()`, laid out exactly as
/// libbpf 1.1's `struct bpf_object_open_opts`.
///
/// Set `sz` to `sizeof(struct bpf_object_open_opts)` and zero the whole struct first (as
/// libbpf's `LIBBPF_OPTS()` does): as in libbpf, bytes past the fields this library knows must be
/// zero, and a `sz` smaller than `sizeof(size_t)` is invalid (`EINVAL`). Only `sz` and
/// `object_name` are used; the other fields concern loading into the kernel and are ignored.
#[repr(C)]
#[allow(non_camel_case_types)]
pub struct bpf_object_open_opts {
    /// Size of this struct, for forward/backward compatibility.
    pub sz: usize,
    /// Object name override (default: the path for `bpf_object__open_file`,
    /// `"<address>-<size>"` in hex for `bpf_object__open_mem`).
    pub object_name: *const c_char,
    /// Ignored (libbpf: parse map definitions non-strictly).
    pub relaxed_maps: bool,
    /// Ignored (libbpf: pin root directory of auto-pinned maps).
    pub pin_root_path: *const c_char,
    /// Unused (libbpf stubs out its removed `attach_prog_fd` here with `__u32 :32`).
    pub _unused_attach_prog_fd: u32,
    /// Ignored (libbpf: extra Kconfig content for `CONFIG_xxx` externs).
    pub kconfig: *const c_char,
    /// Ignored (libbpf: custom BTF for CO-RE relocations; here the target BTF is the one given
    /// to `bpf_reloc_info__new`).
    pub btf_custom_path: *const c_char,
    /// Ignored (libbpf: kernel log buffer).
    pub kernel_log_buf: *mut c_char,
    /// Ignored (libbpf: size of `kernel_log_buf`).
    pub kernel_log_size: usize,
    /// Ignored (libbpf: kernel log level).
    pub kernel_log_level: u32,
}

// libbpf 1.1's layout on LP64 (checked against <bpf/libbpf.h> by c-tests/abi too).
#[cfg(target_pointer_width = "64")]
const _: () = {
    assert!(offset_of!(bpf_object_open_opts, object_name) == 8);
    assert!(offset_of!(bpf_object_open_opts, relaxed_maps) == 16);
    assert!(offset_of!(bpf_object_open_opts, pin_root_path) == 24);
    assert!(offset_of!(bpf_object_open_opts, _unused_attach_prog_fd) == 32);
    assert!(offset_of!(bpf_object_open_opts, kconfig) == 40);
    assert!(offset_of!(bpf_object_open_opts, btf_custom_path) == 48);
    assert!(offset_of!(bpf_object_open_opts, kernel_log_buf) == 56);
    assert!(offset_of!(bpf_object_open_opts, kernel_log_size) == 64);
    assert!(offset_of!(bpf_object_open_opts, kernel_log_level) == 72);
    assert!(size_of::<bpf_object_open_opts>() == 80);
};

/// End of the last field this library knows (libbpf's `offsetofend(..., __last_field)`).
const OPTS_KNOWN_END: usize = offset_of!(bpf_object_open_opts, kernel_log_level) + size_of::<u32>();

/// Validate `opts` as libbpf's `OPTS_VALID` does and return the `object_name` it sets.
///
/// # Safety
///
/// `opts` must be NULL or point to at least `opts->sz` readable bytes.
unsafe fn object_name_opt(opts: *const bpf_object_open_opts) -> Result<Option<String>, Errno> {
    // SAFETY: the caller's contract.
    let Some(sz) = unsafe { opts_size(opts.cast(), OPTS_KNOWN_END) }? else {
        return Ok(None);
    };
    if sz < offset_of!(bpf_object_open_opts, object_name) + size_of::<*const c_char>() {
        return Ok(None);
    }
    // SAFETY: `object_name` lies within the first `sz` bytes, which are readable; only that
    // field is read (no reference to the whole struct is made).
    let name = unsafe { ptr::addr_of!((*opts).object_name).read() };
    if name.is_null() {
        return Ok(None);
    }
    // SAFETY: a non-NULL `object_name` is a NUL-terminated string (libbpf's contract).
    let name = unsafe { CStr::from_ptr(name) };
    Ok(Some(fallible::to_string(&name.to_string_lossy())?))
}

/// Validate an opts struct as libbpf's `OPTS_VALID` does and return its `sz` (`None` for NULL):
/// a `sz` below `sizeof(size_t)`, or non-zero bytes past `known_end` (the end of the last field
/// this library knows), are `EINVAL`.
///
/// # Safety
///
/// `opts` must be NULL or point to an opts struct (`size_t sz` first) of `sz` readable bytes.
unsafe fn opts_size(opts: *const u8, known_end: usize) -> Result<Option<usize>, Errno> {
    if opts.is_null() {
        return Ok(None);
    }
    // SAFETY: `sz` is the first field; every opts struct, of any version, starts with it.
    let sz = unsafe { opts.cast::<usize>().read() };
    if sz < size_of::<usize>() {
        return Err(Errno::INVAL);
    }
    if sz > known_end {
        // SAFETY: the caller guarantees `sz` readable bytes at `opts`.
        let all = unsafe { core::slice::from_raw_parts(opts, sz) };
        if all[known_end..].iter().any(|&b| b != 0) {
            return Err(Errno::INVAL);
        }
    }
    Ok(Some(sz))
}

/// Map (or read) a target BTF file and start a session on it, charging the heap both take to
/// `budget`.
fn new_reloc_info(path: &std::path::Path, budget: Budget) -> Result<btf_reloc_info, Errno> {
    let session = budget.run(|| {
        let bytes = converted_input(files::open_input(path)?, path)?;
        Session::new(bytes).map_err(print::warn_rejected("invalid target BTF", &path.display()))
    })?;
    Ok(btf_reloc_info {
        session,
        budget,
        poisoned: false,
    })
}

/// `bytes` as the session reads them: an ELF file with DWARF and no `.BTF` (a debug vmlinux)
/// is converted to BTF by the same decision as the command's ([`crate::dwarf_input::convert`],
/// its `dwz -m` supplementary file found as the command finds it), and the file, checked
/// unchanged, is let go; anything else is kept as it is.
fn converted_input(bytes: FileBytes, path: &std::path::Path) -> Result<FileBytes, Errno> {
    let converted =
        crate::dwarf_input::convert(path, &bytes, false, None, &allocator::convert_options())
            .map_err(print::warn_rejected("invalid DWARF", &path.display()))?;
    let Some(btf) = converted else {
        return Ok(bytes);
    };
    // Read while mapped: a truncation or rewrite meanwhile shows only now.
    files::check_unchanged(&bytes)?;
    Ok(FileBytes::Read(btf))
}

/// The raw BTF in `data`: `data` itself, or its `.BTF` section when it is an ELF file.
fn raw_btf(data: Vec<u8>) -> Result<Vec<u8>, Errno> {
    if !data.starts_with(b"\x7fELF") {
        return Ok(data);
    }
    let section = crate::elf::section_data(&data, ".BTF")?.ok_or(Error::MissingSection(".BTF"))?;
    Ok(fallible::to_vec(section)?)
}

/// Creates a `btf_reloc_info` for generating a minimized BTF from the target BTF at
/// `targ_btf_path` (raw BTF such as `/sys/kernel/btf/vmlinux`, an ELF file with a `.BTF`
/// section, or an ELF file with DWARF and no `.BTF`, such as a distribution's debug vmlinux,
/// whose DWARF is converted to BTF here as `btfgen min-core-btf` converts it; a `dwz -m`
/// file's supplementary file is found as the command finds it, at the path its
/// `.gnu_debugaltlink` or `.debug_sup` names, next to it, or under `/usr/lib/debug/.build-id/`,
/// and `-ENOENT` when it is missing or another file). The file is opened once, here, and validated as `btfgen min-core-btf` validates
/// targets: its layout and records now, each type when a relocation reads it (a bad type then
/// fails that `bpf_object__reloc_info_gen()` with `-EINVAL`).
///
/// A regular file is mapped read-only until `bpf_reloc_info__free()`, not copied to the heap
/// (`/sys/kernel/btf/vmlinux` too since Linux 6.16); anything the kernel refuses to map (older
/// sysfs, a pipe) is read into memory. A mapped file may be
/// replaced (renamed over) or deleted meanwhile; one truncated or written in place makes
/// `bpf_reloc_info__get_btf()` fail with `EIO`. To survive a truncation, the first mapping
/// installs a `SIGBUS` handler (`SA_SIGINFO | SA_ONSTACK`) that turns a fault in a mapped
/// target into zeros; every other `SIGBUS` goes to the action it replaced (a handler is called
/// with the same arguments, the default action is restored and re-raised). A program that sets
/// its own `SIGBUS` handler later takes those faults over. At most 256 files are mapped at once
/// in a process; further ones are read.
///
/// Returns NULL on error with `errno` set: `EINVAL` (NULL path, invalid BTF), `ENOENT`,
/// `EISDIR` or another `open`/`read` errno, `ENODATA` (ELF without `.BTF`), `ENOMEM`.
/// Free with `bpf_reloc_info__free()`.
///
/// # Safety
///
/// `targ_btf_path` must be NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpf_reloc_info__new(targ_btf_path: *const c_char) -> *mut btf_reloc_info {
    guard_ptr(|| {
        // SAFETY: the caller passes NULL or a NUL-terminated string, valid during this call.
        let path = unsafe { files::c_path(targ_btf_path) }?;
        new_reloc_info(path, Budget::new(usize::MAX)?)
    })
}

/// Frees `info` and everything it holds. NULL is a no-op.
///
/// BTFs returned by `bpf_reloc_info__get_btf()` are independent and stay valid.
///
/// # Safety
///
/// `info` must be NULL or a pointer returned by `bpf_reloc_info__new()` not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpf_reloc_info__free(info: *mut btf_reloc_info) {
    // SAFETY: the caller passes NULL, a live `btf_reloc_info` not used afterwards, or a
    // foreign pointer to readable memory (refused by its tag).
    guard((), || unsafe { handle::free(info) })
}

/// Adds a kernel module BTF (split BTF on the target BTF, e.g. `/sys/kernel/btf/<module>`) to
/// `info`: mapped when it is a regular file, as `bpf_reloc_info__new()` maps the target. As in libbpf, module BTFs are searched for a relocation's candidate types only when
/// the target BTF has none. This is btfgen's addition to the seed's API.
///
/// A module's debug file (an ELF file with DWARF and no `.BTF`, such as a distribution's
/// `/usr/lib/debug/lib/modules/RELEASE/.../MODULE.ko`) is converted to split BTF over the
/// target BTF (itself converted from DWARF, or not) as `btfgen min-core-btf --module-btf`
/// converts it, its `dwz -m` supplementary file found as the command finds it; the file is
/// let go once converted.
///
/// Must be called before the first `bpf_object__reloc_info_gen()` or
/// `bpf_reloc_info__get_btf()` on `info`: afterwards it fails with `-EBUSY`.
///
/// Returns 0, or a negative errno: `-EINVAL` (NULL argument, invalid split BTF, invalid DWARF,
/// a debug module of another kernel), `-ENOENT` (a missing file, or a missing or different
/// supplementary file) and other `open`/`read` errors, `-ENODATA` (ELF with neither `.BTF`
/// nor DWARF), `-ENOMEM`, `-EBUSY`.
///
/// # Safety
///
/// `info` must be NULL or a live `btf_reloc_info`; `path` NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpf_reloc_info__add_module_btf(
    info: *mut btf_reloc_info,
    path: *const c_char,
) -> c_int {
    guard_int(|| {
        // SAFETY: the caller passes NULL, a live `btf_reloc_info` used by no one else during
        // this call, or a foreign pointer to readable memory (refused by its tag).
        let info = unsafe { handle::get_mut(info) }?;
        // SAFETY: the caller passes NULL or a NUL-terminated string.
        let path = unsafe { files::c_path(path) }?;
        info.with_session(|session| session.add_module(path, files::open_input(path)?))
    })
}

/// Runs the CO-RE relocation algorithm on every relocation of `obj` against `info`'s target
/// BTF and records the types and members the matched targets need (what libbpf would patch
/// into the instructions at load time).
///
/// May be called for any number of objects, and again after `bpf_reloc_info__get_btf()`. An
/// object that fails (a relocation libbpf would fail, such as ambiguous candidates) records
/// nothing. An object without `.BTF.ext` has no CO-RE relocations: it records nothing and
/// succeeds, as in libbpf.
///
/// Returns 0, or a negative errno: `-EINVAL` (NULL argument, a relocation that fails),
/// `-ENODATA` (the object has no `.BTF`), `-ENOMEM`, `-ENOTRECOVERABLE` (internal error).
///
/// # Safety
///
/// `info` must be NULL or a live `btf_reloc_info`; `obj` NULL or a live `bpf_object`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpf_object__reloc_info_gen(
    info: *mut btf_reloc_info,
    obj: *mut bpf_object,
) -> c_int {
    guard_int(|| {
        // SAFETY: the caller passes NULL, a live `btf_reloc_info` used by no one else during
        // this call, or a foreign pointer to readable memory (refused by its tag).
        let info = unsafe { handle::get_mut(info) }?;
        // SAFETY: the caller passes NULL, a live `bpf_object` or a foreign pointer to readable
        // memory (refused by its tag).
        let obj = unsafe { handle::get(obj) }?;
        info.with_session(|session| session.add_object(&obj.name, &obj.data))
    })
}

/// What the kernel's verifier will do with an entry program relocated against a target
/// (`bpf_reloc_info__prog_verdict()`; `btfgen`'s report calls these `loads`, `rejected`,
/// `unknown`, `failed`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(
    non_camel_case_types,
    reason = "C enumerators, as libbpf names its own"
)]
pub enum btfgen_verdict {
    /// No relocation failed and no poisoned instruction is reachable: the program loads (as far
    /// as CO-RE decides).
    BTFGEN_VERDICT_LOADS = 0,
    /// A poisoned instruction is reachable: the verifier refuses the program
    /// (`invalid func unknown#195896080`).
    BTFGEN_VERDICT_REJECTED = 1,
    /// Reachability depends on a value known only at load time (a `.rodata` or `.kconfig` value
    /// the loader sets, a weak ksym), or the analysis reached its budget.
    BTFGEN_VERDICT_UNKNOWN = 2,
    /// A relocation fails: libbpf refuses the object before loading.
    BTFGEN_VERDICT_FAILED = 3,
}

impl From<Verdict> for btfgen_verdict {
    fn from(verdict: Verdict) -> Self {
        match verdict {
            Verdict::Loads => btfgen_verdict::BTFGEN_VERDICT_LOADS,
            Verdict::Rejected => btfgen_verdict::BTFGEN_VERDICT_REJECTED,
            Verdict::Unknown => btfgen_verdict::BTFGEN_VERDICT_UNKNOWN,
            Verdict::Failed => btfgen_verdict::BTFGEN_VERDICT_FAILED,
        }
    }
}

/// The load verdict of entry program `prog_name` of `obj` relocated against `info`'s target
/// BTF (and module BTFs): a static pass over the relocated program, its called sub-programs
/// appended as libbpf appends them, that follows the verifier's pruning of branches on known
/// values (`btfgen relocate --json`'s `callers`, the report's `verdict`). Nothing is recorded:
/// the minimized BTF is unchanged.
///
/// With `evidence` non-NULL, writes the evidence there, one line each (the guard that made a
/// poisoned instruction dead, the path that reaches one, the load-time branch), NUL-terminated
/// and cut to `evidence_sz` bytes.
///
/// Returns a `btfgen_verdict` value (`>= 0`), or a negative errno: `-EINVAL` (NULL argument),
/// `-ENOENT` (no entry program of that name; sub-programs have no verdict of their own;
/// a name that is not UTF-8 is `-EINVAL`),
/// `-ENODATA` (the object has no `.BTF`), `-EIO` (the target file changed), `-ENOMEM`.
///
/// # Safety
///
/// `info` must be NULL or a live `btf_reloc_info`; `obj` NULL or a live `bpf_object`;
/// `prog_name` NULL or a NUL-terminated string; `evidence` NULL or writable for `evidence_sz`
/// bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpf_reloc_info__prog_verdict(
    info: *mut btf_reloc_info,
    obj: *const bpf_object,
    prog_name: *const c_char,
    evidence: *mut c_char,
    evidence_sz: usize,
) -> c_int {
    guard_value(|| {
        // SAFETY: the caller passes NULL, a live `btf_reloc_info` used by no one else during
        // this call, or a foreign pointer to readable memory (refused by its tag).
        let info = unsafe { handle::get_mut(info) }?;
        // SAFETY: the caller passes NULL, a live `bpf_object` or a foreign pointer to readable
        // memory (refused by its tag).
        let obj = unsafe { handle::get(obj.cast_mut()) }?;
        // SAFETY: the caller passes NULL or a NUL-terminated string.
        let name = unsafe { files::c_name(prog_name) }?;
        let (verdict, text) = info.with_session(|session| session.prog_verdict(&obj.data, name))?;
        if !evidence.is_null() && evidence_sz > 0 {
            let len = text.len().min(evidence_sz - 1);
            // SAFETY: `evidence` is non-null and, by this function's contract, writable for
            // `evidence_sz` bytes; `len + 1 <= evidence_sz`, and `text` is Rust memory that
            // cannot overlap the caller's buffer.
            unsafe {
                ptr::copy_nonoverlapping(text.as_ptr(), evidence.cast::<u8>(), len);
                evidence.add(len).write(0);
            }
        }
        Ok(btfgen_verdict::from(verdict) as c_int)
    })
}

/// Generates the minimized BTF: every type and member the relocations recorded so far need,
/// with new type ids; byte-identical to `btfgen min-core-btf` for the same inputs.
///
/// Returns a new `struct btf` owned by the caller (free it with `btf__free()`), or NULL with
/// `errno` set: `EINVAL`, `ENOMEM`, or `EIO` with a warning when a mapped target or module
/// file was truncated or written in place since it was opened (what was computed from it may
/// mix old and new bytes; libbpf fails a short read of a BTF file with `EIO` too). Can be
/// called any number of times.
///
/// # Safety
///
/// `info` must be NULL or a live `btf_reloc_info`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpf_reloc_info__get_btf(info: *mut btf_reloc_info) -> *mut btf {
    guard_ptr(|| {
        // SAFETY: the caller passes NULL, a live `btf_reloc_info` used by no one else during
        // this call, or a foreign pointer to readable memory (refused by its tag).
        let info = unsafe { handle::get_mut(info) }?;
        let raw = info.with_session(Session::emit)?;
        BtfData::new_handle(raw, None)
    })
}

/// Opens the BPF ELF object file at `path` (libbpf's prototype).
///
/// The ELF, its `.BTF.ext` and its `.BTF` (when present) are read and validated here. `opts`
/// may be NULL; see `struct bpf_object_open_opts` for what is used.
///
/// Returns NULL on error with `errno` set: `EINVAL` (NULL path, invalid `opts`, not a valid
/// BPF ELF object, invalid `.BTF` or `.BTF.ext`), `ENOENT`, `EISDIR` or another
/// `open`/`read` errno, `ENOMEM`. Free with `bpf_object__close()`.
///
/// # Safety
///
/// `path` must be NULL or a NUL-terminated string; `opts` NULL or valid for `opts->sz` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpf_object__open_file(
    path: *const c_char,
    opts: *const bpf_object_open_opts,
) -> *mut bpf_object {
    guard_ptr(|| {
        // SAFETY: the caller passes NULL or a NUL-terminated string.
        let path = unsafe { files::c_path(path) }?;
        // SAFETY: the caller passes NULL or `opts` valid for `opts->sz` bytes.
        let name = unsafe { object_name_opt(opts) }?;
        let data = files::read(path)?;
        let name = match name {
            Some(name) => name,
            None => fallible::to_string(&path.to_string_lossy())?,
        };
        bpf_object::open(data, name)
    })
}

/// Opens a BPF ELF object from the `obj_buf_sz` bytes at `obj_buf` (copied; the buffer can be
/// freed on return). As `bpf_object__open_file()` otherwise; NULL `obj_buf` or a zero size is
/// `EINVAL`.
///
/// # Safety
///
/// `obj_buf` must be NULL or valid for reading `obj_buf_sz` bytes; `opts` NULL or valid for
/// `opts->sz` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpf_object__open_mem(
    obj_buf: *const c_void,
    obj_buf_sz: usize,
    opts: *const bpf_object_open_opts,
) -> *mut bpf_object {
    guard_ptr(|| {
        if obj_buf.is_null() || obj_buf_sz == 0 {
            return Err(Errno::INVAL);
        }
        // SAFETY: the caller passes NULL or `opts` valid for `opts->sz` bytes.
        let name = unsafe { object_name_opt(opts) }?;
        // SAFETY: `obj_buf` is non-null and, by the caller's contract, valid for reading
        // `obj_buf_sz` bytes during this call; they are copied before returning.
        let bytes = unsafe { core::slice::from_raw_parts(obj_buf.cast::<u8>(), obj_buf_sz) };
        let data = fallible::to_vec(bytes)?;
        let name = match name {
            Some(name) => name,
            None => format!("{:x}-{:x}", obj_buf as usize, obj_buf_sz),
        };
        bpf_object::open(data, name)
    })
}

/// Opens the BPF ELF object file at `path`: the legacy form of
/// `bpf_object__open_file(path, NULL)`, kept for BTFGen-style clients. Errors as
/// `bpf_object__open_file()`; check the result with `libbpf_get_error()` or for NULL.
///
/// # Safety
///
/// `path` must be NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpf_object__open(path: *const c_char) -> *mut bpf_object {
    guard_ptr(|| {
        // SAFETY: the caller passes NULL or a NUL-terminated string.
        let path = unsafe { files::c_path(path) }?;
        let data = files::read(path)?;
        bpf_object::open(data, fallible::to_string(&path.to_string_lossy())?)
    })
}

/// Frees `obj`. NULL is a no-op.
///
/// # Safety
///
/// `obj` must be NULL or a pointer returned by a `bpf_object__open*()` function, not closed
/// yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpf_object__close(obj: *mut bpf_object) {
    // SAFETY: the caller passes NULL, a live `bpf_object` not used afterwards, or a foreign
    // pointer to readable memory (refused by its tag).
    guard((), || unsafe { handle::free(obj) })
}

/// Parses the BTF at `path`: raw BTF (such as `/sys/kernel/btf/vmlinux`) or the `.BTF` section
/// of an ELF file (libbpf's prototype).
///
/// `btf_ext` may be NULL; otherwise `*btf_ext` is set to NULL (this library does not expose
/// `.BTF.ext`).
///
/// Returns NULL on error with `errno` set: `EINVAL` (NULL path, invalid BTF), `ENOENT`,
/// `EISDIR` or another `open`/`read` errno, `ENODATA` (ELF without `.BTF`), `ENOMEM`. Free with
/// `btf__free()`.
///
/// # Safety
///
/// `path` must be NULL or a NUL-terminated string; `btf_ext` NULL or valid for writing a
/// pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn btf__parse(path: *const c_char, btf_ext: *mut *mut btf_ext) -> *mut btf {
    guard_ptr(|| {
        if !btf_ext.is_null() {
            // SAFETY: non-null, and by the caller's contract valid for writing a pointer.
            unsafe { btf_ext.write(ptr::null_mut()) };
        }
        // SAFETY: the caller passes NULL or a NUL-terminated string.
        let path = unsafe { files::c_path(path) }?;
        let raw = raw_btf(files::read(path)?)
            .map_err(print::warn_rejected("invalid BTF", &path.display()))?;
        BtfData::new_handle(raw, None).map_err(print::warn_rejected("invalid BTF", &path.display()))
    })
}

/// Parses the split BTF at `path` (raw, or an ELF file's `.BTF`; e.g.
/// `/sys/kernel/btf/<module>`) on top of `base_btf` (libbpf's prototype). A NULL `base_btf`
/// parses a base BTF, as `btf__parse()`.
///
/// The result keeps what it needs of `base_btf`: the base may be freed first. Its
/// `btf__raw_data()` is the split part only; its `btf__type_cnt()` counts the base's types too.
///
/// Returns NULL on error with `errno` set, as `btf__parse()`. Free with `btf__free()`.
///
/// # Safety
///
/// `path` must be NULL or a NUL-terminated string; `base_btf` NULL or a live `btf`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn btf__parse_split(path: *const c_char, base_btf: *mut btf) -> *mut btf {
    guard_ptr(|| {
        // SAFETY: the caller passes NULL or a NUL-terminated string.
        let path = unsafe { files::c_path(path) }?;
        let base = if base_btf.is_null() {
            None
        } else {
            // SAFETY: the caller passes a live `btf` or a foreign pointer to readable memory
            // (refused by its tag).
            Some(Arc::clone(&unsafe { handle::get(base_btf) }?.data))
        };
        let raw = raw_btf(files::read(path)?)
            .map_err(print::warn_rejected("invalid BTF", &path.display()))?;
        BtfData::new_handle(raw, base).map_err(print::warn_rejected("invalid BTF", &path.display()))
    })
}

/// The raw BTF bytes of `btf` (libbpf's prototype), valid until `btf__free(btf)`; their length
/// is stored in `*size` when `size` is not NULL. For a split BTF, only the split part.
///
/// Returns NULL with `errno` = `EINVAL` when `btf` is NULL.
///
/// # Safety
///
/// `btf` must be NULL or a live `btf`; `size` NULL or valid for writing a `uint32_t`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn btf__raw_data(btf: *const btf, size: *mut u32) -> *const c_void {
    guard(ptr::null(), || {
        // SAFETY: the caller passes NULL, a live `btf` or a foreign pointer to readable memory
        // (refused by its tag).
        let Ok(btf) = (unsafe { handle::get(btf) }) else {
            errno::set_errno(libc::EINVAL);
            return ptr::null();
        };
        // Only a blob of more than 4 GiB (of which BTF uses at most its sections) could fail.
        let Ok(len) = u32::try_from(btf.data.raw.len()) else {
            errno::set_errno(libc::E2BIG);
            return ptr::null();
        };
        if !size.is_null() {
            // SAFETY: non-null, and by the caller's contract valid for writing a `u32`.
            unsafe { size.write(len) };
        }
        btf.data.raw.as_ptr().cast::<c_void>()
    })
}

/// The number of types of `btf` plus one (libbpf's prototype): valid type ids are
/// `1 .. btf__type_cnt(btf) - 1`, and 0 is `void`. Split BTF counts its base's types too.
///
/// Returns 0 with `errno` = `EINVAL` when `btf` is NULL.
///
/// # Safety
///
/// `btf` must be NULL or a live `btf`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn btf__type_cnt(btf: *const btf) -> u32 {
    guard(0, || {
        // SAFETY: the caller passes NULL, a live `btf` or a foreign pointer to readable memory
        // (refused by its tag).
        match unsafe { handle::get(btf) } {
            Ok(btf) => btf.data.type_cnt,
            Err(_) => {
                errno::set_errno(libc::EINVAL);
                0
            }
        }
    })
}

/// Writes the raw bytes of `btf` to `path` (BTFGen's `btf__save_to_file`), with
/// `fopen(path, "w")`'s file semantics: a symbolic link is written through, a new file gets
/// mode `0666 & ~umask`, an existing file keeps its mode. Atomic: a temporary file beside the
/// resolved target, then `rename()`, so the target is never left partly written.
///
/// Returns 0, or a negative errno: `-EINVAL` (NULL argument), or the errno of the failing
/// `open`/`write`/`fsync`/`rename` (`-ENOENT`, `-EACCES`, `-EISDIR`, ...).
///
/// # Safety
///
/// `btf` must be NULL or a live `btf`; `path` NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn btf__save_to_file(btf: *mut btf, path: *const c_char) -> c_int {
    guard_int(|| {
        // SAFETY: the caller passes NULL, a live `btf` or a foreign pointer to readable memory
        // (refused by its tag).
        let btf = unsafe { handle::get(btf) }?;
        // SAFETY: the caller passes NULL or a NUL-terminated string.
        let path = unsafe { files::c_path(path) }?;
        files::write_atomic(path, &btf.data.raw)
    })
}

/// Frees `btf`. NULL is a no-op.
///
/// # Safety
///
/// `btf` must be NULL or a pointer returned by a `btf__parse*()` function or
/// `bpf_reloc_info__get_btf()`, not freed yet.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn btf__free(btf: *mut btf) {
    // SAFETY: the caller passes NULL, a live `btf` not used afterwards, or a foreign pointer
    // to readable memory (refused by its tag).
    guard((), || unsafe { handle::free(btf) })
}

/// The error of a pointer this library returned (libbpf 1.x semantics): `-errno` when `ptr` is
/// NULL, 0 otherwise. So `err = libbpf_get_error(p); if (err) ...` works with every pointer
/// returned here, provided nothing changed `errno` in between.
#[unsafe(no_mangle)]
pub extern "C" fn libbpf_get_error(ptr: *const c_void) -> c_long {
    guard(0, || {
        if ptr.is_null() {
            -c_long::from(errno::errno())
        } else {
            0
        }
    })
}

/// Sets the function that receives the library's log messages and returns the previous one
/// (libbpf's prototype and semantics). NULL turns the log off. The default prints warnings and
/// info messages on stderr and drops debug messages; install a printer to see the debug log of
/// every CO-RE relocation, in libbpf 1.x's words.
///
/// The callback is called with a format string and its arguments, as libbpf calls it; each call
/// is one line ending in `\n`. It is process-wide, as in libbpf.
#[unsafe(no_mangle)]
pub extern "C" fn libbpf_set_print(print: libbpf_print_fn_t) -> libbpf_print_fn_t {
    guard(None, || print::replace_printer(print))
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::ffi::CString;

    fn fixture(path: &str) -> CString {
        let full = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
        CString::new(full.to_str().unwrap()).unwrap()
    }

    #[test]
    fn opts_follow_libbpf_opts_valid() {
        // Built in zeroed, aligned memory as C clients do (memset, then fields): a Rust struct
        // literal would leave the tail padding uninitialized, and it is checked to be zero.
        let mut mem = [0u64; 12];
        let opts = mem.as_mut_ptr().cast::<bpf_object_open_opts>();
        let name = c"custom";
        // SAFETY: `mem` is 96 zeroed, 8-aligned bytes, more than `bpf_object_open_opts` needs;
        // only its fields are written, and `sz` never exceeds 96.
        unsafe {
            assert_eq!(object_name_opt(ptr::null()), Ok(None));
            ptr::addr_of_mut!((*opts).sz).write(4);
            assert_eq!(object_name_opt(opts), Err(Errno::INVAL));
            ptr::addr_of_mut!((*opts).sz).write(size_of::<bpf_object_open_opts>());
            ptr::addr_of_mut!((*opts).object_name).write(name.as_ptr());
            assert_eq!(object_name_opt(opts), Ok(Some("custom".into())));
            // A newer struct: unknown trailing bytes must be zero.
            ptr::addr_of_mut!((*opts).sz).write(96);
            assert_eq!(object_name_opt(opts), Ok(Some("custom".into())));
            opts.cast::<u64>().add(11).write(1);
            assert_eq!(object_name_opt(opts), Err(Errno::INVAL));
            // An older struct that ends before `object_name`.
            ptr::addr_of_mut!((*opts).sz).write(8);
            assert_eq!(object_name_opt(opts), Ok(None));
        }
    }

    #[test]
    fn full_flow_through_the_c_functions() {
        let target = fixture("tests/data/targets/btf__fields.btf");
        let object = fixture("tests/data/progs/fields.bpf.o");
        // SAFETY: every pointer passed is NULL, a NUL-terminated string or a live handle.
        unsafe {
            let info = bpf_reloc_info__new(target.as_ptr());
            assert!(!info.is_null());
            let obj = bpf_object__open_file(object.as_ptr(), ptr::null());
            assert!(!obj.is_null());
            assert_eq!(bpf_object__reloc_info_gen(info, obj), 0);
            bpf_object__close(obj);
            let btf = bpf_reloc_info__get_btf(info);
            assert!(!btf.is_null());
            let mut size = 0u32;
            let data = btf__raw_data(btf, &mut size);
            assert!(!data.is_null() && size > 24);
            assert!(btf__type_cnt(btf) > 1);
            btf__free(btf);
            bpf_reloc_info__free(info);

            assert!(bpf_reloc_info__new(ptr::null()).is_null());
            assert_eq!(libbpf_get_error(ptr::null()), -c_long::from(libc::EINVAL));
            let missing = c"/nonexistent/vmlinux";
            assert!(bpf_reloc_info__new(missing.as_ptr()).is_null());
            assert_eq!(libbpf_get_error(ptr::null()), -c_long::from(libc::ENOENT));
            assert_eq!(
                bpf_object__reloc_info_gen(ptr::null_mut(), ptr::null_mut()),
                -libc::EINVAL
            );
            bpf_reloc_info__free(ptr::null_mut());
            bpf_object__close(ptr::null_mut());
            btf__free(ptr::null_mut());
        }
    }
}
