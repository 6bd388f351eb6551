//! [`Timeout`]: a future with a deadline, on an hrtimer.

use crate::handle::{deadline_after, Handle};
use crate::Instant;
use crate::Sleep;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// Requires `future` to complete within `duration`: `tokio::time::timeout`.
/// On the process-wide default runtime ([`Handle::global`]), with an
/// hrtimer (see [`Timeout`]). The future is polled first, so one that is
/// ready passes through even past the deadline.
pub fn timeout<F: IntoFuture>(duration: Duration, future: F) -> Timeout<F::IntoFuture> {
    // The runtime starts before the deadline is read, not after.
    let handle = Handle::global_started();
    Timeout::new(handle, deadline_after(duration), future.into_future())
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

/// A future with a deadline: `tokio::time::Timeout`. Made by [`timeout`],
/// [`timeout_at`] or a [`Handle`]'s methods. Completes with the future's
/// output, or with [`Elapsed`] once the deadline has passed and the future
/// is still pending.
///
/// As tokio's, it holds the future and a [`Sleep`] for the deadline,
/// side by side: nothing is allocated, ever. The future is polled first,
/// so a future ready at its deadline (or ready at once, past it) wins.
/// The sleep's timer is queued by the first poll that finds the future
/// pending (a future ready at once costs no timer), fires at the deadline
/// plus the wake-up's latency (µs, never early), and is taken out of its
/// queue without waiting when the `Timeout` is dropped. Like tokio's, it
/// is `!Unpin`: `.await` pins it.
pub struct Timeout<F> {
    future: F,
    delay: Sleep,
}

impl<F> Timeout<F> {
    pub(crate) fn new(handle: Handle, deadline: Instant, future: F) -> Timeout<F> {
        Timeout {
            future,
            delay: Sleep::new(handle, deadline),
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

    /// The deadline (tokio's `Timeout` has it through its `Sleep`).
    pub fn deadline(&self) -> Instant {
        self.delay.deadline()
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    /// # Panics
    /// If the timer system refuses timers (it has shut down).
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `future` and `delay` are structurally pinned: neither is
        // moved out of a pinned `Timeout` (only `into_inner` moves the
        // future, and it takes the `Timeout` by value, unpinned), and
        // `Timeout` has no `Drop` of its own.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: as above.
        let future = unsafe { Pin::new_unchecked(&mut this.future) };
        if let Poll::Ready(v) = future.poll(cx) {
            return Poll::Ready(Ok(v));
        }
        // SAFETY: as above.
        let delay = unsafe { Pin::new_unchecked(&mut this.delay) };
        delay.poll(cx).map(|()| Err(Elapsed(())))
    }
}

impl<F: std::fmt::Debug> std::fmt::Debug for Timeout<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timeout")
            .field("future", &self.future)
            .field("deadline", &self.delay.deadline())
            .finish()
    }
}
