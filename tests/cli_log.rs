//! The `btfgen` binary's log flags: `-d` prints libbpf's debug log of every relocation on stderr
//! (one `prog 'NAME': relo #N: <kind> ...` line per relocation, the pairs `relocate --json`
//! reports, as `bpftool -d` shows libbpf's), `-q` prints nothing but errors, and by default
//! only libbpf's warnings and the summary line appear.

#[path = "support/cli.rs"]
mod cli;

use cli::{btfgen, data};
use std::collections::BTreeSet;
use std::path::Path;

/// `(program, relo)` of every relocation, as `btfgen relocate --json` reports them.
fn relocations(target: &Path, object: &Path) -> BTreeSet<(String, u64)> {
    let out = btfgen(&[
        "relocate",
        "--json",
        "--btf",
        target.to_str().unwrap(),
        object.to_str().unwrap(),
    ]);
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let r: serde_json::Value = serde_json::from_str(line).unwrap();
            (
                r["program"].as_str().unwrap().to_string(),
                r["relo"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// `(program, relo)` of every `libbpf: prog 'NAME': relo #N: <kind> ...` line, and how many
/// such lines there were.
fn spec_lines(stderr: &str) -> (BTreeSet<(String, u64)>, usize) {
    let mut pairs = BTreeSet::new();
    let mut count = 0;
    for line in stderr.lines() {
        let Some(rest) = line.strip_prefix("libbpf: prog '") else {
            continue;
        };
        let (program, rest) = rest.split_once("': relo #").unwrap();
        let (relo, rest) = rest.split_once(": ").unwrap();
        if rest.starts_with('<') {
            pairs.insert((program.to_string(), relo.parse().unwrap()));
            count += 1;
        }
    }
    (pairs, count)
}

#[test]
fn debug_log_has_one_spec_line_per_relocation() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli_log");
    std::fs::create_dir_all(&dir).unwrap();
    for (target, object) in [
        ("targets/btf__fields.btf", "progs/fields.bpf.o"),
        ("targets/btf__enums.btf", "progs/enums.bpf.o"),
        ("targets/btf__ambiguous_off.btf", "progs/ambiguous.bpf.o"),
    ] {
        let (target, object) = (data(target), data(object));
        let out_btf = dir.join("min.btf");
        let args = [
            target.to_str().unwrap(),
            out_btf.to_str().unwrap(),
            object.to_str().unwrap(),
        ];
        let debug = btfgen(&[&["-d", "min-core-btf"][..], &args].concat());
        let stderr = String::from_utf8(debug.stderr).unwrap();
        let want = relocations(&target, &object);
        let (got, count) = spec_lines(&stderr);
        assert!(!want.is_empty());
        assert_eq!(got, want, "{}", object.display());
        assert_eq!(count, want.len(), "{}", object.display());
        assert!(stderr.contains("libbpf: sec 'raw_tp/sys_enter': found "));

        // Without -d: no debug lines, only warnings (`libbpf: ...` without a spec) and, unless
        // it failed, the summary; with -q: nothing at all but the error of a failing run.
        let normal = btfgen(&[&["min-core-btf"][..], &args].concat());
        let normal_err = String::from_utf8(normal.stderr).unwrap();
        assert_eq!(spec_lines(&normal_err).1, 0);
        assert!(!normal_err.contains("matching candidate"));
        let quiet = btfgen(&[&["-q", "min-core-btf"][..], &args].concat());
        let quiet_err = String::from_utf8(quiet.stderr).unwrap();
        assert_eq!(quiet.status.success(), normal.status.success());
        assert!(!quiet_err.contains("libbpf: "), "{quiet_err}");
        if quiet.status.success() {
            assert_eq!(quiet_err, "");
            assert!(
                normal_err
                    .lines()
                    .last()
                    .unwrap()
                    .starts_with("btfgen: 1 object(s)")
            );
        } else {
            assert_eq!(quiet_err.lines().count(), 1, "{quiet_err}");
            assert!(normal_err.contains("ambiguity"), "{normal_err}");
        }
    }
}

/// The warnings of a run of several objects are those of each object alone, in the objects'
/// order, none lost or doubled.
#[test]
fn warnings_of_several_objects_come_in_their_order() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli_log_order");
    std::fs::create_dir_all(&dir).unwrap();
    let target = data("targets/btf__memsize.btf");
    let out_btf = dir.join("min.btf");
    let warnings = |objects: &[&str]| {
        let mut args = vec![
            "min-core-btf".to_string(),
            target.display().to_string(),
            out_btf.display().to_string(),
        ];
        args.extend(objects.iter().map(|o| data(o).display().to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = btfgen(&args);
        let stderr = String::from_utf8(run.stderr).unwrap();
        assert!(run.status.success(), "{stderr}");
        stderr
            .lines()
            .filter(|l| l.starts_with("libbpf: "))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let memsize = warnings(&["progs/memsize.bpf.o"]);
    let fields = warnings(&["progs/fields.bpf.o"]);
    assert!(!memsize.is_empty());
    let all = warnings(&[
        "progs/fields.bpf.o",
        "progs/memsize.bpf.o",
        "progs/fields.bpf.o",
        "progs/memsize.bpf.o",
    ]);
    assert_eq!(all, [&fields[..], &memsize, &fields, &memsize].concat());
}
