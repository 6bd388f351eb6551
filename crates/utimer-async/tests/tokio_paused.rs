//! Under a tokio runtime whose clock is paused, with no call of ours:
//! `#[tokio::test(start_paused = true)]`, `Builder::start_paused(true)` and
//! `tokio::time::pause()`/`advance()`/`resume()` drive utimer-async's
//! timers exactly as they drive tokio's, and `Instant::now()` reads that
//! clock. A pause ends with its runtime. (tokio's `test-util` is on in
//! these tests, as in any user's test that pauses tokio's clock.) Built
//! with the `tokio` and `delay-queue` features (CI: `--features
//! test-util,stream,delay-queue`).
#![cfg(all(feature = "tokio", feature = "delay-queue"))]

use std::future::{pending, poll_fn, Future};
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use utimer_async::{self as time, DelayQueue, Instant};

const MS: Duration = Duration::from_millis(1);
const SEC: Duration = Duration::from_secs(1);

/// Polls once with a no-op waker.
fn poll_once<F: Future>(f: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    f.poll(&mut Context::from_waker(Waker::noop()))
}

fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_30_s_timeout_under_start_paused_takes_milliseconds() {
    let real = std::time::Instant::now();
    let start = Instant::now();
    let tokio_start = tokio::time::Instant::now();
    assert!(time::timeout(30 * SEC, pending::<()>()).await.is_err());
    let ours = start.elapsed();
    tokio::time::timeout(30 * SEC, pending::<()>())
        .await
        .unwrap_err();
    let theirs = tokio_start.elapsed() - ours;
    // tokio's paused timers fire at the first millisecond tick at or after
    // their deadline: ours, delegated, do the same.
    assert!(ours >= 30 * SEC && ours < 30 * SEC + MS, "{ours:?}");
    assert!(theirs >= 30 * SEC && theirs < 30 * SEC + MS, "{theirs:?}");
    assert!(
        real.elapsed() < SEC,
        "took {:?} of real time",
        real.elapsed()
    );
}

#[tokio::test(start_paused = true)]
async fn instant_now_reads_tokios_paused_clock() {
    let a = Instant::now();
    assert_eq!(a, Instant::from(tokio::time::Instant::now()));
    std::thread::sleep(2 * MS);
    assert_eq!(Instant::now(), a, "the paused clock moved by itself");
    tokio::time::advance(5 * SEC).await;
    assert_eq!(Instant::now() - a, 5 * SEC);
    // Another thread keeps real time.
    let elsewhere = std::thread::spawn(Instant::now).join().unwrap();
    assert!(elsewhere < a + SEC, "another thread read the paused clock");
}

#[tokio::test(start_paused = true)]
async fn tokio_advance_completes_what_is_due() {
    let mut due = pin!(time::sleep(10 * MS));
    let mut later = pin!(time::sleep(11 * MS));
    assert!(poll_once(due.as_mut()).is_pending());
    assert!(poll_once(later.as_mut()).is_pending());
    tokio::time::advance(10 * MS).await;
    assert!(poll_once(due.as_mut()).is_ready());
    assert!(due.is_elapsed());
    assert!(poll_once(later.as_mut()).is_pending());
    assert!(!later.is_elapsed());
    tokio::time::advance(MS).await;
    assert!(poll_once(later.as_mut()).is_ready());
}

#[tokio::test(start_paused = true)]
async fn a_timer_due_at_a_timeouts_deadline_wins() {
    let start = Instant::now();
    assert_eq!(time::timeout(10 * MS, time::sleep(10 * MS)).await, Ok(()));
    assert_eq!(start.elapsed(), 10 * MS);
    // tokio's sleep inside ours, and ours inside tokio's.
    let start = Instant::now();
    assert_eq!(
        time::timeout(10 * MS, tokio::time::sleep(10 * MS)).await,
        Ok(())
    );
    assert!(tokio::time::timeout(10 * MS, time::sleep(10 * MS))
        .await
        .is_ok());
    assert_eq!(start.elapsed(), 20 * MS);
    assert!(time::timeout(10 * MS, time::sleep(11 * MS)).await.is_err());
}

