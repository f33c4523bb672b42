//! Splitting a module's standalone BTF over a base (`btfgen::btf::split`, what turns a debug
//! `.ko`'s converted DWARF into `pahole --btf_base`'s split BTF). Mode bit 0 clear: the input
//! is a base BTF's length (u32 LE), the base, then the module's standalone BTF, both fuzzed
//! bytes (seeded with the kbase/kmod fixtures). Set: both generated from libFuzzer's bytes by
//! the adversarial generator (`tests/support/adversarial.rs`), the base from the kbase
//! fixture's types, the module from copies of the base's (so that its structs, forward
//! declarations and references really are the base's, or nearly); bit 1 set gives the module
//! the other byte order. `SplitBase::new` and `split` must never panic, and a split they
//! write must parse as split BTF over the base, with the base's types and the split's.
#![no_main]

use arbitrary::Unstructured;
use btfgen::btf::split::SplitBase;
use btfgen::btf::{Btf, Endianness};
use btfgen_fuzz::KBASE_BTF;
use btfgen_fuzz::adversarial::{Pool, target_btf};
use libfuzzer_sys::fuzz_target;

/// The largest generated base split (see the bucket scan below).
const MAX_GENERATED_BASE_TYPES: u32 = 10_000;

/// Split `module` over `base`, and check what it writes.
fn split(base: &[u8], module: &[u8]) {
    let (Ok(base), Ok(module)) = (Btf::parse(base), Btf::parse(module)) else {
        return;
    };
    let Ok(split_base) = SplitBase::new(&base) else {
        return;
    };
    let Ok(split) = split_base.split(&module) else {
        return;
    };
    let parsed = Btf::parse_split(&split.bytes, &base).expect("written split BTF parses");
    assert_eq!(parsed.type_cnt(), base.type_cnt() + split.split_types);
    assert_eq!(split.module_types, module.type_cnt() - 1);
    assert!(split.split_types <= split.module_types);
    assert!(split.named_in_base <= split.named);
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        let Some((len, rest)) = rest.split_first_chunk::<4>() else {
            return;
        };
        let len = u32::from_le_bytes(*len) as usize;
        if len <= rest.len() {
            let (base, module) = rest.split_at(len);
            split(base, module);
        }
        return;
    }
    let kbase = Btf::parse(KBASE_BTF).expect("the kbase fixture parses");
    let pool = Pool::from_btf(&kbase);
    let mut u = Unstructured::new(rest);
    let Ok(base) = target_btf(&mut u, &pool, Some(&kbase), Endianness::Little) else {
        return;
    };
    let base_btf = Btf::parse(&base).expect("generated base BTF parses");
    // Structs of one name, size and member layout (the generator copies thousands) are all
    // compared with each module struct of that shape, as libbpf's bucket scan does: quadratic,
    // 0.5 s for a 17,000-type base and its copy in a release build, 13.5 s instrumented.
    // Larger bases would only time that.
    if base_btf.type_cnt() > MAX_GENERATED_BASE_TYPES {
        return;
    }
    let endian = if mode & 2 == 0 {
        Endianness::Little
    } else {
        Endianness::Big
    };
    let Ok(module) = target_btf(&mut u, &pool, Some(&base_btf), endian) else {
        return;
    };
    Btf::parse(&module).expect("generated module BTF parses");
    split(&base, &module);
});
