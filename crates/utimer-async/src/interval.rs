//! [`Interval`]: ticks at multiples of a period, on an hrtimer.

use crate::handle::{add_or_far, Handle};
use crate::Instant;
use crate::Sleep;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// An [`Interval`] whose first tick completes at once and whose ticks
/// follow every `period`: `tokio::time::interval`, a periodic hrtimer
/// (`hrtimer_forward()`). On the process-wide default runtime
/// ([`Handle::global`]).
///
/// # Panics
/// If `period` is zero.
#[track_caller]
pub fn interval(period: Duration) -> Interval {
    // The runtime starts before the first tick's instant is read.
    let handle = Handle::global_started();
    Interval::new(handle, Instant::now(), period)
}

/// An [`Interval`] whose first tick is at `start`, then every `period`:
/// `tokio::time::interval_at`. On the process-wide default runtime.
///
/// # Panics
/// If `period` is zero.
#[track_caller]
pub fn interval_at(start: Instant, period: Duration) -> Interval {
    Interval::new(Handle::global(), start, period)
}

/// A tick counts as missed when it is returned more than this after its
/// deadline (as tokio: a few milliseconds of scheduling delay are not a
/// missed tick).
pub const MISSED_TICK_TOLERANCE: Duration = Duration::from_millis(5);

/// What an [`Interval`] does after its ticks were missed (returned more
/// than [`MISSED_TICK_TOLERANCE`] late, because the task was busy or not
/// polled): `tokio::time::MissedTickBehavior`, with its semantics. Take a
/// period of 10 ms, ticks due at 0, 10, 20, …, and a tick at 10 returned
/// at 35 (late):
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum MissedTickBehavior {
    /// The missed ticks complete at once, one per call, until the schedule
    /// is caught up; the schedule never moves: ticks 20 and 30 complete
    /// at once, then 40, 50, … on time. The average rate is kept, as a
    /// periodic hrtimer that forwards by whole periods does. The default.
    #[default]
    Burst,
    /// The schedule restarts from when the late tick was returned: the
    /// next ticks are due at 45, 55, 65, …. Ticks are never closer than a
    /// period apart.
    Delay,
    /// The missed ticks are dropped; the schedule stays on multiples of
    /// the period from the start: the next tick is due at 40, then 50, …
    /// (the kernel's `hrtimer_forward()` past now, reporting the overrun).
    Skip,
}

impl MissedTickBehavior {
    /// The deadline after a tick due at `due`, returned late at `now`.
    fn next(self, due: Instant, now: Instant, period: Duration) -> Instant {
        match self {
            MissedTickBehavior::Burst => add_or_far(due, period),
            MissedTickBehavior::Delay => add_or_far(now, period),
            MissedTickBehavior::Skip => {
                let late = now.saturating_duration_since(due).as_nanos();
                let periods = late / period.as_nanos() + 1;
                let ahead = period.as_nanos().saturating_mul(periods);
                add_or_far(
                    due,
                    Duration::from_nanos(u64::try_from(ahead).unwrap_or(u64::MAX)),
                )
            }
        }
    }
}

/// Ticks at `start`, `start + period`, `start + 2 × period`, …:
/// `tokio::time::Interval`, the kernel's periodic hrtimer (restarted by
/// whole periods, so it does not drift). Made by [`interval`],
/// [`interval_at`] or a [`Handle`]'s methods.
///
/// Each tick completes at or after its deadline, never before, and returns
/// that deadline (the scheduled instant, not the moment it was returned).
/// Ticks missed by more than [`MISSED_TICK_TOLERANCE`] are handled as its
/// [`MissedTickBehavior`] says ([`Burst`](MissedTickBehavior::Burst) by
/// default). One hrtimer sleeper, allocated with the interval, is
/// restarted for every tick: no allocation after that.
#[derive(Debug)]
pub struct Interval {
    /// Boxed, as tokio's, so that `Interval` is `Unpin`.
    delay: Pin<Box<Sleep>>,
    period: Duration,
    missed_tick_behavior: MissedTickBehavior,
}

impl Interval {
    #[track_caller]
    pub(crate) fn new(handle: Handle, start: Instant, period: Duration) -> Interval {
        assert!(period > Duration::ZERO, "`period` must be non-zero.");
        Interval {
            delay: Box::pin(Sleep::new(handle, start)),
            period,
            missed_tick_behavior: MissedTickBehavior::default(),
        }
    }

    /// Completes at the next tick and returns its deadline
    /// (`tokio::time::Interval::tick`). Cancel safe: a tick is consumed
    /// only when this completes.
    pub async fn tick(&mut self) -> Instant {
        poll_fn(|cx| self.poll_tick(cx)).await
    }

    /// Polls for the next tick: `Ready(deadline)` once it is due, and the
    /// schedule moves on (`tokio::time::Interval::poll_tick`). Wakes the
    /// latest waker when the tick is due.
    pub fn poll_tick(&mut self, cx: &mut Context<'_>) -> Poll<Instant> {
        if self.delay.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        let due = self.delay.deadline();
        let now = Instant::now();
        let next = if now > add_or_far(due, MISSED_TICK_TOLERANCE) {
            self.missed_tick_behavior.next(due, now, self.period)
        } else {
            add_or_far(due, self.period)
        };
        // As tokio's: the next tick's timer is armed by the next poll (a
        // task that does not poll again is not woken for it).
        self.delay.as_mut().reset_without_reregister(next);
        Poll::Ready(due)
    }

    /// The next tick is due a period from now
    /// (`tokio::time::Interval::reset`).
    pub fn reset(&mut self) {
        self.reset_at(add_or_far(Instant::now(), self.period));
    }

    /// The next tick is due now (`tokio::time::Interval::reset_immediately`).
    pub fn reset_immediately(&mut self) {
        self.reset_at(Instant::now());
    }

    /// The next tick is due `after` from now
    /// (`tokio::time::Interval::reset_after`).
    pub fn reset_after(&mut self, after: Duration) {
        self.reset_at(add_or_far(Instant::now(), after));
    }

    /// The next tick is due at `deadline`, and the period counts from there
    /// (`tokio::time::Interval::reset_at`).
    pub fn reset_at(&mut self, deadline: Instant) {
        self.delay.as_mut().reset(deadline);
    }

    /// What happens after missed ticks
    /// (`tokio::time::Interval::missed_tick_behavior`).
    pub fn missed_tick_behavior(&self) -> MissedTickBehavior {
        self.missed_tick_behavior
    }

    /// Sets what happens after missed ticks
    /// (`tokio::time::Interval::set_missed_tick_behavior`).
    pub fn set_missed_tick_behavior(&mut self, behavior: MissedTickBehavior) {
        self.missed_tick_behavior = behavior;
    }

    /// The period (`tokio::time::Interval::period`).
    pub fn period(&self) -> Duration {
        self.period
    }
}