#[tokio::test(start_paused = true)]
async fn intervals_tick_as_tokios() {
    let mut ours = time::interval(10 * MS);
    let mut theirs = tokio::time::interval(10 * MS);
    let (o0, t0) = (ours.tick().await, theirs.tick().await);
    for _ in 0..5 {
        let (o, t) = (ours.tick().await, theirs.tick().await);
        assert_eq!(o - o0, Instant::from(t) - Instant::from(t0));
    }
    assert_eq!(ours.tick().await - o0, 60 * MS);
}

#[tokio::test(start_paused = true)]
async fn a_delay_queue_follows_the_paused_clock() {
    let real = std::time::Instant::now();
    let start = Instant::now();
    let mut q = DelayQueue::new();
    let day = q.insert(3, 24 * 3600 * SEC);
    q.insert(1, SEC);
    q.insert(2, 3600 * SEC);
    q.reset(&day, 12 * 3600 * SEC);
    for (v, d) in [(1, SEC), (2, 3600 * SEC), (3, 12 * 3600 * SEC)] {
        let e = poll_fn(|cx| q.poll_expired(cx)).await.unwrap();
        assert_eq!(*e.get_ref(), v);
        assert_eq!(Instant::now() - start, d, "{v} out off its deadline");
    }
    assert!(real.elapsed() < 5 * SEC, "took {:?}", real.elapsed());
}

/// A reset to a later deadline, the queue polled in between: nothing comes
/// out before the new deadline (tokio-util's `reset_entry`).
#[tokio::test]
async fn a_delay_queue_reset_later_waits_for_the_new_deadline() {
    tokio::time::pause();
    let mut q = tokio_test::task::spawn(DelayQueue::new());
    let now = Instant::now();
    let key = q.insert_at("foo", now + 5 * MS);
    assert!(q.enter(|cx, mut q| q.poll_expired(cx)).is_pending());
    time::sleep(MS).await;
    q.reset_at(&key, now + 10 * MS);
    assert!(q.enter(|cx, mut q| q.poll_expired(cx)).is_pending());
    time::sleep(7 * MS).await;
    assert!(!q.is_woken());
    assert!(q.enter(|cx, mut q| q.poll_expired(cx)).is_pending());
    time::sleep(3 * MS).await;
    assert!(q.is_woken());
    let e = q.enter(|cx, mut q| q.poll_expired(cx));
    assert!(matches!(e, Poll::Ready(Some(e)) if *e.get_ref() == "foo"));
}

#[test]
fn builder_start_paused_drives_our_sleeps() {
    let rt = paused_runtime();
    let real = std::time::Instant::now();
    let elapsed = rt.block_on(async {
        let start = Instant::now();
        time::sleep(3600 * SEC).await;
        start.elapsed()
    });
    assert_eq!(elapsed, 3600 * SEC);
    assert!(real.elapsed() < 5 * SEC, "took {:?}", real.elapsed());
}

#[tokio::test]
async fn tokio_pause_and_resume_in_the_test_body() {
    tokio::time::pause();
    let start = Instant::now();
    time::sleep(3600 * SEC).await;
    // A clock paused mid-run: tokio's paused timers fire at the millisecond
    // ticks of the runtime's start, ours too.
    let e = start.elapsed();
    assert!(e >= 3600 * SEC && e <= 3600 * SEC + MS, "{e:?}");
    tokio::time::advance(3600 * SEC).await;
    tokio::time::resume();
    // The clock runs again, an hour or two ahead of the real one: a sleep
    // waits its real duration on it, never less.
    let t = Instant::now();
    let real = std::time::Instant::now();
    time::sleep(5 * MS).await;
    assert!(t.elapsed() >= 5 * MS, "{:?}", t.elapsed());
    assert!(real.elapsed() >= 4 * MS, "{:?}", real.elapsed());
    assert!(real.elapsed() < 5 * SEC, "{:?}", real.elapsed());
}

