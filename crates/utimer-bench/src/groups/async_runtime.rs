//! The `async-mt` group: timeouts armed and cancelled by many tasks on a
//! multi-thread tokio runtime, `utimer_async::timeout` against
//! `tokio::time::timeout` in the same run.
//!
//! A runtime of T worker threads (T = 1, 2, and the CPU count when it is
//! larger) runs 64 tasks per worker. Each task loops: a timeout of 1–10 s
//! (drawn per operation) around `tokio::task::yield_now()`, awaited. The
//! first poll finds the inner future pending, so the timeout arms its
//! timer; the task yields, is polled again, the inner future is ready and
//! the timeout is dropped, which cancels the timer. One operation is that
//! arm + cancel, with the task switch between: what a server's request
//! timeout costs when the request completes quickly, scheduler included.
//!
//! A sample spawns the tasks, lets them run for a warm-up, counts the
//! operations they complete in a fixed wall time (each task publishes its
//! count in its own cache line; the runner thread reads them before and
//! after), then stops them. The two implementations alternate in the same
//! runtime, sample by sample (the one to go first alternates too), and the
//! median of each is reported in million operations per second; the ratio
//! utimer-async / tokio is the median of the per-repetition ratios (the
//! two samples of a repetition run back to back, so machine noise hits
//! both alike). The tasks run under tokio's cooperative budget, as
//! application tasks do.
//!
//! utimer-async's timers live in its process-wide default runtime (its
//! own worker thread, started before the measurements), tokio's in the
//! runtime's own time driver.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;

use crate::harness::plot::Chart;
use crate::{Better, GroupDoc, Record, Runner, XorShift};

const GROUP: &str = "async-mt";

/// The group's section of the results page (`--markdown`).
const DOC: GroupDoc = GroupDoc {
    title: "Async timeouts on a multi-thread runtime",
    about: "A multi-thread tokio runtime of T workers (1, 2, and the CPU count when it is \
         larger) runs 64 tasks per worker; each task loops on a timeout of 1-10 s around \
         `tokio::task::yield_now()`: the first poll finds the future pending and arms the \
         timer, the task yields, the second poll completes it and the timeout is dropped, \
         cancelling the timer. Million operations (arm + cancel, task switch included) per \
         second over a fixed wall time after a warm-up, `utimer_async::timeout` and \
         `tokio::time::timeout` alternating in the same runtime, median over the \
         repetitions. The ratio column compares throughput here: higher is faster. \
         `timeout_utimer_over_tokio`: per thread count, the median over the repetitions of \
         utimer-async's throughput over tokio's in the same repetition.",
    look_for: "Both rows pay the same task switch per operation, so the difference between \
         them is the timer's arm and cancel. More workers contend more on whatever the \
         timers share. Thread counts above the CPU count measure time-sharing.",
};

/// Tasks per runtime worker.
const TASKS_PER_THREAD: usize = 64;

/// The two timeouts under test.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Imp {
    Utimer,
    Tokio,
}

impl Imp {
    const ALL: [Imp; 2] = [Imp::Utimer, Imp::Tokio];

    fn name(self) -> &'static str {
        match self {
            Imp::Utimer => "utimer-async timeout",
            Imp::Tokio => "tokio::time::timeout",
        }
    }
}

/// A task's count of completed operations, alone on its cache lines.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Count(AtomicU64);

/// One task: timeouts of 1–10 s around `yield_now()` until `stop`; its
/// running count in `counts[k]`. Returns how many timeouts elapsed.
async fn task(imp: Imp, counts: Arc<[Count]>, k: usize, stop: Arc<AtomicBool>) -> u64 {
    let mut rng = XorShift::new(0x7a5c + k as u64);
    let (mut ops, mut elapsed) = (0u64, 0u64);
    while !stop.load(Relaxed) {
        let d = Duration::from_millis(1_000 + rng.below(9_000));
        let ok = match imp {
            Imp::Utimer => utimer_async::timeout(d, tokio::task::yield_now())
                .await
                .is_ok(),
            Imp::Tokio => tokio::time::timeout(d, tokio::task::yield_now())
                .await
                .is_ok(),
        };
        elapsed += u64::from(!ok);
        ops += 1;
        counts[k].0.store(ops, Relaxed);
    }
    elapsed
}

/// How long a sample runs.
#[derive(Clone, Copy, Debug)]
struct Window {
    warm: Duration,
    run: Duration,
}

/// Operations per second of `tasks` tasks of `imp` on `rt`.
fn sample(rt: &Runtime, imp: Imp, tasks: usize, w: Window) -> Result<f64, String> {
    let stop = Arc::new(AtomicBool::new(false));
    let counts: Arc<[Count]> = (0..tasks).map(|_| Count::default()).collect();
    let handles: Vec<_> = (0..tasks)
        .map(|k| rt.spawn(task(imp, counts.clone(), k, stop.clone())))
        .collect();
    let total = || counts.iter().map(|c| c.0.load(Relaxed)).sum::<u64>();
    std::thread::sleep(w.warm);
    let (c0, t0) = (total(), Instant::now());
    std::thread::sleep(w.run);
    let (c1, t1) = (total(), Instant::now());
    stop.store(true, Relaxed);
    let mut elapsed = 0;
    for h in handles {
        elapsed += rt
            .block_on(h)
            .map_err(|e| format!("a bench task failed: {e}"))?;
    }
    if elapsed > 0 {
        return Err(format!("{elapsed} timeouts of 1-10 s elapsed"));
    }
    Ok(c1.saturating_sub(c0) as f64 / (t1 - t0).as_secs_f64())
}

