//! `btfgen batch` on a tree of 60+ kernels (`batch_common::build_scale_tree`): `--dedup` stores
//! exactly the distinct outputs of a plain run, every link resolves to its kernel's output, the
//! index maps every kernel, `--archive` is byte-identical across runs; the `--report` agrees
//! with `btfgen relocate --json` on every entry-program cell (sub-program relocations charged to
//! their callers), and its HTML page renders in headless Chromium: cells coloured by verdict,
//! identical kernels collapsed into one row, columns grouped by object.

mod batch_common;
#[path = "support/report.rs"]
mod report;

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

/// The objects of the report tests: the tree's, and `calls.bpf.o`, whose `.text` sub-programs
/// libbpf appends to their callers (one poisoned on the example kernel's variants).
fn report_objects() -> Vec<PathBuf> {
    let mut objects = objects();
    objects.push(data("progs/calls.bpf.o"));
    objects
}

/// `relocate --json` on `btf`: its records (one per relocation), and whether it succeeded.
fn relocate_records(btf: &Path) -> (Vec<Value>, bool) {
    let mut args: Vec<std::ffi::OsString> = vec![
        "relocate".into(),
        "--json".into(),
        "--btf".into(),
        btf.into(),
    ];
    args.extend(report_objects().into_iter().map(Into::into));
    let out = btfgen(&args);
    let records = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    (records, out.status.success())
}

/// (object, section, relo #): a relocation as libbpf numbers it.
fn relo_key(r: &Value) -> (String, String, u64) {
    (
        r["object"].as_str().unwrap().to_string(),
        r["section"].as_str().unwrap().to_string(),
        r["relo"].as_u64().unwrap(),
    )
}

