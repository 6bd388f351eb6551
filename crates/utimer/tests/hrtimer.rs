//! High-resolution timers through the public API: firing at the expiry in
//! nanoseconds (never before), slack, periodic forwarding without drift,
//! cancel and cancel-and-wait, drop, hot-plug, shutdown, and precise
//! wake-ups of a real runtime.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use utimer::{Clock, ClockId, HrRestart, Ktime, Runtime, TimerError, TimerSystem};

/// `n` ns of an hrtimer's clock.
fn ns(n: u64) -> Ktime {
    Ktime::from_nanos(n)
}

/// A manual clock with 100 µs ticks: hrtimers read `tick × 100_000` ns.
fn manual(workers: usize) -> (TimerSystem, Clock) {
    let clock = Clock::manual();
    let sys = TimerSystem::builder()
        .workers(workers)
        .tick(Duration::from_micros(100))
        .clock(clock.clone())
        .build_without_threads();
    (sys, clock)
}

const TICK: u64 = 100_000;

#[test]
fn fires_at_its_expiry_never_before() {
    let (sys, clock) = manual(1);
    let fired = Arc::new(AtomicU64::new(0));
    let f = fired.clone();
    let t = sys
        .hrtimer_on(0, ClockId::Monotonic, move |fire| {
            assert!(fire.now() >= fire.expires(), "early");
            f.store(fire.now().as_nanos(), SeqCst);
            HrRestart::NoRestart
        })
        .unwrap();
    t.start(ns(5 * TICK + 1)).unwrap();
    assert!(t.is_queued());
    assert_eq!(t.expires(), Some(ns(5 * TICK + 1)));
    for tick in 0..=5 {
        clock.set(tick);
        sys.run_expired(0, tick).unwrap();
        assert_eq!(
            fired.load(SeqCst),
            0,
            "fired before its expiry at tick {tick}"
        );
    }
    clock.set(6);
    assert_eq!(sys.run_expired(0, 6).unwrap(), 1);
    assert_eq!(fired.load(SeqCst), 6 * TICK);
    assert!(!t.is_active());
    assert_eq!(sys.metrics().hr_stats(0).unwrap().fired, 1);
}

#[test]
fn next_expiry_is_precise_and_rounded_up_to_a_tick() {
    let (sys, clock) = manual(1);
    let t = sys
        .hrtimer_on(0, ClockId::Monotonic, |_| HrRestart::NoRestart)
        .unwrap();
    t.start(ns(3 * TICK + 1)).unwrap();
    // The tick-based answer rounds an hrtimer up: never early.
    assert_eq!(sys.next_expiry(0).unwrap(), Some(4));
    clock.set(4);
    assert_eq!(sys.run_expired(0, 4).unwrap(), 1);
    assert_eq!(sys.next_expiry(0).unwrap(), None);
}

#[test]
fn slack_lets_neighbours_share_a_wake_up() {
    let (sys, clock) = manual(1);
    let order = Arc::new(Mutex::new(Vec::new()));
    let mk = |name: &'static str| {
        let o = order.clone();
        sys.hrtimer_on(0, ClockId::Monotonic, move |_| {
            o.lock().unwrap().push(name);
            HrRestart::NoRestart
        })
        .unwrap()
    };
    let a = mk("a");
    let b = mk("b");
    // a may fire anywhere in [10, 30] ticks; b exactly at 20.
    a.start_range(ns(10 * TICK), Duration::from_nanos(20 * TICK))
        .unwrap();
    b.start(ns(20 * TICK)).unwrap();
    // The worker wakes for the first hard expiry: b's, at 20 ...
    assert_eq!(sys.next_expiry(0).unwrap(), Some(20));
    clock.set(15);
    // ... and nothing fires before it, although a's range has begun: the
    // run stops at the first timer in hard order that is not due (b).
    assert_eq!(sys.run_expired(0, 15).unwrap(), 0);
    clock.set(20);
    // At 20 both go in one run.
    assert_eq!(sys.run_expired(0, 20).unwrap(), 2);
    assert_eq!(*order.lock().unwrap(), ["b", "a"]);
}

#[test]
fn periodic_forward_does_not_drift() {
    let (sys, clock) = manual(1);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let t = sys
        .hrtimer_on(0, ClockId::Monotonic, move |fire| {
            s.lock().unwrap().push((fire.expires(), fire.now()));
            let n = fire.forward(Duration::from_nanos(10 * TICK));
            assert!(n >= 1);
            HrRestart::Restart
        })
        .unwrap();
    t.start(ns(10 * TICK)).unwrap();
    // The worker runs late and irregularly; expiries stay on the grid.
    for now in [10, 23, 30, 71, 80] {
        clock.set(now);
        sys.run_expired(0, now).unwrap();
    }
    let seen = seen.lock().unwrap();
    let expiries: Vec<u64> = seen.iter().map(|&(e, _)| e.as_nanos() / TICK).collect();
    assert_eq!(expiries, [10, 20, 30, 40, 80]);
    assert!(seen.iter().all(|&(e, now)| now >= e));
    assert_eq!(t.expires(), Some(ns(90 * TICK)));
    drop(t);
    assert_eq!(
        sys.metrics().hr_stats(0).unwrap().pending,
        0,
        "drop cancels"
    );
}

