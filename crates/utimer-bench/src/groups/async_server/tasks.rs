//! The tasks workload: [`TASKS`] tasks, each looping on a timeout around
//! the receive of its own mpsc channel (capacity 1), as a server's
//! per-session tasks wait for their next message with a deadline.
//!
//! Each task's timeout is 5-15 s (drawn once per task). One driver task
//! per runtime worker owns an equal share of the senders and loops over
//! them, `try_send`ing one message to each (a full channel is skipped),
//! yielding after every 256. A receive that finds its channel empty is
//! pending at its first poll, so the timeout arms its timer; the message's
//! arrival wakes the task, the receive completes and dropping the timeout
//! cancels the timer. Each task counts its receives and those that waited
//! (its first poll pending), in one word of a shared array that the
//! sampling thread sums before and after the window; timeouts that fire
//! are counted too, and returned when the task ends (its channel closed
//! once the drivers stop).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;
use tokio::sync::mpsc;

use super::{row, NoTimers, Runs, Summary, TimedOut, Timers, TokioTime, UtimerAsync};
use super::{Variant, Window, FIRED_CASE};
use crate::groups::cases::human;
use crate::XorShift;

pub(crate) const TASKS: usize = 100_000;

/// Sends between a driver's yields.
const DRIVER_BATCH: usize = 256;

pub(crate) fn case(threads: usize) -> String {
    format!("tasks_{}_{threads}_threads", human(TASKS))
}

/// One sample of one variant.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sample {
    /// Receives per second of the window.
    pub(crate) ops_per_s: f64,
    /// The share of them that waited (armed the timeout's timer).
    pub(crate) waited: f64,
    /// Timeouts that fired during the whole sample.
    pub(crate) fired: u64,
}

/// `(receives, receives that waited)` packed in one word.
fn pack(ops: u64, waited: u64) -> u64 {
    (waited << 32) | (ops & 0xffff_ffff)
}

fn unpack(x: u64) -> (u64, u64) {
    (x & 0xffff_ffff, x >> 32)
}

async fn task<L: Timers>(
    mut rx: mpsc::Receiver<u32>,
    d: Duration,
    counts: Arc<[AtomicU64]>,
    k: usize,
    started: Arc<AtomicUsize>,
) -> u64 {
    started.fetch_add(1, Relaxed);
    drop(started);
    let (mut ops, mut waited, mut fired) = (0, 0, 0);
    loop {
        let mut first = None;
        let recv = std::future::poll_fn(|cx| {
            let p = rx.poll_recv(cx);
            first.get_or_insert(p.is_pending());
            p
        });
        match L::timeout(d, recv).await {
            Ok(Some(_)) => {
                ops += 1;
                waited += u64::from(first == Some(true));
                counts[k].store(pack(ops, waited), Relaxed);
            }
            Ok(None) => return fired,
            Err(TimedOut) => fired += 1,
        }
    }
}

async fn driver(senders: Vec<mpsc::Sender<u32>>, stop: Arc<AtomicBool>) {
    loop {
        for batch in senders.chunks(DRIVER_BATCH) {
            if stop.load(Relaxed) {
                return;
            }
            for tx in batch {
                let _ = tx.try_send(0);
            }
            tokio::task::yield_now().await;
        }
    }
}

/// One sample: the tasks of `L` and `threads` drivers on `rt`.
fn sample<L: Timers>(rt: &Runtime, n: usize, threads: usize, w: Window) -> Result<Sample, String> {
    let counts: Arc<[AtomicU64]> = (0..n).map(|_| AtomicU64::new(0)).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let started = Arc::new(AtomicUsize::new(0));
    let mut rng = XorShift::new(0x5e55_1075);
    let (mut senders, mut handles) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for k in 0..n {
        let (tx, rx) = mpsc::channel(1);
        let d = Duration::from_millis(5_000 + rng.below(10_001));
        let t = task::<L>(rx, d, counts.clone(), k, started.clone());
        handles.push(rt.spawn(t));
        senders.push(tx);
    }
    // Every task waits on its first receive before the drivers start.
    let t = Instant::now();
    while started.load(Relaxed) < n {
        if t.elapsed() > Duration::from_secs(10) {
            return Err("the tasks did not start within 10 s".to_string());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut senders = senders.into_iter();
    let drivers: Vec<_> = (0..threads)
        .map(|_| {
            let share = senders.by_ref().take(n.div_ceil(threads)).collect();
            rt.spawn(driver(share, stop.clone()))
        })
        .collect();
    let total = || {
        counts.iter().fold((0, 0), |(o, w), c| {
            let (ops, waited) = unpack(c.load(Relaxed));
            (o + ops, w + waited)
        })
    };
    std::thread::sleep(w.warm);
    let ((o0, w0), t0) = (total(), Instant::now());
    std::thread::sleep(w.run);
    let ((o1, w1), t1) = (total(), Instant::now());
    stop.store(true, Relaxed);
    rt.block_on(async {
        for d in drivers {
            d.await.map_err(|e| format!("a driver failed: {e}"))?;
        }
        let mut fired = 0;
        for h in handles {
            fired += h.await.map_err(|e| format!("a task failed: {e}"))?;
        }
        let ops = o1.saturating_sub(o0);
        Ok(Sample {
            ops_per_s: ops as f64 / (t1 - t0).as_secs_f64(),
            waited: w1.saturating_sub(w0) as f64 / ops.max(1) as f64,
            fired,
        })
    })
}

/// `reps` samples of each variant on a runtime of `threads` workers.
pub(crate) fn measure(threads: usize, reps: usize, w: Window) -> Runs<Sample> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_time()
        .build()
        .map_err(|e| format!("cannot build a tokio runtime: {e}"));
    Runs::measure(reps, |v| {
        let rt = rt.as_ref().map_err(Clone::clone)?;
        match v {
            Variant::Utimer => sample::<UtimerAsync>(rt, TASKS, threads, w),
            Variant::Tokio => sample::<TokioTime>(rt, TASKS, threads, w),
            Variant::None => sample::<NoTimers>(rt, TASKS, threads, w),
        }
    })
}

/// The receive timeouts that fired, over all samples, of the two
/// libraries.
pub(crate) fn summary_rows(label: &str, mode: &str, runs: &Runs<Sample>, out: &mut Summary) {
    for (i, v) in Variant::ALL[..2].iter().enumerate() {
        let name = format!("{label}, {}", v.name());
        let fired: f64 = runs.of(i, |s| s.fired as f64).iter().sum();
        let err = runs.errors[i].as_deref();
        out.fired
            .push(row(FIRED_CASE, &name, mode, &[fired], "fired", err));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_both_counts() {
        assert_eq!(unpack(pack(7, 5)), (7, 5));
        assert_eq!(unpack(pack(0, 0)), (0, 0));
    }

    #[test]
    fn every_variant_receives_and_none_times_out() {
        let w = Window {
            warm: Duration::from_millis(5),
            run: Duration::from_millis(20),
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_time()
            .build()
            .unwrap();
        for v in Variant::ALL {
            let s = match v {
                Variant::Utimer => sample::<UtimerAsync>(&rt, 1_000, 2, w),
                Variant::Tokio => sample::<TokioTime>(&rt, 1_000, 2, w),
                Variant::None => sample::<NoTimers>(&rt, 1_000, 2, w),
            }
            .unwrap();
            assert!(
                s.ops_per_s > 0.0 && s.waited > 0.5 && s.fired == 0,
                "{v:?}: {s:?}"
            );
        }
    }
}
