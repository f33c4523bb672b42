//! Memory budgets on the Rust API ([`btfgen::budget`]): this binary's global allocator is a
//! [`BudgetAlloc`] over the system allocator, and the whole minimize pipeline runs inside
//! [`Budget::run`].
//!
//! For every committed manifest pair, an unlimited run gives the result (the output, or the
//! error libbpf also gives) and the peak; then limits from 0 to the peak (coarse steps, and
//! every byte just under the peak) must each give either exactly that result or
//! `Error::OutOfMemory`, never more than the limit in use, and
//! nothing left charged to the budget once the result is dropped (no leak). Budgets are per
//! thread: two threads running the same work side by side each see the single-thread peak.

#[path = "support/fixtures.rs"]
mod fixtures;

use btfgen::budget::{self, Budget, BudgetAlloc};
use btfgen::{Error, Result};
use fixtures::{Output, TargetMode, manifest_pairs, pipeline, read};

#[global_allocator]
static ALLOC: BudgetAlloc<std::alloc::System> = BudgetAlloc::new(std::alloc::System);

/// Coarse steps between 0 and the peak.
const STEPS: usize = 40;
/// Limits just under the peak, each tried.
const FINE: usize = 48;
/// How far past its limit gimli's allocations for two units of a small fixture may take a
/// budget.
const SLACK: usize = 16 << 10;

/// One pair's inputs, read outside any budget.
struct Inputs {
    name: String,
    target: Vec<u8>,
    base: Option<Vec<u8>>,
    object: Vec<u8>,
}

impl Inputs {
    fn run(&self) -> Result<Output> {
        let mode = match &self.base {
            None => TargetMode::Main(&self.target),
            Some(base) => TargetMode::Module {
                base,
                module: &self.target,
            },
        };
        pipeline(mode, &[&self.object])
    }
}

fn inputs() -> Vec<Inputs> {
    manifest_pairs()
        .into_iter()
        .map(|p| Inputs {
            name: format!("{} vs {}", p.object, p.target),
            target: read(&p.target),
            base: p.base.as_deref().map(read),
            object: read(&p.object),
        })
        .collect()
}

/// Run `inputs` under a budget of `limit`; the result and the budget's peak. Checks that the
/// limit held and that nothing stays charged once the result is dropped.
fn run_limited(inputs: &Inputs, limit: usize) -> (Result<Output>, usize) {
    let budget = Budget::new(limit).unwrap();
    let result = budget.run(|| inputs.run());
    let peak = budget.peak();
    assert!(
        peak <= limit,
        "{}: peak {peak} over the limit {limit}",
        inputs.name
    );
    let outcome = match &result {
        Ok(out) => Ok(Output {
            bytes: out.bytes.clone(),
            explain: out.explain.clone(),
            dump: out.dump.clone(),
        }),
        Err(e) => Err(e.clone()),
    };
    drop(result);
    assert_eq!(
        budget.used(),
        0,
        "{}: limit {limit}: left charged",
        inputs.name
    );
    (outcome, peak)
}

#[test]
fn every_limit_gives_the_output_or_out_of_memory() {
    assert!(
        Budget::new(0)
            .unwrap()
            .run(|| Vec::<u8>::new().try_reserve(1))
            .is_err(),
        "BudgetAlloc is not this binary's global allocator"
    );
    assert!(budget::installed());
    let all = inputs();
    assert!(
        all.len() >= 10,
        "manifest has {} committed pairs",
        all.len()
    );
    for inputs in &all {
        // Some pairs fail (as libbpf fails them): then every limit gives that error or OOM.
        let (reference, peak) = run_limited(inputs, usize::MAX);
        assert!(
            reference != Err(Error::OutOfMemory) && peak > 0,
            "{}",
            inputs.name
        );
        let coarse = (0..=STEPS).map(|i| peak * i / STEPS);
        let fine = peak.saturating_sub(FINE)..=peak;
        let mut failures = 0;
        for limit in coarse.chain(fine) {
            match run_limited(inputs, limit).0 {
                Err(Error::OutOfMemory) => failures += 1,
                other => assert_eq!(other, reference, "{}: limit {limit}", inputs.name),
            }
        }
        assert!(
            failures > STEPS / 2,
            "{}: only {failures} limits failed",
            inputs.name
        );
        assert_eq!(
            run_limited(inputs, peak).0,
            reference,
            "{}: the peak",
            inputs.name
        );
        assert_eq!(
            run_limited(inputs, peak - 1).0,
            Err(Error::OutOfMemory),
            "{}: peak - 1 is enough",
            inputs.name
        );
    }
}