#[test]
fn try_cancel_and_cancel() {
    let (sys, clock) = manual(1);
    let t = Arc::new(
        sys.hrtimer_on(0, ClockId::Monotonic, |_| HrRestart::NoRestart)
            .unwrap(),
    );
    assert_eq!(t.try_cancel(), Ok(false));
    t.start(ns(TICK)).unwrap();
    assert_eq!(t.try_cancel(), Ok(true));
    assert_eq!(t.cancel(), Ok(false));
    clock.set(2);
    assert_eq!(
        sys.run_expired(0, 2).unwrap(),
        0,
        "cancelled timers never fire"
    );

    // From its own callback: try_cancel says Running, cancel refuses to
    // wait for itself, and a restart from there still works.
    let me: Arc<Mutex<Option<Arc<utimer::HrTimer>>>> = Arc::new(Mutex::new(None));
    let m = me.clone();
    let results = Arc::new(Mutex::new(Vec::new()));
    let r = results.clone();
    let own = Arc::new(
        sys.hrtimer_on(0, ClockId::Monotonic, move |_| {
            let t = m.lock().unwrap().clone().unwrap();
            r.lock()
                .unwrap()
                .push((t.try_cancel(), t.cancel(), t.is_running()));
            HrRestart::NoRestart
        })
        .unwrap(),
    );
    *me.lock().unwrap() = Some(own.clone());
    own.start(ns(0)).unwrap();
    sys.run_expired(0, 2).unwrap();
    assert_eq!(
        *results.lock().unwrap(),
        [(
            Err(TimerError::Running),
            Err(TimerError::InOwnCallback),
            true
        )]
    );
    me.lock().unwrap().take();
}

#[test]
fn cancel_waits_for_a_running_callback_on_another_thread() {
    let rt = Runtime::new(1).unwrap();
    let sys = rt.system_arc();
    let inside = Arc::new(AtomicUsize::new(0));
    let i = inside.clone();
    let t = sys
        .hrtimer_on(0, ClockId::Monotonic, move |_| {
            i.store(1, SeqCst);
            std::thread::sleep(Duration::from_millis(50));
            i.store(2, SeqCst);
            HrRestart::NoRestart
        })
        .unwrap();
    t.start_after(Duration::ZERO).unwrap();
    while inside.load(SeqCst) == 0 {
        std::thread::yield_now();
    }
    assert_eq!(t.cancel(), Ok(false));
    assert_eq!(
        inside.load(SeqCst),
        2,
        "cancel returned before the callback did"
    );
}

#[test]
fn a_runtime_fires_hrtimers_on_time_from_any_thread() {
    let rt = Runtime::new(2).unwrap();
    let sys = rt.system_arc();
    let lateness = Arc::new(Mutex::new(Vec::new()));
    let mut timers = Vec::new();
    for i in 0..20u64 {
        let l = lateness.clone();
        let t = sys
            .hrtimer_on((i % 2) as usize, ClockId::Monotonic, move |fire| {
                l.lock()
                    .unwrap()
                    .push(fire.now().as_nanos() as i64 - fire.expires().as_nanos() as i64);
                HrRestart::NoRestart
            })
            .unwrap();
        t.start_after(Duration::from_millis(2 + i)).unwrap();
        timers.push(t);
    }
    let start = Instant::now();
    while lateness.lock().unwrap().len() < 20 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "hrtimers did not fire"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        lateness.lock().unwrap().iter().all(|&l| l >= 0),
        "fired early"
    );
}