/// A sleep made and polled before the pause: tokio's auto-advance reaches
/// its deadline too.
#[tokio::test]
async fn a_sleep_polled_before_the_pause_follows_it() {
    let mut s = pin!(time::sleep(3600 * SEC));
    assert!(poll_once(s.as_mut()).is_pending());
    tokio::time::pause();
    let real = std::time::Instant::now();
    s.await;
    assert!(real.elapsed() < 5 * SEC, "took {:?}", real.elapsed());
}

/// The seed of the random schedules below when `SEED` is unset, so that
/// `cargo test` runs the same schedules every time.
const DEFAULT_SEED: u64 = 1;

/// `SEED`'s seed, or [`DEFAULT_SEED`], printed so that a failure can be
/// replayed; a value that is not a `u64` fails the test rather than running
/// another seed than the one asked for.
fn seed() -> u64 {
    let seed = match std::env::var("SEED") {
        Ok(s) => s
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("SEED={s:?} is not a u64")),
        Err(_) => DEFAULT_SEED,
    };
    eprintln!("seed {seed} (SEED=N to rerun)");
    seed
}

/// tokio's `paused_time_is_deterministic`: two paused runtimes one after
/// the other on one thread each start from a fresh paused clock, and run
/// the same random schedule to the same readings.
#[test]
fn paused_runtimes_one_after_the_other_are_deterministic() {
    use rand::{rngs::StdRng, Rng, SeedableRng};
    let seed = seed();
    let run = || {
        paused_runtime().block_on(async {
            let mut rng = StdRng::seed_from_u64(seed);
            let start = Instant::now();
            let mut times = Vec::new();
            for _ in 0..1000 {
                time::sleep(rng.random_range(Duration::ZERO..SEC)).await;
                times.push(start.elapsed());
            }
            let fresh = Instant::now() - start;
            (times, fresh)
        })
    };
    let real = std::time::Instant::now();
    let (a, b) = (run(), run());
    assert_eq!(a, b);
    assert!(real.elapsed() < 10 * SEC, "took {:?}", real.elapsed());
}

/// The same seeded schedule of sleeps, timeouts and intervals, once with
/// tokio's timers and once with ours, each in a `start_paused` runtime:
/// every completion at the same reading of the paused clock.
#[test]
fn a_random_schedule_completes_as_on_tokios_timers() {
    use rand::{rngs::StdRng, Rng, SeedableRng};
    let seed = seed();
    #[derive(Clone, Copy)]
    enum Kind {
        Sleep,
        Timeout,
        Tick,
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let schedule: Vec<(Kind, Duration, Duration)> = (0..200)
        .map(|_| {
            let kind = [Kind::Sleep, Kind::Timeout, Kind::Tick][rng.random_range(0..3)];
            let a = Duration::from_micros(rng.random_range(0..50_000));
            let b = Duration::from_micros(rng.random_range(1..50_000));
            (kind, a, b)
        })
        .collect();
    let with_tokio = paused_runtime().block_on(async {
        let start = tokio::time::Instant::now();
        let mut out = Vec::new();
        for &(kind, a, b) in &schedule {
            match kind {
                Kind::Sleep => tokio::time::sleep(a).await,
                Kind::Timeout => {
                    let r = tokio::time::timeout(a, tokio::time::sleep(b)).await;
                    out.push(Duration::from_nanos(r.is_ok() as u64));
                }
                Kind::Tick => {
                    let mut i = tokio::time::interval(b);
                    i.tick().await;
                    i.tick().await;
                }
            }
            out.push(start.elapsed());
        }
        out
    });
    let with_ours = paused_runtime().block_on(async {
        let start = Instant::now();
        let mut out = Vec::new();
        for &(kind, a, b) in &schedule {
            match kind {
                Kind::Sleep => time::sleep(a).await,
                Kind::Timeout => {
                    let r = time::timeout(a, time::sleep(b)).await;
                    out.push(Duration::from_nanos(r.is_ok() as u64));
                }
                Kind::Tick => {
                    let mut i = time::interval(b);
                    i.tick().await;
                    i.tick().await;
                }
            }
            out.push(start.elapsed());
        }
        out
    });
    assert_eq!(with_ours, with_tokio);
}

/// A paused runtime on one thread leaves a runtime on another in real time.
#[test]
fn another_runtime_keeps_real_time() {
    let paused = std::thread::spawn(|| {
        paused_runtime().block_on(async {
            let start = Instant::now();
            time::sleep(3600 * SEC).await;
            start.elapsed()
        })
    });
    let real = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap()
        .block_on(async {
            let start = Instant::now();
            let std_start = std::time::Instant::now();
            time::sleep(20 * MS).await;
            (start.elapsed(), std_start.elapsed())
        });
    assert_eq!(paused.join().unwrap(), 3600 * SEC);
    assert!(real.0 >= 20 * MS && real.1 >= 20 * MS, "{real:?}");
    assert!(real.1 < 5 * SEC, "{real:?}");
}

/// On a multi-thread runtime (which tokio cannot pause) the futures keep
/// their own timers: a sleep's precision is utimer's, not tokio's
/// millisecond.
#[test]
fn a_multi_thread_runtime_keeps_the_hrtimers() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_time()
        .build()
        .unwrap();
    let late = rt.block_on(async {
        let mut best = Duration::MAX;
        for _ in 0..20 {
            let s = time::sleep(Duration::from_micros(300));
            let d = s.deadline();
            s.await;
            best = best.min(Instant::now() - d);
        }
        best
    });
    // tokio's wheel would round 300 µs up to the next millisecond tick.
    assert!(
        late < Duration::from_micros(500),
        "late by {late:?} at best"
    );
}

