//! The whole min-core-btf pipeline with a fuzzed object against a valid target BTF (the fields
//! fixture's): relocate, record, emit, explain; the output must re-parse (the pipeline
//! panics if it does not). Then the object's load verdicts, counted and judged in full, must
//! agree, against that target and the guards fixture's (where guarded reads are poisoned).
#![no_main]

use btfgen_fuzz::{FIELDS_BTF, GUARDS_BTF};
use btfgen_fuzz::fixtures::{TargetMode, pipeline};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = pipeline(TargetMode::Main(FIELDS_BTF), &[data]);
    btfgen_fuzz::check_verdict_paths(FIELDS_BTF, data);
    btfgen_fuzz::check_verdict_paths(GUARDS_BTF, data);
});
