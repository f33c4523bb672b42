//! Structure-aware property tests: adversarial but well-formed BTF ([`adversarial`]) fed to the
//! whole min-core-btf pipeline against the fixture objects, and generated objects (a fixture
//! with its `.BTF`/`.BTF.ext` replaced) against targets made from their own local types; and
//! generated modules split over generated bases (`btfgen::btf::split`).
//!
//! Properties, for every case:
//! - the generated target BTF parses and validates (the generator is honest);
//! - the pipeline never panics and returns within [`TIME_LIMIT`];
//! - when it succeeds, the minimized BTF parses and validates again, and dumps; every name
//!   offset in it is the start of a string.
//!
//! A fixed-seed loop ([`CASES`] per family) runs as a normal `cargo test`; the `structured`
//! fuzz target drives the same generator from libFuzzer. Named cases below pin the shapes that
//! once hung or crashed.

#[path = "support/adversarial.rs"]
mod adversarial;
#[path = "support/fixtures.rs"]
mod fixtures;
#[path = "support/names.rs"]
mod names;

use arbitrary::Unstructured;
use btfgen::btf::{Btf, Endianness};
use btfgen::object::BpfObject;
use fixtures::{Output, TargetMode, pipeline_staged, read};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

/// Cases per family in the fixed-seed loops (fewer in unoptimized builds).
const CASES: u64 = if cfg!(debug_assertions) { 40 } else { 300 };
/// Longest one case may take (generous in unoptimized builds).
const TIME_LIMIT: Duration = Duration::from_secs(if cfg!(debug_assertions) { 20 } else { 2 });

/// Little-endian fixture objects (their local BTF is the template for generated targets).
const OBJECTS: [&str; 9] = [
    "progs/fields.bpf.o",
    "progs/bitfields.bpf.o",
    "progs/types.bpf.o",
    "progs/enums.bpf.o",
    "progs/flavors.bpf.o",
    "progs/ambiguous.bpf.o",
    "progs/module.bpf.o",
    "progs/task.bpf.o",
    "progs/multi.bpf.o",
];

