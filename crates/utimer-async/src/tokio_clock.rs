//! tokio's clock, as the crate's futures follow it (the `tokio` feature).
//!
//! # What tokio's paused clock is
//!
//! A tokio runtime built with `start_paused(true)` (what
//! `#[tokio::test(start_paused = true)]` does), or paused by
//! `tokio::time::pause()`, has a clock of its own: `tokio::time::Instant::now()`
//! inside the runtime reads it, it moves only by `tokio::time::advance` and
//! by auto-advance, and auto-advance moves it, when the runtime has nothing
//! to run, to the earliest timer *in tokio's wheel*. A timer of ours is not
//! in that wheel: before this module, it waited in real time while the
//! test's clock stood still. tokio ties the pause to the runtime (a new
//! runtime starts with a fresh clock) and allows it only on a
//! `current_thread` runtime.
//!
//! # What the futures do under it
//!
//! * [`Instant::now`](crate::Instant::now) reads `tokio::time::Instant::now()`,
//!   which is the paused clock inside such a runtime and the real one
//!   everywhere else; so deadlines are taken on tokio's clock.
//! * A [`Sleep`](crate::Sleep) polled inside a runtime whose clock is
//!   paused, or was paused and resumed (it then runs at an offset from the
//!   real clock), *delegates*: it leaves its hrtimer and waits on a
//!   `tokio::time::Sleep` for the same deadline, boxed, from then on. tokio's
//!   driver then sees it, auto-advances to it and fires it exactly as it
//!   fires its own, so [`Timeout`](crate::Timeout),
//!   [`Interval`](crate::Interval) and [`DelayQueue`](crate::DelayQueue),
//!   which wait on a `Sleep`, have tokio's semantics there too: a timer due
//!   at a timeout's deadline wins, `advance` completes what is due, and the
//!   millisecond rounding of tokio's wheel applies.
//! * A pause by this crate's [`pause`](crate::pause) (its own clock) takes
//!   precedence on its thread; with the `test-util` feature, [`pause`],
//!   [`resume`] and [`advance`] called inside a tokio runtime are tokio's.
//!
//! [`pause`]: crate::pause
//! [`resume`]: crate::resume
//! [`advance`]: crate::advance
//!
//! # Whether tokio's clock can be paused at all: a constant
//!
//! Only a tokio built with its `test-util` feature has a pausable clock
//! (tokio's docs keep that feature out of release builds), and a crate cannot
//! read another crate's features. It can read what they compile to:
//! `tokio::runtime::Builder::start_paused` is an inherent method only under
//! `test-util`. A trait of ours gives `Builder` a method of the same name,
//! returning a type of ours; an inherent method wins over a trait's in
//! method resolution, so the return type of `builder.start_paused(true)`
//! says which one exists, and [`CAN_PAUSE`] is computed from that type, at
//! compile time, without calling anything. Without `test-util` every check
//! below is `if false` and compiles away: a program whose clock can never be
//! paused pays nothing, not even a load.
//!
//! # Whether the clock of the calling runtime is paused: per poll
//!
//! tokio has no public `is_paused`. [`clock_is_virtual`] decides it from
//! what is public: no runtime, or a multi-thread one (which tokio refuses to
//! pause), is real time; on any other, two readings of tokio's clock
//! bracketed by two of the real clock tell: a paused clock reads the same
//! twice, a resumed one reads outside the bracket (it runs at an offset),
//! and a clock that is real time reads inside it. Taken for paused by
//! mistake (a real clock read twice within the same nanosecond), a sleep
//! only waits on tokio's timer, which is correct on a real clock too, with
//! tokio's millisecond precision. A resumed clock passes for real time only
//! if its offset is within the bracket (tens of nanoseconds: it would take
//! an `advance` that matches the time spent paused to that precision); a
//! sleep on it could then complete that much early by tokio's clock.
//!
//! The check costs a thread-local read, an `Arc` count up and down and four
//! clock reads, on every poll of a `Sleep` in a build with `test-util`:
//! tests only.

use std::pin::Pin;
use std::time::Instant as StdInstant;
use tokio::runtime::{Builder, Handle, RuntimeFlavor};

/// What the stand-in `start_paused` returns: it was called, so tokio has no
/// inherent `start_paused`, and no pausable clock.
#[allow(dead_code)] // Never made: the call is only type-checked.
struct NoPause;

