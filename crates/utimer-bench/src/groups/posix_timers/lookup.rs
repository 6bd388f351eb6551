//! `posix-lookup`: the 2011 lookup of POSIX timer IDs under RCU instead of
//! the global `idr_lock`, replayed on utimer.
//!
//! N threads (1, 2, 4, 8, 16), each polling its own 16 `SIGEV_NONE` timers
//! (armed with a long periodic setting) with `timer_gettime` for a fixed
//! time, started together by a barrier and stopped by a flag; each thread
//! counts its calls and the counts are summed at the end. Three
//! implementations in the same run: utimer's `timer_gettime` (the lock-free
//! lookup of `posix/table.rs`: an epoch pin and two loads, then the timer's
//! own lock), the same call behind one global spinlock held from the lookup
//! to the timer's lock (the hidden `timer_gettime_global_lock`, the kernel's
//! "before"), and the kernel's `timer_gettime` syscall on kernel
//! `SIGEV_NONE` timers. Total calls per second, and the 2-thread/1-thread
//! throughput ratio (2.0 is perfect scaling; a global lock gives well under
//! 1). Counts above the CPU count oversubscribe: a spinlock holder that is
//! preempted stalls every spinner until it runs again.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use utimer::{TimerId, TimerSystem};

use super::timers::{kernel_timers, utimer_timers};
use crate::harness::plot::Chart;
use crate::peers::posix::PosixTimer;
use crate::{Better, GroupDoc, Record, Runner};

const LOOKUP: &str = "posix-lookup";

/// The group's section of the results page (`--markdown`).
const DOC: GroupDoc = GroupDoc {
    title: "POSIX timer IDs looked up without a global lock",
    about: "The 2011 patch that looked POSIX timer IDs up under RCU instead of the global \
         `idr_lock`, replayed: N threads (1 to 16) each call `timer_gettime` on their own 16 \
         `SIGEV_NONE` timers for a fixed time, started together; total million calls per \
         second. The rows: utimer's lock-free lookup (an epoch pin and two loads, then the \
         timer's own lock), the same call behind one global spinlock (the hidden \
         `timer_gettime_global_lock`, the patch's *before*) and the kernel's `timer_gettime` \
         system call. `scaling_2T_over_1T` is each row's 2-thread/1-thread throughput ratio. \
         The ratio column compares throughput here: higher is faster.",
    look_for: "A global lock collapses as threads are added; the lock-free lookup scales with \
         the cores (2.0 in `scaling_2T_over_1T` is perfect) and holds its rate when \
         oversubscribed. Thread counts above the CPU count measure time-sharing and, for the \
         spinlock, preempted lock holders. The patch's own figures are in the notes.",
};

/// Timers each polling thread owns.
const TIMERS_PER_THREAD: usize = 16;
const THREAD_COUNTS: [usize; 5] = [1, 2, 4, 8, 16];

/// One implementation of `timer_gettime` under test.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Lookup {
    Utimer,
    GlobalLock,
    Kernel,
}

impl Lookup {
    const ALL: [Lookup; 3] = [Lookup::Utimer, Lookup::GlobalLock, Lookup::Kernel];

    fn name(self) -> &'static str {
        match self {
            Lookup::Utimer => "utimer timer_gettime",
            Lookup::GlobalLock => "global lock (idr_lock, before 2011)",
            Lookup::Kernel => "kernel timer_gettime syscall",
        }
    }
}

/// One polling thread: sets up its timers, waits at the barrier, calls
/// `timer_gettime` round-robin until `stop`, and returns its call count and
/// when it stopped.
fn poll_thread(
    sys: &TimerSystem,
    imp: Lookup,
    start: &Barrier,
    stop: &AtomicBool,
) -> Result<(u64, Instant), String> {
    /// The timers a polling thread owns.
    enum Owned {
        Utimer(Vec<TimerId>),
        Kernel(Vec<PosixTimer>),
    }
    let mut ops = 0u64;
    let timers = match imp {
        Lookup::Kernel => kernel_timers(TIMERS_PER_THREAD).map(Owned::Kernel),
        _ => utimer_timers(sys, TIMERS_PER_THREAD).map(Owned::Utimer),
    };
    // Every thread reaches the barrier, even if its set-up failed.
    start.wait();
    let end = match &timers {
        Ok(Owned::Utimer(ids)) => {
            while !stop.load(Relaxed) {
                for &id in ids {
                    let r = match imp {
                        Lookup::GlobalLock => sys.posix().timer_gettime_global_lock(id),
                        _ => sys.posix().timer_gettime(id),
                    };
                    black_box(r.ok());
                }
                ops += ids.len() as u64;
            }
            Instant::now()
        }
        Ok(Owned::Kernel(ts)) => {
            while !stop.load(Relaxed) {
                for t in ts {
                    black_box(t.gettime().ok());
                }
                ops += ts.len() as u64;
            }
            Instant::now()
        }
        Err(e) => return Err(e.clone()),
    };
    if let Ok(Owned::Utimer(ids)) = timers {
        for id in ids {
            let _ = sys.posix().timer_delete(id);
        }
    }
    Ok((ops, end))
}

