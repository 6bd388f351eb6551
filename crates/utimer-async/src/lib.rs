//! utimer-async: `tokio::time`'s futures on utimer's timers.
//!
//! [`sleep`], [`sleep_until`], [`timeout`], [`timeout_at`], [`interval`]
//! and [`interval_at`], with [`Sleep`], [`Timeout`], [`Interval`],
//! [`MissedTickBehavior`] and [`Elapsed`], are named and shaped as in
//! `tokio::time`, with [`Instant`], [`Duration`], the test clock
//! ([`pause`], [`resume`], [`advance`]) and [`error`], so that switching
//! is an import change: `use utimer_async as time;` where the program had
//! `use tokio::time;`. They run under any executor (tokio's, `futures`'
//! `block_on`, smol's, your own): the timers are expired by utimer's
//! worker threads, which wake the tasks. [`Instant`] wraps a
//! [`std::time::Instant`] and converts to and from it (and, with the
//! `tokio` feature, `tokio::time::Instant`).
//!
//! ```
//! use utimer_async::{interval, sleep, timeout, Duration, Instant, MissedTickBehavior};
//!
//! futures::executor::block_on(async {
//!     let start = Instant::now();
//!     sleep(Duration::from_millis(2)).await;
//!     assert!(start.elapsed() >= Duration::from_millis(2)); // never early
//!
//!     let slow = sleep(Duration::from_secs(60));
//!     assert!(timeout(Duration::from_millis(1), slow).await.is_err());
//!     assert_eq!(timeout(Duration::from_secs(60), async { 7 }).await, Ok(7));
//!
//!     let mut every = interval(Duration::from_millis(1));
//!     every.set_missed_tick_behavior(MissedTickBehavior::Skip);
//!     let first = every.tick().await; // at once
//!     let second = every.tick().await;
//!     assert_eq!(second - first, Duration::from_millis(1));
//! });
//! ```
//!
//! # Testing with a paused clock
//!
//! **Under tokio, as tokio's tests are written.** With the `tokio` feature,
//! the futures follow tokio's own paused clock, with nothing of this crate
//! to call: in a runtime paused by `#[tokio::test(start_paused = true)]`,
//! `Builder::start_paused(true)` or `tokio::time::pause()`, a [`Sleep`]
//! waits on a tokio timer for its deadline (tokio's driver then
//! auto-advances to it and fires it as its own), so [`sleep`], [`timeout`],
//! [`interval`] and `DelayQueue` complete at the same readings of the
//! paused clock as tokio's, and [`Instant::now`] reads that clock. A pause
//! ends with its runtime, as tokio's does; other runtimes and threads keep
//! real time. Pausing a tokio clock needs tokio's `test-util` feature,
//! which a test that pauses it has on; where it is off (release builds),
//! checking for a paused clock compiles to nothing. With this crate's
//! `test-util` feature (for dev-dependencies; it turns on tokio's),
//! [`pause`], [`resume`] and [`advance`] called inside a tokio runtime are
//! tokio's, so that code that switched `use tokio::time;` to
//! `use utimer_async as time;` keeps calling `time::pause()` and
//! `time::advance()` unchanged.
//!
//! ```
//! # #[cfg(feature = "tokio")]
//! # tokio::runtime::Builder::new_current_thread()
//! #     .enable_time()
//! #     .start_paused(true) // what #[tokio::test(start_paused = true)] does
//! #     .build()
//! #     .unwrap()
//! #     .block_on(async {
//! use utimer_async::{self as time, Duration, Instant};
//!
//! let start = Instant::now();
//! let slow = std::future::pending::<()>();
//! assert!(time::timeout(Duration::from_secs(30), slow).await.is_err()); // at once
//! assert_eq!(start.elapsed(), Duration::from_secs(30));
//! # });
//! ```
//!
//! **Under any executor**, this crate's own test clock: [`pause`] freezes
//! the clock of the calling thread (the thread of the test's executor),
//! [`advance`] moves it, and when the thread has nothing left to run the
//! clock *auto-advances* to the next timer, so a test of a 30 s timeout
//! takes microseconds, and takes them the same way every run:
//!
//! ```
//! use utimer_async::{self as time, Duration, Instant};
//!
//! futures::executor::block_on(async {
//!     time::pause();
//!     let start = Instant::now();
//!     let slow = std::future::pending::<()>();
//!     assert!(time::timeout(Duration::from_secs(30), slow).await.is_err());
//!     assert_eq!(start.elapsed(), Duration::from_secs(30)); // exactly
//! });
//! ```
//!
//! It works the same under tokio without `test-util` (call `time::pause()`
//! first in the body; the pause ends with the runtime) and under any
//! single-threaded executor; [`pause`] gives the rules and where they
//! differ from tokio's (its timers fire at their exact deadline, tokio's
//! at its next millisecond tick).
//!
//! # Which timer system
//!
//! The free functions use the process-wide default, [`Handle::global`]: a
//! utimer [`Runtime`](utimer::Runtime) with one worker thread pinned to
//! each CPU the process may run on ([`Handle::init_global`] sets another
//! one up), started by the first timer that needs it, before that timer
//! reads its deadline (so the first sleep of a process is not late by the
//! start), and kept until the process exits. A timer is queued on the worker of the CPU its task runs
//! on when it is first polled, as the kernel queues on the local CPU: the
//! threads of a multi-thread executor arm and cancel on bases of their
//! own. A [`Handle`] of your own system
//! ([`Handle::new`]`(Arc<TimerSystem>)`, [`Handle::from_runtime`]) makes the
//! same futures there (`handle.sleep(..)`, `handle.timeout(..)`, …). There
//! is no ambient context: a future's system is the one that made it.
//!
//! # Which timer, and how precise
//!
//! Every future waits on an hrtimer of its own:
//! [`HrSleeper`](utimer::HrSleeper) on `CLOCK_MONOTONIC` (the kernel's
//! `hrtimer_sleeper`, what `nanosleep` waits on), inside the future. A
//! [`Sleep`] is one, a [`Timeout`] holds one beside its future, an
//! [`Interval`] restarts one for every tick. Each fires at its deadline
//! plus the worker's wake-up latency (microseconds), where tokio's timers
//! fire at the next millisecond tick after it, and later still while its
//! runtime is busy.
//!
//! # Guarantees
//!
//! * **Never early.** By the crate's clock ([`Instant::now`]): on the real
//!   clock, a future completes only once its timer fired, and a timer
//!   fires only once its clock read its expiry, which is the deadline
//!   rounded later (to the next nanosecond of `CLOCK_MONOTONIC`), never
//!   earlier. `Instant` is `CLOCK_MONOTONIC` on Linux.
//! * **No allocation.** A [`Sleep`] never allocates: its timer is part of
//!   it, queued by its first poll in its worker's intrusive heap. A
//!   [`Timeout`] is its future and a `Sleep`, side by side, as tokio's;
//!   one whose future is ready at once queues nothing. An [`Interval`]
//!   boxes one `Sleep` when it is made, as tokio's does. Later polls only
//!   update the waker, and [`Sleep::reset`] and every [`Interval`] tick
//!   move the same timer. The one exception is for tests: once a thread
//!   of the process has [paused](pause) its clock, each `Sleep` (and so
//!   each `Timeout`) boxes its test-clock state when it is made.
//! * **Pinning.** [`Sleep`] and [`Timeout`] are `!Unpin`, like tokio's:
//!   pin them (`std::pin::pin!`, `tokio::pin!`, `Box::pin`) to poll them by
//!   hand or keep them across `select!` iterations. [`Interval`] is
//!   `Unpin`.
//! * **Dropping never blocks.** Dropping a [`Sleep`] (or a [`Timeout`])
//!   takes its timer out of its heap under the base lock, and there is
//!   nothing to wait for: the worker takes a sleeper's waker under that
//!   lock and wakes it after.
//! * **The latest waker is woken.** A pending [`Sleep`]'s poll replaces the
//!   waker in its node under the base lock (unless it wakes the same
//!   task), and reads the state again there, so a fire racing with a poll
//!   is never missed (`tests/loom_sleeper.rs` in utimer models it).
//! * **Shutdown.** A [`Handle`] and every timer keep their system alive,
//!   but not its workers: once its [`Runtime`](utimer::Runtime) shuts down
//!   (or [`TimerSystem::shutdown`](utimer::TimerSystem::shutdown) is
//!   called) the system refuses timers (utimer's
//!   [`TimerError::Shutdown`](utimer::TimerError::Shutdown)), and polling a
//!   future whose timer it refused, or cancelled at the shutdown, panics,
//!   as tokio's futures do once their time driver is gone (rather than
//!   staying pending for ever).
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

