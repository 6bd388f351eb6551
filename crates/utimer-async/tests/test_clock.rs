//! The paused test clock: `pause`, `resume`, `advance` and auto-advance,
//! with tokio's rules, under `futures`' `block_on` and a `current_thread`
//! tokio runtime.
//!
//! Every test runs on a thread of its own (libtest's, or one it spawns):
//! a paused clock belongs to its thread.
//!
//! Without the `test-util` feature: with it, `pause()` inside a tokio
//! runtime pauses tokio's clock, with tokio's rules (`tokio_paused.rs`).
#![cfg(not(feature = "test-util"))]

use std::future::{pending, Future};
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;
use utimer_async::{self as time, Instant, MissedTickBehavior};

const MS: Duration = Duration::from_millis(1);
const HOUR: Duration = Duration::from_secs(3600);

/// Runs `body` under `futures`' `block_on` and under a `current_thread`
/// tokio runtime, each on a fresh thread.
fn both<F, Fut>(body: F)
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()>,
{
    let body = Arc::new(body);
    let b = body.clone();
    std::thread::spawn(move || futures::executor::block_on(b()))
        .join()
        .expect("under futures' block_on");
    on_tokio(move || body());
}

/// Runs `body` on a fresh thread, in a `current_thread` tokio runtime.
fn on_tokio<T: Send + 'static, Fut: Future<Output = T>>(
    body: impl FnOnce() -> Fut + Send + 'static,
) -> T {
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(body())
    })
    .join()
    .expect("under a current_thread tokio runtime")
}

/// A waker that counts its wakes.
#[derive(Default)]
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

/// Polls `f` once with `waker`.
fn poll_once<F: Future + ?Sized>(f: Pin<&mut F>, waker: &Waker) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(waker))
}

#[test]
fn a_paused_clock_stands_still_and_advance_moves_it_exactly() {
    futures::executor::block_on(async {
        time::pause();
        let t0 = Instant::now();
        let real = std::time::Instant::now();
        while real.elapsed() < 2 * MS {}
        assert_eq!(Instant::now(), t0, "the paused clock moved by itself");
        time::advance(5 * MS).await;
        assert_eq!(Instant::now() - t0, 5 * MS);
        time::advance(Duration::from_nanos(1)).await;
        assert_eq!(Instant::now() - t0, 5 * MS + Duration::from_nanos(1));
        assert_eq!(t0.elapsed(), 5 * MS + Duration::from_nanos(1));
    });
}

#[test]
fn a_sleep_of_an_hour_auto_advances_at_once_to_the_exact_deadline() {
    both(|| async {
        time::pause();
        let real = std::time::Instant::now();
        let start = Instant::now();
        time::sleep(HOUR).await;
        assert_eq!(start.elapsed(), HOUR);
        time::sleep_until(start + 2 * HOUR).await;
        assert_eq!(Instant::now(), start + 2 * HOUR);
        assert!(
            real.elapsed() < Duration::from_secs(5),
            "{:?}",
            real.elapsed()
        );
    });
}

#[test]
fn a_timer_due_at_a_timeouts_deadline_wins() {
    both(|| async {
        time::pause();
        let start = Instant::now();
        assert_eq!(time::timeout(10 * MS, time::sleep(10 * MS)).await, Ok(()));
        assert_eq!(start.elapsed(), 10 * MS);
        let start = Instant::now();
        assert!(time::timeout(10 * MS, time::sleep(11 * MS)).await.is_err());
        assert_eq!(
            start.elapsed(),
            10 * MS,
            "the timeout fired off its deadline"
        );
        let start = Instant::now();
        assert!(time::timeout_at(start + HOUR, pending::<()>())
            .await
            .is_err());
        assert_eq!(start.elapsed(), HOUR);
    });
}

#[test]
fn advance_wakes_the_sleeps_it_passes_and_no_other() {
    futures::executor::block_on(async {
        time::pause();
        let count = Arc::new(Count::default());
        let waker = Waker::from(count.clone());
        let mut s = pin!(time::sleep(MS));
        let mut later = pin!(time::sleep(10 * MS));
        assert!(poll_once(s.as_mut(), &waker).is_pending());
        assert!(poll_once(later.as_mut(), &waker).is_pending());
        assert!(!s.is_elapsed());
        time::advance(Duration::from_micros(250)).await;
        assert_eq!(count.0.load(SeqCst), 0, "woken before its deadline");
        assert!(poll_once(s.as_mut(), &waker).is_pending());
        time::advance(Duration::from_micros(1500)).await;
        assert_eq!(count.0.load(SeqCst), 1, "the due sleep was not woken");
        assert!(s.is_elapsed(), "fired, not yet polled: elapsed (as tokio)");
        assert!(poll_once(s.as_mut(), &waker).is_ready());
        assert!(poll_once(later.as_mut(), &waker).is_pending());
        // A reset of a waiting sleep to a passed deadline wakes it at once.
        later.as_mut().reset(Instant::now());
        assert_eq!(count.0.load(SeqCst), 2);
        assert!(poll_once(later.as_mut(), &waker).is_ready());
    });
}

