//! The `btfgen` binary on bad files: missing, a directory, empty, corrupt, an object without
//! `.BTF`, an output that cannot be written. Every case must exit non-zero with exactly one
//! line on stderr that names the offending path, with no panic or backtrace; and
//! `min-core-btf` must leave neither its OUTPUT nor a temporary file behind.

#[path = "support/cli.rs"]
mod cli;

use cli::{BIN, TempDir, btfgen, data};
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

fn listing(dir: &Path) -> BTreeSet<OsString> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect()
}

/// Run `btfgen ARGS`; it must fail with one stderr line naming `names`. Returns that line.
fn fails(case: &str, args: &[&Path], names: &Path) -> String {
    let out = Command::new(BIN)
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let context = format!("{case}: btfgen {args:?}\nstderr: {stderr}");
    assert!(!out.status.success(), "{context}\nexited successfully");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{context}\nnot a plain error exit"
    );
    assert!(
        !stderr.contains("panicked") && !stderr.contains("backtrace"),
        "{context}"
    );
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{context}\nnot exactly one line");
    let name = names.display().to_string();
    assert!(lines[0].contains(&name), "{context}\ndoes not name {name}");
    assert!(lines[0].starts_with("btfgen: "), "{context}");
    lines[0].to_string()
}

/// Bad input files, each in a scratch directory: (label, path).
fn bad_inputs(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    let subdir = dir.join("a-directory");
    std::fs::create_dir(&subdir).unwrap();
    let empty = dir.join("empty.bin");
    std::fs::write(&empty, b"").unwrap();
    let garbage = dir.join("garbage.bin");
    std::fs::write(&garbage, b"this is not BTF, nor ELF, at all").unwrap();
    let truncated = dir.join("truncated.btf");
    let btf = std::fs::read(data("targets/btf__fields.btf")).unwrap();
    std::fs::write(&truncated, &btf[..btf.len() / 2]).unwrap();
    vec![
        ("nonexistent", dir.join("does-not-exist.btf")),
        ("directory", subdir),
        ("empty", empty),
        ("garbage", garbage),
        ("truncated", truncated),
    ]
}

/// `fields.bpf.o` with its `.BTF` section renamed, so it has none.
fn object_without_btf(dir: &Path) -> PathBuf {
    let mut obj = std::fs::read(data("progs/fields.bpf.o")).unwrap();
    // The name may be a suffix of `.rel.BTF` in the section name table; renaming that too is
    // harmless.
    let needle = b".BTF\0";
    let at = obj
        .windows(needle.len())
        .position(|w| w == needle)
        .expect(".BTF in shstrtab");
    obj[at..at + 4].copy_from_slice(b".XTF");
    let path = dir.join("no-btf.o");
    std::fs::write(&path, obj).unwrap();
    path
}

#[test]
fn min_core_btf_bad_inputs_leave_no_output() {
    let target = data("targets/btf__fields.btf");
    let object = data("progs/fields.bpf.o");
    let tmp = TempDir::new("min_core_btf_inputs");
    let dir = &tmp.0;
    let out_dir = dir.join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let output = out_dir.join("min.btf");
    let mut cases = Vec::new();
    for (label, bad) in bad_inputs(dir) {
        cases.push((
            format!("INPUT {label}"),
            vec![bad.clone(), output.clone(), object.clone()],
            bad.clone(),
        ));
        cases.push((
            format!("OBJECT {label}"),
            vec![target.clone(), output.clone(), bad.clone()],
            bad.clone(),
        ));
        cases.push((
            format!("second OBJECT {label}"),
            vec![target.clone(), output.clone(), object.clone(), bad.clone()],
            bad.clone(),
        ));
    }
    let no_btf = object_without_btf(dir);
    cases.push((
        "OBJECT without .BTF".into(),
        vec![target.clone(), output.clone(), no_btf.clone()],
        no_btf,
    ));
    for (case, args, names) in cases {
        let mut argv: Vec<&Path> = vec![Path::new("min-core-btf")];
        argv.extend(args.iter().map(PathBuf::as_path));
        fails(&case, &argv, &names);
        assert!(!output.exists(), "{case}: OUTPUT was written");
        assert!(
            listing(&out_dir).is_empty(),
            "{case}: left {:?}",
            listing(&out_dir)
        );
    }
    let base_dir = TempDir::new("min_core_btf_base");
    for (label, bad) in bad_inputs(&base_dir.0) {
        let args = [
            Path::new("min-core-btf"),
            &target,
            &output,
            &object,
            Path::new("--module-btf"),
            &bad,
        ];
        fails(&format!("--module-btf {label}"), &args, &bad);
        let args = [
            Path::new("min-core-btf"),
            &target,
            &output,
            &object,
            Path::new("--base-btf"),
            &bad,
        ];
        fails(&format!("--base-btf {label}"), &args, &bad);
        assert!(
            listing(&out_dir).is_empty(),
            "{label}: left {:?}",
            listing(&out_dir)
        );
    }
}

