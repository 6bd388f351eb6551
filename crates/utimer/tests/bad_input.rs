//! Bad input gets a clear error or a documented result: no panic, no
//! overflow, nothing lost.

#![cfg(not(loom))]

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use utimer::wheel::MAX_DELTA;
use utimer::{Clock, Expiry, TimerError, TimerSystem};

mod common;
use common::{counter, manual};

#[test]
fn past_expiry_fires_at_the_next_run() {
    let (sys, clock) = manual(1);
    clock.set(1000);
    sys.run_expired(0, 1000).unwrap();
    let (n, f) = counter();
    let t = sys.timer(f);
    t.modify(Expiry::Tick(3)).unwrap();
    // The same `now` as the last run: the past timer still fires.
    assert_eq!(sys.run_expired(0, 1000).unwrap(), 1);
    assert_eq!(n.load(Ordering::Relaxed), 1);
}

#[test]
fn huge_expiries_clamp_to_the_wheel_range() {
    let (sys, clock) = manual(1);
    let (n, f) = counter();
    let t = sys.timer(f);
    t.modify(Expiry::Tick(u64::MAX)).unwrap();
    assert_eq!(t.expires(), MAX_DELTA);
    let fires = t.fires_at().unwrap();
    assert!(fires >= MAX_DELTA);
    assert_eq!(sys.run_expired(0, fires - 1).unwrap(), 0);
    clock.set(fires);
    assert_eq!(sys.run_expired(0, u64::MAX).unwrap(), 1);
    assert_eq!(n.load(Ordering::Relaxed), 1);

    t.modify(Duration::MAX).unwrap();
    assert!(t.is_pending());
    assert!(t.reduce(Expiry::Tick(u64::MAX)).unwrap());
    let sys2 = TimerSystem::without_threads(1);
    let t2 = sys2.timer(|_| {});
    t2.modify(Duration::MAX).unwrap();
    t2.modify(std::time::Instant::now() + Duration::from_secs(1 << 40))
        .unwrap();
    assert!(t2.delete());
}

#[test]
fn timer_outliving_its_system_is_inert() {
    let (sys, _clock) = manual(2);
    let (n, f) = counter();
    let t = sys.timer(f);
    t.modify(Expiry::Tick(10)).unwrap();
    drop(sys);
    assert!(!t.is_pending(), "pending timers are cancelled at shutdown");
    assert_eq!(t.modify(Expiry::Tick(20)), Err(TimerError::Shutdown));
    assert_eq!(t.add(Expiry::Tick(20)), Err(TimerError::Shutdown));
    assert_eq!(t.add_on(1, Expiry::Tick(20)), Err(TimerError::Shutdown));
    assert!(!t.delete());
    assert_eq!(n.load(Ordering::Relaxed), 0);
    drop(t);
}

#[test]
fn errors_for_misuse() {
    let (sys, _clock) = manual(2);
    let t = sys.timer(|_| {});
    assert_eq!(
        t.add_on(2, Expiry::Tick(5)),
        Err(TimerError::NoSuchWorker { worker: 2 })
    );
    t.add(Expiry::Tick(5)).unwrap();
    assert_eq!(t.add(Expiry::Tick(6)), Err(TimerError::AlreadyPending));
    assert_eq!(t.expires(), 5, "a refused add changes nothing");
    assert!(sys.enter(7).is_err());
    assert!(sys.run_expired(2, 0).is_err());
    assert!(sys.next_expiry(9).is_err());
    assert!(sys
        .metrics()
        .base_stats(9, utimer::BaseKind::Local)
        .is_err());
    assert_eq!(
        TimerError::NoSuchWorker { worker: 2 }.to_string(),
        "no worker 2: worker indices start at 0 and stay below the system's worker count"
    );
}

#[test]
fn panicking_callback_does_not_poison_the_base() {
    let (sys, clock) = manual(1);
    let bad = sys.timer(|_| panic!("callback failure (expected by this test)"));
    let (n, f) = counter();
    let good = sys.timer(f);
    bad.modify(Expiry::Tick(5)).unwrap();
    good.modify(Expiry::Tick(5)).unwrap();
    clock.set(5);
    assert_eq!(sys.run_expired(0, 5).unwrap(), 2);
    assert_eq!(n.load(Ordering::Relaxed), 1);
    let s = sys.metrics().totals();
    assert_eq!((s.panicked, s.fired), (1, 2));
    // The base still works.
    bad.modify(Expiry::Tick(9)).unwrap();
    good.modify(Expiry::Tick(9)).unwrap();
    clock.set(9);
    assert_eq!(sys.run_expired(0, 9).unwrap(), 2);
    assert_eq!(sys.metrics().totals().panicked, 2);
}

