//! The whole min-core-btf pipeline with a fuzzed object against a valid target BTF (the fields
//! fixture's): relocate, record, emit, explain; the output must re-parse (the pipeline
//! panics if it does not).
#![no_main]

use btfgen_fuzz::FIELDS_BTF;
use btfgen_fuzz::fixtures::{TargetMode, pipeline};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = pipeline(TargetMode::Main(FIELDS_BTF), &[data]);
});
