//! `btfgen batch` on a small BTFHub-style tree built at test time from the fixture target BTFs:
//! plain `KERNEL.btf` files, one `KERNEL.btf.tar.xz` (packed here with the same `tar` and
//! `liblzma` crates the binary reads it with), a corrupt BTF and a corrupt archive. Each output
//! must be byte-identical to `btfgen min-core-btf` on that kernel alone, each bad kernel must be
//! reported on its own line naming its file, the good ones must still be written, and the exit
//! status must be non-zero.

mod batch_common;

use batch_common::{TempDir, btfgen, data, pack};
use std::path::{Path, PathBuf};

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(from, to).unwrap();
}

const OBJECTS: [&str; 2] = ["progs/fields.bpf.o", "progs/types.bpf.o"];

/// (input as found in the tree, plain BTF to give min-core-btf, output path relative to OUT)
/// for every good kernel of the tree.
fn build_tree(tree: &Path) -> Vec<(PathBuf, PathBuf, &'static str)> {
    let mut good = Vec::new();
    let plain = [
        (
            "ubuntu/20.04/x86_64/5.4.0-1-generic.btf",
            "targets/btf__fields.btf",
        ),
        (
            "ubuntu/22.04/x86_64/5.15.0-2-generic.btf",
            "targets/btf__types.btf",
        ),
        (
            "centos/8/x86_64/4.18.0-3.el8.x86_64.btf",
            "targets/btf__fields_flat.btf",
        ),
    ];
    for (rel, target) in plain {
        let input = tree.join(rel);
        copy(&data(target), &input);
        good.push((input, data(target), rel));
    }
    let packed = pack(
        &tree.join("fedora/38/x86_64"),
        "6.2.9-300.fc38.x86_64",
        &std::fs::read(data("targets/btf__fields_flat.btf")).unwrap(),
        6,
    );
    good.push((
        packed,
        data("targets/btf__fields_flat.btf"),
        "fedora/38/x86_64/6.2.9-300.fc38.x86_64.btf",
    ));
    // Not kernels: ignored.
    std::fs::write(tree.join("README.md"), "not a kernel").unwrap();
    std::fs::write(tree.join("ubuntu/20.04/x86_64/.hidden.btf"), "ignored").unwrap();
    good
}

fn batch_args<'a>(tree: &'a Path, out: &'a Path, objects: &'a [PathBuf]) -> Vec<&'a Path> {
    let mut args: Vec<&Path> = vec![
        Path::new("batch"),
        Path::new("--btf-dir"),
        tree,
        Path::new("--out-dir"),
        out,
    ];
    args.extend(objects.iter().map(PathBuf::as_path));
    args
}

#[test]
fn batch_mirrors_the_tree_matches_min_core_btf_and_reports_bad_kernels() {
    let tmp = TempDir::new("batch");
    let tree = tmp.0.join("tree");
    let out = tmp.0.join("out");
    let good = build_tree(&tree);
    let corrupt = tree.join("debian/12/x86_64/6.1.0-9-amd64.btf");
    let mut bytes = std::fs::read(data("targets/btf__types.btf")).unwrap();
    bytes.truncate(bytes.len() / 2);
    copy(&data("targets/btf__types.btf"), &corrupt);
    std::fs::write(&corrupt, &bytes).unwrap();
    let corrupt_archive = tree.join("debian/12/x86_64/6.1.0-10-amd64.btf.tar.xz");
    std::fs::write(&corrupt_archive, b"this is not xz").unwrap();
    let objects: Vec<PathBuf> = OBJECTS.iter().map(|o| data(o)).collect();

    let result = btfgen(&batch_args(&tree, &out, &objects));
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(
        !result.status.success(),
        "a bad kernel must fail the run:\n{stderr}"
    );

    // Each bad kernel: one FAILED line naming its file.
    for bad in [&corrupt, &corrupt_archive] {
        let lines: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("FAILED") && l.contains(bad.to_str().unwrap()))
            .collect();
        assert_eq!(lines.len(), 1, "{} reported once:\n{stderr}", bad.display());
    }
    assert_eq!(
        stderr.lines().filter(|l| l.contains("FAILED")).count(),
        2,
        "{stderr}"
    );
    assert!(
        stderr.contains("4 kernel(s) ok, 2 failed"),
        "summary:\n{stderr}"
    );
    assert!(!out.join("debian/12/x86_64/6.1.0-9-amd64.btf").exists());
    assert!(!out.join("debian/12/x86_64/6.1.0-10-amd64.btf").exists());

    // Every good kernel was written, mirrored, and is what min-core-btf writes for it alone.
    for (input, plain, rel) in &good {
        let produced = out.join(rel);
        let batch_bytes = std::fs::read(&produced).unwrap_or_else(|e| {
            panic!(
                "{} (from {}): {e}\n{stderr}",
                produced.display(),
                input.display()
            )
        });
        let single = tmp.0.join("single.btf");
        let mut args: Vec<&Path> = vec![Path::new("min-core-btf"), plain, &single];
        args.extend(objects.iter().map(PathBuf::as_path));
        let alone = btfgen(&args);
        assert!(
            alone.status.success(),
            "{}",
            String::from_utf8_lossy(&alone.stderr)
        );
        assert_eq!(
            batch_bytes,
            std::fs::read(&single).unwrap(),
            "{rel} differs from min-core-btf"
        );
    }
    // Nothing else in OUT: no temporary files, nothing for README.md or hidden files.
    let mut written = Vec::new();
    let mut dirs = vec![out.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                dirs.push(entry.path());
            } else {
                written.push(entry.path());
            }
        }
    }
    assert_eq!(written.len(), good.len(), "{written:?}");
}

