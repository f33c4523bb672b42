//! C ABI for loaders that do not link libbpf: everything `BPF_BTF_LOAD` and `BPF_PROG_LOAD` need
//! for one CO-RE program of a BPF object, with CO-RE applied by the kernel (the program's
//! `struct bpf_core_relo` records) or here against a target BTF ([`crate::core::kernel`]).
//!
//! One self-contained call, no handle: the caller passes the object's bytes and a buffer, the
//! library lays the arrays out in that buffer and points the fields of a
//! [`bpf_prog_load_info`] at them. Nothing is allocated across calls, so there is nothing to
//! free.

use crate::btf::Btf;
use crate::core::kernel::{
    CORE_RELO_REC_SIZE, FUNC_INFO_REC_SIZE, LINE_INFO_REC_SIZE, ObjectLoad, ProgramLoad,
    kernel_core, user_core,
};
use crate::core::{CandidateIndex, Targets};
use crate::error::{Error, Result};
use crate::object::BpfObject;
use alloc::vec::Vec;
use core::ffi::{CStr, c_char, c_int, c_void};

const ENOENT: c_int = 2;
const ENOMEM: c_int = 12;
const EINVAL: c_int = 22;
const ENOSPC: c_int = 28;
/// Alignment of every array in the caller's buffer, and of the buffer itself.
const ALIGN: usize = 8;

/// The `BPF_PROG_LOAD` (and `BPF_BTF_LOAD`) inputs of one program, as filled in by
/// [`bpf_object__prog_load_info`]. Every pointer points into the caller's buffer; arrays are
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

/// Fill `info` with what `BPF_PROG_LOAD` needs for entry-point program `prog_name` of the BPF
/// ELF object `obj_buf` (`obj_sz` bytes): the program assembled as libbpf assembles it (the
/// `.text` subprograms it calls appended), its func_info and line_info, and the object's BTF
/// for `prog_btf_fd`.
///
/// CO-RE: with `targ_btf_buf` NULL (and `targ_btf_sz` 0) the instructions are unpatched and
/// `core_relos` holds the program's `struct bpf_core_relo` records for the kernel to apply
/// (pass them with `core_relo_cnt` and `core_relo_rec_size`; the kernel needs `prog_btf_fd`
/// and func_info with them). With a target BTF (raw, or an ELF file with `.BTF`, e.g. the
/// contents of `/sys/kernel/btf/vmlinux`) the instructions are relocated against it here and
/// `core_relos` is empty.
///
/// The arrays are written to `buf`, which must be 8-byte aligned and `*buf_sz` bytes long.
/// When `buf` is NULL or too small, `*buf_sz` is set to the size needed and `-ENOSPC` is
/// returned; call again with a buffer that large. On success `*buf_sz` is the size used and the
/// pointers in `info` point into `buf`.
///
/// Returns 0, or a negative errno: `-EINVAL` for a NULL or misaligned argument, a malformed
/// object or BTF, a failed CO-RE relocation, or a program with CO-RE records but no func_info;
/// `-ENOENT` when the object has no entry-point program `prog_name`; `-ENOMEM`; `-ENOSPC`.
///
/// # Safety
///
/// `obj_buf` must be readable for `obj_sz` bytes and, when not NULL, `targ_btf_buf` for
/// `targ_btf_sz` bytes; `prog_name` must be a NUL-terminated string; `info` and `buf_sz` must
/// be valid for writes; when not NULL, `buf` must be writable for `*buf_sz` bytes. None of them
/// may be modified by another thread during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn bpf_object__prog_load_info(
    obj_buf: *const c_void,
    obj_sz: usize,
    targ_btf_buf: *const c_void,
    targ_btf_sz: usize,
    prog_name: *const c_char,
    info: *mut bpf_prog_load_info,
    buf: *mut c_void,
    buf_sz: *mut usize,
) -> c_int {
    if obj_buf.is_null() || prog_name.is_null() || info.is_null() || buf_sz.is_null() {
        return -EINVAL;
    }
    if targ_btf_buf.is_null() && targ_btf_sz != 0 {
        return -EINVAL;
    }
    // SAFETY: non-NULL, and the caller guarantees `obj_sz` readable bytes that nobody
    // modifies during the call.
    let obj_data = unsafe { core::slice::from_raw_parts(obj_buf.cast::<u8>(), obj_sz) };
    let targ_data = if targ_btf_buf.is_null() {
        None
    } else {
        // SAFETY: non-NULL, and the caller guarantees `targ_btf_sz` readable bytes.
        Some(unsafe { core::slice::from_raw_parts(targ_btf_buf.cast::<u8>(), targ_btf_sz) })
    };
    // SAFETY: non-NULL, and the caller guarantees a NUL-terminated string.
    let Ok(name) = unsafe { CStr::from_ptr(prog_name) }.to_str() else {
        return -EINVAL;
    };
    // SAFETY: non-NULL and valid for reads and writes, per the caller.
    let capacity = unsafe { *buf_sz };

    let load = match prepare(obj_data, targ_data) {
        Ok(load) => load,
        Err(e) => return errno(&e),
    };
    let Some(program) = load.program(name) else {
        return -ENOENT;
    };
    let arrays = match Arrays::new(&load, program) {
        Ok(arrays) => arrays,
        Err(e) => return errno(&e),
    };
    let Some(needed) = arrays.size() else {
        return -ENOMEM;
    };
    if buf.is_null() || capacity < needed {
        // SAFETY: non-NULL and valid for writes, per the caller.
        unsafe { *buf_sz = needed };
        return -ENOSPC;
    }
    if buf.addr() % ALIGN != 0 {
        return -EINVAL;
    }
    // SAFETY: non-NULL, writable for `capacity >= needed` bytes per the caller, and not
    // otherwise accessed during the call.
    let out = unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), needed) };
    let Some(filled) = arrays.write(out, buf.cast_const()) else {
        return -EINVAL;
    };
    // SAFETY: non-NULL and valid for writes, per the caller.
    unsafe {
        *info = filled;
        *buf_sz = needed;
    }
    0
}

