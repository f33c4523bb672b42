//! Input files: regular files (the running kernel's BTF included) are mapped, guarded against
//! being truncated under the mapping; anything else is read.
//!
//! This is the binary's one audited `unsafe` (the library has none). Reading a 5 MiB kernel BTF
//! with `read(2)` into a fresh buffer costs a page fault per 4 KiB of new memory plus the copy,
//! more than everything else a single-object run does (`/sys/kernel/btf/vmlinux` adds ~1,350
//! page-sized system calls). A mapping costs neither: the page cache's own pages are mapped,
//! all of them at open (`MAP_POPULATE`).
//!
//! # A mapped input that changes during the run
//!
//! - **Replaced** (a new file renamed over the path, as package managers and btfgen's own
//!   outputs do, or the path deleted): no effect. The run keeps reading the file it opened.
//! - **Truncated**: reading a page past the new end of a mapped file raises `SIGBUS`, which
//!   would kill the process. The handler installed here maps zero-filled pages over the rest of
//!   the input and marks it damaged; the read resumes and sees zeros. The run goes on with
//!   those, but [`check_inputs`], called before any output file is written (and by
//!   `relocate` once it has printed its results), fails it with "PATH: truncated while btfgen
//!   was reading it". No crash, no output file.
//! - **Written in place**: the mapping shows the new bytes as they land, as `read(2)` would
//!   have copied a torn mix of old and new. [`check_inputs`] compares the file's size and
//!   mtime with those seen when it was opened and fails the run with "PATH: changed while
//!   btfgen was reading it". Since Linux 6.13 (multigrain timestamps: ext4, xfs, btrfs, tmpfs)
//!   any write after the open shows in the mtime; on older kernels a write within the same
//!   clock tick as the open (a few ms) can go unnoticed, as any write during a `read(2)` does
//!   (bpftool's included).
//!
//! Memory safety never depends on the file: the library reads input bytes as plain values
//! and checks every index against the input's length, which is the mapping's and never
//! changes; the guard keeps every byte of that length readable.
//!
//! Not mapped but read: pipes and other non-regular files, empty files, files the kernel
//! refuses to map (most of sysfs), and inputs past the [`GUARD_SLOTS`] a run can guard.

use super::{CliError, CliResult, context};
use std::fs::File;
use std::io::Read;
use std::ops::Deref;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, Once, OnceLock};

/// How many mapped inputs a run can guard at once (a main BTF, its base and modules); further
/// inputs are read.
const GUARD_SLOTS: usize = 16;

/// The bytes of an input file.
pub enum Input {
    /// Read into memory.
    Read(Vec<u8>),
    /// Mapped read-only, guarded.
    Mapped(GuardedMap),
    /// Built into the binary.
    Embedded(&'static [u8]),
}

impl Deref for Input {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Input::Read(bytes) => bytes,
            Input::Mapped(guarded) => &guarded.map,
            Input::Embedded(bytes) => bytes,
        }
    }
}

impl Input {
    /// Map (or read) `path`, naming it in the error.
    pub fn open(path: &Path) -> CliResult<Input> {
        let file = File::open(path).map_err(context(path.display()))?;
        let meta = file.metadata().map_err(context(path.display()))?;
        let mut file = if meta.is_file() && meta.len() > 0 {
            match GuardedMap::new(path, file, &meta) {
                Ok(guarded) => return Ok(Input::Mapped(guarded)),
                Err(file) => file,
            }
        } else {
            file
        };
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(context(path.display()))?;
        Ok(Input::Read(bytes))
    }
}

/// Fail if a mapped input was truncated or written since it was opened (module docs): called
/// before anything computed from the inputs is written out.
pub fn check_inputs() -> CliResult<()> {
    for open in live().iter() {
        let damaged = REGIONS[open.slot].damaged.load(Ordering::Acquire);
        let now = open.file.metadata().ok().map(|m| FileState::of(&m));
        if damaged || now.as_ref() != Some(&open.state) {
            let what = if damaged { "truncated" } else { "changed" };
            return Err(CliError(format!(
                "{}: {what} while btfgen was reading it",
                open.path
            )));
        }
    }
    Ok(())
}

/// A mapped input, registered with the `SIGBUS` guard for as long as it lives.
pub struct GuardedMap {
    map: memmap2::Mmap,
    slot: usize,
}

/// What [`check_inputs`] compares: a file's size and modification time. Not its ctime, which
/// also changes when the file is renamed over or deleted, which does not affect the run.
#[derive(PartialEq)]
struct FileState {
    size: u64,
    mtime: (i64, i64),
}

impl FileState {
    fn of(meta: &std::fs::Metadata) -> Self {
        FileState {
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
        }
    }
}

/// A guarded input as [`check_inputs`] sees it. Kept apart from [`REGIONS`], which the signal
/// handler reads and which therefore holds atomics only.
struct OpenInput {
    slot: usize,
    path: String,
    file: File,
    state: FileState,
}

