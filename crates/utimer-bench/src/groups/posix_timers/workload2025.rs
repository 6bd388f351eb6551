//! `posix-workload2025`: the benchmark of the kernel's 2025 posix-timers
//! rework (per-bucket locks in a hash instead of one global lock), replayed
//! on utimer: create 100k timers then `timer_getoverrun` each; and 2
//! threads each creating 20k timers then `timer_getoverrun` on each. ns per
//! create, per getoverrun and per delete, utimer vs kernel syscalls. Kernel
//! timers count against `RLIMIT_SIGPENDING` on recent kernels; a create
//! that fails is reported as a skipped row with its errno.

use std::hint::black_box;
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use utimer::{ClockId, Notify, TimerSystem};

use crate::harness::plot::Chart;
use crate::peers::posix::{Notify as KNotify, PosixTimer};
use crate::{time, GroupDoc, Record, Runner};

const WORKLOAD: &str = "posix-workload2025";

/// The group's section of the results page (`--markdown`).
const DOC: GroupDoc = GroupDoc {
    title: "The 2025 posix-timers rework's workload",
    about: "The benchmark of the kernel's 2025 posix-timers rework (per-bucket hash locks \
         instead of one global lock), replayed: one thread creates 100k `SIGEV_NONE` timers \
         (10k with `--quick`), calls `timer_getoverrun` on each, then deletes them; then 2 \
         threads do the same with 20k each (2k). ns per create, per getoverrun and per delete, \
         mean over the threads, one run each, utimer against the kernel's system calls. Kernel \
         timers count against `RLIMIT_SIGPENDING`: a create the kernel refuses makes its row a \
         skipped one, with the error.",
    look_for: "getoverrun is the lookup plus the timer's own lock: the whole price of finding \
         a timer by its ID, where the kernel adds a system call. Create and delete show the \
         table's writer lock and the reclamation of deleted timers.",
};

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
            match sys.posix().timer_create(ClockId::Monotonic, Notify::None) {
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
                black_box(sys.posix().timer_getoverrun(id).ok());
            }
        });
        let overrun = per(d, ids.len());
        sync.wait();
        let d = time(|| {
            for &id in &ids {
                black_box(sys.posix().timer_delete(id).ok());
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

pub(crate) fn run(r: &mut Runner) {
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
        DOC,
        "the kernel's 2025 posix-timers rework benchmark: T threads each create N SIGEV_NONE\n\
         timers, then timer_getoverrun on each, then delete them; ns per call (mean over\n\
         threads; one run each)",
    );
    let sys = TimerSystem::without_threads(1);
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
            r.values(WORKLOAD, &c, Chart::Bars, records);
        }
    }
}
