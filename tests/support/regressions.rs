//! Builders of the inputs under `tests/data/regressions/`: each is the smallest shape of an
//! input that once hung btfgen (time exponential in its depth, as in libbpf). The committed
//! files are what these build; `tests/structured.rs` checks that, and `BLESS=1` rewrites them.
//!
//! - `anon_fanout.btf`: target for `fields.bpf.o` whose `fld_sample` holds 48 levels of
//!   anonymous unions, each of two anonymous members of the level below, and then an anonymous
//!   struct with the member `a`. Searching `fld_sample` for a member descends into anonymous
//!   members: 2^48 paths (found by the `structured` property test, seed 4).
//! - `deep_struct_match.{o,btf}`: an object whose `type_matches` relocation is on `dm_30`, a
//!   struct of two members of type `dm_29`, each of two `dm_28`, ... and a target with the same
//!   types: 2^30 member comparisons (found by the property test on generated objects).
//! - `deep_proto_compat.{o,btf}`: an object whose `type_exists` relocation is on `dp_fn`, a
//!   pointer to a function taking two pointers to functions taking two pointers ... 30 deep,
//!   and a target with the same types: 2^30 parameter comparisons.

#![allow(dead_code)]

use super::adversarial::object_with;
use btfgen::btf::write::BtfWriter;
use btfgen::btf::{Endianness, Kind};

/// Levels of anonymous nesting in `anon_fanout.btf`.
pub const ANON_LEVELS: u32 = 48;
/// Depth of the struct and function-prototype chains (type comparisons stop at 32 levels).
pub const CHAIN_DEPTH: u32 = 30;
/// Byte offset of `fld_sample.a` in `anon_fanout.btf`.
pub const ANON_A_OFFSET: u64 = 8;

fn int(w: &mut BtfWriter, name: &str, size: u32) -> u32 {
    let id = w.begin_type(name, Kind::Int, false, 0, size).unwrap();
    w.push_word((1 << 24) | (size * 8)).unwrap();
    id
}

fn words(w: &mut BtfWriter, words: &[u32]) {
    for &word in words {
        w.push_word(word).unwrap();
    }
}

/// `anon_fanout.btf`.
pub fn anon_fanout() -> Vec<u8> {
    let mut w = BtfWriter::new(Endianness::Little).unwrap();
    let int = int(&mut w, "int", 4);
    let zz = w.add_string("zz").unwrap();
    let mut below = w.begin_type("", Kind::Struct, false, 1, 4).unwrap();
    words(&mut w, &[zz, int, 0]);
    for _ in 0..ANON_LEVELS {
        let id = w.begin_type("", Kind::Union, false, 2, 4).unwrap();
        words(&mut w, &[0, below, 0, 0, below, 0]);
        below = id;
    }
    let a = w.add_string("a").unwrap();
    let with_a = w.begin_type("", Kind::Struct, false, 1, 4).unwrap();
    words(&mut w, &[a, int, 0]);
    w.begin_type("fld_sample", Kind::Struct, false, 2, 16)
        .unwrap();
    words(&mut w, &[0, below, 0, 0, with_a, ANON_A_OFFSET as u32 * 8]);
    w.finish().unwrap()
}

/// The struct chain `dm_0` (`int v`) .. `dm_{depth}` (two members of the one below) of both
/// `deep_struct_match` BTFs; returns the id of the top.
fn struct_chain(w: &mut BtfWriter, depth: u32) -> u32 {
    let int = int(w, "int", 4);
    let v = w.add_string("v").unwrap();
    let (a, b) = (w.add_string("a").unwrap(), w.add_string("b").unwrap());
    let mut below = w.begin_type("dm_0", Kind::Struct, false, 1, 4).unwrap();
    words(w, &[v, int, 0]);
    for k in 1..=depth {
        let id = w
            .begin_type(&format!("dm_{k}"), Kind::Struct, false, 2, 4)
            .unwrap();
        words(w, &[a, below, 0, b, below, 0]);
        below = id;
    }
    below
}

/// `deep_struct_match.o` (from `types.bpf.o`) and `deep_struct_match.btf`.
pub fn deep_struct_match(types_object: &[u8]) -> (Vec<u8>, Vec<u8>) {
    struct_match_pair(types_object, CHAIN_DEPTH)
}

