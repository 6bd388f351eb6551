//! [`Timeout`]: a future with a deadline, on a wheel timer.

use crate::handle::{deadline_after, Handle};
use crate::shared::Shared;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use utimer::Timer;

/// Requires `future` to complete within `duration`: `tokio::time::timeout`.
/// On the process-wide default runtime ([`Handle::global`]), with a wheel
/// timer (the kernel's `timer_list` timeout: see the crate docs for its
/// granularity). The future is polled first, so one that is ready passes
/// through even past the deadline.
pub fn timeout<F: IntoFuture>(duration: Duration, future: F) -> Timeout<F::IntoFuture> {
    Timeout::new(
        Handle::global(),
        deadline_after(duration),
        future.into_future(),
    )
}

/// Requires `future` to complete before `deadline`:
/// `tokio::time::timeout_at`. As [`timeout`].
pub fn timeout_at<F: IntoFuture>(deadline: Instant, future: F) -> Timeout<F::IntoFuture> {
    Timeout::new(Handle::global(), deadline, future.into_future())
}

/// The error of a [`Timeout`] whose deadline passed first:
/// `tokio::time::error::Elapsed`, the kernel's `-ETIMEDOUT`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Elapsed(());

impl std::fmt::Display for Elapsed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

impl From<Elapsed> for std::io::Error {
    /// An error of kind [`std::io::ErrorKind::TimedOut`], as tokio's.
    fn from(e: Elapsed) -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::TimedOut, e)
    }
}

/// The wheel timer of a [`Timeout`]: created at its first poll.
struct Delay {
    handle: Handle,
    deadline: Instant,
    armed: Option<(Timer, Arc<Shared>)>,
}

impl Delay {
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        match &self.armed {
            Some((_, shared)) => shared.poll_reached(1, cx),
            None => self.arm(cx),
        }
    }

    #[cold]
    fn arm(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let Some(shared) = Shared::for_first_poll(self.deadline, cx) else {
            return Poll::Ready(());
        };
        let s = shared.clone();
        let timer = self.handle.system().timer(move |_| s.fire(1));
        // An `Instant` expiry rounds up to the first tick at or after it:
        // never early.
        if let Err(e) = timer.modify(self.deadline) {
            panic!("utimer-async: cannot arm a timer: {e}");
        }
        let poll = shared.poll_reached(1, cx);
        self.armed = Some((timer, shared));
        poll
    }
}

/// A future with a deadline: `tokio::time::Timeout`. Made by [`timeout`],
/// [`timeout_at`] or a [`Handle`]'s methods. Completes with the future's
/// output, or with [`Elapsed`] once the deadline has passed and the future
/// is still pending.
///
/// Timeouts are mostly cancelled (the future completes first), so, as the
/// kernel's `timer_list` timeouts, this one is a wheel timer: O(1) to arm
/// and to cancel, created at the first poll that finds the future pending
/// (a future ready at once costs no timer), cancelled without waiting when
/// the `Timeout` is dropped. It never fires early, and fires up to one tick
/// (1 ms) late for deadlines within 64 ticks, up to 12.5% of the distance
/// late beyond (see the crate docs).
pub struct Timeout<F> {
    future: F,
    delay: Delay,
}

impl<F> Timeout<F> {
    pub(crate) fn new(handle: Handle, deadline: Instant, future: F) -> Timeout<F> {
        Timeout {
            future,
            delay: Delay {
                handle,
                deadline,
                armed: None,
            },
        }
    }

    /// The inner future (`tokio::time::Timeout::get_ref`).
    pub fn get_ref(&self) -> &F {
        &self.future
    }

    /// The inner future (`tokio::time::Timeout::get_mut`).
    pub fn get_mut(&mut self) -> &mut F {
        &mut self.future
    }

    /// The inner future, the timer cancelled
    /// (`tokio::time::Timeout::into_inner`).
    pub fn into_inner(self) -> F {
        self.future
    }

    /// The deadline.
    pub fn deadline(&self) -> Instant {
        self.delay.deadline
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    /// # Panics
    /// If the timer system refuses timers (it has shut down).
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `future` is structurally pinned: it is never moved out of
        // a pinned `Timeout` (only `into_inner` moves it, which takes the
        // `Timeout` by value, so it is not pinned), and `Timeout` has no
        // `Drop` of its own. `delay` is not pinned (it is `Unpin`).
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: as above.
        let future = unsafe { Pin::new_unchecked(&mut this.future) };
        if let Poll::Ready(v) = future.poll(cx) {
            return Poll::Ready(Ok(v));
        }
        this.delay.poll(cx).map(|()| Err(Elapsed(())))
    }
}

impl<F: std::fmt::Debug> std::fmt::Debug for Timeout<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timeout")
            .field("future", &self.future)
            .field("deadline", &self.delay.deadline)
            .finish()
    }
}