#[test]
fn boottime_and_realtime_timers_fire() {
    let rt = Runtime::new(1).unwrap();
    let sys = rt.system_arc();
    let fired = Arc::new(AtomicUsize::new(0));
    let mut timers = Vec::new();
    for clock in [ClockId::Boottime, ClockId::Realtime] {
        let f = fired.clone();
        let t = sys
            .hrtimer_on(0, clock, move |fire| {
                assert!(fire.now() >= fire.expires());
                f.fetch_add(1, SeqCst);
                HrRestart::NoRestart
            })
            .unwrap();
        assert_eq!(t.clock(), clock);
        // Absolute, on the timer's own clock.
        t.start(sys.clock_ns(clock) + Duration::from_millis(3))
            .unwrap();
        timers.push(t);
    }
    let start = Instant::now();
    while fired.load(SeqCst) < 2 {
        assert!(start.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn offline_moves_hrtimers_and_they_fire_once() {
    let (sys, clock) = manual(2);
    let fired = Arc::new(AtomicUsize::new(0));
    let f = fired.clone();
    let t = sys
        .hrtimer_on(1, ClockId::Monotonic, move |_| {
            f.fetch_add(1, SeqCst);
            HrRestart::NoRestart
        })
        .unwrap();
    t.start(ns(5 * TICK)).unwrap();
    assert_eq!(sys.offline(1).unwrap(), 1);
    assert_eq!(t.worker(), 0);
    clock.set(5);
    assert_eq!(
        sys.run_expired(1, 5).unwrap(),
        0,
        "offline worker runs nothing"
    );
    assert_eq!(sys.run_expired(0, 5).unwrap(), 1);
    // Started again while its worker is offline: routed to worker 0.
    let idle = sys
        .hrtimer_on(1, ClockId::Monotonic, |_| HrRestart::NoRestart)
        .unwrap();
    idle.start(ns(6 * TICK)).unwrap();
    assert_eq!(idle.worker(), 0);
    sys.online(1).unwrap();
    clock.set(7);
    assert_eq!(sys.run_expired(0, 7).unwrap(), 1);
    assert_eq!(fired.load(SeqCst), 1);
}

#[test]
fn shutdown_cancels_and_refuses() {
    let (sys, clock) = manual(1);
    let fired = Arc::new(AtomicUsize::new(0));
    let f = fired.clone();
    let t = sys
        .hrtimer_on(0, ClockId::Monotonic, move |_| {
            f.fetch_add(1, SeqCst);
            HrRestart::NoRestart
        })
        .unwrap();
    t.start(ns(TICK)).unwrap();
    drop(sys);
    clock.set(10);
    assert_eq!(t.start(ns(2 * TICK)), Err(TimerError::Shutdown));
    assert!(!t.is_queued());
    assert_eq!(fired.load(SeqCst), 0);
}

#[test]
fn far_and_past_expiries() {
    let (sys, clock) = manual(1);
    let fired = Arc::new(AtomicUsize::new(0));
    let f = fired.clone();
    let t = sys
        .hrtimer_on(0, ClockId::Monotonic, move |_| {
            f.fetch_add(1, SeqCst);
            HrRestart::NoRestart
        })
        .unwrap();
    t.start(ns(u64::MAX)).unwrap();
    t.start_after(Duration::MAX).unwrap();
    assert_eq!(t.expires(), Some(Ktime::MAX));
    clock.set(u64::MAX / TICK);
    sys.run_expired(0, u64::MAX / TICK).unwrap();
    assert_eq!(fired.load(SeqCst), 0);
    t.start(ns(0)).unwrap(); // in the past: fires at the next run
    sys.run_expired(0, u64::MAX / TICK).unwrap();
    assert_eq!(fired.load(SeqCst), 1);
}

#[test]
fn sleep_is_never_early_and_precise() {
    let rt = Runtime::new(1).unwrap();
    let sys = rt.system_arc();
    for ms in [1u64, 5, 20] {
        let d = Duration::from_millis(ms);
        let start = Instant::now();
        sys.sleep(d).unwrap();
        let took = start.elapsed();
        assert!(took >= d, "sleep({d:?}) returned after {took:?}");
    }
    // On a worker's own thread (inside a job), too.
    let (tx, rx) = std::sync::mpsc::channel();
    let s2 = sys.clone();
    rt.spawn(move || {
        let start = Instant::now();
        s2.sleep(Duration::from_millis(10)).unwrap();
        tx.send(start.elapsed()).unwrap();
    });
    let took = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(took >= Duration::from_millis(10));
}

#[test]
fn clock_was_set_wakes_workers_sleeping_on_realtime_timers() {
    let rt = Runtime::new(2).unwrap();
    let sys = rt.system_arc();
    assert_eq!(sys.clock_was_set(), 0, "no REALTIME timer: nobody to wake");
    let t = sys
        .hrtimer_on(1, ClockId::Realtime, |_| HrRestart::NoRestart)
        .unwrap();
    t.start(sys.clock_ns(ClockId::Realtime) + Duration::from_secs(3_600))
        .unwrap();
    let start = Instant::now();
    // Worker 1 goes to sleep until its (far) REALTIME timer: first let the
    // wake-up that the arm itself caused settle (a worker that woke, but
    // has not yet left its idle state, still reads as sleeping on the
    // timer, and a wake-up then is absorbed by the look it is about to
    // take: correct, but not countable).
    let mut before = rt.wakeups(1);
    let mut settled = Instant::now();
    while settled.elapsed() < Duration::from_millis(50) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "worker 1 never settled"
        );
        std::thread::sleep(Duration::from_millis(1));
        let now = rt.wakeups(1);
        if now != before {
            before = now;
            settled = Instant::now();
        }
    }
    // A clock set wakes it to recompute that sleep.
    loop {
        if sys.clock_was_set() == 1 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "worker 1 never slept"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    while rt.wakeups(1) == before {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "worker 1 was not woken"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(t.is_queued(), "the timer stays armed");
}
