//! Criterion benches for the main cases of `utimer bench`.
//!
//! `utimer bench` is the primary tool (interleaved repetitions, peers side
//! by side, the kernel patches replayed, memory, threads); these benches
//! cover the same core cases with Criterion's statistics, for regression
//! tracking with `cargo bench -p utimer-cli` and its saved baselines. They
//! use the very same peer implementations (`utimer_bench::peers`), so a row
//! here and a row there measure identical code.
//!
//! Groups: `arm_cancel` (empty queue), `arm_cancel_100k` (100K pending),
//! `rearm_same_bucket`, `rearm_new_bucket`, `next_expiry_100k`, and
//! `expiry_10k` (per-timer cost of firing 10K due timers; virtual-clock
//! peers only, since tokio would have to sleep in real time per iteration).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};

use utimer_bench::peers::btree::BTreePeer;
use utimer_bench::peers::delay_queue::DelayQueuePeer;
use utimer_bench::peers::heap::HeapPeer;
use utimer_bench::peers::timerfd::TimerFdPeer;
use utimer_bench::peers::tokio_sleep::TokioSleepPeer;
use utimer_bench::peers::utimer::UtimerPeer;
use utimer_bench::peers::wheel::WheelPeer;
use utimer_bench::peers::TimerPeer;

/// Background fill: now + 1000 + uniform(0..10M) ticks, deterministic.
fn fill<P: TimerPeer>(p: &mut P, n: usize) -> Vec<P::Handle> {
    let mut x: u64 = 0x5eed_0001;
    let now = p.now();
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut h = p.handle().expect("handle");
            p.arm(&mut h, now + 1_000 + x % 10_000_000);
            h
        })
        .collect()
}

fn arm_cancel<P: TimerPeer>(g: &mut BenchmarkGroup<'_, WallTime>, pending: usize) {
    let Ok(mut p) = P::new() else { return };
    p.with_ctx(|p| {
        let _background = fill(p, pending);
        let mut h = p.handle().expect("handle");
        let at = p.now() + 100;
        g.bench_function(P::NAME, |b| {
            b.iter(|| p.arm_cancel(black_box(&mut h), black_box(at)))
        });
    });
}

fn rearm<P: TimerPeer>(g: &mut BenchmarkGroup<'_, WallTime>, jump: u64) {
    let Ok(mut p) = P::new() else { return };
    p.with_ctx(|p| {
        let mut h = p.handle().expect("handle");
        let e = ((p.now() + 3_000) & !63) + 10;
        p.arm(&mut h, e);
        let mut flip = false;
        g.bench_function(P::NAME, |b| {
            b.iter(|| {
                flip = !flip;
                let x = if flip { e + jump } else { e };
                p.rearm(black_box(&mut h), black_box(x));
            })
        });
    });
}

fn next_expiry<P: TimerPeer>(g: &mut BenchmarkGroup<'_, WallTime>, pending: usize) {
    let Ok(mut p) = P::new() else { return };
    p.with_ctx(|p| {
        if p.next_expiry().is_err() {
            return;
        }
        let _background = fill(p, pending);
        g.bench_function(P::NAME, |b| b.iter(|| black_box(p.next_expiry())));
    });
}

/// Per-timer cost of firing `n` due timers (arming untimed).
fn expiry<P: TimerPeer>(g: &mut BenchmarkGroup<'_, WallTime>, n: usize) {
    let Ok(mut p) = P::new() else { return };
    p.with_ctx(|p| {
        let mut hs: Vec<P::Handle> = (0..n).map(|_| p.handle().expect("handle")).collect();
        g.bench_function(P::NAME, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let now = p.now();
                    for (i, h) in hs.iter_mut().enumerate() {
                        p.arm(h, now + 1 + (i as u64 % 64));
                    }
                    let until = now + 80;
                    p.wait_until(until);
                    let t0 = Instant::now();
                    black_box(p.fire(until).expect("can fire"));
                    total += t0.elapsed();
                }
                total
            })
        });
    });
}

fn group<'a>(c: &'a mut Criterion, name: &str) -> BenchmarkGroup<'a, WallTime> {
    let mut g = c.benchmark_group(name);
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    g
}

fn benches(c: &mut Criterion) {
    let mut g = group(c, "arm_cancel");
    arm_cancel::<UtimerPeer>(&mut g, 0);
    arm_cancel::<WheelPeer>(&mut g, 0);
    arm_cancel::<TokioSleepPeer>(&mut g, 0);
    arm_cancel::<DelayQueuePeer>(&mut g, 0);
    arm_cancel::<HeapPeer>(&mut g, 0);
    arm_cancel::<BTreePeer>(&mut g, 0);
    arm_cancel::<TimerFdPeer>(&mut g, 0);
    g.finish();

    let mut g = group(c, "arm_cancel_100k");
    arm_cancel::<UtimerPeer>(&mut g, 100_000);
    arm_cancel::<WheelPeer>(&mut g, 100_000);
    arm_cancel::<TokioSleepPeer>(&mut g, 100_000);
    arm_cancel::<DelayQueuePeer>(&mut g, 100_000);
    arm_cancel::<HeapPeer>(&mut g, 100_000);
    arm_cancel::<BTreePeer>(&mut g, 100_000);
    g.finish();

    for (name, jump) in [("rearm_same_bucket", 1), ("rearm_new_bucket", 4_096)] {
        let mut g = group(c, name);
        rearm::<UtimerPeer>(&mut g, jump);
        rearm::<WheelPeer>(&mut g, jump);
        rearm::<TokioSleepPeer>(&mut g, jump);
        rearm::<DelayQueuePeer>(&mut g, jump);
        rearm::<HeapPeer>(&mut g, jump);
        rearm::<BTreePeer>(&mut g, jump);
        rearm::<TimerFdPeer>(&mut g, jump);
        g.finish();
    }

    let mut g = group(c, "next_expiry_100k");
    next_expiry::<UtimerPeer>(&mut g, 100_000);
    next_expiry::<WheelPeer>(&mut g, 100_000);
    next_expiry::<DelayQueuePeer>(&mut g, 100_000);
    next_expiry::<HeapPeer>(&mut g, 100_000);
    next_expiry::<BTreePeer>(&mut g, 100_000);
    g.finish();

    let mut g = group(c, "expiry_10k");
    g.throughput(Throughput::Elements(10_000));
    expiry::<UtimerPeer>(&mut g, 10_000);
    expiry::<WheelPeer>(&mut g, 10_000);
    expiry::<HeapPeer>(&mut g, 10_000);
    expiry::<BTreePeer>(&mut g, 10_000);
    g.finish();
}

criterion_group!(timers, benches);
criterion_main!(timers);
