//! A cancelled timer may stay in its bucket as the wheel's ghost until it is
//! re-armed there (`wheel/ghost.rs`). None of that may show: after a
//! `delete` the timer is gone for every reader (next expiry, statistics,
//! expiry runs, hot-unplug, shutdown), and a re-arm, wherever it lands and
//! from whichever thread, fires once, never early.

#![cfg(not(loom))]

use std::sync::atomic::Ordering::SeqCst;
use utimer::{BaseKind, Expiry, TimerError};

mod common;

use common::{counter, manual};
use utimer::{Clock, TimerSystem};

/// Moves the clock to `to` and runs every worker's expiry there once: a
/// run fires everything due up to `to` (the tests check "not before" with
/// a run at the tick before). Far cheaper than tick by tick under Miri.
fn run_to(sys: &TimerSystem, clock: &Clock, to: u64) {
    clock.set(to);
    for w in 0..sys.workers() {
        sys.run_expired(w, to).unwrap();
    }
}

/// 1000 ticks from 0 is level 2 (64-tick buckets): its bucket fires at 1024.
const AT: u64 = 1000;
const BUCKET: u64 = 1024;

#[test]
fn a_cancelled_timeout_leaves_nothing_behind() {
    let (sys, clock) = manual(1);
    let _w = sys.enter(0).unwrap();
    let (n, cb) = counter();
    let t = sys.timer(cb);
    t.modify(Expiry::Tick(AT)).unwrap();
    assert_eq!(sys.next_expiry(0).unwrap(), Some(BUCKET));
    assert!(t.delete());
    assert!(!t.is_pending());
    assert!(!t.delete(), "a second delete finds nothing");
    assert_eq!(sys.next_expiry(0).unwrap(), None);
    assert_eq!(sys.metrics().totals().pending, 0);
    assert_eq!(
        sys.metrics()
            .base_stats(0, BaseKind::Global)
            .unwrap()
            .pending,
        0
    );
    run_to(&sys, &clock, BUCKET + 100);
    assert_eq!(n.load(SeqCst), 0);
}

#[test]
fn rearmed_into_its_bucket_it_fires_once_at_the_bucket() {
    let (sys, clock) = manual(1);
    let _w = sys.enter(0).unwrap();
    let (n, cb) = counter();
    let t = sys.timer(cb);
    for e in [AT, AT + 1, AT - 3, AT + 20] {
        t.modify(Expiry::Tick(e)).unwrap();
        assert!(t.delete());
    }
    t.modify(Expiry::Tick(AT + 5)).unwrap();
    assert_eq!(t.expires(), AT + 5);
    assert_eq!(sys.next_expiry(0).unwrap(), Some(BUCKET));
    assert_eq!(sys.metrics().totals().pending, 1);
    run_to(&sys, &clock, BUCKET - 1);
    assert_eq!(n.load(SeqCst), 0, "never early");
    run_to(&sys, &clock, BUCKET + 200);
    assert_eq!(n.load(SeqCst), 1, "once");
    let s = sys.metrics().totals();
    assert_eq!((s.armed, s.deleted, s.fired, s.pending), (5, 4, 1, 0));
}

#[test]
fn a_cancelled_timer_rearmed_elsewhere_fires_only_there() {
    let (sys, clock) = manual(1);
    let _w = sys.enter(0).unwrap();
    let (n, cb) = counter();
    let t = sys.timer(cb);
    t.modify(Expiry::Tick(AT)).unwrap();
    assert!(t.delete());
    // Another bucket: its old entry must not fire at 1024.
    t.modify(Expiry::Tick(3000)).unwrap();
    let other = sys.next_expiry(0).unwrap().unwrap();
    assert!(other >= 3000);
    run_to(&sys, &clock, other - 1);
    assert_eq!(n.load(SeqCst), 0);
    run_to(&sys, &clock, other);
    assert_eq!(n.load(SeqCst), 1);
}

#[test]
fn dropped_after_cancel_and_replaced() {
    // The dropped timer's memory is likely reused by the next timer; the
    // new one fires once and the old one never.
    let (sys, clock) = manual(1);
    let _w = sys.enter(0).unwrap();
    let n = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut armed = Vec::new();
    for _ in 0..100 {
        let old = sys.timer(|_| panic!("a dropped timer fired"));
        old.modify(Expiry::Tick(AT)).unwrap();
        assert!(old.delete());
        drop(old);
        let m = n.clone();
        let t = sys.timer(move |_| {
            m.fetch_add(1, SeqCst);
        });
        t.modify(Expiry::Tick(AT)).unwrap();
        armed.push(t);
    }
    assert_eq!(sys.metrics().totals().pending, 100);
    run_to(&sys, &clock, BUCKET);
    assert_eq!(n.load(SeqCst), 100);
    assert_eq!(sys.metrics().totals().pending, 0);
    drop(armed);
}

