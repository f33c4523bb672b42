//! `btfgen batch` under faults: an output directory that fills up (a small tmpfs), corrupt and
//! truncated archives, unreadable kernel files, and SIGKILL in the middle of a run. Each leaves
//! no partial output file and a truthful summary, and `--resume` redoes only what is missing or
//! out of date.

mod batch_common;

use batch_common::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn summary(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("--json summary: {e}\n{}", stderr(out)))
}

/// Objects without `ambiguous`: on the scale tree only the `bitfields_bad` kernels fail.
fn some_objects() -> Vec<PathBuf> {
    objects()
        .into_iter()
        .filter(|o| !o.ends_with("ambiguous.bpf.o"))
        .collect()
}

/// Hidden temporary files (`.NAME.tmp.PID.N`) under `dir`.
fn temporaries(dir: &Path) -> Vec<PathBuf> {
    files_under(dir)
        .into_iter()
        .filter(|p| p.file_name().unwrap().to_string_lossy().contains(".tmp."))
        .collect()
}

/// The kernel outputs under OUT (its mirrored `.btf` paths, not by-hash or the index).
fn kernel_outputs(out: &Path) -> Vec<PathBuf> {
    files_under(out)
        .into_iter()
        .filter(|p| {
            !p.starts_with("by-hash")
                && p.extension().is_some_and(|e| e == "btf")
                && !p.file_name().unwrap().to_string_lossy().starts_with('.')
        })
        .collect()
}

/// Entries a killed or failed run recorded, as `--resume` must find them: the journal's lines
/// after its header (a cut last line does not parse), or the index.
fn recorded_entries(out: &Path) -> BTreeMap<String, Value> {
    let mut entries = BTreeMap::new();
    if let Ok(text) = std::fs::read_to_string(out.join("index.json")) {
        let index: Value = serde_json::from_str(&text).unwrap();
        for e in index["kernels"].as_array().unwrap() {
            entries.insert(e["path"].as_str().unwrap().to_string(), e.clone());
        }
    }
    if let Ok(text) = std::fs::read_to_string(out.join(".index.journal")) {
        for e in text
            .lines()
            .skip(1)
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        {
            entries.insert(e["path"].as_str().unwrap().to_string(), e);
        }
    }
    entries
}

