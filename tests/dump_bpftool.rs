//! `btfgen dump` must print byte-for-byte what `bpftool btf dump file` prints: on the running
//! kernel's BTF, on every fixture under tests/data/ (split pairs from its manifest with their
//! base), on module BTF under /sys/kernel/btf/, and on crafted blobs covering the kinds and
//! encodings vmlinux lacks. Tests that need bpftool skip loudly when it is not installed.

#[path = "support/raw_btf.rs"]
mod raw_btf;

use btfgen::btf::write::BtfWriter;
use btfgen::btf::{Btf, Endianness, Kind};
use std::path::{Path, PathBuf};
use std::process::Command;

const BTFGEN: &str = env!("CARGO_BIN_EXE_btfgen");
const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

/// The bpftool binary, `None` (after saying so) when it cannot be run.
fn bpftool() -> Option<PathBuf> {
    for candidate in ["bpftool", "/usr/sbin/bpftool", "/sbin/bpftool"] {
        let runs = Command::new(candidate).arg("version").output();
        if runs.is_ok_and(|o| o.status.success()) {
            return Some(PathBuf::from(candidate));
        }
    }
    eprintln!("SKIP: bpftool is not installed; btfgen dump is not compared with it");
    None
}

/// Stdout of `cmd` when it succeeds, its stderr otherwise.
fn run(cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {cmd:?}: {e}"))?;
    if out.status.success() {
        String::from_utf8(out.stdout).map_err(|e| format!("{cmd:?}: output not UTF-8: {e}"))
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

fn btfgen_dump(file: &Path, base: Option<&Path>) -> Result<String, String> {
    let mut cmd = Command::new(BTFGEN);
    cmd.arg("dump").arg(file);
    if let Some(base) = base {
        cmd.arg("--base-btf").arg(base);
    }
    run(&mut cmd)
}

fn bpftool_dump(bpftool: &Path, file: &Path, base: Option<&Path>) -> Result<String, String> {
    let mut cmd = Command::new(bpftool);
    if let Some(base) = base {
        cmd.arg("--base-btf").arg(base);
    }
    cmd.args(["btf", "dump", "file"]).arg(file);
    run(&mut cmd)
}

/// `None` when equal, else where the two dumps first part ways.
fn first_difference(ours: &str, theirs: &str) -> Option<String> {
    if ours == theirs {
        return None;
    }
    let (mut a, mut b) = (ours.split_inclusive('\n'), theirs.split_inclusive('\n'));
    for line in 1.. {
        match (a.next(), b.next()) {
            (Some(x), Some(y)) if x == y => continue,
            (x, y) => return Some(format!("line {line}:\n  btfgen:  {x:?}\n  bpftool: {y:?}")),
        }
    }
    unreachable!("unequal strings differ on some line")
}

/// How btfgen and bpftool agree on one input.
enum Outcome {
    Identical,
    /// Both refused the input; their messages.
    BothRejected(String, String),
}

/// Compare the two dumps of `file`; `Err` describes any disagreement.
fn compare(bpftool: &Path, file: &Path, base: Option<&Path>) -> Result<Outcome, String> {
    let what = match base {
        Some(base) => format!("{} (base {})", file.display(), base.display()),
        None => file.display().to_string(),
    };
    match (btfgen_dump(file, base), bpftool_dump(bpftool, file, base)) {
        (Ok(ours), Ok(theirs)) => match first_difference(&ours, &theirs) {
            None => Ok(Outcome::Identical),
            Some(diff) => Err(format!("{what}: dumps differ at {diff}")),
        },
        (Err(ours), Err(theirs)) => Ok(Outcome::BothRejected(ours, theirs)),
        (Ok(_), Err(theirs)) => Err(format!("{what}: bpftool fails ({theirs}), btfgen dumps")),
        (Err(ours), Ok(_)) => Err(format!("{what}: btfgen fails ({ours}), bpftool dumps")),
    }
}

/// Compare, requiring both tools to accept the input.
fn assert_identical(bpftool: &Path, file: &Path, base: Option<&Path>) {
    match compare(bpftool, file, base) {
        Ok(Outcome::Identical) => {}
        Ok(Outcome::BothRejected(ours, theirs)) => {
            panic!(
                "{}: both rejected it\n  btfgen:  {ours}\n  bpftool: {theirs}",
                file.display()
            )
        }
        Err(e) => panic!("{e}"),
    }
}

fn write_temp(name: &str, bytes: &[u8]) -> PathBuf {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn vmlinux_matches_bpftool() {
    let Some(bpftool) = bpftool() else { return };
    if !Path::new(VMLINUX).exists() {
        eprintln!("SKIP: {VMLINUX} does not exist");
        return;
    }
    assert_identical(&bpftool, Path::new(VMLINUX), None);
}

/// The real Linux 7.1 BTF, with its 32-byte header and layout section: the same 103,406
/// types as bpftool prints.
#[test]
fn linux_7_1_btf_matches_bpftool() {
    let file = write_temp("vmlinux-7.1.btf", &raw_btf::vmlinux_7_1());
    let ours = btfgen_dump(&file, None).unwrap();
    assert_eq!(ours.lines().filter(|l| l.starts_with('[')).count(), 103_406);
    let Some(bpftool) = bpftool() else { return };
    assert_identical(&bpftool, &file, None);
}

/// A split BTF of such a kernel: base and split each with their own 32-byte header and layout
/// section.
#[test]
fn split_btf_with_layout_sections_matches_bpftool() {
    let with_layout = |rel: &str, name: &str| {
        let raw = raw_btf::RawBtf::parse(&std::fs::read(data_dir().join(rel)).unwrap());
        write_temp(name, &raw.to_bytes(Some(&raw_btf::LAYOUT_7_1)))
    };
    let base = with_layout("targets/base.btf", "base-7.1.btf");
    let module = with_layout("targets/module.btf", "module-7.1.btf");
    let plain = btfgen_dump(
        &data_dir().join("targets/module.btf"),
        Some(&data_dir().join("targets/base.btf")),
    );
    assert_eq!(btfgen_dump(&module, Some(&base)), plain);
    let Some(bpftool) = bpftool() else { return };
    assert_identical(&bpftool, &base, None);
    assert_identical(&bpftool, &module, Some(&base));
}

/// Module BTF is split on vmlinux; both tools pick vmlinux as its base without being told.
#[test]
fn sysfs_modules_match_bpftool() {
    let Some(bpftool) = bpftool() else { return };
    let Ok(entries) = std::fs::read_dir("/sys/kernel/btf") else {
        eprintln!("SKIP: /sys/kernel/btf is not readable");
        return;
    };
    let mut modules: Vec<PathBuf> = entries
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p != Path::new(VMLINUX))
        .collect();
    modules.sort();
    if modules.is_empty() {
        eprintln!("SKIP: no module BTF under /sys/kernel/btf");
    }
    for module in &modules {
        assert_identical(&bpftool, module, None);
    }
}

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// Every `.o` and `.btf` file under `dir`, recursively, sorted.
fn fixtures(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            fixtures(&path, found);
        } else if path.extension().is_some_and(|e| e == "o" || e == "btf") {
            found.push(path);
        }
    }
    found.sort();
}

