//! `btfgen batch` on a tree of 60+ kernels (`batch_common::build_scale_tree`): `--dedup` stores
//! exactly the distinct outputs of a plain run, every link resolves to its kernel's output, the
//! index maps every kernel, `--archive` is byte-identical across runs; the `--report` agrees
//! with `btfgen relocate --json` on every cell, and its HTML page renders in headless Chromium.

mod batch_common;

use batch_common::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Objects of the dedup test: all but `ambiguous` (whose failures the report test covers), so
/// that most kernels have an output; `bitfields` still fails on `bitfields_bad`.
fn dedup_objects() -> Vec<PathBuf> {
    objects()
        .into_iter()
        .filter(|o| !o.ends_with("ambiguous.bpf.o"))
        .collect()
}

fn summary(out: &std::process::Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("--json summary: {e}\n{}", stderr(out)))
}

#[test]
fn dedup_stores_each_distinct_output_once_and_the_archive_is_reproducible() {
    let tmp = TempDir::new("dedup");
    let tree = tmp.0.join("tree");
    let kernels = build_scale_tree(&tree);
    assert!(kernels.len() >= 50, "{} kernels", kernels.len());
    let objects = dedup_objects();

    // The reference: a plain run, each kernel's output at its mirrored path.
    let plain_out = tmp.0.join("plain");
    let plain = batch_with(&tree, &plain_out, &["--json"], &objects);
    let plain_summary = summary(&plain);
    let outputs: BTreeMap<PathBuf, Vec<u8>> = files_under(&plain_out)
        .into_iter()
        .map(|rel| {
            let bytes = std::fs::read(plain_out.join(&rel)).unwrap();
            (rel, bytes)
        })
        .collect();
    assert_eq!(plain_summary["ok"], outputs.len(), "{}", stderr(&plain));
    assert_eq!(
        plain_summary["ok"].as_u64().unwrap() + plain_summary["failed"].as_u64().unwrap(),
        kernels.len() as u64
    );
    let distinct: BTreeSet<&Vec<u8>> = outputs.values().collect();
    eprintln!(
        "{} kernels, {} outputs, {} distinct",
        kernels.len(),
        outputs.len(),
        distinct.len()
    );
    // The tree is built to have both: kernels sharing an output and kernels differing.
    assert!(
        distinct.len() > 1 && distinct.len() < outputs.len(),
        "{} distinct of {}",
        distinct.len(),
        outputs.len()
    );

    let out = tmp.0.join("dedup");
    let archive = tmp.0.join("set.tar.xz");
    let archive_arg = format!("--archive={}", archive.display());
    let run = batch_with(&tree, &out, &["--dedup", &archive_arg, "--json"], &objects);
    let s = summary(&run);
    let log = stderr(&run);
    assert_eq!(s["ok"], plain_summary["ok"], "{log}");
    assert_eq!(s["failed"], plain_summary["failed"], "{log}");
    assert_eq!(s["distinct_outputs"], distinct.len(), "{log}");
    assert!(
        log.contains(&format!(
            "{} output(s) stored as {} distinct file(s)",
            outputs.len(),
            distinct.len()
        )),
        "{log}"
    );
    let stored_bytes: usize = distinct.iter().map(|b| b.len()).sum();
    let output_bytes: usize = outputs.values().map(Vec::len).sum();
    assert_eq!(s["stored_bytes"], stored_bytes);
    assert_eq!(s["output_bytes"], output_bytes);

    // by-hash holds exactly the distinct outputs, each named by its SHA-256 (sha256sum's).
    let stored: Vec<PathBuf> = std::fs::read_dir(out.join("by-hash"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(stored.len(), distinct.len());
    let sums = sha256sum(&stored);
    let stored_bytes_set: BTreeSet<Vec<u8>> = stored
        .iter()
        .zip(&sums)
        .map(|(path, sum)| {
            assert_eq!(
                path.file_name().unwrap().to_str().unwrap(),
                format!("{sum}.btf")
            );
            std::fs::read(path).unwrap()
        })
        .collect();
    assert_eq!(
        stored_bytes_set,
        distinct.iter().map(|b| b.to_vec()).collect::<BTreeSet<_>>()
    );

    // Every mirrored path is a relative symlink that resolves to that kernel's output.
    for (rel, bytes) in &outputs {
        let link = out.join(rel);
        let target = std::fs::read_link(&link).unwrap_or_else(|e| panic!("{rel:?}: {e}"));
        assert!(target.is_relative(), "{target:?}");
        assert!(target.starts_with("../../.."), "{target:?}");
        assert_eq!(&std::fs::read(&link).unwrap(), bytes, "{rel:?}");
    }
    // Nothing else: the links, by-hash, the index.
    let everything = files_under(&out);
    assert_eq!(
        everything.len(),
        outputs.len() + distinct.len() + 1,
        "{everything:?}"
    );

    // The index: every kernel, its fields from the path, its file and hash, or its error.
    let index: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("index.json")).unwrap()).unwrap();
    let entries = index["kernels"].as_array().unwrap();
    assert_eq!(entries.len(), kernels.len());
    for k in &kernels {
        let e = entries
            .iter()
            .find(|e| e["path"] == k.rel.as_str())
            .unwrap_or_else(|| panic!("{} not in the index", k.rel));
        let parts: Vec<&str> = k.rel.split('/').collect();
        assert_eq!(e["distro"], parts[0]);
        assert_eq!(e["version"], parts[1]);
        assert_eq!(e["arch"], parts[2]);
        assert_eq!(e["kernel"], parts[3].strip_suffix(".btf").unwrap());
        match outputs.get(Path::new(&k.rel)) {
            Some(bytes) => {
                let file = out.join(e["file"].as_str().unwrap());
                assert_eq!(&std::fs::read(&file).unwrap(), bytes);
                assert_eq!(
                    e["file"].as_str().unwrap(),
                    format!("by-hash/{}.btf", e["sha256"].as_str().unwrap())
                );
                assert_eq!(e["size"], bytes.len());
            }
            None => assert!(e["error"].is_string(), "{e}"),
        }
        let input = tree.join(e["input"].as_str().unwrap());
        assert_eq!(e["input_sha256"], sha256sum(&[input])[0]);
    }

    // Reruns: the same hashes and index, and an archive byte-identical to the first.
    let first_index = std::fs::read(out.join("index.json")).unwrap();
    let first_archive = std::fs::read(&archive).unwrap();
    let again = batch_with(&tree, &out, &["--dedup", &archive_arg], &objects);
    assert_eq!(again.status.code(), run.status.code(), "{}", stderr(&again));
    assert_eq!(std::fs::read(out.join("index.json")).unwrap(), first_index);
    assert_eq!(std::fs::read(&archive).unwrap(), first_archive);
    let elsewhere = tmp.0.join("dedup2");
    let archive2 = tmp.0.join("set2.tar.xz");
    let archive2_arg = format!("--archive={}", archive2.display());
    batch_with(
        &tree,
        &elsewhere,
        &["--dedup", &archive2_arg, "-j", "1"],
        &objects,
    );
    assert_eq!(
        std::fs::read(&archive2).unwrap(),
        first_archive,
        "the archive differs between runs"
    );

    // The archive, read by GNU tar: sorted members, root-owned, mtime 0, the same set.
    let listing = Command::new("tar")
        .args(["--numeric-owner", "-tvJf"])
        .arg(&archive)
        .output()
        .unwrap();
    assert!(listing.status.success());
    let listing = String::from_utf8(listing.stdout).unwrap();
    let names: Vec<&str> = listing
        .lines()
        .map(|l| {
            assert!(l.contains(" 0/0 "), "{l}");
            assert!(l.contains("1970-01-01"), "{l}");
            l.split_whitespace().nth(5).unwrap()
        })
        .collect();
    let stored_names: Vec<&str> = names
        .iter()
        .copied()
        .filter(|n| n.starts_with("by-hash/"))
        .collect();
    assert_eq!(stored_names.len(), distinct.len());
    assert!(stored_names.is_sorted());
    assert_eq!(names[stored_names.len()], "index.json");
    let tree_names = &names[stored_names.len() + 1..];
    assert!(tree_names.is_sorted());
    assert_eq!(tree_names.len(), outputs.len());
    let unpacked = tmp.0.join("unpacked");
    std::fs::create_dir_all(&unpacked).unwrap();
    let status = Command::new("tar")
        .arg("-xJf")
        .arg(&archive)
        .arg("-C")
        .arg(&unpacked)
        .status()
        .unwrap();
    assert!(status.success());
    for (rel, bytes) in &outputs {
        assert_eq!(
            &std::fs::read(unpacked.join(rel)).unwrap(),
            bytes,
            "{rel:?}"
        );
    }

    // --dedup=hardlink: the mirrored paths are the stored files themselves.
    let hard = tmp.0.join("hard");
    let run = batch_with(&tree, &hard, &["--dedup=hardlink"], &objects);
    assert_eq!(run.status.code(), plain.status.code(), "{}", stderr(&run));
    use std::os::unix::fs::MetadataExt;
    for (rel, bytes) in &outputs {
        let meta = std::fs::symlink_metadata(hard.join(rel)).unwrap();
        assert!(meta.file_type().is_file(), "{rel:?}");
        assert!(meta.nlink() >= 2, "{rel:?}");
        assert_eq!(&std::fs::read(hard.join(rel)).unwrap(), bytes);
    }
    assert_eq!(
        std::fs::read_dir(hard.join("by-hash")).unwrap().count(),
        distinct.len()
    );
}