#[test]
fn is_elapsed_is_true_only_once_a_poll_or_a_fire_completed_it() {
    both(|| async {
        let waker = Waker::from(Arc::new(Count::default()));
        // Real clock: an unpolled sleep whose deadline passed has not
        // elapsed (tokio's answer).
        let mut s = pin!(time::sleep_until(Instant::now() - MS));
        assert!(!s.is_elapsed());
        assert!(poll_once(s.as_mut(), &waker).is_ready());
        assert!(s.is_elapsed());
        s.as_mut().reset(Instant::now() + HOUR);
        assert!(!s.is_elapsed());
        // Paused clock.
        time::pause();
        let mut p = pin!(time::sleep(MS));
        time::advance(2 * MS).await;
        assert!(!p.is_elapsed(), "never polled");
        assert!(poll_once(p.as_mut(), &waker).is_ready());
        assert!(p.is_elapsed());
    });
}

#[test]
fn the_clock_never_jumps_while_a_task_is_runnable() {
    on_tokio(|| async {
        time::pause();
        let start = Instant::now();
        let busy = tokio::spawn(async move {
            for i in 0..2000 {
                assert_eq!(Instant::now(), start, "moved at yield {i}");
                tokio::task::yield_now().await;
            }
            // Blocked in a call that is not a park: still runnable.
            std::thread::sleep(20 * MS);
            assert_eq!(
                Instant::now(),
                start,
                "moved while a task blocked in nanosleep"
            );
        });
        time::sleep(Duration::from_secs(1)).await;
        assert!(busy.is_finished(), "auto-advanced while a task could run");
        assert_eq!(start.elapsed(), Duration::from_secs(1));
        busy.await.unwrap();
    });
}

#[test]
fn other_threads_keep_real_time() {
    futures::executor::block_on(async {
        time::pause();
        let frozen = Instant::now();
        let other = std::thread::spawn(|| {
            let a = Instant::now();
            let real = std::time::Instant::now();
            futures::executor::block_on(time::sleep(20 * MS));
            assert!(
                real.elapsed() >= 20 * MS,
                "another thread's sleep ran on the paused clock"
            );
            Instant::now() - a
        });
        let elapsed = other.join().unwrap();
        assert!(elapsed >= 20 * MS, "{elapsed:?}");
        assert_eq!(Instant::now(), frozen);
    });
}

#[test]
fn pause_resume_and_advance_panic_as_tokios() {
    let msg = |r: std::thread::Result<()>| {
        let e = r.expect_err("no panic");
        e.downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| e.downcast_ref::<String>().cloned())
            .unwrap()
    };
    std::thread::spawn(move || {
        assert_eq!(
            msg(std::panic::catch_unwind(time::resume)),
            "time is not frozen"
        );
        let r = std::panic::catch_unwind(|| futures::executor::block_on(time::advance(MS)));
        assert_eq!(msg(r), "time is not frozen");
        time::pause();
        assert_eq!(
            msg(std::panic::catch_unwind(time::pause)),
            "time is already frozen"
        );
        time::resume();
        assert_eq!(
            msg(std::panic::catch_unwind(time::resume)),
            "time is not frozen"
        );
        // Paused again: the clock's reading carries on.
        time::pause();
        let r = std::panic::catch_unwind(|| {
            futures::executor::block_on(time::advance(Duration::MAX));
        });
        assert!(msg(r).contains("overflow"));
    })
    .join()
    .unwrap();
}

#[test]
fn after_resume_the_clock_runs_on_from_its_paused_reading() {
    both(|| async {
        time::pause();
        time::advance(HOUR).await;
        let t = Instant::now();
        // Waits on the paused clock, then, resumed, in real time.
        let waiting = time::sleep_until(t + 30 * MS);
        time::resume();
        let real = std::time::Instant::now();
        waiting.await;
        assert!(real.elapsed() >= 29 * MS, "{:?}", real.elapsed());
        assert!(Instant::now() >= t + 30 * MS);
        assert!(Instant::now() - t < HOUR, "the clock jumped again");
        // A new sleep counts in real time too.
        let real = std::time::Instant::now();
        let before = Instant::now();
        time::sleep(20 * MS).await;
        assert!(real.elapsed() >= 20 * MS);
        assert!(Instant::now() - before >= 20 * MS);
    });
}

