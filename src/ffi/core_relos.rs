//! C ABI for loaders that do not link libbpf: everything `BPF_BTF_LOAD` and `BPF_PROG_LOAD` need
//! for one CO-RE program of an opened `bpf_object`, with CO-RE applied by the kernel (the
//! program's `struct bpf_core_relo` records) or here against a target `btf`
//! ([`crate::core::kernel`]).
//!
//! The caller passes a buffer; the library lays the arrays out in it and points the fields of a
//! [`bpf_prog_load_info`] at them, so nothing is allocated across calls and there is nothing to
//! free.

use super::errno::Errno;
use super::guard::guard_int;
use super::{bpf_object, btf};
use crate::btf::Btf;
use crate::core::kernel::{
    CORE_RELO_REC_SIZE, FUNC_INFO_REC_SIZE, LINE_INFO_REC_SIZE, ObjectLoad, ProgramLoad,
    kernel_core, user_core,
};
use crate::core::{CandidateIndex, Targets};
use crate::error::{Error, Result};
use crate::log::LibbpfLog;
use crate::object::BpfObject;
use alloc::vec::Vec;
use core::ffi::{c_char, c_int, c_void};

/// Alignment of every array in the caller's buffer, and of the buffer itself.
const ALIGN: usize = 8;

/// The `BPF_PROG_LOAD` (and `BPF_BTF_LOAD`) inputs of one program, as filled in by
/// `bpf_object__prog_load_info()`. Every pointer points into the caller's buffer; arrays are
/// in the object's byte order and 8-byte aligned. A pointer is NULL when its count is 0.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct bpf_prog_load_info {
    /// `insns`: `insn_cnt` `struct bpf_insn`, the program with its subprograms appended.
    pub insns: *const c_void,
    /// `insn_cnt`.
    pub insn_cnt: u32,
    /// `func_info_rec_size`: `sizeof(struct bpf_func_info)`.
    pub func_info_rec_size: u32,
    /// `func_info`: `func_info_cnt` records, `insn_off` in instructions.
    pub func_info: *const c_void,
    /// `func_info_cnt`.
    pub func_info_cnt: u32,
    /// `line_info_rec_size`: `sizeof(struct bpf_line_info)`.
    pub line_info_rec_size: u32,
    /// `line_info`: `line_info_cnt` records, `insn_off` in instructions.
    pub line_info: *const c_void,
    /// `line_info_cnt`.
    pub line_info_cnt: u32,
    /// `core_relo_rec_size`: `sizeof(struct bpf_core_relo)`.
    pub core_relo_rec_size: u32,
    /// `core_relos`: `core_relo_cnt` `struct bpf_core_relo`, `insn_off` in bytes, sorted.
    /// Empty when CO-RE was applied against a target BTF.
    pub core_relos: *const c_void,
    /// `core_relo_cnt`.
    pub core_relo_cnt: u32,
    /// `btf_size`: size of `btf`.
    pub btf_size: u32,
    /// The object's `.BTF`, made loadable: give it to `BPF_BTF_LOAD` and the resulting fd to
    /// `BPF_PROG_LOAD` as `prog_btf_fd`.
    pub btf: *const c_void,
}

