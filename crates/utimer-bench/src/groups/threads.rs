//! The two-thread case: does arming and cancelling scale when two threads
//! do it at once, each on "its own" timers?
//!
//! Each thread arms a timer to now+100 ticks and cancels it, `OPS` times,
//! starting together at a barrier; the time of each thread's loop is taken
//! inside the thread, and a sample is the mean over the threads of
//! ns per operation *per thread*. `1_thread` runs the same code on one
//! thread, so perfect scaling shows as equal numbers in the two cases (the
//! machine must have two idle cores for that, and this one is shared).
//!
//! * **utimer**: a `TimerSystem` with 2 workers; thread `i` enters worker
//!   `i`, so each thread arms on its own worker's base, under its own lock:
//!   the kernel's per-CPU timer bases. **utimer (owners)**: thread `i`
//!   registers as worker `i` instead, so it owns the base and its lock is
//!   biased towards it (no atomic read-modify-write).
//! * **shared_base** (a separate case): one base used by its owner and by
//!   a remote thread at once, one row per thread: what remote operations
//!   cost against a biased lock (its revocations included).
//! * **tokio multi-thread**: a 2-worker runtime; each thread is a task
//!   arming and dropping `Sleep`s. (tokio's stable time driver has one
//!   wheel behind one mutex for the whole runtime.) The loop runs inside
//!   `tokio::task::unconstrained`, otherwise the coop budget would turn
//!   every poll after the 128th into a no-op.
//! * **tokio alt timer**: the same on a 2-worker runtime with tokio's
//!   alternative timer, one wheel per worker (`enable_alt_timer`, needs
//!   `--cfg tokio_unstable`: run in a helper process, see
//!   [`tokio_alt`]); the tasks' loops end with a yield so that the worker
//!   parks once and does the work the alt timer defers (registering,
//!   dropping cancelled entries) inside the timed part.
//! * **`Mutex<BinaryHeap>`**: one shared lazy-deletion heap behind a
//!   `std::sync::Mutex`, locked once to arm and once to cancel: what a
//!   program gets by sharing its single-threaded queue.
//! * **timerfd per thread**: each thread its own fd; the kernel's timer
//!   bases are per CPU, so this scales like utimer, at syscall cost.
//! * **CPU-only baseline**: no timers, a few xorshift steps per operation
//!   in registers. Its 2-thread/1-thread ratio is what the machine itself
//!   allows (on a shared or hyperthreaded 2-vCPU machine it is well above
//!   1); the summary line under the tables sets every row's ratio beside
//!   it, which is the fair way to read the others.
//!
//! Threads are spawned per sample (outside the timed part), so the OS
//! places them afresh each time; nothing is pinned. Because a shared
//! machine may not run both threads at once, each 2-thread sample also
//! records the *overlap* of the two timed loops (time both were running
//! over the mean loop time); the median overlap per row is printed under
//! the table. Near 100% means the threads really competed.

use std::cell::RefCell;
use std::hint::black_box;
use std::pin::pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;

use crate::harness::plot::Chart;
use crate::peers::heap::HeapTimers;
use crate::peers::timerfd::TimerFd;
use crate::peers::tokio_alt;
use crate::peers::tokio_sleep::poll_once;
use crate::peers::utimer::{empty_timer, UtimerPeer};
use crate::{Contender, GroupDoc, Runner, Sample, Schedule};

const GROUP: &str = "threads";

/// The group's section of the results page (`--markdown`).
const DOC: GroupDoc = GroupDoc {
    title: "Two threads at once",
    about: "Each thread arms a timer to now + 100 ticks and cancels it in a loop; `1_thread` \
         runs the loop on one thread, `2_threads` on two at once, started together at a \
         barrier, each on its own timers; a sample is the mean over the threads of ns per \
         operation per thread. `utimer`: two workers, thread *i* enters worker *i*, so each \
         arms on its own base under its own lock (the kernel's per-CPU bases); `utimer \
         (owners)`: thread *i* is registered as worker *i*, so its base's lock is biased \
         towards it. `tokio multi-thread` and `tokio alt timer`: a 2-worker runtime, one task \
         per thread. `Mutex<BinaryHeap>`: one shared heap behind a mutex, what a program gets \
         by sharing its single-threaded queue. `timerfd per thread`: one descriptor per \
         thread, at system-call cost. `CPU-only baseline`: no timers, a few register \
         operations per iteration. `shared_base`: one base used by its owner and by a remote \
         thread at once, one row per thread: what remote operations cost against a biased \
         lock, revocations included.",
    look_for: "Perfect scaling shows as equal numbers in the two cases. Compare each row's \
         2-thread/1-thread ratio (the note under the tables) with the baseline's, which is \
         what the machine itself allows: above 1 on a shared or hyperthreaded machine, and \
         with fewer CPUs than threads the numbers measure time-sharing. tokio's stable driver \
         has one wheel behind one mutex for the whole runtime and a shared heap serialises on \
         its lock; utimer's workers share nothing. The bench keeps the two threads' timers on \
         different cache lines: utimer does not pad timers to a line, and two workers' timers \
         that share one slow each other down, as any two objects written by two threads do.",
};

