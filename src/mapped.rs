//! Input files for the command-line tool and the C ABI (feature `mapped`): regular files (a
//! kernel BTF copied to disk included) are mapped, guarded against being truncated under the
//! mapping; anything else is read.
//!
//! This is the library's one audited `unsafe` outside the C ABI and the allocator layer.
//! Reading a 5 MiB kernel BTF with `read(2)` into a fresh buffer costs a page fault per 4 KiB of
//! new memory plus the copy, more than everything else a single-object run does, and makes the
//! input the largest block on the heap (the C ABI's `bpf_reloc_info__mem_peak` was 1.06× the
//! target). A mapping costs neither: the page cache's own pages are mapped as they are first
//! read (16 at a time, the kernel's fault-around), and the heap holds only what is computed
//! from them. Pages never read (a BPF object's DWARF, the sections of a vmlinux other than
//! `.BTF`) are never mapped. Mapping a kernel BTF whole at open (`MAP_POPULATE`) was measured
//! slower: its per-page walk cost more than the faults (a one-object run 3.5 ms against 3.1 ms).
//!
//! # A mapped input that changes while it is mapped
//!
//! - **Replaced** (a new file renamed over the path, as package managers and btfgen's own
//!   outputs do, or the path deleted): no effect. The mapping keeps the file that was opened.
//! - **Truncated**: reading a page past the new end of a mapped file raises `SIGBUS`, which
//!   would kill the process. The handler installed with the first mapping maps zero-filled
//!   pages over the rest of the input and marks it damaged; the read resumes and sees zeros.
//!   The work goes on with those, but [`GuardedMap::check`] (and [`check_all`]), called before
//!   anything computed from the input is handed out, fails with "PATH: truncated while btfgen
//!   was reading it".
//! - **Written in place**: the mapping shows the new bytes as they land, as `read(2)` would
//!   have copied a torn mix of old and new. The check compares the file's size and mtime with
//!   those seen when it was opened and fails with "PATH: changed while btfgen was reading it".
//!   Since Linux 6.13 (multigrain timestamps: ext4, xfs, btrfs, tmpfs) any write after the
//!   open shows in the mtime; on older kernels a write within the same clock tick as the open
//!   (a few ms) can go unnoticed, as any write during a `read(2)` does (bpftool's included).
//!
//! Memory safety never depends on the file: the library reads input bytes as plain values
//! and checks every index against the input's length, which is the mapping's and never
//! changes; the guard keeps every byte of that length readable.
//!
//! # The `SIGBUS` handler in a process that is not btfgen's
//!
//! A library must not take a signal away from its host. The handler is installed once, when
//! the first input is mapped, with `SA_SIGINFO | SA_ONSTACK`, and remembers the action it
//! replaced. A `SIGBUS` that is not a fault inside a guarded mapping goes to that action: a
//! handler function is called directly (with the same arguments), the default or ignore
//! action is put back and the signal re-delivered (so the process dies of it as it would
//! have). A host that installs its own `SIGBUS` handler after the first mapping replaces this
//! one: a truncated input then reaches the host's handler (or kills the process) as with any
//! mapped file, so such a host should install its handler first, or not truncate inputs.
//!
//! Not mapped but read: pipes and other non-regular files, empty files, files the kernel
//! refuses to map (most of sysfs: `/sys/kernel/btf/vmlinux` maps since Linux 6.16, module BTFs
//! do not), and inputs past the [`GUARD_SLOTS`] mapped at once.
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(unsafe_op_in_unsafe_fn)]

use crate::fallible;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::ops::Deref;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, Once, OnceLock};

/// How many inputs can be mapped and guarded at once (a main BTF, its base and modules, for
/// every live C ABI session, and a command's objects: libbpf-tools has over 50); further
/// inputs are read. Each slot holds an open file until its input is dropped.
pub const GUARD_SLOTS: usize = 256;

/// The bytes of an input file: mapped when possible, read otherwise.
pub enum FileBytes {
    /// Read into memory.
    Read(Vec<u8>),
    /// Mapped read-only, guarded.
    Mapped(GuardedMap),
}

