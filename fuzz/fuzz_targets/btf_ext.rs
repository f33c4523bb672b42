//! `.BTF.ext` alone: parse in the byte order the first byte picks, then every record.
#![no_main]

use btfgen::object::{BtfExt, Endianness};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let endian = if mode & 1 == 0 {
        Endianness::Little
    } else {
        Endianness::Big
    };
    if let Ok(ext) = BtfExt::parse(rest, endian) {
        btfgen_fuzz::exercise_btf_ext(&ext);
    }
});
