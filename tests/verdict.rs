//! Load verdicts of `guards.bpf.o` (tests/data/progs/guards.bpf.c) against
//! `btf__guards.btf`, where every guarded field, type, enumerator and type match is missing.
//! The expectations are written by hand from the C source; `verdict_matches_kernel` then loads
//! each entry program into the running kernel with libbpf and that BTF as `btf_custom_path`
//! and checks the verifier agrees.

use btfgen::btf::Btf;
use btfgen::core::relocate::{RelocatedObject, relocate_object};
use btfgen::core::verdict::{EntryProgram, Evidence, Verdict, callers, describe, entry_programs};
use btfgen::core::{CandidateIndex, Targets};
use btfgen::log::LibbpfLog;
use btfgen::object::BpfObject;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

fn read(rel: &str) -> Vec<u8> {
    std::fs::read(data_dir().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Relocate `obj_bytes` against `target_bytes` and hand the verdicts with the texts of their
/// evidence to `check`.
fn with_verdicts(
    obj_bytes: &[u8],
    target_bytes: &[u8],
    check: impl FnOnce(&[EntryProgram<'_>], &dyn Fn(&Evidence) -> String, &RelocatedObject<'_, '_>),
) {
    let obj = BpfObject::parse(obj_bytes).unwrap();
    let local = Btf::parse(obj.btf_bytes().unwrap()).unwrap();
    let target = Btf::parse(target_bytes).unwrap();
    let targets = Targets::new(&target);
    let mut index = CandidateIndex::new();
    let relocated = relocate_object(&obj, &local, &targets, &mut index, &mut LibbpfLog).unwrap();
    let programs = entry_programs(&obj, &local, &relocated).unwrap();
    let text = |e: &Evidence| describe(e, &local, &relocated).to_string();
    check(&programs, &text, &relocated);
}

const OBJ: &str = "progs/guards.bpf.o";
const GUARDS_BTF: &str = "targets/btf__guards.btf";
const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

/// Per entry program of guards.bpf.o against btf__guards.btf: the verdict and each evidence
/// item as `tag text`. Instruction numbers are read off `llvm-objdump -d` of the object
/// (entry-relative; appended sub-programs follow the entry's last instruction), relo numbers
/// are the records' order in each section (`.text`: has_gone #0, read_gone #1, loop_cb #2,
/// gone_exists_global #3, never_called #4).
const GUARDS: &[(&str, Verdict, &[&str])] = &[
    (
        "guard_if",
        Verdict::Loads,
        &[
            "guarded insn 3: if r2 == 0 goto +8, r2 = field_exists(struct gd_task.gone) = 0 \
           -> insn 4 (relo #1, poisoned) is dead",
        ],
    ),
    (
        "guard_ternary",
        Verdict::Loads,
        &[
            "guarded insn 2: if r1 == 0 goto +9, r1 = field_exists(struct gd_task.gone) = 0 \
           -> insn 3 (relo #3, poisoned) is dead",
        ],
    ),
    (
        "guard_and",
        Verdict::Loads,
        &[
            "guarded insn 5: if r2 == 0 goto +8, r2 = field_exists(struct gd_task.gone2) = 0 \
           -> insn 6 (relo #7, poisoned) is dead",
        ],
    ),
    (
        "guard_or",
        Verdict::Loads,
        &[
            "guarded insn 3: if r2 == 0 goto +10, r2 = field_exists(struct gd_task.gone) = 0 \
           -> insn 4 .. -> insn 6 (relo #10, poisoned) is dead",
        ],
    ),
    (
        "guard_type",
        Verdict::Loads,
        &[
            "guarded insn 3: if r2 == 0 goto +8, r2 = type_exists(struct gd_missing) = 0 \
           -> insn 4 (relo #12, poisoned) is dead",
        ],
    ),
    (
        "guard_enum",
        Verdict::Loads,
        &[
            "guarded insn 2: if r1 == 0 goto +3, r1 = enumval_exists(enum gd_state::GD_GONE) = 0 \
           -> insn 3 (relo #14, poisoned) is dead",
        ],
    ),
    (
        "guard_matches",
        Verdict::Loads,
        &[
            "guarded insn 2: if r1 == 0 goto +9, r1 = type_matches(struct gd_shape) = 0 \
           -> insn 3 (relo #17, poisoned) is dead",
        ],
    ),
    (
        // Spilled at insn 3 (`*(u64 *)(r10 - 8) = r1`), filled at insn 5.
        "guard_spilled",
        Verdict::Loads,
        &[
            "guarded insn 6: if r1 == 0 goto +11, r1 = field_exists(struct gd_task.gone) = 0 \
           -> insn 7 (relo #20, poisoned) is dead",
        ],
    ),
    (
        // has_gone (appended at 17) returns the relocated constant in r0.
        "guard_subprog",
        Verdict::Loads,
        &[
            "guarded insn 6: if r0 == 0 goto +8, r0 = field_exists(struct gd_task.gone) = 0 \
           -> insn 7 (relo #21, poisoned) is dead",
        ],
    ),
    (
        // read_gone is appended at 7; the dead edge is its call at 5.
        "guard_shared",
        Verdict::Loads,
        &[
            "guarded insn 4: if r2 == 0 goto +1, r2 = field_exists(struct gd_task.gone) = 0 \
           -> insn 5 .. -> insn 8 (relo #1, poisoned) is dead",
        ],
    ),
    (
        "shared_unguarded",
        Verdict::Rejected,
        &[
            "reached insn 5: poisoned relo #1 byte_off(struct gd_task.gone) is reached on every path",
        ],
    ),
    (
        // loop_cb is appended at 11 and explored as bpf_loop's callback.
        "loop_poison",
        Verdict::Rejected,
        &[
            "reached insn 13: poisoned relo #2 byte_off(struct gd_task.gone2) is reached on every path",
        ],
    ),
    (
        "unguarded",
        Verdict::Rejected,
        &[
            "reached insn 2: poisoned relo #0 byte_off(struct gd_task.gone) is reached on every path",
        ],
    ),
    (
        "rodata_flag",
        Verdict::Unknown,
        &[
            "load_time insn 4: if r1 == 0 goto +9, r1 = load-time value (known only at load time) \
           -> insn 5 (relo #2, poisoned) may be reached",
        ],
    ),
    (
        // gone_exists_global (appended at 18) is checked on its own; r0 is unknown here.
        "guard_global",
        Verdict::Rejected,
        &[
            "reached insn 8: poisoned relo #4 byte_off(struct gd_task.gone) is reached past \
           insn 7: if r0 == 0 goto +8, r0 = unknown",
        ],
    ),
];

/// Against the running kernel's BTF no gd_* type exists: every existence check is 0 and every
/// field read poisoned, so also the unguarded reads (`pid`, `tgid`, `a`, `GD_A`) of
/// guard_ternary, guard_enum, guard_matches and rodata_flag (there on both edges of the
/// load-time branch: rejected whatever the loader sets).
const VMLINUX_VERDICTS: &[(&str, Verdict)] = &[
    ("guard_if", Verdict::Loads),
    ("guard_ternary", Verdict::Rejected),
    ("guard_and", Verdict::Loads),
    ("guard_or", Verdict::Loads),
    ("guard_type", Verdict::Loads),
    ("guard_enum", Verdict::Rejected),
    ("guard_matches", Verdict::Rejected),
    ("guard_spilled", Verdict::Loads),
    ("guard_subprog", Verdict::Loads),
    ("guard_shared", Verdict::Loads),
    ("shared_unguarded", Verdict::Rejected),
    ("loop_poison", Verdict::Rejected),
    ("unguarded", Verdict::Rejected),
    ("rodata_flag", Verdict::Rejected),
    ("guard_global", Verdict::Rejected),
];

fn vmlinux() -> Option<Vec<u8>> {
    match std::fs::read(VMLINUX) {
        Ok(bytes) => Some(bytes),
        Err(e) => {
            println!("SKIP: {VMLINUX}: {e}");
            None
        }
    }
}

#[test]
fn guards_against_btf_guards() {
    with_verdicts(&read(OBJ), &read(GUARDS_BTF), |programs, text, _| {
        let names: Vec<_> = programs.iter().map(|p| p.program).collect();
        let expected: Vec<_> = GUARDS.iter().map(|g| g.0).collect();
        assert_eq!(
            names, expected,
            "entry programs (sub-programs are not rows)"
        );
        for (program, (name, verdict, evidence)) in programs.iter().zip(GUARDS) {
            let got: Vec<String> = program
                .evidence
                .iter()
                .map(|e| format!("{} {}", e.tag(), text(e)))
                .collect();
            assert_eq!(program.verdict, *verdict, "{name}: {got:#?}");
            assert_eq!(got, *evidence, "{name}");
        }
    });
}

#[test]
fn sub_program_relocations_are_charged_to_every_caller() {
    with_verdicts(&read(OBJ), &read(GUARDS_BTF), |programs, _, relocated| {
        let read_gone = relocated
            .relocations
            .iter()
            .position(|r| r.section == ".text" && r.relo == 1)
            .expect("read_gone's byte_off");
        assert_eq!(relocated.relocations[read_gone].program, "read_gone");
        let got: Vec<_> = callers(programs, read_gone).collect();
        assert_eq!(got, ["guard_shared", "shared_unguarded"]);
        let in_caller = programs
            .iter()
            .find(|p| p.program == "shared_unguarded")
            .and_then(|p| p.relocations.iter().find(|r| r.relocation == read_gone))
            .expect("appended");
        assert_eq!((in_caller.insn, in_caller.in_subprog), (5, true));
        let loop_cb = relocated
            .relocations
            .iter()
            .position(|r| r.program == "loop_cb")
            .expect("loop_cb's relocation");
        assert_eq!(
            callers(programs, loop_cb).collect::<Vec<_>>(),
            ["loop_poison"]
        );
        // has_gone's guard is charged to guard_subprog only.
        let has_gone = relocated
            .relocations
            .iter()
            .position(|r| r.program == "has_gone")
            .expect("has_gone's relocation");
        assert_eq!(
            callers(programs, has_gone).collect::<Vec<_>>(),
            ["guard_subprog"]
        );
        // never_called is appended to no entry program.
        let never_called = relocated
            .relocations
            .iter()
            .position(|r| r.program == "never_called")
            .expect("never_called's relocation");
        assert_eq!(callers(programs, never_called).count(), 0);
    });
}

#[test]
fn guards_against_running_kernel() {
    let Some(vmlinux) = vmlinux() else { return };
    with_verdicts(&read(OBJ), &vmlinux, |programs, text, _| {
        let got: Vec<_> = programs.iter().map(|p| (p.program, p.verdict)).collect();
        assert_eq!(
            got,
            VMLINUX_VERDICTS,
            "{:#?}",
            programs
                .iter()
                .map(|p| (p.program, p.evidence.iter().map(text).collect::<Vec<_>>()))
                .collect::<Vec<_>>()
        );
    });
}

/// What the kernel did with one program (`c-tests/verifier_load.c`'s `outcome`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kernel {
    Loaded,
    /// The verifier refused it at libbpf's poisoned call.
    Poison,
    /// Refused for a reason that is not a poison: `relo_failed` (libbpf, at a CO-RE
    /// relocation) or `other` (an attach target this kernel lacks, ...), with the loader's detail.
    Refused(String),
}

/// Build `c-tests/verifier_load.c` against libbpf 1.7 (target/libbpf-1.7) or the system's.
fn build_loader() -> Result<PathBuf, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("verifier_load");
    let libbpf17 = root.join("target/libbpf-1.7");
    let mut cc = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()));
    cc.args(["-O2", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&out)
        .arg(root.join("c-tests/verifier_load.c"))
        .arg(root.join("c-tests/harness.c"));
    if libbpf17.join("lib/libbpf.a").exists() {
        cc.arg(format!("-I{}", libbpf17.join("include").display()))
            .arg(libbpf17.join("lib/libbpf.a"));
    } else {
        cc.arg("-lbpf");
    }
    cc.args(["-lelf", "-lz"]);
    match cc.output() {
        Ok(o) if o.status.success() => Ok(out),
        Ok(o) => Err(format!(
            "cannot build c-tests/verifier_load.c: {}",
            String::from_utf8_lossy(&o.stderr)
        )),
        Err(e) => Err(format!("cannot run cc: {e}")),
    }
}

/// verifier_load's exit status where it cannot run here (bpf() refused).
const EXIT_SKIP: i32 = 77;

/// Load every entry program of `obj` with `btf` as `btf_custom_path` (and every `.rodata`
/// int set to `rodata`), or `None` (printed as `SKIP:`) where bpf() is refused.
fn kernel_outcomes(
    loader: &Path,
    obj: &Path,
    btf: &Path,
    rodata: Option<i32>,
) -> Option<Vec<(String, Kernel)>> {
    let mut cmd = Command::new(loader);
    if let Some(v) = rodata {
        cmd.arg("-r").arg(v.to_string());
    }
    cmd.arg(obj).arg(btf);
    let out = cmd.output().expect("run verifier_load");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(EXIT_SKIP) {
        println!("SKIP: verifier_load {}: {stderr}", obj.display());
        return None;
    }
    assert!(
        out.status.success(),
        "verifier_load {}: {}: {stderr}",
        obj.display(),
        out.status
    );
    let outcomes = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let record: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
            let field = |key: &str| {
                record[key]
                    .as_str()
                    .unwrap_or_else(|| panic!("no {key} in {line}"))
                    .to_string()
            };
            let outcome = match field("outcome").as_str() {
                "loaded" => Kernel::Loaded,
                "poison" => Kernel::Poison,
                other => Kernel::Refused(format!("{other}: {}", field("detail"))),
            };
            (field("program"), outcome)
        })
        .collect();
    Some(outcomes)
}