impl Deref for FileBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            FileBytes::Read(bytes) => bytes,
            FileBytes::Mapped(guarded) => guarded,
        }
    }
}

impl FileBytes {
    /// Map (or read) the file at `path`. A directory is `EISDIR`; running out of memory is
    /// [`io::ErrorKind::OutOfMemory`]; other failures are the failing system call's.
    pub fn open(path: &Path) -> io::Result<FileBytes> {
        let file = open_file(path)?;
        let meta = file.metadata()?;
        let file = if meta.is_file() && meta.len() > 0 {
            match GuardedMap::new(path, file, &meta)? {
                Ok(guarded) => return Ok(FileBytes::Mapped(guarded)),
                Err(file) => file,
            }
        } else {
            file
        };
        Ok(FileBytes::Read(read_opened(file, &meta)?))
    }

    /// Whether the input is still what was opened ([`GuardedMap::check`]); read inputs always
    /// are.
    pub fn check(&self) -> Result<(), InputChanged> {
        match self {
            FileBytes::Read(_) => Ok(()),
            FileBytes::Mapped(guarded) => guarded.check(),
        }
    }
}

/// The whole contents of the file at `path`, read (never mapped): for inputs that outlive
/// their file or are copied anyway. Errors as [`FileBytes::open`].
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    let file = open_file(path)?;
    let meta = file.metadata()?;
    read_opened(file, &meta)
}

/// Open `path` for reading. A path too long for `std`'s stack buffer is copied to the heap
/// infallibly: counted against the current budget ([`crate::budget`]), never refused (which
/// would abort).
fn open_file(path: &Path) -> io::Result<File> {
    crate::budget::count_only(|| File::open(path))
}

/// Read `file` to its end into a buffer reserved fallibly from its size (`meta`).
fn read_opened(mut file: File, meta: &std::fs::Metadata) -> io::Result<Vec<u8>> {
    if meta.is_dir() {
        return Err(io::Error::from_raw_os_error(libc::EISDIR));
    }
    // sysfs files (`/sys/kernel/btf/*`) report their real size; one spare byte lets
    // `read_to_end` see end-of-file without growing the buffer.
    let hint =
        usize::try_from(meta.len()).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(hint.saturating_add(1))
        .map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A mapped input that was truncated or written in place since it was opened (module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputChanged {
    /// The input's path, as given when it was opened.
    pub path: String,
    /// Truncated under the mapping (else: written in place).
    pub truncated: bool,
}

impl InputChanged {
    /// What happened to the input, without its path.
    pub fn reason(&self) -> &'static str {
        if self.truncated {
            "truncated while btfgen was reading it"
        } else {
            "changed while btfgen was reading it"
        }
    }
}

impl fmt::Display for InputChanged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.reason())
    }
}

/// Fail if any input mapped now was truncated or written since it was opened
/// ([`GuardedMap::check`] on each): for a process whose inputs all feed one output, such as the
/// command-line tool.
pub fn check_all() -> Result<(), InputChanged> {
    (0..GUARD_SLOTS).try_for_each(check_slot)
}

/// Let this process drop the pages of `part` (bytes of a mapped input) until they are read
/// again: for a long read of a large input (a debug vmlinux's DWARF, read in two passes), so
/// that the part already read does not count twice, once in the page cache and once in this
/// process's resident set. Pages partly outside `part` stay; bytes that are not of a mapped
/// input are left alone.
pub fn release(part: &[u8]) {
    let page = PAGE_SIZE.load(Ordering::Relaxed);
    if page == 0 || part.is_empty() {
        return;
    }
    let start = part.as_ptr() as usize;
    let end = start + part.len();
    let (first, last) = (start.next_multiple_of(page), end / page * page);
    if first >= last {
        return;
    }
    let in_a_mapping = REGIONS.iter().any(|r| {
        let (at, len) = (
            r.start.load(Ordering::Acquire),
            r.len.load(Ordering::Acquire),
        );
        at != 0 && at != usize::MAX && start >= at && end <= at.saturating_add(len)
    });
    if !in_a_mapping {
        return;
    }
    // SAFETY: [first, last) lies inside a mapping of a guarded input that `part` borrows, so it
    // stays mapped through this call. The mapping is private, read-only and file-backed (or,
    // after a truncation, the guard's zero pages): MADV_DONTNEED only drops its page table
    // entries, and the next read maps the file's page again, with the same bytes unless the
    // file changed, which the guard's check reports as it does for any read of the mapping.
    // Nothing is written through it.
    let _ = unsafe {
        libc::madvise(
            first as *mut libc::c_void,
            last - first,
            libc::MADV_DONTNEED,
        )
    };
}

