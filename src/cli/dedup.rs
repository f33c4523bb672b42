//! The output store of `btfgen batch`: content-addressed outputs (`--dedup`), the index that
//! maps every kernel to its output and input hashes (`OUT/index.json`, what `--resume`
//! compares), the journal that keeps a killed run's finished kernels, and the reproducible
//! archive of the whole set (`--archive`).
//!
//! With `--dedup`, an output is stored once as `OUT/by-hash/SHA256.btf` and the mirrored path
//! `OUT/DISTRO/VERSION/ARCH/KERNEL.btf` is a relative symlink (or a hard link) to it. Every file
//! and link appears by `rename(2)`, so a run that is killed or fails never leaves a partial one
//! under its final name; the temporary files a killed run leaves behind are hidden
//! (`.NAME.tmp.PID.N`) and removed by the next run ([`remove_stale_temporaries`]).

use super::{CliError, CliResult, context, write_atomic, write_once};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Component, Path, PathBuf};

/// Directory of the content-addressed outputs, under OUT.
pub const BY_HASH: &str = "by-hash";
/// The index, under OUT.
pub const INDEX: &str = "index.json";
/// Entries of finished kernels, appended as they finish; folded into the index at the end.
const JOURNAL: &str = ".index.journal";
/// Format tag of the index and the journal's first line.
const INDEX_FORMAT: &str = "btfgen-index/1";

/// How `--dedup` points the mirrored tree at the stored outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LinkMode {
    /// Relative symbolic links (`../../../by-hash/SHA256.btf`).
    Symlink,
    /// Hard links.
    Hardlink,
}

impl LinkMode {
    fn name(self) -> &'static str {
        match self {
            LinkMode::Symlink => "symlink",
            LinkMode::Hardlink => "hardlink",
        }
    }
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// What decides whether an earlier run's output is still up to date, besides the kernel's own
/// bytes: the objects' contents, the btfgen version and the output layout.
pub fn run_key(object_hashes: &[String], dedup: Option<LinkMode>) -> String {
    let mut hasher = Sha256::new();
    hasher.update(env!("CARGO_PKG_VERSION"));
    hasher.update([0]);
    hasher.update(dedup.map_or("plain", LinkMode::name));
    for h in object_hashes {
        hasher.update([0]);
        hasher.update(h);
    }
    hex(&hasher.finalize())
}

/// `OUT/by-hash/HASH.btf` relative to OUT.
pub fn stored_path(hash: &str) -> PathBuf {
    Path::new(BY_HASH).join(format!("{hash}.btf"))
}

/// Store `bytes` (whose SHA-256 is `hash`) once under `OUT/by-hash/`, then point `OUT/rel`
/// at it. Both appear atomically; a failure leaves `OUT/rel` as it was.
pub fn store(out: &Path, rel: &Path, hash: &str, bytes: &[u8], mode: LinkMode) -> CliResult<()> {
    let stored = out.join(stored_path(hash));
    // Content-addressed: a file already there (written atomically) holds these bytes. Never
    // replaced, not even by a worker racing to store the same bytes: a hard link made to the
    // file before would then name a file no longer in the store.
    if !stored.is_file() {
        create_parent(&stored)?;
        write_once(&stored, bytes)?;
    }
    let link = out.join(rel);
    create_parent(&link)?;
    let tmp = btfgen::fs::temporary_path(&link).map_err(context(link.display()))?;
    let made = match mode {
        LinkMode::Symlink => std::os::unix::fs::symlink(relative_target(rel, hash), &tmp),
        LinkMode::Hardlink => std::fs::hard_link(&stored, &tmp),
    }
    .and_then(|()| std::fs::rename(&tmp, &link));
    if made.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    made.map_err(context(link.display()))
}

/// The symlink target of `OUT/rel`: up to OUT, then into `by-hash/`.
fn relative_target(rel: &Path, hash: &str) -> PathBuf {
    let depth = rel.components().count().saturating_sub(1);
    let mut target = PathBuf::new();
    for _ in 0..depth {
        target.push("..");
    }
    target.join(stored_path(hash))
}