/// The loader, built once for all tests (they run in parallel), or why the kernel comparison
/// is skipped (printed as `SKIP:`).
fn loader() -> Option<PathBuf> {
    static LOADER: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    LOADER
        .get_or_init(build_loader)
        .clone()
        .map_err(|why| println!("SKIP: {why}"))
        .ok()
}

/// The static verdict agrees with the running kernel's verifier: never `loads` where it
/// rejects at a poison, never `rejected` where it loads; `unknown` programs go either way as
/// the loader-set value decides.
#[test]
fn verdict_matches_kernel() {
    let Some(loader) = loader() else { return };
    let mut targets = vec![(data_dir().join(GUARDS_BTF), read(GUARDS_BTF))];
    if let Some(vmlinux) = vmlinux() {
        targets.push((PathBuf::from(VMLINUX), vmlinux));
    }
    let obj = data_dir().join(OBJ);
    for (path, bytes) in &targets {
        let Some(outcomes) = kernel_outcomes(&loader, &obj, path, None) else {
            return;
        };
        let Some(flag_set) = kernel_outcomes(&loader, &obj, path, Some(1)) else {
            return;
        };
        with_verdicts(&read(OBJ), bytes, |programs, _, _| {
            assert_eq!(programs.len(), outcomes.len(), "{}", path.display());
            for ((program, (name, outcome)), (_, flagged)) in
                programs.iter().zip(&outcomes).zip(&flag_set)
            {
                assert_eq!(program.program, name);
                let at = format!("{name} against {}", path.display());
                match program.verdict {
                    Verdict::Loads => {
                        assert_eq!(*outcome, Kernel::Loaded, "{at}");
                        assert_eq!(*flagged, Kernel::Loaded, "{at}, .rodata set");
                    }
                    Verdict::Rejected => {
                        assert_eq!(*outcome, Kernel::Poison, "{at}");
                        assert_eq!(*flagged, Kernel::Poison, "{at}, .rodata set");
                    }
                    // Only rodata_flag, and the flag decides: the kernel prunes the poison
                    // with use_gone = 0 and reaches it with use_gone = 1.
                    Verdict::Unknown => {
                        assert_eq!(
                            (outcome, flagged),
                            (&Kernel::Loaded, &Kernel::Poison),
                            "{at}"
                        );
                    }
                    Verdict::Failed => panic!("{at}: no relocation of guards.bpf.o fails"),
                }
            }
        });
    }
}

