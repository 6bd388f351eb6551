//! Arm + cancel of one timer in a loop, on the calling thread's worker:
//! `owner` registers the thread as the worker (its base lock is biased
//! towards it: no atomic read-modify-write), `enter` only enters it (the
//! spinlock). For profiling the hot path by hand, e.g. instruction counts:
//!
//! ```text
//! cargo build --release -p utimer --example arm_cancel
//! valgrind --tool=callgrind target/release/examples/arm_cancel enter 200000
//! target/release/examples/arm_cancel owner 20000000
//! target/release/examples/arm_cancel owner 20000000 rearm
//! ```
//!
//! With `rearm` the loop instead re-arms one pending timer alternately
//! between two buckets (level 2 and level 3), as `utimer bench`'s
//! `rearm/new_bucket` case does; with `rearm3` round three buckets
//! (`rearm/three_buckets`); with `rearm-same`, within its bucket
//! (`rearm/same_bucket`: the lock-free check); with `rearm-duration`, by a `Duration`
//! from now (set `UTIMER_CLOCK=monotonic` to include the clock reads).
//!
//! (Under valgrind `membarrier` is not available, so both modes take the
//! spinlock there.) `utimer bench --filter arm_cancel` has the same case
//! beside its peers.

use std::hint::black_box;
use utimer::{Clock, Expiry, Timer, TimerSystem};

fn main() {
    // UTIMER_CLOCK=monotonic: the default clock instead of a manual one.
    let clock = match std::env::var("UTIMER_CLOCK").as_deref() {
        Ok("monotonic") => Clock::monotonic(),
        _ => Clock::manual(),
    };
    clock.set(1000);
    let sys = TimerSystem::builder()
        .workers(1)
        .clock(clock.clone())
        .build_without_threads();
    let owner = std::env::args().nth(1).as_deref() == Some("owner");
    let n: u64 = std::env::args()
        .nth(2)
        .map_or(20_000_000, |s| s.parse().expect("a number of iterations"));
    let _worker = owner.then(|| sys.register_worker(0, || {}).expect("worker 0"));
    let _entered = (!owner).then(|| sys.enter(0).expect("worker 0"));
    let case = std::env::args().nth(3).unwrap_or_default();
    let t = sys.timer(|_| {});
    let label = match case.as_str() {
        "rearm" => "re-arm to a new bucket",
        "rearm3" => "re-arm round three buckets",
        "rearm-same" => "re-arm within its bucket",
        // The way most code re-arms a timeout: a `Duration` from now.
        "rearm-duration" => "re-arm by Duration (100 ms / 5 s)",
        _ => "arm+cancel",
    };
    let start = std::time::Instant::now();
    match case.as_str() {
        "rearm" => rearm_loop(&t, ((sys.now() + 3000) & !63) + 10, n),
        "rearm3" => rearm_round_loop(&t, ((sys.now() + 3000) & !63) + 10, n),
        "rearm-same" => rearm_same_loop(&t, ((sys.now() + 3000) & !63) + 10, n),
        "rearm-duration" => rearm_duration_loop(&t, n),
        _ => arm_cancel_loop(&t, sys.now() + 100, n),
    }
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    println!(
        "{} {label}: {ns:.2} ns",
        if owner { "owner" } else { "entered" }
    );
}

/// The loops are functions of their own, so that what the compiler inlines
/// into them does not depend on the code around them.
#[inline(never)]
fn arm_cancel_loop(t: &Timer, at: u64, n: u64) {
    for _ in 0..n {
        t.add(Expiry::Tick(black_box(at))).expect("a live system");
        black_box(t.delete());
    }
}

#[inline(never)]
fn rearm_loop(t: &Timer, e: u64, n: u64) {
    t.add(Expiry::Tick(e)).expect("a live system");
    for i in 0..n {
        let x = if i % 2 == 0 { e + 4096 } else { e };
        black_box(t.modify(Expiry::Tick(black_box(x))).expect("a live system"));
    }
}

#[inline(never)]
fn rearm_same_loop(t: &Timer, e: u64, n: u64) {
    t.add(Expiry::Tick(e)).expect("a live system");
    for i in 0..n {
        let x = if i % 2 == 0 { e + 1 } else { e };
        black_box(t.modify(Expiry::Tick(black_box(x))).expect("a live system"));
    }
}

#[inline(never)]
fn rearm_round_loop(t: &Timer, e: u64, n: u64) {
    t.add(Expiry::Tick(e)).expect("a live system");
    let mut k = 0;
    for _ in 0..n {
        k = if k == 2 { 0 } else { k + 1 };
        black_box(
            t.modify(Expiry::Tick(black_box(e + k * 4096)))
                .expect("a live system"),
        );
    }
}

#[inline(never)]
fn rearm_duration_loop(t: &Timer, n: u64) {
    use std::time::Duration;
    for i in 0..n {
        let d = if i % 2 == 0 {
            Duration::from_secs(5)
        } else {
            Duration::from_millis(100)
        };
        black_box(t.modify(black_box(d)).expect("a live system"));
    }
}
