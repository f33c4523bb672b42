//! The kernels of a BTFHub-style tree: which files under `--btf-dir` are kernel BTFs (raw
//! `KERNEL.btf`, BTFHub's `KERNEL.btf.tar.xz`, or a debug vmlinux with DWARF as
//! `KERNEL.debug`), where each one's output goes, and reading each one's bytes (unpacking an
//! archive in memory).

use crate::cli::{CliResult, context};
use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Suffix of a raw kernel BTF.
pub(super) const BTF_SUFFIX: &str = ".btf";
/// Suffix of a packed kernel BTF (BTFHub's archive format).
pub(super) const PACKED_SUFFIX: &str = ".btf.tar.xz";
/// Suffix of a kernel's debug ELF file (a distribution's debug vmlinux, DWARF and no `.BTF`),
/// whose BTF is converted from its DWARF; its output is `KERNEL.btf`.
pub(super) const DEBUG_SUFFIX: &str = ".debug";
/// Start of every xz stream.
const XZ_MAGIC: &[u8] = b"\xfd7zXZ\0";
/// Largest `.btf` accepted from an archive (the biggest kernel BTFs are well under 16 MiB).
const MAX_ARCHIVED_BTF: u64 = 1 << 30;
/// Most of an archive member's declared size reserved up front; a larger member grows the buffer
/// as it is actually read, so a lying header cannot make us allocate.
const RESERVE_AT_MOST: u64 = 64 << 20;

/// One kernel BTF found under `--btf-dir`.
pub(super) struct Kernel {
    /// The file, as found (under `--btf-dir`).
    pub input: PathBuf,
    /// Output path relative to `--out-dir`: the input's relative path, ending in `.btf`.
    pub relative: PathBuf,
    /// `KERNEL.btf.tar.xz` rather than `KERNEL.btf`.
    pub packed: bool,
}

/// A kernel file not minimized because another has its output path: (output path, why).
pub(super) type Skipped = (String, String);

/// Every kernel BTF under `root`, sorted by path, and (output path, failure line) for each one
/// whose output path another one already has (`K.btf` next to `K.btf.tar.xz` or `K.debug`). Hidden entries
/// and `out_dir` (when it lies inside `root`) are skipped; symlinks to directories are not
/// followed, but a symlink named like a kernel is one (a dangling one fails when read).
pub(super) fn find_kernels(root: &Path, out_dir: &Path) -> CliResult<(Vec<Kernel>, Vec<Skipped>)> {
    let skip = std::fs::canonicalize(out_dir).ok();
    let mut found = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(rel) = pending.pop() {
        let dir = root.join(&rel);
        if skip.is_some() && std::fs::canonicalize(&dir).ok() == skip {
            continue;
        }
        for entry in std::fs::read_dir(&dir).map_err(context(dir.display()))? {
            let entry = entry.map_err(context(dir.display()))?;
            let name = entry.file_name();
            if name.as_encoded_bytes().starts_with(b".") {
                continue;
            }
            let file_type = entry.file_type().map_err(context(entry.path().display()))?;
            if file_type.is_dir() {
                pending.push(rel.join(&name));
                continue;
            }
            if !file_type.is_file() && !file_type.is_symlink() {
                continue;
            }
            let bytes = name.as_encoded_bytes();
            let (out_name, packed) = if bytes.ends_with(PACKED_SUFFIX.as_bytes()) {
                // "K.btf.tar.xz" -> "K.btf.tar" -> "K.btf".
                let stem = Path::new(&name)
                    .file_stem()
                    .map(Path::new)
                    .and_then(Path::file_stem);
                (PathBuf::from(stem.unwrap_or(&name)), true)
            } else if bytes.ends_with(BTF_SUFFIX.as_bytes()) {
                (PathBuf::from(&name), false)
            } else if bytes.ends_with(DEBUG_SUFFIX.as_bytes()) {
                // "K.debug" -> "K.btf".
                (Path::new(&name).with_extension("btf"), false)
            } else {
                continue;
            };
            found.push(Kernel {
                input: entry.path(),
                relative: rel.join(out_name),
                packed,
            });
        }
    }
    // Sorted by output path, plain before packed: the order kernels are handed out and
    // duplicates are told apart in.
    found.sort_by(|a, b| (&a.relative, a.packed).cmp(&(&b.relative, b.packed)));
    let mut kernels: Vec<Kernel> = Vec::with_capacity(found.len());
    let mut failures = Vec::new();
    let mut seen: HashMap<PathBuf, PathBuf> = HashMap::new();
    for k in found {
        if let Some(first) = seen.get(&k.relative) {
            failures.push((
                k.relative.to_string_lossy().into_owned(),
                format!(
                    "{}: skipped: same output {} as {}",
                    k.input.display(),
                    k.relative.display(),
                    first.display()
                ),
            ));
            continue;
        }
        seen.insert(k.relative.clone(), k.input.clone());
        kernels.push(k);
    }
    Ok((kernels, failures))
}

/// Read a kernel's file into `input`, the calling thread's buffer, reused from kernel to
/// kernel (a kernel BTF is a few MiB: fresh buffers would cost a page fault every 4 KiB, each
/// time).
pub(super) fn read_input(kernel: &Kernel, input: &mut Vec<u8>) -> CliResult<()> {
    input.clear();
    std::fs::File::open(&kernel.input)
        .and_then(|mut f| f.read_to_end(input))
        .map(drop)
        .map_err(context(kernel.input.display()))
}

/// Decompress an xz-compressed tar into `out`: its one regular file, or the entry named
/// `expected` if there are several.
pub(super) fn unpack(archive: &[u8], expected: &OsStr, out: &mut Vec<u8>) -> Result<(), String> {
    if !archive.starts_with(XZ_MAGIC) {
        return Err("not an xz file".into());
    }
    let mut tar = tar::Archive::new(liblzma::read::XzDecoder::new(archive));
    let (mut have, mut have_by_name, mut files) = (false, false, 0usize);
    for entry in tar.entries().map_err(|e| format!("reading archive: {e}"))? {
        let mut entry = entry.map_err(|e| format!("reading archive: {e}"))?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        files += 1;
        let by_name = entry
            .path()
            .ok()
            .and_then(|p| p.file_name().map(|n| n == expected))
            .unwrap_or(false);
        if have && (have_by_name || !by_name) {
            continue;
        }
        let size = entry.size();
        if size > MAX_ARCHIVED_BTF {
            return Err(format!(
                "archive member of {size} bytes is too large for a BTF"
            ));
        }
        out.clear();
        out.try_reserve_exact(size.min(RESERVE_AT_MOST) as usize)
            .map_err(|e| format!("reading archive: {e}"))?;
        entry
            .read_to_end(out)
            .map_err(|e| format!("reading archive: {e}"))?;
        (have, have_by_name) = (true, by_name);
    }
    match (have, have_by_name) {
        (false, _) => Err("archive holds no file".into()),
        (true, false) if files > 1 => Err(format!(
            "archive holds {files} files, none named {}",
            expected.to_string_lossy()
        )),
        _ => Ok(()),
    }
}
