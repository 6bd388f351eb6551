//! A system whose runtime has shut down, with a handle to it kept
//! (`Runtime::system_arc`): every arm, re-arm and creation is refused with
//! `TimerError::Shutdown`, nothing it had pending reads as pending, and a
//! job sleeping on a worker wakes with the error instead of holding the
//! shutdown up.

#![cfg(not(loom))]

use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};
use utimer::{ClockId, HrRestart, ItimerSpec, Notify, Runtime, TimerError, TimerSystem};

/// A generous bound for "promptly" on a loaded machine.
const LOOSE: Duration = Duration::from_secs(10);

fn eventfd() -> OwnedFd {
    // SAFETY: eventfd takes two integers; a non-negative result is a new
    // descriptor that nothing else owns.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    assert!(fd >= 0, "eventfd: {}", std::io::Error::last_os_error());
    // SAFETY: as above: ours alone.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

#[test]
fn arming_after_the_runtime_shut_down_is_refused_and_nothing_reads_as_pending() {
    let rt = Runtime::new(1).unwrap();
    let sys = rt.system_arc();
    let fired = Arc::new(AtomicU64::new(0));
    let f = fired.clone();
    let t = sys.timer(move |_| {
        f.fetch_add(1, SeqCst);
    });
    t.modify(Duration::from_secs(60)).unwrap();
    let idle = sys.timer(|_| unreachable!("a timer of a shut-down system never fires"));
    let hr = sys.hrtimer(ClockId::Monotonic, |_| HrRestart::NoRestart);
    hr.start_after(Duration::from_secs(60)).unwrap();
    let posix = sys.posix();
    let id = posix
        .timer_create(ClockId::Monotonic, Notify::None)
        .unwrap();
    posix
        .timer_settime(id, false, ItimerSpec::once(Duration::from_secs(60)))
        .unwrap();
    assert!(t.is_pending() && hr.is_queued() && !sys.is_shut_down());

    rt.shutdown();

    assert!(sys.is_shut_down());
    // What was pending is cancelled, and says so.
    assert!(!t.is_pending(), "a cancelled timer reads as not pending");
    assert!(!hr.is_queued());
    assert_eq!(posix.timer_gettime(id).unwrap(), ItimerSpec::default());
    // Every arm, re-arm and creation that can fail does.
    let refused = Err(TimerError::Shutdown);
    assert_eq!(t.modify(Duration::from_millis(5)), refused);
    assert_eq!(idle.modify(Duration::from_millis(5)), refused);
    assert_eq!(
        idle.add(Duration::from_millis(5)),
        Err(TimerError::Shutdown)
    );
    assert_eq!(
        idle.add_on(0, Duration::from_millis(5)),
        Err(TimerError::Shutdown)
    );
    assert_eq!(idle.reduce(Duration::from_millis(5)), refused);
    assert!(!t.is_pending() && !idle.is_pending());
    assert_eq!(
        hr.start_after(Duration::from_millis(5)),
        Err(TimerError::Shutdown)
    );
    assert!(!hr.is_queued());
    let fresh = sys.hrtimer(ClockId::Monotonic, |_| HrRestart::NoRestart);
    assert_eq!(
        fresh.start_after(Duration::from_millis(5)),
        Err(TimerError::Shutdown)
    );
    assert_eq!(
        sys.hrtimer_on(0, ClockId::Monotonic, |_| HrRestart::NoRestart)
            .err(),
        Some(TimerError::Shutdown)
    );
    assert_eq!(
        sys.sleep(Duration::from_millis(1)),
        Err(TimerError::Shutdown)
    );
    assert_eq!(
        sys.sleeper().sleep(Duration::from_millis(1)),
        Err(TimerError::Shutdown)
    );
    assert_eq!(
        sys.register_worker(0, || {}).err(),
        Some(TimerError::Shutdown)
    );
    // POSIX timers: creating and arming are refused; disarming, reading
    // and deleting still work.
    assert_eq!(
        posix.timer_create(ClockId::Monotonic, Notify::None),
        Err(TimerError::Shutdown)
    );
    assert_eq!(
        posix.timerfd_create(ClockId::Monotonic, eventfd()),
        Err(TimerError::Shutdown)
    );
    assert_eq!(
        posix.timer_settime(id, false, ItimerSpec::once(Duration::from_millis(5))),
        Err(TimerError::Shutdown)
    );
    posix
        .timer_settime(id, false, ItimerSpec::default())
        .unwrap();
    posix.timer_delete(id).unwrap();
    assert_eq!(posix.timer_delete(id), Err(TimerError::NoSuchTimer));
    assert_eq!(fired.load(SeqCst), 0);
    assert_eq!(TimerError::Shutdown.errno(), libc::ESHUTDOWN);
}

#[test]
fn a_job_sleeping_on_its_worker_wakes_at_shutdown() {
    let rt = Runtime::new(1).unwrap();
    let sys = rt.system_arc();
    let (started_tx, started_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel();
    rt.spawn(move || {
        started_tx.send(()).unwrap();
        done_tx.send(sys.sleep(Duration::from_secs(3600))).unwrap();
    });
    started_rx.recv_timeout(LOOSE).unwrap();
    let (shut_tx, shut_rx) = mpsc::channel();
    let start = Instant::now();
    thread::spawn(move || {
        rt.shutdown();
        shut_tx.send(()).unwrap();
    });
    shut_rx
        .recv_timeout(LOOSE)
        .expect("shutdown waited for a job's hour-long sleep");
    assert!(start.elapsed() < LOOSE);
    assert_eq!(
        done_rx.recv_timeout(LOOSE).unwrap(),
        Err(TimerError::Shutdown)
    );
}

#[test]
fn a_system_shut_down_by_hand_refuses_timers_and_stops_its_monitor() {
    let sys = Arc::new(TimerSystem::without_threads(2));
    let t = sys.timer(|_| unreachable!("cancelled at shutdown"));
    t.modify(Duration::from_millis(50)).unwrap();
    let monitor = {
        let sys = sys.clone();
        thread::spawn(move || sys.run_monitor())
    };
    sys.shutdown();
    sys.shutdown(); // idempotent
    assert!(sys.is_shut_down() && !t.is_pending());
    assert_eq!(
        t.modify(Duration::from_millis(5)),
        Err(TimerError::Shutdown)
    );
    let start = Instant::now();
    while !monitor.is_finished() {
        assert!(start.elapsed() < LOOSE, "the monitor kept running");
        thread::sleep(Duration::from_millis(1));
    }
    monitor.join().unwrap();
    // Expiry runs on a shut-down system find nothing and fail nothing.
    assert_eq!(sys.run_expired(0, u64::MAX), Ok(0));
}
