//! The whole min-core-btf pipeline with a fuzzed target BTF against valid objects (the fields,
//! types and enums fixtures, which together use every relocation kind). The first byte picks
//! full or on-use validation of the target (what the CLI uses for large BTFs), and whether the
//! fuzzed bytes are the main BTF or a module split on the fixture base. The output must
//! re-parse (the pipeline panics if it does not).
#![no_main]

use btfgen::btf::{Btf, Validation};
use btfgen::core::Targets;
use btfgen::minimize::RelocInfo;
use btfgen_fuzz::fixtures::{TargetMode, add_object, pipeline};
use btfgen_fuzz::{BASE_BTF, ENUMS_OBJ, FIELDS_OBJ, TYPES_OBJ};
use libfuzzer_sys::fuzz_target;

const OBJECTS: [&[u8]; 3] = [FIELDS_OBJ, TYPES_OBJ, ENUMS_OBJ];

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 4 {
        0 => drop(pipeline(TargetMode::Main(rest), &OBJECTS)),
        1 => drop(pipeline(
            TargetMode::Module {
                base: BASE_BTF,
                module: rest,
            },
            &OBJECTS,
        )),
        _ => {
            // On-use validation: unchecked types reach the engine; the output of to_btf is
            // still fully validated, so it must re-parse.
            let Ok(main) = Btf::parse_with(rest, None, Validation::OnUse) else {
                return;
            };
            let mut info = RelocInfo::new(Targets::new(&main));
            for object in OBJECTS {
                if add_object(&mut info, "fixture.o", object).is_err() {
                    return;
                }
            }
            if let Ok(min) = info.to_btf() {
                Btf::parse(&min.bytes).expect("minimized BTF re-parses");
            }
        }
    }
});
