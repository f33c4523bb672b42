//! Structure-aware: the adversarial generator of `tests/structured.rs` driven by libFuzzer's
//! bytes. The first byte picks the family: a generated target BTF against a fixture object, or
//! a generated object (fixture with generated `.BTF`/`.BTF.ext`) against a target generated
//! from its own local types. The generated BTF must parse; the pipeline must not panic and its
//! output must re-parse.
#![no_main]

use arbitrary::Unstructured;
use btfgen::btf::{Btf, Endianness};
use btfgen::object::BpfObject;
use btfgen_fuzz::adversarial::{Pool, object, target_btf};
use btfgen_fuzz::fixtures::{TargetMode, pipeline};
use btfgen_fuzz::{ENUMS_OBJ, FIELDS_OBJ, TYPES_OBJ};
use libfuzzer_sys::fuzz_target;

const OBJECTS: [&[u8]; 3] = [FIELDS_OBJ, TYPES_OBJ, ENUMS_OBJ];

fn run(target: &[u8], object: &[u8]) {
    Btf::parse(target).expect("generated target BTF parses");
    let _ = pipeline(TargetMode::Main(target), &[object]);
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let mut u = Unstructured::new(rest);
    let fixture = OBJECTS[usize::from(mode >> 1) % OBJECTS.len()];
    if mode & 1 == 0 {
        let obj = BpfObject::parse(fixture).unwrap();
        let local = Btf::parse(obj.btf_bytes().unwrap()).unwrap();
        let pool = Pool::from_btf(&local);
        let Ok(target) = target_btf(&mut u, &pool, Some(&local), Endianness::Little) else {
            return;
        };
        run(&target, fixture);
    } else {
        let Ok(generated) = object(&mut u, fixture) else {
            return;
        };
        let obj = BpfObject::parse(&generated).expect("generated object parses");
        let local = Btf::parse(obj.btf_bytes().unwrap()).expect("generated .BTF parses");
        let pool = Pool::from_btf(&local);
        let Ok(target) = target_btf(&mut u, &pool, Some(&local), Endianness::Little) else {
            return;
        };
        run(&target, &generated);
    }
});
