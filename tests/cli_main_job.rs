//! The two user-facing jobs run as a user runs them: `btfgen relocate --json` on every fixture
//! pair of `tests/data/manifest.txt`, and `btfgen min-core-btf` (its output re-parses, is
//! deterministic across runs — every run has new hash seeds — and is never larger than the
//! input). Results are compared with libbpf itself by `c-tests/check_relocs.py`.

#[path = "support/cli.rs"]
mod cli;
#[path = "support/names.rs"]
mod names;

use btfgen::btf::Btf;
use cli::{BIN, btfgen, data};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

/// (object, target, base) of every manifest pair whose target exists here.
fn pairs() -> Vec<(PathBuf, PathBuf, Option<PathBuf>)> {
    let manifest = std::fs::read_to_string(data("manifest.txt")).unwrap();
    let mut out = Vec::new();
    for line in manifest.lines() {
        let words: Vec<&str> = line.split('#').next().unwrap().split_whitespace().collect();
        if words.len() < 2 {
            continue;
        }
        let target = if words[1] == "vmlinux" {
            PathBuf::from(VMLINUX)
        } else {
            data(words[1])
        };
        if !target.exists() {
            eprintln!("SKIP: {} not present", target.display());
            continue;
        }
        out.push((data(words[0]), target, words.get(2).map(|b| data(b))));
    }
    assert!(out.len() >= 10, "manifest lists the fixture pairs");
    out
}

/// The pairs where libbpf fails a relocation (tests/data/README.md): ambiguous flavors, and a
/// bitfield no 64-bit load can read.
fn libbpf_fails(obj: &Path, target: &Path) -> bool {
    let name = |p: &Path| p.file_name().unwrap().to_str().unwrap().to_string();
    name(obj).starts_with("ambiguous") || name(target) == "btf__bitfields_bad.btf"
}

fn target_args<'a>(target: &'a Path, base: &'a Option<PathBuf>) -> Vec<&'a str> {
    let mut args = vec![target.to_str().unwrap()];
    if let Some(base) = base {
        args.extend(["--base-btf", base.to_str().unwrap()]);
    }
    args
}

#[test]
fn relocate_json_reports_every_relocation_with_the_documented_keys() {
    for (obj, target, base) in pairs() {
        let mut args = vec!["relocate", "--json", "--btf"];
        args.extend(target_args(&target, &base));
        args.push(obj.to_str().unwrap());
        let out = btfgen(&args);
        let stdout = String::from_utf8(out.stdout).unwrap();
        let records: Vec<Value> = stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(!records.is_empty(), "{}: no relocations", obj.display());
        let mut failed = false;
        for r in &records {
            for key in [
                "object",
                "section",
                "program",
                "relo",
                "insn",
                "kind",
                "local_type",
                "access",
                "poison",
                "poison_reason",
                "orig",
                "new",
                "target",
            ] {
                assert!(
                    r.get(key).is_some(),
                    "{}: record without {key}: {r}",
                    obj.display()
                );
            }
            assert!(r["relo"].is_u64() && r["insn"].is_u64(), "{r}");
            assert!(r["poison"].is_boolean(), "{r}");
            assert_eq!(
                r["poison"].as_bool().unwrap(),
                ["no_candidate", "no_match", "size_not_adjustable"]
                    .contains(&r["poison_reason"].as_str().unwrap_or("")),
                "a poisoned relocation, and only one, names its reason: {r}"
            );
            if let Some(t) = r["target"].as_str() {
                assert!(t.starts_with('['), "target is `[ID] kind name`: {r}");
            }
            if r.get("error").is_some() {
                failed = true;
                assert!(r["new"].is_null(), "{r}");
            } else if !r["poison"].as_bool().unwrap() {
                assert!(r["orig"].is_u64() && r["new"].is_u64(), "{r}");
            }
        }
        assert_eq!(
            out.status.success(),
            !failed,
            "{}: exit status follows relocation errors",
            obj.display()
        );
        assert_eq!(
            failed,
            libbpf_fails(&obj, &target),
            "{} vs {}: fails exactly where libbpf fails",
            obj.display(),
            target.display()
        );
    }
}