/// Calls per second of `threads` threads polling for `run_for`.
fn scaling_point(
    sys: &TimerSystem,
    imp: Lookup,
    threads: usize,
    run_for: Duration,
) -> Result<f64, String> {
    let start = Barrier::new(threads + 1);
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| s.spawn(|| poll_thread(sys, imp, &start, &stop)))
            .collect();
        start.wait();
        let t0 = Instant::now();
        thread::sleep(run_for);
        stop.store(true, Relaxed);
        let mut total = 0u64;
        let mut last = t0;
        for h in handles {
            let (ops, end) = h.join().map_err(|_| "polling thread panicked")??;
            total += ops;
            last = last.max(end);
        }
        Ok(total as f64 / last.duration_since(t0).as_secs_f64())
    })
}

pub(crate) fn run(r: &mut Runner) {
    let cases: Vec<String> = THREAD_COUNTS
        .iter()
        .map(|n| format!("gettime_{n}_threads"))
        .chain(["scaling_2T_over_1T".to_string()])
        .collect();
    if !cases.iter().any(|c| r.wants(LOOKUP, c)) {
        return;
    }
    let cpus = thread::available_parallelism().map_or(1, |n| n.get());
    r.enter_group(
        LOOKUP,
        DOC,
        "POSIX timer IDs looked up without a global lock (2011): N threads each calling\n\
         timer_gettime on its own 16 SIGEV_NONE timers for a fixed time; total million calls\n\
         per second (the ratio column is throughput: higher is faster). Median over\n\
         repetitions, implementations interleaved",
    );
    let run_for = Duration::from_millis(r.pick(60, 1000));
    let reps = r.pick(1, 3);
    let sys = TimerSystem::without_threads(1);
    // results[imp][count] = samples of calls/s
    let mut results = vec![vec![Vec::new(); THREAD_COUNTS.len()]; Lookup::ALL.len()];
    let mut errors: Vec<Option<String>> = vec![None; Lookup::ALL.len()];
    for rep in 0..reps {
        for (c, &threads) in THREAD_COUNTS.iter().enumerate() {
            if !r.wants(LOOKUP, &cases[c]) && !r.wants(LOOKUP, &cases[5]) {
                continue;
            }
            for k in 0..Lookup::ALL.len() {
                let i = (k + rep + c) % Lookup::ALL.len();
                if errors[i].is_some() {
                    continue;
                }
                match scaling_point(&sys, Lookup::ALL[i], threads, run_for) {
                    Ok(v) => results[i][c].push(v),
                    Err(e) => errors[i] = Some(e),
                }
            }
        }
    }
    let median = |v: &[f64]| -> Option<f64> {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        (!v.is_empty()).then(|| v[v.len() / 2])
    };
    let row = |case: &str, i: usize, v: Option<f64>, unit: &str, n: usize, mode: &str| match (
        &errors[i], v,
    ) {
        (Some(e), _) => Record::skipped(LOOKUP, case, Lookup::ALL[i].name(), mode, e),
        (None, Some(v)) => {
            Record::value(LOOKUP, case, Lookup::ALL[i].name(), mode, v, unit).with_ops(n as u64)
        }
        (None, None) => Record::skipped(LOOKUP, case, Lookup::ALL[i].name(), mode, "no sample"),
    };
    for (c, &threads) in THREAD_COUNTS.iter().enumerate() {
        let records = (0..Lookup::ALL.len())
            .map(|i| {
                let mut rec = row(
                    &cases[c],
                    i,
                    median(&results[i][c]).map(|v| v / 1e6),
                    "Mcalls/s",
                    threads,
                    r.mode(),
                );
                if let Some(v) = &results[i][c].iter().copied().reduce(f64::min) {
                    rec.min = Some(v / 1e6);
                }
                rec.samples = results[i][c].len();
                rec
            })
            .collect();
        // Bars, and a line per row against the thread count.
        r.values(LOOKUP, &cases[c], Chart::Scaling, records);
    }
    let ratios = (0..Lookup::ALL.len())
        .map(|i| {
            let one = median(&results[i][0]);
            let two = median(&results[i][1]);
            let ratio = one.zip(two).map(|(a, b)| b / a);
            // Throughput ratios: the higher, the better the lookup scales.
            row(&cases[5], i, ratio, "x", 2, r.mode()).with_better(Some(Better::Higher))
        })
        .collect();
    r.values(LOOKUP, &cases[5], Chart::Bars, ratios);
    r.note(
        LOOKUP,
        "the 2011 patch's figures: 16 processes calling timer_gettime on a 16-CPU (2x4x2) machine, \
         78.7 s with the global idr_lock (98% of CPU time spinning) -> 3.3 s with the \
         RCU lookup (23.9x)",
    );
    r.note(
        LOOKUP,
        "utimer: the lock-free lookup (epoch pin, two loads, then the timer's own lock); \
         global lock: the same call behind one process-wide spinlock (the kernel's idr_lock); \
         kernel: timer_gettime(2) on kernel SIGEV_NONE timers",
    );
    r.note(
        LOOKUP,
        &format!(
            "this machine has {cpus} CPU(s) (available_parallelism): thread counts above {cpus} \
             oversubscribe, so their totals measure time-sharing (and, for the spinlock, \
             preempted lock holders), not more parallelism; {} ms per point, {reps} \
             repetition(s)",
            run_for.as_millis()
        ),
    );
}