fn errno(e: &Error) -> c_int {
    match e {
        Error::OutOfMemory => -ENOMEM,
        _ => -EINVAL,
    }
}

/// Kernel-side CO-RE without a target, user-space CO-RE with one.
fn prepare<'a>(obj_data: &'a [u8], targ_data: Option<&[u8]>) -> Result<ObjectLoad<'a>> {
    let obj = BpfObject::parse(obj_data)?;
    let local = Btf::parse(obj.btf_bytes().ok_or(Error::MissingSection(".BTF"))?)?;
    match targ_data {
        None => kernel_core(&obj, &local),
        Some(targ) => {
            let target = Btf::parse_raw_or_elf(targ, None)?;
            let targets = Targets::new(&target);
            user_core(&obj, &local, &targets, &mut CandidateIndex::new())
        }
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
    use alloc::vec;

    const CALLS: &[u8] = include_bytes!("../../tests/data/progs/calls.bpf.o");
    const FIELDS: &[u8] = include_bytes!("../../tests/data/progs/fields.bpf.o");
    const FIELDS_TARGET: &[u8] = include_bytes!("../../tests/data/targets/btf__fields.btf");

    /// Call the C function; the buffer is `u64`s so that it is 8-byte aligned.
    fn call(
        obj: &[u8],
        targ: Option<&[u8]>,
        name: &CStr,
        buf: Option<&mut Vec<u64>>,
        buf_sz: &mut usize,
    ) -> (c_int, bpf_prog_load_info) {
        let mut info = bpf_prog_load_info {
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
        };
        let (targ_ptr, targ_len) =
            targ.map_or((core::ptr::null(), 0), |t| (t.as_ptr().cast(), t.len()));
        let buf_ptr = buf.map_or(core::ptr::null_mut(), |b| b.as_mut_ptr().cast());
        // SAFETY: every pointer comes from a live Rust value of the stated size.
        let ret = unsafe {
            bpf_object__prog_load_info(
                obj.as_ptr().cast(),
                obj.len(),
                targ_ptr,
                targ_len,
                name.as_ptr(),
                &mut info,
                buf_ptr,
                buf_sz,
            )
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

    fn fill(obj: &[u8], targ: Option<&[u8]>, name: &CStr) -> (Vec<u64>, bpf_prog_load_info) {
        let mut size = 0;
        let (ret, _) = call(obj, targ, name, None, &mut size);
        assert_eq!(ret, -ENOSPC);
        let mut buf = vec![0u64; size.div_ceil(8)];
        let mut small = size - 1;
        assert_eq!(call(obj, targ, name, Some(&mut buf), &mut small).0, -ENOSPC);
        assert_eq!(small, size);
        let (ret, info) = call(obj, targ, name, Some(&mut buf), &mut size);
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
        let load = prepare(CALLS, None).unwrap();
        let (_buf, info) = fill(CALLS, None, c"calls_both");
        assert_eq!(
            (info.insn_cnt, info.func_info_cnt, info.core_relo_cnt),
            (57, 5, 5)
        );
        check(&info, &load, load.program("calls_both").unwrap());
    }

    #[test]
    fn user_space_core() {
        let load = prepare(FIELDS, Some(FIELDS_TARGET)).unwrap();
        for p in &load.programs {
            let name = alloc::ffi::CString::new(p.name()).unwrap();
            let (_buf, info) = fill(FIELDS, Some(FIELDS_TARGET), &name);
            assert_eq!(info.core_relo_cnt, 0);
            assert!(info.core_relos.is_null());
            check(&info, &load, p);
        }
    }

    #[test]
    fn bad_arguments() {
        let mut size = 0;
        assert_eq!(call(CALLS, None, c"nope", None, &mut size).0, -ENOENT);
        assert_eq!(call(CALLS, None, c"leaf_tgid", None, &mut size).0, -ENOENT);
        assert_eq!(
            call(&CALLS[..100], None, c"calls_both", None, &mut size).0,
            -EINVAL
        );
        assert_eq!(
            call(CALLS, Some(b"junk"), c"calls_both", None, &mut size).0,
            -EINVAL
        );
        // SAFETY: NULL arguments are rejected before anything is read.
        let ret = unsafe {
            bpf_object__prog_load_info(
                core::ptr::null(),
                0,
                core::ptr::null(),
                0,
                c"calls_both".as_ptr(),
                core::ptr::null_mut(),
                core::ptr::null_mut(),
                &mut size,
            )
        };
        assert_eq!(ret, -EINVAL);
        // A misaligned buffer.
        call(CALLS, None, c"calls_both", None, &mut size);
        let mut buf = vec![0u64; size / 8 + 2];
        let ptr = buf
            .as_mut_ptr()
            .cast::<u8>()
            .wrapping_add(1)
            .cast::<c_void>();
        let mut info = fill(CALLS, None, c"calls_both").1;
        // SAFETY: `ptr` is inside `buf`, which has `size` bytes after it.
        let ret = unsafe {
            bpf_object__prog_load_info(
                CALLS.as_ptr().cast(),
                CALLS.len(),
                core::ptr::null(),
                0,
                c"calls_both".as_ptr(),
                &mut info,
                ptr,
                &mut size,
            )
        };
        assert_eq!(ret, -EINVAL);
    }
}
