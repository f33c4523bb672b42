//! A kernel input as the front ends (the command, the C ABI) read it when it is DWARF: the
//! decision to convert it ([`crate::dwarf::converts`]), its `dwz -m` supplementary file found
//! and checked, and the conversion, in one place.
//!
//! The supplementary file is looked for, in order, at the path the input names (a relative
//! one from the input's directory), next to the input under that path's file name, and where
//! distributions install debug files by build id (`/usr/lib/debug/.build-id/NN/REST.debug`);
//! or only at the file the caller gives (`--dwarf-alt`). A file found must carry the identity
//! the input names (its build id, or its `.debug_sup` checksum).

use crate::btf::Btf;
use crate::btf::split::{Split, SplitBase};
use crate::dwarf::supplementary::{self, Link};
use crate::error::Error;
use crate::mapped::FileBytes;
use std::ffi::OsStr;
use std::fmt;
use std::format;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::string::String;
use std::vec::Vec;

/// Why a DWARF input could not be read.
#[derive(Debug)]
pub enum DwarfInputError {
    /// Its supplementary file was not found, or not the one it names: which file was looked
    /// for, and what was found where.
    Supplementary(String),
    /// The conversion failed (malformed DWARF, out of memory).
    Convert(Error),
    /// A module's types share nothing with the base it was split over: how many named
    /// structs and unions it has, none of them the base's.
    NotTheBase(u32),
}

impl fmt::Display for DwarfInputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DwarfInputError::Supplementary(why) => f.write_str(why),
            DwarfInputError::Convert(e) => write!(f, "DWARF: {e}"),
            DwarfInputError::NotTheBase(named) => write!(
                f,
                "not a module of this base: none of its {named} named structs and unions is a \
                 type of the base"
            ),
        }
    }
}

impl From<Error> for DwarfInputError {
    fn from(e: Error) -> Self {
        DwarfInputError::Convert(e)
    }
}

/// How a front end's conversion runs.
#[derive(Clone, Copy)]
pub struct ConvertOptions<'p> {
    /// Told how far the conversion is (a command's progress line).
    pub progress: &'p (dyn Fn(crate::dwarf::Progress) + Sync),
    /// Whether it may use a second thread ([`crate::dwarf::Options::threads`]); not where
    /// the C library's client gave allocator hooks, which are called only from the client's
    /// own threads.
    pub threads: bool,
    /// Whether functions are converted too ([`crate::dwarf::Options::functions`]): for the
    /// whole BTF (`encode`), not for relocating, which reads types only.
    pub functions: bool,
    /// Whether the converted records are freed on a thread the conversion does not wait for
    /// ([`crate::dwarf::Options::free_in_background`]): a command's, not the C library's.
    pub free_in_background: bool,
}

impl Default for ConvertOptions<'_> {
    /// Nothing told; two threads; functions converted; the records freed before it returns.
    fn default() -> Self {
        ConvertOptions {
            progress: &|_| {},
            threads: true,
            functions: true,
            free_in_background: false,
        }
    }
}

/// The BTF of input `data` (read from `path`) when it is converted from DWARF (`None` when it
/// is read as BTF as it is), with its supplementary file if it names one: `alt` if given,
/// else found as the module docs say.
pub fn convert(
    path: &Path,
    data: &[u8],
    force_dwarf: bool,
    alt: Option<&Path>,
    how: &ConvertOptions<'_>,
) -> Result<Option<Vec<u8>>, DwarfInputError> {
    if !crate::dwarf::converts(data, force_dwarf) {
        return Ok(None);
    }
    let sup = supplementary_file(path, data, alt)?;
    // The DWARF is read unit after unit (once, or twice): pages read are let go as it goes.
    let options = crate::dwarf::Options {
        release: &crate::mapped::release,
        threads: how.threads,
        progress: how.progress,
        functions: how.functions,
        free_in_background: how.free_in_background,
        ..crate::dwarf::Options::default()
    };
    let btf = crate::dwarf::to_btf_with(data, sup.as_deref(), &options)?;
    // Read while mapped: a change meanwhile shows only now.
    if let Some(Err(changed)) = sup.as_ref().map(FileBytes::check) {
        return Err(DwarfInputError::Supplementary(format!(
            "{}: {}",
            changed.path,
            changed.reason()
        )));
    }
    Ok(Some(btf))
}

/// A kernel module's debug file `data` (read from `path`; a relocatable `.ko`, its
/// `.rela.debug_*` applied) converted to split BTF over `base`, as `pahole -J --btf_base`
/// writes it ([`crate::btf::split`]), with its supplementary file if it names one (`alt`, or
/// found as the module docs say). A module none of whose named structs and unions
/// is a base type was built for another kernel: an error, not a split BTF that repeats its
/// kernel's types.
pub fn convert_module(
    path: &Path,
    data: &[u8],
    base: &SplitBase<'_>,
    alt: Option<&Path>,
    how: &ConvertOptions<'_>,
) -> Result<Split, DwarfInputError> {
    // A truncated file says so, rather than that it has no DWARF.
    crate::elf::section_data(data, ".debug_info")?;
    let Some(standalone) = convert(path, data, true, alt, how)? else {
        return Err(DwarfInputError::Convert(Error::MissingSection(
            ".debug_info",
        )));
    };
    let split = base.split(&Btf::parse(&standalone)?)?;
    if split.named > 0 && split.named_in_base == 0 {
        return Err(DwarfInputError::NotTheBase(split.named));
    }
    Ok(split)
}

/// The supplementary file input `data` (read from `path`) names, mapped; `None` if it names
/// none.
pub fn supplementary_file(
    path: &Path,
    data: &[u8],
    alt: Option<&Path>,
) -> Result<Option<FileBytes>, DwarfInputError> {
    let Some(link) = supplementary::link(data)? else {
        return Ok(None);
    };
    let candidates = match alt {
        Some(alt) => std::vec![alt.to_path_buf()],
        None => candidates(path, &link)?,
    };
    let mut looked = Vec::new();
    for candidate in candidates {
        match FileBytes::open(&candidate) {
            Ok(bytes) => match supplementary::identity(&bytes) {
                Ok(Some(id)) if id == link.id => return Ok(Some(bytes)),
                Ok(Some(id)) => looked.push(format!(
                    "{} (another file: build id {})",
                    candidate.display(),
                    supplementary::hex(id)?
                )),
                Ok(None) => looked.push(format!("{} (no build id)", candidate.display())),
                Err(e) => looked.push(format!("{} ({e})", candidate.display())),
            },
            Err(e) => looked.push(format!("{} ({e})", candidate.display())),
        }
    }
    Err(DwarfInputError::Supplementary(format!(
        "{} names the supplementary file {} (build id {}); looked at: {}",
        link.section,
        String::from_utf8_lossy(link.path),
        supplementary::hex(link.id)?,
        looked.join(", "),
    )))
}

/// Where the supplementary file of input `path` is looked for, in order, without repeats.
fn candidates(path: &Path, link: &Link<'_>) -> Result<Vec<PathBuf>, DwarfInputError> {
    let named = Path::new(OsStr::from_bytes(link.path));
    let dir = path.parent().unwrap_or(Path::new(""));
    let next_to = named.file_name().map(|name| dir.join(name));
    let by_id = supplementary::build_id_path(link.id)?.map(PathBuf::from);
    let mut out: Vec<PathBuf> = Vec::new();
    for candidate in [Some(dir.join(named)), next_to, by_id]
        .into_iter()
        .flatten()
    {
        if !out.contains(&candidate) {
            out.push(candidate);
        }
    }
    Ok(out)
}
