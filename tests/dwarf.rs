//! DWARF → BTF (`btfgen::dwarf`) against pahole: the C fixtures of `tests/data/dwarf/`
//! (bit-fields, anonymous members, flexible and multi-dimensional arrays, packed and aligned
//! layouts, signed, unsigned and 64-bit enums, typedefs, qualifiers, function pointers with
//! and without variadic arguments, forward declarations, the same struct in two units, two
//! structs with one name, clang's type and decl tags), compiled by gcc and clang-19 at DWARF
//! 4 and 5 and with DWARF 4 type units, converted by btfgen and by `pahole -J
//! --btf_gen_floats` (Debian 12's pahole 1.24 with libbpf 1.1's `btf__dedup`, committed as
//! `*.pahole.btf` by `tests/data/dwarf/build.sh`).
//!
//! The two are compared type by type, modulo ids and order: each type is rendered as text
//! with what it refers to spelled out (an anonymous type in full, a named one by kind, name
//! and, for structs and unions, its member names, which tells two structs of one name
//! apart), and the two multisets of lines must be equal — a type dedup failed to merge shows
//! up as a line too many.

mod dwarf_common;

use btfgen::btf::Btf;
use dwarf_common::{canonical, data, difference};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn converted(elf: &str) -> Vec<u8> {
    to_btf_both_ways(&data(elf), None).unwrap_or_else(|e| panic!("{elf}: {e}"))
}

/// `dwarf::to_btf` of `elf` (with supplementary file `sup`) on one thread and on two, and
/// with its type DIEs numbered by a first pass of their own rather than as their units are
/// converted: the same output; or the same error on one thread and on two, and an error
/// (maybe found elsewhere first) with either numbering.
fn to_btf_both_ways(elf: &[u8], sup: Option<&[u8]>) -> btfgen::Result<Vec<u8>> {
    let one = btfgen::dwarf::Options {
        threads: false,
        ..btfgen::dwarf::Options::default()
    };
    let numbered_first = btfgen::dwarf::Options {
        one_pass: false,
        ..btfgen::dwarf::Options::default()
    };
    let sequential = btfgen::dwarf::to_btf_with(elf, sup, &one);
    let threaded = btfgen::dwarf::to_btf(elf, sup);
    let two_passes = btfgen::dwarf::to_btf_with(elf, sup, &numbered_first);
    match (&sequential, &threaded) {
        (Ok(a), Ok(b)) => assert!(a == b, "two threads wrote other bytes than one"),
        (a, b) => assert_eq!(
            format!("{a:?}"),
            format!("{b:?}"),
            "one thread, two threads"
        ),
    }
    match (&threaded, &two_passes) {
        (Ok(a), Ok(b)) => assert!(a == b, "numbered in one pass: other bytes than in two"),
        (Err(_), Err(_)) => {}
        (a, b) => panic!("numbered in one pass: {a:?}; in two: {b:?}"),
    }
    threaded
}

/// BTF `ours` (btfgen's) holds the types of `theirs`, modulo ids and order, and as many;
/// `what` says which two they are.
fn assert_same_types(ours: &[u8], theirs: &[u8], what: &str) {
    let ours = Btf::parse(ours).unwrap_or_else(|e| panic!("{what}: btfgen's BTF: {e}"));
    let theirs = Btf::parse(theirs).unwrap();
    let (a, b) = (canonical(&ours), canonical(&theirs));
    assert!(a == b, "{what}: they differ:\n{}", difference(&a, &b));
    assert_eq!(ours.type_cnt(), theirs.type_cnt(), "{what}: type count");
}

fn assert_same_as_pahole(elf: &str, reference: &str) {
    assert_same_types(
        &converted(elf),
        &data(reference),
        &format!("{elf}: btfgen's conversion and {reference}"),
    );
}

/// Relocatable objects (`gcc -c`, `clang -c`, as a kernel module's debug `.ko` is one): their
/// debug sections' RELA relocations applied (offsets into `.debug_str`, `.debug_abbrev`,
/// `.debug_line`, ...: all zero before), as pahole does through libdw.
#[test]
fn relocatable_objects_equal_pahole() {
    assert_same_as_pahole("gcc-dwarf5-rel.ko", "gcc-dwarf5-rel.pahole.btf");
    assert_same_as_pahole("clang-19-dwarf5-rel.ko", "clang-19-dwarf5-rel.pahole.btf");
}

#[test]
fn gcc_dwarf4_equals_pahole() {
    assert_same_as_pahole("gcc-dwarf4.so", "gcc-dwarf4.pahole.btf");
}

#[test]
fn gcc_dwarf5_equals_pahole() {
    assert_same_as_pahole("gcc-dwarf5.so", "gcc-dwarf5.pahole.btf");
}

