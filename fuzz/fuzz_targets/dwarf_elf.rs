//! An ELF file with DWARF (seeds: the DWARF 4/5, gcc/clang, type-unit and zlib/zstd/.zdebug
//! fixtures of `tests/data/dwarf/`): `has_dwarf_without_btf`, then `dwarf::to_btf`. When it
//! converts, the output must parse with `Btf::parse` (it is then exercised and copied like any
//! BTF), and so must the conversion without functions; errors are fine, a panic is a finding.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    btfgen_fuzz::fuzz_dwarf(data);
});
