//! A `dwz -m` input with its supplementary file (seeds: the `*-dwzm.so` fixtures of
//! `tests/data/dwarf/` with their `.sup` files): the sections that name and identify the file,
//! then `dwarf::to_btf` of the pair. When it converts, the output must parse with `Btf::parse`;
//! errors are fine, a panic is a finding.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    btfgen_fuzz::fuzz_dwarf_sup(data);
});