#[test]
fn min_core_btf_output_is_valid_deterministic_and_small() {
    let dir = std::env::temp_dir().join(format!("btfgen-main-job-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (i, (obj, target, base)) in pairs().into_iter().enumerate() {
        if libbpf_fails(&obj, &target) {
            continue;
        }
        let mut outputs = Vec::new();
        for round in 0..3 {
            let out_path = dir.join(format!("{i}-{round}.btf"));
            let mut args = vec!["min-core-btf"];
            args.extend(target_args(&target, &base));
            args.push(out_path.to_str().unwrap());
            args.push(obj.to_str().unwrap());
            let out = btfgen(&args);
            assert!(
                out.status.success(),
                "{}: {}",
                obj.display(),
                String::from_utf8_lossy(&out.stderr)
            );
            outputs.push(std::fs::read(&out_path).unwrap());
        }
        assert!(
            outputs.windows(2).all(|w| w[0] == w[1]),
            "{}: output differs between runs",
            obj.display()
        );
        let btf = Btf::parse(&outputs[0]).expect("minimized BTF validates");
        assert!(btf.type_cnt() > 1, "{}: something was kept", obj.display());
        assert_eq!(
            names::name_not_at_string_start(&btf),
            None,
            "{}: every name offset starts a string",
            obj.display()
        );
        assert!(
            !names::last_type_reads_as_signed(&outputs[0]),
            "{}: libbpf <= 1.2 would read the last type as signed",
            obj.display()
        );
        let size = |p: &Path| std::fs::metadata(p).unwrap().len() as usize;
        let input_len = size(&target) + base.as_deref().map_or(0, size);
        assert!(
            outputs[0].len() < input_len,
            "{}: output smaller than input",
            obj.display()
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn min_core_btf_without_arguments_runs_the_embedded_default() {
    if !Path::new(VMLINUX).exists() {
        eprintln!("SKIP: {VMLINUX} absent");
        return;
    }
    let dir = std::env::temp_dir().join(format!("btfgen-default-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(BIN)
        .arg("min-core-btf")
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = String::from_utf8(out.stderr).unwrap();
    assert!(
        summary.contains("1 object(s)") && summary.contains("min.btf"),
        "summary: {summary}"
    );
    let bytes = std::fs::read(dir.join("min.btf")).unwrap();
    let btf = Btf::parse(&bytes).unwrap();
    let names: Vec<&str> = btf
        .types()
        .map(|t| btf.name(t.unwrap().name_off).unwrap())
        .collect();
    assert!(
        names.contains(&"task_struct") && names.contains(&"mm_struct"),
        "kept: {names:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn explain_names_the_relocations_behind_each_kept_member() {
    if !Path::new(VMLINUX).exists() {
        eprintln!("SKIP: {VMLINUX} absent");
        return;
    }
    let out_path = std::env::temp_dir().join(format!("btfgen-explain-{}.btf", std::process::id()));
    let obj = data("progs/task.bpf.o");
    let out = btfgen(&[
        "min-core-btf",
        VMLINUX,
        out_path.to_str().unwrap(),
        obj.to_str().unwrap(),
        "--explain",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("struct task_struct"), "{text}");
    assert!(text.contains(".pid ("), "{text}");
    assert!(
        text.contains("needed by") && text.contains("prog 'task_info' relo #"),
        "{text}"
    );
    std::fs::remove_file(&out_path).unwrap();
}

/// A module BTF given with `--module-btf` (searched only when the main BTF has no candidate, as
/// libbpf does with kernel modules) resolves the fixture's module-only types exactly as the
/// same split BTF used as the target itself, and the flattened outputs are identical.
#[test]
fn module_btf_candidates_resolve_like_the_split_target() {
    let (obj, base, module) = (
        data("progs/module.bpf.o"),
        data("targets/base.btf"),
        data("targets/module.btf"),
    );
    let (obj, base, module) = (
        obj.to_str().unwrap(),
        base.to_str().unwrap(),
        module.to_str().unwrap(),
    );
    let as_module = btfgen(&[
        "relocate",
        "--json",
        "--btf",
        base,
        "--module-btf",
        module,
        obj,
    ]);
    let as_split = btfgen(&[
        "relocate",
        "--json",
        "--btf",
        module,
        "--base-btf",
        base,
        obj,
    ]);
    assert!(as_module.status.success() && as_split.status.success());
    let strip_object = |out: &[u8]| -> Vec<Value> {
        String::from_utf8_lossy(out)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let (a, b) = (
        strip_object(&as_module.stdout),
        strip_object(&as_split.stdout),
    );
    let base_types = Btf::parse(&std::fs::read(base).unwrap())
        .unwrap()
        .type_cnt();
    let target_id = |r: &Value| -> Option<u32> {
        let t = r["target"].as_str()?;
        t[1..t.find(']')?].parse().ok()
    };
    assert!(
        a.iter().filter_map(target_id).any(|id| id >= base_types),
        "some targets are module types"
    );
    assert_eq!(
        a, b,
        "module candidates differ from split-target candidates"
    );

    let dir = std::env::temp_dir().join(format!("btfgen-module-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (one, two) = (dir.join("module.btf"), dir.join("split.btf"));
    let out1 = btfgen(&[
        "min-core-btf",
        base,
        one.to_str().unwrap(),
        obj,
        "--module-btf",
        module,
    ]);
    let out2 = btfgen(&[
        "min-core-btf",
        module,
        two.to_str().unwrap(),
        obj,
        "--base-btf",
        base,
    ]);
    assert!(
        out1.status.success(),
        "{}",
        String::from_utf8_lossy(&out1.stderr)
    );
    assert!(
        out2.status.success(),
        "{}",
        String::from_utf8_lossy(&out2.stderr)
    );
    assert_eq!(std::fs::read(&one).unwrap(), std::fs::read(&two).unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Without a kernel BTF (`BTFGEN_KERNEL_BTF` pointing nowhere), the default job falls back to
/// the example kernel BTF built into the binary, says so, and still minimizes.
#[test]
fn min_core_btf_without_kernel_btf_uses_the_example_kernel() {
    let dir = std::env::temp_dir().join(format!("btfgen-no-kernel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(BIN)
        .arg("min-core-btf")
        .env("BTFGEN_KERNEL_BTF", dir.join("no-such-btf"))
        .current_dir(&dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("using the example kernel BTF"), "{stderr}");
    let bytes = std::fs::read(dir.join("min.btf")).unwrap();
    let btf = Btf::parse(&bytes).unwrap();
    let names: Vec<&str> = btf
        .types()
        .map(|t| btf.name(t.unwrap().name_off).unwrap())
        .collect();
    assert!(
        names.contains(&"task_struct") && names.contains(&"perf_callchain_context"),
        "kept: {names:?}"
    );
    assert!(
        !names.contains(&"sched_entity"),
        "unrelated types are dropped: {names:?}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `relocate` follows libbpf 1.7 where it and 1.1 disagree: `memsize.bpf.o` against
/// `btf__memsize` (loads through array members, sized by one element since libbpf 1.6), with
/// both libbpfs' results as their `c-tests/libbpf_relocs` harnesses recorded them
/// (`tests/data/expected/`). The CI's differential check recomputes them; these copies keep the
/// point checked where BPF syscalls are refused.
#[test]
fn relocate_follows_libbpf_1_7_where_1_1_differs() {
    let out = btfgen(&[
        "relocate",
        "--json",
        "--btf",
        data("targets/btf__memsize.btf").to_str().unwrap(),
        data("progs/memsize.bpf.o").to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let records = |text: &str| -> Vec<Value> {
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let ours = records(&String::from_utf8(out.stdout).unwrap());
    let expected = |version: &str| {
        let path = data(&format!(
            "expected/memsize--btf__memsize.libbpf-{version}.jsonl"
        ));
        records(&std::fs::read_to_string(path).unwrap())
    };
    let (v17, v11) = (expected("1.7"), expected("1.1"));
    assert_eq!(ours.len(), v17.len());
    let keys = [
        "relo",
        "insn",
        "kind",
        "poison",
        "poison_reason",
        "orig",
        "new",
    ];
    // Target type ids of a plain BTF are the same for libbpf and btfgen; names too.
    let same =
        |a: &Value, b: &Value| keys.iter().all(|k| a[k] == b[k]) && a["target"] == b["target"];
    for (o, e) in ours.iter().zip(&v17) {
        assert!(same(o, e), "btfgen {o} / libbpf 1.7 {e}");
    }
    let differing = ours.iter().zip(&v11).filter(|(o, e)| !same(o, e)).count();
    assert_eq!(
        differing, 5,
        "libbpf 1.1 differs on five relocations of this fixture"
    );
}
