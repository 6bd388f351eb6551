//! Regression tests for defects found by trying utimer as a new user would
//! (the runtime's two are in `runtime.rs`).

#![cfg(not(loom))]

use std::sync::atomic::Ordering::SeqCst;
use utimer::wheel::MAX_TICK;
use utimer::{Clock, Expiry, TimerSystem};

mod common;
use common::{counter, manual};

/// `reduce` from a worker whose expiry never ran (its base clock far behind)
/// used to move the timer to that worker's base, where it landed on a
/// coarse level and fired later than before.
#[test]
fn reduce_never_moves_a_timer_later() {
    let (sys, clock) = manual(2);
    clock.set(99_000);
    sys.run_expired(0, 99_000).unwrap();
    let (n, f) = counter();
    let t = sys.timer(f);
    {
        let _w0 = sys.enter(0).unwrap();
        t.modify(Expiry::Tick(100_500)).unwrap();
    }
    let before = t.fires_at().unwrap();
    assert_eq!(before, 100_544, "level 2 from clock 99,001");
    {
        let _w1 = sys.enter(1).unwrap();
        assert!(t.reduce(Expiry::Tick(100_001)).unwrap());
    }
    let after = t.fires_at().unwrap();
    assert!(
        after <= before,
        "reduce moved the timer later: {after} > {before}"
    );
    assert!((100_001..100_001 + 64).contains(&after), "{after}");
    // It fires in its window, on the worker it stayed on.
    for now in 100_000..=after {
        clock.set(now);
        sys.run_expired(0, now).unwrap();
        sys.run_expired(1, now).unwrap();
    }
    assert_eq!(n.load(SeqCst), 1);
}

/// Random reduces, from every worker and none, never make a pending timer's
/// firing tick later.
#[test]
fn reduce_is_monotonic_from_anywhere() {
    let (sys, clock) = manual(3);
    let t = sys.timer(|_| {});
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut rand = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for round in 0..2_000u64 {
        let now = round * 37;
        clock.set(now);
        let w = (rand() % 4) as usize;
        if w < 3 && rand() % 3 == 0 {
            sys.run_expired(w, now).unwrap();
        }
        if !t.is_pending() {
            t.modify(Expiry::Tick(now + rand() % 100_000)).unwrap();
        }
        let before = t.fires_at().unwrap();
        let e = now + rand() % 100_000;
        let _g = (w < 3).then(|| sys.enter(w).unwrap());
        assert!(t.reduce(Expiry::Tick(e)).unwrap());
        let after = t.fires_at().unwrap();
        assert!(
            after <= before,
            "round {round}: {before} -> {after} (reduce to {e})"
        );
    }
}

/// A timer armed on a worker whose expiry has never run, with the clock far
/// ahead of that worker's base, is placed relative to the present: a
/// 50-tick timer is exact to the tick (it used to fire 15,758 ticks late).
#[test]
fn a_stale_base_clock_does_not_make_timers_late() {
    let (sys, clock) = manual(2);
    clock.set(1_000_000);
    let (n, f) = counter();
    let t = sys.timer(f);
    let _w1 = sys.enter(1).unwrap();
    t.modify(Expiry::Tick(1_000_050)).unwrap();
    assert_eq!(t.fires_at(), Some(1_000_050));
    assert_eq!(sys.run_expired(1, 1_000_049).unwrap(), 0, "never early");
    assert_eq!(sys.run_expired(1, 1_000_050).unwrap(), 1);
    assert_eq!(n.load(SeqCst), 1);

    // The same for a re-arm that the lock-free check would have matched
    // against the stale clock: pending at 600 (level 2, fires at 640) with
    // the base clock at 0, then the clock jumps to 580 and the timer is
    // re-armed 50 ticks ahead. From the present that is level 0: exact.
    let (sys, clock) = manual(1);
    let t = sys.timer(|_| {});
    t.modify(Expiry::Tick(600)).unwrap();
    assert_eq!(t.fires_at(), Some(640));
    clock.set(580);
    assert!(t.modify(Expiry::Tick(630)).unwrap());
    assert_eq!(t.fires_at(), Some(630));
    // And a longer one lands on the level its distance from now needs:
    // 1000 ticks from 580 is level 2 (64-tick granules), never later.
    assert!(t.modify(Expiry::Tick(1_580)).unwrap());
    let at = t.fires_at().unwrap();
    assert!((1_580..1_580 + 64).contains(&at), "{at}");
}

/// A timer armed just before the last tick used to be placed in a bucket
/// after it, which the clock never reaches.
#[test]
fn a_timer_armed_just_before_the_last_tick_fires() {
    let (sys, clock) = manual(1);
    clock.set(MAX_TICK - 100);
    sys.run_expired(0, MAX_TICK - 100).unwrap();
    let (n, f) = counter();
    let t = sys.timer(f);
    t.modify(Expiry::Tick(MAX_TICK - 2)).unwrap();
    assert!(t.fires_at().unwrap() <= MAX_TICK);
    let (m, g) = counter();
    let u = sys.timer(g);
    u.modify(Expiry::Tick(u64::MAX)).unwrap();
    clock.set(u64::MAX);
    sys.run_expired(0, sys.now()).unwrap();
    assert_eq!((n.load(SeqCst), m.load(SeqCst)), (1, 1));
}

