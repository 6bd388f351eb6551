//! The scenarios every executor's test file runs. Bounds hold on a loaded
//! machine: never early is exact, lateness bounds are generous.
#![allow(dead_code)]

use std::future::{pending, poll_fn, Future};
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;
use utimer_async::Instant;
use utimer_async::{
    interval_at, sleep, sleep_until, timeout, timeout_at, Elapsed, MissedTickBehavior,
};

pub(crate) const MS: Duration = Duration::from_millis(1);

/// Far beyond any lateness a loaded machine shows, far below "never".
pub(crate) const LATE_BOUND: Duration = Duration::from_secs(3);

/// Polls `f` once with the task's own waker.
pub(crate) async fn poll_once<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    poll_fn(|cx| Poll::Ready(Pin::new(&mut *f).poll(cx))).await
}

pub(crate) async fn sleep_never_early() {
    for d in [0, 1, 2, 5, 10].map(|ms| ms * MS) {
        let start = Instant::now();
        let s = sleep(d);
        assert!(s.deadline() - start >= d);
        s.await;
        let took = start.elapsed();
        assert!(took >= d, "slept {took:?} < {d:?}");
        assert!(took < d + LATE_BOUND, "slept {took:?} for {d:?}");
    }
    let deadline = Instant::now() + 3 * MS;
    let s = sleep_until(deadline);
    assert!(!s.is_elapsed());
    s.await;
    assert!(Instant::now() >= deadline);
    // A deadline already passed completes at once.
    sleep_until(Instant::now() - MS).await;
}

pub(crate) async fn timeout_fires_and_passes_through() {
    let start = Instant::now();
    let r = timeout(5 * MS, pending::<()>()).await;
    let e: Elapsed = r.unwrap_err();
    assert_eq!(e.to_string(), "deadline has elapsed");
    let took = start.elapsed();
    assert!(took >= 5 * MS, "timed out after {took:?}");
    assert!(took < 5 * MS + LATE_BOUND);

    let deadline = Instant::now() + 3 * MS;
    assert!(timeout_at(deadline, pending::<()>()).await.is_err());
    assert!(Instant::now() >= deadline);

    // Ready at once: passes through, even with a zero timeout.
    assert_eq!(timeout(Duration::from_secs(60), async { 42 }).await, Ok(42));
    assert_eq!(timeout(Duration::ZERO, async { 43 }).await, Ok(43));
    // Ready later, well before the deadline.
    let start = Instant::now();
    let r = timeout(Duration::from_secs(60), async {
        sleep(2 * MS).await;
        44
    })
    .await;
    assert_eq!(r, Ok(44));
    assert!(start.elapsed() < LATE_BOUND);
}

pub(crate) async fn reset_moves_the_deadline() {
    // Later, after the timer was armed by a poll.
    let start = Instant::now();
    let mut s = Box::pin(sleep(2 * MS));
    assert!(poll_once(&mut s).await.is_pending());
    s.as_mut().reset(start + 20 * MS);
    assert_eq!(s.deadline(), start + 20 * MS);
    (&mut s).await;
    assert!(
        start.elapsed() >= 20 * MS,
        "reset later: {:?}",
        start.elapsed()
    );
    assert!(s.is_elapsed());

    // Earlier: a 60 s sleep made to end in 2 ms.
    let start = Instant::now();
    let mut s = Box::pin(sleep(Duration::from_secs(60)));
    assert!(poll_once(&mut s).await.is_pending());
    s.as_mut().reset(start + 2 * MS);
    (&mut s).await;
    let took = start.elapsed();
    assert!(
        took >= 2 * MS && took < LATE_BOUND,
        "reset earlier: {took:?}"
    );

    // After completion: pending again until the new deadline.
    let again = Instant::now() + 3 * MS;
    s.as_mut().reset(again);
    assert!(!s.is_elapsed());
    (&mut s).await;
    assert!(Instant::now() >= again);

    // Before the first poll (no timer yet).
    let start = Instant::now();
    let mut s = Box::pin(sleep(Duration::from_secs(60)));
    s.as_mut().reset(start + MS);
    s.await;
    assert!(start.elapsed() >= MS);
}