#[test]
fn report_agrees_with_relocate_for_every_cell() {
    let tmp = TempDir::new("report");
    let tree = tmp.0.join("tree");
    let kernels = build_scale_tree(&tree);
    let report_path = tmp.0.join("report.json");
    let report_arg = format!("--report={}", report_path.display());
    let run = batch_with(
        &tree,
        &tmp.0.join("out"),
        &[&report_arg, "--json"],
        &report_objects(),
    );
    let s = summary(&run);
    let report = report::read(&report_path);
    let rows = report["kernels"].as_array().unwrap();
    assert_eq!(rows.len(), kernels.len());
    let failed_paths: BTreeSet<&str> = s["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();

    let mut statuses = BTreeSet::new();
    let mut verdicts: BTreeMap<String, u64> = BTreeMap::new();
    let mut poisoned_in_subprog = 0;
    let plain = tmp.0.join("kernel.btf");
    for k in &kernels {
        let row = rows
            .iter()
            .find(|r| r["path"] == k.rel.as_str())
            .unwrap_or_else(|| panic!("{} not in the report", k.rel));
        std::fs::write(&plain, &k.plain).unwrap();
        let (records, relocate_ok) = relocate_records(&plain);
        // A kernel fails in batch exactly where relocate reports an error.
        assert_eq!(
            failed_paths.contains(k.rel.as_str()),
            !relocate_ok,
            "{}",
            k.rel
        );
        let cells = row["programs"].as_array().unwrap();
        // Rows are entry programs: a relocation in a program that is a row has that program
        // among its callers (a sub-program is never a row).
        let programs: BTreeSet<(&str, &str)> = cells
            .iter()
            .map(|c| {
                (
                    c["object"].as_str().unwrap(),
                    c["program"].as_str().unwrap(),
                )
            })
            .collect();
        for r in &records {
            let program = (
                r["object"].as_str().unwrap(),
                r["program"].as_str().unwrap(),
            );
            let callers = r["callers"].as_array().unwrap();
            if programs.contains(&program) {
                assert_eq!(callers, &[r["program"].clone()], "{r}");
            }
            for caller in callers {
                assert!(
                    programs.contains(&(program.0, caller.as_str().unwrap())),
                    "{}: caller {caller} is not an entry program of {}",
                    k.rel,
                    program.0
                );
            }
        }
        for cell in cells {
            let (object, program) = (
                cell["object"].as_str().unwrap(),
                cell["program"].as_str().unwrap(),
            );
            // Every relocation libbpf applies to the program: each record whose callers name it,
            // as relocate --json prints it plus where it is in the assembled program.
            let mut expected: Vec<&Value> = records
                .iter()
                .filter(|r| {
                    r["object"] == object
                        && r["callers"]
                            .as_array()
                            .unwrap()
                            .iter()
                            .any(|c| c == program)
                })
                .collect();
            expected.sort_by_key(|r| relo_key(r));
            let mut got: Vec<Value> = Vec::new();
            for r in cell["relocations"].as_array().unwrap() {
                // A poisoned relocation says why; no other does.
                assert_eq!(r["poison_reason"].is_string(), r["poison"] == true, "{r}");
                let mut plain = r.clone();
                let fields = plain.as_object_mut().unwrap();
                let prog_insn = fields.remove("prog_insn").unwrap().as_u64().unwrap();
                let insn = r["insn"].as_u64().unwrap();
                match fields.remove("subprog") {
                    // In an appended sub-program: after the entry program's own code.
                    Some(subprog) => {
                        assert_eq!(subprog, r["program"], "{r}");
                        assert_ne!(r["program"], program, "{r}");
                        assert!(prog_insn > insn, "{r}");
                        poisoned_in_subprog += usize::from(r["poison"] == true);
                    }
                    None => {
                        assert_eq!(r["program"], program, "{r}");
                        assert_eq!(prog_insn, insn, "{r}");
                    }
                }
                got.push(plain);
            }
            got.sort_by_key(relo_key);
            let expected: Vec<Value> = expected.into_iter().cloned().collect();
            assert_eq!(
                got, expected,
                "{}: {object} {program}: report and relocate --json differ",
                k.rel
            );
            let status = if got.iter().any(|r| r.get("error").is_some()) {
                "failed"
            } else if got.iter().any(|r| r["poison"] == true) {
                "poisoned"
            } else {
                "ok"
            };
            assert_eq!(cell["status"], status, "{} {object} {program}", k.rel);
            statuses.insert(status);
            // The verdict follows libbpf's status where that decides it: no poison loads,
            // a failed relocation fails.
            let verdict = cell["verdict"].as_str().unwrap();
            match status {
                "ok" => assert_eq!(verdict, "loads", "{cell}"),
                "failed" => assert_eq!(verdict, "failed", "{cell}"),
                _ => assert!(
                    ["loads", "rejected", "arch-mismatch", "unknown"].contains(&verdict),
                    "{cell}"
                ),
            }
            for e in cell["evidence"].as_array().unwrap() {
                assert!(
                    ["guarded", "reached", "load_time", "failed", "budget"]
                        .contains(&e["tag"].as_str().unwrap()),
                    "{e}"
                );
                assert!(!e["text"].as_str().unwrap().is_empty(), "{e}");
            }
            *verdicts.entry(verdict.to_string()).or_default() += 1;
        }
        // Every relocation that has a caller is in a row.
        let in_rows: usize = cells
            .iter()
            .map(|c| c["relocations"].as_array().unwrap().len())
            .sum();
        let applied: usize = records
            .iter()
            .map(|r| r["callers"].as_array().unwrap().len())
            .sum();
        assert_eq!(in_rows, applied, "{}", k.rel);
        let worst = ["failed", "poisoned", "ok"]
            .into_iter()
            .find(|st| cells.iter().any(|c| c["status"] == *st))
            .unwrap();
        assert_eq!(row["status"], worst, "{}", k.rel);
    }
    // The tree exercises every status, and a sub-program's poison charged to its callers.
    assert_eq!(
        statuses,
        BTreeSet::from(["ok", "poisoned", "failed"]),
        "{statuses:?}"
    );
    assert!(poisoned_in_subprog > 0);
    // The run's counts are the cells'.
    for (verdict, n) in &verdicts {
        assert_eq!(s["programs"][verdict], *n, "{verdict}: {}", s["programs"]);
    }
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

/// The page's row of each kernel: kernels whose every program has the same verdict (loads split
/// by guarded poison) and status share one. Kernel paths by row, in first-seen order.
fn expected_rows(rows: &[Value]) -> Vec<Vec<String>> {
    let columns: BTreeSet<(String, String)> = rows
        .iter()
        .flat_map(|r| r["programs"].as_array().unwrap())
        .map(|c| (c["object"].to_string(), c["program"].to_string()))
        .collect();
    let mut groups: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for r in rows {
        let mut key = vec![r["status"].to_string()];
        for column in &columns {
            let cell = r["programs"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| (c["object"].to_string(), c["program"].to_string()) == *column);
            key.push(match cell {
                Some(c) if c["verdict"] == "loads" && c["status"] == "poisoned" => {
                    "guarded".to_string()
                }
                Some(c) => format!("{}:{}", c["verdict"], c["status"]),
                None => "none".to_string(),
            });
        }
        let path = r["path"].as_str().unwrap().to_string();
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, paths)) => paths.push(path),
            None => groups.push((key, vec![path])),
        }
    }
    groups.into_iter().map(|(_, paths)| paths).collect()
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
        batch_with(
            &tree,
            &tmp.0.join("out"),
            &[&format!("--report={}", report.display())],
            &report_objects(),
        );
    }
    let page = std::fs::read_to_string(&html).unwrap();
    for external in ["http://", "https://", "src="] {
        assert!(!page.contains(external), "not self-contained: {external}");
    }
    // A colour for every verdict, and for an unreadable kernel.
    for class in [
        "loads",
        "guarded",
        "rejected",
        "arch-mismatch",
        "unknown",
        "failed",
        "error",
    ] {
        assert!(
            page.contains(&format!(".v-{class} {{ background: #")),
            "{class}"
        );
    }
    let report = report::read(&json);
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

    // The matrix: identical kernels collapse into one row that counts them.
    assert!(dom.contains("<table id=\"matrix\">"), "no matrix");
    let groups = expected_rows(rows);
    assert!(groups.len() < kernels.len(), "no two kernels alike");
    assert_eq!(dom.matches("<tr data-kernel=").count(), groups.len());
    for paths in &groups {
        let count = format!(
            "<tr data-kernel=\"{}\" data-count=\"{}\">",
            paths[0],
            paths.len()
        );
        assert!(dom.contains(&count), "{count}");
    }
    // Columns grouped by object: one header over each object's entry programs.
    for object in report["objects"].as_array().unwrap() {
        let object = object.as_str().unwrap();
        let programs: BTreeSet<&str> = rows
            .iter()
            .flat_map(|r| r["programs"].as_array().unwrap())
            .filter(|c| c["object"] == object)
            .map(|c| c["program"].as_str().unwrap())
            .collect();
        let header = format!(
            "<th class=\"object\" colspan=\"{}\" title=\"{object}\">",
            programs.len()
        );
        assert!(dom.contains(&header), "{header}");
    }
    // Cells coloured by verdict: the tree has programs that load, are rejected, fail.
    for class in ["cell v-loads", "cell v-rejected", "cell v-failed"] {
        assert!(dom.contains(class), "{class}");
    }
    // The filters, with the tree's verdicts, distros and arches.
    for filter in [
        "filter-verdict",
        "filter-distro",
        "filter-arch",
        "filter-status",
    ] {
        assert!(dom.contains(&format!("id=\"{filter}\"")), "{filter}");
    }
    for option in [
        "<option value=\"fields\">",
        "<option value=\"arm64\">",
        "<option value=\"poisoned\">",
        "<option value=\"arch-mismatch\">",
    ] {
        assert!(dom.contains(option), "{option}");
    }
    // The opened cell: selected, and its relocations listed with their access strings.
    let selected: Vec<&str> = dom
        .split("<td class=\"")
        .skip(1)
        .filter_map(|td| td.split('"').next())
        .filter(|class| class.split(' ').any(|c| c == "selected"))
        .collect();
    assert_eq!(selected.len(), 1, "{selected:?}");
    assert!(selected[0].starts_with("cell v-failed"), "{selected:?}");
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

    // A collapsed row opened from the URL: the names of its kernels.
    let collapsed = groups.iter().max_by_key(|g| g.len()).unwrap();
    let dom = headless(
        browser,
        &format!("file://{}#kernels={}", html.display(), collapsed[0]),
        None,
    );
    let list = &dom[dom
        .find("<ul id=\"group-kernels\">")
        .expect("no kernel list")..];
    let list = &list[..list.find("</ul>").unwrap()];
    assert_eq!(list.matches("<li>").count(), collapsed.len());
    for path in collapsed {
        assert!(list.contains(path.as_str()), "{path}");
    }

    // Filters from the URL: only the failed kernels remain, then only rows with a rejection.
    let shown_rows = |fragment: &str, keep: &dyn Fn(&Value) -> bool| {
        let kept: Vec<Value> = rows.iter().filter(|r| keep(r)).cloned().collect();
        assert!(!kept.is_empty(), "{fragment}");
        let dom = headless(
            browser,
            &format!("file://{}#{fragment}", html.display()),
            None,
        );
        assert_eq!(
            dom.matches("<tr data-kernel=").count(),
            expected_rows(&kept).len(),
            "{fragment}"
        );
    };
    shown_rows("status=failed", &|r| r["status"] == "failed");
    shown_rows("verdict=rejected", &|r| {
        r["programs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["verdict"] == "rejected")
    });

    // A screenshot, kept under target/ to be looked at (docs/report.png is one).
    let shot = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/report.png");
    let sub_poison = rows
        .iter()
        .flat_map(|r| {
            r["programs"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |c| (r, c))
        })
        .find(|(_, c)| {
            c["relocations"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r.get("subprog").is_some() && r["poison"] == true)
        })
        .unwrap();
    let shot_url = format!(
        "file://{}#cell={}|{}|{}",
        html.display(),
        sub_poison.0["path"].as_str().unwrap(),
        sub_poison.1["object"].as_str().unwrap(),
        sub_poison.1["program"].as_str().unwrap()
    );
    headless(browser, &shot_url, Some(&shot));
    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    assert!(png.len() > 10_000, "{} bytes", png.len());
    if let Ok(keep) = std::env::var("BTFGEN_KEEP_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
}

/// A tree of `count` kernels in BTFHub's layout, each a hard link to one of a few distinct
/// BTFs kept in `sources` (outside the tree): the fixture example kernel, the same without
/// `task_struct.real_parent` under `arm64` (an architecture mismatch for calls.bpf.o: no
/// `x86_64` kernel lacks it), and under `s390x` targets on which objects load, are rejected or
/// fail. As in BTFHub, most kernels are alike.
fn build_linked_tree(tree: &Path, sources: &Path, count: usize) {
    std::fs::create_dir_all(sources).unwrap();
    let example = std::fs::read(data("targets/btf__example_kernel.btf")).unwrap();
    let distinct: Vec<(&str, Vec<u8>)> = vec![
        ("x86_64", example.clone()),
        (
            "arm64",
            without_member(&example, "task_struct", "real_parent"),
        ),
        (
            "s390x",
            std::fs::read(data("targets/btf__fields.btf")).unwrap(),
        ),
        (
            "s390x",
            std::fs::read(data("targets/btf__bitfields_bad.btf")).unwrap(),
        ),
        (
            "s390x",
            std::fs::read(data("targets/btf__flavors_old.btf")).unwrap(),
        ),
    ];
    let distros = [
        "ubuntu/20.04",
        "ubuntu/22.04",
        "debian/12",
        "fedora/38",
        "amzn/2",
    ];
    for (n, (_, bytes)) in distinct.iter().enumerate() {
        std::fs::write(sources.join(format!("{n}.btf")), bytes).unwrap();
    }
    for i in 0..count {
        let (n, (arch, _)) = (i % distinct.len(), &distinct[i % distinct.len()]);
        let dir = tree
            .join(distros[i / distinct.len() % distros.len()])
            .join(arch);
        std::fs::create_dir_all(&dir).unwrap();
        let name = dir.join(format!("5.{}.0-{i}-generic.btf", i / 50));
        std::fs::hard_link(sources.join(format!("{n}.btf")), name).unwrap();
    }
}

/// 2,000 kernels: the report stores each distinct row once, so that its page grows by each
/// added kernel's own record only (not by the kernel's rows), it is byte-identical whatever
/// the threads, and the page opens in headless Chromium and answers its filters.
#[test]
fn the_report_of_2000_kernels_grows_with_distinct_rows_and_its_page_answers_filters() {
    let tmp = TempDir::new("report-2000");
    let sources = tmp.0.join("sources");
    let (small, large) = (tmp.0.join("t50"), tmp.0.join("t2000"));
    build_linked_tree(&small, &sources, 50);
    build_linked_tree(&large, &sources, 2000);
    let report = |tree: &Path, file: &str, jobs: &str| {
        let path = tmp.0.join(file);
        let arg = format!("--report={}", path.display());
        let out = tmp.0.join(format!("out-{file}"));
        let run = batch_with(tree, &out, &[&arg, "-j", jobs], &report_objects());
        assert!(path.exists(), "{}", stderr(&run));
        std::fs::remove_dir_all(&out).unwrap();
        path
    };
    let json = report(&large, "2000.json", "2");
    let page = report(&large, "2000.html", "2");
    let small_page = report(&small, "50.html", "2");
    // Deterministic: the same bytes from one thread as from two.
    let json_bytes = std::fs::read(&json).unwrap();
    assert_eq!(
        std::fs::read(report(&large, "2000-j1.json", "1")).unwrap(),
        json_bytes
    );
    let text = String::from_utf8(json_bytes).unwrap();
    let expanded = report::expand(&serde_json::from_str(&text).unwrap());
    let rows = expanded["kernels"].as_array().unwrap();
    assert_eq!(rows.len(), 2000);

    // Size: each added kernel adds its own record (path, fields, status, error, set number:
    // one line of the JSON) and nothing else, while its rows in /2's form are far larger.
    let size = |p: &Path| std::fs::metadata(p).unwrap().len() as usize;
    let kernel_lines: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "\"kernels\":[")
        .skip(1)
        .filter(|l| l.starts_with('{'))
        .collect();
    assert_eq!(kernel_lines.len(), 2000);
    let longest = kernel_lines.iter().map(|l| l.len() + 2).max().unwrap();
    let growth = size(&page) - size(&small_page);
    eprintln!(
        "pages: 50 kernels {} bytes, 2000 kernels {} bytes; longest kernel record {longest}",
        size(&small_page),
        size(&page)
    );
    assert!(growth <= 1950 * longest, "{growth} bytes for 1950 kernels");
    let expanded_bytes: usize = rows.iter().map(|r| r["programs"].to_string().len()).sum();
    assert!(
        expanded_bytes > 10 * size(&page),
        "{expanded_bytes} bytes of rows in /2's form, a page of {}",
        size(&page)
    );

    let Some(browser) = chromium() else {
        eprintln!("SKIP (part): chromium not installed (CI installs Debian's chromium)");
        return;
    };
    // The filters: the rows shown, and the kernels counted, are exactly the matching ones.
    let has = |r: &Value, verdict: &str| {
        r["programs"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["verdict"] == verdict)
    };
    type Keep<'a> = &'a dyn Fn(&Value) -> bool;
    let filters: [(&str, Keep); 4] = [
        ("", &|_| true),
        ("verdict=failed", &|r| has(r, "failed")),
        ("verdict=arch-mismatch&arch=arm64", &|r| {
            r["arch"] == "arm64" && has(r, "arch-mismatch")
        }),
        ("status=poisoned&distro=debian", &|r| {
            r["status"] == "poisoned" && r["distro"] == "debian"
        }),
    ];
    for (fragment, keep) in filters {
        let kept: Vec<Value> = rows.iter().filter(|r| keep(r)).cloned().collect();
        assert!(
            !kept.is_empty() && kept.len() < 2000 || fragment.is_empty(),
            "{fragment}"
        );
        let dom = headless(
            browser,
            &format!("file://{}#{fragment}", page.display()),
            None,
        );
        let groups = expected_rows(&kept);
        assert_eq!(
            dom.matches("<tr data-kernel=").count(),
            groups.len(),
            "{fragment}"
        );
        for paths in &groups {
            let row = format!(
                "<tr data-kernel=\"{}\" data-count=\"{}\">",
                paths[0],
                paths.len()
            );
            assert!(dom.contains(&row), "{fragment}: {row}");
        }
        assert!(dom.contains("2000 kernel(s), "), "{fragment}");
        let showing = format!(
            "showing {} kernel(s) in {} row(s)",
            kept.len(),
            groups.len()
        );
        assert!(dom.contains(&showing), "{fragment}: {showing}");
    }
}
