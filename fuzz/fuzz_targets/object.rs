//! The BPF object reader: parse, then programs, sections, ELF relocations, `.BTF`, `.BTF.ext`
//! and the CO-RE relocation sections.
#![no_main]

use btfgen::object::BpfObject;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(obj) = BpfObject::parse(data) {
        btfgen_fuzz::exercise_object(&obj);
    }
});