pub(crate) async fn interval_ticks_at_multiples() {
    let period = 2 * MS;
    let start = Instant::now() + MS;
    let mut iv = interval_at(start, period);
    assert_eq!(iv.period(), period);
    for k in 0..6u32 {
        let t = iv.tick().await;
        assert_eq!(t, start + k * period);
        assert!(Instant::now() >= t, "tick {k} early");
    }
    // `interval` ticks at once first.
    let before = Instant::now();
    let mut iv = utimer_async::interval(Duration::from_secs(60));
    let t = iv.tick().await;
    assert!(t >= before && before.elapsed() < LATE_BOUND);
}

/// Blocks the thread (the executor with it) until `until`.
fn stall_until(until: Instant) {
    while Instant::now() < until {
        std::thread::sleep(until - Instant::now());
    }
}

/// Ticks after a stall of 3.5 periods, for each behaviour.
pub(crate) async fn missed_ticks(behavior: MissedTickBehavior) {
    let period = 10 * MS;
    let start = Instant::now();
    let mut iv = interval_at(start, period);
    iv.set_missed_tick_behavior(behavior);
    assert_eq!(iv.missed_tick_behavior(), behavior);
    assert_eq!(iv.tick().await, start);
    stall_until(start + 35 * MS);
    // The tick due at 10 ms, returned at least 25 ms late.
    let before = Instant::now();
    assert_eq!(iv.tick().await, start + period);
    let after = Instant::now();
    match behavior {
        MissedTickBehavior::Burst => {
            // The schedule never moves: ticks 20 and 30 (and any other
            // passed by now) complete at once, then 40, 50 on time.
            let mut burst = 0;
            for k in 2..6u32 {
                let t0 = Instant::now();
                let t = iv.tick().await;
                assert_eq!(t, start + k * period);
                assert!(Instant::now() >= t);
                if t <= t0 {
                    burst += 1;
                }
            }
            assert!(burst >= 2, "burst {burst}");
        }
        MissedTickBehavior::Delay => {
            // Restarted from the late tick's return: a period after it.
            let next = iv.tick().await;
            assert!(
                next >= before + period && next <= after + period,
                "delay: {next:?}"
            );
            assert!(Instant::now() >= next);
            // A period later; more if that tick was itself late (load).
            let later = iv.tick().await;
            assert!(later >= next + period, "delay: {:?}", later - next);
        }
        MissedTickBehavior::Skip => {
            // The next multiple of the period after the late return.
            let next = iv.tick().await;
            let offset = next - start;
            assert_eq!(offset.as_nanos() % period.as_nanos(), 0, "skip: {offset:?}");
            assert!(next > before && next <= after + period, "skip: {offset:?}");
            assert!(offset >= 40 * MS);
            assert!(Instant::now() >= next);
            // On the schedule: the next multiple (later ones if that tick
            // was itself late, under load).
            let later = iv.tick().await;
            assert!(later >= next + period, "skip: {:?}", later - next);
            assert_eq!((later - start).as_nanos() % period.as_nanos(), 0);
        }
    }
}

/// The three behaviours.
pub(crate) async fn missed_tick_behaviours() {
    missed_ticks(MissedTickBehavior::Burst).await;
    missed_ticks(MissedTickBehavior::Delay).await;
    missed_ticks(MissedTickBehavior::Skip).await;
}

/// One sleep of a crowd: `i` picks its length, 1–20 ms.
pub(crate) async fn one_of_many(i: usize) {
    let d = Duration::from_micros(1_000 + (i as u64 * 7_919) % 19_000);
    let start = Instant::now();
    sleep(d).await;
    assert!(start.elapsed() >= d);
}

/// Dropping armed futures returns at once.
pub(crate) async fn drop_is_prompt() {
    let mut s = Box::pin(sleep(Duration::from_secs(60)));
    assert!(poll_once(&mut s).await.is_pending());
    let mut t = Box::pin(timeout(Duration::from_secs(60), pending::<()>()));
    assert!(poll_once(&mut t).await.is_pending());
    let mut iv = utimer_async::interval(Duration::from_secs(60));
    iv.tick().await;
    let at = Instant::now();
    drop(s);
    drop(t);
    drop(iv);
    assert!(
        at.elapsed() < Duration::from_millis(100),
        "{:?}",
        at.elapsed()
    );
}