/// The guarded inputs, for [`check_inputs`].
static LIVE: Mutex<Vec<OpenInput>> = Mutex::new(Vec::new());

fn live() -> MutexGuard<'static, Vec<OpenInput>> {
    // Nothing panics while holding the lock, and the list stays valid if something did.
    LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// One mapped input's address range, as the signal handler sees it. `start == 0`: free.
struct Region {
    start: AtomicUsize,
    len: AtomicUsize,
    damaged: AtomicBool,
}

static REGIONS: [Region; GUARD_SLOTS] = [const {
    Region {
        start: AtomicUsize::new(0),
        len: AtomicUsize::new(0),
        damaged: AtomicBool::new(false),
    }
}; GUARD_SLOTS];

/// The `SIGBUS` action found before ours: faults outside the inputs go back to it (Rust's
/// runtime handles stack-guard faults there).
static PREVIOUS_ACTION: OnceLock<libc::sigaction> = OnceLock::new();
static PAGE_SIZE: AtomicUsize = AtomicUsize::new(0);
static INSTALL: Once = Once::new();

impl GuardedMap {
    /// Map `file` and guard the mapping; the file back (to be read) if the kernel refuses to
    /// map it, the guard cannot be installed or every slot is taken.
    fn new(path: &Path, file: File, meta: &std::fs::Metadata) -> Result<Self, File> {
        INSTALL.call_once(install_handler);
        let Ok(len) = usize::try_from(meta.len()) else {
            return Err(file);
        };
        if PREVIOUS_ACTION.get().is_none() {
            return Err(file);
        }
        // usize::MAX: taken, not yet mapped (the handler skips it).
        let Some(slot) = REGIONS.iter().position(|r| {
            r.start
                .compare_exchange(0, usize::MAX, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        }) else {
            return Err(file);
        };
        // Populated: one walk of the page cache maps every page now, cheaper than the ~90
        // faults that would map them 16 at a time while parsing.
        // SAFETY: a shared view of a mapped file is unsound if the file changes while it is
        // mapped. Truncation cannot fault the process: the guard (registered below, before
        // anything reads the mapping) turns every page past the new end into zeros, and
        // `check_inputs` refuses to write output computed from it. An in-place write can only
        // change byte values, which the library treats as untrusted input anyway (every
        // index is bounds-checked against the mapping's fixed length), and `check_inputs`
        // refuses that output too (module docs: timestamp granularity). The mapping is
        // private and read-only: nothing in this process writes through it. Its length is the
        // one seen at open: a file that shrank since then is caught the same way.
        let mapped = unsafe {
            memmap2::MmapOptions::new()
                .len(len)
                .populate()
                .map_copy_read_only(&file)
        };
        let Ok(map) = mapped else {
            REGIONS[slot].start.store(0, Ordering::Release);
            return Err(file);
        };
        let region = &REGIONS[slot];
        region.damaged.store(false, Ordering::Relaxed);
        region.len.store(map.len(), Ordering::Relaxed);
        region.start.store(map.as_ptr() as usize, Ordering::Release);
        live().push(OpenInput {
            slot,
            path: path.display().to_string(),
            file,
            state: FileState::of(meta),
        });
        Ok(GuardedMap { map, slot })
    }
}

impl Drop for GuardedMap {
    fn drop(&mut self) {
        live().retain(|open| open.slot != self.slot);
        // Unregistered before `map` unmaps its range (fields drop after this body).
        REGIONS[self.slot].len.store(0, Ordering::Release);
        REGIONS[self.slot].start.store(0, Ordering::Release);
    }
}

/// Install [`on_sigbus`]; on failure `PREVIOUS_ACTION` stays unset and inputs are read.
fn install_handler() {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let Ok(page) = usize::try_from(page) else {
        return;
    };
    if !page.is_power_of_two() {
        return;
    }
    PAGE_SIZE.store(page, Ordering::Relaxed);
    // SAFETY: both sigaction structs are plain data, zero-initialised then filled in; the
    // handler has the SA_SIGINFO signature and only does async-signal-safe work (atomics,
    // mmap, sigaction, raise).
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            on_sigbus;
        action.sa_sigaction = handler as usize;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut action.sa_mask);
        let mut previous: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGBUS, &action, &mut previous) == 0 {
            let _ = PREVIOUS_ACTION.set(previous);
        }
    }
}