#[test]
fn clang_dwarf4_equals_pahole() {
    assert_same_as_pahole("clang-19-dwarf4.so", "clang-19-dwarf4.pahole.btf");
}

#[test]
fn clang_dwarf5_equals_pahole() {
    assert_same_as_pahole("clang-19-dwarf5.so", "clang-19-dwarf5.pahole.btf");
}

#[test]
fn clang_dwarf4_type_units_equal_pahole() {
    assert_same_as_pahole(
        "clang-19-dwarf4-types.so",
        "clang-19-dwarf4-types.pahole.btf",
    );
}

/// pahole 1.24's `btf__dedup` fails on gcc's `.debug_types`; the same sources without type
/// units are the reference.
#[test]
fn gcc_dwarf4_type_units_equal_pahole_without_them() {
    assert_same_as_pahole("gcc-dwarf4-types.so", "gcc-dwarf4.pahole.btf");
}

#[test]
fn compressed_sections_give_identical_output() {
    let plain = converted("clang-19-dwarf5.so");
    for z in ["zlib", "zstd", "zlib-gnu"] {
        assert!(
            converted(&format!("clang-19-dwarf5-{z}.so")) == plain,
            "{z}-compressed debug sections give other BTF"
        );
    }
}

/// pahole 1.24 does not know `DW_TAG_atomic_type` (dwarves 1.26 learnt it): it gives every
/// reference to one type id 0, `void`, so a member declared `_Atomic int` has no type.
/// btfgen drops the qualifier instead (BTF has no kind for it), as pahole now does. All
/// else equals pahole's; the lines that differ are exactly the ones `_Atomic` touches.
#[test]
fn atomic_is_dropped_where_pahole_1_24_writes_void() {
    for (compiler, long, pahole_cal, only_ours, only_pahole) in [
        (
            "gcc",
            "long int",
            "void",
            // gcc's `const _Atomic long` is member → atomic → const → long: the member
            // loses its type, the const keeps its target.
            &[][..],
            &[][..],
        ),
        (
            "clang-19",
            "long",
            "(CONST '' void)",
            // clang's is member → const → atomic → long: pahole keeps a const of void.
            &["CONST '' INT long"][..],
            &["CONST '' void"][..],
        ),
    ] {
        let elf = format!("atomic-{compiler}-dwarf5.so");
        let ours = converted(&elf);
        let ours = canonical(&Btf::parse(&ours).unwrap());
        let theirs = data(&format!("atomic-{compiler}-dwarf5.pahole.btf"));
        let theirs = canonical(&Btf::parse(&theirs).unwrap());
        let atomic = |lines: &BTreeMap<String, usize>| -> Vec<String> {
            lines
                .keys()
                .filter(|l| l.starts_with("STRUCT 'with_atomic'"))
                .cloned()
                .collect()
        };
        assert_eq!(
            atomic(&ours),
            [format!(
                "STRUCT 'with_atomic' size=32 kflag=false {{counter: INT int @0; head: (PTR '' \
                 STRUCT list_node{{next}}) @64; cal: (CONST '' INT {long}) @128; plain: INT int \
                 @192}}"
            )],
            "{compiler}"
        );
        assert_eq!(
            atomic(&theirs),
            [format!(
                "STRUCT 'with_atomic' size=32 kflag=false {{counter: void @0; head: void @64; \
                 cal: {pahole_cal} @128; plain: INT int @192}}"
            )],
            "{compiler}"
        );
        let rest = |lines: &BTreeMap<String, usize>, drop: &[&str]| -> BTreeMap<String, usize> {
            lines
                .iter()
                .filter(|(l, _)| {
                    !l.starts_with("STRUCT 'with_atomic'") && !drop.contains(&l.as_str())
                })
                .map(|(l, &n)| (l.clone(), n))
                .collect()
        };
        let (a, b) = (rest(&ours, only_ours), rest(&theirs, only_pahole));
        assert!(a == b, "{compiler}:\n{}", difference(&a, &b));
    }
}

/// Malformed input is an error, never a panic: every truncation of a fixture at a step
/// through the file, and single-byte corruptions across its debug sections; the same one
/// whether the units are read on one thread or two.
#[test]
fn malformed_input_is_an_error_not_a_panic() {
    for name in [
        "gcc-dwarf5.so",
        "clang-19-dwarf4-types.so",
        "clang-19-dwarf5-zstd.so",
        "gcc-dwarf5-rel.ko",
    ] {
        let elf = data(name);
        for len in (0..elf.len()).step_by(97) {
            let _ = to_btf_both_ways(&elf[..len], None);
        }
        for at in (0..elf.len()).step_by(11) {
            for byte in [0x00, 0xff] {
                let mut bad = elf.clone();
                bad[at] = byte;
                if let Ok(btf) = to_btf_both_ways(&bad, None) {
                    // Whatever converts must still be BTF the parser accepts.
                    Btf::parse(&btf).unwrap_or_else(|e| panic!("{name}: byte {at}: {e}"));
                }
            }
        }
    }
}