/// The stand-in: gives `Builder` a `start_paused` where tokio has none.
#[allow(dead_code)] // Unused where tokio's own method wins.
trait StandIn {
    fn start_paused(&mut self, _: bool) -> NoPause {
        NoPause
    }
}

impl StandIn for Builder {}

/// The answer that a return type of `start_paused` stands for.
trait Verdict {
    const PAUSABLE: bool;
}

/// tokio's own `start_paused` was chosen.
struct Pausable;

impl Verdict for Pausable {
    const PAUSABLE: bool = true;
}

impl Verdict for NoPause {
    const PAUSABLE: bool = false;
}

/// Maps the return type of `start_paused` (tokio's `&mut Builder`, with a
/// lifetime, or [`NoPause`]) to a [`Verdict`] without one.
trait ToVerdict {
    type V: Verdict;
}

impl ToVerdict for &mut Builder {
    type V = Pausable;
}

impl ToVerdict for NoPause {
    type V = NoPause;
}

/// Never called: only its type is used.
fn verdict<R: ToVerdict>(_: R) -> R::V {
    unreachable!("only type-checked")
}

/// The verdict of a function's return type.
const fn pausable<V: Verdict>(_: fn(&mut Builder) -> V) -> bool {
    V::PAUSABLE
}

/// Whether tokio was built with `test-util`, the only build in which its
/// clock can be paused (see the module's docs).
#[allow(unused_imports)] // Unused where tokio's own method wins.
pub(crate) const CAN_PAUSE: bool = {
    use StandIn as _;
    pausable(|b| verdict(b.start_paused(true)))
};

/// tokio's clock: the paused one inside a runtime whose clock is paused,
/// else the real one (offset, in a runtime that was paused and resumed).
#[inline]
pub(crate) fn now() -> StdInstant {
    tokio::time::Instant::now().into_std()
}

/// Whether the calling thread is inside a tokio runtime whose clock is not
/// the real clock: paused, or resumed at an offset (see the module's docs).
/// Always false where tokio's clock cannot pause.
#[inline]
pub(crate) fn clock_is_virtual() -> bool {
    CAN_PAUSE && clock_is_virtual_slow()
}

#[cold]
fn clock_is_virtual_slow() -> bool {
    match Handle::try_current() {
        Ok(h) if h.runtime_flavor() != RuntimeFlavor::MultiThread => {}
        _ => return false,
    }
    let before = StdInstant::now();
    let a = now();
    let b = now();
    let after = StdInstant::now();
    a == b || a < before || b > after
}

/// A `tokio::time::Sleep` until `deadline` (on tokio's clock), on the
/// calling thread's runtime, boxed.
pub(crate) fn sleep_until(deadline: StdInstant) -> Pin<Box<tokio::time::Sleep>> {
    Box::pin(tokio::time::sleep_until(deadline.into()))
}

/// Runs `end` when the calling thread's tokio runtime shuts down (its tasks
/// are dropped then): false, without running it, if there is none.
pub(crate) fn on_runtime_end(end: impl FnOnce() + Send + 'static) -> bool {
    let Ok(h) = Handle::try_current() else {
        return false;
    };
    struct OnDrop<F: FnOnce()>(Option<F>);
    impl<F: FnOnce()> Drop for OnDrop<F> {
        fn drop(&mut self) {
            if let Some(f) = self.0.take() {
                f();
            }
        }
    }
    let guard = OnDrop(Some(end));
    drop(h.spawn(async move {
        let _guard = guard;
        std::future::pending::<()>().await;
    }));
    true
}

/// With the `test-util` feature: [`pause`](crate::pause),
/// [`resume`](crate::resume) and [`advance`](crate::advance) inside a tokio
/// runtime are tokio's.
#[cfg(feature = "test-util")]
pub(crate) mod forward {
    use std::time::Duration;

    /// Whether the calling thread is inside a tokio runtime.
    pub(crate) fn in_runtime() -> bool {
        tokio::runtime::Handle::try_current().is_ok()
    }

    /// `tokio::time::pause`.
    #[track_caller]
    pub(crate) fn pause() {
        tokio::time::pause();
    }

    /// `tokio::time::resume`.
    #[track_caller]
    pub(crate) fn resume() {
        tokio::time::resume();
    }

    /// `tokio::time::advance`.
    pub(crate) async fn advance(duration: Duration) {
        tokio::time::advance(duration).await;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn can_pause_is_tokios_test_util() {
        // This crate's tests turn on tokio's `test-util`.
        const { assert!(super::CAN_PAUSE) };
    }
}