/// `Clock::advance` used to wrap: time went backwards.
#[test]
fn the_manual_clock_saturates() {
    let clock = Clock::manual();
    let sys = TimerSystem::builder()
        .clock(clock.clone())
        .build_without_threads();
    clock.set(10);
    assert_eq!(clock.advance(u64::MAX), u64::MAX);
    assert_eq!(sys.now(), u64::MAX);
    assert_eq!(clock.advance(1), u64::MAX);
    clock.set(5);
    assert_eq!(sys.now(), u64::MAX, "never backwards");
}

/// Workers of two systems registered on one thread and unregistered out
/// of order leave the thread bound to a system that is then dropped; a
/// new system (possibly at the same address) must not mistake the thread
/// for one of its workers: arming there works and lands on a real worker.
#[test]
fn a_stale_thread_binding_never_names_a_new_system() {
    for _ in 0..20 {
        let a = utimer::TimerSystem::without_threads(2);
        let wa = a.register_worker(1, || {}).unwrap();
        let b = utimer::TimerSystem::without_threads(1);
        let wb = b.register_worker(0, || {}).unwrap();
        drop(wa); // out of order: restores "none"
        drop(wb); // restores a's binding, soon stale
        drop(a);
        drop(b);
        let c = utimer::TimerSystem::without_threads(1);
        assert_eq!(c.current_worker(), 0);
        let t = c.timer(|_| {});
        t.modify(Expiry::Tick(5)).unwrap();
        assert!(t.delete());
    }
}

/// Found by the soak (`examples/soak.rs`): a hot-unplug re-queued each
/// moved timer at its expiry of record, not at the tick its bucket fires.
/// A lock-free same-bucket re-arm writes nothing (it relies on the bucket
/// firing at the same tick), so after the move the timer fired at the old
/// expiry, before the one the re-arm asked for: armed for 418 (level 1,
/// fires at 424), `modify(424)` answered "pending", and the moved timer
/// fired at 418.
#[test]
fn a_moved_timer_keeps_a_same_bucket_rearm() {
    let (sys, clock) = common::manual(2);
    clock.set(300);
    sys.run_expired(0, 300).unwrap();
    let (n, f) = counter();
    let t = sys.timer(f);
    {
        let _w0 = sys.enter(0).unwrap();
        assert!(!t.modify(Expiry::Tick(418)).unwrap());
        assert_eq!(t.fires_at(), Some(424), "level 1 from clock 301");
        assert!(
            t.modify(Expiry::Tick(424)).unwrap(),
            "same bucket: no lock, nothing written"
        );
    }
    // Worker 1's clock is ahead: there 418 lands on level 0.
    clock.set(400);
    sys.run_expired(1, 400).unwrap();
    assert_eq!(sys.offline(0).unwrap(), 1);
    assert!(t.is_pending());
    for now in 401..424 {
        clock.set(now);
        sys.run_expired(1, now).unwrap();
        assert_eq!(n.load(SeqCst), 0, "fired at {now}, before 424");
    }
    clock.set(424);
    sys.run_expired(1, 424).unwrap();
    assert_eq!(n.load(SeqCst), 1);
}

/// Each base keeps a lock-free mirror of its next expiry (what
/// `next_expiry` and the idle path read). A timer that leaves a base —
/// cancelled, moved to another worker by `modify`, or moved by a
/// hot-unplug — must not linger there: the worker would report (and wake
/// for) a timer it no longer has.
#[test]
fn next_expiry_forgets_timers_that_left_the_base() {
    let (sys, _clock) = common::manual(2);
    let t = sys.timer(|_| {});
    {
        let _w0 = sys.enter(0).unwrap();
        t.modify(Expiry::Tick(50)).unwrap();
    }
    assert_eq!(sys.next_expiry(0).unwrap(), Some(50));
    assert_eq!(sys.next_expiry(1).unwrap(), None);
    // Moved by a re-arm from worker 1.
    {
        let _w1 = sys.enter(1).unwrap();
        assert!(t.modify(Expiry::Tick(60)).unwrap());
    }
    assert_eq!(sys.next_expiry(0).unwrap(), None, "moved away");
    assert_eq!(sys.next_expiry(1).unwrap(), Some(60));
    // Moved by a hot-unplug of worker 1.
    assert_eq!(sys.offline(1).unwrap(), 1);
    assert_eq!(sys.next_expiry(1).unwrap(), None, "unplugged");
    assert_eq!(sys.next_expiry(0).unwrap(), Some(60));
    sys.online(1).unwrap();
    // Cancelled: none left; re-armed earlier and later: exact each time.
    assert!(t.delete());
    assert_eq!(sys.next_expiry(0).unwrap(), None, "cancelled");
    let u = sys.timer(|_| {});
    {
        let _w0 = sys.enter(0).unwrap();
        t.modify(Expiry::Tick(40)).unwrap();
        u.modify(Expiry::Tick(30)).unwrap();
        assert_eq!(sys.next_expiry(0).unwrap(), Some(30));
        assert!(u.delete());
        assert_eq!(sys.next_expiry(0).unwrap(), Some(40), "the first left");
        t.modify(Expiry::Tick(45)).unwrap();
        assert_eq!(sys.next_expiry(0).unwrap(), Some(45));
    }
}