const ARM_DELTA: u64 = 100;
const BASELINE: &str = "CPU-only baseline";
/// The rows, in table order.
const NAMES: [&str; 7] = [
    "utimer",
    "utimer (owners)",
    "tokio multi-thread",
    tokio_alt::NAME,
    "Mutex<BinaryHeap>",
    "timerfd per thread",
    BASELINE,
];

/// When one thread's timed loop ran.
#[derive(Clone, Copy, Debug)]
struct Span {
    start: Instant,
    end: Instant,
}

/// Times `f` as a [`Span`].
fn span(f: impl FnOnce()) -> Span {
    let start = Instant::now();
    f();
    Span {
        start,
        end: Instant::now(),
    }
}

/// Overlap ratios of the 2-thread samples, one list per row.
type OverlapLog = Rc<RefCell<Vec<f64>>>;

/// Turns the threads' spans into a sample (mean per-thread time) and logs
/// how much the loops overlapped.
fn to_sample(spans: &[Span], ops: u64, log: &OverlapLog) -> Sample {
    let n = spans.len() as u32;
    let total: Duration = spans.iter().map(|s| s.end - s.start).sum();
    let mean = total / n;
    if n > 1 {
        let first_end = spans.iter().map(|s| s.end).min().expect("spans");
        let last_start = spans.iter().map(|s| s.start).max().expect("spans");
        let both = first_end.saturating_duration_since(last_start);
        log.borrow_mut()
            .push(both.as_secs_f64() / mean.as_secs_f64().max(1e-12));
    }
    Sample { elapsed: mean, ops }
}

/// Runs `body(i, barrier)` on `threads` scoped threads; each returns the
/// span of its own `ops` operations.
fn run_threads<F>(threads: usize, ops: u64, log: &OverlapLog, body: F) -> Sample
where
    F: Fn(usize, &Barrier) -> Span + Sync,
{
    let barrier = Barrier::new(threads);
    let spans: Vec<Span> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (b, body) = (&barrier, &body);
                s.spawn(move || body(i, b))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("bench thread panicked"))
            .collect()
    });
    to_sample(&spans, ops, log)
}

/// One timer per thread, made here with a 128-byte allocation between
/// each two, so that no two threads' timers share a cache line. Made in
/// the threads themselves, the timers were each thread's first allocation
/// and glibc placed them side by side (in its main arena, 32 bytes apart):
/// every arm on one worker then invalidated the other worker's line, and
/// the 2-thread row measured that false sharing (3.5x one thread) rather
/// than the bases. Returns the timers and the spacers to keep.
fn spaced_timers(sys: &utimer::TimerSystem, n: usize) -> (Vec<utimer::Timer>, Vec<Box<[u8]>>) {
    let mut spacers = Vec::with_capacity(n + 1);
    let mut timers = Vec::with_capacity(n);
    for _ in 0..n {
        spacers.push(black_box(vec![0u8; 128].into_boxed_slice()));
        timers.push(empty_timer(sys));
    }
    spacers.push(black_box(vec![0u8; 128].into_boxed_slice()));
    (timers, spacers)
}

/// The timed loop of the utimer rows: `t` armed to now+100 ticks on this
/// thread's worker and cancelled `ops` times once `barrier` opens (the
/// arm before it moves `t` to this worker, as a timer's first arm on a
/// worker does).
fn arm_cancel_loop(
    sys: &utimer::TimerSystem,
    t: &utimer::Timer,
    ops: u64,
    barrier: &Barrier,
) -> Span {
    let at = sys.now() + ARM_DELTA;
    t.add(utimer::Expiry::Tick(at)).expect("a live system");
    t.delete();
    barrier.wait();
    span(|| {
        for _ in 0..ops {
            let _ = black_box(t.add(utimer::Expiry::Tick(black_box(at))));
            black_box(t.delete());
        }
    })
}

/// `owners`: each thread registers as its worker (`register_worker`)
/// instead of entering it, so it owns the base and its lock is biased
/// towards it (no atomic read-modify-write), as a runtime's worker
/// threads do.
fn utimer(threads: usize, ops: u64, log: OverlapLog, owners: bool) -> Contender<'static> {
    let name = if owners { "utimer (owners)" } else { "utimer" };
    Contender::fixed(name, move || {
        let peer = UtimerPeer::with(2, false);
        Ok(move || {
            let sys = &*peer.sys;
            let (timers, _spacers) = spaced_timers(sys, threads);
            run_threads(threads, ops, &log, |i, barrier| {
                let _entered = (!owners).then(|| sys.enter(i).expect("2 workers"));
                let _owner = owners.then(|| sys.register_worker(i, || {}).expect("2 workers"));
                arm_cancel_loop(sys, &timers[i], ops, barrier)
            })
        })
    })
}

