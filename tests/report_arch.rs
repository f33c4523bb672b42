//! The compatibility report says when an object does not fit a kernel's architecture: a tree
//! whose `arm64` kernels lack a field the objects read (`struct task_struct` without
//! `real_parent`, written with the crate's `BtfWriter`) next to `x86_64` kernels that have it.
//! The relocations poisoned on every arm64 kernel and on no x86_64 kernel are said once per
//! object, the programs rejected only there are `arch-mismatch`, and `--arch` takes one
//! architecture's kernels.

mod batch_common;
#[path = "support/report.rs"]
mod report;

use batch_common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

const CALLS: &str = "progs/calls.bpf.o";
const TASK: &str = "progs/task.bpf.o";

/// Two x86_64 and two arm64 (one spelled `aarch64`) kernels from the example kernel.
fn build_tree(tree: &Path) {
    let original = std::fs::read(data("targets/btf__example_kernel.btf")).unwrap();
    let arm = without_member(&original, "task_struct", "real_parent");
    let kernels = [
        ("ubuntu/20.04/x86_64/5.4.0-1.btf", original.clone()),
        (
            "ubuntu/22.04/x86_64/5.15.0-1.btf",
            variant(&original, 3, false),
        ),
        ("ubuntu/20.04/arm64/5.4.0-1.btf", arm.clone()),
        ("ubuntu/22.04/aarch64/5.15.0-1.btf", variant(&arm, 3, false)),
    ];
    for (rel, bytes) in kernels {
        let path = tree.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

fn run(tree: &Path, out: &Path, extra: &[&str]) -> (Value, Value, String) {
    let report = out.with_extension("json");
    let report_arg = format!("--report={}", report.display());
    let mut args = vec![report_arg.as_str(), "--json"];
    args.extend_from_slice(extra);
    let objects: Vec<PathBuf> = [CALLS, TASK].iter().map(|o| data(o)).collect();
    let output = batch_with(tree, out, &args, &objects);
    let log = stderr(&output);
    assert!(output.status.success(), "{log}");
    let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
    (summary, report::read(&report), log)
}

fn verdict(report: &Value, kernel: &str, program: &str) -> (String, String) {
    let row = report["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["path"] == kernel)
        .unwrap_or_else(|| panic!("{kernel} not in the report"));
    let cell = row["programs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["program"] == program)
        .unwrap();
    let get = |f: &str| cell[f].as_str().unwrap().to_string();
    (get("verdict"), get("status"))
}

#[test]
fn an_object_built_for_one_arch_is_said_once_per_arch_and_its_cells_are_arch_mismatch() {
    let tmp = TempDir::new("report-arch");
    let tree = tmp.0.join("tree");
    build_tree(&tree);
    let (summary, report, log) = run(&tree, &tmp.0.join("all"), &[]);
    let calls = data(CALLS).display().to_string();
    let task = data(TASK).display().to_string();

    // Once per object and architecture, in the summary and the report.
    let message = "built for x86_64: struct task_struct has no real_parent on arm64";
    for object in [&calls, &task] {
        assert_eq!(
            log.matches(&format!("{object}: {message}")).count(),
            1,
            "{log}"
        );
    }
    let mismatches = report["arch_mismatches"].as_array().unwrap();
    assert_eq!(mismatches.len(), 2, "{mismatches:?}");
    let m = mismatches
        .iter()
        .find(|m| m["object"] == calls.as_str())
        .unwrap();
    assert_eq!(m["built_for"], "x86_64");
    assert_eq!(m["kernel_arch"], "arm64");
    assert_eq!(m["message"], message);
    // calls.bpf.o's via_parent reads real_parent: `.text` relo #0 (relocate --json says so).
    let relocations = m["relocations"].as_array().unwrap();
    assert_eq!(relocations.len(), 1, "{relocations:?}");
    assert_eq!(relocations[0]["section"], ".text");
    assert_eq!(relocations[0]["relo"], 0);
    // calls_parent is rejected only at via_parent's poison (charged to it as libbpf appends
    // via_parent): arch-mismatch on both arm64 kernels, status still libbpf's poisoned.
    // calls_both also reaches via_leader's group_leader, which no kernel has: rejected.
    for arm in [
        "ubuntu/20.04/arm64/5.4.0-1.btf",
        "ubuntu/22.04/aarch64/5.15.0-1.btf",
    ] {
        assert_eq!(
            verdict(&report, arm, "calls_parent"),
            ("arch-mismatch".into(), "poisoned".into())
        );
        assert_eq!(
            verdict(&report, arm, "calls_both"),
            ("rejected".into(), "poisoned".into())
        );
        assert_eq!(verdict(&report, arm, "calls_loop").0, "loads");
    }
    for x86 in [
        "ubuntu/20.04/x86_64/5.4.0-1.btf",
        "ubuntu/22.04/x86_64/5.15.0-1.btf",
    ] {
        assert_eq!(
            verdict(&report, x86, "calls_parent"),
            ("loads".into(), "ok".into())
        );
        assert_eq!(verdict(&report, x86, "calls_both").0, "rejected");
    }
    assert_eq!(m["programs"], 2);
    // The counts: per kernel row, and over the run in `--json` and on the summary line.
    let rows = report["kernels"].as_array().unwrap();
    let mut total = 0;
    for row in rows {
        let cells = row["programs"].as_array().unwrap();
        let counted: u64 = ["loads", "rejected", "arch-mismatch", "unknown", "failed"]
            .iter()
            .map(|v| row["verdicts"][v].as_u64().unwrap())
            .sum();
        assert_eq!(counted, cells.len() as u64, "{row}");
        total += cells.len();
    }
    let programs = &summary["programs"];
    assert!(
        programs["arch-mismatch"].as_u64().unwrap() >= 2,
        "{programs}"
    );
    let counted: u64 = ["loads", "rejected", "arch-mismatch", "unknown", "failed"]
        .iter()
        .map(|v| programs[v].as_u64().unwrap())
        .sum();
    assert_eq!(counted, total as u64);
    assert!(
        log.contains(&format!(
            "programs: {} loads ({} with guarded poison), {} rejected, {} arch-mismatch, {} unknown, {} failed",
            programs["loads"], programs["guarded"], programs["rejected"],
            programs["arch-mismatch"], programs["unknown"], programs["failed"]
        )),
        "{log}"
    );
    assert_eq!(summary["arch_mismatches"].as_array().unwrap().len(), 2);
}

#[test]
fn arch_takes_one_architectures_kernels() {
    let tmp = TempDir::new("report-arch-only");
    let tree = tmp.0.join("tree");
    build_tree(&tree);
    // `aarch64` is `arm64`: both arm64 kernels, whichever way the folder spells it.
    for arch in ["arm64", "aarch64"] {
        let (summary, report, log) = run(&tree, &tmp.0.join(arch), &["--arch", arch]);
        assert_eq!(summary["kernels"], 2, "{log}");
        let paths: Vec<&str> = report["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["path"].as_str().unwrap())
            .collect();
        assert_eq!(
            paths,
            [
                "ubuntu/20.04/arm64/5.4.0-1.btf",
                "ubuntu/22.04/aarch64/5.15.0-1.btf"
            ]
        );
        // One architecture: nothing to compare with, the poison is a rejection.
        assert_eq!(report["arch_mismatches"], Value::Array(Vec::new()));
        assert!(!log.contains("built for"), "{log}");
        assert_eq!(
            verdict(&report, paths[0], "calls_parent"),
            ("rejected".into(), "poisoned".into())
        );
    }
    let (summary, report, _) = run(&tree, &tmp.0.join("amd64"), &["--arch", "amd64"]);
    assert_eq!(summary["kernels"], 2);
    assert!(
        report["kernels"]
            .as_array()
            .unwrap()
            .iter()
            .all(|k| k["arch"] == "x86_64")
    );
}
