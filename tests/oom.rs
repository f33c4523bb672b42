//! Out-of-memory behaviour of the whole minimize pipeline, and limits that keep hostile inputs
//! from allocating.
//!
//! This binary installs a failure-injecting global allocator ([`support::alloc`]). For each
//! fixture pair of `tests/data/manifest.txt` (and a few more target set-ups) the pipeline —
//! parse the target BTF(s), parse the object and its `.BTF`, `RelocInfo::add_object`,
//! `to_btf`, `explain`, re-parse and dump the output — is run once to count its allocations,
//! then once per allocation with exactly that one failing. Every such run must return
//! `Err(Error::OutOfMemory)`: not panic, not abort (an infallible allocation in the library
//! would abort the whole binary), not swallow the failure. After each run and the drop of its
//! result, the thread's live blocks and bytes must be what they were before (nothing leaked).
//! One more run past the last allocation must succeed with the same output as the first.
//!
//! Every allocation is swept for the committed fixtures (30 to 400 each). The running kernel's
//! BTF (when readable) with the example object is swept on every allocation up to [`DENSE`]
//! (it takes about 200), then on a stride, so a future growth cannot make the test slow.

#[path = "support/adversarial.rs"]
mod adversarial;
#[path = "support/alloc.rs"]
mod alloc_support;
#[path = "support/fixtures.rs"]
mod fixtures;
#[path = "support/regressions.rs"]
mod regressions;

use alloc_support::{TestAlloc, live, measure, run_failing};
use btfgen::btf::Btf;
use btfgen::object::{BpfObject, BtfExt, Endianness};
use btfgen::{Error, Result};
use fixtures::{Output, TargetMode, pipeline, read};
use std::panic::{AssertUnwindSafe, catch_unwind};

#[global_allocator]
static ALLOC: TestAlloc = TestAlloc;

/// Allocations swept one by one for the big (kernel BTF) case; past this, every
/// [`STRIDE`]-th.
const DENSE: u64 = 1000;
const STRIDE: u64 = 7;

/// Sweep `f` over every allocation (or `dense` then a stride); returns the number of
/// allocations of a clean run.
fn sweep(what: &str, dense: Option<u64>, f: &dyn Fn() -> Result<Output>) -> u64 {
    let (expected, usage) = measure(f);
    let total = usage.allocations;
    assert!(total > 0, "{what}: no allocation counted");
    let check_run = |n: u64| {
        let before = live();
        let (result, used) = run_failing(n, || catch_unwind(AssertUnwindSafe(f)));
        let result =
            result.unwrap_or_else(|_| panic!("{what}: panicked with allocation #{n} failing"));
        if n <= total {
            assert_eq!(
                result.as_ref().err(),
                Some(&Error::OutOfMemory),
                "{what}: allocation #{n} of {total} failed but the result was not OutOfMemory"
            );
            assert!(
                used.allocations >= n,
                "{what}: #{n}: fewer allocations than the failing one"
            );
        } else {
            assert_eq!(
                &result, &expected,
                "{what}: run past the last allocation differs"
            );
        }
        drop(result);
        assert_eq!(
            live(),
            before,
            "{what}: allocation #{n} failing leaked (blocks, bytes)"
        );
    };
    match dense {
        None => (1..=total + 1).for_each(check_run),
        Some(dense) => {
            (1..=dense.min(total)).for_each(check_run);
            (dense + 1..=total)
                .step_by(STRIDE as usize)
                .for_each(check_run);
            check_run(total);
            check_run(total + 1);
        }
    }
    total
}

/// The allocator itself: the chosen allocation fails, the others succeed, and counts are right.
#[test]
fn allocator_fails_exactly_the_chosen_allocation() {
    let (result, usage) = run_failing(2, || {
        let mut a: Vec<u8> = Vec::new();
        let mut b: Vec<u8> = Vec::new();
        let mut c: Vec<u8> = Vec::new();
        (
            a.try_reserve(8).is_ok(),
            b.try_reserve(16).is_ok(),
            c.try_reserve(32).is_ok(),
        )
    });
    assert_eq!(result, (true, false, true));
    assert_eq!(usage.allocations, 3);
    assert_eq!(usage.requested, 8 + 16 + 32);
    let before = live();
    let kept = measure(|| vec![0u8; 100]).0;
    assert_eq!(live(), (before.0 + 1, before.1 + 100));
    drop(kept);
    assert_eq!(live(), before);
}