/// The relocations of a report cell or `relocate --json`, keyed by (object, program).
type Cells = BTreeMap<(String, String), Vec<Value>>;

fn relocate_cells(btf: &Path) -> (Cells, bool) {
    let mut args: Vec<std::ffi::OsString> = vec![
        "relocate".into(),
        "--json".into(),
        "--btf".into(),
        btf.into(),
    ];
    args.extend(objects().into_iter().map(Into::into));
    let out = btfgen(&args);
    let mut cells = Cells::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let key = (
            v["object"].as_str().unwrap().to_string(),
            v["program"].as_str().unwrap().to_string(),
        );
        cells.entry(key).or_default().push(v);
    }
    (cells, out.status.success())
}

#[test]
fn report_agrees_with_relocate_for_every_cell() {
    let tmp = TempDir::new("report");
    let tree = tmp.0.join("tree");
    let kernels = build_scale_tree(&tree);
    let report_path = tmp.0.join("report.json");
    let report_arg = format!("--report={}", report_path.display());
    let run = batch(&tree, &tmp.0.join("out"), &[&report_arg, "--json"]);
    let s = summary(&run);
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
    assert_eq!(report["format"], "btfgen-report/1");
    let rows = report["kernels"].as_array().unwrap();
    assert_eq!(rows.len(), kernels.len());
    let failed_paths: BTreeSet<&str> = s["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();

    let mut statuses = BTreeSet::new();
    let plain = tmp.0.join("kernel.btf");
    for k in &kernels {
        let row = rows
            .iter()
            .find(|r| r["path"] == k.rel.as_str())
            .unwrap_or_else(|| panic!("{} not in the report", k.rel));
        std::fs::write(&plain, &k.plain).unwrap();
        let (expected, relocate_ok) = relocate_cells(&plain);
        // A kernel fails in batch exactly where relocate reports an error.
        assert_eq!(
            failed_paths.contains(k.rel.as_str()),
            !relocate_ok,
            "{}",
            k.rel
        );
        let mut seen = Cells::new();
        for cell in row["programs"].as_array().unwrap() {
            let key = (
                cell["object"].as_str().unwrap().to_string(),
                cell["program"].as_str().unwrap().to_string(),
            );
            let relocations: Vec<Value> = cell["relocations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    // A poisoned relocation says why; no other does.
                    assert_eq!(r["poison_reason"].is_string(), r["poison"] == true, "{r}");
                    r.clone()
                })
                .collect();
            let want_status = if relocations.iter().any(|r| r.get("error").is_some()) {
                "failed"
            } else if relocations.iter().any(|r| r["poison"] == true) {
                "poisoned"
            } else {
                "ok"
            };
            assert_eq!(cell["status"], want_status, "{} {key:?}", k.rel);
            statuses.insert(want_status);
            if !relocations.is_empty() {
                seen.insert(key, relocations);
            }
        }
        assert_eq!(
            seen, expected,
            "{}: report and relocate --json differ",
            k.rel
        );
        let worst = ["failed", "poisoned", "ok"]
            .into_iter()
            .find(|st| {
                row["programs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|c| c["status"] == *st)
            })
            .unwrap();
        assert_eq!(row["status"], worst, "{}", k.rel);
    }
    // The tree exercises every status.
    assert_eq!(
        statuses,
        BTreeSet::from(["ok", "poisoned", "failed"]),
        "{statuses:?}"
    );
}

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser"].into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// Load `url` in headless Chromium; `--dump-dom` output, or a screenshot into `shot`.
fn headless(browser: &str, url: &str, shot: Option<&Path>) -> String {
    let profile = TempDir::new(&format!("chromium-{}", shot.is_some()));
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--virtual-time-budget=2000",
        "--window-size=1400,1000",
    ])
    .arg(format!("--user-data-dir={}", profile.0.display()));
    match shot {
        Some(path) => cmd.arg(format!("--screenshot={}", path.display())),
        None => cmd.arg("--dump-dom"),
    };
    let out = cmd.arg(url).output().unwrap();
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn html_report_renders_in_headless_chromium() {
    let Some(browser) = chromium() else {
        eprintln!("SKIP: chromium not installed (CI installs Debian's chromium)");
        return;
    };
    let tmp = TempDir::new("report-html");
    let tree = tmp.0.join("tree");
    let kernels = build_scale_tree(&tree);
    let html = tmp.0.join("report.html");
    let json = tmp.0.join("report.json");
    for report in [&html, &json] {
        batch(
            &tree,
            &tmp.0.join("out"),
            &[&format!("--report={}", report.display())],
        );
    }
    let page = std::fs::read_to_string(&html).unwrap();
    for external in ["http://", "https://", "src="] {
        assert!(!page.contains(external), "not self-contained: {external}");
    }
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let rows = report["kernels"].as_array().unwrap();
    // A failed cell: its relocations, one with an error.
    let (row, cell) = rows
        .iter()
        .flat_map(|r| {
            r["programs"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |c| (r, c))
        })
        .find(|(_, c)| c["status"] == "failed")
        .unwrap();
    let id = format!(
        "{}|{}|{}",
        row["path"].as_str().unwrap(),
        cell["object"].as_str().unwrap(),
        cell["program"].as_str().unwrap()
    );
    let url = format!("file://{}#cell={}", html.display(), id);
    let dom = headless(browser, &url, None);

    // The matrix: one row per kernel, one column per program.
    assert!(dom.contains("<table id=\"matrix\">"), "no matrix");
    assert_eq!(dom.matches("<tr data-kernel=").count(), kernels.len());
    // The filters, with the tree's distros and arches.
    for filter in ["filter-distro", "filter-arch", "filter-status"] {
        assert!(dom.contains(&format!("id=\"{filter}\"")), "{filter}");
    }
    for option in [
        "<option value=\"fields\">",
        "<option value=\"arm64\">",
        "<option value=\"poisoned\">",
    ] {
        assert!(dom.contains(option), "{option}");
    }
    // The opened cell: selected, and its relocations listed with their access strings.
    assert!(dom.contains("cell failed selected"), "cell not selected");
    let detail = &dom[dom.find("<div id=\"detail\">").unwrap()..];
    assert!(detail.contains("<table id=\"relocations\">"), "{detail}");
    let relocations = cell["relocations"].as_array().unwrap();
    assert_eq!(
        detail.matches("<tr class=\"relocation\"").count(),
        relocations.len()
    );
    for r in relocations {
        assert!(detail.contains(&format!("<td>{}</td>", r["access"].as_str().unwrap())));
        if let Some(e) = r["error"].as_str() {
            assert!(detail.contains(&format!("error: {e}")), "{e}");
        }
    }

    // A filter from the URL: only the failed kernels remain.
    let failed = rows.iter().filter(|r| r["status"] == "failed").count();
    assert!(failed > 0);
    let dom = headless(
        browser,
        &format!("file://{}#status=failed", html.display()),
        None,
    );
    assert_eq!(dom.matches("<tr data-kernel=").count(), failed);

    // A screenshot, taken without error.
    let shot = tmp.0.join("report.png");
    headless(browser, &url, Some(&shot));
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    assert!(png.len() > 10_000, "{} bytes", png.len());
    if let Ok(keep) = std::env::var("BTFGEN_KEEP_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
}
