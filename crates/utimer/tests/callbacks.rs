//! Callbacks: re-arming and deleting from inside, dropping the handle inside
//! and outside while the callback runs.

#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;
use utimer::{Clock, Timer, TimerFlags, TimerSystem};

#[test]
fn callback_rearms_its_own_timer() {
    let clock = Clock::manual();
    let sys = TimerSystem::builder()
        .workers(1)
        .clock(clock.clone())
        .build();
    let fired = Arc::new(Mutex::new(Vec::new()));
    let f = fired.clone();
    let c = clock.clone();
    let t = sys.timer(TimerFlags::PINNED, move |t| {
        let now = c.advance(0);
        f.lock().unwrap().push(now);
        if f.lock().unwrap().len() < 5 {
            t.modify(now + 10).unwrap();
        }
    });
    t.modify(10).unwrap();
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
    let clock = Clock::manual();
    let sys = TimerSystem::builder()
        .workers(1)
        .clock(clock.clone())
        .build();
    let n = Arc::new(AtomicU64::new(0));
    let m = n.clone();
    let t = sys.timer(TimerFlags::empty(), move |t| {
        m.fetch_add(1, Ordering::Relaxed);
        t.modify(0).unwrap();
    });
    t.modify(5).unwrap();
    clock.set(5);
    assert_eq!(sys.run_expired(0, 5).unwrap(), 1);
    assert_eq!(sys.run_expired(0, 5).unwrap(), 1, "the same now: still due");
    assert_eq!(sys.run_expired(0, 6).unwrap(), 1);
    assert_eq!(n.load(Ordering::Relaxed), 3);
    assert!(t.delete_sync().unwrap());
}

#[test]
fn dropping_the_handle_inside_its_own_callback() {
    let clock = Clock::manual();
    let sys = TimerSystem::builder()
        .workers(1)
        .clock(clock.clone())
        .build();
    let slot: Arc<Mutex<Option<Timer>>> = Arc::default();
    let s = slot.clone();
    let ran = Arc::new(AtomicU64::new(0));
    let r = ran.clone();
    let t = sys.timer(TimerFlags::empty(), move |me| {
        r.fetch_add(1, Ordering::Relaxed);
        let owner = s.lock().unwrap().take();
        drop(owner); // frees nothing yet: the callback still runs
                     // Re-arming after the owner is gone is harmless: the timer is
                     // cancelled and freed when the callback returns.
        let _ = me.modify(1);
        assert!(me.is_pending());
    });
    t.modify(3).unwrap();
    *slot.lock().unwrap() = Some(t);
    for now in 1..20 {
        clock.set(now);
        sys.run_expired(0, now).unwrap();
    }
    assert_eq!(ran.load(Ordering::Relaxed), 1);
    let s = sys.stats();
    assert_eq!(s.pending, 0);
    assert_eq!(s.armed, s.fired + s.deleted);
}

#[test]
fn drop_waits_for_a_running_callback() {
    let clock = Clock::manual();
    let sys = Arc::new(
        TimerSystem::builder()
            .workers(1)
            .clock(clock.clone())
            .build(),
    );
    let started = Arc::new(AtomicBool::new(false));
    let finished = Arc::new(AtomicBool::new(false));
    let (s, f) = (started.clone(), finished.clone());
    let t = sys.timer(TimerFlags::empty(), move |_| {
        s.store(true, Ordering::SeqCst);
        thread::sleep(Duration::from_millis(50));
        f.store(true, Ordering::SeqCst);
    });
    t.modify(1).unwrap();
    clock.set(1);
    let runner = {
        let sys = sys.clone();
        thread::spawn(move || sys.run_expired(0, 1).unwrap())
    };
    while !started.load(Ordering::SeqCst) {
        thread::yield_now();
    }
    drop(t);
    assert!(
        finished.load(Ordering::SeqCst),
        "drop returned while the callback ran"
    );
    assert_eq!(runner.join().unwrap(), 1);
}

#[test]
fn delete_cancels_a_due_timer_not_yet_run() {
    // Two timers due in the same run; the first deletes the second.
    let clock = Clock::manual();
    let sys = TimerSystem::builder()
        .workers(1)
        .clock(clock.clone())
        .build();
    let victim_ran = Arc::new(AtomicBool::new(false));
    let v = victim_ran.clone();
    let victim = Arc::new(sys.timer(TimerFlags::empty(), move |_| {
        v.store(true, Ordering::SeqCst)
    }));
    let vv = victim.clone();
    let killer = sys.timer(TimerFlags::empty(), move |_| {
        vv.delete();
    });
    // Same bucket; the killer is queued last, so it is first in the bucket.
    victim.modify(5).unwrap();
    killer.modify(5).unwrap();
    clock.set(5);
    assert_eq!(sys.run_expired(0, 5).unwrap(), 1);
    assert!(!victim_ran.load(Ordering::SeqCst));
    assert_eq!(sys.stats().deleted, 1);
}
