//! A kernel module's debug `.ko` to split BTF over its kernel's (`btfgen::btf::split`,
//! `btfgen encode --base-btf`, debug modules in `--module-btf` and `--module-btf-dir`)
//! against pahole: `tests/data/dwarf/kmod.c`, compiled by gcc and clang-19 as a relocatable
//! object (its `.rela.debug_*` applied, as a real module's), over `kbase.c`'s BTF; pahole's
//! split BTF of it (`pahole -J --btf_base`, committed by `tests/data/dwarf/build.sh`) is the
//! reference. The module has a struct equal to the base's (`kb_device`, whose `kb_driver` it
//! sees only declared), a struct named like a base struct but laid out otherwise
//! (`kb_conf`), and types of its own.

mod dwarf_common;

use btfgen::btf::Btf;
use btfgen::btf::split::SplitBase;
use dwarf_common::{canonical, data, difference};
use std::path::{Path, PathBuf};
use std::process::Output;

const COMPILERS: [&str; 2] = ["gcc", "clang-19"];

fn base_btf(cc: &str) -> String {
    format!("kbase-{cc}-dwarf5.pahole.btf")
}

fn module_ko(cc: &str) -> String {
    format!("kmod-{cc}-dwarf5-rel.ko")
}

fn pahole_split(cc: &str) -> String {
    format!("kmod-{cc}-dwarf5-rel.pahole.btf")
}

/// Split BTF `ours` over `our_base` has the types of pahole's `theirs` over `their_base`,
/// modulo ids and order (a reference to a base type is rendered by name, so the two bases
/// may number their types otherwise), and as many.
fn assert_same_split(ours: &[u8], our_base: &[u8], theirs: &[u8], their_base: &[u8], what: &str) {
    let our_base = Btf::parse(our_base).unwrap();
    let their_base = Btf::parse(their_base).unwrap();
    let ours = Btf::parse_split(ours, &our_base).unwrap_or_else(|e| panic!("{what}: {e}"));
    let theirs = Btf::parse_split(theirs, &their_base).unwrap();
    let (a, b) = (canonical(&ours), canonical(&theirs));
    assert!(a == b, "{what}: they differ:\n{}", difference(&a, &b));
    assert_eq!(
        ours.type_cnt() - ours.start_id(),
        theirs.type_cnt() - theirs.start_id(),
        "{what}: split type count"
    );
}

/// The library, over pahole's BTF of the base and over btfgen's conversion of the base's
/// DWARF (whose ids need not be pahole's).
#[test]
fn split_equals_pahole() {
    for cc in COMPILERS {
        let module = btfgen::dwarf::to_btf(&data(&module_ko(cc)), None).unwrap();
        let module = Btf::parse(&module).unwrap();
        let reference = data(&pahole_split(cc));
        let pahole_base = data(&base_btf(cc));
        let dwarf_base =
            btfgen::dwarf::to_btf(&data(&format!("kbase-{cc}-dwarf5.so")), None).unwrap();
        for (base, what) in [(&pahole_base, "pahole's base"), (&dwarf_base, "DWARF base")] {
            let parsed = Btf::parse(base).unwrap();
            let split = SplitBase::new(&parsed).unwrap().split(&module).unwrap();
            let what = format!("{cc}, over {what}");
            assert_same_split(&split.bytes, base, &reference, &pahole_base, &what);
            assert!(
                split.named_in_base > 0 && split.named > split.named_in_base,
                "{what}"
            );
        }
    }
}

