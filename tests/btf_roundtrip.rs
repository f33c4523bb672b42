//! Round trips through `BtfWriter`.
//!
//! - Property: random well-formed BTF (every kind, names with duplicates, references to earlier
//!   types and pointers anywhere) written with `BtfWriter` parses back to exactly what was
//!   generated, and copying every type with `BtfWriter::copy_type` gives the same type graph.
//! - The running kernel's BTF copied through the writer dumps identically with `bpftool`.

#[path = "support/names.rs"]
mod names;

use btfgen::btf::write::BtfWriter;
use btfgen::btf::{Btf, Endianness, Kind, TypeKind};
use proptest::prelude::*;
use std::process::Command;

// ---------------------------------------------------------------------------------------------
// A model of one type, with names as strings (so it compares across string sections)
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
enum Model {
    Int {
        name: String,
        size: u32,
        encoding: u8,
        offset: u8,
        bits: u8,
    },
    Ptr(u32),
    Array {
        elem: u32,
        index: u32,
        nelems: u32,
    },
    Composite {
        union: bool,
        name: String,
        size: u32,
        kind_flag: bool,
        members: Vec<(String, u32, u32)>,
    },
    Enum {
        is64: bool,
        name: String,
        size: u32,
        signed: bool,
        values: Vec<(String, u64)>,
    },
    Fwd {
        name: String,
        union: bool,
    },
    /// TYPEDEF, VOLATILE, CONST, RESTRICT, TYPE_TAG.
    Modifier {
        kind: Kind,
        name: String,
        target: u32,
    },
    Func {
        name: String,
        proto: u32,
        linkage: u16,
    },
    FuncProto {
        ret: u32,
        params: Vec<(String, u32)>,
    },
    Var {
        name: String,
        target: u32,
        linkage: u32,
    },
    Datasec {
        name: String,
        size: u32,
        vars: Vec<(u32, u32, u32)>,
    },
    Float {
        name: String,
        size: u32,
    },
    DeclTag {
        name: String,
        target: u32,
        component_idx: i32,
    },
}

/// The model of type `id` as parsed.
fn model_of(btf: &Btf<'_>, id: u32) -> Model {
    let ty = btf.type_by_id(id).unwrap();
    let s = |off: u32| btf.name(off).unwrap().to_string();
    let name = s(ty.name_off);
    match ty.kind {
        TypeKind::Void => panic!("void has no record"),
        TypeKind::Int {
            size,
            encoding,
            offset,
            bits,
        } => Model::Int {
            name,
            size,
            encoding,
            offset,
            bits,
        },
        TypeKind::Ptr(t) => {
            assert!(name.is_empty());
            Model::Ptr(t)
        }
        TypeKind::Array(a) => {
            assert!(name.is_empty());
            Model::Array {
                elem: a.elem_type,
                index: a.index_type,
                nelems: a.nelems,
            }
        }
        TypeKind::Struct(c) | TypeKind::Union(c) => Model::Composite {
            union: ty.kind() == Some(Kind::Union),
            name,
            size: c.size,
            kind_flag: c.kind_flag,
            members: c
                .members()
                .map(|m| (s(m.name_off), m.type_id, m.raw_offset))
                .collect(),
        },
        TypeKind::Enum(e) | TypeKind::Enum64(e) => Model::Enum {
            is64: ty.kind() == Some(Kind::Enum64),
            name,
            size: e.size,
            signed: e.signed,
            values: e.values().map(|v| (s(v.name_off), v.value)).collect(),
        },
        TypeKind::Fwd { union } => Model::Fwd { name, union },
        TypeKind::Typedef(t)
        | TypeKind::Volatile(t)
        | TypeKind::Const(t)
        | TypeKind::Restrict(t)
        | TypeKind::TypeTag(t) => Model::Modifier {
            kind: ty.kind().unwrap(),
            name,
            target: t,
        },
        TypeKind::Func { proto, linkage } => Model::Func {
            name,
            proto,
            linkage,
        },
        TypeKind::FuncProto(p) => {
            assert!(name.is_empty());
            Model::FuncProto {
                ret: p.return_type,
                params: p.params().map(|p| (s(p.name_off), p.type_id)).collect(),
            }
        }
        TypeKind::Var { type_id, linkage } => Model::Var {
            name,
            target: type_id,
            linkage,
        },
        TypeKind::Datasec(d) => Model::Datasec {
            name,
            size: d.size,
            vars: d.vars().map(|v| (v.type_id, v.offset, v.size)).collect(),
        },
        TypeKind::Float { size } => Model::Float { name, size },
        TypeKind::DeclTag {
            type_id,
            component_idx,
        } => Model::DeclTag {
            name,
            target: type_id,
            component_idx,
        },
    }
}

