//! `btfgen min-core-btf --report`: the one kernel's compatibility report, written also when a
//! relocation fails (then no output BTF is written), agreeing with `btfgen relocate --json`;
//! `--explain` and the summary line say which entry programs each relocation is loaded in and
//! what the verifier will do with them.

#[path = "support/cli.rs"]
mod cli;
#[path = "support/report.rs"]
mod report;

use cli::{TempDir, btfgen, data};
use serde_json::Value;
use std::path::{Path, PathBuf};

#[test]
fn the_report_of_a_failing_kernel_is_written_and_matches_relocate() {
    let dir = TempDir::new("mcb-report");
    let target = data("targets/btf__ambiguous_off.btf");
    let objects = [data("progs/ambiguous.bpf.o"), data("progs/fields.bpf.o")];
    let out = dir.0.join("out.btf");
    let report = dir.0.join("report.json");
    let report_arg = PathBuf::from(format!("--report={}", report.display()));
    let run = btfgen(&[
        Path::new("min-core-btf"),
        &target,
        &out,
        &objects[0],
        &objects[1],
        &report_arg,
    ]);
    assert!(!run.status.success());
    assert!(!out.exists(), "no output when a relocation fails");
    let report = report::read(&report);
    assert_eq!(report["arch_mismatches"], serde_json::json!([]));
    let kernels = report["kernels"].as_array().unwrap();
    assert_eq!(kernels.len(), 1);
    let kernel = &kernels[0];
    assert_eq!(kernel["status"], "failed");
    assert!(
        kernel["error"]
            .as_str()
            .unwrap()
            .contains("ambiguous.bpf.o")
    );

    // Every relocation of both objects, as relocate --json gives them, in the same order.
    let relocate = btfgen(&[
        Path::new("relocate"),
        Path::new("--json"),
        Path::new("--btf"),
        &target,
        &objects[0],
        &objects[1],
    ]);
    let expected: Vec<Value> = String::from_utf8(relocate.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut reported = Vec::new();
    let mut statuses = Vec::new();
    let mut counts = std::collections::BTreeMap::new();
    for cell in kernel["programs"].as_array().unwrap() {
        statuses.push(cell["status"].as_str().unwrap().to_string());
        *counts.entry(cell["verdict"].as_str().unwrap()).or_insert(0) += 1;
        if cell["status"] == "failed" {
            assert_eq!(cell["verdict"], "failed", "{cell}");
        }
        for r in cell["relocations"].as_array().unwrap() {
            // No sub-programs here: each relocation is in its own entry program, once.
            let mut r = r.clone();
            let fields = r.as_object_mut().unwrap();
            assert_eq!(fields.remove("prog_insn").unwrap(), fields["insn"]);
            assert!(!fields.contains_key("subprog"));
            assert_eq!(fields["callers"], serde_json::json!([cell["program"]]));
            reported.push(r);
        }
    }
    for (verdict, n) in counts {
        assert_eq!(kernel["verdicts"][verdict], n, "{verdict}");
    }
    let key = |v: &Value| {
        (
            v["object"].as_str().unwrap().to_string(),
            v["section"].as_str().unwrap().to_string(),
            v["relo"].as_u64().unwrap(),
        )
    };
    reported.sort_by_key(key);
    let mut expected_sorted = expected.clone();
    expected_sorted.sort_by_key(key);
    assert_eq!(reported, expected_sorted);
    assert!(expected.iter().any(|r| r.get("error").is_some()));
    assert!(statuses.iter().any(|s| s == "failed"));
    // The other object is reported too, and did not fail.
    assert!(statuses.iter().any(|s| s != "failed"), "{statuses:?}");
    assert!(
        reported
            .iter()
            .any(|r| r["object"] == objects[1].to_str().unwrap())
    );

    // The HTML form: one page, the data inside, nothing loaded from elsewhere.
    let html = dir.0.join("report.html");
    let html_arg = PathBuf::from(format!("--report={}", html.display()));
    btfgen(&[
        Path::new("min-core-btf"),
        &target,
        &out,
        &objects[0],
        &html_arg,
    ]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains(report::FORMAT));
    for external in ["http://", "https://", "src="] {
        assert!(!page.contains(external), "{external}");
    }
}

/// calls.bpf.o on the example kernel, which has no `task_struct.group_leader`: via_leader's
/// read of it is poisoned, and libbpf appends via_leader to calls_both only (calls.bpf.c: calls_parent
/// calls via_parent, calls_both via_leader and via_parent, calls_loop passes loop_cb to
/// bpf_loop). `--explain` names each relocation's callers; the summary counts the programs.
#[test]
fn explain_names_the_callers_and_the_summary_counts_programs_by_verdict() {
    let dir = TempDir::new("mcb-explain");
    let target = data("targets/btf__example_kernel.btf");
    let object = data("progs/calls.bpf.o");
    let out = dir.0.join("out.btf");
    let run = btfgen(&[
        Path::new("min-core-btf"),
        &target,
        &out,
        &object,
        Path::new("--explain"),
    ]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let stdout = String::from_utf8(run.stdout).unwrap();
    let object = object.display();
    for (relocation, callers) in [
        ("prog 'via_parent' relo #0 ", "calls_parent, calls_both"),
        ("prog 'leaf_tgid' relo #4 ", "calls_parent, calls_both"),
        ("prog 'via_leader' relo #2 ", "calls_both"),
        ("prog 'loop_cb' relo #3 ", "calls_loop"),
        ("prog 'calls_both' relo #0 ", "calls_both"),
    ] {
        let line = stdout
            .lines()
            .find(|l| l.contains(&format!("needed by {object}: {relocation}")))
            .unwrap_or_else(|| panic!("{relocation}: {stdout}"));
        assert!(line.ends_with(&format!(" [callers: {callers}]")), "{line}");
    }
    assert!(
        stderr.contains(
            "; programs: 2 loads (0 with guarded poison), 1 rejected, 0 arch-mismatch, 0 unknown, 0 failed"
        ),
        "{stderr}"
    );
}