/// A tmpfs mounted on a directory, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .ok()?;
        if !out.status.success() {
            eprintln!(
                "SKIP: mounting a tmpfs was refused ({}); the ENOSPC test needs root",
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return None;
        }
        Some(Tmpfs(dir.to_path_buf()))
    }

    fn resize(&self, size: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .unwrap();
        assert!(status.success());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_output_directory_fails_only_what_did_not_fit_and_resume_finishes() {
    let tmp = TempDir::new("enospc");
    let tree = tmp.0.join("tree");
    let kernels = build_scale_tree(&tree);
    let objects = some_objects();
    let reference = tmp.0.join("reference");
    let reference_run = batch_with(&tree, &reference, &["--json"], &objects);
    let expected_failed = summary(&reference_run)["failed"].as_u64().unwrap();

    let Some(fs) = Tmpfs::mount(&tmp.0.join("small"), "96k") else {
        return;
    };
    let out = fs.0.join("out");
    let run = batch_with(&tree, &out, &["--resume", "--json"], &objects);
    let log = stderr(&run);
    let s = summary(&run);
    assert!(!run.status.success(), "{log}");
    assert!(log.contains("No space left on device"), "{log}");
    // Truthful: as many ok as outputs there, each complete; the rest failed, on their own line.
    let present = kernel_outputs(&out);
    assert_eq!(s["ok"], present.len(), "{log}");
    assert!(
        present.len() < kernels.len() - expected_failed as usize,
        "the tmpfs did not fill"
    );
    assert_eq!(
        s["ok"].as_u64().unwrap() + s["failed"].as_u64().unwrap(),
        kernels.len() as u64
    );
    assert!(s["failed"].as_u64().unwrap() > expected_failed);
    assert_eq!(
        log.lines()
            .filter(|l| l.contains("FAILED") && l.contains("No space left"))
            .count() as u64
            + expected_failed,
        s["failed"].as_u64().unwrap() + s["errors"].as_array().unwrap().len() as u64,
        "{log}"
    );
    for rel in &present {
        assert_eq!(
            std::fs::read(out.join(rel)).unwrap(),
            std::fs::read(reference.join(rel)).unwrap(),
            "{rel:?} is not complete"
        );
    }
    assert!(temporaries(&out).is_empty(), "{:?}", temporaries(&out));

    // Room again: --resume redoes exactly the kernels without a recorded, intact output.
    let recorded = recorded_entries(&out);
    let valid = recorded
        .values()
        .filter(|e| e["sha256"].is_string() && out.join(e["path"].as_str().unwrap()).is_file())
        .count();
    eprintln!(
        "{} outputs fitted, {valid} recorded for --resume",
        kernel_outputs(&out).len()
    );
    fs.resize("16m");
    let rerun = batch_with(&tree, &out, &["--resume", "--json"], &objects);
    let s = summary(&rerun);
    assert_eq!(s["failed"], expected_failed, "{}", stderr(&rerun));
    assert_eq!(s["reused"], valid, "{}", stderr(&rerun));
    assert_eq!(
        s["ok"].as_u64().unwrap() + expected_failed,
        kernels.len() as u64
    );
    let present = kernel_outputs(&out);
    assert_eq!(present, kernel_outputs(&reference));
    for rel in &present {
        assert_eq!(
            std::fs::read(out.join(rel)).unwrap(),
            std::fs::read(reference.join(rel)).unwrap()
        );
    }
    assert!(out.join("index.json").is_file());
    assert!(!out.join(".index.journal").exists());
    assert!(temporaries(&out).is_empty());
}

#[test]
fn bad_archives_and_unreadable_files_fail_alone_and_truthfully() {
    let tmp = TempDir::new("bad-inputs");
    let tree = tmp.0.join("tree");
    let good_bytes = std::fs::read(data("targets/btf__fields.btf")).unwrap();
    let dir = tree.join("distro/1/x86_64");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("good-plain.btf"), &good_bytes).unwrap();
    let packed = pack(&dir, "good-packed", &good_bytes, 6);
    let archive = std::fs::read(&packed).unwrap();

    let mut bad: Vec<(&str, &str)> = Vec::new();
    // Cut in the middle.
    std::fs::write(
        dir.join("truncated.btf.tar.xz"),
        &archive[..archive.len() / 2],
    )
    .unwrap();
    bad.push(("truncated.btf", "reading archive"));
    // Bytes flipped inside the compressed stream (xz's check catches it).
    let mut flipped = archive.clone();
    let middle = flipped.len() / 2;
    for b in &mut flipped[middle..middle + 8] {
        *b ^= 0x5a;
    }
    std::fs::write(dir.join("corrupt.btf.tar.xz"), &flipped).unwrap();
    bad.push(("corrupt.btf", "reading archive"));
    // An xz file holding an empty tar.
    let mut empty = tar::Builder::new(liblzma::write::XzEncoder::new(Vec::new(), 1));
    empty.finish().unwrap();
    let empty = empty.into_inner().unwrap().finish().unwrap();
    std::fs::write(dir.join("empty.btf.tar.xz"), empty).unwrap();
    bad.push(("empty.btf", "archive holds no file"));
    // Unreadable: a dangling symlink, a symlink to a directory, a file reads fail on (EIO;
    // root reads a mode-000 file, so that one only counts when not root).
    std::os::unix::fs::symlink("nowhere.btf", dir.join("dangling.btf")).unwrap();
    bad.push(("dangling.btf", "No such file or directory"));
    std::os::unix::fs::symlink(&tmp.0, dir.join("directory.btf")).unwrap();
    bad.push(("directory.btf", "Is a directory"));
    std::os::unix::fs::symlink("/proc/self/mem", dir.join("eio.btf")).unwrap();
    bad.push(("eio.btf", "Input/output error"));
    let root = is_root();
    if !root {
        let path = dir.join("mode000.btf");
        std::fs::write(&path, &good_bytes).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
        bad.push(("mode000.btf", "Permission denied"));
    }

    let out = tmp.0.join("out");
    let objects = [data("progs/fields.bpf.o")];
    let run = batch_with(&tree, &out, &["--dedup", "--json"], &objects);
    let log = stderr(&run);
    let s = summary(&run);
    assert!(!run.status.success(), "{log}");
    assert_eq!(s["ok"], 2, "{log}");
    assert_eq!(s["failed"], bad.len(), "{log}");
    let failures = s["failures"].as_array().unwrap();
    for (name, why) in &bad {
        let rel = format!("distro/1/x86_64/{name}");
        let f = failures
            .iter()
            .find(|f| f["path"] == rel.as_str())
            .unwrap_or_else(|| panic!("{rel} not among the failures: {s}"));
        assert!(f["error"].as_str().unwrap().contains(why), "{rel}: {f}");
        let lines = log
            .lines()
            .filter(|l| {
                l.contains("FAILED") && l.contains(&format!("/{}", name.split('.').next().unwrap()))
            })
            .count();
        assert_eq!(lines, 1, "{rel} reported once:\n{log}");
        assert!(
            std::fs::symlink_metadata(out.join(&rel)).is_err(),
            "{rel}: an output for a failed kernel"
        );
    }
    for good in ["good-plain.btf", "good-packed.btf"] {
        let expected = tmp.0.join("expected.btf");
        let alone = btfgen(&[
            Path::new("min-core-btf"),
            &data("targets/btf__fields.btf"),
            &expected,
            &objects[0],
        ]);
        assert!(alone.status.success());
        assert_eq!(
            std::fs::read(out.join("distro/1/x86_64").join(good)).unwrap(),
            std::fs::read(&expected).unwrap()
        );
    }
    // The index records the failures too.
    let index: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("index.json")).unwrap()).unwrap();
    let errors = index["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["error"].is_string())
        .count();
    assert_eq!(errors, bad.len());
    assert!(temporaries(&out).is_empty());
}

