//! Linux 7.1's BTF: the 32-byte header and its layout section, and types of kinds btfgen does
//! not know, which the layout section lets a reader step over.
//!
//! - The real 7.1 BTF parses, and `btfgen min-core-btf` against it works for every fixture
//!   object, writes a 24-byte header, and gives the same bytes as against the same BTF with a
//!   24-byte header and no layout section.
//! - Types of unknown kinds, inserted anywhere (every later id shifted) and described by a
//!   layout section, change no output byte: for every manifest pair (both byte orders, split
//!   BTF with a base, a module BTF) and every fixture object against the example kernel and the
//!   real 7.1 BTF. Without a layout section they are an error naming the type and kind.
//! - Malformed headers and layout sections give clear errors.
//!
//! The BTFs are rewritten by `support/raw_btf.rs`, byte by byte, not by btfgen's own writer.

#[path = "support/fixtures.rs"]
mod fixtures;
#[path = "support/raw_btf.rs"]
mod raw_btf;

use btfgen::Error;
use btfgen::btf::{Btf, Entry, Kind, KindSet, NameFilter, Validation};
use fixtures::{Output, Pair, TargetMode, manifest_pairs, pipeline, read};
use raw_btf::{LAYOUT_7_1, RawBtf, vmlinux_7_1};
use std::path::{Path, PathBuf};
use std::process::Command;

const BTFGEN: &str = env!("CARGO_BIN_EXE_btfgen");

/// Types of kinds btfgen does not know that the tests insert, in turn: (kind, vlen, record
/// length), as [`layout_with_unknown`] describes them.
const UNKNOWN: [(u32, u16, usize); 3] = [(20, 2, 12 + 4 + 2 * 8), (21, 0, 12), (22, 5, 12 + 5 * 4)];

/// Linux 7.1's layout entries, plus kinds 20 (4 bytes, 8 per entry), 21 (nothing) and 22 (4
/// per entry).
fn layout_with_unknown() -> Vec<(u8, u8)> {
    let mut layout = LAYOUT_7_1.to_vec();
    layout.extend([(4, 8), (0, 0), (0, 4)]);
    layout
}

/// Where to insert unknown types into a BTF of `records` types: first, middle, last.
fn positions(records: usize) -> [usize; 3] {
    [0, records / 2, records]
}

/// `raw` (whose first id is `first_id`) with an unknown type inserted before each of the
/// original records at `at` (ascending), cycling through [`UNKNOWN`]; also calls
/// `inserted(id)` with each inserted type's id at the time of its insertion (the last first).
/// `named`: the inserted types get names; not in a base, whose string section must keep its
/// length (its split's string offsets start after it).
fn with_unknown(
    raw: &RawBtf,
    first_id: u32,
    at: &[usize],
    named: bool,
    mut inserted: impl FnMut(u32),
) -> RawBtf {
    let mut out = raw.clone();
    // From the last, so every position still counts original records only.
    for (n, &index) in at.iter().enumerate().rev() {
        let (kind, vlen, len) = UNKNOWN[n % UNKNOWN.len()];
        let name = named.then(|| format!("unknown_kind_{kind}"));
        out.insert_unknown(index, first_id, kind, vlen, len, name.as_deref());
        inserted(first_id + index as u32);
    }
    out
}

/// One target as the tests give it: plain, and with unknown types and a layout section.
struct Variants {
    plain: (Option<Vec<u8>>, Vec<u8>),
    unknown: (Option<Vec<u8>>, Vec<u8>),
    /// The unknown-kind variant without a layout section, and the error its parse must give.
    no_layout: (Option<Vec<u8>>, Vec<u8>, Error),
}