/// `SIGBUS` on a mapped input: its file got shorter than the mapping. Map zero-filled pages
/// from the faulting page to the end of that input, mark it damaged and return, so that the
/// read resumes. Any other `SIGBUS` goes back to the previous action.
extern "C" fn on_sigbus(signal: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler; si_addr is
    // meaningful for SIGBUS (the faulting address).
    let (addr, code) = unsafe { ((*info).si_addr() as usize, (*info).si_code) };
    let page = PAGE_SIZE.load(Ordering::Relaxed);
    if code == libc::BUS_ADRERR {
        for region in &REGIONS {
            let start = region.start.load(Ordering::Acquire);
            let len = region.len.load(Ordering::Acquire);
            if start == 0 || start == usize::MAX || addr < start || addr - start >= len {
                continue;
            }
            let from = addr & !(page - 1);
            let end = (start + len).next_multiple_of(page);
            // SAFETY: [from, end) lies within the input's mapping (page-aligned, as mappings
            // are), which stays mapped while registered: replacing it keeps the range mapped,
            // readable, with the same length, and the owner unmaps it whole.
            let zeros = unsafe {
                libc::mmap(
                    from as *mut libc::c_void,
                    end - from,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                    -1,
                    0,
                )
            };
            if zeros != libc::MAP_FAILED {
                region.damaged.store(true, Ordering::Release);
                return;
            }
        }
    }
    // Not ours: restore the previous action and let it handle the signal (a fault repeats on
    // return; a signal sent by a process is raised again, delivered once we return).
    if let Some(previous) = PREVIOUS_ACTION.get() {
        // SAFETY: `previous` is the action sigaction returned; sigaction and raise are
        // async-signal-safe.
        unsafe {
            libc::sigaction(signal, previous, std::ptr::null_mut());
            if code <= 0 {
                libc::raise(signal);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// The guard's state is process-wide: one test at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn serial() -> MutexGuard<'static, ()> {
        SERIAL
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A file of `pages` pages, each filled with its page number plus one.
    fn file_of_pages(dir: &Path, pages: usize) -> (std::path::PathBuf, Vec<u8>) {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let bytes: Vec<u8> = (0..pages * page).map(|i| (i / page + 1) as u8).collect();
        let path = dir.join("input.btf");
        std::fs::write(&path, &bytes).unwrap();
        (path, bytes)
    }

    fn temp_dir(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("btfgen-input-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn regular_file_is_mapped_and_intact() {
        let _serial = serial();
        let dir = temp_dir("intact");
        let (path, bytes) = file_of_pages(&dir, 3);
        let input = Input::open(&path).unwrap();
        assert!(matches!(input, Input::Mapped(_)));
        assert_eq!(&input[..], &bytes[..]);
        check_inputs().unwrap();
        drop(input);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn truncation_under_the_mapping_reads_zeros_then_fails_the_check() {
        let _serial = serial();
        let dir = temp_dir("truncated");
        let (path, bytes) = file_of_pages(&dir, 4);
        let page = bytes.len() / 4;
        let input = Input::open(&path).unwrap();
        assert!(matches!(input, Input::Mapped(_)));
        // Cut it to one page and a half while mapped: pages 3 and 4 are past the end.
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len((page + page / 2) as u64)
            .unwrap();
        // Without the guard, this read kills the test process with SIGBUS.
        let seen = input.to_vec();
        assert_eq!(seen.len(), bytes.len());
        assert_eq!(&seen[..page], &bytes[..page]);
        assert!(seen[2 * page..].iter().all(|&b| b == 0));
        let err = check_inputs().unwrap_err();
        assert!(
            err.0
                .ends_with("input.btf: truncated while btfgen was reading it"),
            "{err}"
        );
        drop(input);
        check_inputs().unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn writes_in_place_fail_the_check() {
        let _serial = serial();
        let dir = temp_dir("written");
        let (path, _) = file_of_pages(&dir, 2);
        let input = Input::open(&path).unwrap();
        // The same size, other bytes: only the times tell.
        std::thread::sleep(std::time::Duration::from_millis(20));
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .write_all(b"changed")
            .unwrap();
        assert_eq!(&input[..7], b"changed");
        let err = check_inputs().unwrap_err();
        assert!(
            err.0
                .ends_with("input.btf: changed while btfgen was reading it"),
            "{err}"
        );
        drop(input);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_replaced_file_keeps_its_old_bytes() {
        let _serial = serial();
        let dir = temp_dir("replaced");
        let (path, bytes) = file_of_pages(&dir, 2);
        let input = Input::open(&path).unwrap();
        let other = dir.join("other.btf");
        std::fs::write(&other, b"new contents").unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert_eq!(&input[..], &bytes[..]);
        check_inputs().unwrap();
        drop(input);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn pipes_and_empty_files_are_read() {
        let _serial = serial();
        let dir = temp_dir("read");
        let path = dir.join("empty.btf");
        std::fs::write(&path, b"").unwrap();
        assert!(matches!(Input::open(&path).unwrap(), Input::Read(v) if v.is_empty()));
        let fifo = dir.join("fifo");
        let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let writer = std::thread::spawn({
            let fifo = fifo.clone();
            move || std::fs::write(fifo, b"piped").unwrap()
        });
        assert!(matches!(Input::open(&fifo).unwrap(), Input::Read(v) if v == b"piped"));
        writer.join().unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }
}