/// A mapped input, registered with the `SIGBUS` guard for as long as it lives.
pub struct GuardedMap {
    map: memmap2::Mmap,
    slot: usize,
}

impl GuardedMap {
    /// Map `file` and guard the mapping: `Ok(Err(file))` (to be read instead) if the kernel
    /// refuses to map it, the guard cannot be installed or every slot is taken; `Err` only
    /// when out of memory.
    fn new(path: &Path, file: File, meta: &std::fs::Metadata) -> io::Result<Result<Self, File>> {
        INSTALL.call_once(install_handler);
        let Ok(len) = usize::try_from(meta.len()) else {
            return Ok(Err(file));
        };
        if PREVIOUS_ACTION.get().is_none() {
            return Ok(Err(file));
        }
        let path = fallible::to_string(&path.to_string_lossy())
            .map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
        // usize::MAX: taken, not yet mapped (the handler skips it).
        let Some(slot) = REGIONS.iter().position(|r| {
            r.start
                .compare_exchange(0, usize::MAX, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        }) else {
            return Ok(Err(file));
        };
        let mut options = memmap2::MmapOptions::new();
        options.len(len);
        // SAFETY: a shared view of a mapped file is unsound if the file changes while it is
        // mapped. Truncation cannot fault the process: the guard (registered below, before
        // anything reads the mapping) turns every page past the new end into zeros, and
        // `check` refuses what is computed from it. An in-place write can only change byte
        // values, which the library treats as untrusted input anyway (every index is
        // bounds-checked against the mapping's fixed length), and `check` refuses that too
        // (module docs: timestamp granularity). The mapping is private and read-only: nothing
        // in this process writes through it. Its length is the one seen at open: a file that
        // shrank since then is caught the same way.
        let mapped = unsafe { options.map_copy_read_only(&file) };
        let (Ok(map), Some(region)) = (mapped, REGIONS.get(slot)) else {
            release_slot(slot);
            return Ok(Err(file));
        };
        region.damaged.store(false, Ordering::Relaxed);
        region.len.store(map.len(), Ordering::Relaxed);
        region.start.store(map.as_ptr() as usize, Ordering::Release);
        if let Some(watch) = WATCHES.get(slot) {
            *lock(watch) = Some(Watch {
                path,
                file,
                state: FileState::of(meta),
            });
        }
        Ok(Ok(GuardedMap { map, slot }))
    }

    /// Fail if the file was truncated under the mapping or written in place since it was opened
    /// (module docs): call it before anything computed from the input is handed out.
    pub fn check(&self) -> Result<(), InputChanged> {
        check_slot(self.slot)
    }
}

impl Deref for GuardedMap {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.map
    }
}

impl Drop for GuardedMap {
    fn drop(&mut self) {
        if let Some(watch) = WATCHES.get(self.slot) {
            *lock(watch) = None;
        }
        // Unregistered before `map` unmaps its range (fields drop after this body).
        release_slot(self.slot);
    }
}

/// Mark `slot` free for the handler and for the next mapping.
fn release_slot(slot: usize) {
    if let Some(region) = REGIONS.get(slot) {
        region.len.store(0, Ordering::Release);
        region.start.store(0, Ordering::Release);
    }
}

