//! Input files: read into memory, except the running kernel's BTF, which is mapped.
//!
//! This is the binary's one audited `unsafe` (the library has none): reading
//! `/sys/kernel/btf/vmlinux` through `read(2)` costs ~1,350 page-sized system calls and as many
//! page faults on a fresh 5 MiB buffer, more than everything else the main job does; mapping it
//! costs neither.

use super::{CliResult, context};
use std::ops::Deref;
use std::path::Path;

/// The running kernel's BTF, which the kernel lets user space map (privately) since 6.16.
const KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";

/// The bytes of an input file.
pub enum Input {
    /// Read into memory.
    Read(Vec<u8>),
    /// Mapped read-only.
    Mapped(memmap2::Mmap),
    /// Built into the binary.
    Embedded(&'static [u8]),
}

impl Deref for Input {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Input::Read(bytes) => bytes,
            Input::Mapped(map) => map,
            Input::Embedded(bytes) => bytes,
        }
    }
}

impl Input {
    /// Read (or map) `path`, naming it in the error.
    pub fn open(path: &Path) -> CliResult<Input> {
        if path == Path::new(KERNEL_BTF)
            && let Some(map) = map_kernel_btf(path)
        {
            return Ok(Input::Mapped(map));
        }
        std::fs::read(path)
            .map(Input::Read)
            .map_err(context(path.display()))
    }
}

/// Map the kernel's BTF; `None` (then it is read) where the kernel does not support it.
fn map_kernel_btf(path: &Path) -> Option<memmap2::Mmap> {
    let file = std::fs::File::open(path).ok()?;
    // SAFETY: mapping a file is unsound if another process truncates or writes it while it is
    // mapped. `/sys/kernel/btf/vmlinux` is neither: the kernel exposes its own built-in,
    // immutable BTF read-only (mode 0444, no write or truncate handler), and it exists for as
    // long as the kernel runs. Only that exact path is mapped; every other file is read.
    // The kernel only allows private read-only mappings of it.
    unsafe { memmap2::MmapOptions::new().map_copy_read_only(&file) }
        .ok()
        .filter(|map| !map.is_empty())
}