/// Whether this process runs as root (from /proc, without libc).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find(|l| l.starts_with("Uid:"))
        .and_then(|l| l.split_whitespace().nth(2).map(|uid| uid == "0"))
        .unwrap_or(false)
}

#[test]
fn sigkill_mid_run_leaves_no_partial_output_and_resume_redoes_only_the_rest() {
    const KERNELS: usize = 40;
    let tmp = TempDir::new("sigkill");
    let tree = tmp.0.join("tree");
    // Kernels big enough that one takes a while to decompress (a few MiB of BTF each).
    let big = variant(
        &std::fs::read(data("targets/btf__fields.btf")).unwrap(),
        200_000,
        false,
    );
    let packed = pack(&tmp.0, "big", &big, 1);
    for i in 0..KERNELS {
        let dir = tree.join(format!("distro/{}/x86_64", i % 4));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(&packed, dir.join(format!("5.{i}.0.btf.tar.xz"))).unwrap();
    }
    let big_path = tmp.0.join("big.btf");
    std::fs::write(&big_path, &big).unwrap();
    let objects = [data("progs/fields.bpf.o")];
    let expected_path = tmp.0.join("expected.btf");
    let alone = btfgen(&[
        Path::new("min-core-btf"),
        &big_path,
        &expected_path,
        &objects[0],
    ]);
    assert!(alone.status.success());
    let expected = std::fs::read(&expected_path).unwrap();

    let out = tmp.0.join("out");
    let mut child = Command::new(BIN)
        .args(["batch", "-j", "1", "--dedup", "--resume", "--btf-dir"])
        .arg(&tree)
        .arg("--out-dir")
        .arg(&out)
        .arg(&objects[0])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill it once a few kernels are done.
    let journal = out.join(".index.journal");
    let started = Instant::now();
    while std::fs::read_to_string(&journal).map_or(0, |t| t.lines().count()) < 4 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no progress in 60 s"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "finished before the kill"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(9), "{status:?}: not killed mid-run");

    // No partial file: every output there resolves to the complete bytes.
    let present = kernel_outputs(&out);
    assert!(
        !present.is_empty() && present.len() < KERNELS,
        "{}",
        present.len()
    );
    for rel in &present {
        assert_eq!(std::fs::read(out.join(rel)).unwrap(), expected, "{rel:?}");
    }
    for stored in std::fs::read_dir(out.join("by-hash")).unwrap() {
        assert_eq!(std::fs::read(stored.unwrap().path()).unwrap(), expected);
    }
    assert!(!out.join("index.json").exists(), "index of a killed run");
    let recorded = recorded_entries(&out);
    assert!(recorded.len() >= 3, "{}", recorded.len());
    eprintln!(
        "killed after {} of {KERNELS} kernels ({} recorded)",
        present.len(),
        recorded.len()
    );

    // What a killed writer leaves (a pid that cannot run: above pid_max) goes on the next
    // run; a running process's temporary file stays.
    let dead = out.join("distro/0/x86_64/.5.0.0.btf.tmp.999999999.0");
    let alive = out.join(format!(".index.json.tmp.{}.0", std::process::id()));
    std::fs::write(&dead, b"partial").unwrap();
    std::fs::write(&alive, b"someone's").unwrap();

    // --resume: only what the killed run did not finish.
    let run = batch_with(&tree, &out, &["--dedup", "--resume", "--json"], &objects);
    let s = summary(&run);
    assert!(run.status.success(), "{}", stderr(&run));
    assert!(!dead.exists());
    assert!(s["removed_temporaries"].as_u64().unwrap() >= 1);
    assert!(alive.exists());
    std::fs::remove_file(&alive).unwrap();
    assert_eq!(s["ok"], KERNELS);
    assert_eq!(s["reused"], recorded.len(), "{}", stderr(&run));
    assert_eq!(kernel_outputs(&out).len(), KERNELS);
    for rel in kernel_outputs(&out) {
        assert_eq!(std::fs::read(out.join(rel)).unwrap(), expected);
    }
    assert!(temporaries(&out).is_empty(), "{:?}", temporaries(&out));
    assert!(!journal.exists());

    // A changed kernel is redone, and only it; its old stored output goes once unused.
    let changed = tree.join("distro/1/x86_64/5.1.0.btf.tar.xz");
    let flat = std::fs::read(data("targets/btf__fields_flat.btf")).unwrap();
    std::fs::remove_file(&changed).unwrap();
    pack(changed.parent().unwrap(), "5.1.0", &flat, 1);
    let run = batch_with(&tree, &out, &["--dedup", "--resume", "--json"], &objects);
    let s = summary(&run);
    assert_eq!(s["reused"], KERNELS - 1, "{}", stderr(&run));
    assert_eq!(s["distinct_outputs"], 2);
    let flat_path = tmp.0.join("flat.btf");
    std::fs::write(&flat_path, &flat).unwrap();
    btfgen(&[
        Path::new("min-core-btf"),
        &flat_path,
        &expected_path,
        &objects[0],
    ]);
    assert_eq!(
        std::fs::read(out.join("distro/1/x86_64/5.1.0.btf")).unwrap(),
        std::fs::read(&expected_path).unwrap()
    );
    assert_eq!(std::fs::read_dir(out.join("by-hash")).unwrap().count(), 2);

    // A kernel that fails now loses its output: no link is left to a pruned stored file.
    std::fs::write(&changed, b"not xz any more").unwrap();
    let run = batch_with(&tree, &out, &["--dedup", "--resume", "--json"], &objects);
    let s = summary(&run);
    assert_eq!(s["failed"], 1, "{}", stderr(&run));
    assert_eq!(s["reused"], KERNELS - 1);
    assert!(std::fs::symlink_metadata(out.join("distro/1/x86_64/5.1.0.btf")).is_err());
    assert_eq!(std::fs::read_dir(out.join("by-hash")).unwrap().count(), 1);
    assert_eq!(kernel_outputs(&out).len(), KERNELS - 1);
    for rel in kernel_outputs(&out) {
        assert_eq!(std::fs::read(out.join(rel)).unwrap(), expected);
    }

    // Other objects: nothing is up to date.
    let run = batch_with(
        &tree,
        &out,
        &["--dedup", "--resume", "--json"],
        &[data("progs/types.bpf.o")],
    );
    assert_eq!(summary(&run)["reused"], 0);
    assert_eq!(std::fs::read_dir(out.join("by-hash")).unwrap().count(), 1);
}