#[test]
fn the_panic_hook_is_told_and_may_panic_itself() {
    let clock = Clock::manual();
    let seen: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
    let s = seen.clone();
    let sys = TimerSystem::builder()
        .workers(1)
        .clock(clock.clone())
        .on_callback_panic(move |payload| {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|m| m.to_string())
                .unwrap_or_default();
            s.lock().unwrap().push(msg);
            panic!("the hook fails too (expected by this test)");
        })
        .build_without_threads();
    let bad = sys.timer(|_| panic!("boom (expected by this test)"));
    let (n, f) = counter();
    let good = sys.timer(f);
    bad.modify(Expiry::Tick(2)).unwrap();
    good.modify(Expiry::Tick(2)).unwrap();
    clock.set(2);
    assert_eq!(sys.run_expired(0, 2).unwrap(), 2);
    assert_eq!(
        *seen.lock().unwrap(),
        vec!["boom (expected by this test)".to_string()]
    );
    assert_eq!(n.load(Ordering::Relaxed), 1);
    assert_eq!(sys.metrics().totals().panicked, 1);
}

#[test]
#[cfg_attr(
    miri,
    ignore = "starts a Runtime: its threads' timed sleeps and clock watcher (timerfd) are beyond Miri"
)]
fn worker_counts_are_checked_before_any_thread_starts() {
    use std::io::ErrorKind;
    use utimer::{Runtime, MAX_WORKERS};
    let per_cpu = TimerSystem::builder().worker_count();
    assert!(per_cpu >= 1);
    // 0 means one per CPU, in every API.
    assert_eq!(TimerSystem::builder().workers(0).worker_count(), per_cpu);
    assert_eq!(TimerSystem::without_threads(0).workers(), per_cpu);
    let rt = Runtime::new(0).unwrap();
    assert_eq!(rt.system().workers(), per_cpu);
    drop(rt);
    // Above the maximum: refused at once (no thread starts: the call
    // returns in far less time than starting them would take).
    for n in [MAX_WORKERS + 1, 70_000, 1_000_000, usize::MAX] {
        let start = std::time::Instant::now();
        let e = Runtime::new(n).expect_err("too many workers");
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{n}: {e}");
        let inner = e
            .get_ref()
            .and_then(|e| e.downcast_ref::<TimerError>())
            .copied();
        let requested = u32::try_from(n).unwrap_or(u32::MAX);
        assert_eq!(inner, Some(TimerError::TooManyWorkers { requested }));
        assert!(start.elapsed() < Duration::from_secs(2), "{n}: slow");
        assert_eq!(
            TimerSystem::builder()
                .workers(n)
                .try_build_without_threads()
                .err(),
            Some(TimerError::TooManyWorkers { requested })
        );
    }
    let e = TimerError::TooManyWorkers { requested: 70_000 };
    assert_eq!(e.errno(), libc::EINVAL);
    assert!(
        e.to_string().contains(&format!("at most {MAX_WORKERS} ")),
        "{e}"
    );
    // The maximum itself is a system (without threads here).
    let sys = TimerSystem::builder()
        .workers(MAX_WORKERS)
        .try_build_without_threads()
        .unwrap();
    assert_eq!(sys.workers(), MAX_WORKERS);
}

#[test]
fn real_time_priorities_out_of_range_are_refused() {
    let sys = TimerSystem::without_threads(1);
    for p in [500, 100, 0, -5, i32::MIN, i32::MAX] {
        assert_eq!(
            sys.serve_realtime(p),
            Err(TimerError::InvalidArgument),
            "priority {p}"
        );
    }
    assert_eq!(
        sys.realtime_priority(),
        0,
        "a refused priority changes nothing"
    );
    // A valid one is served (raised if the process may, else 0).
    let got = sys.serve_realtime(10).unwrap();
    assert!(got == 0 || got == 10, "{got}");
}
