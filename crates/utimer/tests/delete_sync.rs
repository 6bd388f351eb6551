//! Synchronous deletion: delete_sync, try_delete_sync, shutdown,
//! shutdown_sync (the kernel's timer_delete_sync family).

#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;
use utimer::{Expiry, Timer, TimerError, TimerFlags, TimerSystem};

mod common;
use common::{manual, wait_for};

/// Runs worker 0's expiry on another thread at `now`.
fn expire_in_background(sys: &Arc<TimerSystem>, now: u64) -> thread::JoinHandle<usize> {
    let sys = sys.clone();
    thread::spawn(move || sys.run_expired(0, now).unwrap())
}

#[test]
fn waits_for_a_running_callback() {
    let (sys, clock) = manual(2);
    let _g = sys.enter(0).unwrap();
    let (started, finished) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (s, f) = (started.clone(), finished.clone());
    let t = sys.timer(move |_| {
        s.store(true, SeqCst);
        thread::sleep(Duration::from_millis(50));
        f.store(true, SeqCst);
    });
    t.modify(Expiry::Tick(1)).unwrap();
    clock.set(1);
    let runner = expire_in_background(&sys, 1);
    wait_for(&started);
    assert_eq!(t.delete_sync(), Ok(false), "it had fired: not pending");
    assert!(finished.load(SeqCst), "returned while the callback ran");
    assert_eq!(runner.join().unwrap(), 1);
}

#[test]
fn pending_and_idle_timers() {
    let (sys, clock) = manual(2);
    let _g = sys.enter(0).unwrap();
    let fired = Arc::new(AtomicU64::new(0));
    let f = fired.clone();
    let t = sys.timer(move |_| {
        f.fetch_add(1, SeqCst);
    });
    assert_eq!(t.delete_sync(), Ok(false), "idle");
    t.modify(Expiry::Tick(5)).unwrap();
    assert_eq!(t.delete_sync(), Ok(true));
    assert!(!t.is_pending());
    clock.set(10);
    sys.run_expired(0, 10).unwrap();
    assert_eq!(fired.load(SeqCst), 0);
    assert_eq!(t.try_delete_sync(), Ok(false));
}

#[test]
fn from_its_own_callback_is_an_error_and_changes_nothing() {
    let (sys, clock) = manual(2);
    let _g = sys.enter(0).unwrap();
    let seen: Arc<Mutex<Vec<Result<bool, TimerError>>>> = Arc::default();
    let s = seen.clone();
    let t = sys.timer(move |me| {
        me.modify(Expiry::Tick(100)).unwrap();
        s.lock().unwrap().push(me.delete_sync());
        s.lock().unwrap().push(me.shutdown_sync());
        s.lock().unwrap().push(me.try_delete_sync());
    });
    t.modify(Expiry::Tick(1)).unwrap();
    clock.set(1);
    sys.run_expired(0, 1).unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        vec![
            Err(TimerError::InOwnCallback),
            Err(TimerError::InOwnCallback),
            Err(TimerError::Running)
        ]
    );
    assert!(t.is_pending(), "the re-arm made inside the callback stands");
    assert!(!t.is_shutdown());
    assert_eq!(t.delete_sync(), Ok(true));
}

#[test]
fn try_delete_sync_reports_a_running_callback() {
    let (sys, clock) = manual(2);
    let _g = sys.enter(0).unwrap();
    let (started, release) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (s, r) = (started.clone(), release.clone());
    let t = sys.timer(move |me| {
        me.modify(Expiry::Tick(50)).unwrap();
        s.store(true, SeqCst);
        wait_for(&r);
    });
    t.modify(Expiry::Tick(1)).unwrap();
    clock.set(1);
    let runner = expire_in_background(&sys, 1);
    wait_for(&started);
    assert_eq!(t.try_delete_sync(), Err(TimerError::Running));
    assert!(t.is_pending(), "nothing changed");
    release.store(true, SeqCst);
    runner.join().unwrap();
    assert_eq!(t.try_delete_sync(), Ok(true));
}