fn create_parent(path: &Path) -> CliResult<()> {
    match path.parent() {
        Some(dir) => std::fs::create_dir_all(dir).map_err(context(dir.display())),
        None => Ok(()),
    }
}

/// Remove, under `out`, the temporary files (`.NAME.tmp.PID.N`, of [`btfgen::fs::temporary_path`]
/// and [`store`]) of processes that no longer run: what a killed run leaves. Returns how many.
pub fn remove_stale_temporaries(out: &Path) -> usize {
    let mut removed = 0;
    let mut dirs = vec![out.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            if file_type.is_dir() {
                dirs.push(entry.path());
            } else if let Some(pid) = temporary_owner(&entry.file_name().to_string_lossy())
                && !Path::new("/proc").join(pid.to_string()).exists()
                && std::fs::remove_file(entry.path()).is_ok()
            {
                removed += 1;
            }
        }
    }
    removed
}

/// The process id in the name `.NAME.tmp.PID.N` of a temporary file for one of the files batch
/// writes under OUT (`NAME` a `.btf` or the index), so nobody else's file is taken for one.
fn temporary_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix('.')?;
    let mut parts = rest.rsplitn(3, '.');
    parts.next()?.parse::<u32>().ok()?;
    let pid = parts.next()?.parse::<u32>().ok()?;
    let target = parts.next()?.strip_suffix(".tmp")?;
    (target.ends_with(".btf") || target == INDEX).then_some(pid)
}

/// The kernel fields of an index entry, from its BTFHub path `DISTRO/VERSION/ARCH/KERNEL.btf`
/// (`null` where the path is shallower).
pub fn kernel_fields(rel: &Path) -> Value {
    let parts: Vec<String> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    let (dirs, file) = parts.split_at(parts.len().saturating_sub(1));
    let release = file
        .first()
        .map(|f| f.strip_suffix(".btf").unwrap_or(f).to_string());
    // The last three directories, so a tree nested deeper still names its distro.
    let pick = |from_end: usize| {
        dirs.len()
            .checked_sub(from_end)
            .and_then(|i| dirs.get(i))
            .cloned()
    };
    json!({
        "distro": pick(3),
        "version": pick(2),
        "arch": pick(1),
        "kernel": release,
    })
}

/// The kernels of an earlier run, by path, for `--resume`: the index, updated by its journal
/// (a run killed before it wrote its index), only where recorded with the same `run_key`.
pub fn previous_entries(out: &Path, run_key: &str) -> BTreeMap<String, Value> {
    let mut entries = BTreeMap::new();
    if let Ok(text) = std::fs::read_to_string(out.join(INDEX))
        && let Ok(index) = serde_json::from_str::<Value>(&text)
        && index["format"] == INDEX_FORMAT
        && index["run_key"] == run_key
        && let Some(kernels) = index["kernels"].as_array()
    {
        for k in kernels {
            if let Some(path) = k["path"].as_str() {
                entries.insert(path.to_string(), k.clone());
            }
        }
    }
    if let Ok(text) = std::fs::read_to_string(out.join(JOURNAL)) {
        let mut lines = text.lines();
        let header: Option<Value> = lines.next().and_then(|l| serde_json::from_str(l).ok());
        if header.is_some_and(|h| h["format"] == INDEX_FORMAT && h["run_key"] == run_key) {
            // A killed run may have left its last line cut short: it is skipped.
            for k in lines.filter_map(|l| serde_json::from_str::<Value>(l).ok()) {
                if let Some(path) = k["path"].as_str() {
                    entries.insert(path.to_string(), k.clone());
                }
            }
        }
    }
    entries
}

/// Whether an earlier entry still stands for a kernel whose file now hashes to
/// `input_sha256`: same input, written without error, and its output still there, intact.
pub fn still_valid(out: &Path, entry: &Value, input_sha256: &str) -> bool {
    if entry["input_sha256"] != input_sha256 || entry.get("error").is_some() {
        return false;
    }
    let (Some(path), Some(file), Some(hash)) = (
        entry["path"].as_str(),
        entry["file"].as_str(),
        entry["sha256"].as_str(),
    ) else {
        return false;
    };
    let read_hash = |p: &Path| std::fs::read(p).map(|b| sha256_hex(&b)).ok();
    // Through the mirrored path: a link that no longer resolves is out of date too.
    read_hash(&out.join(path)).as_deref() == Some(hash)
        && (file == path || read_hash(&out.join(file)).as_deref() == Some(hash))
}

