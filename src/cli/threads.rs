//! The second core: one helper thread beside the main one, for the work of many objects (their
//! parse beside the kernel's read, their relocation).

use super::{CliError, CliResult};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

/// `work(i)` for every `i < count`, taken from one queue by a helper thread ([`beside`]) and by
/// this one once `first` (other work of this thread's) is done; the results in order, and
/// `first`'s.
pub fn each_beside<A, T: Send + Sync>(
    count: usize,
    first: impl FnOnce() -> A,
    work: impl Fn(usize) -> T + Sync,
) -> (A, CliResult<Vec<T>>) {
    let next = AtomicUsize::new(0);
    let done: Vec<OnceLock<T>> = (0..count).map(|_| OnceLock::new()).collect();
    let take = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(cell) = done.get(i) else {
                break;
            };
            // Each index is taken once, so each cell is set once.
            let _ = cell.set(work(i));
        }
    };
    // One task: a thread would cost more than it could take over (measured: a one-object
    // run 2.2 ms without against 2.7 ms with).
    let a = if count < 2 {
        let a = first();
        take();
        a
    } else {
        beside(
            || {
                let a = first();
                take();
                a
            },
            take,
        )
        .0
    };
    let results = done
        .into_iter()
        .map(|cell| {
            cell.into_inner()
                .ok_or_else(|| CliError("internal error: a queued task did not run".into()))
        })
        .collect();
    (a, results)
}

/// Run `main` on this thread and `helper` on a new one at the same time; both results. If no
/// thread can be started, `helper` runs here after `main`. A panic in `helper` goes on here.
///
/// A new thread starts on its parent's CPU, and on a virtual machine whose other CPUs sleep it
/// runs there first, taking turns with its parent (measured: a helper that parsed the objects
/// made a one-object run slower, a 53-object one barely faster). So where two CPUs are
/// allowed, this thread and the helper are put on one each while both run, and this thread's
/// CPUs are given back after.
pub fn beside<A, B: Send>(main: impl FnOnce() -> A, helper: impl FnMut() -> B + Send) -> (A, B) {
    // Called by the helper thread, or here if none started: never by both.
    let helper = Mutex::new(helper);
    let run = || (helper.lock().unwrap_or_else(PoisonError::into_inner))();
    let allowed = rustix::thread::sched_getaffinity(None).ok();
    let cpus = allowed.as_ref().and_then(two_cpus);
    if let Some((mine, _)) = cpus {
        pin(mine);
    }
    let (a, b) = std::thread::scope(|scope| {
        let run = &run;
        let spawned = std::thread::Builder::new().spawn_scoped(scope, move || {
            if let Some((_, theirs)) = cpus {
                pin(theirs);
            }
            run()
        });
        let a = main();
        let b = match spawned {
            Ok(thread) => thread
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(_) => run(),
        };
        (a, b)
    });
    if let (Some(allowed), Some(_)) = (&allowed, cpus) {
        // Where it fails, this thread stays on one CPU: slower at worst.
        let _ = rustix::thread::sched_setaffinity(None, allowed);
    }
    (a, b)
}

/// The first two CPUs of `allowed`, if it has two.
fn two_cpus(allowed: &rustix::thread::CpuSet) -> Option<(usize, usize)> {
    let mut cpus = (0..rustix::thread::CpuSet::MAX_CPU).filter(|&c| allowed.is_set(c));
    Some((cpus.next()?, cpus.next()?))
}

/// Keep this thread on `cpu` (where that fails, it runs where the scheduler puts it).
fn pin(cpu: usize) {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    let _ = rustix::thread::sched_setaffinity(None, &set);
}
