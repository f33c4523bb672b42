//! `btfgen min-core-btf` while another process truncates, rewrites or replaces its input BTF
//! (a mapped file: src/mapped.rs, opened by src/cli/input.rs). Every run must end in one of two
//! ways: success with the output of the unchanged input, or exit 1 with one `btfgen: PATH: ...`
//! line (after any warnings of the log) and no output file. Never a signal (a truncated mapping raises
//! SIGBUS), never a wrong output.
//!
//! The timing is random, so which runs race is not fixed; the deterministic cases are the unit
//! tests of src/cli/input.rs. Needs the running kernel's BTF (5 MiB: a run takes a few ms,
//! long enough to be raced); skips loudly without it.

use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BTFGEN: &str = env!("CARGO_BIN_EXE_btfgen");
const KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";
const RUNS: u32 = 40;

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("input_change")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn object() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/progs/task.bpf.o")
}

fn min_core_btf(input: &Path, output: &Path) -> std::process::Child {
    Command::new(BTFGEN)
        .arg("min-core-btf")
        .args([input, output, &object()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A pseudo-random delay of up to `max_us`, different for each run.
fn delay(run: u32, max_us: u64) -> Duration {
    let x = (u64::from(run) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    Duration::from_micros((x >> 33) % max_us)
}

/// Check one raced run; returns whether it failed (cleanly).
fn check(case: &str, out: Output, output: &Path, expected: &[u8]) -> bool {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let context = format!("{case}: status {:?}\nstderr: {stderr}", out.status);
    assert!(out.status.code().is_some(), "{context}\nkilled by a signal");
    if out.status.success() {
        assert_eq!(
            std::fs::read(output).unwrap(),
            expected,
            "{context}\nsucceeded with another output"
        );
        return false;
    }
    assert_eq!(out.status.code(), Some(1), "{context}");
    assert!(!stderr.contains("panicked"), "{context}");
    // One error line, last; before it only libbpf-style warnings of the default log (the
    // relocations of a torn input may fail before the change is noticed).
    let lines: Vec<&str> = stderr.lines().collect();
    let (last, warnings) = lines.split_last().expect("an error line");
    assert!(last.starts_with("btfgen: "), "{context}");
    assert!(
        warnings.iter().all(|l| l.starts_with("libbpf: ")),
        "{context}\nnot one error line after the log's warnings"
    );
    assert!(!output.exists(), "{context}\nleft an output behind");
    true
}

/// The kernel's BTF copied to `dir`, and btfgen's output for it; `None` (skipped) without one.
fn setup(dir: &Path) -> Option<(PathBuf, Vec<u8>, Vec<u8>)> {
    let Ok(bytes) = std::fs::read(KERNEL_BTF) else {
        eprintln!("SKIP: {KERNEL_BTF} not readable; the input-change races need a large BTF");
        return None;
    };
    let input = dir.join("vmlinux.btf");
    std::fs::write(&input, &bytes).unwrap();
    let output = dir.join("min.btf");
    let out = min_core_btf(&input, &output).wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected = std::fs::read(&output).unwrap();
    Some((input, bytes, expected))
}

/// Run `min-core-btf` on a copy of the kernel's BTF `RUNS` times, calling `change` on the input
/// at a different moment of each run and `restore` once the run is over, and check every run.
/// Returns how many runs failed (cleanly); `None` (skipped) without a kernel BTF.
fn race(name: &str, change: impl Fn(&Path, &[u8]), restore: impl Fn(&Path, &[u8])) -> Option<u32> {
    let dir = scratch(name);
    let (input, bytes, expected) = setup(&dir)?;
    let output = dir.join("out.btf");
    let mut failed = 0;
    for run in 0..RUNS {
        let _ = std::fs::remove_file(&output);
        let child = min_core_btf(&input, &output);
        std::thread::sleep(delay(run, 4000));
        change(&input, &bytes);
        let out = child.wait_with_output().unwrap();
        failed += u32::from(check(&format!("run {run}"), out, &output, &expected));
        restore(&input, &bytes);
    }
    Some(failed)
}

/// Put the original bytes back in place.
fn rewrite(input: &Path, bytes: &[u8]) {
    std::fs::write(input, bytes).unwrap();
}

/// Rename a new file with `bytes` over `input` (as package managers replace files).
fn replace(input: &Path, bytes: &[u8]) {
    let other = input.with_file_name("other.btf");
    std::fs::write(&other, bytes).unwrap();
    std::fs::rename(&other, input).unwrap();
}

#[test]
fn truncated_while_read() {
    // Cut the file to a tenth in place, as `truncate -s` or a writer reopening it with O_TRUNC
    // would, then put it back once btfgen is done.
    let truncate = |input: &Path, bytes: &[u8]| {
        let file = std::fs::OpenOptions::new().write(true).open(input).unwrap();
        file.set_len(bytes.len() as u64 / 10).unwrap();
    };
    if let Some(failed) = race("truncated", truncate, rewrite) {
        eprintln!(
            "truncated_while_read: {failed} of {RUNS} runs failed cleanly, the rest succeeded"
        );
    }
}

#[test]
fn rewritten_in_place_while_read() {
    // Zero the second half in place (the file keeps its size), then restore it.
    let zero_half = |input: &Path, bytes: &[u8]| {
        let mut file = std::fs::OpenOptions::new().write(true).open(input).unwrap();
        file.seek(SeekFrom::Start(bytes.len() as u64 / 2)).unwrap();
        file.write_all(&vec![0; bytes.len() - bytes.len() / 2])
            .unwrap();
    };
    if let Some(failed) = race("rewritten", zero_half, rewrite) {
        eprintln!("rewritten_in_place_while_read: {failed} of {RUNS} runs failed cleanly");
    }
}

#[test]
fn replaced_while_read() {
    // A new file renamed over the path, truncated right away: btfgen either had the old file,
    // which nobody truncates, or gets the new, short one and fails on it.
    let started = Instant::now();
    let replace_short = |input: &Path, bytes: &[u8]| replace(input, &bytes[..bytes.len() / 10]);
    if race("replaced", replace_short, replace).is_some() {
        eprintln!(
            "replaced_while_read: {RUNS} runs in {:?}",
            started.elapsed()
        );
    }
}
