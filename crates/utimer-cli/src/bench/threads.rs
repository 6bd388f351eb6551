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
//!   the kernel's per-CPU timer bases.
//! * **tokio multi-thread**: a 2-worker runtime; each thread is a task
//!   arming and dropping `Sleep`s. (tokio's stable time driver has one
//!   wheel behind one mutex for the whole runtime.) The loop runs inside
//!   `tokio::task::unconstrained`, otherwise the coop budget would turn
//!   every poll after the 128th into a no-op.
//! * **Mutex<BinaryHeap>**: one shared lazy-deletion heap behind a
//!   `std::sync::Mutex`, locked once to arm and once to cancel: what a
//!   program gets by sharing its single-threaded queue.
//! * **timerfd per thread**: each thread its own fd; the kernel's timer
//!   bases are per CPU, so this scales like utimer, at syscall cost.
//!
//! Threads are spawned per sample (outside the timed part), so the OS
//! places them afresh each time; nothing is pinned.

use std::hint::black_box;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;

use super::peers::heap::HeapTimers;
use super::peers::timerfd::TimerFd;
use super::peers::tokio_sleep::poll_once;
use super::peers::utimer::{empty_timer, UtimerPeer};
use super::{time, Contender, Runner, Sample, Schedule};

const GROUP: &str = "threads";
const ARM_DELTA: u64 = 100;

/// Runs `body(i, barrier)` on `threads` scoped threads; each returns the
/// duration of its own `ops` operations.
fn run_threads<F>(threads: usize, ops: u64, body: F) -> Sample
where
    F: Fn(usize, &Barrier) -> Duration + Sync,
{
    let barrier = Barrier::new(threads);
    let total: Duration = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (b, body) = (&barrier, &body);
                s.spawn(move || body(i, b))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("bench thread panicked"))
            .sum()
    });
    Sample {
        elapsed: total / threads as u32,
        ops,
    }
}

fn utimer(threads: usize, ops: u64) -> Contender<'static> {
    Contender::fixed("utimer", move || {
        let peer = UtimerPeer::with(2, utimer::ModifyCheck::SameBucket, false);
        Ok(move || {
            let sys = &*peer.sys;
            run_threads(threads, ops, |i, barrier| {
                let _worker = sys.enter(i).expect("2 workers");
                let t = empty_timer(sys);
                let at = sys.now() + ARM_DELTA;
                barrier.wait();
                time(|| {
                    for _ in 0..ops {
                        let _ = black_box(t.add(black_box(at)));
                        black_box(t.delete());
                    }
                })
            })
        })
    })
}

fn tokio_mt(threads: usize, ops: u64) -> Contender<'static> {
    Contender::fixed("tokio multi-thread", move || {
        let rt: Runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .map_err(|e| format!("cannot build a tokio runtime: {e}"))?;
        Ok(move || {
            let arrived = Arc::new(AtomicUsize::new(0));
            let total: Duration = rt.block_on(async {
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
                            time(|| {
                                for _ in 0..ops {
                                    let s = pin!(tokio::time::sleep_until(black_box(at)));
                                    black_box(poll_once(s));
                                }
                            })
                        }))
                    })
                    .collect();
                let mut sum = Duration::ZERO;
                for t in tasks {
                    sum += t.await.expect("bench task panicked");
                }
                sum
            });
            Sample {
                elapsed: total / threads as u32,
                ops,
            }
        })
    })
}

fn mutex_heap(threads: usize, ops: u64) -> Contender<'static> {
    Contender::fixed("Mutex<BinaryHeap>", move || {
        let q = Mutex::new(HeapTimers::new());
        Ok(move || {
            let q = &q;
            run_threads(threads, ops, |_, barrier| {
                let t = q.lock().unwrap().timer();
                let at = super::peers::START_TICK + ARM_DELTA;
                barrier.wait();
                let d = time(|| {
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

fn timerfd(threads: usize, ops: u64) -> Contender<'static> {
    Contender::fixed("timerfd per thread", move || {
        Ok(move || {
            run_threads(threads, ops, |_, barrier| {
                let fd = TimerFd::new().expect("timerfd_create");
                let after = Duration::from_millis(ARM_DELTA);
                barrier.wait();
                time(|| {
                    for _ in 0..ops {
                        let _ = fd.set(black_box(after));
                        let _ = fd.set(Duration::ZERO);
                    }
                })
            })
        })
    })
}

pub fn run_all(r: &mut Runner) {
    // Long enough (>= ~5 ms per thread) that thread wake-up skew at the
    // barrier is small against the overlap; the syscall peer gets a tenth.
    let ops: u64 = r.pick(200_000, 500_000);
    let kernel_ops = ops / 10;
    if !r.wants_group(GROUP, &["1_thread", "2_threads"]) {
        return;
    }
    r.enter_group(
        GROUP,
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
        r.case(GROUP, case, Schedule::Interleaved, || {
            vec![
                utimer(threads, ops),
                tokio_mt(threads, ops),
                mutex_heap(threads, ops),
                timerfd(threads, kernel_ops),
            ]
        });
    }
}