#[test]
fn batch_succeeds_when_every_kernel_does() {
    let tmp = TempDir::new("batch-ok");
    let tree = tmp.0.join("tree");
    let out = tmp.0.join("out");
    let good = build_tree(&tree);
    let objects: Vec<PathBuf> = OBJECTS.iter().map(|o| data(o)).collect();
    let result = btfgen(&batch_args(&tree, &out, &objects));
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("{} kernel(s) ok, 0 failed", good.len())),
        "{stderr}"
    );
    // Not a terminal: one plain line per kernel.
    for (_, _, rel) in &good {
        assert!(
            stderr.lines().any(|l| l.contains(rel)),
            "{rel} not logged:\n{stderr}"
        );
    }
    // A second run over the same OUT replaces the outputs (same bytes) and still succeeds.
    let first: Vec<Vec<u8>> = good
        .iter()
        .map(|(_, _, rel)| std::fs::read(out.join(rel)).unwrap())
        .collect();
    let again = btfgen(&batch_args(&tree, &out, &objects));
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let second: Vec<Vec<u8>> = good
        .iter()
        .map(|(_, _, rel)| std::fs::read(out.join(rel)).unwrap())
        .collect();
    assert_eq!(first, second);

    // OUT inside the tree: its outputs are not taken for kernels on the next run.
    let inside = tree.join("minimized");
    for _ in 0..2 {
        let result = btfgen(&batch_args(&tree, &inside, &objects));
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert!(result.status.success(), "{stderr}");
        assert!(
            stderr.contains(&format!("{} kernel(s) ok, 0 failed", good.len())),
            "{stderr}"
        );
    }
}

#[test]
fn batch_fails_before_any_kernel_on_a_bad_object_or_an_empty_tree() {
    let tmp = TempDir::new("batch-bad");
    let tree = tmp.0.join("tree");
    let out = tmp.0.join("out");
    build_tree(&tree);
    // An object that does not parse: nothing is written.
    let not_object = tmp.0.join("not-an-object.o");
    std::fs::write(&not_object, b"\x7fELF but not really").unwrap();
    let result = btfgen(&batch_args(&tree, &out, std::slice::from_ref(&not_object)));
    assert!(!result.status.success());
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(stderr.contains(not_object.to_str().unwrap()), "{stderr}");
    assert!(!out.exists(), "nothing written when an object is bad");

    let empty = tmp.0.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let objects = [data(OBJECTS[0])];
    let result = btfgen(&batch_args(&empty, &out, &objects));
    assert!(!result.status.success());
    assert!(String::from_utf8_lossy(&result.stderr).contains("no *.btf or *.btf.tar.xz"));
}

/// A tree of debug ELF files (`KERNEL.debug`: DWARF, no `.BTF`) next to a raw BTF: each one's
/// BTF is converted from its DWARF, its output equals `min-core-btf` on that file alone, and the
/// progress line, the summary and the report say which kernels came from DWARF. With
/// `--keep-full`, each converted kernel's whole BTF is what `btfgen encode` writes for it, and
/// nothing is written for a kernel given as BTF.
#[test]
fn batch_converts_debug_files_as_min_core_btf_does() {
    let tmp = TempDir::new("batch-dwarf");
    let tree = tmp.0.join("tree");
    let out = tmp.0.join("out");
    let report = tmp.0.join("report.json");
    let kernels = [
        ("debian/12/x86_64/6.1.0-gcc.debug", "dwarf/gcc-dwarf5.so"),
        (
            "debian/12/x86_64/6.1.0-zstd.debug",
            "dwarf/clang-19-dwarf5-zstd.so",
        ),
        ("debian/12/x86_64/6.1.0-btf.btf", "targets/btf__fields.btf"),
    ];
    for (rel, input) in kernels {
        copy(&data(input), &tree.join(rel));
    }
    let object = data("dwarf/core.bpf.o");
    let full = tmp.0.join("full");
    let mut args = batch_args(&tree, &out, std::slice::from_ref(&object));
    args.splice(
        1..1,
        [
            Path::new("--report"),
            report.as_path(),
            Path::new("--keep-full"),
            full.as_path(),
        ],
    );
    let result = btfgen(&args);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{stderr}");
    assert!(stderr.contains("3 kernel(s) ok, 0 failed"), "{stderr}");
    assert!(stderr.contains("(2 from DWARF)"), "{stderr}");
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    for (rel, input) in kernels {
        let output = rel.replace(".debug", ".btf");
        let expected = tmp.0.join("expected.btf");
        let single = btfgen(&[Path::new("min-core-btf"), &data(input), &expected, &object]);
        assert!(single.status.success());
        assert_eq!(
            std::fs::read(out.join(&output)).unwrap(),
            std::fs::read(&expected).unwrap(),
            "{output}"
        );
        let from_dwarf = rel.ends_with(".debug");
        let line = stderr.lines().find(|l| l.contains(&output)).unwrap();
        assert_eq!(line.contains("(BTF from DWARF)"), from_dwarf, "{line}");
        let kernel = report["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["path"] == output.as_str())
            .unwrap();
        let kind = if from_dwarf { "dwarf" } else { "btf" };
        assert_eq!(kernel["input_kind"], kind, "{kernel}");
        let kept = full.join(&output);
        if from_dwarf {
            let encoded = tmp.0.join("encoded.btf");
            let encode = btfgen(&[Path::new("encode"), &data(input), &encoded]);
            assert!(encode.status.success());
            assert_eq!(
                std::fs::read(&kept).unwrap(),
                std::fs::read(&encoded).unwrap(),
                "{output}: --keep-full"
            );
        } else {
            assert!(!kept.exists(), "{output}: a BTF input copied");
        }
    }
}
