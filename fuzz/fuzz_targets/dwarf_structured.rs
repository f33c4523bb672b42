//! Structure-aware DWARF: the generator of `src/dwarf_gen.rs` turns the input into DIE trees
//! (every type tag the converter reads, bit-fields of both DWARF encodings, enums of every
//! size, references forward, backward, across units, cyclic and out of range) written as
//! DWARF 4 or 5 by `gimli::write` in a minimal ELF file, then `dwarf::to_btf`: its output must
//! parse. The first byte picks tame DWARF (what a compiler writes; most of it converts) or wild
//! (bad references, sizes and names anywhere) with bit 1, and with bit 0 a corrupted variant
//! (bytes flipped after writing, where the input says): `to_btf` must then fail or convert
//! (output that parses), never panic.
#![no_main]

use arbitrary::Unstructured;
use btfgen_fuzz::dwarf_gen::{corrupt, generate};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let mut u = Unstructured::new(rest);
    let Ok(mut generated) = generate(&mut u, mode & 2 == 0) else {
        return;
    };
    if mode & 1 == 1 && corrupt(&mut u, &mut generated).is_err() {
        return;
    }
    btfgen_fuzz::fuzz_dwarf(&generated.elf);
});