#[test]
fn rearmed_by_another_worker_and_back() {
    let (sys, clock) = manual(2);
    let (n, cb) = counter();
    let t = sys.timer(cb);
    let w0 = sys.enter(0).unwrap();
    t.modify(Expiry::Tick(AT)).unwrap();
    assert!(t.delete());
    drop(w0);
    // Worker 1 arms it: it moves to worker 1's base, same bucket there.
    let s = sys.clone();
    let t = std::thread::spawn(move || {
        let _w1 = s.enter(1).unwrap();
        t.modify(Expiry::Tick(AT)).unwrap();
        assert!(t.delete());
        t.modify(Expiry::Tick(AT + 1)).unwrap();
        t
    })
    .join()
    .unwrap();
    assert_eq!(
        sys.next_expiry(0).unwrap(),
        None,
        "nothing left on worker 0"
    );
    assert_eq!(sys.next_expiry(1).unwrap(), Some(BUCKET));
    // Back on worker 0, into the bucket of its old entry there.
    let _w0 = sys.enter(0).unwrap();
    assert!(t.delete());
    t.modify(Expiry::Tick(AT + 2)).unwrap();
    assert_eq!(sys.next_expiry(0).unwrap(), Some(BUCKET));
    assert_eq!(sys.next_expiry(1).unwrap(), None);
    run_to(&sys, &clock, BUCKET + 100);
    assert_eq!(n.load(SeqCst), 1);
}

#[test]
fn offline_after_cancel_moves_only_pending_timers() {
    let (sys, clock) = manual(2);
    let (n, cb) = counter();
    let s = sys.clone();
    let (a, b) = std::thread::spawn(move || {
        let _w1 = s.enter(1).unwrap();
        let a = s.timer(|_| panic!("a cancelled timer fired"));
        let b = s.timer(cb);
        a.modify(Expiry::Tick(AT)).unwrap();
        b.modify(Expiry::Tick(AT)).unwrap();
        assert!(a.delete());
        (a, b)
    })
    .join()
    .unwrap();
    assert_eq!(sys.offline(1).unwrap(), 1, "only b moves");
    assert!(!a.is_pending() && b.is_pending());
    run_to(&sys, &clock, BUCKET + 100);
    assert_eq!(n.load(SeqCst), 1);
    drop(a);
}

#[test]
fn shutdown_after_cancel() {
    let (sys, _clock) = manual(1);
    let _w = sys.enter(0).unwrap();
    let (n, cb) = counter();
    let t = sys.timer(cb);
    t.modify(Expiry::Tick(AT)).unwrap();
    assert!(t.delete());
    drop(_w);
    assert_eq!(std::sync::Arc::strong_count(&sys), 1);
    drop(sys); // the last owner: the system shuts down
    assert_eq!(t.modify(Expiry::Tick(AT)), Err(TimerError::Shutdown));
    assert!(!t.delete());
    assert_eq!(n.load(SeqCst), 0);
}

#[test]
fn moved_back_and_forth_it_fires_once_where_it_was_left() {
    // A re-arm between two buckets swaps the timer's entry with its ghost:
    // only the bucket of the last re-arm may fire it.
    let (sys, clock) = manual(1);
    let _w = sys.enter(0).unwrap();
    let (n, cb) = counter();
    let t = sys.timer(cb);
    t.modify(Expiry::Tick(AT)).unwrap();
    for i in 0..10 {
        assert!(t
            .modify(Expiry::Tick(if i % 2 == 0 { 5000 } else { AT }))
            .unwrap());
    }
    // Last re-arm: AT (i = 9).
    assert_eq!(sys.next_expiry(0).unwrap(), Some(BUCKET));
    assert!(t.modify(Expiry::Tick(5000)).unwrap());
    let far = sys.next_expiry(0).unwrap().unwrap();
    assert!(far >= 5000);
    run_to(&sys, &clock, far - 1);
    assert_eq!(n.load(SeqCst), 0, "nothing at the old bucket");
    run_to(&sys, &clock, far);
    assert_eq!(n.load(SeqCst), 1);
    // And cancelled after the swaps, nothing is left at all.
    t.modify(Expiry::Tick(far + AT)).unwrap();
    assert!(t.modify(Expiry::Tick(far + 5000)).unwrap());
    assert!(t.modify(Expiry::Tick(far + AT)).unwrap());
    assert!(t.delete());
    assert_eq!(sys.next_expiry(0).unwrap(), None);
    assert_eq!(sys.metrics().totals().pending, 0);
    run_to(&sys, &clock, far + 10_000);
    assert_eq!(n.load(SeqCst), 1);
}