#[test]
fn min_core_btf_unwritable_output_leaves_nothing() {
    let target = data("targets/btf__fields.btf");
    let object = data("progs/fields.bpf.o");
    let tmp = TempDir::new("min_core_btf_output");
    let dir = &tmp.0;
    let missing_dir = dir.join("missing").join("min.btf");
    let proc_path = PathBuf::from("/proc/nonexistent/min.btf");
    let is_dir = dir.join("a-directory");
    std::fs::create_dir(&is_dir).unwrap();
    std::fs::write(is_dir.join("keep"), b"x").unwrap();
    for (case, output) in [
        ("under a missing directory", &missing_dir),
        ("under /proc", &proc_path),
        ("a non-empty directory", &is_dir),
    ] {
        fails(
            case,
            &[Path::new("min-core-btf"), &target, output, &object],
            output,
        );
        let left = listing(dir);
        let expected: BTreeSet<OsString> = ["a-directory".into()].into();
        assert_eq!(left, expected, "{case}: left files behind");
        assert_eq!(
            listing(&is_dir),
            ["keep".into()].into(),
            "{case}: touched the directory"
        );
    }
    assert!(!dir.join("missing").exists());
}

#[test]
fn min_core_btf_names_the_first_bad_object() {
    // The error is the first bad object's in argument order, whatever follows it.
    let target = data("targets/btf__fields.btf");
    let good = data("progs/fields.bpf.o");
    let tmp = TempDir::new("min_core_btf_first_bad");
    let dir = &tmp.0;
    let inputs = bad_inputs(dir);
    let bad = |label: &str| inputs.iter().find(|(l, _)| *l == label).unwrap().1.clone();
    let (first, second) = (bad("truncated"), bad("garbage"));
    let output = dir.join("min.btf");
    let mut args = vec![PathBuf::from("min-core-btf"), target, output.clone()];
    args.extend(std::iter::repeat_n(good.clone(), 12));
    args.push(first.clone());
    args.extend(std::iter::repeat_n(good, 3));
    args.push(second.clone());
    let argv: Vec<&Path> = args.iter().map(PathBuf::as_path).collect();
    for round in 0..8 {
        let line = fails(&format!("round {round}"), &argv, &first);
        assert!(
            !line.contains(&second.display().to_string()),
            "round {round}: {line}"
        );
        assert!(!output.exists());
    }
}

#[test]
fn min_core_btf_success_leaves_only_the_output() {
    // The same harness on a good run, so the failure checks above are checking something.
    let tmp = TempDir::new("min_core_btf_ok");
    let dir = &tmp.0;
    let output = dir.join("min.btf");
    let status = btfgen(&[
        Path::new("min-core-btf"),
        &data("targets/btf__fields.btf"),
        &output,
        &data("progs/fields.bpf.o"),
    ]);
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    assert_eq!(listing(dir), ["min.btf".into()].into());
    btfgen::btf::Btf::parse(&std::fs::read(&output).unwrap()).unwrap();
}

#[test]
fn dump_and_relocate_bad_inputs() {
    let tmp = TempDir::new("dump_relocate");
    let dir = &tmp.0;
    let target = data("targets/btf__fields.btf");
    let object = data("progs/fields.bpf.o");
    for (label, bad) in bad_inputs(dir) {
        fails(&format!("dump {label}"), &[Path::new("dump"), &bad], &bad);
        fails(
            &format!("relocate --btf {label}"),
            &[Path::new("relocate"), Path::new("--btf"), &bad, &object],
            &bad,
        );
        fails(
            &format!("relocate OBJECT {label}"),
            &[Path::new("relocate"), Path::new("--btf"), &target, &bad],
            &bad,
        );
    }
    let no_btf = object_without_btf(dir);
    fails(
        "relocate OBJECT without .BTF",
        &[Path::new("relocate"), Path::new("--btf"), &target, &no_btf],
        &no_btf,
    );
}
