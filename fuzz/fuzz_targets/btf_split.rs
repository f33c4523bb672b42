//! Split BTF: a fuzzed split on a valid base (first byte even), or the valid split fixture on
//! a fuzzed base (first byte odd); then every query on the split BTF.
#![no_main]

use btfgen::btf::Btf;
use btfgen_fuzz::{BASE_BTF, MODULE_BTF, exercise_btf};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let (base_bytes, split_bytes) = if mode & 1 == 0 {
        (BASE_BTF, rest)
    } else {
        (rest, MODULE_BTF)
    };
    let Ok(base) = Btf::parse(base_bytes) else {
        return;
    };
    if let Ok(split) = Btf::parse_split(split_bytes, &base) {
        exercise_btf(&split);
    }
});