/// The samples of one thread count: million ops/s per implementation and
/// the paired ratios utimer-async / tokio; or why none could be taken.
#[derive(Debug, Default)]
struct Point {
    mops: [Vec<f64>; 2],
    ratios: Vec<f64>,
    errors: [Option<String>; 2],
}

fn measure(threads: usize, reps: usize, w: Window) -> Point {
    let mut p = Point::default();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_time()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let why = format!("cannot build a tokio runtime: {e}");
            p.errors = [Some(why.clone()), Some(why)];
            return p;
        }
    };
    let tasks = threads * TASKS_PER_THREAD;
    for rep in 0..reps {
        let mut pair = [None; 2];
        for k in 0..2 {
            let i = (k + rep) % 2;
            if p.errors[i].is_some() {
                continue;
            }
            match sample(&rt, Imp::ALL[i], tasks, w) {
                Ok(v) => {
                    p.mops[i].push(v / 1e6);
                    pair[i] = Some(v);
                }
                Err(e) => p.errors[i] = Some(e),
            }
        }
        if let [Some(u), Some(t)] = pair {
            p.ratios.push(u / t.max(1e-9));
        }
    }
    p
}

/// The thread counts: 1, 2, and the CPU count when it is larger.
fn thread_counts() -> Vec<usize> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut v = vec![1, 2];
    if cpus > 2 {
        v.push(cpus);
    }
    v
}

fn case_name(threads: usize) -> String {
    match threads {
        1 => "timeout_1_thread".to_string(),
        n => format!("timeout_{n}_threads"),
    }
}

const RATIO_CASE: &str = "timeout_utimer_over_tokio";

pub(crate) fn run(r: &mut Runner) {
    let counts = thread_counts();
    let cases: Vec<String> = counts.iter().map(|&t| case_name(t)).collect();
    let wants_ratio = r.wants(GROUP, RATIO_CASE);
    if !wants_ratio && !cases.iter().any(|c| r.wants(GROUP, c)) {
        return;
    }
    let reps = r.pick(3, 5);
    let w = Window {
        warm: Duration::from_millis(r.pick(10, 20)),
        run: Duration::from_millis(r.pick(50, 100)),
    };
    r.enter_group(
        GROUP,
        DOC,
        &format!(
            "async timeouts on a multi-thread tokio runtime: T workers, {TASKS_PER_THREAD} tasks \
             per worker, each\n\
             looping on timeout(1-10 s, yield_now()): arm + cancel; million ops/s (the ratio \
             column is\n\
             throughput: higher is faster); {} ms per sample after {} ms of warm-up, median of \
             {reps}",
            w.run.as_millis(),
            w.warm.as_millis()
        ),
    );
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    r.note(
        GROUP,
        &format!(
            "this machine has {cpus} CPU(s): thread counts above {cpus} measure time-sharing; \
             utimer-async's default runtime adds a worker thread per CPU"
        ),
    );
    // Start utimer-async's default runtime outside the measurements.
    futures::executor::block_on(utimer_async::sleep(Duration::from_millis(1)));
    let mode = r.mode();
    let mut ratio_rows = Vec::new();
    for (&threads, case) in counts.iter().zip(&cases) {
        if !r.wants(GROUP, case) && !wants_ratio {
            continue;
        }
        crate::harness::progress::case(GROUP, case);
        let p = measure(threads, reps, w);
        let records = Imp::ALL
            .iter()
            .enumerate()
            .map(|(i, imp)| {
                let err = p.errors[i].as_deref();
                Record::distribution(GROUP, (case, imp.name(), mode), &p.mops[i], "Mops/s", err)
                    .with_ops((threads * TASKS_PER_THREAD) as u64)
            })
            .collect();
        // Bars, and a line per row against the thread count.
        r.values(GROUP, case, Chart::Scaling, records);
        let name = match threads {
            1 => "1 thread".to_string(),
            n => format!("{n} threads"),
        };
        let err = p.errors.iter().flatten().next().map(String::as_str);
        // utimer-async's throughput over tokio's: higher is better.
        ratio_rows.push(
            Record::distribution(GROUP, (RATIO_CASE, &name, mode), &p.ratios, "x", err)
                .with_better(Some(Better::Higher)),
        );
    }
    r.values(GROUP, RATIO_CASE, Chart::Bars, ratio_rows);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_timeouts_complete_tasks() {
        let w = Window {
            warm: Duration::from_millis(5),
            run: Duration::from_millis(20),
        };
        let p = measure(2, 1, w);
        assert_eq!(p.errors, [None, None]);
        for v in &p.mops {
            assert_eq!(v.len(), 1);
            assert!(v[0] > 0.0, "{p:?}");
        }
        assert_eq!(p.ratios.len(), 1);
    }

    #[test]
    fn cases_are_a_scaling_family() {
        for t in thread_counts() {
            let case = case_name(t);
            let key = crate::harness::plot::scaling_key(&case);
            assert_eq!(key, Some(("timeout", t as u64, "threads")), "{case}");
        }
    }
}