/// An object with a `type_matches` relocation on `dm_{depth}` and a target with the same
/// struct chain.
pub fn struct_match_pair(types_object: &[u8], depth: u32) -> (Vec<u8>, Vec<u8>) {
    let mut local = BtfWriter::new(Endianness::Little).unwrap();
    let top = struct_chain(&mut local, depth);
    let object = object_with(types_object, local, &[(top, "0", 12)]);
    let mut target = BtfWriter::new(Endianness::Little).unwrap();
    struct_chain(&mut target, depth);
    (object, target.finish().unwrap())
}

/// The prototype chain of both `deep_proto_compat` BTFs: `dp_fn` is a typedef of a pointer to
/// a function of two pointers to functions of two pointers ...; returns the typedef's id.
fn proto_chain(w: &mut BtfWriter, depth: u32) -> u32 {
    let int = int(w, "int", 4);
    let x = w.add_string("x").unwrap();
    let mut proto = w.begin_type("", Kind::FuncProto, false, 1, int).unwrap();
    words(w, &[x, int]);
    for _ in 0..depth {
        let ptr = w.begin_type("", Kind::Ptr, false, 0, proto).unwrap();
        proto = w.begin_type("", Kind::FuncProto, false, 2, int).unwrap();
        words(w, &[x, ptr, x, ptr]);
    }
    let ptr = w.begin_type("", Kind::Ptr, false, 0, proto).unwrap();
    w.begin_type("dp_fn", Kind::Typedef, false, 0, ptr).unwrap()
}

/// `deep_proto_compat.o` (from `types.bpf.o`) and `deep_proto_compat.btf`.
pub fn deep_proto_compat(types_object: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let mut local = BtfWriter::new(Endianness::Little).unwrap();
    let top = proto_chain(&mut local, CHAIN_DEPTH);
    let object = object_with(types_object, local, &[(top, "0", 8)]);
    let mut target = BtfWriter::new(Endianness::Little).unwrap();
    proto_chain(&mut target, CHAIN_DEPTH);
    (object, target.finish().unwrap())
}

/// An object (from `types.bpf.o`) with a `type_matches` relocation on an enum and on a
/// struct of `n` entries each, and a target with the same types, entries in reverse order
/// (what `type_matches` compared pairwise, in time quadratic in `n`). Built at test time.
pub fn wide_match(types_object: &[u8], n: u32) -> (Vec<u8>, Vec<u8>) {
    let build = |reverse: bool| {
        let mut w = BtfWriter::new(Endianness::Little).unwrap();
        let int = int(&mut w, "int", 4);
        let names: Vec<u32> = (0..n)
            .map(|i| w.add_string(&format!("e{i}")).unwrap())
            .collect();
        let order: Vec<u32> = if reverse {
            (0..n).rev().collect()
        } else {
            (0..n).collect()
        };
        let e = w
            .begin_type("wide_e", Kind::Enum, false, n as u16, 4)
            .unwrap();
        for &i in &order {
            words(&mut w, &[names[i as usize], i]);
        }
        let s = w
            .begin_type("wide_s", Kind::Struct, false, n as u16, 4)
            .unwrap();
        for &i in &order {
            words(&mut w, &[names[i as usize], int, 0]);
        }
        (w, e, s)
    };
    let (local, e, s) = build(false);
    let object = object_with(types_object, local, &[(e, "0", 12), (s, "0", 12)]);
    (object, build(true).0.finish().unwrap())
}

/// An object with one field relocation (`byte_off`) on a struct, with `access`.
pub fn field_relocation(types_object: &[u8], access: &str) -> Vec<u8> {
    let mut local = BtfWriter::new(Endianness::Little).unwrap();
    let int = int(&mut local, "int", 4);
    let x = local.add_string("x").unwrap();
    let s = local
        .begin_type("lim_s", Kind::Struct, false, 1, 4)
        .unwrap();
    words(&mut local, &[x, int, 0]);
    object_with(types_object, local, &[(s, access, 0)])
}

/// `int` under a chain of `len` typedefs; returns the BTF and the outermost typedef's id.
pub fn typedef_chain(len: u32) -> (Vec<u8>, u32) {
    let mut w = BtfWriter::new(Endianness::Little).unwrap();
    let mut id = int(&mut w, "int", 4);
    for k in 0..len {
        id = w
            .begin_type(&format!("t{k}"), Kind::Typedef, false, 0, id)
            .unwrap();
    }
    (w.finish().unwrap(), id)
}