#[test]
fn intervals_tick_on_exact_multiples_and_bursts_after_an_advance() {
    both(|| async {
        time::pause();
        let start = Instant::now();
        let mut every = time::interval(10 * MS);
        assert_eq!(every.tick().await, start);
        assert_eq!(every.tick().await, start + 10 * MS);
        assert_eq!(Instant::now(), start + 10 * MS);
        // Miss three ticks: Burst returns them at once, then keeps the
        // schedule.
        time::advance(35 * MS).await;
        for k in 2..=4 {
            assert_eq!(every.tick().await, start + k * 10 * MS);
        }
        assert_eq!(Instant::now(), start + 45 * MS);
        assert_eq!(every.tick().await, start + 50 * MS);
        // Skip: the next tick is the next multiple after now.
        every.set_missed_tick_behavior(MissedTickBehavior::Skip);
        time::advance(27 * MS).await;
        assert_eq!(every.tick().await, start + 60 * MS);
        assert_eq!(every.tick().await, start + 80 * MS);
    });
}

/// An hour of a service's timers: a heartbeat every second, a request
/// with a 30 s timeout retried with exponential back-off, and a
/// watchdog. Returns what happened, by the paused clock.
async fn an_hour_of_timers() -> Vec<(u64, &'static str)> {
    let start = Instant::now();
    let at = || (Instant::now() - start).as_millis() as u64;
    let mut log = Vec::new();
    let mut heartbeat = time::interval(Duration::from_secs(1));
    let mut attempt = 0u32;
    let mut retry = Box::pin(time::sleep(Duration::ZERO));
    let watchdog = time::sleep(HOUR);
    tokio::pin!(watchdog);
    let mut beats = 0;
    loop {
        tokio::select! {
            biased;
            _ = &mut watchdog => { log.push((at(), "watchdog")); break; }
            _ = heartbeat.tick() => { beats += 1; if beats % 600 == 0 { log.push((at(), "beat")); } }
            _ = &mut retry => {
                let r = time::timeout(Duration::from_secs(30), pending::<()>()).await;
                assert!(r.is_err());
                attempt += 1;
                log.push((at(), "timed out"));
                let backoff = Duration::from_secs(1 << attempt.min(10));
                retry.as_mut().reset(Instant::now() + backoff);
            }
        }
    }
    log.push((beats, "beats"));
    log
}

#[test]
fn an_hour_of_timeouts_intervals_and_retries_runs_fast_and_the_same_every_time() {
    let run = || {
        on_tokio(|| async {
            time::pause();
            let real = std::time::Instant::now();
            let log = an_hour_of_timers().await;
            (log, real.elapsed())
        })
    };
    let (a, took_a) = run();
    let (b, took_b) = run();
    assert_eq!(a, b, "the paused clock is not deterministic");
    assert_eq!(a.last().map(|e| e.1), Some("beats"));
    assert!(
        a.iter().any(|e| e.1 == "watchdog" && e.0 >= 3_600_000),
        "{a:?}"
    );
    // The first timeout fires at 30 s, the retry 2 s later, and so on.
    assert_eq!(a[0], (30_000, "timed out"));
    assert_eq!(a[1], (62_000, "timed out"));
    for took in [took_a, took_b] {
        assert!(
            took < Duration::from_secs(20),
            "an hour took {took:?} of real time"
        );
    }
}

#[test]
fn pausing_again_after_resume_carries_the_advanced_time_on() {
    futures::executor::block_on(async {
        let start = Instant::now();
        time::pause();
        time::advance(Duration::from_secs(10)).await;
        time::resume();
        assert!(Instant::now() - start >= Duration::from_secs(10));
        time::pause();
        time::advance(Duration::from_secs(10)).await;
        let total = Instant::now() - start;
        assert!(
            total >= Duration::from_secs(20) && total < Duration::from_secs(21),
            "{total:?}"
        );
        // Pausing in a task (not the executor's root future) pauses the
        // thread's clock just the same.
        time::resume();
    });
    on_tokio(|| async {
        tokio::spawn(async { time::pause() }).await.unwrap();
        let t = Instant::now();
        time::sleep(HOUR).await;
        assert_eq!(t.elapsed(), HOUR);
    });
}