#[test]
fn budgets_are_per_thread() {
    let all = inputs();
    let inputs = &all[0];
    let (_, alone) = run_limited(inputs, usize::MAX);
    std::thread::scope(|s| {
        let runs: Vec<_> = (0..2)
            .map(|_| s.spawn(|| run_limited(inputs, usize::MAX).1))
            .collect();
        for run in runs {
            assert_eq!(run.join().unwrap(), alone);
        }
    });
}

/// A DWARF conversion on two threads inside a budget: the second thread's allocations are
/// charged to the caller's budget and held to its limit (`budget::inherit`). Every limit gives
/// the output of an unlimited run or `OutOfMemory`, never an abort, with nothing left charged;
/// which limits fail depends on how the threads interleave, so the exact peak is not pinned.
/// gimli's own allocations for a unit (abbreviations) cannot fail: counted, not refused, they
/// may take the peak past the limit by a unit's share ([`SLACK`] here).
#[test]
fn a_threaded_dwarf_conversion_stays_in_its_budget() {
    let elf = read("dwarf/gcc-dwarf5.so");
    let convert = |limit: usize| {
        let budget = Budget::new(limit).unwrap();
        let result = budget.run(|| btfgen::dwarf::to_btf(&elf, None));
        let peak = budget.peak();
        assert!(
            peak <= limit.saturating_add(SLACK),
            "peak {peak} over the limit {limit}"
        );
        // Copied outside the budget, so that dropping the result must leave nothing charged.
        let outcome = result.as_ref().map(|b| b.to_vec()).map_err(Error::clone);
        drop(result);
        // The second thread has exited when the call returns.
        assert_eq!(budget.used(), 0, "limit {limit}: left charged");
        (outcome, peak)
    };
    let (reference, peak) = convert(usize::MAX);
    let reference = reference.unwrap();
    let sequential = Budget::new(usize::MAX).unwrap();
    let one = btfgen::dwarf::Options {
        threads: false,
        ..btfgen::dwarf::Options::default()
    };
    let alone = sequential
        .run(|| btfgen::dwarf::to_btf_with(&elf, None, &one))
        .unwrap();
    assert_eq!(alone, reference);
    // The walker's DIEs are charged: the peak is not far under one thread's.
    assert!(
        peak * 4 >= sequential.peak() * 3,
        "two threads {peak}, one {}",
        sequential.peak()
    );
    let mut failures = 0;
    for i in 0..=STEPS {
        match convert(peak * i / STEPS).0 {
            Err(Error::OutOfMemory) => failures += 1,
            other => assert_eq!(other.as_ref(), Ok(&reference), "limit {}", peak * i / STEPS),
        }
    }
    assert!(failures > STEPS / 2, "only {failures} limits failed");
}

/// A budget carried to another thread (`budget::inherit`) charges that thread's allocations
/// and holds them to its limit.
#[test]
fn an_inherited_budget_charges_and_limits_another_thread() {
    let budget = Budget::new(1 << 20).unwrap();
    let (kept, refused) = budget.run(|| {
        let inherited = budget::inherit();
        budget::uncharged(|| std::thread::spawn(move || inherited.run(allocate_past_a_mib)))
            .join()
            .unwrap()
    });
    assert!(refused, "the other thread went past the limit");
    assert!(budget.used() >= 1000, "{}", budget.used());
    drop(kept);
    assert_eq!(budget.used(), 0);
}

/// 1000 bytes kept, and whether 2 MiB more were refused.
fn allocate_past_a_mib() -> (Vec<u8>, bool) {
    let mut kept: Vec<u8> = Vec::new();
    kept.try_reserve_exact(1000).unwrap();
    (kept, Vec::<u8>::new().try_reserve_exact(2 << 20).is_err())
}