#[test]
fn shutdown_refuses_later_arms() {
    let (sys, _clock) = manual(2);
    let t = sys.timer(|_| {});
    t.modify(Expiry::Tick(10)).unwrap();
    assert!(t.shutdown());
    assert!(t.is_shutdown());
    assert_eq!(t.modify(Expiry::Tick(20)), Ok(false));
    assert_eq!(t.add(Expiry::Tick(20)), Ok(()));
    assert_eq!(t.add_on(1, Expiry::Tick(20)), Ok(()));
    assert_eq!(t.reduce(Expiry::Tick(5)), Ok(false));
    assert!(!t.is_pending());
    assert!(!t.shutdown());
    assert_eq!(t.shutdown_sync(), Ok(false));
    let s = sys.metrics().totals();
    assert_eq!(s.armed, s.fired + s.deleted + s.pending);
}

#[test]
fn shutdown_sync_stops_a_timer_that_rearms_itself() {
    let (sys, clock) = manual(2);
    let fired = Arc::new(AtomicU64::new(0));
    let f = fired.clone();
    let t = {
        let _g = sys.enter(0).unwrap();
        let t = Arc::new(sys.timer_with_flags(TimerFlags::PINNED, move |me| {
            f.fetch_add(1, SeqCst);
            let _ = me.modify(Expiry::Tick(me.expires() + 1));
        }));
        t.modify(Expiry::Tick(1)).unwrap();
        t
    };
    let stop = Arc::new(AtomicBool::new(false));
    let expirer = {
        let (sys, clock, stop) = (sys.clone(), clock.clone(), stop.clone());
        thread::spawn(move || {
            let _g = sys.enter(0).unwrap();
            while !stop.load(SeqCst) {
                let now = clock.advance(1);
                sys.run_expired(0, now).unwrap();
            }
        })
    };
    while fired.load(SeqCst) < if cfg!(miri) { 5 } else { 100 } {
        thread::yield_now();
    }
    assert!(t.shutdown_sync().is_ok());
    let after = fired.load(SeqCst);
    assert!(!t.is_pending());
    // Let the expirer run on: the callback never runs again.
    let until = clock.advance(0) + 50;
    while clock.advance(0) < until {
        thread::yield_now();
    }
    stop.store(true, SeqCst);
    expirer.join().unwrap();
    assert_eq!(fired.load(SeqCst), after);
}

#[test]
fn callback_never_runs_after_delete_sync_under_contention() {
    let (sys, clock) = manual(2);
    // Per timer: odd while its callback runs.
    let running: Arc<Vec<AtomicU64>> = Arc::new((0..16).map(|_| AtomicU64::new(0)).collect());
    let timers: Arc<Vec<Timer>> = Arc::new(
        (0..16)
            .map(|i| {
                let r = running.clone();
                sys.timer(move |_| {
                    assert_eq!(
                        r[i].fetch_add(1, SeqCst) % 2,
                        0,
                        "timer {i} runs twice at once"
                    );
                    r[i].fetch_add(1, SeqCst);
                })
            })
            .collect(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let expirers: Vec<_> = (0..2)
        .map(|w| {
            let (sys, clock, stop) = (sys.clone(), clock.clone(), stop.clone());
            thread::spawn(move || {
                while !stop.load(SeqCst) {
                    let now = clock.advance(1);
                    sys.run_expired(w, now).unwrap();
                }
            })
        })
        .collect();
    let rounds = if cfg!(miri) { 60 } else { 2_000u64 };
    for round in 0..rounds {
        let i = (round % 16) as usize;
        let t = &timers[i];
        // Alternate the arming worker, so timers also migrate.
        let _g = sys.enter((round % 2) as usize).unwrap();
        t.modify(Expiry::Tick(clock.advance(0) + round % 3))
            .unwrap();
        if round % 2 == 0 {
            t.delete_sync().unwrap();
            assert!(!t.is_pending());
            assert_eq!(
                running[i].load(SeqCst) % 2,
                0,
                "timer {i} still running after delete_sync"
            );
        }
    }
    stop.store(true, SeqCst);
    for e in expirers {
        e.join().unwrap();
    }
    for t in timers.iter() {
        t.delete_sync().unwrap();
    }
    let s = sys.metrics().totals();
    assert_eq!(s.armed, s.fired + s.deleted + s.pending);
    let runs: u64 = running.iter().map(|r| r.load(SeqCst)).sum();
    assert_eq!(runs, 2 * s.fired);
}