/// One worker's base shared by its owner (registered, biased lock) and a
/// remote thread (entered on the same worker), both arming and cancelling
/// their own timer at once; the row is the time of thread `who` (0: the
/// owner, 1: the remote). The remote's first lock revokes the owner's
/// bias (a `membarrier`); the owner re-biases only after a window of its
/// own critical sections with no remote one between, which doubles on
/// every revocation, so under steady sharing both settle on the spinlock.
fn utimer_shared_base(who: usize, owner: bool, ops: u64) -> Contender<'static> {
    let name = match (owner, who) {
        (true, 0) => "owner",
        (true, _) => "remote",
        (false, _) => "no owner (both entered: the spinlock)",
    };
    Contender::fixed(name, move || {
        let peer = UtimerPeer::with(1, false);
        Ok(move || {
            let sys = &*peer.sys;
            let barrier = Barrier::new(2);
            let (timers, _spacers) = spaced_timers(sys, 2);
            let spans: Vec<Span> = std::thread::scope(|s| {
                let hs: Vec<_> = (0..2)
                    .map(|i| {
                        let (barrier, t) = (&barrier, &timers[i]);
                        s.spawn(move || {
                            let _owner = (owner && i == 0)
                                .then(|| sys.register_worker(0, || {}).expect("worker 0"));
                            let _remote =
                                (!owner || i == 1).then(|| sys.enter(0).expect("worker 0"));
                            arm_cancel_loop(sys, t, ops, barrier)
                        })
                    })
                    .collect();
                hs.into_iter()
                    .map(|h| h.join().expect("bench thread panicked"))
                    .collect()
            });
            Sample {
                elapsed: spans[who].end - spans[who].start,
                ops,
            }
        })
    })
}

fn tokio_mt(threads: usize, ops: u64, log: OverlapLog) -> Contender<'static> {
    Contender::fixed("tokio multi-thread", move || {
        let rt: Runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .map_err(|e| format!("cannot build a tokio runtime: {e}"))?;
        Ok(move || {
            let arrived = Arc::new(AtomicUsize::new(0));
            let spans: Vec<Span> = rt.block_on(async {
                let tasks: Vec<_> = (0..threads)
                    .map(|_| {
                        let arrived = arrived.clone();
                        tokio::spawn(tokio::task::unconstrained(async move {
                            // A spinning barrier with a timeout: a blocking
                            // one could deadlock if both tasks landed on one
                            // worker and it were never stolen from.
                            arrived.fetch_add(1, Ordering::AcqRel);
                            let t0 = Instant::now();
                            while arrived.load(Ordering::Acquire) < threads
                                && t0.elapsed() < Duration::from_millis(50)
                            {
                                std::hint::spin_loop();
                            }
                            let at = tokio::time::Instant::now() + Duration::from_millis(ARM_DELTA);
                            span(|| {
                                for _ in 0..ops {
                                    let s = pin!(tokio::time::sleep_until(black_box(at)));
                                    black_box(poll_once(s));
                                }
                            })
                        }))
                    })
                    .collect();
                let mut spans = Vec::new();
                for t in tasks {
                    spans.push(t.await.expect("bench task panicked"));
                }
                spans
            });
            to_sample(&spans, ops, &log)
        })
    })
}

/// tokio's alternative timer (per-worker wheels), in its helper process:
/// the same tasks as [`tokio_mt`] on a 2-worker runtime, each loop followed
/// by one yield so the deferred work (registering, dropping cancelled
/// entries) is counted; the helper reports the mean time and the overlap.
fn tokio_alt_mt(threads: usize, ops: u64, log: OverlapLog) -> Contender<'static> {
    let args = ["threads", &threads.to_string(), &ops.to_string()];
    tokio_alt::fixed(&args, move |r| {
        if let Some(o) = r.overlap {
            log.borrow_mut().push(o);
        }
    })
}

fn mutex_heap(threads: usize, ops: u64, log: OverlapLog) -> Contender<'static> {
    Contender::fixed("Mutex<BinaryHeap>", move || {
        let q = Mutex::new(HeapTimers::new());
        Ok(move || {
            let q = &q;
            run_threads(threads, ops, &log, |_, barrier| {
                let t = q.lock().unwrap().timer();
                let at = crate::peers::START_TICK + ARM_DELTA;
                barrier.wait();
                let d = span(|| {
                    for _ in 0..ops {
                        q.lock().unwrap().arm(black_box(&t), black_box(at));
                        black_box(q.lock().unwrap().cancel(&t));
                    }
                });
                q.lock().unwrap().release(t);
                d
            })
        })
    })
}

