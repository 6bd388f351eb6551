//! `Interval` as a `futures_core::Stream`, as tokio-stream's
//! `IntervalStream`: endless, each item the tick's deadline, never early;
//! exact on the paused clock. Bounds hold on a loaded machine.
#![cfg(feature = "stream")]

use futures::{Stream, StreamExt};
use std::future::Future;
use std::time::Duration;
use utimer_async::{self as time, interval, interval_at, Instant, MissedTickBehavior};

const MS: Duration = Duration::from_millis(1);
const HOUR: Duration = Duration::from_secs(3600);
/// Far beyond any lateness a loaded machine shows, far below "never".
const LATE_BOUND: Duration = Duration::from_secs(3);

/// Runs `f` under `futures`' `block_on` on a thread of its own (a paused
/// clock belongs to its thread).
fn block_on_thread<F: Future<Output = ()> + 'static>(f: impl FnOnce() -> F + Send + 'static) {
    std::thread::spawn(move || futures::executor::block_on(f()))
        .join()
        .expect("the test thread panicked");
}

#[test]
fn an_interval_streams_its_tick_deadlines_never_early() {
    futures::executor::block_on(async {
        let start = Instant::now();
        let mut ticks = interval(2 * MS);
        assert_eq!(ticks.size_hint(), (usize::MAX, None));
        let first = ticks.next().await.expect("an interval ended");
        assert!(first >= start && first - start < LATE_BOUND);
        let mut prev = first;
        for _ in 0..4 {
            let tick = ticks.next().await.expect("an interval ended");
            assert_eq!(tick - prev, 2 * MS, "not the scheduled deadline");
            assert!(Instant::now() >= tick, "a tick came early");
            assert!(Instant::now() - tick < LATE_BOUND);
            prev = tick;
        }
        assert_eq!(ticks.size_hint(), (usize::MAX, None));
    });
}

#[test]
fn an_interval_works_with_stream_combinators() {
    futures::executor::block_on(async {
        let start = Instant::now() + 3 * MS;
        let mut every = interval_at(start, MS);
        every.set_missed_tick_behavior(MissedTickBehavior::Skip);
        let ticks: Vec<Instant> = every.by_ref().take(3).collect().await;
        assert_eq!(ticks[0], start);
        assert!(ticks.windows(2).all(|w| w[1] > w[0]));
        assert!(Instant::now() >= ticks[2]);
        // Still going after `take` ended.
        assert!(every.next().await.unwrap() > ticks[2]);
    });
}

#[test]
fn an_interval_stream_follows_the_paused_clock() {
    block_on_thread(|| async {
        time::pause();
        let real = std::time::Instant::now();
        let start = Instant::now();
        let ticks: Vec<_> = interval(HOUR)
            .map(|tick| (tick - start, Instant::now() - start))
            .take(4)
            .collect()
            .await;
        let hours = |n| n * HOUR;
        assert_eq!(
            ticks,
            (0..4).map(|n| (hours(n), hours(n))).collect::<Vec<_>>()
        );
        assert!(
            real.elapsed() < Duration::from_secs(5),
            "took {:?}",
            real.elapsed()
        );
    });
}

// With `test-util`, `pause()` here is tokio's, with its millisecond ticks.
#[cfg(not(feature = "test-util"))]
#[tokio::test]
async fn an_interval_stream_under_tokio() {
    time::pause();
    let start = Instant::now();
    let mut ticks = Box::pin(interval_at(start + HOUR, 24 * HOUR).skip(1));
    assert_eq!(ticks.next().await, Some(start + 25 * HOUR));
    assert_eq!(Instant::now(), start + 25 * HOUR);
}