/// Fills `info` with what `BPF_PROG_LOAD` needs for the entry-point program `prog_name` of
/// `obj`: the program assembled as libbpf assembles it (the `.text` subprograms it calls
/// appended), its func_info and line_info, and the object's BTF for `prog_btf_fd`.
///
/// CO-RE: with `targ_btf` NULL the instructions are unpatched and `core_relos` holds the
/// program's `struct bpf_core_relo` records for the kernel to apply (pass them with
/// `core_relo_cnt` and `core_relo_rec_size`; the kernel reads them only together with
/// `prog_btf_fd` and func_info). With a target BTF (e.g. `btf__parse("/sys/kernel/btf/vmlinux",
/// NULL)`) the instructions are relocated against it here and `core_relos` is empty.
///
/// The arrays are written to `buf`, which must be 8-byte aligned and `*buf_sz` bytes long.
/// When `buf` is NULL or too small, `*buf_sz` is set to the size needed and `-ENOSPC` is
/// returned; call again with a buffer that large. On success `*buf_sz` is the size used and
/// the pointers in `info` point into `buf`.
///
/// Returns 0, or a negative errno: `-EINVAL` (a NULL or misaligned argument, a failed CO-RE
/// relocation, a program with CO-RE records but no func_info), `-ENODATA` (the object has no
/// `.BTF`), `-ENOENT` (no entry-point program `prog_name`), `-E2BIG`, `-ENOMEM`, `-ENOSPC`.
///
/// # Safety
///
/// `obj` must be NULL or a live `bpf_object`; `targ_btf` NULL or a live `btf`; `prog_name` NULL
/// or a NUL-terminated string; `info` and `buf_sz` NULL or valid for writes; `buf` NULL or
/// writable for `*buf_sz` bytes. None of them may be used by another thread during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpf_object__prog_load_info(
    obj: *const bpf_object,
    prog_name: *const c_char,
    targ_btf: *const btf,
    info: *mut bpf_prog_load_info,
    buf: *mut c_void,
    buf_sz: *mut usize,
) -> c_int {
    guard_int(|| {
        // SAFETY: the caller passes NULL, a live `bpf_object` or a foreign pointer to readable
        // memory (refused by its tag).
        let obj = unsafe { super::handle::get(obj) }?;
        let targ = if targ_btf.is_null() {
            None
        } else {
            // SAFETY: the caller passes a live `btf` or a foreign pointer to readable memory
            // (refused by its tag).
            Some(unsafe { super::handle::get(targ_btf) }?)
        };
        if info.is_null() || buf_sz.is_null() {
            return Err(Errno::INVAL);
        }
        // SAFETY: the caller passes NULL or a NUL-terminated string.
        let name = unsafe { super::files::c_name(prog_name) }?;
        // SAFETY: non-NULL and valid for reads and writes, per the caller.
        let capacity = unsafe { *buf_sz };

        let load = prepare(&obj.data, targ)?;
        let program = load.program(name).ok_or(Errno(libc::ENOENT))?;
        let arrays = Arrays::new(&load, program)?;
        let needed = arrays.size().ok_or(Errno(libc::E2BIG))?;
        if buf.is_null() || capacity < needed {
            // SAFETY: non-NULL and valid for writes, per the caller.
            unsafe { *buf_sz = needed };
            return Err(Errno(libc::ENOSPC));
        }
        if buf.addr() % ALIGN != 0 {
            return Err(Errno::INVAL);
        }
        // SAFETY: non-NULL, writable for `capacity >= needed` bytes per the caller, and not
        // otherwise accessed during the call.
        let out = unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), needed) };
        let filled = arrays
            .write(out, buf.cast_const())
            .ok_or(Errno(libc::E2BIG))?;
        // SAFETY: non-NULL and valid for writes, per the caller.
        unsafe {
            *info = filled;
            *buf_sz = needed;
        }
        Ok(())
    })
}

/// Kernel-side CO-RE without a target, user-space CO-RE with one.
fn prepare<'a>(obj_data: &'a [u8], targ: Option<&btf>) -> Result<ObjectLoad<'a>> {
    let obj = BpfObject::parse(obj_data)?;
    let local = Btf::parse(obj.btf_bytes().ok_or(Error::MissingSection(".BTF"))?)?;
    match targ {
        None => kernel_core(&obj, &local),
        Some(targ) => targ.data.with_parsed(&mut |target| {
            let targets = Targets::new(target);
            user_core(
                &obj,
                &local,
                &targets,
                &mut CandidateIndex::new(),
                &mut LibbpfLog,
            )
        }),
    }
}

/// The encoded arrays of one program, in buffer order.
struct Arrays<'l> {
    insns: Vec<u8>,
    func_info: Vec<u8>,
    line_info: Vec<u8>,
    core_relos: Vec<u8>,
    btf: &'l [u8],
}

/// `len` rounded up to [`ALIGN`].
fn aligned(len: usize) -> Option<usize> {
    len.checked_next_multiple_of(ALIGN)
}

impl<'l> Arrays<'l> {
    fn new(load: &'l ObjectLoad<'_>, program: &ProgramLoad<'_>) -> Result<Self> {
        let endian = load.endian;
        Ok(Arrays {
            insns: program.insn_bytes(endian)?,
            func_info: program.func_info_bytes(endian)?,
            line_info: program.line_info_bytes(endian)?,
            core_relos: program.core_relo_bytes(endian)?,
            btf: &load.btf,
        })
    }

    fn parts(&self) -> [&[u8]; 5] {
        [
            &self.insns,
            &self.func_info,
            &self.line_info,
            &self.core_relos,
            self.btf,
        ]
    }