/// This crate's own `pause`, under a tokio runtime without the `test-util`
/// feature, ends with the runtime: a second runtime on the same thread
/// pauses a fresh clock.
#[cfg(not(feature = "test-util"))]
#[test]
fn our_own_pause_ends_with_its_runtime() {
    let plain = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
    };
    let first = plain().block_on(async {
        time::pause();
        let start = Instant::now();
        time::sleep(3600 * SEC).await;
        assert_eq!(start.elapsed(), 3600 * SEC);
        Instant::now()
    });
    // The runtime is gone: real time again, and a fresh pause.
    assert!(Instant::now() < first, "the pause outlived its runtime");
    let second = plain().block_on(async {
        time::pause();
        let start = Instant::now();
        time::advance(SEC).await;
        (start, Instant::now())
    });
    assert!(second.0 < first, "the second pause kept the first's clock");
    assert_eq!(second.1 - second.0, SEC);
}

/// With the `test-util` feature, this crate's `pause`, `advance` and
/// `resume` inside a tokio runtime are tokio's: tokio's own timers follow.
#[cfg(feature = "test-util")]
#[tokio::test]
async fn our_pause_is_tokios_with_test_util() {
    time::pause();
    let start = tokio::time::Instant::now();
    tokio::time::sleep(3600 * SEC).await;
    // Paused mid-run: tokio's timers fire on its millisecond ticks.
    let e = start.elapsed();
    assert!(e >= 3600 * SEC && e <= 3600 * SEC + MS, "{e:?}");
    time::advance(SEC).await;
    assert_eq!(start.elapsed(), e + SEC);
    time::resume();
    let t = tokio::time::Instant::now();
    std::thread::sleep(MS);
    assert!(t.elapsed() >= MS);
}

#[cfg(feature = "test-util")]
#[test]
#[should_panic(expected = "current_thread")]
fn our_pause_on_a_multi_thread_runtime_panics_as_tokios_with_test_util() {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_time()
        .build()
        .unwrap()
        .block_on(async { time::pause() });
}

/// Without `test-util`, this crate's `advance` cannot move tokio's paused
/// clock: it says so, and what to turn on.
#[cfg(not(feature = "test-util"))]
#[tokio::test(start_paused = true)]
#[should_panic(expected = "`test-util` feature")]
async fn our_advance_under_a_paused_tokio_clock_says_what_to_turn_on() {
    time::advance(SEC).await;
}