#[test]
fn an_error_names_section_unit_and_die() {
    let mut elf = data("gcc-dwarf5.so");
    // The first unit's first DIE names abbreviation 1; make it one that does not exist.
    let info = btfgen_section_offset(&elf, ".debug_info");
    elf[info + 12] = 0x7f;
    let err = btfgen::dwarf::to_btf(&elf, None).unwrap_err();
    assert!(
        matches!(
            err,
            btfgen::Error::BadDwarf {
                section: ".debug_info",
                unit: 0,
                ..
            }
        ),
        "{err:?}"
    );
}

/// File offset of section `name` in a 64-bit little-endian ELF file.
fn btfgen_section_offset(elf: &[u8], name: &str) -> usize {
    let u64_at = |o: usize| u64::from_le_bytes(elf[o..o + 8].try_into().unwrap()) as usize;
    let u16_at = |o: usize| u16::from_le_bytes(elf[o..o + 2].try_into().unwrap()) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(elf[o..o + 4].try_into().unwrap()) as usize;
    let (shoff, shnum, shstrndx) = (u64_at(0x28), u16_at(0x3c), u16_at(0x3e));
    let header = |i: usize| shoff + i * 64;
    let strtab = u64_at(header(shstrndx) + 0x18);
    (0..shnum)
        .find(|&i| {
            let n = strtab + u32_at(header(i));
            elf[n..].starts_with(name.as_bytes()) && elf[n + name.len()] == 0
        })
        .map(|i| u64_at(header(i) + 0x18))
        .unwrap()
}

fn btfgen(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_btfgen"))
        .args(args)
        .current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/dwarf"))
        .output()
        .unwrap()
}

/// `btfgen dump` takes an ELF file with DWARF and no `.BTF` as it takes BTF: as many types
/// as pahole's BTF of it has.
#[test]
fn cli_dump_converts_dwarf() {
    let count = |out: &std::process::Output| {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.starts_with('['))
            .count()
    };
    let ours = count(&btfgen(&["dump", "gcc-dwarf5.so"]));
    let theirs = count(&btfgen(&["dump", "gcc-dwarf5.pahole.btf"]));
    assert_eq!(ours, theirs);
    assert_eq!(
        ours as u32 + 1,
        Btf::parse(&data("gcc-dwarf5.pahole.btf"))
            .unwrap()
            .type_cnt()
    );
}