/// The benchmark's libbpf-tools-style objects (`benches/objs`) against the running kernel:
/// every program the kernel loads or rejects at a poison has the matching verdict. Programs
/// it refuses for another reason (an attach target it lacks) say nothing about poisons.
#[test]
fn bench_objects_match_kernel() {
    let Some(loader) = loader() else { return };
    let Some(vmlinux) = vmlinux() else { return };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/objs");
    let mut objects: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "o"))
        .collect();
    objects.sort();
    assert!(!objects.is_empty(), "no objects in {}", dir.display());
    let (mut compared, mut poisons) = (0, 0);
    for obj in &objects {
        let Some(outcomes) = kernel_outcomes(&loader, obj, Path::new(VMLINUX), None) else {
            return;
        };
        with_verdicts(
            &std::fs::read(obj).unwrap(),
            &vmlinux,
            |programs, text, _| {
                assert_eq!(programs.len(), outcomes.len(), "{}", obj.display());
                for (program, (name, outcome)) in programs.iter().zip(&outcomes) {
                    assert_eq!(program.program, name);
                    let evidence: Vec<_> = program.evidence.iter().map(text).collect();
                    let at = format!("{} {name}: {evidence:#?}", obj.display());
                    let expected = match outcome {
                        Kernel::Loaded => Verdict::Loads,
                        Kernel::Poison => Verdict::Rejected,
                        Kernel::Refused(why) => {
                            println!("note: {at}: the kernel refuses it ({why}), not compared");
                            continue;
                        }
                    };
                    assert_eq!(program.verdict, expected, "{at}");
                    compared += 1;
                    poisons += usize::from(*outcome == Kernel::Poison);
                }
            },
        );
    }
    if compared == 0 {
        println!("SKIP: the kernel loaded none of the programs (bpf() refused?)");
        return;
    }
    println!("{compared} programs agree with the verifier, {poisons} of them rejected at a poison");
}

