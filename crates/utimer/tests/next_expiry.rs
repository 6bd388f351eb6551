//! `TimerSystem::next_expiry` answers from a per-worker summary while none
//! of the worker's sources changed (`sync/summary.rs`): each source must
//! invalidate it, the answer must stay exact when asked again and again,
//! and a reader racing arms on other threads must never answer later than
//! a timer that was pending throughout its call.

#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Barrier};
use std::time::Duration;
use utimer::{ClockId, Expiry, HrRestart, Ktime, TimerFlags, TimerSystem};

/// `n` ns of an hrtimer's clock.
fn ns(n: u64) -> Ktime {
    Ktime::from_nanos(n)
}

mod common;

use common::{manual_hr as manual, HR_TICK as TICK};

/// Asks twice: the second answer comes from the summary the first one
/// published, and must be the same.
fn next(sys: &TimerSystem, worker: usize) -> Option<u64> {
    let first = sys.next_expiry(worker).unwrap();
    assert_eq!(
        sys.next_expiry(worker).unwrap(),
        first,
        "cached answer differs"
    );
    first
}

#[test]
fn every_source_invalidates_the_cached_answer() {
    let (sys, clock) = manual(2);
    let _w0 = sys.enter(0).unwrap();
    assert_eq!(next(&sys, 0), None);
    let pinned = sys.timer_with_flags(TimerFlags::PINNED, |_| {});
    let movable = sys.timer(|_| {});
    let deferrable = sys.timer_with_flags(TimerFlags::DEFERRABLE, |_| {});
    let mono = sys
        .hrtimer_on(0, ClockId::Monotonic, |_| HrRestart::NoRestart)
        .unwrap();
    let boot = sys
        .hrtimer_on(0, ClockId::Boottime, |_| HrRestart::NoRestart)
        .unwrap();

    pinned.modify(Expiry::Tick(50)).unwrap();
    assert_eq!(next(&sys, 0), Some(50), "local base");
    movable.modify(Expiry::Tick(40)).unwrap();
    assert_eq!(next(&sys, 0), Some(40), "global base");
    mono.start(ns(30 * TICK)).unwrap();
    assert_eq!(next(&sys, 0), Some(30), "monotonic hrtimer");
    boot.start(ns(20 * TICK + 1)).unwrap();
    assert_eq!(next(&sys, 0), Some(21), "boottime hrtimer, rounded up");
    deferrable.modify(Expiry::Tick(10)).unwrap();
    assert_eq!(next(&sys, 0), Some(21), "deferrable timers are no event");
    assert_eq!(next(&sys, 1), None, "another worker's summary is its own");

    // Each one leaving: the next one, exactly.
    assert!(boot.try_cancel().unwrap());
    assert_eq!(next(&sys, 0), Some(30));
    assert!(mono.try_cancel().unwrap());
    assert_eq!(next(&sys, 0), Some(40));
    assert!(movable.delete());
    assert_eq!(next(&sys, 0), Some(50));
    // A later re-arm of the first, and an expiry run.
    pinned.modify(Expiry::Tick(60)).unwrap();
    assert_eq!(next(&sys, 0), Some(60));
    movable.modify(Expiry::Tick(55)).unwrap();
    assert_eq!(next(&sys, 0), Some(55));
    clock.set(56);
    assert_eq!(
        sys.run_expired(0, 56).unwrap(),
        2,
        "the movable and deferrable ones"
    );
    assert_eq!(next(&sys, 0), Some(60), "fired timers are forgotten");
    clock.set(60);
    assert_eq!(sys.run_expired(0, 60).unwrap(), 1);
    assert_eq!(next(&sys, 0), None);
}

#[test]
fn moves_between_workers_update_both_summaries() {
    let (sys, _clock) = manual(2);
    let t = sys.timer(|_| {});
    let h = sys
        .hrtimer_on(1, ClockId::Monotonic, |_| HrRestart::NoRestart)
        .unwrap();
    {
        let _w0 = sys.enter(0).unwrap();
        t.modify(Expiry::Tick(30)).unwrap();
    }
    h.start(ns(50 * TICK)).unwrap();
    assert_eq!((next(&sys, 0), next(&sys, 1)), (Some(30), Some(50)));
    {
        let _w1 = sys.enter(1).unwrap();
        assert!(t.modify(Expiry::Tick(45)).unwrap());
    }
    assert_eq!((next(&sys, 0), next(&sys, 1)), (None, Some(45)));
    assert_eq!(sys.offline(1).unwrap(), 2);
    assert_eq!((next(&sys, 0), next(&sys, 1)), (Some(45), None));
}

