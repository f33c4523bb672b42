//! The crate's error type: every variant says what went wrong and where (type id, byte offset,
//! section, relocation), so a user can find the bad byte without a debugger.

use core::fmt;

/// Result alias used throughout the crate.
pub type Result<T> = core::result::Result<T, Error>;

/// Everything that can go wrong while reading, relocating or minimizing.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// An allocation failed; the operation was abandoned and nothing leaked.
    OutOfMemory,
    /// The BTF header is malformed (bad magic, version, header length or section bounds).
    BadHeader(&'static str),
    /// A BTF blob ends before a record it announces.
    Truncated {
        /// What was being read.
        what: &'static str,
        /// Byte offset (within the type section, or the blob) where the record starts.
        offset: usize,
    },
    /// A type record is invalid.
    BadType {
        /// The offending type id.
        id: u32,
        /// Why it is invalid.
        reason: &'static str,
    },
    /// A string offset is out of range or not NUL-terminated.
    BadString {
        /// The string offset.
        offset: u32,
        /// Why it is invalid.
        reason: &'static str,
    },
    /// A type id that does not exist in the BTF it is looked up in.
    NoSuchType(u32),
    /// A documented limit was exceeded.
    Limit {
        /// Which limit.
        what: &'static str,
        /// The limit's value.
        limit: usize,
    },
    /// The ELF file is malformed or not a BPF object.
    BadElf(&'static str),
    /// A section or symbol of a BPF ELF object is malformed.
    BadElfSection {
        /// Why it is invalid.
        reason: &'static str,
        /// Index of the ELF section (for a symbol: of the symbol table).
        section: usize,
        /// Byte offset within that section.
        offset: u64,
    },
    /// A required ELF section is absent.
    MissingSection(&'static str),
    /// `.BTF.ext` is malformed.
    BadBtfExt {
        /// Why it is invalid.
        reason: &'static str,
        /// Byte offset within `.BTF.ext`.
        offset: usize,
    },
    /// A CO-RE relocation record cannot be applied.
    BadRelocation {
        /// Index of the record within its section's core_relo records.
        relo: u32,
        /// Why it failed.
        reason: &'static str,
    },
    /// Several candidate types match a relocation but give different results.
    AmbiguousRelocation {
        /// Index of the record within its section's core_relo records.
        relo: u32,
        /// Target type id of the first matching candidate.
        first: u32,
        /// Target type id of the disagreeing candidate.
        second: u32,
    },
    /// An argument passed by the caller is invalid.
    InvalidArgument(&'static str),
    /// A type of a kind btfgen does not know, whose record length no layout section gives.
    UnknownKind {
        /// The type's id.
        id: u32,
        /// Its raw kind value.
        kind: u32,
    },
    /// An entry of the BTF layout section is invalid.
    BadLayout {
        /// The raw kind value the entry describes (its index in the section).
        kind: u32,
        /// Why it is invalid.
        reason: &'static str,
    },
    /// os-release text (os-release(5)) that cannot be read.
    BadOsRelease {
        /// 1-based line number (0: the text as a whole).
        line: usize,
        /// Why it is invalid.
        reason: &'static str,
    },
    /// DWARF debug information that is malformed, truncated or cannot be turned into BTF.
    BadDwarf {
        /// The section being read (`.debug_info`, `.debug_types`, ...).
        section: &'static str,
        /// Offset of the unit's header within that section (`u64::MAX`: no unit yet).
        unit: u64,
        /// Offset of the DIE within that section (`u64::MAX`: not at a DIE).
        die: u64,
        /// Why it cannot be read or converted.
        reason: &'static str,
    },
    /// A BTF archive (tar, possibly compressed) that is corrupt or truncated.
    BadArchive {
        /// Byte offset in the uncompressed tar stream (or in the compressed input, for a
        /// decompression error) where the problem was found.
        offset: u64,
        /// Why it is invalid.
        reason: &'static str,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::OutOfMemory => f.write_str("out of memory"),
            Error::BadHeader(why) => write!(f, "invalid BTF header: {why}"),
            Error::Truncated { what, offset } => {
                write!(f, "truncated {what} at byte offset {offset}")
            }
            Error::BadType { id, reason } => write!(f, "invalid BTF type [{id}]: {reason}"),
            Error::BadString { offset, reason } => {
                write!(f, "invalid BTF string at offset {offset}: {reason}")
            }
            Error::NoSuchType(id) => write!(f, "no BTF type with id {id}"),
            Error::Limit { what, limit } => write!(f, "limit exceeded: {what} (limit {limit})"),
            Error::BadElf(why) => write!(f, "invalid BPF ELF object: {why}"),
            Error::BadElfSection {
                reason,
                section,
                offset,
            } => write!(
                f,
                "invalid BPF ELF object: section #{section} at byte offset {offset}: {reason}"
            ),
            Error::MissingSection(name) => write!(f, "ELF section {name} is missing"),
            Error::BadBtfExt { reason, offset } => {
                write!(f, "invalid .BTF.ext at byte offset {offset}: {reason}")
            }
            Error::BadRelocation { relo, reason } => {
                write!(f, "CO-RE relocation #{relo}: {reason}")
            }
            Error::AmbiguousRelocation {
                relo,
                first,
                second,
            } => write!(
                f,
                "CO-RE relocation #{relo}: candidates [{first}] and [{second}] match but disagree"
            ),
            Error::InvalidArgument(why) => write!(f, "invalid argument: {why}"),
            Error::UnknownKind { id, kind } => write!(
                f,
                "invalid BTF type [{id}]: kind {kind} is unknown to btfgen, and no layout \
                 section gives its length"
            ),
            Error::BadLayout { kind, reason } => {
                write!(
                    f,
                    "invalid BTF layout section: entry for kind {kind}: {reason}"
                )
            }
            Error::BadOsRelease { line: 0, reason } => write!(f, "invalid os-release: {reason}"),
            Error::BadOsRelease { line, reason } => {
                write!(f, "invalid os-release: line {line}: {reason}")
            }
            Error::BadDwarf {
                section,
                unit,
                die,
                reason,
            } => {
                write!(f, "invalid DWARF in {section}")?;
                if *unit != u64::MAX {
                    write!(f, ", unit at {unit:#x}")?;
                }
                if *die != u64::MAX {
                    write!(f, ", DIE at {die:#x}")?;
                }
                write!(f, ": {reason}")
            }
            Error::BadArchive { offset, reason } => {
                write!(f, "invalid BTF archive at byte offset {offset}: {reason}")
            }
        }
    }
}

impl core::error::Error for Error {}

impl From<alloc::collections::TryReserveError> for Error {
    fn from(_: alloc::collections::TryReserveError) -> Self {
        Error::OutOfMemory
    }
}

impl From<hashbrown::TryReserveError> for Error {
    fn from(_: hashbrown::TryReserveError) -> Self {
        Error::OutOfMemory
    }
}
