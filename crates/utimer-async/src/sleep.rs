//! [`Sleep`]: a future that completes at its deadline, on an hrtimer.

use crate::handle::{deadline_after, Handle};
use crate::shared::Shared;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering::Acquire;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use utimer::{ClockId, HrRestart, HrTimer};

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

/// The timer of a polled [`Sleep`]: the hrtimer and what its callback
/// shares with the future.
struct Armed {
    timer: HrTimer,
    shared: Arc<Shared>,
    /// The expiry the timer is started for, in ns of `CLOCK_MONOTONIC`
    /// (never before the deadline: see `Handle::ns_of`).
    at: u64,
}

/// A future that completes at its deadline: `tokio::time::Sleep`, the
/// kernel's sleeping `hrtimer`. Made by [`sleep`], [`sleep_until`] or a
/// [`Handle`]'s methods.
///
/// * It never completes before its deadline: it completes once its hrtimer
///   fired, and an hrtimer fires only once its clock read its expiry, which
///   is the deadline converted to `CLOCK_MONOTONIC` nanoseconds, rounded
///   later, never earlier.
/// * Nothing is allocated until it is first polled, and nothing after: the
///   first poll of a pending `Sleep` creates its hrtimer (two allocations,
///   the timer's entry and the state its callback shares with the future);
///   later polls only register the waker, [`reset`](Sleep::reset)
///   restarts the same timer. A `Sleep` whose deadline has passed when it
///   is first polled completes without a timer.
/// * The hrtimer is on the polling thread's home worker of the handle's
///   system, whose thread wakes the task.
/// * Dropping it cancels the timer without waiting (the hrtimer handle's
///   drop: `hrtimer_try_to_cancel()` and a flag that keeps a callback
///   running right then from restarting it).
/// * The latest waker it was polled with is the one woken.
///
/// Unlike tokio's, it is [`Unpin`] (the timer is on the heap), so
/// `Pin::new(&mut sleep)` works where tokio needs `tokio::pin!`; code
/// written for tokio's pinned `Sleep` works unchanged.
pub struct Sleep {
    handle: Handle,
    deadline: Instant,
    armed: Option<Armed>,
}

impl Sleep {
    pub(crate) fn new(handle: Handle, deadline: Instant) -> Sleep {
        Sleep {
            handle,
            deadline,
            armed: None,
        }
    }

    /// The instant at which the future completes
    /// (`tokio::time::Sleep::deadline`).
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether the deadline has passed: its timer fired, or, before its
    /// first poll, the clock reads the deadline
    /// (`tokio::time::Sleep::is_elapsed`).
    pub fn is_elapsed(&self) -> bool {
        match &self.armed {
            Some(a) => a.shared.fired.load(Acquire) >= a.at,
            None => Instant::now() >= self.deadline,
        }
    }

    /// Moves the deadline to `deadline`, earlier or later, whether or not
    /// the future has completed: it is pending again until the new
    /// deadline (`tokio::time::Sleep::reset`, the kernel's
    /// `hrtimer_start()` on a queued timer). Restarts the same hrtimer: no
    /// allocation. A callback already running for the old deadline does not
    /// complete the future early (it records the expiry it fired for, which
    /// is compared with the new one).
    ///
    /// # Panics
    /// If the timer system refuses timers (it has shut down).
    pub fn reset(self: Pin<&mut Self>, deadline: Instant) {
        let this = self.get_mut();
        this.deadline = deadline;
        if let Some(a) = &mut this.armed {
            a.at = this.handle.ns_of(deadline);
            if a.shared.fired.load(Acquire) < a.at {
                start(&a.timer, a.at);
            } else {
                // Already reached (an earlier deadline than one that
                // fired): complete now, and keep no later expiry queued.
                // A callback running right now only wakes the task.
                let _ = a.timer.try_cancel();
            }
        }
    }

    /// The first poll: completes at once if the deadline has passed, else
    /// creates and starts the hrtimer, with the waker registered first.
    #[cold]
    fn arm(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let Some(shared) = Shared::for_first_poll(self.deadline, cx) else {
            return Poll::Ready(());
        };
        let s = shared.clone();
        let timer = self
            .handle
            .system()
            .hrtimer(ClockId::Monotonic, move |fire| {
                s.fire(fire.expires());
                HrRestart::NoRestart
            });
        let at = self.handle.ns_of(self.deadline);
        start(&timer, at);
        let fired = shared.fired.load(Acquire) >= at;
        self.armed = Some(Armed { timer, shared, at });
        if fired {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// Starts `timer` for `at`, or panics if its system is gone.
fn start(timer: &HrTimer, at: u64) {
    if let Err(e) = timer.start(at) {
        panic!("utimer-async: cannot start a timer: {e}");
    }
}

impl Future for Sleep {
    type Output = ();

    /// # Panics
    /// If the timer system refuses timers (it has shut down).
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        match &this.armed {
            Some(a) => a.shared.poll_reached(a.at, cx),
            None => this.arm(cx),
        }
    }
}

impl std::fmt::Debug for Sleep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline)
            .field("armed", &self.armed.is_some())
            .field("elapsed", &self.is_elapsed())
            .finish()
    }
}