    /// Bytes of buffer needed: every array at an aligned offset.
    fn size(&self) -> Option<usize> {
        self.parts()
            .iter()
            .try_fold(0usize, |at, part| aligned(at)?.checked_add(part.len()))
    }

    /// Copy the arrays into `out` (exactly [`Arrays::size`] bytes, starting at `base`) and
    /// describe them. `None` if a count does not fit 32 bits.
    fn write(&self, out: &mut [u8], base: *const c_void) -> Option<bpf_prog_load_info> {
        let mut ptrs = [core::ptr::null::<c_void>(); 5];
        let mut at = 0usize;
        for (ptr, part) in ptrs.iter_mut().zip(self.parts()) {
            at = aligned(at)?;
            let end = at.checked_add(part.len())?;
            out.get_mut(at..end)?.copy_from_slice(part);
            if !part.is_empty() {
                *ptr = base.wrapping_byte_add(at);
            }
            at = end;
        }
        let count =
            |bytes: &[u8], rec_size: u32| u32::try_from(bytes.len() / rec_size as usize).ok();
        let [insns, func_info, line_info, core_relos, btf] = ptrs;
        Some(bpf_prog_load_info {
            insns,
            insn_cnt: count(&self.insns, 8)?,
            func_info_rec_size: FUNC_INFO_REC_SIZE,
            func_info,
            func_info_cnt: count(&self.func_info, FUNC_INFO_REC_SIZE)?,
            line_info_rec_size: LINE_INFO_REC_SIZE,
            line_info,
            line_info_cnt: count(&self.line_info, LINE_INFO_REC_SIZE)?,
            core_relo_rec_size: CORE_RELO_REC_SIZE,
            core_relos,
            core_relo_cnt: count(&self.core_relos, CORE_RELO_REC_SIZE)?,
            btf_size: u32::try_from(self.btf.len()).ok()?,
            btf,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ffi::BtfData;
    use crate::ffi::handle::Owned;
    use alloc::vec;
    use core::ffi::CStr;

    const CALLS: &[u8] = include_bytes!("../../tests/data/progs/calls.bpf.o");
    const FIELDS: &[u8] = include_bytes!("../../tests/data/progs/fields.bpf.o");
    const FIELDS_TARGET: &[u8] = include_bytes!("../../tests/data/targets/btf__fields.btf");

    fn open(data: &[u8]) -> Owned<bpf_object> {
        Owned::new(bpf_object::open(data.to_vec(), "test".into()).unwrap())
    }

    fn empty_info() -> bpf_prog_load_info {
        bpf_prog_load_info {
            insns: core::ptr::null(),
            insn_cnt: 0,
            func_info_rec_size: 0,
            func_info: core::ptr::null(),
            func_info_cnt: 0,
            line_info_rec_size: 0,
            line_info: core::ptr::null(),
            line_info_cnt: 0,
            core_relo_rec_size: 0,
            core_relos: core::ptr::null(),
            core_relo_cnt: 0,
            btf_size: 0,
            btf: core::ptr::null(),
        }
    }

    /// Call the C function; the buffer is `u64`s so that it is 8-byte aligned.
    fn call(
        obj: &Owned<bpf_object>,
        name: &CStr,
        targ: Option<&Owned<btf>>,
        buf: Option<&mut Vec<u64>>,
        buf_sz: &mut usize,
    ) -> (c_int, bpf_prog_load_info) {
        let mut info = empty_info();
        let targ = targ.map_or(core::ptr::null(), |t| t.ptr().cast_const());
        let buf = buf.map_or(core::ptr::null_mut(), |b| b.as_mut_ptr().cast());
        // SAFETY: every pointer is NULL or comes from a live Rust value of the stated size.
        let ret = unsafe {
            bpf_object__prog_load_info(obj.ptr(), name.as_ptr(), targ, &mut info, buf, buf_sz)
        };
        (ret, info)
    }

    /// The `len` bytes at `ptr`.
    fn bytes<'b>(ptr: *const c_void, len: usize) -> &'b [u8] {
        if len == 0 {
            return &[];
        }
        // SAFETY: the pointers under test point into a live buffer of at least `len` bytes.
        unsafe { core::slice::from_raw_parts(ptr.cast::<u8>(), len) }
    }

    /// Size query, a too small buffer, then the real call.
    fn fill(
        obj: &Owned<bpf_object>,
        name: &CStr,
        targ: Option<&Owned<btf>>,
    ) -> (Vec<u64>, bpf_prog_load_info) {
        let mut size = 0;
        assert_eq!(call(obj, name, targ, None, &mut size).0, -libc::ENOSPC);
        let mut buf = vec![0u64; size.div_ceil(8)];
        let mut small = size - 1;
        assert_eq!(
            call(obj, name, targ, Some(&mut buf), &mut small).0,
            -libc::ENOSPC
        );
        assert_eq!(small, size);
        let (ret, info) = call(obj, name, targ, Some(&mut buf), &mut size);
        assert_eq!(ret, 0);
        (buf, info)
    }

    fn check(info: &bpf_prog_load_info, load: &ObjectLoad<'_>, p: &ProgramLoad<'_>) {
        let e = load.endian;
        assert_eq!(
            bytes(info.insns, info.insn_cnt as usize * 8),
            p.insn_bytes(e).unwrap()
        );
        assert_eq!(
            bytes(info.func_info, info.func_info_cnt as usize * 8),
            p.func_info_bytes(e).unwrap()
        );
        assert_eq!(
            bytes(info.line_info, info.line_info_cnt as usize * 16),
            p.line_info_bytes(e).unwrap()
        );
        assert_eq!(
            bytes(info.core_relos, info.core_relo_cnt as usize * 16),
            p.core_relo_bytes(e).unwrap()
        );
        assert_eq!(bytes(info.btf, info.btf_size as usize), load.btf);
        assert_eq!(
            (
                info.func_info_rec_size,
                info.line_info_rec_size,
                info.core_relo_rec_size
            ),
            (8, 16, 16)
        );
    }

    #[test]
    fn kernel_side_records() {
        let obj = open(CALLS);
        let load = prepare(CALLS, None).unwrap();
        let (_buf, info) = fill(&obj, c"calls_both", None);
        assert_eq!(
            (info.insn_cnt, info.func_info_cnt, info.core_relo_cnt),
            (57, 5, 5)
        );
        check(&info, &load, load.program("calls_both").unwrap());
    }

    #[test]
    fn user_space_core() {
        let obj = open(FIELDS);
        let targ = Owned::new(BtfData::new_handle(FIELDS_TARGET.to_vec(), None).unwrap());
        let load = prepare(FIELDS, Some(&*targ)).unwrap();
        for p in &load.programs {
            let name = alloc::ffi::CString::new(p.name()).unwrap();
            let (_buf, info) = fill(&obj, &name, Some(&targ));
            assert_eq!(info.core_relo_cnt, 0);
            assert!(info.core_relos.is_null());
            check(&info, &load, p);
        }
    }

    #[test]
    fn bad_arguments() {
        let obj = open(CALLS);
        let mut size = 0;
        assert_eq!(call(&obj, c"nope", None, None, &mut size).0, -libc::ENOENT);
        assert_eq!(
            call(&obj, c"leaf_tgid", None, None, &mut size).0,
            -libc::ENOENT
        );
        let mut info = empty_info();
        // SAFETY: NULL arguments are rejected before anything is read.
        let ret = unsafe {
            bpf_object__prog_load_info(
                core::ptr::null(),
                c"calls_both".as_ptr(),
                core::ptr::null(),
                &mut info,
                core::ptr::null_mut(),
                &mut size,
            )
        };
        assert_eq!(ret, -libc::EINVAL);
        // SAFETY: as above.
        let ret = unsafe {
            bpf_object__prog_load_info(
                obj.ptr(),
                core::ptr::null(),
                core::ptr::null(),
                &mut info,
                core::ptr::null_mut(),
                &mut size,
            )
        };
        assert_eq!(ret, -libc::EINVAL);
        // A misaligned buffer.
        call(&obj, c"calls_both", None, None, &mut size);
        let mut buf = vec![0u64; size / 8 + 2];
        let ptr = buf
            .as_mut_ptr()
            .cast::<u8>()
            .wrapping_add(1)
            .cast::<c_void>();
        // SAFETY: `ptr` is inside `buf`, which has `size` bytes after it.
        let ret = unsafe {
            bpf_object__prog_load_info(
                obj.ptr(),
                c"calls_both".as_ptr(),
                core::ptr::null(),
                &mut info,
                ptr,
                &mut size,
            )
        };
        assert_eq!(ret, -libc::EINVAL);
    }
}