fn baseline(threads: usize, ops: u64, log: OverlapLog) -> Contender<'static> {
    Contender::fixed(BASELINE, move || {
        Ok(move || {
            run_threads(threads, ops, &log, |i, barrier| {
                let mut x = black_box(0x9e37_79b9_7f4a_7c15u64 ^ i as u64);
                barrier.wait();
                let s = span(|| {
                    for _ in 0..ops {
                        for _ in 0..8 {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                        }
                        x = black_box(x);
                    }
                });
                black_box(x);
                s
            })
        })
    })
}

fn timerfd(threads: usize, ops: u64, log: OverlapLog) -> Contender<'static> {
    Contender::fixed("timerfd per thread", move || {
        Ok(move || {
            run_threads(threads, ops, &log, |_, barrier| {
                let fd = TimerFd::new().expect("timerfd_create");
                let after = Duration::from_millis(ARM_DELTA);
                barrier.wait();
                span(|| {
                    for _ in 0..ops {
                        let _ = fd.set(black_box(after));
                        let _ = fd.set(Duration::ZERO);
                    }
                })
            })
        })
    })
}

/// The `threads` group: arm and cancel on one thread against two threads
/// at once.
pub(crate) fn run(r: &mut Runner) {
    // Long enough (>= ~5 ms per thread) that thread wake-up skew at the
    // barrier is small against the overlap; the syscall peer gets a tenth.
    let ops: u64 = r.pick(200_000, 500_000);
    let kernel_ops = ops / 10;
    if !r.wants_group(GROUP, &["1_thread", "2_threads", "shared_base"]) {
        return;
    }
    r.enter_group(
        GROUP,
        DOC,
        &format!(
            "arm+cancel (now+100) on 1 thread vs 2 threads at once, each on its own timer;\n\
             ns per operation per thread ({ops} ops per thread per sample, timerfd {kernel_ops})"
        ),
    );
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 2 {
        r.note(
            GROUP,
            "only one CPU: the 2-thread numbers measure time slicing",
        );
    }
    for (case, threads) in [("1_thread", 1), ("2_threads", 2)] {
        let names = NAMES;
        let logs: Vec<OverlapLog> = names.iter().map(|_| OverlapLog::default()).collect();
        // Bars, and a line per row against the thread count.
        r.case(GROUP, case, Chart::Scaling, Schedule::Interleaved, || {
            vec![
                utimer(threads, ops, logs[0].clone(), false),
                utimer(threads, ops, logs[1].clone(), true),
                tokio_mt(threads, ops, logs[2].clone()),
                tokio_alt_mt(threads, ops, logs[3].clone()),
                mutex_heap(threads, ops, logs[4].clone()),
                timerfd(threads, kernel_ops, logs[5].clone()),
                baseline(threads, ops, logs[6].clone()),
            ]
        });
        if threads > 1 && r.wants(GROUP, case) {
            let parts: Vec<String> = names
                .iter()
                .zip(&logs)
                .filter_map(|(name, log)| {
                    let mut v = log.borrow().clone();
                    if v.is_empty() {
                        return None;
                    }
                    v.sort_by(f64::total_cmp);
                    Some(format!("{name} {:.0}%", 100.0 * v[v.len() / 2]))
                })
                .collect();
            r.note(
                GROUP,
                &format!(
                    "median overlap of the two timed loops: {}",
                    parts.join(", ")
                ),
            );
        }
    }
    scaling_summary(r);
    if r.wants(GROUP, "shared_base") {
        r.note(
            GROUP,
            "shared_base: one worker's base, its owner (biased lock) and a remote thread \
             arming and cancelling at once; each row is one thread's ns/op",
        );
    }
    r.case(
        GROUP,
        "shared_base",
        Chart::Bars,
        Schedule::Interleaved,
        || {
            vec![
                utimer_shared_base(0, true, ops),
                utimer_shared_base(1, true, ops),
                utimer_shared_base(1, false, ops),
            ]
        },
    );
}

/// Prints each row's 2-thread / 1-thread ratio, next to the baseline's.
fn scaling_summary(r: &mut Runner) {
    let median = |case: &str, name: &str| {
        r.records
            .iter()
            .find(|x| x.group == GROUP && x.case == case && x.impl_name == name)
            .and_then(|x| x.ns_per_op)
    };
    let mut parts = Vec::new();
    for name in NAMES {
        if let (Some(one), Some(two)) = (median("1_thread", name), median("2_threads", name)) {
            parts.push(format!("{name} {:.2}x", two / one));
        }
    }
    if !parts.is_empty() {
        let line = format!(
            "2-thread / 1-thread time per op (1.00x = perfect scaling; compare with the baseline): {}",
            parts.join(", ")
        );
        r.note(GROUP, &line);
    }
}