/// The check of the input mapped in `slot`, if any.
fn check_slot(slot: usize) -> Result<(), InputChanged> {
    let (Some(region), Some(watch)) = (REGIONS.get(slot), WATCHES.get(slot)) else {
        return Ok(());
    };
    let watch = lock(watch);
    let Some(open) = watch.as_ref() else {
        return Ok(());
    };
    let truncated = region.damaged.load(Ordering::Acquire);
    let now = open.file.metadata().ok().map(|m| FileState::of(&m));
    if truncated || now.as_ref() != Some(&open.state) {
        // An error path: the copy may allocate past a C ABI budget (never refused there).
        return Err(crate::budget::count_only(|| InputChanged {
            path: open.path.clone(),
            truncated,
        }));
    }
    Ok(())
}

/// What the check compares: a file's size and modification time. Not its ctime, which also
/// changes when the file is renamed over or deleted, which does not affect the mapping.
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

/// A guarded input as the check sees it. Kept apart from [`REGIONS`], which the signal handler
/// reads and which therefore holds atomics only.
struct Watch {
    path: String,
    file: File,
    state: FileState,
}

/// Per slot: the guarded input, for the checks. Fixed slots, so registering allocates nothing
/// that outlives the input (a C ABI session's budget gets back all it was charged).
static WATCHES: [Mutex<Option<Watch>>; GUARD_SLOTS] = [const { Mutex::new(None) }; GUARD_SLOTS];

fn lock(watch: &Mutex<Option<Watch>>) -> MutexGuard<'_, Option<Watch>> {
    // Nothing panics while holding the lock, and the slot stays valid if something did.
    watch
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
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

/// The `SIGBUS` action found before ours: signals that are not faults in a guarded input go to
/// it (Rust's runtime handles stack-guard faults there; a C host may have its own).
static PREVIOUS_ACTION: OnceLock<libc::sigaction> = OnceLock::new();
static PAGE_SIZE: AtomicUsize = AtomicUsize::new(0);
static INSTALL: Once = Once::new();

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
    // mmap, sigaction, raise, and the previous handler, itself a signal handler).
    unsafe {
        let mut action: libc::sigaction = core::mem::zeroed();
        let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            on_sigbus;
        action.sa_sigaction = handler as usize;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        libc::sigemptyset(&mut action.sa_mask);
        let mut previous: libc::sigaction = core::mem::zeroed();
        if libc::sigaction(libc::SIGBUS, &action, &mut previous) == 0 {
            let _ = PREVIOUS_ACTION.set(previous);
        }
    }
}

/// `SIGBUS` on a mapped input: its file got shorter than the mapping. Map zero-filled pages
/// from the faulting page to the end of that input, mark it damaged and return, so that the
/// read resumes. Any other `SIGBUS` goes to the previous action (module docs).
extern "C" fn on_sigbus(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
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
    let Some(previous) = PREVIOUS_ACTION.get() else {
        return;
    };
    let chained = previous.sa_sigaction;
    if chained == libc::SIG_DFL || chained == libc::SIG_IGN {
        // The default action (or ignored, which the kernel turns into the default for a fault):
        // put it back and let it happen. A fault repeats on return; a signal sent by a process
        // is raised again, delivered once we return.
        // SAFETY: `previous` is the action sigaction returned; sigaction and raise are
        // async-signal-safe.
        unsafe {
            libc::sigaction(signal, previous, core::ptr::null_mut());
            if code <= 0 {
                libc::raise(signal);
            }
        }
    } else if previous.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: with SA_SIGINFO, `sa_sigaction` is the three-argument handler the host
        // installed; it gets the arguments the kernel gave us, as if it had been called first.
        unsafe {
            let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                core::mem::transmute::<usize, _>(chained);
            handler(signal, info, context);
        }
    } else {
        // SAFETY: without SA_SIGINFO, `sa_sigaction` (the same union as `sa_handler`) is the
        // one-argument handler the host installed.
        unsafe {
            let handler: extern "C" fn(libc::c_int) = core::mem::transmute::<usize, _>(chained);
            handler(signal);
        }
    }
}