#[test]
fn fixtures_match_bpftool() {
    let Some(bpftool) = bpftool() else { return };
    let mut files = Vec::new();
    fixtures(&data_dir(), &mut files);
    if files.is_empty() {
        eprintln!(
            "SKIP: no .o or .btf fixtures under {}",
            data_dir().display()
        );
    }
    let mut failures = Vec::new();
    for file in &files {
        match compare(&bpftool, file, None) {
            Ok(Outcome::Identical) => {}
            // Split BTF cannot be read without its base; the manifest pass covers it.
            Ok(Outcome::BothRejected(ours, theirs)) => eprintln!(
                "NOTE: {} rejected by both without a base\n  btfgen:  {ours}\n  bpftool: {theirs}",
                file.display()
            ),
            Err(e) => failures.push(e),
        }
    }
    for (target, base) in manifest_split_pairs() {
        if let Err(e) = compare(&bpftool, &target, Some(&base)).and_then(|o| match o {
            Outcome::Identical => Ok(()),
            Outcome::BothRejected(ours, theirs) => Err(format!(
                "{} (base {}): both rejected it\n  btfgen:  {ours}\n  bpftool: {theirs}",
                target.display(),
                base.display()
            )),
        }) {
            failures.push(e);
        }
    }
    assert!(
        failures.is_empty(),
        "{} mismatches:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// `TARGET BASE` of every `OBJECT TARGET BASE` line in tests/data/manifest.txt whose files exist;
/// paths are relative to tests/data/.
fn manifest_split_pairs() -> Vec<(PathBuf, PathBuf)> {
    let manifest = data_dir().join("manifest.txt");
    let Ok(text) = std::fs::read_to_string(&manifest) else {
        eprintln!("SKIP: no {}", manifest.display());
        return Vec::new();
    };
    let mut pairs = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [_, target, base] = fields[..] else {
            continue;
        };
        let (target, base) = (data_dir().join(target), data_dir().join(base));
        if target.exists() && base.exists() {
            pairs.push((target, base));
        } else {
            eprintln!(
                "SKIP: manifest pair {} / {} not present",
                target.display(),
                base.display()
            );
        }
    }
    pairs
}

/// Words of a type's kind-specific data.
fn words(w: &mut BtfWriter, words: &[u32]) {
    for &word in words {
        w.push_word(word).unwrap();
    }
}

/// A blob with every kind and the encodings vmlinux lacks: INT encodings and bit offsets,
/// RESTRICT, TYPE_TAG, kind_flag bitfields, signed/unsigned ENUM and ENUM64 extremes, FWD
/// union, every FUNC and VAR linkage (unknown linkages are rejected by validation, as by the kernel), DATASEC over VARs and an extern
/// FUNC, FLOATs, DECL_TAGs on a type, a member and a parameter, anonymous members and
/// parameters.
fn kinds_blob(endian: Endianness) -> Vec<u8> {
    let mut w = BtfWriter::new(endian).unwrap();
    let int = |enc: u32, off: u32, bits: u32| (enc << 24) | (off << 16) | bits;
    let b = &mut w;
    let t_int = b.begin_type("int", Kind::Int, false, 0, 4).unwrap(); // 1
    words(b, &[int(1, 0, 32)]);
    b.begin_type("char", Kind::Int, false, 0, 1).unwrap(); // 2
    words(b, &[int(2, 0, 8)]);
    b.begin_type("_Bool", Kind::Int, false, 0, 1).unwrap(); // 3
    words(b, &[int(4, 0, 1)]);
    b.begin_type("odd", Kind::Int, false, 0, 4).unwrap(); // 4
    words(b, &[int(0, 3, 5)]);
    b.begin_type("unkn", Kind::Int, false, 0, 8).unwrap(); // 5
    words(b, &[int(8, 0, 64)]);
    let ptr = b.begin_type("", Kind::Ptr, false, 0, t_int).unwrap(); // 6
    b.begin_type("", Kind::Const, false, 0, ptr).unwrap(); // 7
    b.begin_type("", Kind::Volatile, false, 0, t_int).unwrap(); // 8
    b.begin_type("", Kind::Restrict, false, 0, ptr).unwrap(); // 9
    b.begin_type("myint", Kind::Typedef, false, 0, t_int)
        .unwrap(); // 10
    let tag = b
        .begin_type("user", Kind::TypeTag, false, 0, t_int)
        .unwrap(); // 11
    b.begin_type("", Kind::Ptr, false, 0, tag).unwrap(); // 12
    b.begin_type("", Kind::Array, false, 0, 0).unwrap(); // 13
    words(b, &[t_int, t_int, 10]);
    // struct bits { int a:3; int b:5; int c; union { int x; char y; }; } with kind_flag.
    let (a, bb, c) = (
        b.add_string("a").unwrap(),
        b.add_string("b").unwrap(),
        b.add_string("c").unwrap(),
    );
    let s = b.begin_type("bits", Kind::Struct, true, 4, 12).unwrap(); // 14
    words(
        b,
        &[
            a,
            t_int,
            (3 << 24),
            bb,
            t_int,
            (5 << 24) | 3,
            c,
            t_int,
            32,
            0,
            15,
            64,
        ],
    );
    let (x, y) = (b.add_string("x").unwrap(), b.add_string("y").unwrap());
    b.begin_type("", Kind::Union, false, 2, 4).unwrap(); // 15
    words(b, &[x, t_int, 0, y, 2, 0]);
    b.begin_type("plain", Kind::Struct, false, 1, 40).unwrap(); // 16
    words(b, &[a, 13, 0]);
    let (e1, e2, e3) = (
        b.add_string("E1").unwrap(),
        b.add_string("E2").unwrap(),
        b.add_string("E3").unwrap(),
    );
    b.begin_type("uenum", Kind::Enum, false, 3, 4).unwrap(); // 17
    words(b, &[e1, 0, e2, 0x7fff_ffff, e3, 0xffff_ffff]);
    b.begin_type("", Kind::Enum, true, 3, 4).unwrap(); // 18
    words(b, &[e1, (-1i32) as u32, e2, i32::MIN as u32, e3, 5]);
    b.begin_type("small", Kind::Enum, false, 1, 1).unwrap(); // 19
    words(b, &[e1, 255]);
    b.begin_type("u64enum", Kind::Enum64, false, 3, 8).unwrap(); // 20
    words(b, &[e1, 0, 0, e2, 0, 1 << 8, e3, u32::MAX, u32::MAX]);
    b.begin_type("s64enum", Kind::Enum64, true, 3, 8).unwrap(); // 21
    words(b, &[e1, u32::MAX, u32::MAX, e2, 0, 1 << 31, e3, 7, 0]);
    b.begin_type("", Kind::Enum64, false, 0, 8).unwrap(); // 22
    b.begin_type("fs", Kind::Fwd, false, 0, 0).unwrap(); // 23
    b.begin_type("fu", Kind::Fwd, true, 0, 0).unwrap(); // 24
    let p = b.add_string("p").unwrap();
    let proto = b.begin_type("", Kind::FuncProto, false, 3, t_int).unwrap(); // 25
    words(b, &[p, t_int, 0, ptr, 0, 0]);
    b.begin_type("", Kind::FuncProto, false, 0, 0).unwrap(); // 26
    let f_static = b
        .begin_type("f_static", Kind::Func, false, 0, proto)
        .unwrap(); // 27
    b.begin_type("f_global", Kind::Func, false, 1, proto)
        .unwrap(); // 28
    let f_extern = b
        .begin_type("f_extern", Kind::Func, false, 2, proto)
        .unwrap(); // 29
    let v_static = b
        .begin_type("v_static", Kind::Var, false, 0, t_int)
        .unwrap(); // 30
    words(b, &[0]);
    let v_global = b.begin_type("v_global", Kind::Var, false, 0, s).unwrap(); // 31
    words(b, &[1]);
    let v_extern = b
        .begin_type("v_extern", Kind::Var, false, 0, t_int)
        .unwrap(); // 32
    words(b, &[2]);
    b.begin_type(".data", Kind::Datasec, false, 2, 16).unwrap(); // 33
    words(b, &[v_static, 0, 4, v_global, 4, 12]);
    b.begin_type(".ksyms", Kind::Datasec, false, 2, 0).unwrap(); // 34
    words(b, &[v_extern, 0, 4, f_extern, 0, 0]);
    b.begin_type("float", Kind::Float, false, 0, 4).unwrap(); // 35
    b.begin_type("long double", Kind::Float, false, 0, 16)
        .unwrap(); // 36
    b.begin_type("on_type", Kind::DeclTag, false, 0, s).unwrap(); // 37
    words(b, &[u32::MAX]);
    b.begin_type("on_member", Kind::DeclTag, false, 0, s)
        .unwrap(); // 38
    words(b, &[1]);
    b.begin_type("on_param", Kind::DeclTag, false, 0, f_static)
        .unwrap(); // 39
    words(b, &[0]);
    w.finish().unwrap()
}

/// Split BTF on [`kinds_blob`], encoded by hand because the writer numbers types from 1: a
/// struct whose second member borrows a base string, a pointer back to it, and a DATASEC over
/// a base VAR, so names, ids and DATASEC annotations must resolve across the split.
fn split_blob(base: &Btf<'_>) -> Vec<u8> {
    let start = base.type_cnt();
    let base_strings = base.start_str_off() + base.strings_len();
    let strings = b"split_s\0y\0.split\0";
    let (split_s, y, dot_split) = (base_strings, base_strings + 8, base_strings + 10);
    let int_name = base.type_by_id(1).unwrap().name_off;
    let v_static = (1..start)
        .find(|&id| {
            let ty = base.type_by_id(id).unwrap();
            base.name(ty.name_off).unwrap() == "v_static"
        })
        .unwrap();
    let info = |kind: Kind, vlen: u32| ((kind as u32) << 24) | vlen;
    #[rustfmt::skip]
    let types: Vec<u32> = vec![
        split_s, info(Kind::Struct, 2), 16,
            y, 1, 0,
            int_name, start + 1, 64,
        0, info(Kind::Ptr, 0), start,
        dot_split, info(Kind::Datasec, 1), 4,
            v_static, 0, 4,
    ];
    let type_len = (types.len() * 4) as u32;
    let mut blob = Vec::new();
    blob.extend_from_slice(&0xeb9fu16.to_le_bytes());
    blob.extend_from_slice(&[1, 0]);
    for word in [24, 0, type_len, type_len, strings.len() as u32]
        .into_iter()
        .chain(types)
    {
        blob.extend_from_slice(&word.to_le_bytes());
    }
    blob.extend_from_slice(strings);
    blob
}

#[test]
fn crafted_kinds_match_bpftool() {
    let Some(bpftool) = bpftool() else { return };
    let file = write_temp("dump_kinds_le.btf", &kinds_blob(Endianness::Little));
    assert_identical(&bpftool, &file, None);
}

#[test]
fn crafted_split_matches_bpftool() {
    let Some(bpftool) = bpftool() else { return };
    let base_blob = kinds_blob(Endianness::Little);
    let base = Btf::parse(&base_blob).unwrap();
    let split = split_blob(&base);
    let base_file = write_temp("dump_split_base.btf", &base_blob);
    let split_file = write_temp("dump_split.btf", &split);
    assert_identical(&bpftool, &split_file, Some(&base_file));
    // The split part alone, numbered after the base.
    let ours = btfgen_dump(&split_file, Some(&base_file)).unwrap();
    assert!(ours.starts_with(&format!(
        "[{}] STRUCT 'split_s' size=16 vlen=2\n",
        base.type_cnt()
    )));
}

/// Byte order must not change the dump: the big-endian blob prints exactly as the little-endian
/// one, and as bpftool prints it when bpftool can read big-endian BTF.
#[test]
fn big_endian_dump_matches_little_endian() {
    let le = write_temp("dump_kinds_le_ref.btf", &kinds_blob(Endianness::Little));
    let be = write_temp("dump_kinds_be.btf", &kinds_blob(Endianness::Big));
    let ours_le = btfgen_dump(&le, None).unwrap();
    let ours_be = btfgen_dump(&be, None).unwrap();
    if let Some(diff) = first_difference(&ours_be, &ours_le) {
        panic!("big-endian dump differs from little-endian at {diff}");
    }
    let Some(bpftool) = bpftool() else { return };
    assert_identical(&bpftool, &be, None);
}