/// What pahole's reference shows of the three cases, and that btfgen's split has the same:
/// the equal struct and the declared one are the base's, the other `kb_conf` the module's.
#[test]
fn equal_declared_and_same_named_structs() {
    for cc in COMPILERS {
        let base = data(&base_btf(cc));
        let base = Btf::parse(&base).unwrap();
        let module = btfgen::dwarf::to_btf(&data(&module_ko(cc)), None).unwrap();
        let ours = SplitBase::new(&base)
            .unwrap()
            .split(&Btf::parse(&module).unwrap())
            .unwrap();
        let theirs = data(&pahole_split(cc));
        for bytes in [&ours.bytes, &theirs] {
            let split = Btf::parse_split(bytes, &base).unwrap();
            let own_named = |name: &str| {
                (split.start_id()..split.type_cnt())
                    .filter(|&id| {
                        let ty = split.type_by_id(id).unwrap();
                        split.name(ty.name_off).unwrap() == name
                    })
                    .count()
            };
            assert_eq!(own_named("kb_device"), 0, "{cc}");
            assert_eq!(own_named("kb_driver"), 0, "{cc}");
            assert_eq!(own_named("kb_conf"), 1, "{cc}");
            assert_eq!(own_named("kmod_priv"), 1, "{cc}");
        }
    }
}