#[test]
fn cli_from_dwarf_without_dwarf_is_an_error() {
    let out = btfgen(&["dump", "--from-dwarf", "gcc-dwarf5.pahole.btf"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("gcc-dwarf5.pahole.btf: DWARF") && stderr.contains(".debug_info"),
        "{stderr}"
    );
}

/// `min-core-btf` with a DWARF input minimizes as with pahole's BTF of it: the same types
/// out for every fixture (compressed ones against the plain one's reference), the same
/// bytes but for type units' order, and the summary line says where the BTF came from.
#[test]
fn cli_min_core_btf_from_dwarf_equals_from_pahole_btf() {
    let dir = std::env::temp_dir().join(format!("btfgen-dwarf-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (from_dwarf, from_pahole) = (dir.join("dwarf.btf"), dir.join("pahole.btf"));
    let run = |input: &str, out: &std::path::Path| {
        let out = btfgen(&["min-core-btf", input, out.to_str().unwrap(), "core.bpf.o"]);
        assert!(
            out.status.success(),
            "{input}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    for (elf, reference) in [
        ("gcc-dwarf4.so", "gcc-dwarf4.pahole.btf"),
        ("gcc-dwarf5.so", "gcc-dwarf5.pahole.btf"),
        ("gcc-dwarf4-types.so", "gcc-dwarf4.pahole.btf"),
        ("clang-19-dwarf4.so", "clang-19-dwarf4.pahole.btf"),
        ("clang-19-dwarf5.so", "clang-19-dwarf5.pahole.btf"),
        (
            "clang-19-dwarf4-types.so",
            "clang-19-dwarf4-types.pahole.btf",
        ),
        ("clang-19-dwarf5-zlib.so", "clang-19-dwarf5.pahole.btf"),
        ("clang-19-dwarf5-zstd.so", "clang-19-dwarf5.pahole.btf"),
        ("clang-19-dwarf5-zlib-gnu.so", "clang-19-dwarf5.pahole.btf"),
    ] {
        let summary = run(elf, &from_dwarf);
        assert!(
            summary.contains("3 CO-RE relocation(s) (3 resolved)"),
            "{elf}: {summary}"
        );
        assert!(
            summary.contains("bytes (BTF from DWARF) ->"),
            "{elf}: {summary}"
        );
        let summary = run(reference, &from_pahole);
        assert!(!summary.contains("DWARF"), "{reference}: {summary}");
        let (ours, theirs) = (
            std::fs::read(&from_dwarf).unwrap(),
            std::fs::read(&from_pahole).unwrap(),
        );
        let (a, b) = (
            canonical(&Btf::parse(&ours).unwrap()),
            canonical(&Btf::parse(&theirs).unwrap()),
        );
        assert!(
            a == b,
            "{elf}: minimized BTF differs from that of {reference}:\n{}",
            difference(&a, &b)
        );
        // Type units come first in btfgen's ids, so only their order differs from pahole's.
        assert!(
            elf.contains("-types") || ours == theirs,
            "{elf}: minimized BTF is not byte for byte that of {reference}"
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// Any ELF file against pahole's BTF of it, for inputs too large or not ours to commit (a
/// debug vmlinux, a library built with -g -O2): `BTFGEN_DWARF_ELF=FILE
/// BTFGEN_DWARF_PAHOLE=FILE.btf cargo test --release --test dwarf -- --ignored`.
#[test]
#[ignore = "needs BTFGEN_DWARF_ELF and BTFGEN_DWARF_PAHOLE"]
fn external_elf_equals_pahole() {
    let elf = std::env::var("BTFGEN_DWARF_ELF").expect("BTFGEN_DWARF_ELF");
    let reference = std::env::var("BTFGEN_DWARF_PAHOLE").expect("BTFGEN_DWARF_PAHOLE");
    let started = std::time::Instant::now();
    let ours = btfgen::dwarf::to_btf(&std::fs::read(&elf).unwrap(), None).unwrap();
    eprintln!(
        "{elf}: converted in {:.1} ms",
        started.elapsed().as_secs_f64() * 1e3
    );
    let ours = Btf::parse(&ours).unwrap();
    let theirs = std::fs::read(&reference).unwrap();
    let theirs = Btf::parse(&theirs).unwrap();
    let (a, b) = (canonical(&ours), canonical(&theirs));
    assert!(
        a == b,
        "{elf} differs from {reference}:\n{}",
        difference(&a, &b)
    );
    assert_eq!(ours.type_cnt(), theirs.type_cnt());
}

/// `btfgen encode` writes the whole converted BTF: the types `pahole -J` writes for each
/// fixture (the same canonical set), `bpftool btf dump format c` of it compiles, and an input
/// without DWARF fails naming the file, with no output written.
#[test]
fn cli_encode_writes_the_whole_btf() {
    let dir = std::env::temp_dir().join(format!("btfgen-encode-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("full.btf");
    for (elf, reference) in [
        ("gcc-dwarf5.so", "gcc-dwarf5.pahole.btf"),
        ("clang-19-dwarf5.so", "clang-19-dwarf5.pahole.btf"),
        ("clang-19-dwarf4.so", "clang-19-dwarf4.pahole.btf"),
    ] {
        let run = btfgen(&["encode", elf, out.to_str().unwrap()]);
        assert!(
            run.status.success(),
            "{elf}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let written = std::fs::read(&out).unwrap();
        let ours = canonical(&Btf::parse(&written).unwrap());
        let theirs = canonical(&Btf::parse(&data(reference)).unwrap());
        assert!(ours == theirs, "{elf}: {}", difference(&ours, &theirs));
        let Ok(c) = std::process::Command::new("bpftool")
            .args(["btf", "dump", "file", out.to_str().unwrap(), "format", "c"])
            .output()
        else {
            eprintln!("SKIP {elf}: bpftool is not installed: vmlinux.h not compiled");
            continue;
        };
        assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
        let header = dir.join("vmlinux.h");
        std::fs::write(&header, &c.stdout).unwrap();
        let compiled = std::process::Command::new("cc")
            .args(["-fsyntax-only", "-x", "c", header.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(
            compiled.status.success(),
            "{elf}: vmlinux.h does not compile: {}",
            String::from_utf8_lossy(&compiled.stderr)
        );
    }
    let missing = dir.join("none.btf");
    let run = btfgen(&["encode", "gcc-dwarf5.pahole.btf", missing.to_str().unwrap()]);
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("gcc-dwarf5.pahole.btf: DWARF"), "{stderr}");
    assert!(!missing.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// dwz-processed fixtures hold the types of the file before `dwz` (pahole 1.24 writes no BTF
/// for any of them, and exits 0): partial units in the file (`dwz`), and the shared DWARF
/// moved to a supplementary file (`dwz -m`) named by `.gnu_debugaltlink` (DWARF 4) or DWARF
/// 5's `.debug_sup` (`dwz --dwarf-5`). Without its supplementary file, such an input fails.
#[test]
fn dwz_processed_equals_unprocessed() {
    for (processed, sup, plain) in [
        ("gcc-dwarf4-dwz.so", None, "gcc-dwarf4.so"),
        (
            "gcc-dwarf4-dwzm.so",
            Some("gcc-dwarf4-dwzm.sup"),
            "gcc-dwarf4.so",
        ),
        (
            "gcc-dwarf5-dwzm.so",
            Some("gcc-dwarf5-dwzm.sup"),
            "gcc-dwarf5.so",
        ),
    ] {
        let elf = data(processed);
        let sup_data = sup.map(data);
        if let (Some(sup), Some(sup_data)) = (sup, &sup_data) {
            let link = btfgen::dwarf::supplementary::link(&elf).unwrap().unwrap();
            assert_eq!(link.path, sup.as_bytes(), "{processed}");
            let identity = btfgen::dwarf::supplementary::identity(sup_data).unwrap();
            assert_eq!(identity, Some(link.id), "{processed}: the file's identity");
            let err = btfgen::dwarf::to_btf(&elf, None).unwrap_err().to_string();
            assert!(err.contains("supplementary file"), "{processed}: {err}");
        }
        let ours = to_btf_both_ways(&elf, sup_data.as_deref())
            .unwrap_or_else(|e| panic!("{processed}: {e}"));
        assert_same_types(
            &ours,
            &converted(plain),
            &format!("{processed} and {plain}"),
        );
    }
}

/// The command finds a `dwz -m` input's supplementary file next to it (or is given it with
/// `--dwarf-alt`) and minimizes as from the file before `dwz`; a missing or mismatched file
/// fails naming where it looked and the build ids, with no output written.
#[test]
fn cli_finds_and_checks_the_supplementary_file() {
    let dir = std::env::temp_dir().join(format!("btfgen-dwz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/dwarf");
    let alone = dir.join("alone.so");
    std::fs::copy(fixtures.join("gcc-dwarf4-dwzm.so"), &alone).unwrap();
    let out = dir.join("out.btf");
    let (alone, out_arg) = (alone.to_str().unwrap(), out.to_str().unwrap());
    let (processed, other_sup) = (data("gcc-dwarf4-dwzm.so"), data("gcc-dwarf5-dwzm.sup"));
    let link = btfgen::dwarf::supplementary::link(&processed)
        .unwrap()
        .unwrap();
    let id = btfgen::dwarf::supplementary::hex(link.id).unwrap();
    let other = btfgen::dwarf::supplementary::identity(&other_sup)
        .unwrap()
        .unwrap();
    let other = btfgen::dwarf::supplementary::hex(other).unwrap();
    for (args, wanted) in [
        (
            vec!["encode", alone, out_arg],
            vec![
                ".gnu_debugaltlink names the supplementary file gcc-dwarf4-dwzm.sup",
                &id,
                "alone.so: ",
                "/usr/lib/debug/.build-id/",
                "--dwarf-alt",
            ],
        ),
        (
            vec!["min-core-btf", alone, out_arg, "core.bpf.o"],
            vec!["gcc-dwarf4-dwzm.sup", "--dwarf-alt"],
        ),
        (
            vec![
                "encode",
                "--dwarf-alt",
                "gcc-dwarf5-dwzm.sup",
                alone,
                out_arg,
            ],
            vec![&id, &other],
        ),
    ] {
        let run = btfgen(&args);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(!run.status.success(), "{args:?}: {stderr}");
        for w in wanted {
            assert!(stderr.contains(w), "{args:?}: no {w:?} in {stderr}");
        }
        assert!(!out.exists(), "{args:?}: output written");
    }
    let sup = fixtures.join("gcc-dwarf4-dwzm.sup");
    let run = btfgen(&[
        "encode",
        "--dwarf-alt",
        sup.to_str().unwrap(),
        alone,
        out_arg,
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let ours = canonical(&Btf::parse(&std::fs::read(&out).unwrap()).unwrap());
    let before = canonical(&Btf::parse(&converted("gcc-dwarf4.so")).unwrap());
    assert!(ours == before, "{}", difference(&ours, &before));
    // Next to the input, under the name it gives: min-core-btf as from the file before dwz.
    let minimized = |input: &str| {
        let run = btfgen(&["min-core-btf", input, out_arg, "core.bpf.o"]);
        let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
        assert!(run.status.success(), "{input}: {stderr}");
        assert!(
            stderr.contains("3 CO-RE relocation(s) (3 resolved)"),
            "{stderr}"
        );
        canonical(&Btf::parse(&std::fs::read(&out).unwrap()).unwrap())
    };
    for (processed, plain) in [
        ("gcc-dwarf4-dwzm.so", "gcc-dwarf4.so"),
        ("gcc-dwarf5-dwzm.so", "gcc-dwarf5.so"),
        ("gcc-dwarf4-dwz.so", "gcc-dwarf4.so"),
    ] {
        let (a, b) = (minimized(processed), minimized(plain));
        assert!(a == b, "{processed}: {}", difference(&a, &b));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What converting `elf` (on two threads or one) tells of its progress, in order.
fn progress_told(elf: &[u8], threads: bool) -> Vec<btfgen::dwarf::Progress> {
    let told = std::sync::Mutex::new(Vec::new());
    let tell = |p| told.lock().unwrap().push(p);
    let options = btfgen::dwarf::Options {
        threads,
        progress: &tell,
        ..btfgen::dwarf::Options::default()
    };
    btfgen::dwarf::to_btf_with(elf, None, &options).unwrap();
    told.into_inner().unwrap()
}

/// A conversion tells its progress (for the command's progress line): every unit numbered
/// once (by the first pass, which an input with type units needs), every unit converted in
/// order, then the deduplication; the same on one thread and on two (numbering on two
/// threads may tell its units out of order, never twice).
#[test]
fn a_conversion_tells_its_progress() {
    use btfgen::dwarf::Progress;
    let elf = data("gcc-dwarf4-types.so");
    for threads in [false, true] {
        let told = progress_told(&elf, threads);
        let numbered: Vec<_> = told
            .iter()
            .filter_map(|p| match *p {
                Progress::Numbered { done, total } => Some((done, total)),
                _ => None,
            })
            .collect();
        let units = numbered.len();
        assert!(units >= 3, "threads {threads}: {told:?}");
        let mut dones: Vec<_> = numbered.iter().map(|&(d, _)| d).collect();
        dones.sort_unstable();
        assert_eq!(dones, (1..=units).collect::<Vec<_>>(), "threads {threads}");
        assert!(numbered.iter().all(|&(_, total)| total == units));
        let converted: Vec<_> = told
            .iter()
            .filter_map(|p| match *p {
                Progress::Converted { done, total } => Some((done, total)),
                _ => None,
            })
            .collect();
        assert_eq!(
            converted,
            (1..=units).map(|d| (d, units)).collect::<Vec<_>>(),
            "threads {threads}"
        );
        assert_eq!(told.last(), Some(&Progress::Deduplicating));
        let first_converted = told
            .iter()
            .position(|p| matches!(p, Progress::Converted { .. }))
            .unwrap();
        assert!(
            told[..first_converted]
                .iter()
                .all(|p| matches!(p, Progress::Numbered { .. })),
            "threads {threads}: the passes in order"
        );
    }
}

/// Converted in one pass (an input without type units or a supplementary file), a conversion
/// tells each unit converted, in order, then the deduplication: no first pass numbers them.
#[test]
fn a_conversion_in_one_pass_tells_its_progress() {
    use btfgen::dwarf::Progress;
    let elf = data("gcc-dwarf4.so");
    for threads in [false, true] {
        let told = progress_told(&elf, threads);
        let (last, converted) = told.split_last().unwrap();
        assert_eq!(*last, Progress::Deduplicating, "threads {threads}");
        let units = converted.len();
        assert!(units >= 2, "threads {threads}: {told:?}");
        assert_eq!(
            converted,
            (1..=units)
                .map(|done| Progress::Converted { done, total: units })
                .collect::<Vec<_>>(),
            "threads {threads}"
        );
    }
}

/// References into a unit after their own (gcc's link-time optimization refers from the
/// optimized unit into the units compiled first, with `DW_FORM_ref_addr`), and into partial
/// units (`dwz`): converted in one pass, such a reference waits for its unit to be numbered,
/// and the output is that of the first pass's numbering.
#[test]
fn references_into_other_units_convert_the_same_in_one_pass() {
    for elf in ["gcc-dwarf5-lto.so", "gcc-dwarf4-dwz.so"] {
        let btf = to_btf_both_ways(&data(elf), None).unwrap_or_else(|e| panic!("{elf}: {e}"));
        Btf::parse(&btf).unwrap_or_else(|e| panic!("{elf}: {e}"));
    }
}

/// References into a later unit, which no compiler here writes for types (gcc's and clang's
/// link-time optimization refer across units only for what they inlined): unit 0's struct,
/// pointer and `_Atomic` refer to unit 1's `int` and struct with `DW_FORM_ref_addr`, one
/// through an `_Atomic` of unit 1. Converted in one pass, they wait for unit 1 to be
/// numbered; the output is the first pass's, and the types are those the C would have. A
/// member with a `DW_AT_signature` (numbered as an alias) stays its struct's member (the
/// fuzzer found the one pass dropping it).
#[test]
fn references_into_a_later_unit_convert_the_same_in_one_pass() {
    use gimli::constants as dw;
    use gimli::write::{self, AttributeValue as V, EndianVec, LineProgram, Reference, Unit};
    let encoding = gimli::Encoding {
        format: gimli::Format::Dwarf32,
        version: 4,
        address_size: 8,
    };
    let mut dwarf = write::Dwarf::new();
    let first = dwarf.units.add(Unit::new(encoding, LineProgram::none()));
    let second = dwarf.units.add(Unit::new(encoding, LineProgram::none()));
    let name = |s: &str| V::String(s.as_bytes().to_vec());
    // Unit 1: `int`, `_Atomic int`, `struct later { int x; }`.
    let (int, atomic, later) = {
        let unit = dwarf.units.get_mut(second);
        let root = unit.root();
        let int = unit.add(root, dw::DW_TAG_base_type);
        let e = unit.get_mut(int);
        e.set(dw::DW_AT_name, name("int"));
        e.set(dw::DW_AT_byte_size, V::Data1(4));
        e.set(dw::DW_AT_encoding, V::Encoding(dw::DW_ATE_signed));
        let atomic = unit.add(root, dw::DW_TAG_atomic_type);
        unit.get_mut(atomic).set(dw::DW_AT_type, V::UnitRef(int));
        let later = unit.add(root, dw::DW_TAG_structure_type);
        let e = unit.get_mut(later);
        e.set(dw::DW_AT_name, name("later"));
        e.set(dw::DW_AT_byte_size, V::Data1(4));
        let x = unit.add(later, dw::DW_TAG_member);
        let e = unit.get_mut(x);
        e.set(dw::DW_AT_name, name("x"));
        e.set(dw::DW_AT_type, V::UnitRef(int));
        e.set(dw::DW_AT_data_member_location, V::Data1(0));
        (int, atomic, later)
    };
    // Unit 0: `struct early { int a; _Atomic int b; struct later *p; }`, `typedef int i_t;`.
    {
        let unit = dwarf.units.get_mut(first);
        let root = unit.root();
        let ptr = unit.add(root, dw::DW_TAG_pointer_type);
        let e = unit.get_mut(ptr);
        e.set(dw::DW_AT_byte_size, V::Data1(8));
        e.set(
            dw::DW_AT_type,
            V::DebugInfoRef(Reference::Entry(second, later)),
        );
        let early = unit.add(root, dw::DW_TAG_structure_type);
        let e = unit.get_mut(early);
        e.set(dw::DW_AT_name, name("early"));
        e.set(dw::DW_AT_byte_size, V::Data1(16));
        for (member, ty, offset) in [
            ("a", V::DebugInfoRef(Reference::Entry(second, int)), 0),
            ("b", V::DebugInfoRef(Reference::Entry(second, atomic)), 4),
            ("p", V::UnitRef(ptr), 8),
        ] {
            let m = unit.add(early, dw::DW_TAG_member);
            let e = unit.get_mut(m);
            e.set(dw::DW_AT_name, name(member));
            e.set(dw::DW_AT_type, ty);
            e.set(dw::DW_AT_data_member_location, V::Data1(offset));
        }
        let typedef = unit.add(root, dw::DW_TAG_typedef);
        let e = unit.get_mut(typedef);
        e.set(dw::DW_AT_name, name("i_t"));
        e.set(
            dw::DW_AT_type,
            V::DebugInfoRef(Reference::Entry(second, int)),
        );
        // A member that is also an alias (a signature, of a form that names a DIE of its
        // unit): numbered as an alias, and still read as its struct's member.
        let odd = unit.add(root, dw::DW_TAG_structure_type);
        let e = unit.get_mut(odd);
        e.set(dw::DW_AT_name, name("odd"));
        e.set(dw::DW_AT_byte_size, V::Data1(8));
        let c = unit.add(odd, dw::DW_TAG_member);
        let e = unit.get_mut(c);
        e.set(dw::DW_AT_name, name("c"));
        e.set(dw::DW_AT_signature, V::UnitRef(ptr));
        e.set(dw::DW_AT_data_member_location, V::Data1(0));
    }
    let mut sections = write::Sections::new(EndianVec::new(gimli::LittleEndian));
    dwarf.write(&mut sections).unwrap();
    let mut elf = object::write::Object::new(
        object::BinaryFormat::Elf,
        object::Architecture::X86_64,
        object::Endianness::Little,
    );
    sections
        .for_each(|id, data| {
            if !data.slice().is_empty() {
                let section =
                    elf.add_section(Vec::new(), id.name().into(), object::SectionKind::Debug);
                elf.set_section_data(section, data.slice().to_vec(), 1);
            }
            Ok::<_, gimli::write::Error>(())
        })
        .unwrap();
    let elf = elf.write().unwrap();
    let btf = to_btf_both_ways(&elf, None).unwrap();
    let btf = Btf::parse(&btf).unwrap();
    let lines = canonical(&btf);
    let text = lines.keys().cloned().collect::<Vec<_>>().join("\n");
    for expected in [
        "STRUCT 'early' size=16 kflag=false {a: INT int @0; b: INT int @32; p: (PTR '' STRUCT later{x}) @64}",
        "STRUCT 'later' size=4 kflag=false {x: INT int @0}",
        "TYPEDEF 'i_t' INT int",
        "STRUCT 'odd' size=8 kflag=false {c: void @0}",
    ] {
        assert!(lines.contains_key(expected), "missing {expected}:\n{text}");
    }
}

/// A conversion for relocating leaves functions out (`Options::functions`): no `FUNC` (nor
/// the `DECL_TAG`s of functions and their parameters), and every other type as the whole
/// conversion (checked against pahole above) has it; the `FUNC_PROTO`s left are those of
/// function pointers, which the whole conversion has too.
#[test]
fn a_conversion_without_functions_keeps_every_type() {
    let types_only = btfgen::dwarf::Options {
        functions: false,
        ..btfgen::dwarf::Options::default()
    };
    for elf in [
        "gcc-dwarf4.so",
        "gcc-dwarf5.so",
        "gcc-dwarf5-lto.so",
        "clang-19-dwarf4.so",
        "clang-19-dwarf5.so",
        "gcc-dwarf5-rel.ko",
        "clang-19-dwarf5-rel.ko",
    ] {
        let bytes = data(elf);
        let whole = btfgen::dwarf::to_btf(&bytes, None).unwrap();
        let types = btfgen::dwarf::to_btf_with(&bytes, None, &types_only).unwrap();
        let (whole, types) = (Btf::parse(&whole).unwrap(), Btf::parse(&types).unwrap());
        let (whole, types) = (canonical(&whole), canonical(&types));
        let kind_of = |line: &str| line.split(' ').next().unwrap_or("").to_string();
        let without = |map: &BTreeMap<String, usize>, kinds: &[&str]| -> BTreeMap<String, usize> {
            map.iter()
                .filter(|(line, _)| !kinds.contains(&kind_of(line).as_str()))
                .map(|(line, &n)| (line.clone(), n))
                .collect()
        };
        assert!(
            whole.keys().any(|line| kind_of(line) == "FUNC"),
            "{elf}: the whole conversion has functions"
        );
        assert!(
            !types.keys().any(|line| kind_of(line) == "FUNC"),
            "{elf}: a FUNC without functions"
        );
        let without_function_tags = |map: BTreeMap<String, usize>| -> BTreeMap<String, usize> {
            map.into_iter()
                .filter(|(line, _)| !(line.starts_with("DECL_TAG ") && line.contains(" FUNC ")))
                .collect()
        };
        let (a, b) = (
            without(&types, &["FUNC_PROTO"]),
            without_function_tags(without(&whole, &["FUNC", "FUNC_PROTO"])),
        );
        assert!(a == b, "{elf}: the types differ:\n{}", difference(&a, &b));
        for (line, &n) in types
            .iter()
            .filter(|(line, _)| kind_of(line) == "FUNC_PROTO")
        {
            assert!(
                whole.get(line).is_some_and(|&m| m >= n),
                "{elf}: a prototype the whole conversion lacks: {line}"
            );
        }
    }
}

/// A unit with a 64-bit enum and a forward declaration of an enum of the same name (libbpf's
/// prim phase merges the two), each behind a `volatile` (found by the `dwarf_structured`
/// fuzz target): converted in one pass, as with a first pass, the two `volatile`s are one
/// type, as libbpf's reference phase makes them (the shapes had made each canonical).
#[test]
fn volatiles_of_an_enum64_and_its_declaration_are_one_type() {
    let elf = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/regressions/enum_decl_beside_enum64.elf"
    ))
    .unwrap();
    let btf = to_btf_both_ways(&elf, None).unwrap();
    let btf = Btf::parse(&btf).unwrap();
    let volatile_enums = (1..btf.type_cnt())
        .filter(|&id| {
            let t = btf.type_by_id(id).unwrap();
            t.kind() == Some(btfgen::btf::Kind::Volatile)
                && t.kind
                    .modified_type()
                    .and_then(|target| btf.type_by_id(target).ok())
                    .and_then(|target| target.kind())
                    == Some(btfgen::btf::Kind::Enum64)
        })
        .count();
    assert_eq!(volatile_enums, 1);
}