mod clock;
#[cfg(feature = "delay-queue")]
pub mod delay_queue;
mod handle;
mod instant;
mod interval;
mod sleep;
mod timeout;
#[cfg(feature = "tokio")]
mod tokio_clock;
#[cfg(feature = "delay-queue")]
pub use delay_queue::{DelayQueue, Expired, Key};
mod error_impl;
#[cfg(feature = "stream")]
mod stream;

pub use clock::{advance, pause, resume};
pub use handle::{AlreadyStarted, Handle};
pub use instant::Instant;
pub use interval::{interval, interval_at, Interval, MissedTickBehavior, MISSED_TICK_TOLERANCE};
pub use sleep::{sleep, sleep_until, Sleep};
pub use std::time::Duration;
pub use timeout::{timeout, timeout_at, Elapsed, Timeout};

/// The error types, where tokio has them (`tokio::time::error`).
pub mod error {
    pub use crate::error_impl::Error;
    pub use crate::timeout::Elapsed;
}

/// The README's examples (the library, the async front end), compiled and
/// run as doctests here, where every crate they use is in scope.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

/// The pages of `docs/`, the same way: a Rust example added to one runs
/// under `cargo test --workspace` (their other blocks are `sh`, `text`
/// and `c`; `ci/install.sh` builds and runs the C ones).
#[cfg(doctest)]
#[doc = include_str!("../../../docs/using.md")]
#[doc = include_str!("../../../docs/architecture.md")]
#[doc = include_str!("../../../docs/kernel.md")]
#[doc = include_str!("../../../docs/development.md")]
#[doc = include_str!("../../../docs/programs.md")]
#[doc = include_str!("../../../docs/results.md")]
struct DocsDoctests;
