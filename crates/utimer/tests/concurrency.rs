//! Several threads arming, modifying and deleting shared timers while
//! another expires them: no timer is lost or run twice, and the counters
//! balance (armed = fired + deleted + pending).

#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use utimer::{Clock, Expiry, Timer, TimerFlags, TimerSystem};

const TIMERS: usize = 64;
const WORKERS: usize = 4;
const OPS_PER_THREAD: u64 = 100_000;
/// After their `OPS_PER_THREAD`, the mutators go on (up to this many times
/// as long) until the expirer has run this many rounds since they began
/// and some callback has run: on a loaded machine the expirer may get
/// little CPU while they work, and then nothing fires in between (it
/// happened 3 times in 12 under load).
const MIN_EXPIRY_ROUNDS: u64 = 400;
const MAX_OPS_FACTOR: u64 = 50;

fn xorshift(s: &mut u64) -> u64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    *s
}

#[test]
fn shared_timers_under_concurrent_arm_modify_delete_and_expiry() {
    shared_timers(false);
}

/// The same with threads 0 and 1 registered as their workers: they own
/// those bases, whose locks are biased towards them (no atomic
/// read-modify-write), while the expirer and thread 2 take them from
/// outside, revoking the bias again and again.
#[test]
fn shared_timers_with_owner_threads_on_biased_locks() {
    shared_timers(true);
}

fn shared_timers(owners: bool) {
    let clock = Clock::manual();
    let sys = Arc::new(
        TimerSystem::builder()
            .workers(WORKERS)
            .clock(clock.clone())
            .stats(true)
            .build_without_threads(),
    );
    let rearm = Arc::new(AtomicBool::new(true));
    let counts: Arc<Vec<AtomicU64>> = Arc::new((0..TIMERS).map(|_| AtomicU64::new(0)).collect());
    let timers: Arc<Vec<Timer>> = Arc::new(
        (0..TIMERS)
            .map(|i| {
                let (counts, rearm) = (counts.clone(), rearm.clone());
                let flags = if i % 4 == 0 {
                    TimerFlags::PINNED
                } else {
                    TimerFlags::NONE
                };
                sys.timer_with_flags(flags, move |t| {
                    counts[i].fetch_add(1, Ordering::Relaxed);
                    // Some timers re-arm themselves from the callback.
                    if i % 5 == 0 && rearm.load(Ordering::Relaxed) {
                        let _ = t.modify(Expiry::Tick(t.expires() + 7));
                    }
                })
            })
            .collect(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let rounds = Arc::new(AtomicU64::new(0));

    let expirer = {
        let (sys, clock, stop, rounds) = (sys.clone(), clock.clone(), stop.clone(), rounds.clone());
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let now = clock.advance(1);
                for w in 0..WORKERS {
                    sys.run_expired(w, now).unwrap();
                }
                rounds.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let mutators: Vec<_> = (0..3u64)
        .map(|id| {
            let (sys, timers, rounds) = (sys.clone(), timers.clone(), rounds.clone());
            let counts = counts.clone();
            thread::spawn(move || {
                // Thread 0 and 1 are workers (entered, or registered: the
                // owners); thread 2 arms from outside.
                let _g = (id < 2 && !owners).then(|| sys.enter(id as usize).unwrap());
                let _w =
                    (id < 2 && owners).then(|| sys.register_worker(id as usize, || {}).unwrap());
                let mut seed = 0x9E37_79B9_7F4A_7C15 ^ (id + 1);
                let start = rounds.load(Ordering::Relaxed);
                let overlapped = || {
                    rounds.load(Ordering::Relaxed) - start >= MIN_EXPIRY_ROUNDS
                        && counts.iter().any(|c| c.load(Ordering::Relaxed) > 0)
                };
                for i in 0..OPS_PER_THREAD * MAX_OPS_FACTOR {
                    if i >= OPS_PER_THREAD && i % 1024 == 0 && overlapped() {
                        break;
                    }
                    let r = xorshift(&mut seed);
                    let t = &timers[(r % TIMERS as u64) as usize];
                    let e = sys.now() + (r >> 8) % 300;
                    match (r >> 20) % 6 {
                        0 | 1 => drop(t.modify(Expiry::Tick(e))),
                        2 => drop(t.modify_pending(Expiry::Tick(e))),
                        3 => drop(t.reduce(Expiry::Tick(e))),
                        4 => drop(t.add(Expiry::Tick(e))),
                        _ => drop(t.delete()),
                    }
                }
            })
        })
        .collect();
    for m in mutators {
        m.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    expirer.join().unwrap();

    // Stop the self-re-arming timers, then check the books.
    rearm.store(false, Ordering::Relaxed);
    for t in timers.iter() {
        t.delete();
    }
    let s = sys.metrics().totals();
    let callbacks: u64 = counts.iter().map(|c| c.load(Ordering::Relaxed)).sum();
    assert_eq!(s.fired, callbacks);
    assert_eq!(s.pending, 0);
    assert_eq!(s.armed, s.fired + s.deleted + s.pending, "{s:?}");
    assert!(s.fired > 0 && s.deleted > 0 && s.migrated > 0, "{s:?}");

    // No timer was lost: every one can still be armed and fires exactly once.
    let before: Vec<u64> = counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
    let now = sys.now();
    for t in timers.iter() {
        t.modify(Expiry::Tick(now + 3)).unwrap();
    }
    let later = clock.advance(10);
    for w in 0..WORKERS {
        sys.run_expired(w, later).unwrap();
    }
    for t in timers.iter() {
        t.delete();
    }
    for (i, c) in counts.iter().enumerate() {
        assert_eq!(c.load(Ordering::Relaxed), before[i] + 1, "timer {i}");
    }
}

#[test]
fn two_workers_each_on_their_own_base() {
    let clock = Clock::manual();
    let sys = Arc::new(
        TimerSystem::builder()
            .workers(2)
            .clock(clock.clone())
            .build_without_threads(),
    );
    let handles: Vec<_> = (0..2)
        .map(|w| {
            let sys = sys.clone();
            thread::spawn(move || {
                let _g = sys.enter(w).unwrap();
                let t = sys.timer(|_| {});
                for i in 0..50_000 {
                    t.modify(Expiry::Tick(100 + i % 500)).unwrap();
                    assert!(t.delete());
                }
                let s = sys
                    .metrics()
                    .base_stats(w, utimer::BaseKind::Global)
                    .unwrap();
                // Everything happened on this worker's own base.
                assert_eq!(s.armed, 50_000);
                assert_eq!(s.migrated, 0);
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}