#[test]
fn every_allocation_of_every_manifest_pair_can_fail() {
    let mut counts = Vec::new();
    for pair in fixtures::manifest_pairs() {
        let object = read(&pair.object);
        let target = read(&pair.target);
        let base = pair.base.as_deref().map(read);
        let mode = match &base {
            Some(base) => TargetMode::SplitMain {
                base,
                split: &target,
            },
            None => TargetMode::Main(&target),
        };
        let what = format!("{} on {}", pair.object, pair.target);
        let total = sweep(&what, None, &|| pipeline(mode, &[&object]));
        counts.push((what, total));
    }
    assert!(
        counts.len() >= 15,
        "manifest has too few committed pairs: {counts:?}"
    );
    eprintln!("allocations per pipeline run: {counts:?}");
}

#[test]
fn module_targets_and_several_objects() {
    let base = read("targets/base.btf");
    let module = read("targets/module.btf");
    let object = read("progs/module.bpf.o");
    sweep("module.bpf.o with --module-btf", None, &|| {
        pipeline(
            TargetMode::Module {
                base: &base,
                module: &module,
            },
            &[&object],
        )
    });

    let target = read("targets/btf__fields.btf");
    let objects = [
        read("progs/fields.bpf.o"),
        read("progs/fields.bpfeb.o"),
        read("progs/types.bpf.o"),
    ];
    let objects: Vec<&[u8]> = objects.iter().map(Vec::as_slice).collect();
    sweep("three objects on btf__fields", None, &|| {
        pipeline(TargetMode::Main(&target), &objects)
    });
}

/// The inputs of the memoized searches (anonymous members, deep type comparisons, entries
/// looked up by name), whose memo tables allocate.
#[test]
fn memoized_searches_can_fail_anywhere() {
    let types = read("progs/types.bpf.o");
    let fields = read("progs/fields.bpf.o");
    let anon = read("regressions/anon_fanout.btf");
    sweep("anon_fanout", None, &|| {
        pipeline(TargetMode::Main(&anon), &[&fields])
    });
    for name in ["deep_struct_match", "deep_proto_compat"] {
        let object = read(&format!("regressions/{name}.o"));
        let target = read(&format!("regressions/{name}.btf"));
        sweep(name, None, &|| {
            pipeline(TargetMode::Main(&target), &[&object])
        });
    }
    let (object, target) = regressions::wide_match(&types, 40);
    sweep("wide_match", None, &|| {
        pipeline(TargetMode::Main(&target), &[&object])
    });
}

#[test]
fn kernel_btf_with_the_example_object() {
    let Ok(vmlinux) = std::fs::read("/sys/kernel/btf/vmlinux") else {
        eprintln!("SKIP: /sys/kernel/btf/vmlinux unreadable");
        return;
    };
    let object = read("progs/task.bpf.o");
    let total = sweep("task.bpf.o on vmlinux", Some(DENSE), &|| {
        pipeline(TargetMode::Main(&vmlinux), &[&object])
    });
    eprintln!("task.bpf.o on vmlinux: {total} allocations");
}

// ---------------------------------------------------------------------------------------------
// Limits: announced sizes are never trusted for allocation.
// ---------------------------------------------------------------------------------------------

/// A BTF header announcing `type_len` bytes of types and `str_len` bytes of strings, followed
/// by `body` bytes.
fn btf_header(type_len: u32, str_len: u32, body: &[u8]) -> Vec<u8> {
    let mut out = vec![0x9f, 0xeb, 1, 0];
    for word in [24, 0, type_len, type_len, str_len] {
        out.extend_from_slice(&u32::to_le_bytes(word));
    }
    out.extend_from_slice(body);
    out
}

/// One STRUCT type record announcing `vlen` members, with no member records after it.
fn struct_record(vlen: u16) -> Vec<u8> {
    let mut out = Vec::new();
    for word in [1u32, (4 << 24) | u32::from(vlen), 8] {
        out.extend_from_slice(&word.to_le_bytes());
    }
    out
}

