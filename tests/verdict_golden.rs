//! The load verdicts of every committed object against every committed target it relocates
//! against, with each evidence item's text, compared with `tests/data/expected/verdicts.txt`.
//!
//! The golden was written by the path-exploring pass (every path of each entry program, the
//! kernel verifier's `do_check` with exact-state pruning) before the linear pass replaced it:
//! a verdict or an evidence line that changes must be decided by the kernel verifier
//! (`c-tests/check_verdicts.py`) and the golden updated with a note in the commit.
//!
//! Targets: the `manifest.txt` pairs whose target is a committed file, and every object
//! against the committed Linux 7.1 BTF and `btf__example_kernel.btf` (never the running
//! kernel's, which differs between machines). `BTFGEN_BLESS=1` rewrites the golden.
//!
//! On every pair, `entry_verdicts` (what the summary lines count) must give what
//! `entry_programs` gives but the guards of dead poisons (`fixtures::judge_both_ways`).

#[path = "support/fixtures.rs"]
mod fixtures;
#[path = "support/raw_btf.rs"]
mod raw_btf;

use btfgen::btf::Btf;
use btfgen::core::relocate::relocate_object;
use btfgen::core::verdict::describe;
use btfgen::core::{CandidateIndex, Targets};
use btfgen::log::LibbpfLog;
use btfgen::object::BpfObject;
use fixtures::{data_dir, manifest_pairs, read};
use std::fmt::Write;
use std::path::Path;

const GOLDEN: &str = "expected/verdicts.txt";

/// `*.bpf.o` of `dir` (relative to the crate), sorted, as paths relative to the crate.
fn objects(dir: &str) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out: Vec<String> = std::fs::read_dir(root.join(dir))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".bpf.o"))
        .map(|n| format!("{dir}/{n}"))
        .collect();
    out.sort();
    out
}

/// The verdicts of `object` (bytes) against `main` as lines of `out`, under a header naming
/// both.
fn write_verdicts(out: &mut String, object: &str, target: &str, bytes: &[u8], main: &Btf<'_>) {
    writeln!(out, "== {object} on {target}").unwrap();
    let obj = BpfObject::parse(bytes).unwrap();
    let local = Btf::parse(obj.btf_bytes().unwrap()).unwrap();
    let targets = Targets::new(main);
    let mut index = CandidateIndex::new();
    let relocated = match relocate_object(&obj, &local, &targets, &mut index, &mut LibbpfLog) {
        Ok(r) => r,
        Err(e) => {
            writeln!(out, "relocation error: {e}").unwrap();
            return;
        }
    };
    let what = format!("{object} on {target}");
    let programs = match fixtures::judge_both_ways(&obj, &local, &relocated, &what) {
        Ok(p) => p,
        Err(e) => {
            writeln!(out, "verdict error: {e}").unwrap();
            return;
        }
    };
    for p in &programs {
        writeln!(out, "{} ({}): {}", p.program, p.section, p.verdict.name()).unwrap();
        for e in &p.evidence {
            writeln!(out, "  {} {}", e.tag(), describe(e, &local, &relocated)).unwrap();
        }
    }
}

fn all_verdicts() -> String {
    let mut out = String::new();
    for pair in manifest_pairs() {
        let bytes = read(&pair.object);
        let target = read(&pair.target);
        let what = match &pair.base {
            Some(base) => format!("{} (base {base})", pair.target),
            None => pair.target.clone(),
        };
        match &pair.base {
            Some(base) => {
                let base = read(base);
                let base = Btf::parse(&base).unwrap();
                let main = Btf::parse_split(&target, &base).unwrap();
                write_verdicts(&mut out, &pair.object, &what, &bytes, &main);
            }
            None => {
                let main = Btf::parse(&target).unwrap();
                write_verdicts(&mut out, &pair.object, &what, &bytes, &main);
            }
        }
    }
    let mut all = objects("tests/data/progs");
    all.extend(objects("benches/objs"));
    let vmlinux = raw_btf::vmlinux_7_1();
    let example = read("targets/btf__example_kernel.btf");
    for (name, target) in [
        ("targets/vmlinux-7.1.btf.tar.xz", &vmlinux),
        ("targets/btf__example_kernel.btf", &example),
    ] {
        let main = Btf::parse(target).unwrap();
        for object in &all {
            let bytes = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(object))
                .unwrap_or_else(|e| panic!("{object}: {e}"));
            write_verdicts(&mut out, object, name, &bytes, &main);
        }
    }
    out
}

#[test]
fn verdicts_match_the_golden() {
    let actual = all_verdicts();
    let path = data_dir().join(GOLDEN);
    if std::env::var_os("BTFGEN_BLESS").is_some() {
        std::fs::write(&path, &actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (BTFGEN_BLESS=1 writes it)", path.display()));
    let differences: Vec<String> = expected
        .lines()
        .zip(actual.lines())
        .enumerate()
        .filter(|(_, (e, a))| e != a)
        .take(20)
        .map(|(i, (e, a))| format!("line {}:\n  expected {e}\n  actual   {a}", i + 1))
        .collect();
    assert!(
        differences.is_empty() && expected.lines().count() == actual.lines().count(),
        "verdicts differ from {GOLDEN} ({} vs {} lines):\n{}",
        expected.lines().count(),
        actual.lines().count(),
        differences.join("\n")
    );
    // The golden covers what it says: every kind of verdict and evidence occurs.
    for needle in [
        ": loads",
        ": rejected",
        ": unknown",
        ": failed",
        "  guarded ",
        "  reached ",
        "  load_time ",
        "  failed ",
    ] {
        assert!(expected.contains(needle), "no {needle:?} in {GOLDEN}");
    }
}
