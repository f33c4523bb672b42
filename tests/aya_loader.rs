//! A loader that is not libbpf: aya-obj (aya's object loader, which relocates CO-RE programs in
//! user space without a kernel) relocates every fixture object against the full target BTF and
//! against btfgen's minimized BTF, and the relocated instructions must be the same.
//!
//! Pairs: every `tests/data/manifest.txt` pair with a plain target BTF (aya-obj reads no split
//! BTF), each object minimized alone and all objects of one target minimized together, plus
//! the running kernel's BTF for the `vmlinux` pairs where it exists.
//!
//! aya-obj is its own CO-RE implementation and departs from libbpf in a few places, listed in
//! [`AYA_DEPARTURES`]; each object it fails with the full BTF must fail for its listed reason,
//! so that a new difference cannot hide there. Where it fails with the full BTF it must fail
//! the same way with the minimized one, except where the reason is libbpf's candidate pruning, which
//! aya-obj lacks: btfgen's output (like bpftool's) holds the candidate libbpf resolves to, so
//! aya-obj sees no conflict there and relocates as libbpf does. A number of objects must
//! relocate at all, or the comparison would prove nothing.

#[path = "support/fixtures.rs"]
mod fixtures;

use aya_obj::Object;
use aya_obj::btf::Btf as AyaBtf;
use fixtures::{TargetMode, data_dir, pipeline, read};
use std::collections::BTreeMap;
use std::path::Path;

const VMLINUX: &str = "/sys/kernel/btf/vmlinux";

/// Objects aya-obj 0.2.1 fails with the full target BTF where libbpf succeeds: object, the
/// text its error must contain, and why.
const AYA_DEPARTURES: [(&str, &str, &str); 7] = [
    (
        "progs/flavors.bpf.o",
        "ConflictingCandidates",
        "no candidate pruning: the fl_pr.y read conflicts between fl_pr and fl_pr___b, which libbpf ruled out at fl_pr.x",
    ),
    (
        "progs/fields.bpf.o",
        "array index out of bounds",
        "no flexible arrays: tail[5] on the last member `tail[]`",
    ),
    (
        "progs/memsize.bpf.o",
        "InvalidInstruction",
        "a load it cannot resize is an error, not a poisoned instruction",
    ),
    (
        "progs/types.bpf.o",
        "parse object",
        "its BTF parser rejects the object",
    ),
    (
        "progs/enums.bpf.o",
        "parse object",
        "its BTF parser rejects the object",
    ),
    (
        "progs/module.bpf.o",
        "parse object",
        "its BTF parser rejects the object",
    ),
    (
        "progs/guards.bpf.o",
        "parse object",
        "its BTF parser rejects the object (no type_matches relocation kind)",
    ),
];

/// Every program function's instructions after aya-obj's CO-RE relocation, as
/// `(code, dst, src, off, imm)`, or aya-obj's error.
type Relocated = Result<BTreeMap<String, Vec<(u8, u8, u8, i16, i32)>>, String>;

fn aya_relocate(object: &[u8], target: &[u8]) -> Relocated {
    let mut obj = Object::parse(object).map_err(|e| format!("parse object: {e}"))?;
    let btf = AyaBtf::parse(target, obj.endianness).map_err(|e| format!("parse BTF: {e}"))?;
    obj.relocate_btf(&btf)
        .map_err(|e| format!("relocate: {e:?}"))?;
    Ok(obj
        .functions
        .values()
        .map(|f| {
            let insns = f
                .instructions
                .iter()
                .map(|i| (i.code, i.dst_reg(), i.src_reg(), i.off, i.imm))
                .collect();
            (format!("{}@{}", f.name, f.section_offset), insns)
        })
        .collect())
}

/// (pairs compared, of which aya-obj relocated with the full BTF)
fn compare(label: &str, objects: &[(String, Vec<u8>)], target: &[u8]) -> (usize, usize) {
    let refs: Vec<&[u8]> = objects.iter().map(|(_, b)| b.as_slice()).collect();
    let Ok(out) = pipeline(TargetMode::Main(target), &refs) else {
        // btfgen fails exactly where libbpf does (checked elsewhere): nothing to compare.
        println!("note: {label}: btfgen does not minimize this set (a failing relocation)");
        return (0, 0);
    };
    let mut relocated = 0;
    for (name, object) in objects {
        let full = aya_relocate(object, target);
        let minimized = aya_relocate(object, &out.bytes);
        match (&full, &minimized) {
            (Ok(a), Ok(b)) => {
                assert_eq!(a, b, "{label}: {name}: aya-obj relocates differently");
                relocated += 1;
            }
            (Err(a), _) => {
                let Some((_, expected, why)) = AYA_DEPARTURES
                    .iter()
                    .find(|d| d.0 == name && a.contains(d.1))
                else {
                    panic!(
                        "{label}: {name}: aya-obj fails with the full BTF for an unlisted reason: {a}"
                    );
                };
                if *expected != "ConflictingCandidates" {
                    assert_eq!(
                        &full, &minimized,
                        "{label}: {name}: aya-obj fails differently with the minimized BTF"
                    );
                }
                println!(
                    "note: {label}: {name}: aya-obj departs from libbpf ({why}); minimized: {}",
                    minimized
                        .as_ref()
                        .map_or_else(|e| e.clone(), |_| "relocated".to_string())
                );
            }
            (Ok(_), Err(b)) => {
                panic!("{label}: {name}: aya-obj fails only with the minimized BTF: {b}")
            }
        }
    }
    (objects.len(), relocated)
}

#[test]
fn aya_obj_relocates_like_with_the_full_btf() {
    let manifest = std::fs::read_to_string(data_dir().join("manifest.txt")).unwrap();
    let mut by_target: BTreeMap<String, Vec<(String, Vec<u8>)>> = BTreeMap::new();
    for line in manifest.lines() {
        let words: Vec<&str> = line.split('#').next().unwrap().split_whitespace().collect();
        match words.as_slice() {
            [obj, target] if !obj.ends_with(".bpfeb.o") => by_target
                .entry(target.to_string())
                .or_default()
                .push((obj.to_string(), read(obj))),
            _ => {}
        }
    }
    let (mut compared, mut relocated) = (0, 0);
    for (target, objects) in &by_target {
        let data = if target == "vmlinux" {
            match std::fs::read(VMLINUX) {
                Ok(data) => data,
                Err(e) => {
                    println!("SKIP: {VMLINUX}: {e}; the vmlinux pairs are not compared");
                    continue;
                }
            }
        } else {
            read(target)
        };
        for object in objects {
            let (c, r) = compare(
                &format!("{} vs {target}", object.0),
                std::slice::from_ref(object),
                &data,
            );
            compared += c;
            relocated += r;
        }
        if objects.len() > 1 {
            let (c, r) = compare(&format!("all objects vs {target}"), objects, &data);
            compared += c;
            relocated += r;
        }
    }
    println!("aya-obj: {relocated} of {compared} object/BTF pairs relocated, all alike");
    assert!(Path::new(&data_dir()).exists());
    assert!(
        relocated >= 6,
        "aya-obj relocated only {relocated} of {compared} pairs: too few to compare"
    );
}