fn btfgen(args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_btfgen"))
        .args(args)
        .current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/dwarf"))
        .output()
        .unwrap()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("btfgen-split-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// `btfgen encode --base-btf`: pahole's types, over a BTF base and over a DWARF one, and the
/// same bytes on every run.
#[test]
fn cli_encode_base_btf_equals_pahole_and_repeats() {
    let dir = temp_dir("encode");
    for cc in COMPILERS {
        let so = format!("kbase-{cc}-dwarf5.so");
        for base in [base_btf(cc), so.clone()] {
            let (one, two) = (dir.join("one.btf"), dir.join("two.btf"));
            for out in [&one, &two] {
                ok(&btfgen(&[
                    "encode",
                    "--base-btf",
                    &base,
                    &module_ko(cc),
                    s(out),
                ]));
            }
            let written = std::fs::read(&one).unwrap();
            assert_eq!(written, std::fs::read(&two).unwrap(), "{cc} over {base}");
            let our_base = match base.ends_with(".so") {
                true => btfgen::dwarf::to_btf(&data(&so), None).unwrap(),
                false => data(&base),
            };
            assert_same_split(
                &written,
                &our_base,
                &data(&pahole_split(cc)),
                &data(&base_btf(cc)),
                &format!("{cc} over {base}"),
            );
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Each relocation's JSON line with the target's id left out ("[40] struct kmod_priv" is
/// "struct kmod_priv"): the ids of two splits may differ, nothing else may.
fn relocations(args: &[&str]) -> Vec<String> {
    let out = ok(&btfgen(args));
    out.lines()
        .map(|line| {
            let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(t) = v
                .get_mut("target")
                .and_then(|t| t.as_str().map(String::from))
            {
                let name = t
                    .split_once("] ")
                    .map_or(t.as_str(), |(_, n)| n)
                    .to_string();
                v["target"] = name.into();
            }
            v.to_string()
        })
        .collect()
}

/// A BPF object relocating into module types relocates alike against the base with pahole's
/// split BTF, with btfgen's, and with the debug `.ko` itself as `--module-btf`, over a BTF
/// base or the base's DWARF.
#[test]
fn cli_relocate_against_debug_module_equals_pahole_split() {
    let dir = temp_dir("relocate");
    for cc in COMPILERS {
        let ours = dir.join("ours.btf");
        let base = base_btf(cc);
        ok(&btfgen(&[
            "encode",
            "--base-btf",
            &base,
            &module_ko(cc),
            s(&ours),
        ]));
        let reloc = |base: &str, module: &str| {
            relocations(&[
                "relocate",
                "--json",
                "--btf",
                base,
                "--module-btf",
                module,
                "kmod.bpf.o",
            ])
        };
        let theirs = reloc(&base, &pahole_split(cc));
        // Into the module's types, resolved: the relocations are worth comparing.
        assert!(
            theirs
                .iter()
                .any(|l| l.contains("\"struct kmod_priv\"") && l.contains("\"poison\":false")),
            "{theirs:?}"
        );
        assert_eq!(reloc(&base, s(&ours)), theirs, "{cc}: btfgen's split");
        assert_eq!(reloc(&base, &module_ko(cc)), theirs, "{cc}: the debug .ko");
        let so = format!("kbase-{cc}-dwarf5.so");
        assert_eq!(
            reloc(&so, &module_ko(cc)),
            theirs,
            "{cc}: over the DWARF base"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `min-core-btf --module-btf-dir` over a tree like `/usr/lib/debug/lib/modules/KVER/`:
/// nested debug `.ko` files, converted in the module fallback only if their DWARF may name a
/// wanted type the base lacks (the other modules there, of another kernel, would fail the run
/// if they were converted), minimize as a directory with pahole's split BTF.
#[test]
fn cli_module_dir_of_debug_modules() {
    let dir = temp_dir("moddir");
    let (debug, btf) = (dir.join("debug"), dir.join("btf"));
    let nested = debug.join("kernel/drivers/kb");
    std::fs::create_dir_all(&nested).unwrap();
    std::fs::create_dir_all(&btf).unwrap();
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/dwarf");
    std::fs::copy(fixtures.join(module_ko("gcc")), nested.join("kmod.ko")).unwrap();
    std::fs::copy(fixtures.join("gcc-dwarf5-rel.ko"), nested.join("other.ko")).unwrap();
    std::fs::copy(fixtures.join(pahole_split("gcc")), btf.join("kmod")).unwrap();
    // A module of another kernel whose DWARF names kb_list (a member's name, here), which
    // kbase.bpf.o wants and the base has: libbpf never looks for it in a module, so this one
    // is not converted either (it would fail the run).
    let mut names_base_type = std::fs::read(fixtures.join("gcc-dwarf5-rel.ko")).unwrap();
    let at = names_base_type
        .windows(8)
        .position(|w| w == b"\0ret_ptr")
        .unwrap();
    names_base_type[at + 1..at + 8].copy_from_slice(b"kb_list");
    std::fs::write(nested.join("names-kb-list.ko"), &names_base_type).unwrap();
    let minimize = |modules: &Path, out: &Path| {
        ok(&btfgen(&[
            "min-core-btf",
            "--module-btf-dir",
            s(modules),
            &base_btf("gcc"),
            s(out),
            "kmod.bpf.o",
            "kbase.bpf.o",
        ]));
        std::fs::read(out).unwrap()
    };
    let ours = minimize(&debug, &dir.join("ours.btf"));
    let theirs = minimize(&btf, &dir.join("theirs.btf"));
    assert_eq!(ours, theirs);
    // Given by name, the other module is converted, and is not of this kernel.
    let out = btfgen(&[
        "relocate",
        "--btf",
        &base_btf("gcc"),
        "--module-btf",
        s(&nested.join("other.ko")),
        "kmod.bpf.o",
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("other.ko: not a module of this base") && stderr.contains(&base_btf("gcc")),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Bad inputs: a base that is not the module's kernel, a truncated `.ko`, a truncated base.
#[test]
fn bad_inputs_are_clear_errors() {
    let dir = temp_dir("bad");
    let out = dir.join("out.btf");
    let fail = |args: &[&str], wanted: &[&str]| {
        let run = btfgen(args);
        assert!(!run.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&run.stderr);
        for w in wanted {
            assert!(stderr.contains(w), "{args:?}: {stderr}");
        }
        assert!(!out.exists());
    };
    let ko = module_ko("gcc");
    fail(
        &[
            "encode",
            "--base-btf",
            "gcc-dwarf5.pahole.btf",
            &ko,
            s(&out),
        ],
        &[&ko, "not a module of this base", "gcc-dwarf5.pahole.btf"],
    );
    let bytes = data(&ko);
    let truncated = dir.join("truncated.ko");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    fail(
        &[
            "encode",
            "--base-btf",
            &base_btf("gcc"),
            s(&truncated),
            s(&out),
        ],
        &["truncated.ko", "malformed ELF"],
    );
    let base = data(&base_btf("gcc"));
    let short_base = dir.join("short.btf");
    std::fs::write(&short_base, &base[..base.len() - 9]).unwrap();
    fail(
        &["encode", "--base-btf", s(&short_base), &ko, s(&out)],
        &["short.btf"],
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
