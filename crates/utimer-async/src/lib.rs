//! utimer-async: `tokio::time`'s futures on utimer's timers.
//!
//! [`sleep`], [`sleep_until`], [`timeout`], [`timeout_at`], [`interval`]
//! and [`interval_at`], with [`Sleep`], [`Timeout`], [`Interval`],
//! [`MissedTickBehavior`] and [`Elapsed`], are named and shaped as in
//! `tokio::time`, so that switching is an import change. They run under
//! any executor (tokio's, `futures`' `block_on`, smol's, your own): the
//! timers are expired by utimer's worker threads, which wake the tasks.
//! Deadlines are [`std::time::Instant`]s (tokio's `Instant` converts from
//! and into them).
//!
//! ```
//! use std::time::{Duration, Instant};
//! use utimer_async::{interval, sleep, timeout, MissedTickBehavior};
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
//! # Which timer system
//!
//! The free functions use the process-wide default, [`Handle::global`]: a
//! utimer [`Runtime`](utimer::Runtime) of [`DEFAULT_WORKERS`] worker
//! thread, started by the first timer that needs it and kept until the
//! process exits. A [`Handle`] of your own system
//! ([`Handle::new`]`(Arc<TimerSystem>)`, [`Handle::from_runtime`]) makes the
//! same futures there (`handle.sleep(..)`, `handle.timeout(..)`, …). There
//! is no ambient context: a future's system is the one that made it.
//!
//! # Which timer, and how precise
//!
//! utimer keeps the kernel's split between hrtimers, for deadlines that
//! are met, and the timer wheel, for timeouts that are mostly cancelled:
//!
//! | future | timer | fires |
//! |---|---|---|
//! | [`Sleep`], [`Interval`] | [`HrSleeper`](utimer::HrSleeper) on `CLOCK_MONOTONIC`: an hrtimer inside the future (the kernel's `hrtimer_sleeper`, what `nanosleep` waits on) | at the deadline plus the wake-up latency (µs) |
//! | [`Timeout`] | wheel [`Timer`](utimer::Timer) (the kernel's `timer_list`) | at the first tick (1 ms) at or after the deadline for deadlines up to 64 ticks away; beyond, at its wheel level's bucket boundary, up to 12.5% of the distance late (a 1 s timeout 43–64 ms late) |
//!
//! Timeouts trade precision for an O(1) arm and cancel, as the kernel's do:
//! a timeout is a bound, and almost always cancelled before it fires. Use
//! `select!` over a [`Sleep`] for a precise one.
//!
//! # Guarantees
//!
//! * **Never early.** A future completes only once its timer fired, and a
//!   timer fires only once its clock read its expiry, which is the deadline
//!   rounded later (to the next nanosecond of `CLOCK_MONOTONIC`, or to the
//!   next tick), never earlier. `Instant` is `CLOCK_MONOTONIC` on Linux.
//! * **No allocation per poll.** A [`Sleep`] never allocates: its timer
//!   is part of it (64 bytes in all, which is what a pending sleep costs),
//!   queued by its first poll in its worker's intrusive heap; an
//!   [`Interval`] boxes one `Sleep` when it is made, as tokio's does. A
//!   [`Timeout`] allocates its wheel timer at its first poll that has to
//!   wait (none if the deadline has passed or the future is ready). Later
//!   polls only update the waker, and [`Sleep::reset`] and every
//!   [`Interval`] tick move the same timer.
//! * **Pinning.** [`Sleep`] is `!Unpin`, like tokio's: pin it
//!   (`std::pin::pin!`, `tokio::pin!`, `Box::pin`) to poll it by hand or
//!   keep it across `select!` iterations. [`Timeout`] and [`Interval`] are
//!   `Unpin` when their future is.
//! * **Dropping never blocks.** Dropping a [`Sleep`] takes it out of its
//!   heap under the base lock, and there is nothing to wait for: the worker
//!   takes a sleeper's waker under that lock and wakes it after. Dropping a
//!   [`Timeout`] cancels its timer without waiting for a callback running
//!   at that moment (the kernel's `timer_delete()`), which cannot restart
//!   it.
//! * **The latest waker is woken.** A pending [`Sleep`]'s poll replaces the
//!   waker in its node under the base lock (unless it wakes the same
//!   task), and reads the state again there, so a fire racing with a poll
//!   is never missed (`tests/loom_sleeper.rs` in utimer models it). A
//!   [`Timeout`] stores its waker in an [`atomic_waker::AtomicWaker`],
//!   with the state read again after the waker is registered.
//! * **Shutdown.** A [`Handle`] and every timer keep their system alive.
//!   A system whose workers have stopped (its [`Runtime`](utimer::Runtime)
//!   shut down) keeps its futures pending; a timer that the system refuses
//!   (utimer's [`TimerError::Shutdown`](utimer::TimerError::Shutdown))
//!   panics the poll, as tokio's futures do once their time driver is gone.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

mod handle;
mod interval;
mod shared;
mod sleep;
mod timeout;

pub use handle::{Handle, DEFAULT_WORKERS};
pub use interval::{interval, interval_at, Interval, MissedTickBehavior, MISSED_TICK_TOLERANCE};
pub use sleep::{sleep, sleep_until, Sleep};
pub use timeout::{timeout, timeout_at, Elapsed, Timeout};

/// The error types, where tokio has them (`tokio::time::error`).
pub mod error {
    pub use crate::timeout::Elapsed;
}

/// The README's examples (the library, the async front end), compiled and
/// run as doctests here, where every crate they use is in scope.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;
