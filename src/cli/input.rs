//! Input files: regular files (the running kernel's BTF included) are mapped, guarded against
//! being truncated or written under the mapping, by the library's [`btfgen::mapped`] (its docs
//! say how); anything else is read.
//!
//! The CLI's inputs all feed one output, so one check of every mapped input, [`check_inputs`],
//! runs before any output file is written (and in `relocate` once it has printed its results):
//! a changed input fails the run with "PATH: truncated while btfgen was reading it" or "PATH:
//! changed while btfgen was reading it", and no output file.

use super::{CliError, CliResult, context};
use btfgen::mapped::{self, FileBytes, GuardedMap};
use std::ops::Deref;
use std::path::Path;

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
            Input::Mapped(guarded) => guarded,
            Input::Embedded(bytes) => bytes,
        }
    }
}

impl Input {
    /// Map (or read) `path`, naming it in the error ([`FileBytes::open`]).
    pub fn open(path: &Path) -> CliResult<Input> {
        Ok(Self::of(
            FileBytes::open(path).map_err(context(path.display()))?,
        ))
    }

    fn of(bytes: FileBytes) -> Input {
        match bytes {
            FileBytes::Read(bytes) => Input::Read(bytes),
            FileBytes::Mapped(guarded) => Input::Mapped(guarded),
        }
    }
}

/// Fail if a mapped input was truncated or written since it was opened ([`mapped::check_all`]):
/// called before anything computed from the inputs is written out.
pub fn check_inputs() -> CliResult<()> {
    mapped::check_all().map_err(|changed| CliError(changed.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;
    use std::io::Write;
    use std::sync::{Mutex, MutexGuard};

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
    fn released_pages_read_the_same_bytes_again() {
        let _serial = serial();
        let dir = temp_dir("released");
        let (path, bytes) = file_of_pages(&dir, 8);
        let input = Input::open(&path).unwrap();
        assert!(matches!(input, Input::Mapped(_)));
        assert_eq!(&input[..], &bytes[..]);
        // Whole pages in the middle, a part of one page, and bytes that are not mapped.
        btfgen::mapped::release(&input[100..bytes.len() - 100]);
        btfgen::mapped::release(&input[10..20]);
        btfgen::mapped::release(&bytes[..]);
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
        // A pipe starting like an ELF file: read whole, as any pipe.
        let writer = std::thread::spawn({
            let fifo = fifo.clone();
            move || std::fs::write(fifo, b"\x7fELF piped").unwrap()
        });
        let input = Input::open(&fifo).unwrap();
        assert!(matches!(input, Input::Read(v) if v == b"\x7fELF piped"));
        writer.join().unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }
}
