//! On a system with a manual clock and no worker threads: time moves only
//! when the test advances it, so "never early" is checked to the tick.

use std::future::{pending, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;
use utimer::{Clock, TimerSystem};
use utimer_async::Handle;
use utimer_async::Instant;

#[derive(Default)]
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, SeqCst);
    }
}

struct Setup {
    clock: Clock,
    sys: Arc<TimerSystem>,
    handle: Handle,
    flag: Arc<Flag>,
    waker: Waker,
}

fn setup() -> Setup {
    let clock = Clock::manual();
    let sys = Arc::new(
        TimerSystem::builder()
            .workers(1)
            .clock(clock.clone())
            .build_without_threads(),
    );
    let handle = Handle::new(sys.clone());
    let flag = Arc::new(Flag::default());
    let waker = Waker::from(flag.clone());
    Setup {
        clock,
        sys,
        handle,
        flag,
        waker,
    }
}

impl Setup {
    /// Moves the clock `ms` ticks (1 ms each) and runs the worker's expiry.
    fn advance(&self, ms: u64) {
        self.clock.advance(ms);
        self.sys.run_expired(0, self.sys.now()).unwrap();
    }

    fn poll<F: Future + Unpin>(&self, f: &mut F) -> bool {
        Pin::new(f)
            .poll(&mut Context::from_waker(&self.waker))
            .is_ready()
    }

    fn hr_pending(&self) -> usize {
        self.sys.metrics().hr_stats(0).unwrap().pending
    }
}

/// Deadlines are 10 s of real time away, so the test's own speed never
/// matters: only the manual clock moves the timers. The handle ties an
/// `Instant` to the manual clock once, when it is made, so a deadline
/// `FAR` after a later `Instant::now()` is at least `FAR` of manual time
/// away, and a little more (the real time between the two).
const FAR: Duration = Duration::from_secs(10);

impl Setup {
    /// Advances 1 ms at a time until the waker is raised; returns how many.
    fn advance_until_woken(&self, max: u64) -> u64 {
        for n in 1..=max {
            self.advance(1);
            if self.flag.0.swap(false, SeqCst) {
                return n;
            }
        }
        panic!("not woken within {max} ms");
    }
}

#[test]
fn sleep_never_early_in_manual_time() {
    let s = setup();
    let mut sleep = Box::pin(s.handle.sleep(FAR));
    assert!(!s.poll(&mut sleep));
    assert_eq!(s.hr_pending(), 1);
    let n = s.advance_until_woken(11_000);
    assert!(n >= 10_000, "woken after {n} ms");
    assert!(s.poll(&mut sleep));
    assert!(sleep.is_elapsed());
    assert_eq!(s.hr_pending(), 0);
}

#[test]
fn reset_later_then_earlier_than_what_fired() {
    let s = setup();
    let mut sleep = Box::pin(s.handle.sleep(FAR));
    assert!(!s.poll(&mut sleep));
    // Later: the old deadline passes and completes nothing.
    let later = sleep.deadline() + Duration::from_secs(5);
    sleep.as_mut().reset(later);
    let n = s.advance_until_woken(16_000);
    assert!(n >= 15_000, "woken after {n} ms");
    assert!(s.poll(&mut sleep));
    assert_eq!(s.hr_pending(), 0);
    // Later again, then back earlier than what already fired: complete at
    // once, and no expiry stays queued.
    sleep
        .as_mut()
        .reset(Instant::now() + Duration::from_secs(60));
    assert!(!s.poll(&mut sleep));
    assert_eq!(s.hr_pending(), 1);
    sleep.as_mut().reset(Instant::now());
    assert!(s.poll(&mut sleep));
    assert_eq!(s.hr_pending(), 0);
}

#[test]
fn timeout_never_early_in_manual_time() {
    let s = setup();
    let mut t = Box::pin(s.handle.timeout(FAR, pending::<()>()));
    assert!(!s.poll(&mut t));
    assert_eq!(s.hr_pending(), 1);
    s.advance(9_000);
    assert!(!s.poll(&mut t), "early");
    // An hrtimer: woken at the first millisecond of manual time at or
    // after the deadline, which is FAR after `setup` plus the real time
    // between the two (far under 200 ms even on a loaded machine; a wheel
    // timer at this distance could be up to 1.25 s late).
    let n = s.advance_until_woken(3_000);
    assert!((1_000..=1_200).contains(&n), "woken {n} ms after 9 s");
    assert!(s.poll(&mut t));
    assert_eq!(s.hr_pending(), 0);
}

#[test]
fn interval_restarts_one_timer() {
    let s = setup();
    let start = Instant::now() + FAR;
    let period = Duration::from_millis(10);
    let mut iv = s.handle.interval_at(start, period);
    let mut cx = Context::from_waker(&s.waker);
    assert!(iv.poll_tick(&mut cx).is_pending());
    s.advance_until_woken(11_000);
    // Ticks return their scheduled instants; the (real) clock is far
    // behind them, so no tick counts as missed.
    assert_eq!(iv.poll_tick(&mut cx), Poll::Ready(start));
    for k in 1..4u32 {
        assert!(iv.poll_tick(&mut cx).is_pending());
        assert_eq!(s.hr_pending(), 1);
        // The clock is less than 1 ms past the last tick: 9 ms is short.
        assert_eq!(s.advance_until_woken(10), 10, "tick {k}");
        assert_eq!(iv.poll_tick(&mut cx), Poll::Ready(start + k * period));
    }
    drop(iv);
    assert_eq!(s.hr_pending(), 0);
}
