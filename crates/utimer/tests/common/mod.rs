//! Helpers shared by the integration tests (each test file includes this
//! module with `mod common;` and uses what it needs).

#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use utimer::{Clock, Timer, TimerSystem};

/// A system of `workers` workers on a manual clock at tick 0.
pub(crate) fn manual(workers: usize) -> (Arc<TimerSystem>, Clock) {
    let clock = Clock::manual();
    let sys = TimerSystem::builder()
        .workers(workers)
        .clock(clock.clone())
        .build_without_threads();
    (Arc::new(sys), clock)
}

/// Nanoseconds per tick of [`manual_hr`]'s systems: an hrtimer at
/// `n × HR_TICK` ns is tick `n`.
pub(crate) const HR_TICK: u64 = 100_000;

/// [`manual`] with 100 µs ticks ([`HR_TICK`]), for tests that mix hrtimers
/// and wheel timers.
pub(crate) fn manual_hr(workers: usize) -> (Arc<TimerSystem>, Clock) {
    let clock = Clock::manual();
    let sys = TimerSystem::builder()
        .workers(workers)
        .tick(std::time::Duration::from_nanos(HR_TICK))
        .clock(clock.clone())
        .build_without_threads();
    (Arc::new(sys), clock)
}

/// A callback that counts its calls, and the count.
pub(crate) fn counter() -> (Arc<AtomicU64>, impl Fn(&Timer) + Send + Sync + 'static) {
    let n = Arc::new(AtomicU64::new(0));
    let m = n.clone();
    (n, move |_: &Timer| {
        m.fetch_add(1, Ordering::SeqCst);
    })
}

/// Spins (yielding) until `flag` is set.
pub(crate) fn wait_for(flag: &AtomicBool) {
    while !flag.load(Ordering::SeqCst) {
        std::thread::yield_now();
    }
}

/// Sets the clock to each tick from the current one to `to` and runs every
/// worker's expiry at it, as a ticking system would.
pub(crate) fn tick_to(sys: &TimerSystem, clock: &Clock, to: u64) {
    let mut now = clock.advance(0);
    while now < to {
        now += 1;
        clock.set(now);
        for w in 0..sys.workers() {
            sys.run_expired(w, now).unwrap();
        }
    }
}
