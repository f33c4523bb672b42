//! `btfgen min-core-btf --report`: the one kernel's compatibility report, written also when a
//! relocation fails (then no output BTF is written), agreeing with `btfgen relocate --json`.

#[path = "support/cli.rs"]
mod cli;

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
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(report["format"], "btfgen-report/1");
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
    for cell in kernel["programs"].as_array().unwrap() {
        statuses.push(cell["status"].as_str().unwrap().to_string());
        for r in cell["relocations"].as_array().unwrap() {
            reported.push(r.clone());
        }
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
    assert!(page.contains("btfgen-report/1"));
    for external in ["http://", "https://", "src="] {
        assert!(!page.contains(external), "{external}");
    }
}