/// Relocations libbpf fails on make their program `failed`, each failed one an evidence item;
/// the pass still assembles the program from the partly relocated sections. Against
/// btf__ambiguous_off both `amb` flavors match with `b` at different offsets, so relo #1
/// (`byte_off` of `b`), #2 (`byte_sz` of `b`: the offsets disagree too) and #3
/// (`target_type_id`: two ids) are ambiguous; #0 (`amb_ok.z`) relocates.
#[test]
fn failed_relocation_fails_its_program() {
    let obj = read("progs/ambiguous.bpf.o");
    with_verdicts(
        &obj,
        &read("targets/btf__ambiguous_off.btf"),
        |programs, text, relocated| {
            let [program] = programs else {
                panic!("one entry program: {programs:?}")
            };
            assert_eq!(program.program, "amb_read");
            assert_eq!(program.verdict, Verdict::Failed);
            let failed: Vec<u32> = program
                .evidence
                .iter()
                .map(|e| {
                    assert_eq!(e.tag(), "failed", "{}", text(e));
                    relocated.relocations[e.relocation().unwrap()].relo
                })
                .collect();
            assert_eq!(failed, [1, 2, 3]);
            assert_eq!(program.relocations.len(), 4);
            assert!(
                text(&program.evidence[0]).contains("relo #1 byte_off(struct amb.b) failed"),
                "{}",
                text(&program.evidence[0])
            );
        },
    );
}

