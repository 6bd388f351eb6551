//! [`Sleep`]: a future that completes at its deadline, on an hrtimer.

use crate::handle::{deadline_after, Handle};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use utimer::{ClockId, HrSleeper};

/// Waits until `duration` has elapsed, to the nanosecond plus the wake-up's
/// latency, never less: `tokio::time::sleep`, and the kernel's `nanosleep`
/// (an hrtimer). On the process-wide default runtime ([`Handle::global`]).
///
/// A `duration` beyond `Instant`'s range sleeps about 30 years.
pub fn sleep(duration: Duration) -> Sleep {
    Sleep::new(Handle::global(), deadline_after(duration))
}

/// Waits until `deadline`, never less: `tokio::time::sleep_until`, the
/// kernel's `hrtimer_start(HRTIMER_MODE_ABS)`. On the process-wide default
/// runtime ([`Handle::global`]).
pub fn sleep_until(deadline: Instant) -> Sleep {
    Sleep::new(Handle::global(), deadline)
}

/// A future that completes at its deadline: `tokio::time::Sleep`, the
/// kernel's `hrtimer_sleeper` (what `nanosleep` waits on). Made by
/// [`sleep`], [`sleep_until`] or a [`Handle`]'s methods.
///
/// * It never completes before its deadline: it completes once its
///   hrtimer fired, and an hrtimer fires only once its clock read its
///   expiry, which is the deadline converted to `CLOCK_MONOTONIC`
///   nanoseconds, rounded later, never earlier.
/// * It is its own timer: a [`utimer::HrSleeper`] (links, expiry and
///   waker, 64 bytes with the handle) that its first poll queues in the
///   polling thread's home worker's hrtimer base, whose thread wakes the
///   task. Nothing is allocated, ever: not when it is created, polled,
///   [reset](Sleep::reset), fired or dropped. A `Sleep` whose deadline has
///   passed when it is first polled completes without queueing anything.
/// * Like tokio's, it is `!Unpin`: pin it (`std::pin::pin!`,
///   `tokio::pin!`, `Box::pin`) to poll it by hand; `.await` does that.
/// * Dropping it takes it out of its base's queue without waiting (there
///   is no callback to wait for: the worker takes the waker under the base
///   lock and wakes it after).
/// * The latest waker it was polled with is the one woken.
/// * [`deadline`](Sleep::deadline) is the deadline as the timer holds it:
///   nanoseconds of the monotonic clock. A deadline more than about 584
///   years after boot, or before boot, reads back as that bound (it is
///   reached, or long passed, just the same).
pub struct Sleep {
    timer: HrSleeper<Handle>,
}

impl Sleep {
    pub(crate) fn new(handle: Handle, deadline: Instant) -> Sleep {
        let at = handle.ns_of(deadline);
        Sleep {
            timer: HrSleeper::new(handle, ClockId::Monotonic, at),
        }
    }

    /// The pinned timer.
    #[inline]
    fn timer(self: Pin<&mut Self>) -> Pin<&mut HrSleeper<Handle>> {
        // SAFETY: structural pinning: `timer` is never moved out of a
        // pinned `Sleep`, which has no `Drop` of its own and is `!Unpin`
        // because the timer is.
        unsafe { self.map_unchecked_mut(|s| &mut s.timer) }
    }

    /// The instant at which the future completes
    /// (`tokio::time::Sleep::deadline`).
    pub fn deadline(&self) -> Instant {
        self.timer.system_ref().instant_of(self.timer.expires())
    }

    /// Whether the deadline has passed: its timer fired, or, before it was
    /// queued, the clock reads the deadline (`tokio::time::Sleep::is_elapsed`).
    pub fn is_elapsed(&self) -> bool {
        if self.timer.is_expired() {
            return true;
        }
        !self.timer.is_queued() && self.reached_now()
    }

    /// Whether `Instant::now()` is at or past the deadline.
    #[inline]
    fn reached_now(&self) -> bool {
        self.timer.system_ref().ns_of(Instant::now()) >= self.timer.expires()
    }

    /// Moves the deadline to `deadline`, earlier or later, whether or not
    /// the future has completed: it is pending again until the new
    /// deadline (`tokio::time::Sleep::reset`, the kernel's
    /// `hrtimer_start()` on a queued timer). Moves the same timer in its
    /// queue: no allocation, no clock read. A deadline at or before one
    /// that already fired completes at once.
    ///
    /// # Panics
    /// If the timer system refuses timers (it has shut down).
    pub fn reset(self: Pin<&mut Self>, deadline: Instant) {
        let at = self.timer.system_ref().ns_of(deadline);
        let t = self.timer();
        let restart = t.is_queued() || (t.is_expired() && at > t.expires());
        let r = if restart {
            t.start(at, None)
        } else {
            // Not queued yet (its first poll starts it), or fired for a
            // later expiry than `at`: the clock has read `at`.
            t.set_expires(at)
        };
        if let Err(e) = r {
            panic!("utimer-async: cannot start a timer: {e}");
        }
    }
}

impl Future for Sleep {
    type Output = ();

    /// # Panics
    /// If the timer system refuses timers (it has shut down).
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let state = if self.timer.is_queued() || self.timer.is_expired() {
            self.timer().poll_expired(cx)
        } else if self.reached_now() {
            return Poll::Ready(());
        } else {
            // The first poll (or the first after a reset that found it
            // idle): queue it with this waker.
            let at = self.timer.expires();
            let mut t = self.timer();
            match t.as_mut().start(at, Some(cx.waker())) {
                Ok(()) if t.is_expired() => Poll::Ready(Ok(())),
                Ok(()) => Poll::Pending,
                Err(e) => Poll::Ready(Err(e)),
            }
        };
        match state {
            Poll::Ready(Ok(())) => Poll::Ready(()),
            Poll::Ready(Err(e)) => panic!("utimer-async: cannot start a timer: {e}"),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl std::fmt::Debug for Sleep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline())
            .field("queued", &self.timer.is_queued())
            .field("elapsed", &self.is_elapsed())
            .finish()
    }
}