/// `target` (split on `base` if given) and its variant with unknown types in both.
fn variants(target: &[u8], base: Option<&[u8]>) -> Variants {
    let raw = RawBtf::parse(target);
    let layout = layout_with_unknown();
    match base {
        None => {
            let unknown = with_unknown(&raw, 1, &positions(raw.records.len()), true, drop);
            let error = Error::UnknownKind { id: 1, kind: 20 };
            Variants {
                plain: (None, target.to_vec()),
                unknown: (None, unknown.to_bytes(Some(&layout))),
                no_layout: (None, unknown.to_bytes(None), error),
            }
        }
        Some(base) => {
            let base_raw = RawBtf::parse(base);
            // The split's references to the base, and its own ids, move with the base's.
            let mut split = raw.clone();
            let base_unknown = with_unknown(
                &base_raw,
                1,
                &positions(base_raw.records.len()),
                false,
                |id| split.shift_refs(id),
            );
            let first_id = base_unknown.records.len() as u32 + 1;
            let unknown = with_unknown(
                &split,
                first_id,
                &positions(split.records.len()),
                true,
                drop,
            );
            let base_bytes = base_unknown.to_bytes(Some(&layout));
            let error = Error::UnknownKind {
                id: first_id,
                kind: 20,
            };
            Variants {
                plain: (Some(base.to_vec()), target.to_vec()),
                unknown: (Some(base_bytes.clone()), unknown.to_bytes(Some(&layout))),
                no_layout: (Some(base_bytes), unknown.to_bytes(None), error),
            }
        }
    }
}

fn mode(variant: &(Option<Vec<u8>>, Vec<u8>)) -> TargetMode<'_> {
    match &variant.0 {
        None => TargetMode::Main(&variant.1),
        Some(base) => TargetMode::SplitMain {
            base,
            split: &variant.1,
        },
    }
}

/// Both runs give the same output bytes (and dump), or both fail the same way (an error's
/// type ids may differ: they are the inputs').
fn assert_same(what: &str, plain: btfgen::Result<Output>, unknown: btfgen::Result<Output>) {
    match (plain, unknown) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a.bytes, b.bytes, "{what}: output bytes differ");
            assert_eq!(a.dump, b.dump, "{what}: output dump differs");
        }
        (Err(a), Err(b)) => assert_eq!(
            std::mem::discriminant(&a),
            std::mem::discriminant(&b),
            "{what}: {a} vs {b}"
        ),
        (a, b) => panic!(
            "{what}: {:?} vs {:?}",
            a.map(|o| o.bytes.len()),
            b.map(|o| o.bytes.len())
        ),
    }
}