/// Appends each finished kernel's entry to `OUT/.index.journal` as it finishes.
pub struct Journal {
    file: std::fs::File,
    path: PathBuf,
}

impl Journal {
    /// Start a journal for a run (replacing an earlier run's: its entries were read already).
    pub fn create(out: &Path, run_key: &str) -> CliResult<Journal> {
        std::fs::create_dir_all(out).map_err(context(out.display()))?;
        let path = out.join(JOURNAL);
        let file = std::fs::File::create(&path).map_err(context(path.display()))?;
        let mut journal = Journal { file, path };
        journal.append(&json!({"format": INDEX_FORMAT, "run_key": run_key}))?;
        Ok(journal)
    }

    /// Append one entry: one `write(2)` of one line.
    pub fn append(&mut self, entry: &Value) -> CliResult<()> {
        let mut line = entry.to_string();
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .map_err(context(self.path.display()))
    }

    /// The run finished and wrote its index: the journal is no longer needed.
    pub fn remove(self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Write `OUT/index.json` atomically, kernels sorted by path.
pub fn write_index(
    out: &Path,
    run_key: &str,
    objects: &[(String, String)],
    dedup: Option<LinkMode>,
    entries: &BTreeMap<String, Value>,
) -> CliResult<()> {
    let index = json!({
        "format": INDEX_FORMAT,
        "btfgen": env!("CARGO_PKG_VERSION"),
        "run_key": run_key,
        "dedup": dedup.map(LinkMode::name),
        "objects": objects
            .iter()
            .map(|(path, hash)| json!({"path": path, "sha256": hash}))
            .collect::<Vec<_>>(),
        "kernels": entries.values().collect::<Vec<_>>(),
    });
    let mut text = serde_json::to_string_pretty(&index).map_err(context("index"))?;
    text.push('\n');
    write_atomic(&out.join(INDEX), text.as_bytes())
}

/// Remove stored outputs no entry refers to any more (a kernel whose output changed since an
/// earlier run), so `by-hash/` holds exactly the distinct outputs. Returns how many.
pub fn prune_unreferenced(out: &Path, entries: &BTreeMap<String, Value>) -> usize {
    let referenced: BTreeSet<&str> = entries
        .values()
        .filter_map(|e| e["file"].as_str())
        .collect();
    let Ok(dir) = std::fs::read_dir(out.join(BY_HASH)) else {
        return 0;
    };
    let mut removed = 0;
    for entry in dir.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(hash) = name.strip_suffix(".btf") else {
            continue;
        };
        let rel = stored_path(hash);
        if !referenced.contains(rel.to_string_lossy().as_ref())
            && std::fs::remove_file(entry.path()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

/// Write the deduplicated set as one reproducible `.tar.xz`: `by-hash/*.btf`, `index.json`,
/// then the mirrored tree as links (symlinks, or hard links with `--dedup=hardlink`), each
/// group sorted by path; owner root (0/0), mode 0644 (links 0777), mtime `SOURCE_DATE_EPOCH`
/// or 0. The same outputs give the same bytes.
pub fn write_archive(
    archive: &Path,
    out: &Path,
    mode: LinkMode,
    entries: &BTreeMap<String, Value>,
) -> CliResult<()> {
    let mtime = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    let header = |entry_type: tar::EntryType, size: u64, mode: u32| {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(entry_type);
        h.set_size(size);
        h.set_mode(mode);
        h.set_uid(0);
        h.set_gid(0);
        h.set_mtime(mtime);
        h
    };
    let stored: BTreeSet<&str> = entries
        .values()
        .filter_map(|e| e["file"].as_str())
        .collect();
    let fail = |e: std::io::Error| CliError(format!("{}: {e}", archive.display()));
    let mut tar = tar::Builder::new(Vec::new());
    for file in &stored {
        let bytes = super::read_file(&out.join(file))?;
        let mut h = header(tar::EntryType::Regular, bytes.len() as u64, 0o644);
        tar.append_data(&mut h, file, &bytes[..]).map_err(fail)?;
    }
    let index = super::read_file(&out.join(INDEX))?;
    let mut h = header(tar::EntryType::Regular, index.len() as u64, 0o644);
    tar.append_data(&mut h, INDEX, &index[..]).map_err(fail)?;
    for (path, entry) in entries {
        let Some(hash) = entry["sha256"].as_str() else {
            continue;
        };
        let (kind, target) = match mode {
            LinkMode::Symlink => (
                tar::EntryType::Symlink,
                relative_target(Path::new(path), hash),
            ),
            LinkMode::Hardlink => (tar::EntryType::Link, stored_path(hash)),
        };
        let mut h = header(kind, 0, 0o777);
        tar.append_link(&mut h, path, &target).map_err(fail)?;
    }
    let tar = tar.into_inner().map_err(fail)?;
    write_atomic(archive, &compress_xz(&tar).map_err(fail)?)
}

/// `xz -6` of `data`, with the dictionary no larger than `data` needs (at least 4 KiB, at most
/// xz -6's 8 MiB): a decoder allocates the dictionary the stream declares, and `btfgen
/// select` on an embedded agent should need no more than the archive's own size.
fn compress_xz(data: &[u8]) -> std::io::Result<Vec<u8>> {
    use liblzma::stream::{Check, Filters, LzmaOptions, Stream};
    const PRESET: u32 = 6;
    const MIN_DICT: usize = 4 << 10;
    const PRESET_DICT: usize = 8 << 20;
    let dict = data.len().next_power_of_two().clamp(MIN_DICT, PRESET_DICT);
    let mut options = LzmaOptions::new_preset(PRESET)?;
    options.dict_size(u32::try_from(dict).unwrap_or(u32::MAX));
    let mut filters = Filters::new();
    filters.lzma2(&options);
    let stream = Stream::new_stream_encoder(&filters, Check::Crc64)?;
    let mut xz = liblzma::write::XzEncoder::new_stream(Vec::new(), stream);
    xz.write_all(data)?;
    xz.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporary_names_are_recognized_with_their_owner() {
        let tmp = btfgen::fs::temporary_path(Path::new("a/b/5.4.0-1-generic.btf")).unwrap();
        let name = tmp.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(temporary_owner(&name), Some(std::process::id()));
        // write_atomic's names, same format.
        assert_eq!(temporary_owner(".x.btf.tmp.123.4"), Some(123));
        assert_eq!(temporary_owner("x.btf.tmp.123.4"), None);
        assert_eq!(temporary_owner(".x.btf"), None);
        assert_eq!(temporary_owner(".x.btf.tmp.abc.4"), None);
        assert_eq!(temporary_owner(".index.json.tmp.77.0"), Some(77));
        // Not a file batch writes.
        assert_eq!(temporary_owner(".notes.txt.tmp.77.0"), None);
    }

    #[test]
    fn symlink_targets_climb_to_the_output_root() {
        assert_eq!(
            relative_target(Path::new("ubuntu/20.04/x86_64/k.btf"), "ab"),
            Path::new("../../../by-hash/ab.btf")
        );
        assert_eq!(
            relative_target(Path::new("k.btf"), "ab"),
            Path::new("by-hash/ab.btf")
        );
    }

    #[test]
    fn kernel_fields_follow_the_btfhub_layout() {
        let f = kernel_fields(Path::new("centos/8/x86_64/4.18.0-80.el8.x86_64.btf"));
        assert_eq!(f["distro"], "centos");
        assert_eq!(f["version"], "8");
        assert_eq!(f["arch"], "x86_64");
        assert_eq!(f["kernel"], "4.18.0-80.el8.x86_64");
        let f = kernel_fields(Path::new("k.btf"));
        assert_eq!(f["distro"], Value::Null);
        assert_eq!(f["kernel"], "k");
    }

    #[test]
    fn sha256_matches_the_standard_test_vector() {
        // FIPS 180-2 example "abc".
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