/// The manifest's fixtures for the running kernel (task, multi, calls: a global function, a
/// `bpf_loop` callback, nested static calls), which `tests/kernel_load.rs` loads into it, all
/// load by this pass too, with their guarded reads dead: task's read of `task_struct___old`'s
/// `state` (poisoned: kernels since 5.14 have no `state`) behind `if (field_exists(__state))`.
#[test]
fn running_kernel_fixtures_load() {
    let Some(vmlinux) = vmlinux() else { return };
    let mut guarded = Vec::new();
    for obj in ["progs/task.bpf.o", "progs/multi.bpf.o", "progs/calls.bpf.o"] {
        with_verdicts(&read(obj), &vmlinux, |programs, text, _| {
            assert!(!programs.is_empty(), "{obj}");
            for p in programs {
                let evidence: Vec<_> = p.evidence.iter().map(text).collect();
                assert_eq!(
                    p.verdict,
                    Verdict::Loads,
                    "{obj} {}: {evidence:#?}",
                    p.program
                );
                assert!(
                    p.evidence.iter().all(|e| e.tag() == "guarded"),
                    "{evidence:#?}"
                );
                guarded.extend(evidence);
            }
        });
    }
    assert!(
        guarded
            .iter()
            .any(|e| e.contains("field_exists(struct task_struct.__state) = 1 -> ")),
        "{guarded:#?}"
    );
}