/// Every fixture object (`tests/data/progs/*.bpf.o`), by name.
fn fixture_objects() -> Vec<(String, Vec<u8>)> {
    let mut objects: Vec<(String, Vec<u8>)> = std::fs::read_dir(fixtures::data_dir().join("progs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_str().is_some_and(|s| s.ends_with(".bpf.o")))
        .map(|p| {
            (
                p.file_name().unwrap().to_str().unwrap().to_string(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    objects.sort();
    assert!(objects.len() >= 10, "fixture objects missing");
    objects
}

#[test]
fn unknown_kinds_change_no_output_byte_for_any_manifest_pair() {
    let mut pairs = manifest_pairs();
    // Every fixture object, also those the manifest pairs only with the running kernel.
    for (name, _) in fixture_objects() {
        pairs.push(Pair {
            object: format!("progs/{name}"),
            target: "targets/btf__example_kernel.btf".into(),
            base: None,
        });
    }
    let (mut equal, mut big_endian) = (0, 0);
    for pair in &pairs {
        let what = format!("{} on {} {:?}", pair.object, pair.target, pair.base);
        let object = read(&pair.object);
        let target = read(&pair.target);
        let base = pair.base.as_ref().map(|b| read(b));
        big_endian += usize::from(target[0] == 0xeb);
        let v = variants(&target, base.as_deref());
        let plain = pipeline(mode(&v.plain), &[&object]);
        equal += usize::from(plain.is_ok());
        assert_same(&what, plain, pipeline(mode(&v.unknown), &[&object]));
        let (no_base, no_layout, error) = &v.no_layout;
        let parsed = match no_base {
            None => Btf::parse(no_layout).map(drop),
            Some(base) => Btf::parse_split(no_layout, &Btf::parse(base).unwrap()).map(drop),
        };
        assert_eq!(
            parsed,
            Err(error.clone()),
            "{what}: without a layout section"
        );
    }
    assert!(equal >= 20, "only {equal} pairs minimized");
    assert!(big_endian >= 2, "no big-endian target");
}

#[test]
fn a_module_btf_with_unknown_kinds_on_a_base_with_them_minimizes_alike() {
    let object = read("progs/module.bpf.o");
    let v = variants(&read("targets/module.btf"), Some(&read("targets/base.btf")));
    let as_module = |(base, module): &(Option<Vec<u8>>, Vec<u8>)| {
        let base = base.as_deref().unwrap();
        pipeline(TargetMode::Module { base, module }, &[&object])
    };
    let plain = as_module(&v.plain);
    assert!(plain.is_ok(), "{plain:?}");
    assert_same("--module-btf", plain, as_module(&v.unknown));
}

/// A fresh directory for files the CLI reads and writes.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("btfgen-layout-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `btfgen min-core-btf TARGET OUT OBJECT`: the output bytes, or stderr.
fn min_core_btf(target: &Path, object: &Path, out: &Path) -> Result<Vec<u8>, String> {
    let run = Command::new(BTFGEN)
        .arg("min-core-btf")
        .args([target, out, object])
        .output()
        .unwrap();
    if run.status.success() {
        Ok(std::fs::read(out).unwrap())
    } else {
        Err(String::from_utf8_lossy(&run.stderr).into_owned())
    }
}

#[test]
fn min_core_btf_against_the_real_7_1_btf() {
    let real = vmlinux_7_1();
    for validation in [Validation::Full, Validation::OnUse] {
        let btf = Btf::parse_with(&real, None, validation).unwrap();
        assert_eq!(btf.type_cnt(), 103_407);
        assert!(!(1..btf.type_cnt()).any(|id| btf.is_unknown_kind(id)));
    }
    let raw = RawBtf::parse(&real);
    assert_eq!(
        raw.to_bytes(Some(&LAYOUT_7_1)),
        real,
        "RawBtf does not rebuild the file"
    );
    let dir = temp_dir("7.1");
    let files = [
        ("vmlinux-7.1.btf", real.clone()),
        ("no-layout.btf", raw.to_bytes(None)),
        (
            "unknown-kinds.btf",
            with_unknown(&raw, 1, &positions(raw.records.len()), true, drop)
                .to_bytes(Some(&layout_with_unknown())),
        ),
    ];
    for (name, bytes) in &files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    let mut kept_something = Vec::new();
    for (name, object) in fixture_objects() {
        let obj = dir.join(&name);
        std::fs::write(&obj, object).unwrap();
        let out = |i: usize| {
            let target = dir.join(files[i].0);
            min_core_btf(&target, &obj, &dir.join("out.btf"))
                .unwrap_or_else(|e| panic!("{name} on {}: {e}", files[i].0))
        };
        let minimized = out(0);
        // Every loader reads a 24-byte header; the layout section is not carried over.
        assert_eq!(
            minimized[4..8],
            24u32.to_le_bytes(),
            "{name}: header length"
        );
        // (The other fixtures relocate test types that vmlinux lacks: they keep nothing.)
        if Btf::parse(&minimized).unwrap().type_cnt() > 1 {
            kept_something.push(name.clone());
        }
        assert_eq!(
            out(1),
            minimized,
            "{name}: the layout section changed the output"
        );
        assert_eq!(
            out(2),
            minimized,
            "{name}: unknown kinds changed the output"
        );
    }
    assert_eq!(
        kept_something,
        ["calls.bpf.o", "kmemsize.bpf.o", "multi.bpf.o", "task.bpf.o"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_a_layout_section_the_cli_names_the_type_and_kind() {
    let raw = RawBtf::parse(&read("targets/btf__example_kernel.btf"));
    let at = raw.records.len() / 2;
    let unknown = with_unknown(&raw, 1, &[at], true, drop).to_bytes(None);
    let dir = temp_dir("no-layout");
    let (target, object) = (dir.join("target.btf"), dir.join("task.bpf.o"));
    std::fs::write(&target, unknown).unwrap();
    std::fs::write(&object, read("progs/task.bpf.o")).unwrap();
    let out = dir.join("out.btf");
    let err = min_core_btf(&target, &object, &out).unwrap_err();
    let id = at + 1;
    assert!(
        err.contains(&format!("[{id}]")) && err.contains("kind 20"),
        "unclear error: {err}"
    );
    assert!(!out.exists(), "an output was written");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The fields fixture with a 32-byte header, a layout section, and a type of kind 20 named
/// `task_struct` (a name the filter below asks for) inserted before type `before` (1-based).
fn fields_with_unknown(before: u32) -> RawBtf {
    let mut raw = RawBtf::parse(&read("targets/btf__fields.btf"));
    raw.insert_unknown(
        before as usize - 1,
        1,
        20,
        3,
        12 + 4 + 3 * 8,
        Some("task_struct"),
    );
    raw
}

#[test]
fn a_type_of_an_unknown_kind_is_never_read_nor_a_candidate() {
    let id = 3;
    let bytes = fields_with_unknown(id).to_bytes(Some(&layout_with_unknown()));
    for validation in [Validation::Full, Validation::OnUse] {
        let btf = Btf::parse_with(&bytes, None, validation).unwrap();
        assert!(btf.is_unknown_kind(id));
        assert!(!btf.is_unknown_kind(id - 1) && !btf.is_unknown_kind(id + 1));
        assert!(
            btf.type_by_id(id).is_err(),
            "a type of an unknown kind decodes"
        );
        let (name_off, kind) = btf.name_off_and_kind(id).unwrap();
        assert_eq!((btf.name(name_off).unwrap(), kind), ("task_struct", None));
        let entries: Vec<Entry<'_>> = btf.entries().map(Result::unwrap).collect();
        match entries[id as usize - 1] {
            Entry::Unknown(u) => assert_eq!((u.id, u.kind, u.vlen), (id, 20, 3)),
            other => panic!("entry {id}: {other:?}"),
        }
        assert_eq!(btf.types().filter(|t| t.is_err()).count(), 1);
        let mut filter = NameFilter::new().unwrap();
        let every_kind = (1..20).fold(KindSet::EMPTY, |set, raw| {
            set.with(Kind::from_raw(raw).unwrap())
        });
        filter.add(b"task_struct", every_kind);
        assert_eq!(btf.filtered(&filter).unwrap(), Vec::<u32>::new());
        let mut dump = String::new();
        btfgen::btf::dump::dump(&btf, &mut dump).unwrap();
        let line = format!("[{id}] UNKNOWN 'task_struct' kind=20 vlen=3\n");
        assert!(dump.contains(&line), "{dump}");
    }
}

#[test]
fn a_known_type_referring_to_an_unknown_one_is_invalid() {
    let id = 3;
    let raw = fields_with_unknown(id);
    let mut bytes = raw.to_bytes(Some(&layout_with_unknown()));
    // Point the first PTR at the inserted type.
    let ptr = (0..raw.records.len())
        .find(|&i| raw.info(i) >> 24 == Kind::Ptr as u32)
        .expect("a PTR");
    let at = 32 + raw.records[ptr] + 8;
    bytes[at..at + 4].copy_from_slice(&id.to_le_bytes());
    let err = Btf::parse(&bytes).unwrap_err();
    assert!(
        matches!(err, Error::BadType { reason, .. } if reason.contains("does not know")),
        "{err}"
    );
    let lazy = Btf::parse_with(&bytes, None, Validation::OnUse).unwrap();
    let ptr_id = (1..lazy.type_cnt())
        .find(|&i| {
            lazy.name_off_and_kind(i).unwrap().1 == Some(Kind::Ptr) && lazy.type_by_id(i).is_err()
        })
        .expect("the PTR fails when read");
    assert!(lazy.skip_mods_and_typedefs(ptr_id).is_err());
}

/// The fields fixture as Linux 7.1 would write it (types, 80-byte layout, strings), with its
/// section lengths.
fn fields_7_1() -> (Vec<u8>, u32, u32) {
    let raw = RawBtf::parse(&read("targets/btf__fields.btf"));
    let bytes = raw.to_bytes(Some(&LAYOUT_7_1));
    (bytes, raw.types.len() as u32, raw.strings.len() as u32)
}

fn set(blob: &mut [u8], at: usize, value: u32) {
    blob[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

/// What a malformed input must give.
#[derive(Debug)]
enum Expect {
    /// `Error::BadHeader` whose reason contains this text.
    Header(&'static str),
    /// `Error::BadLayout` for this kind.
    Layout(u32),
    /// `Error::BadType` for this id whose reason contains this text.
    Type(u32, &'static str),
    /// `Error::UnknownKind`.
    Unknown(u32, u32),
    /// Parses, with as many types as the fixture.
    Parses,
}

#[test]
fn malformed_headers_and_layout_sections_give_clear_errors() {
    use Expect::*;
    let (good, t, s) = fields_7_1();
    let l = 80u32;
    let types = |blob: &[u8]| blob[32..32 + t as usize].to_vec();
    let strings = |blob: &[u8]| blob[(32 + t + l) as usize..].to_vec();
    let layout = |blob: &[u8]| blob[(32 + t) as usize..(32 + t + l) as usize].to_vec();
    // Types, strings (NUL-padded to keep the layout aligned), layout: the other order the
    // kernel accepts.
    let s4 = s.next_multiple_of(4);
    let reordered = |blob: &[u8], extra: &[u8]| {
        let mut out = blob[..32].to_vec();
        out.extend(types(blob));
        out.extend(strings(blob));
        out.resize(out.len() + (s4 - s) as usize, 0);
        out.extend(layout(blob));
        out.extend(extra);
        set(&mut out, 16, t);
        set(&mut out, 20, s4);
        set(&mut out, 24, t + s4);
        out
    };
    // The header grown to `len` bytes, the extra bytes `fill`.
    let longer = |len: u32, fill: u8| {
        let mut out = good[..32].to_vec();
        out.resize(len as usize, fill);
        out.extend(&good[32..]);
        set(&mut out, 4, len);
        out
    };
    let mutated = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = good.clone();
        f(&mut b);
        b
    };
    let info_of_first = 32 + 4;
    let info = u32::from_le_bytes(good[info_of_first..info_of_first + 4].try_into().unwrap());
    let cases: Vec<(&str, Vec<u8>, Expect)> = vec![
        ("as written by 7.1", good.clone(), Parses),
        ("types, strings, layout", reordered(&good, &[]), Parses),
        (
            "empty layout section, offset ignored",
            mutated(&|b| {
                set(b, 16, t);
                set(b, 24, 0xdead_beef);
                set(b, 28, 0);
                b.drain((32 + t) as usize..(32 + t + l) as usize);
            }),
            Parses,
        ),
        (
            "header of 28 bytes",
            mutated(&|b| set(b, 4, 28)),
            Header("tail"),
        ),
        (
            "header of 36 bytes, zero tail",
            longer(36, 0),
            Header("unsupported header length"),
        ),
        (
            "header of 40 bytes, non-zero tail",
            longer(40, 1),
            Header("tail"),
        ),
        (
            "layout misaligned",
            mutated(&|b| set(b, 24, t + 2)),
            Header("4-byte aligned"),
        ),
        (
            "layout length 78",
            mutated(&|b| set(b, 28, 78)),
            Header("multiple"),
        ),
        (
            "layout inside the types",
            mutated(&|b| set(b, 24, t - 4)),
            Header("overlaps the type"),
        ),
        (
            "strings inside the layout",
            mutated(&|b| {
                set(b, 16, t + l - 4);
                set(b, 20, s + 4);
            }),
            Header("overlaps the string"),
        ),
        (
            "gap after the layout",
            mutated(&|b| set(b, 28, l - 4)),
            Header("does not follow the layout"),
        ),
        (
            "layout after strings, overlapping them",
            {
                let mut b = reordered(&good, &[]);
                set(&mut b, 24, t + s4 - 4);
                b
            },
            Header("overlaps the string"),
        ),
        (
            "layout past the end",
            {
                let mut b = reordered(&good, &[]);
                set(&mut b, 28, l + 4);
                b
            },
            Header("past end"),
        ),
        (
            "data after the layout",
            reordered(&good, &[0; 4]),
            Header("data after the layout"),
        ),
        (
            "neither section after the types",
            mutated(&|b| {
                set(b, 16, t + 4);
                set(b, 24, t + 4 + s4);
            }),
            Header("neither"),
        ),
        (
            "layout flags",
            mutated(&|b| b[(32 + t + 4 * 5 + 2) as usize] = 1),
            Layout(5),
        ),
        (
            "STRUCT entry with 8-byte members",
            mutated(&|b| b[(32 + t + 4 * 4 + 1) as usize] = 8),
            Layout(4),
        ),
        (
            "UNKN entry sized",
            mutated(&|b| b[(32 + t) as usize] = 4),
            Layout(0),
        ),
        (
            "33 entries",
            {
                let raw = RawBtf::parse(&read("targets/btf__fields.btf"));
                let mut entries = LAYOUT_7_1.to_vec();
                entries.resize(33, (0, 0));
                raw.to_bytes(Some(&entries))
            },
            Layout(32),
        ),
        (
            "known type with info bit 16",
            mutated(&|b| set(b, info_of_first, info | 1 << 16)),
            Type(1, "unused"),
        ),
        (
            "known type with info bit 29",
            mutated(&|b| set(b, info_of_first, info | 1 << 29)),
            Type(1, "unused"),
        ),
        (
            "undescribed kind 25",
            mutated(&|b| set(b, info_of_first, 25 << 24)),
            Unknown(1, 25),
        ),
    ];
    let with_20 = |info_bits: u32| {
        let mut raw = RawBtf::parse(&read("targets/btf__fields.btf"));
        raw.insert_unknown(0, 1, 20, 1, 12 + 4 + 8, None);
        let mut b = raw.to_bytes(Some(&layout_with_unknown()));
        set(&mut b, 32 + 4, 20 << 24 | 1 | info_bits);
        b
    };
    let cases = cases.into_iter().chain([
        ("unknown kind 20", with_20(0), Parses),
        ("unknown kind 20, kind_flag", with_20(1 << 31), Parses),
        (
            "unknown kind 20, info bit 23",
            with_20(1 << 23),
            Type(1, "unused"),
        ),
    ]);
    let count = Btf::parse(&read("targets/btf__fields.btf"))
        .unwrap()
        .type_cnt();
    for (what, blob, expect) in cases {
        let got = Btf::parse(&blob);
        let ok = match (&got, &expect) {
            (Ok(btf), Parses) => btf.type_cnt() == count || btf.type_cnt() == count + 1,
            (Err(Error::BadHeader(r)), Header(text)) => r.contains(text),
            (Err(Error::BadLayout { kind, .. }), Layout(want)) => kind == want,
            (Err(Error::BadType { id, reason }), Type(want, text)) => {
                id == want && reason.contains(text)
            }
            (Err(Error::UnknownKind { id, kind }), Unknown(i, k)) => (id, kind) == (i, k),
            _ => false,
        };
        assert!(
            ok,
            "{what}: expected {expect:?}, got {:?}",
            got.map(|b| b.type_cnt())
        );
        // Every error reads clearly: says BTF and what is wrong.
        if let Err(e) = got {
            assert!(e.to_string().contains("BTF"), "{what}: {e}");
        }
    }
}

#[test]
fn big_endian_layout_sections_are_read_in_their_byte_order() {
    let raw = RawBtf::parse(&read("targets/btf__enums_be.btf"));
    assert!(raw.big_endian);
    let good = raw.to_bytes(Some(&layout_with_unknown()));
    assert!(Btf::parse(&good).is_ok());
    let layout_at = 32 + raw.types.len();
    // Flags are a big-endian u16: its low byte is the entry's last.
    let mut flags = good.clone();
    flags[layout_at + 4 * 21 + 3] = 1;
    assert!(matches!(
        Btf::parse(&flags),
        Err(Error::BadLayout { kind: 21, .. })
    ));
    let mut unknown = raw.clone();
    unknown.insert_unknown(1, 1, 22, 3, 12 + 3 * 4, Some("be_unknown"));
    let bytes = unknown.to_bytes(Some(&layout_with_unknown()));
    let btf = Btf::parse(&bytes).unwrap();
    assert!(btf.is_unknown_kind(2));
    assert_eq!(
        btf.type_cnt(),
        Btf::parse(&read("targets/btf__enums_be.btf"))
            .unwrap()
            .type_cnt()
            + 1
    );
}

#[test]
fn btfgen_dump_prints_unknown_kinds_in_place() {
    let raw = RawBtf::parse(&read("targets/btf__example_kernel.btf"));
    let n = raw.records.len();
    let bytes =
        with_unknown(&raw, 1, &positions(n), true, drop).to_bytes(Some(&layout_with_unknown()));
    let dir = temp_dir("dump");
    let file = dir.join("unknown.btf");
    std::fs::write(&file, bytes).unwrap();
    let run = Command::new(BTFGEN)
        .arg("dump")
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let out = String::from_utf8(run.stdout).unwrap();
    let types: Vec<&str> = out.lines().filter(|l| l.starts_with('[')).collect();
    assert_eq!(types.len(), n + 3);
    // First, middle (after the first unknown and n / 2 originals), last.
    let middle = n / 2 + 2;
    assert_eq!(types[0], "[1] UNKNOWN 'unknown_kind_20' kind=20 vlen=2");
    assert_eq!(
        types[middle - 1],
        format!("[{middle}] UNKNOWN 'unknown_kind_21' kind=21 vlen=0")
    );
    assert_eq!(
        types[n + 2],
        format!("[{}] UNKNOWN 'unknown_kind_22' kind=22 vlen=5", n + 3)
    );
    let plain = Command::new(BTFGEN)
        .arg("dump")
        .arg(fixtures::data_dir().join("targets/btf__example_kernel.btf"))
        .output()
        .unwrap();
    let plain = String::from_utf8(plain.stdout).unwrap();
    // The other types print in the same order, with the same kinds and names.
    let kind_and_name = |line: &str| {
        let rest = line.split_once("] ").map_or("", |(_, rest)| rest);
        let quote = rest.find('\'').unwrap_or(0);
        let end = rest[quote + 1..]
            .find('\'')
            .map_or(rest.len(), |e| quote + e + 2);
        rest[..end].to_string()
    };
    let known: Vec<String> = types
        .iter()
        .filter(|l| !l.contains("UNKNOWN"))
        .map(|l| kind_and_name(l))
        .collect();
    let before: Vec<String> = plain
        .lines()
        .filter(|l| l.starts_with('['))
        .map(kind_and_name)
        .collect();
    assert!(
        known.contains(&"STRUCT 'task_struct'".to_string()),
        "{known:?}"
    );
    assert_eq!(known, before);
    let _ = std::fs::remove_dir_all(&dir);
}