/// Append `model` with the writer's low-level API; returns the new id.
fn write_model(w: &mut BtfWriter, model: &Model) -> u32 {
    let push = |w: &mut BtfWriter, words: &[u32]| {
        for &word in words {
            w.push_word(word).unwrap();
        }
    };
    let vlen = |n: usize| u16::try_from(n).unwrap();
    match model {
        Model::Int {
            name,
            size,
            encoding,
            offset,
            bits,
        } => {
            let id = w.begin_type(name, Kind::Int, false, 0, *size).unwrap();
            push(
                w,
                &[(u32::from(*encoding) << 24) | (u32::from(*offset) << 16) | u32::from(*bits)],
            );
            id
        }
        Model::Ptr(t) => w.begin_type("", Kind::Ptr, false, 0, *t).unwrap(),
        Model::Array {
            elem,
            index,
            nelems,
        } => {
            let id = w.begin_type("", Kind::Array, false, 0, 0).unwrap();
            push(w, &[*elem, *index, *nelems]);
            id
        }
        Model::Composite {
            union,
            name,
            size,
            kind_flag,
            members,
        } => {
            let kind = if *union { Kind::Union } else { Kind::Struct };
            let offs: Vec<u32> = members
                .iter()
                .map(|(n, _, _)| w.add_string(n).unwrap())
                .collect();
            let id = w
                .begin_type(name, kind, *kind_flag, vlen(members.len()), *size)
                .unwrap();
            for ((_, t, raw), n) in members.iter().zip(offs) {
                push(w, &[n, *t, *raw]);
            }
            id
        }
        Model::Enum {
            is64,
            name,
            size,
            signed,
            values,
        } => {
            let kind = if *is64 { Kind::Enum64 } else { Kind::Enum };
            let id = w
                .begin_type(name, kind, *signed, vlen(values.len()), *size)
                .unwrap();
            for (n, v) in values {
                let n = w.add_string(n).unwrap();
                push(w, &[n, *v as u32]);
                if *is64 {
                    push(w, &[(*v >> 32) as u32]);
                }
            }
            id
        }
        Model::Fwd { name, union } => w.begin_type(name, Kind::Fwd, *union, 0, 0).unwrap(),
        Model::Modifier { kind, name, target } => {
            w.begin_type(name, *kind, false, 0, *target).unwrap()
        }
        Model::Func {
            name,
            proto,
            linkage,
        } => w
            .begin_type(name, Kind::Func, false, *linkage, *proto)
            .unwrap(),
        Model::FuncProto { ret, params } => {
            let offs: Vec<u32> = params
                .iter()
                .map(|(n, _)| w.add_string(n).unwrap())
                .collect();
            let id = w
                .begin_type("", Kind::FuncProto, false, vlen(params.len()), *ret)
                .unwrap();
            for ((_, t), n) in params.iter().zip(offs) {
                push(w, &[n, *t]);
            }
            id
        }
        Model::Var {
            name,
            target,
            linkage,
        } => {
            let id = w.begin_type(name, Kind::Var, false, 0, *target).unwrap();
            push(w, &[*linkage]);
            id
        }
        Model::Datasec { name, size, vars } => {
            let id = w
                .begin_type(name, Kind::Datasec, false, vlen(vars.len()), *size)
                .unwrap();
            for (t, off, size) in vars {
                push(w, &[*t, *off, *size]);
            }
            id
        }
        Model::Float { name, size } => w.begin_type(name, Kind::Float, false, 0, *size).unwrap(),
        Model::DeclTag {
            name,
            target,
            component_idx,
        } => {
            let id = w
                .begin_type(name, Kind::DeclTag, false, 0, *target)
                .unwrap();
            push(w, &[*component_idx as u32]);
            id
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Generation: raw random seeds interpreted into a well-formed model
// ---------------------------------------------------------------------------------------------

/// Random material for one type; [`interpret`] turns it into a valid [`Model`].
#[derive(Debug, Clone)]
struct Seed {
    kind: u8,
    name: String,
    flag: bool,
    a: u32,
    b: u32,
    c: u32,
    items: Vec<(String, u32, u32, u64)>,
}

/// Names drawn from a small pool (so duplicates are common, including between types and
/// members, and names that end others: `ar`, `struct`) or random identifiers.
fn name_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(vec!["a", "b", "foo", "bar", "ar", "task_struct", "struct", "x1", "_"]).prop_map(String::from),
        2 => "[a-z_][a-z0-9_]{0,12}",
    ]
}

fn seed_strategy() -> impl Strategy<Value = Seed> {
    (
        any::<u8>(),
        name_strategy(),
        any::<bool>(),
        any::<u32>(),
        any::<u32>(),
        any::<u32>(),
        prop::collection::vec(
            (
                prop_oneof![1 => Just(String::new()), 3 => name_strategy()],
                any::<u32>(),
                any::<u32>(),
                any::<u64>(),
            ),
            0..6,
        ),
    )
        .prop_map(|(kind, name, flag, a, b, c, items)| Seed {
            kind,
            name,
            flag,
            a,
            b,
            c,
            items,
        })
}

/// The model of type `id` (1-based) out of `count` types: value references go to earlier ids
/// (so no cycle), pointers anywhere in `0..=count`.
fn interpret(seed: &Seed, id: u32, count: u32) -> Model {
    let earlier = |x: u32| x % id; // 0 (void) ..= id - 1
    let earlier_nonvoid = |x: u32| 1 + x % (id - 1); // needs id > 1
    let anywhere = |x: u32| x % (count + 1);
    let name = seed.name.clone();
    let mut kind = seed.kind % 19;
    // ARRAY, DATASEC entries, FUNC and DECL_TAG need a non-void earlier type.
    if id == 1 && matches!(kind, 2 | 13 | 11 | 16) {
        kind = 0;
    }
    match kind {
        0 => {
            let size = [1, 2, 4, 8, 16][seed.a as usize % 5];
            let bits = (seed.b % (size * 8 + 1)) as u8;
            let offset = (seed.c % (size * 8 - u32::from(bits) + 1)).min(255) as u8;
            let encoding = [0, 1, 2, 4][(seed.a >> 8) as usize % 4];
            Model::Int {
                name,
                size,
                encoding,
                offset,
                bits,
            }
        }
        1 => Model::Ptr(anywhere(seed.a)),
        2 => Model::Array {
            elem: earlier_nonvoid(seed.a),
            index: earlier(seed.b),
            nelems: seed.c,
        },
        3 | 4 => {
            let union = kind == 4;
            let size = seed.a % 65;
            let mut members: Vec<(String, u32, u32)> = Vec::new();
            let mut offs: Vec<u32> = seed
                .items
                .iter()
                .map(|it| if union { 0 } else { it.2 % (size * 8 + 1) })
                .collect();
            offs.sort_unstable();
            for (it, off) in seed.items.iter().zip(offs) {
                let raw = if seed.flag {
                    ((it.3 as u32 % 129) << 24) | off
                } else {
                    off
                };
                members.push((it.0.clone(), earlier(it.1), raw));
            }
            Model::Composite {
                union,
                name: if seed.b % 3 == 0 { String::new() } else { name },
                size,
                kind_flag: seed.flag,
                members,
            }
        }
        5 | 6 => {
            let is64 = kind == 6;
            let size = [1, 2, 4, 8][seed.a as usize % 4];
            let values = seed
                .items
                .iter()
                .map(|it| {
                    let n = if it.0.is_empty() {
                        "e".to_string()
                    } else {
                        it.0.clone()
                    };
                    (n, if is64 { it.3 } else { u64::from(it.3 as u32) })
                })
                .collect();
            Model::Enum {
                is64,
                name,
                size,
                signed: seed.flag,
                values,
            }
        }
        7 => Model::Fwd {
            name,
            union: seed.flag,
        },
        8 | 9 | 10 | 14 | 15 => {
            let kind = match kind {
                8 => Kind::Typedef,
                9 => Kind::Volatile,
                10 => Kind::Const,
                14 => Kind::Restrict,
                _ => Kind::TypeTag,
            };
            let named = matches!(kind, Kind::Typedef | Kind::TypeTag);
            Model::Modifier {
                kind,
                name: if named { name } else { String::new() },
                target: earlier(seed.a),
            }
        }
        11 => Model::Func {
            name,
            proto: earlier_nonvoid(seed.a),
            linkage: (seed.b % 3) as u16,
        },
        12 => Model::FuncProto {
            ret: earlier(seed.a),
            params: seed
                .items
                .iter()
                .map(|it| (it.0.clone(), earlier(it.1)))
                .collect(),
        },
        13 => Model::Datasec {
            name,
            size: seed.a,
            vars: seed
                .items
                .iter()
                .map(|it| (earlier_nonvoid(it.1), it.2, it.3 as u32))
                .collect(),
        },
        16 => Model::DeclTag {
            name,
            target: earlier_nonvoid(seed.a),
            component_idx: (seed.b % 5) as i32 - 1,
        },
        17 => Model::Float {
            name,
            size: [2, 4, 8, 12, 16][seed.a as usize % 5],
        },
        _ => Model::Var {
            name,
            target: earlier(seed.a),
            linkage: seed.b % 3,
        },
    }
}

fn models_strategy() -> impl Strategy<Value = Vec<Model>> {
    prop::collection::vec(seed_strategy(), 1..40).prop_map(|seeds| {
        let count = seeds.len() as u32;
        let mut models: Vec<Model> = Vec::new();
        for (i, s) in seeds.iter().enumerate() {
            let model = interpret(s, i as u32 + 1, count);
            // A FUNC must point at a FUNC_PROTO (the validator checks it, as the kernel does);
            // where the chosen earlier type is something else, make this type a prototype.
            let model = match model {
                Model::Func { proto, .. }
                    if !matches!(
                        models.get(proto as usize - 1),
                        Some(Model::FuncProto { .. })
                    ) =>
                {
                    Model::FuncProto {
                        ret: 0,
                        params: Vec::new(),
                    }
                }
                other => other,
            };
            models.push(model);
        }
        models
    })
}

fn write_models(models: &[Model], endian: Endianness) -> Vec<u8> {
    let mut w = BtfWriter::new(endian).unwrap();
    for (i, m) in models.iter().enumerate() {
        assert_eq!(write_model(&mut w, m), i as u32 + 1);
    }
    w.finish().unwrap()
}

fn models_of(btf: &Btf<'_>) -> Vec<Model> {
    (1..btf.type_cnt()).map(|id| model_of(btf, id)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn written_btf_parses_back_and_copies_identically(models in models_strategy(), big in any::<bool>()) {
        let endian = if big { Endianness::Big } else { Endianness::Little };
        let blob = write_models(&models, endian);
        let btf = Btf::parse(&blob).map_err(|e| TestCaseError::fail(format!("written BTF rejected: {e}")))?;
        prop_assert_eq!(btf.endian(), endian);
        prop_assert_eq!(btf.type_cnt(), models.len() as u32 + 1);
        prop_assert_eq!(&models_of(&btf), &models);

        let mut copy = BtfWriter::new(endian).unwrap();
        for ty in btf.types() {
            let ty = ty.unwrap();
            let new_id = copy.copy_type(&btf, &ty, Ok, |_| true).unwrap();
            prop_assert_eq!(new_id, ty.id);
        }
        let out = copy.finish().unwrap();
        let again = Btf::parse(&out).map_err(|e| TestCaseError::fail(format!("copied BTF rejected: {e}")))?;
        prop_assert_eq!(&models_of(&again), &models);
        // Same type records, never larger than the original's; every name starts a string.
        prop_assert_eq!(out[12..16].to_vec(), blob[12..16].to_vec(), "type section length");
        prop_assert!(out.len() <= blob.len(), "copy is larger than the original");
        prop_assert_eq!(names::name_not_at_string_start(&btf), None);
        prop_assert_eq!(names::name_not_at_string_start(&again), None);
    }

    /// Copying with a member filter and an id remap keeps exactly the chosen members (and
    /// enumerators and section variables) and maps every reference (`shift` filler types come first, so ids move up
    /// by `shift`).
    #[test]
    fn copy_type_filters_members_and_remaps_ids(models in models_strategy(), keep_mask in any::<u32>(), shift in 0u32..50) {
        let blob = write_models(&models, Endianness::Little);
        let btf = Btf::parse(&blob).unwrap();
        let mut w = BtfWriter::new(Endianness::Little).unwrap();
        for _ in 0..shift {
            w.begin_type("filler", Kind::Int, false, 0, 4).unwrap();
            w.push_word(32).unwrap();
        }
        let map = |id: u32| if id == 0 { 0 } else { id + shift };
        let keep = |i: usize| keep_mask & (1 << (i % 32)) != 0;
        for ty in btf.types() {
            let ty = ty.unwrap();
            let new_id = w.copy_type(&btf, &ty, |id| Ok(map(id)), keep).unwrap();
            prop_assert_eq!(new_id, map(ty.id));
        }
        let out = w.finish().unwrap();
        let again = Btf::parse(&out).map_err(|e| TestCaseError::fail(format!("filtered copy rejected: {e}")))?;
        prop_assert_eq!(again.type_cnt(), btf.type_cnt() + shift);
        prop_assert_eq!(names::name_not_at_string_start(&again), None);
        for (id, m) in (1..).zip(&models) {
            let want = shift_model(m, map, keep);
            prop_assert_eq!(model_of(&again, map(id)), want);
        }
    }
}

/// `model` with every type reference passed through `map`, and struct/union members,
/// enumerators and data section variables filtered by `keep`.
fn shift_model(model: &Model, map: impl Fn(u32) -> u32, keep: impl Fn(usize) -> bool) -> Model {
    let mut m = model.clone();
    match &mut m {
        Model::Int { .. } | Model::Fwd { .. } | Model::Float { .. } => {}
        Model::Enum { values, .. } => {
            *values = values
                .iter()
                .enumerate()
                .filter(|(i, _)| keep(*i))
                .map(|(_, v)| v.clone())
                .collect();
        }
        Model::Ptr(t) => *t = map(*t),
        Model::Array { elem, index, .. } => {
            *elem = map(*elem);
            *index = map(*index);
        }
        Model::Composite { members, .. } => {
            *members = members
                .iter()
                .enumerate()
                .filter(|(i, _)| keep(*i))
                .map(|(_, (n, t, off))| (n.clone(), map(*t), *off))
                .collect();
        }
        Model::Modifier { target, .. }
        | Model::Var { target, .. }
        | Model::DeclTag { target, .. } => *target = map(*target),
        Model::Func { proto, .. } => *proto = map(*proto),
        Model::FuncProto { ret, params } => {
            *ret = map(*ret);
            for p in params {
                p.1 = map(p.1);
            }
        }
        Model::Datasec { vars, .. } => {
            *vars = vars
                .iter()
                .enumerate()
                .filter(|(i, _)| keep(*i))
                .map(|(_, v)| (map(v.0), v.1, v.2))
                .collect();
        }
    }
    m
}

// ---------------------------------------------------------------------------------------------
// The kernel's BTF through the writer, checked by bpftool
// ---------------------------------------------------------------------------------------------

const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

fn bpftool_dump(path: &std::path::Path) -> Option<String> {
    let out = match Command::new("bpftool")
        .args(["btf", "dump", "file"])
        .arg(path)
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            eprintln!("SKIP: bpftool not runnable ({e}); install bpftool to run this test");
            return None;
        }
    };
    assert!(
        out.status.success(),
        "bpftool btf dump file {} failed: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).expect("bpftool prints UTF-8"))
}

fn type_lines(dump: &str) -> usize {
    dump.lines()
        .filter(|l| {
            l.starts_with('[')
                && l.split_once("] ")
                    .is_some_and(|(n, _)| n[1..].parse::<u32>().is_ok())
        })
        .count()
}

#[test]
fn vmlinux_through_writer_dumps_identically_with_bpftool() {
    let data = match std::fs::read(VMLINUX) {
        Ok(data) => data,
        Err(e) => {
            eprintln!("SKIP: {VMLINUX} unreadable: {e}");
            return;
        }
    };
    let Some(original) = bpftool_dump(std::path::Path::new(VMLINUX)) else {
        return;
    };
    let btf = Btf::parse(&data).expect("vmlinux parses");
    let mut w = BtfWriter::new(btf.endian()).unwrap();
    for ty in btf.types() {
        w.copy_type(&btf, &ty.unwrap(), Ok, |_| true).unwrap();
    }
    let out = w.finish().unwrap();
    let tmp = std::env::temp_dir().join(format!("btfgen-roundtrip-{}.btf", std::process::id()));
    std::fs::write(&tmp, &out).unwrap();
    let copied = bpftool_dump(&tmp);
    let _ = std::fs::remove_file(&tmp);
    let copied = copied.expect("bpftool ran on the original, so it runs on the copy");
    let n = type_lines(&original);
    assert_eq!(
        n as u32,
        btf.type_cnt() - 1,
        "bpftool and btfgen count the kernel's types alike"
    );
    assert_eq!(type_lines(&copied), n);
    // Type ids are kept and bpftool prints names, not string offsets: the dumps are identical.
    if original != copied {
        let first = original.lines().zip(copied.lines()).find(|(a, b)| a != b);
        panic!("bpftool dumps differ; first difference: {first:?}");
    }
}
