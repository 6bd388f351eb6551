//! Seed 003: POSIX timer ID lookup without a global lock, replayed on
//! utimer's user-space POSIX timers.
//!
//! In 2011 every `timer_gettime()` found its timer under one process-wide
//! spinlock, `idr_lock`. The seed's benchmark: 16 processes calling
//! `timer_gettime()` on a 2x4x2 (16 CPU) machine took 78.7 s before (98% of
//! the CPU time spinning in `lock_timer`) and 3.3 s after the lookup became
//! an RCU read. Three groups here:
//!
//! * **`seed003-lookup`**: N threads (1, 2, 4, 8, 16), each polling its own
//!   16 `SIGEV_NONE` timers (armed with a long periodic setting) with
//!   `timer_gettime` for a fixed time, started together by a barrier and
//!   stopped by a flag; each thread counts its calls and the counts are
//!   summed at the end. Three implementations in the same run: utimer's
//!   `timer_gettime` (the lock-free lookup of `posix/table.rs`: an epoch
//!   pin and two loads, then the timer's own lock), the same call behind
//!   one global spinlock held from the lookup to the timer's lock (the
//!   hidden `timer_gettime_global_lock`, the seed's "before"), and the
//!   kernel's `timer_gettime` syscall on kernel `SIGEV_NONE` timers. Total
//!   calls per second, and the 2-thread/1-thread throughput ratio (2.0 is
//!   perfect scaling; a global lock gives well under 1). Counts above the
//!   CPU count oversubscribe: a spinlock holder that is preempted stalls
//!   every spinner until it runs again.
//! * **`seed003-workload2025`**: the benchmark of the kernel's 2025
//!   posix-timers rework (per-bucket locks in a hash instead of one global
//!   lock): create 100k timers then `timer_getoverrun` each; and 2 threads
//!   each creating 20k timers then `timer_getoverrun` on each. ns per
//!   create, per getoverrun and per delete, utimer vs kernel syscalls.
//!   Kernel timers count against `RLIMIT_SIGPENDING` on recent kernels; a
//!   create that fails is reported as a skipped row with its errno.
//! * **`seed003-costs`** (`seed003_costs.rs`): single-thread costs, utimer
//!   vs the kernel syscall.
//! * **`seed003-latency`** (`seed003_latency.rs`): wake-up lateness of
//!   hrtimers and sleeps vs timerfd and tokio.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use utimer::{ClockId, ItimerSpec, Notify, TimerId, TimerSystem};

use super::peers::posix::{itimerspec_periodic, Notify as KNotify, PosixTimer};
use super::{time, Record, Runner};

const LOOKUP: &str = "seed003-lookup";
const WORKLOAD: &str = "seed003-workload2025";

/// Timers each polling thread owns.
const TIMERS_PER_THREAD: usize = 16;
const THREAD_COUNTS: [usize; 5] = [1, 2, 4, 8, 16];
/// A setting that never expires during a run.
pub(crate) const FAR: Duration = Duration::from_secs(3600);

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
            Lookup::GlobalLock => "global lock (idr_lock, before seed 003)",
            Lookup::Kernel => "kernel timer_gettime syscall",
        }
    }
}

/// Creates `n` armed `SIGEV_NONE` utimer timers.
pub(crate) fn utimer_timers(sys: &TimerSystem, n: usize) -> Result<Vec<TimerId>, String> {
    (0..n)
        .map(|_| {
            let id = sys
                .timer_create(ClockId::Monotonic, Notify::None)
                .map_err(|e| format!("timer_create: {e}"))?;
            sys.timer_settime(id, false, ItimerSpec::periodic(FAR, FAR))
                .map_err(|e| format!("timer_settime: {e}"))?;
            Ok(id)
        })
        .collect()
}

