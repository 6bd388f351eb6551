//! Callbacks: re-arming and deleting from inside, dropping the handle inside
//! and outside while the callback runs.

#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use utimer::{Expiry, Timer, TimerFlags};

mod common;
use common::manual;

#[test]
fn callback_rearms_its_own_timer() {
    let (sys, clock) = manual(1);
    let fired = Arc::new(Mutex::new(Vec::new()));
    let f = fired.clone();
    let c = clock.clone();
    let t = sys.timer_with_flags(TimerFlags::PINNED, move |t| {
        let now = c.advance(0);
        f.lock().unwrap().push(now);
        if f.lock().unwrap().len() < 5 {
            t.modify(Expiry::Tick(now + 10)).unwrap();
        }
    });
    t.modify(Expiry::Tick(10)).unwrap();
    for now in 1..=100 {
        clock.set(now);
        sys.run_expired(0, now).unwrap();
    }
    assert_eq!(*fired.lock().unwrap(), vec![10, 20, 30, 40, 50]);
    assert!(!t.is_pending());
}

#[test]
fn callback_rearming_into_the_past_fires_at_the_next_run() {
    // Not in the same run: a callback that always re-arms into the past
    // would otherwise keep the run going forever.
    let (sys, clock) = manual(1);
    let n = Arc::new(AtomicU64::new(0));
    let m = n.clone();
    let t = sys.timer(move |t| {
        m.fetch_add(1, Ordering::Relaxed);
        t.modify(Expiry::Tick(0)).unwrap();
    });
    t.modify(Expiry::Tick(5)).unwrap();
    clock.set(5);
    assert_eq!(sys.run_expired(0, 5).unwrap(), 1);
    assert_eq!(sys.run_expired(0, 5).unwrap(), 1, "the same now: still due");
    assert_eq!(sys.run_expired(0, 6).unwrap(), 1);
    assert_eq!(n.load(Ordering::Relaxed), 3);
    assert!(t.delete_sync().unwrap());
}

#[test]
fn a_run_ends_at_its_now_when_a_callback_arms_later_than_the_present() {
    // The callback of `a` takes time: the present is tick 10 when it arms
    // `far`, and the arm forwards the base to the present, taking `b` (due
    // at 8) out of its bucket. `b` was not due at the run's now (5): the
    // next run fires it, as the kernel's `__run_timers()` ends at the
    // jiffies it began with.
    let (sys, clock) = manual(1);
    let b_ran = Arc::new(AtomicBool::new(false));
    let seen = b_ran.clone();
    let b = sys.timer_with_flags(TimerFlags::PINNED, move |_| {
        seen.store(true, Ordering::SeqCst)
    });
    let far = Arc::new(sys.timer_with_flags(TimerFlags::PINNED, |_| {}));
    let (c, f) = (clock.clone(), far.clone());
    let a = sys.timer_with_flags(TimerFlags::PINNED, move |_| {
        c.set(10);
        f.modify(Expiry::Tick(10 + 500)).unwrap();
    });
    a.modify(Expiry::Tick(5)).unwrap();
    b.modify(Expiry::Tick(8)).unwrap();
    clock.set(5);
    assert_eq!(sys.run_expired(0, 5).unwrap(), 1, "only what was due at 5");
    assert!(!b_ran.load(Ordering::SeqCst));
    assert!(b.is_pending());
    assert_eq!(sys.run_expired(0, 10).unwrap(), 1);
    assert!(b_ran.load(Ordering::SeqCst));
    assert!(far.is_pending());
}

#[test]
fn dropping_the_handle_inside_its_own_callback() {
    let (sys, clock) = manual(1);
    let slot: Arc<Mutex<Option<Timer>>> = Arc::default();
    let s = slot.clone();
    let ran = Arc::new(AtomicU64::new(0));
    let r = ran.clone();
    let t = sys.timer(move |me| {
        r.fetch_add(1, Ordering::Relaxed);
        let owner = s.lock().unwrap().take();
        drop(owner); // frees nothing yet: the callback still runs
                     // Re-arming after the owner is gone is harmless: the timer is
                     // cancelled and freed when the callback returns.
        let _ = me.modify(Expiry::Tick(1));
        assert!(me.is_pending());
    });
    t.modify(Expiry::Tick(3)).unwrap();
    *slot.lock().unwrap() = Some(t);
    for now in 1..20 {
        clock.set(now);
        sys.run_expired(0, now).unwrap();
    }
    assert_eq!(ran.load(Ordering::Relaxed), 1);
    let s = sys.metrics().totals();
    assert_eq!(s.pending, 0);
    assert_eq!(s.armed, s.fired + s.deleted);
}

/// Sets its flag when dropped: tells when the timer's memory was freed.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn drop_never_blocks_and_frees_after_the_callback() {
    let (sys, clock) = manual(1);
    let started = Arc::new(AtomicBool::new(false));
    let release = Arc::new(AtomicBool::new(false));
    let freed = Arc::new(AtomicBool::new(false));
    let flag = DropFlag(freed.clone());
    let (s, r) = (started.clone(), release.clone());
    let t = sys.timer(move |me| {
        let _keep = &flag;
        s.store(true, Ordering::SeqCst);
        while !r.load(Ordering::SeqCst) {
            thread::yield_now();
        }
        // Re-armed after its owner is gone: cancelled and freed anyway.
        let _ = me.modify(Expiry::Tick(0));
    });
    t.modify(Expiry::Tick(1)).unwrap();
    clock.set(1);
    let runner = {
        let sys = sys.clone();
        thread::spawn(move || sys.run_expired(0, 1).unwrap())
    };
    while !started.load(Ordering::SeqCst) {
        thread::yield_now();
    }
    // The callback is blocked until released: a drop that waited for it
    // would never return.
    drop(t);
    assert!(
        !freed.load(Ordering::SeqCst),
        "freed while its callback runs"
    );
    release.store(true, Ordering::SeqCst);
    assert_eq!(runner.join().unwrap(), 1);
    assert!(
        freed.load(Ordering::SeqCst),
        "freed once the callback returned"
    );
    let s = sys.metrics().totals();
    assert_eq!((s.fired, s.pending), (1, 0));
    assert_eq!(s.armed, s.fired + s.deleted);
    assert_eq!(
        sys.run_expired(0, 5).unwrap(),
        0,
        "the re-arm was cancelled"
    );
}

#[test]
fn delete_cancels_a_due_timer_not_yet_run() {
    // Two timers due in the same run, in the same bucket (in no particular
    // order there); whichever runs first deletes both, so the other never
    // runs.
    let (sys, clock) = manual(1);
    let ran = Arc::new(AtomicUsize::new(0));
    let both: Arc<Mutex<Vec<Arc<Timer>>>> = Arc::default();
    for _ in 0..2 {
        let (ran, both2) = (ran.clone(), both.clone());
        let t = sys.timer(move |_| {
            ran.fetch_add(1, Ordering::SeqCst);
            for t in both2.lock().unwrap().iter() {
                // Its own delete finds it running, not pending: false.
                t.delete();
            }
        });
        t.modify(Expiry::Tick(5)).unwrap();
        both.lock().unwrap().push(Arc::new(t));
    }
    clock.set(5);
    assert_eq!(sys.run_expired(0, 5).unwrap(), 1);
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    assert_eq!(sys.metrics().totals().deleted, 1);
    both.lock().unwrap().clear();
}