/// Allocations stay small (a few KiB) whatever the input announces.
fn assert_small(what: &str, usage: alloc_support::Usage, input_len: usize) {
    let bound = 4096 + 2 * input_len as u64;
    assert!(
        usage.requested <= bound && usage.peak <= bound as i64,
        "{what}: requested {} bytes (peak {}) for a {input_len}-byte input",
        usage.requested,
        usage.peak
    );
}

#[test]
fn huge_announced_sizes_fail_fast_without_allocating() {
    // Header: a 1 GiB type section and a 1 GiB string section, neither present.
    let blob = btf_header(1 << 30, 1 << 30, b"\0");
    let (result, usage) = measure(|| Btf::parse(&blob).map(|b| b.type_cnt()));
    assert_eq!(
        result,
        Err(Error::BadHeader("section extends past end of data"))
    );
    assert_small("1 GiB sections", usage, blob.len());

    // A struct announcing 65535 members (the largest vlen), none present.
    let mut body = struct_record(u16::MAX);
    body.extend_from_slice(b"\0a\0");
    let blob = btf_header(12, 3, &body);
    let (result, usage) = measure(|| Btf::parse(&blob).map(|b| b.type_cnt()));
    assert_eq!(
        result,
        Err(Error::Truncated {
            what: "BTF type record",
            offset: 0
        })
    );
    assert_small("vlen 65535", usage, blob.len());

    // A name offset far past the string section.
    let mut body = Vec::new();
    for word in [0x7fff_ffffu32, 1 << 24, 4, 32] {
        body.extend_from_slice(&word.to_le_bytes());
    }
    body.extend_from_slice(b"\0");
    let blob = btf_header(16, 1, &body);
    let (result, usage) = measure(|| Btf::parse(&blob).map(|b| b.type_cnt()));
    assert_eq!(
        result,
        Err(Error::BadType {
            id: 1,
            reason: "name offset out of range"
        })
    );
    assert_small("huge name offset", usage, blob.len());

    // .BTF.ext announcing 1 GiB of func_info and u32::MAX records in a group.
    let mut ext = vec![0x9f, 0xeb, 1, 0];
    for word in [32u32, 0, 1 << 30, 0, 0, 0, 0] {
        ext.extend_from_slice(&word.to_le_bytes());
    }
    ext.extend_from_slice(&[0; 16]);
    let (result, usage) = measure(|| BtfExt::parse(&ext, Endianness::Little).map(|_| ()));
    assert!(matches!(result, Err(Error::BadBtfExt { .. })), "{result:?}");
    assert_small(".BTF.ext 1 GiB func_info", usage, ext.len());
    let mut ext = vec![0x9f, 0xeb, 1, 0];
    for word in [32u32, 0, 16, 0, 0, 0, 0, 8, 1, u32::MAX, 0] {
        ext.extend_from_slice(&word.to_le_bytes());
    }
    let (result, usage) = measure(|| BtfExt::parse(&ext, Endianness::Little).map(|_| ()));
    assert!(matches!(result, Err(Error::BadBtfExt { .. })), "{result:?}");
    assert_small(".BTF.ext u32::MAX records", usage, ext.len());
}

#[test]
fn corrupt_object_section_sizes_allocate_nothing_big() {
    // Every section header's sh_size blown up to ~1 GiB, one at a time: the object reader
    // borrows section data, so it must fail (or not) without allocating for the sizes.
    let object = read("progs/fields.bpf.o");
    let shoff = u64::from_le_bytes(object[0x28..0x30].try_into().unwrap()) as usize;
    let shnum = u16::from_le_bytes(object[0x3c..0x3e].try_into().unwrap()) as usize;
    assert!(shnum > 5);
    for index in 0..shnum {
        let mut data = object.clone();
        let at = shoff + index * 64 + 0x20;
        data[at..at + 8].copy_from_slice(&(1u64 << 30).to_le_bytes());
        let (_, usage) = measure(|| {
            let Ok(obj) = BpfObject::parse(&data) else {
                return;
            };
            for s in obj.sections() {
                let _ = obj.relocations(s.index);
            }
            if let Some(Ok(local)) = obj.btf_bytes().map(Btf::parse) {
                for s in obj.core_relo_sections(&local) {
                    let _ = s.map(|s| s.records.records().count());
                }
            }
        });
        assert_small(
            &format!("section #{index} sh_size 1 GiB"),
            usage,
            data.len(),
        );
    }
}
