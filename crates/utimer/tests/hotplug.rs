//! Workers taken offline and back at run time (the kernel's CPU hotplug):
//! pending timers, pinned ones included, move to an online worker; nothing
//! is lost or fires twice; bad requests get clear errors.

mod common;

use common::{counter, manual, tick_to};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;
use std::time::Duration;
use utimer::{Expiry, Runtime, TimerError, TimerFlags};

#[test]
fn an_offline_workers_timers_move_and_fire_once() {
    let (sys, clock) = manual(3);
    let (n, cb) = counter();
    let cb = Arc::new(cb);
    let mut timers = Vec::new();
    for (i, flags) in [TimerFlags::NONE, TimerFlags::PINNED, TimerFlags::DEFERRABLE]
        .into_iter()
        .enumerate()
    {
        let cb = cb.clone();
        let t = sys.timer_with_flags(flags, move |t| cb(t));
        t.add_on(1, Expiry::Tick(5 + i as u64)).unwrap();
        timers.push(t);
    }
    assert_eq!(sys.offline(1).unwrap(), 3);
    assert!(!sys.is_online(1));
    for t in &timers {
        assert!(t.is_pending(), "moved, still pending");
    }
    clock.set(10);
    assert_eq!(
        sys.run_expired(1, 10).unwrap(),
        0,
        "an offline worker runs nothing"
    );
    assert_eq!(
        sys.run_expired(2, 10).unwrap(),
        3,
        "the next online worker runs them"
    );
    assert_eq!(n.load(SeqCst), 3);
    assert_eq!(
        sys.metrics()
            .base_stats(2, utimer::BaseKind::Local)
            .unwrap()
            .migrated,
        1
    );
}

#[test]
fn arms_on_an_offline_worker_land_elsewhere() {
    let (sys, clock) = manual(2);
    sys.offline(0).unwrap();
    let (n, cb) = counter();
    let t = sys.timer(cb);
    t.add_on(0, Expiry::Tick(3)).unwrap(); // routed to worker 1
    {
        let _on = sys.enter(0).unwrap();
        assert!(t.modify(Expiry::Tick(4)).unwrap());
    }
    tick_to(&sys, &clock, 4);
    assert_eq!(n.load(SeqCst), 1);
    sys.online(0).unwrap();
    t.add_on(0, Expiry::Tick(6)).unwrap();
    clock.set(6);
    assert_eq!(
        sys.run_expired(0, 6).unwrap(),
        1,
        "back online: arms land there again"
    );
}

#[test]
fn bad_hotplug_requests_are_refused() {
    let (sys, _clock) = manual(2);
    assert_eq!(sys.offline(5), Err(TimerError::NoSuchWorker { worker: 5 }));
    assert_eq!(
        sys.online(0),
        Err(TimerError::WorkerState {
            worker: 0,
            online: true
        })
    );
    sys.offline(0).unwrap();
    assert_eq!(
        sys.offline(0),
        Err(TimerError::WorkerState {
            worker: 0,
            online: false
        })
    );
    assert_eq!(sys.offline(1), Err(TimerError::LastWorker));
    assert!(sys.is_online(1) && !sys.is_online(0) && !sys.is_online(9));
    // Inside a callback: going offline (which may wait for callbacks) is
    // refused and changes nothing; coming online does not wait and works.
    let got = Arc::new(std::sync::Mutex::new(None));
    let (g, s2) = (got.clone(), sys.clone());
    let t = sys.timer(move |_| *g.lock().unwrap() = Some((s2.online(0), s2.offline(1))));
    t.add_on(1, Expiry::Tick(1)).unwrap();
    sys.run_expired(1, 1).unwrap();
    let (on, off) = got.lock().unwrap().take().unwrap();
    assert_eq!(on, Ok(()));
    assert_eq!(off, Err(TimerError::InCallback));
    assert!(sys.is_online(0) && sys.is_online(1));
}

#[test]
#[cfg_attr(
    miri,
    ignore = "starts a Runtime: its threads' timed sleeps and clock watcher (timerfd) are beyond Miri"
)]
fn offline_and_online_under_load_lose_nothing() {
    let rt = Runtime::new(3).unwrap();
    let sys = rt.system_arc();
    let stop = Arc::new(AtomicBool::new(false));
    let fired = Arc::new((0..400).map(|_| AtomicU64::new(0)).collect::<Vec<_>>());
    let mut armers = Vec::new();
    for a in 0..2 {
        let (sys, fired, stop) = (sys.clone(), fired.clone(), stop.clone());
        armers.push(thread::spawn(move || {
            let mut timers = Vec::new();
            for i in 0..200 {
                let id = a * 200 + i;
                let f = fired.clone();
                let flags = if i % 3 == 0 {
                    TimerFlags::PINNED
                } else {
                    TimerFlags::NONE
                };
                let t = sys.timer_with_flags(flags, move |_| {
                    f[id].fetch_add(1, SeqCst);
                });
                t.add_on(i % 3, Duration::from_millis(1 + (i as u64 % 20)))
                    .unwrap();
                timers.push(t);
                if i % 7 == 0 {
                    thread::sleep(Duration::from_micros(200));
                }
            }
            // Cancel a few with delete_sync while workers move.
            let mut cancelled = Vec::new();
            for (i, t) in timers.iter().enumerate() {
                if i % 11 == 0 && t.delete_sync().unwrap() {
                    cancelled.push(a * 200 + i);
                }
            }
            while !stop.load(SeqCst) {
                thread::sleep(Duration::from_millis(1));
            }
            (timers, cancelled)
        }));
    }
    for round in 0..20 {
        let w = 1 + round % 2;
        sys.offline(w).unwrap();
        thread::sleep(Duration::from_millis(1));
        sys.online(w).unwrap();
    }
    thread::sleep(Duration::from_millis(100)); // every timer is due by now
    stop.store(true, SeqCst);
    let mut cancelled = Vec::new();
    let mut keep = Vec::new();
    for a in armers {
        let (timers, c) = a.join().unwrap();
        cancelled.extend(c);
        keep.push(timers);
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let missing = (0..400)
            .filter(|i| !cancelled.contains(i) && fired[*i].load(SeqCst) == 0)
            .count();
        if missing == 0 || std::time::Instant::now() > deadline {
            assert_eq!(missing, 0, "timers lost");
            break;
        }
        thread::sleep(Duration::from_millis(5));
    }
    for (i, f) in fired.iter().enumerate() {
        let want = u64::from(!cancelled.contains(&i));
        assert_eq!(f.load(SeqCst), want, "timer {i}");
    }
}
