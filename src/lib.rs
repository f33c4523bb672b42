//! btfgen: minimized BTF for CO-RE eBPF objects.
//!
//! Pipeline, one module per stage, data flowing one way:
//! [`btf`] (bytes → validated views; writer) → [`object`] (BPF ELF + `.BTF.ext`) →
//! [`core`] (CO-RE specs, candidates, matching, results) → [`minimize`] (marks → new BTF);
//! [`dwarf`] turns DWARF (a kernel built without BTF) into the BTF [`btf`] reads;
//! beside it, [`select`] picks, at run time, the minimized BTF of the running kernel from an
//! archive of them.
//!
//! The crate is `#![no_std]` with `alloc`; every allocation is fallible and surfaces as
//! [`Error::OutOfMemory`], which [`budget`] uses to bound how much a piece of work may take.
//! The `std` feature adds file helpers, `mapped` input files mapped instead of read; `cli`
//! builds the `btfgen` binary; `ffi` adds the C ABI
//! (module `ffi`, header `include/btfgen.h`).
#![no_std]
#![deny(missing_docs)]
// `unsafe` is denied everywhere but the C ABI (`ffi`), the allocator layer (`budget`) and the
// mapped input files (`mapped`).
#![deny(unsafe_code)]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

pub mod btf;
// A `GlobalAlloc` wrapper cannot be written without `unsafe`; audited block by block.
#[allow(unsafe_code)]
pub mod budget;
pub mod core;
pub mod dwarf;
#[cfg(feature = "mapped")]
pub mod dwarf_input;
mod elf;
pub mod error;
mod fallible;
#[cfg(feature = "ffi")]
#[allow(unsafe_code)]
pub mod ffi;
#[cfg(feature = "std")]
pub mod fs;
pub mod log;
// Mapping a file and guarding it against `SIGBUS` cannot be written without `unsafe`.
#[cfg(feature = "mapped")]
#[allow(unsafe_code)]
pub mod mapped;
pub mod minimize;
pub mod object;
pub mod select;
#[cfg(test)]
mod test_rng;

pub use error::{Error, Result};