#[test]
fn a_boottime_hrtimer_on_the_real_clock_is_answered_afresh() {
    // Its conversion to monotonic time depends on the clocks' offset, so
    // the summary never caches it; the answer is still right.
    let sys = TimerSystem::builder().workers(1).build_without_threads();
    let h = sys
        .hrtimer_on(0, ClockId::Boottime, |_| HrRestart::NoRestart)
        .unwrap();
    h.start_after(Duration::from_secs(3600)).unwrap();
    let a = sys.next_expiry(0).unwrap().expect("the hrtimer");
    let b = sys.next_expiry(0).unwrap().expect("the hrtimer");
    assert!(a.abs_diff(b) <= 1, "{a} {b}");
    assert!(h.try_cancel().unwrap());
    assert_eq!(next(&sys, 0), None);
}

/// Three threads arm ever earlier timers on worker 0 (a pinned one, a
/// movable one, an hrtimer), a fourth arms and cancels timers there
/// without end, and two readers ask for worker 0's next expiry: no answer
/// may be later than a timer whose arming finished before the call began.
#[test]
fn concurrent_readers_never_answer_later_than_a_pending_timer() {
    const ARMS: u64 = 20_000;
    let (sys, _clock) = manual(2);
    // The earliest tick among the timers whose arming has returned.
    let low = Arc::new(AtomicU64::new(u64::MAX));
    let done = Arc::new(AtomicBool::new(false));
    let start = Arc::new(Barrier::new(6));
    let mut threads = Vec::new();
    for kind in 0..3 {
        let (sys, low, start) = (sys.clone(), low.clone(), start.clone());
        threads.push(std::thread::spawn(move || {
            let _w0 = sys.enter(0).unwrap();
            start.wait();
            let (mut keep, mut keep_hr) = (Vec::new(), Vec::new());
            for i in 0..ARMS {
                let tick = 2_000_000 - 60 * i - 20 * kind;
                let fires = match kind {
                    0 | 1 => {
                        let flags = [TimerFlags::PINNED, TimerFlags::NONE][kind as usize];
                        let t = sys.timer_with_flags(flags, |_| {});
                        t.modify(Expiry::Tick(tick)).unwrap();
                        let at = t.fires_at().unwrap();
                        keep.push(t);
                        at
                    }
                    _ => {
                        let h = sys
                            .hrtimer_on(0, ClockId::Monotonic, |_| HrRestart::NoRestart)
                            .unwrap();
                        h.start(ns(tick * TICK)).unwrap();
                        keep_hr.push(h);
                        tick
                    }
                };
                low.fetch_min(fires, SeqCst);
            }
            (keep, keep_hr)
        }));
    }
    let churn = {
        let (sys, done, start) = (sys.clone(), done.clone(), start.clone());
        std::thread::spawn(move || {
            let _w0 = sys.enter(0).unwrap();
            start.wait();
            let t = sys.timer(|_| {});
            let mut i = 0u64;
            while !done.load(SeqCst) {
                t.modify(Expiry::Tick(10 + i % 50)).unwrap();
                assert!(t.delete());
                i += 1;
            }
        })
    };
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (sys, low, done) = (sys.clone(), low.clone(), done.clone());
            let start = start.clone();
            std::thread::spawn(move || {
                start.wait();
                let mut asked = 0u64;
                while asked == 0 || !done.load(SeqCst) {
                    let bound = low.load(SeqCst);
                    let answer = sys.next_expiry(0).unwrap();
                    if bound != u64::MAX {
                        let answer = answer.expect("a timer is pending");
                        assert!(answer <= bound, "answered {answer}, {bound} pending");
                    }
                    asked += 1;
                }
                asked
            })
        })
        .collect();
    let kept: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    done.store(true, SeqCst);
    churn.join().unwrap();
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    // At rest: exact.
    assert_eq!(next(&sys, 0), Some(low.load(SeqCst)));
    drop(kept);
}