/// Deterministic pseudo-random bytes (splitmix64), 1 byte to 64 KiB.
fn seed_bytes(seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5151_5151;
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let len = 1 + (next() % (64 * 1024)) as usize;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        out.extend_from_slice(&next().to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Whether to run case `seed`: all, or only `STRUCTURED_SEED` when set (for debugging).
fn selected(seed: u64) -> bool {
    std::env::var("STRUCTURED_SEED").map_or(true, |only| only.parse() == Ok(seed))
}

/// What the cases of a family did.
#[derive(Debug, Default)]
struct Tally {
    cases: u32,
    ok: u32,
    errors: std::collections::BTreeMap<String, u32>,
    slowest: Duration,
    slowest_case: String,
    largest_target: usize,
}

/// Run one case and check the properties; `what` names it in failures.
fn check(tally: &mut Tally, what: &str, target: &[u8], objects: &[&[u8]]) {
    if std::env::var_os("STRUCTURED_VERBOSE").is_some() {
        eprintln!("{what}: {} bytes of target", target.len());
    }
    let parsed = Btf::parse(target);
    assert!(
        parsed.is_ok(),
        "{what}: generated target does not parse: {:?}",
        parsed.err()
    );
    let started = Instant::now();
    let result = catch_unwind(AssertUnwindSafe(|| {
        pipeline_staged(TargetMode::Main(target), objects)
    }));
    let elapsed = started.elapsed();
    if let Some(dir) = std::env::var_os("STRUCTURED_DUMP") {
        // Keep the inputs of every case, to replay one with the CLI.
        let dir = std::path::Path::new(&dir);
        let stem: String = what
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        std::fs::write(dir.join(format!("{stem}.btf")), target).unwrap();
        for (i, object) in objects.iter().enumerate() {
            std::fs::write(dir.join(format!("{stem}.{i}.o")), object).unwrap();
        }
    }
    let result = result.unwrap_or_else(|e| {
        let msg = e.downcast_ref::<String>().map(String::as_str).unwrap_or("");
        panic!("{what}: pipeline panicked: {msg}")
    });
    assert!(elapsed < TIME_LIMIT, "{what}: took {elapsed:?}");
    tally.cases += 1;
    if elapsed > tally.slowest {
        tally.slowest = elapsed;
        tally.slowest_case = what.to_string();
    }
    tally.largest_target = tally.largest_target.max(target.len());
    match result {
        Ok(Output { bytes, .. }) => {
            let again = Btf::parse(&bytes);
            assert!(
                again.is_ok(),
                "{what}: minimized BTF does not re-parse: {:?}",
                again.err()
            );
            assert_eq!(
                names::name_not_at_string_start(&again.unwrap()),
                None,
                "{what}: a name offset in the minimized BTF is not the start of a string"
            );
            assert!(
                !names::last_type_reads_as_signed(&bytes),
                "{what}: libbpf <= 1.2 would read the last type as signed"
            );
            tally.ok += 1;
        }
        Err((stage, e)) => {
            // The message without its numbers, so like errors count together.
            let key: String = format!("{stage:?}: {e}")
                .chars()
                .filter(|c| !c.is_ascii_digit())
                .collect();
            *tally.errors.entry(key).or_default() += 1;
        }
    }
}

#[test]
fn adversarial_targets_against_the_fixture_objects() {
    let objects: Vec<Vec<u8>> = OBJECTS.iter().map(|p| read(p)).collect();
    let templates: Vec<(Btf<'_>, adversarial::Pool)> = objects
        .iter()
        .map(|o| {
            let obj = BpfObject::parse(o).unwrap();
            let btf = Btf::parse(obj.btf_bytes().unwrap()).unwrap();
            let pool = adversarial::Pool::from_btf(&btf);
            (btf, pool)
        })
        .collect();
    let mut tally = Tally::default();
    for seed in (0..CASES).filter(|&s| selected(s)) {
        let which = (seed % OBJECTS.len() as u64) as usize;
        let bytes = seed_bytes(seed);
        let mut u = Unstructured::new(&bytes);
        let (template, pool) = &templates[which];
        let target =
            adversarial::target_btf(&mut u, pool, Some(template), Endianness::Little).unwrap();
        let what = format!("seed {seed} ({})", OBJECTS[which]);
        check(&mut tally, &what, &target, &[&objects[which]]);
    }
    eprintln!("adversarial targets: {tally:?}");
    // The generator must reach the end of the pipeline often, not only fail early.
    assert!(
        tally.ok * 4 >= tally.cases,
        "too few cases minimized: {tally:?}"
    );
}

#[test]
fn generated_objects_against_targets_from_their_own_types() {
    let fixtures = [
        read("progs/types.bpf.o"),
        read("progs/fields.bpf.o"),
        read("progs/enums.bpf.o"),
    ];
    let mut tally = Tally::default();
    let mut objects_made = 0;
    for seed in (0..CASES).filter(|&s| selected(s)) {
        let bytes = seed_bytes(seed ^ 0xdead_beef);
        let mut u = Unstructured::new(&bytes);
        let fixture = &fixtures[(seed % 3) as usize];
        let Ok(object) = adversarial::object(&mut u, fixture) else {
            continue;
        };
        objects_made += 1;
        let obj = BpfObject::parse(&object).expect("generated object parses");
        let local = Btf::parse(obj.btf_bytes().unwrap()).expect("generated .BTF parses");
        let pool = adversarial::Pool::from_btf(&local);
        let target =
            adversarial::target_btf(&mut u, &pool, Some(&local), Endianness::Little).unwrap();
        check(
            &mut tally,
            &format!("object seed {seed}"),
            &target,
            &[&object],
        );
    }
    eprintln!("generated objects: {objects_made} made, {tally:?}");
    assert!(
        objects_made * 2 >= CASES as u32,
        "too few objects generated"
    );
    assert!(
        tally.ok * 10 >= tally.cases,
        "too few cases minimized: {tally:?}"
    );
}

/// Split BTF (`btfgen::btf::split`, the debug module path): a base generated from the kbase
/// fixture's types, a module generated from copies of the base's, as the `btf_split_dedup`
/// fuzz target makes them. Splitting never panics; a split written parses as split BTF over
/// the base with the base's types and the split's; and the generator's copies really are
/// found in the base (most splits name base structs and leave module types out).
#[test]
fn generated_modules_split_over_generated_bases() {
    use btfgen::btf::split::SplitBase;
    let kbase_bytes = read("dwarf/kbase-gcc-dwarf5.pahole.btf");
    let kbase = Btf::parse(&kbase_bytes).unwrap();
    let pool = adversarial::Pool::from_btf(&kbase);
    let (mut cases, mut split_ok, mut in_base, mut deduplicated) = (0u32, 0u32, 0u32, 0u32);
    let mut errors = std::collections::BTreeMap::<String, u32>::new();
    for seed in (0..CASES).filter(|&s| selected(s)) {
        let bytes = seed_bytes(seed ^ 0x5b11_7000);
        let mut u = Unstructured::new(&bytes);
        let Ok(base_bytes) =
            adversarial::target_btf(&mut u, &pool, Some(&kbase), Endianness::Little)
        else {
            continue;
        };
        let base = Btf::parse(&base_bytes).expect("generated base parses");
        let Ok(module_bytes) =
            adversarial::target_btf(&mut u, &pool, Some(&base), Endianness::Little)
        else {
            continue;
        };
        let module = Btf::parse(&module_bytes).expect("generated module parses");
        cases += 1;
        let split = catch_unwind(AssertUnwindSafe(|| {
            SplitBase::new(&base).and_then(|b| b.split(&module))
        }))
        .unwrap_or_else(|_| panic!("split panicked, seed {seed}"));
        match split {
            Ok(split) => {
                split_ok += 1;
                let parsed = Btf::parse_split(&split.bytes, &base)
                    .unwrap_or_else(|e| panic!("seed {seed}: written split BTF: {e}"));
                assert_eq!(parsed.type_cnt(), base.type_cnt() + split.split_types);
                assert_eq!(split.module_types, module.type_cnt() - 1);
                in_base += u32::from(split.named_in_base > 0);
                deduplicated += u32::from(split.split_types < split.module_types);
            }
            Err(e) => {
                *errors
                    .entry(e.to_string().split(": ").last().unwrap_or("").to_string())
                    .or_default() += 1
            }
        }
    }
    eprintln!(
        "split: {cases} cases, {split_ok} split ({in_base} naming base structs, {deduplicated} \
         leaving module types out), errors: {errors:?}"
    );
    assert!(cases * 2 >= CASES as u32, "too few pairs generated");
    assert!(split_ok * 2 >= cases, "too few splits: {errors:?}");
    assert!(in_base * 2 >= split_ok && deduplicated * 2 >= split_ok);
}

// ---------------------------------------------------------------------------------------------
// Regressions: inputs that once hung (tests/data/regressions/, built by support/regressions.rs)
// ---------------------------------------------------------------------------------------------

#[path = "support/regressions.rs"]
mod regressions;

/// The committed regression inputs are what the builders make (`BLESS=1` rewrites them).
#[test]
fn regression_fixtures_are_current() {
    let types = read("progs/types.bpf.o");
    let (struct_obj, struct_btf) = regressions::deep_struct_match(&types);
    let (proto_obj, proto_btf) = regressions::deep_proto_compat(&types);
    let files = [
        ("regressions/anon_fanout.btf", regressions::anon_fanout()),
        ("regressions/deep_struct_match.o", struct_obj),
        ("regressions/deep_struct_match.btf", struct_btf),
        ("regressions/deep_proto_compat.o", proto_obj),
        ("regressions/deep_proto_compat.btf", proto_btf),
    ];
    for (path, bytes) in files {
        let full = fixtures::data_dir().join(path);
        if std::env::var_os("BLESS").is_some() {
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(&full, &bytes).unwrap();
        }
        assert!(read(path) == bytes, "{path} is stale: rerun with BLESS=1");
    }
}

/// Relocate `object` against `target` (timed), returning every relocation's outcome.
fn relocate_timed(what: &str, object: &[u8], target: &[u8]) -> Vec<(String, btfgen::Result<u64>)> {
    use btfgen::core::{CandidateIndex, Targets, relocate::relocate_object};
    use btfgen::log::LibbpfLog;
    let started = Instant::now();
    let target = Btf::parse(target).unwrap();
    let obj = BpfObject::parse(object).unwrap();
    let local = Btf::parse(obj.btf_bytes().unwrap()).unwrap();
    let targets = Targets::new(&target);
    let relocated = relocate_object(
        &obj,
        &local,
        &targets,
        &mut CandidateIndex::new(),
        &mut LibbpfLog,
    )
    .unwrap();
    let elapsed = started.elapsed();
    assert!(elapsed < TIME_LIMIT, "{what}: relocating took {elapsed:?}");
    relocated
        .relocations
        .into_iter()
        .map(|r| {
            (
                r.access.to_string(),
                r.outcome.map(|(resolved, _)| resolved.res.new_val),
            )
        })
        .collect()
}

#[test]
fn anonymous_member_search_is_not_exponential() {
    let target = read("regressions/anon_fanout.btf");
    let object = read("progs/fields.bpf.o");
    let outcomes = relocate_timed("anon_fanout", &object, &target);
    // `BPF_CORE_READ(s, a)`: byte_off of fld_sample.a, found after the whole fan-out.
    let a = outcomes
        .iter()
        .find(|(access, _)| access == "0:0")
        .expect("relocation of fld_sample.a");
    assert_eq!(a.1, Ok(regressions::ANON_A_OFFSET));
    let mut tally = Tally::default();
    check(&mut tally, "anon_fanout", &target, &[&object]);
    assert_eq!(tally.ok, 1, "{tally:?}");
}

#[test]
fn deep_type_comparisons_are_not_exponential() {
    for name in ["deep_struct_match", "deep_proto_compat"] {
        let object = read(&format!("regressions/{name}.o"));
        let target = read(&format!("regressions/{name}.btf"));
        // type_matches / type_exists: the chains are identical, so the relocation gives 1.
        assert_eq!(
            relocate_timed(name, &object, &target),
            [("0".to_string(), Ok(1))],
            "{name}"
        );
        let mut tally = Tally::default();
        check(&mut tally, name, &target, &[&object]);
        assert_eq!(tally.ok, 1, "{name}: {tally:?}");
    }
}

#[test]
fn wide_type_matches_are_not_quadratic() {
    let (object, target) = regressions::wide_match(&read("progs/types.bpf.o"), 30_000);
    let outcomes = relocate_timed("wide_match", &object, &target);
    assert_eq!(
        outcomes,
        [("0".to_string(), Ok(1)), ("0".to_string(), Ok(1))]
    );
}

// ---------------------------------------------------------------------------------------------
// Documented limits, enforced with clear errors (type count and string section length: see
// tests/btf_corrupt.rs; allocation for announced sizes: tests/oom.rs)
// ---------------------------------------------------------------------------------------------

#[test]
fn documented_limits_are_enforced_with_clear_errors() {
    use btfgen::Error;
    use btfgen::btf::MAX_RESOLVE_DEPTH;
    use btfgen::core::spec::MAX_SPEC_LEN;

    // Sizing visits MAX_RESOLVE_DEPTH types in all, the sized one included (as libbpf's
    // btf__resolve_size); skipping modifiers has no such limit (as libbpf's).
    let depth = MAX_RESOLVE_DEPTH as u32;
    let (blob, top) = regressions::typedef_chain(depth - 1);
    assert_eq!(Btf::parse(&blob).unwrap().resolve_size(top), Ok(4));
    let (blob, top) = regressions::typedef_chain(depth);
    let btf = Btf::parse(&blob).unwrap();
    let err = btf.resolve_size(top).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("invalid BTF type [{top}]: type chain too deep to size")
    );
    let (blob, top) = regressions::typedef_chain(1000);
    assert_eq!(
        Btf::parse(&blob)
            .unwrap()
            .skip_mods_and_typedefs(top)
            .unwrap()
            .id,
        1
    );

    // Access strings of more than MAX_SPEC_LEN indices.
    let types = read("progs/types.bpf.o");
    let target = read("targets/btf__types.btf");
    let access = vec!["0"; MAX_SPEC_LEN + 1].join(":");
    let object = regressions::field_relocation(&types, &access);
    let err = fixtures::pipeline(TargetMode::Main(&target), &[&object]).unwrap_err();
    assert_eq!(
        err,
        Error::Limit {
            what: "CO-RE access spec length",
            limit: MAX_SPEC_LEN
        }
    );
    assert!(
        err.to_string().contains("CO-RE access spec length"),
        "{err}"
    );

    // Type comparisons recurse at most 32 levels: a struct chain 40 deep is too deep, and
    // fails fast (not after 2^32 comparisons).
    let (object, target) = regressions::struct_match_pair(&types, 40);
    let started = Instant::now();
    let err = fixtures::pipeline(TargetMode::Main(&target), &[&object]).unwrap_err();
    assert!(started.elapsed() < TIME_LIMIT);
    assert_eq!(
        err,
        Error::Limit {
            what: "type comparison depth",
            limit: 32
        }
    );
}
