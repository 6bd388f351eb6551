//! [`Interval`] as a [`futures_core::Stream`] (the `stream` feature):
//! what tokio-stream's `IntervalStream` wraps a `tokio::time::Interval`
//! for.

use crate::{Instant, Interval};
use futures_core::Stream;
use std::pin::Pin;
use std::task::{Context, Poll};

/// An [`Interval`] is a stream of its ticks, as tokio-stream's
/// `tokio_stream::wrappers::IntervalStream` makes a `tokio::time::Interval`
/// one: each item is the tick's deadline, as [`Interval::poll_tick`]
/// returns it, and the stream never ends.
///
/// Where tokio needs the wrapper (`IntervalStream::new(interval)`), this
/// crate's `Interval` is the stream itself: use it where an
/// `IntervalStream` was, and drop the wrapping.
impl Stream for Interval {
    type Item = Instant;

    /// The next tick (`IntervalStream::poll_next`): [`Interval::poll_tick`],
    /// in `Some`.
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Instant>> {
        self.get_mut().poll_tick(cx).map(Some)
    }

    /// Endless, as `IntervalStream::size_hint`: `(usize::MAX, None)`.
    fn size_hint(&self) -> (usize, Option<usize>) {
        (usize::MAX, None)
    }
}