/// Creates `n` armed `SIGEV_NONE` kernel timers.
pub(crate) fn kernel_timers(n: usize) -> Result<Vec<PosixTimer>, String> {
    let spec = itimerspec_periodic(FAR, FAR);
    (0..n)
        .map(|_| {
            let t = PosixTimer::new(KNotify::None).map_err(|e| format!("timer_create: {e}"))?;
            t.settime(&spec)
                .map_err(|e| format!("timer_settime: {e}"))?;
            Ok(t)
        })
        .collect()
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
                        Lookup::GlobalLock => sys.timer_gettime_global_lock(id),
                        _ => sys.timer_gettime(id),
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
            let _ = sys.timer_delete(id);
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

fn lookup_scaling(r: &mut Runner) {
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
        "seed 003: N threads each calling timer_gettime on its own 16 SIGEV_NONE timers for a\n\
         fixed time; total million calls per second (the ratio column is throughput: higher\n\
         is faster). Median over repetitions, implementations interleaved",
    );
    let run_for = Duration::from_millis(r.pick(60, 1000));
    let reps = r.pick(1, 3);
    let sys = TimerSystem::new(1);
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
        r.values(LOOKUP, &cases[c], records);
    }
    let ratios = (0..Lookup::ALL.len())
        .map(|i| {
            let one = median(&results[i][0]);
            let two = median(&results[i][1]);
            let ratio = one.zip(two).map(|(a, b)| b / a);
            row(&cases[5], i, ratio, "x", 2, r.mode())
        })
        .collect();
    r.values(LOOKUP, &cases[5], ratios);
    r.note(
        LOOKUP,
        "seed 003's figures: 16 processes calling timer_gettime on a 16-CPU (2x4x2) machine, \
         78.7 s with the global idr_lock (98% of CPU time spinning) -> 3.3 s with the \
         RCU lookup (23.9x)",
    );
    r.note(
        LOOKUP,
        "utimer: the lock-free lookup (epoch pin, two loads, then the timer's own lock); \
         global lock: the same call behind one process-wide spinlock (the seed's idr_lock); \
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

/// The soft `RLIMIT_SIGPENDING`, as text.
fn sigpending_limit() -> String {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit.
    match unsafe { libc::getrlimit(libc::RLIMIT_SIGPENDING, &mut lim) } {
        0 if lim.rlim_cur == libc::RLIM_INFINITY => "unlimited".into(),
        0 => lim.rlim_cur.to_string(),
        _ => "unknown".into(),
    }
}

/// Outcome of one phase of the 2025 workload: ns per call, or why not.
type Phase = Result<f64, String>;

/// Per-thread times of the three phases (create, getoverrun, delete) for
/// `n` timers, utimer or kernel. Threads meet at `sync` between phases.
fn workload_thread(sys: &TimerSystem, kernel: bool, n: usize, sync: &Barrier) -> [Phase; 3] {
    let per = |d: Duration, k: usize| d.as_nanos() as f64 / k.max(1) as f64;
    if kernel {
        let mut timers = Vec::with_capacity(n);
        let t0 = Instant::now();
        let mut fail = None;
        for _ in 0..n {
            match PosixTimer::new(KNotify::None) {
                Ok(t) => timers.push(t),
                Err(e) => {
                    fail = Some(format!(
                        "timer_create failed after {} timers: {e}; RLIMIT_SIGPENDING = {}",
                        timers.len(),
                        sigpending_limit()
                    ));
                    break;
                }
            }
        }
        let create = per(t0.elapsed(), timers.len());
        sync.wait();
        let d = time(|| {
            for t in &timers {
                black_box(t.getoverrun().ok());
            }
        });
        let overrun = per(d, timers.len());
        sync.wait();
        let k = timers.len();
        let d = time(|| drop(timers));
        let delete = per(d, k);
        match fail {
            Some(e) => [Err(e.clone()), Err(e.clone()), Err(e)],
            None => [Ok(create), Ok(overrun), Ok(delete)],
        }
    } else {
        let mut ids = Vec::with_capacity(n);
        let t0 = Instant::now();
        let mut fail = None;
        for _ in 0..n {
            match sys.timer_create(ClockId::Monotonic, Notify::None) {
                Ok(id) => ids.push(id),
                Err(e) => {
                    fail = Some(format!("timer_create failed after {}: {e}", ids.len()));
                    break;
                }
            }
        }
        let create = per(t0.elapsed(), ids.len());
        sync.wait();
        let d = time(|| {
            for &id in &ids {
                black_box(sys.timer_getoverrun(id).ok());
            }
        });
        let overrun = per(d, ids.len());
        sync.wait();
        let d = time(|| {
            for &id in &ids {
                black_box(sys.timer_delete(id).ok());
            }
        });
        let delete = per(d, ids.len());
        match fail {
            Some(e) => [Err(e.clone()), Err(e.clone()), Err(e)],
            None => [Ok(create), Ok(overrun), Ok(delete)],
        }
    }
}

/// `threads` threads of `n` timers each: the mean over threads of each
/// phase's ns per call.
fn workload_run(sys: &TimerSystem, kernel: bool, threads: usize, n: usize) -> [Phase; 3] {
    let sync = Barrier::new(threads);
    let per_thread: Vec<[Phase; 3]> = thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| s.spawn(|| workload_thread(sys, kernel, n, &sync)))
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| std::array::from_fn(|_| Err("thread panicked".into())))
            })
            .collect()
    });
    std::array::from_fn(|p| {
        let mut sum = 0.0;
        for t in &per_thread {
            sum += t[p].clone()?;
        }
        Ok(sum / threads as f64)
    })
}

fn workload_2025(r: &mut Runner) {
    let single = r.pick(10_000usize, 100_000);
    let pair = r.pick(2_000usize, 20_000);
    let label = |n: usize| format!("{}k", n / 1000);
    let shapes = [
        (1usize, single, format!("1x{}", label(single))),
        (2, pair, format!("2x{}", label(pair))),
    ];
    let phases = ["create", "getoverrun", "delete"];
    let case = |shape: &str, phase: &str| format!("{phase}_{shape}");
    if !shapes
        .iter()
        .any(|(_, _, s)| phases.iter().any(|p| r.wants(WORKLOAD, &case(s, p))))
    {
        return;
    }
    r.enter_group(
        WORKLOAD,
        "the kernel's 2025 posix-timers rework benchmark: T threads each create N SIGEV_NONE\n\
         timers, then timer_getoverrun on each, then delete them; ns per call (mean over\n\
         threads; one run each)",
    );
    let sys = TimerSystem::new(1);
    for (threads, n, shape) in &shapes {
        let u = workload_run(&sys, false, *threads, *n);
        let k = workload_run(&sys, true, *threads, *n);
        for (p, phase) in phases.iter().enumerate() {
            let c = case(shape, phase);
            let rec = |name: &str, v: &Phase| match v {
                Ok(v) => Record::value(WORKLOAD, &c, name, r.mode(), *v, "ns/op")
                    .with_ops((threads * n) as u64),
                Err(e) => Record::skipped(WORKLOAD, &c, name, r.mode(), e),
            };
            let records = vec![rec("utimer", &u[p]), rec("kernel syscalls", &k[p])];
            r.values(WORKLOAD, &c, records);
        }
    }
}

pub(crate) fn run(r: &mut Runner) {
    lookup_scaling(r);
    workload_2025(r);
    super::seed003_costs::run(r);
    super::seed003_latency::run(r);
}
