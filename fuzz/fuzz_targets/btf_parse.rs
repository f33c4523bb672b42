//! Raw BTF (or an ELF holding `.BTF`): parse and validate, then every query, the dump, and a
//! copy-and-reparse of what validated. The first byte picks full or on-use validation.
#![no_main]

use btfgen::btf::Validation;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let validation = if mode & 1 == 0 {
        Validation::Full
    } else {
        Validation::OnUse
    };
    btfgen_fuzz::fuzz_btf(rest, validation);
});
