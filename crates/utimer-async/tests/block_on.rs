//! Under `futures::executor::block_on`, with hand-made wakers, and on
//! explicit handles.

mod common;

use common::*;
use futures::executor::block_on;
use std::future::{pending, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Wake, Waker};
use std::time::Duration;
use utimer::Runtime;
use utimer_async::Instant;
use utimer_async::{Elapsed, Handle, MissedTickBehavior};

#[test]
fn sleep_timeout_reset() {
    block_on(async {
        sleep_never_early().await;
        timeout_fires_and_passes_through().await;
        reset_moves_the_deadline().await;
        drop_is_prompt().await;
    });
}

#[test]
fn intervals() {
    block_on(async {
        interval_ticks_at_multiples().await;
        missed_tick_behaviours().await;
    });
}

#[test]
fn ten_thousand_sleeps() {
    let start = Instant::now();
    block_on(futures::future::join_all((0..10_000).map(one_of_many)));
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}

#[derive(Default)]
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, SeqCst);
    }
}

fn flag() -> (Arc<Flag>, Waker) {
    let f = Arc::new(Flag::default());
    (f.clone(), Waker::from(f))
}

/// Waits (bounded) until `f` is raised.
fn wait_for(f: &Flag) -> bool {
    let until = Instant::now() + LATE_BOUND;
    while !f.0.load(SeqCst) {
        if Instant::now() > until {
            return false;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    true
}

/// Polls `fut` with waker A, then B: B is woken at the deadline, A is not.
fn check_waker_change<F: Future + Unpin>(mut fut: F) {
    let (a, wa) = flag();
    let (b, wb) = flag();
    assert!(Pin::new(&mut fut)
        .poll(&mut Context::from_waker(&wa))
        .is_pending());
    assert!(Pin::new(&mut fut)
        .poll(&mut Context::from_waker(&wb))
        .is_pending());
    assert!(wait_for(&b), "waker B never woken");
    assert!(!a.0.load(SeqCst), "the replaced waker A was woken");
    let mut ready = false;
    for _ in 0..1000 {
        if Pin::new(&mut fut)
            .poll(&mut Context::from_waker(&wb))
            .is_ready()
        {
            ready = true;
            break;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    assert!(ready, "woken but not ready");
}

/// 200 ms deadlines: both polls must come before the deadline, which a
/// loaded machine (the whole test suite at once) can delay by milliseconds.
#[test]
fn waker_change_between_polls() {
    check_waker_change(Box::pin(utimer_async::sleep(Duration::from_millis(200))));
    check_waker_change(Box::pin(utimer_async::timeout(
        Duration::from_millis(200),
        pending::<()>(),
    )));
    let mut iv = utimer_async::interval(Duration::from_millis(200));
    block_on(iv.tick());
    check_waker_change(Box::pin(iv.tick()));
}

#[test]
fn explicit_handle_and_prompt_cancel() {
    let rt = Runtime::new(2).unwrap();
    let h = Handle::from_runtime(&rt);
    block_on(async {
        let start = Instant::now();
        h.sleep(Duration::from_millis(3)).await;
        assert!(start.elapsed() >= Duration::from_millis(3));
        h.sleep_until(start + Duration::from_millis(5)).await;
        assert!(start.elapsed() >= Duration::from_millis(5));
        let r = h.timeout(Duration::from_millis(2), pending::<()>()).await;
        assert!(r.is_err());
        let deadline = Instant::now() + Duration::from_millis(2);
        assert!(h.timeout_at(deadline, pending::<()>()).await.is_err());
        assert!(Instant::now() >= deadline);
        let at = Instant::now() + Duration::from_millis(1);
        let mut iv = h.interval_at(at, Duration::from_millis(1));
        iv.set_missed_tick_behavior(MissedTickBehavior::Delay);
        assert_eq!(iv.tick().await, at);
        assert!(h.interval(Duration::from_secs(1)).tick().await <= Instant::now());
    });
    // A dropped pending sleep leaves no queued hrtimer behind.
    let pending_hr = || {
        (0..rt.system().workers())
            .map(|w| rt.system().metrics().hr_stats(w).unwrap().pending)
            .sum::<usize>()
    };
    let mut sleeps: Vec<_> = (0..100)
        .map(|_| Box::pin(h.sleep(Duration::from_secs(60))))
        .collect();
    let (_f, w) = flag();
    for s in &mut sleeps {
        assert!(s.as_mut().poll(&mut Context::from_waker(&w)).is_pending());
    }
    assert_eq!(pending_hr(), 100);
    let at = Instant::now();
    drop(sleeps);
    assert!(at.elapsed() < Duration::from_millis(100));
    assert_eq!(pending_hr(), 0);
    assert!(format!("{h:?}").contains("workers"));
}

#[test]
fn elapsed_is_an_error() {
    fn is_error<E: std::error::Error + Send + Sync + 'static>(_: &E) {}
    let e = block_on(utimer_async::timeout(Duration::ZERO, pending::<()>())).unwrap_err();
    is_error(&e);
    let io: std::io::Error = e.into();
    assert_eq!(io.kind(), std::io::ErrorKind::TimedOut);
    let _: Elapsed = e;
}

#[test]
fn futures_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<utimer_async::Sleep>();
    send_sync::<utimer_async::Interval>();
    send_sync::<utimer_async::Timeout<std::future::Ready<()>>>();
    send_sync::<Handle>();
}

/// A sleep whose runtime shuts down is woken, and its poll panics (as
/// tokio's does once its time driver is gone) rather than staying pending
/// for ever; so does a sleep made afterwards.
#[test]
fn a_sleep_of_a_runtime_that_shut_down_wakes_and_panics() {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    let rt = Runtime::new(1).unwrap();
    let h = Handle::from_runtime(&rt);
    let mut s = Box::pin(h.sleep(Duration::from_secs(3600)));
    let (woken, w) = flag();
    assert!(s.as_mut().poll(&mut Context::from_waker(&w)).is_pending());
    rt.shutdown();
    assert!(h.system().is_shut_down());
    assert!(wait_for(&woken), "the shutdown woke the sleep's task");
    let polled = catch_unwind(AssertUnwindSafe(|| {
        let _ = s.as_mut().poll(&mut Context::from_waker(&w));
    }));
    let message = polled.expect_err("the poll panics");
    let message = message
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(message.contains("shut down"), "{message}");
    let mut late = Box::pin(h.sleep(Duration::from_millis(1)));
    let polled = catch_unwind(AssertUnwindSafe(|| {
        let _ = late.as_mut().poll(&mut Context::from_waker(&w));
    }));
    assert!(
        polled.is_err(),
        "a sleep made after the shutdown panics too"
    );
}
