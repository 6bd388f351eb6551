//! [`Sleep`]: a future that completes at its deadline, on an hrtimer.

use crate::clock::{self, TestClock, VirtualTimer};
use crate::handle::{deadline_after, Handle};
use crate::Instant;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant as StdInstant};
use utimer::{ClockId, HrSleeper, Ktime};

/// Waits until `duration` has elapsed, to the nanosecond plus the wake-up's
/// latency, never less: `tokio::time::sleep`, and the kernel's `nanosleep`
/// (an hrtimer). On the process-wide default runtime ([`Handle::global`]).
///
/// A `duration` beyond `Instant`'s range sleeps about 30 years.
pub fn sleep(duration: Duration) -> Sleep {
    // The runtime starts before the deadline is read, not after.
    let handle = Handle::global_started();
    Sleep::new(handle, deadline_after(duration))
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
///   waker, 72 bytes with the handle; 80 with the test clock's pointer,
///   where tokio's `Sleep` is 112) that its first poll queues on the
///   worker of the CPU it runs on, whose thread wakes the task. Nothing is
///   allocated (but see the test clock below): not when it is created,
///   polled, [reset](Sleep::reset), fired or dropped. A `Sleep` whose
///   deadline has passed when it is first polled completes without
///   queueing anything.
/// * Polled on a thread whose clock is [paused](crate::pause), it waits
///   on the paused clock instead (see the crate docs' test clock), and
///   completes when that clock reaches its deadline.
/// * With the `tokio` feature, polled inside a tokio runtime whose clock is
///   paused (`start_paused`, `tokio::time::pause()`), or was paused and
///   resumed, it leaves its hrtimer and waits on a `tokio::time::Sleep`
///   for the same deadline (boxed), from then on: tokio's driver
///   auto-advances to it and fires it as its own, on tokio's millisecond
///   ticks. Only a tokio built with `test-util` can pause; without it,
///   the check compiles to nothing.
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
/// * In a process where a thread [paused](crate::pause) its clock, each
///   `Sleep` also boxes its test-clock state (a deadline and its place
///   among the paused clock's timers; under a paused tokio clock, the
///   tokio timer); no other program pays for it.
pub struct Sleep {
    timer: HrSleeper<Handle>,
    /// The test clock's state: made only in a process where a thread
    /// paused its clock ([`clock::ever_paused`]), so that no other
    /// program pays for it.
    test: Option<Box<TestState>>,
}

/// What a `Sleep` needs for the test clock.
#[derive(Debug)]
struct TestState {
    /// The deadline by the crate's clock (the timer's expiry is its
    /// conversion to real time, which a paused clock's resume moves).
    deadline: StdInstant,
    /// Its place among the paused clock's timers, while it waits on one.
    paused: VirtualTimer,
    /// The tokio timer it waits on instead of its own, once polled in a
    /// tokio runtime whose clock is paused (see `tokio_clock`).
    #[cfg(feature = "tokio")]
    tokio: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Sleep {
    pub(crate) fn new(handle: Handle, deadline: Instant) -> Sleep {
        let deadline = deadline.into_std();
        let (at, test) = if clock::ever_paused() {
            let at = handle.ns_of(clock::to_real(deadline));
            (at, Some(TestState::boxed(deadline)))
        } else {
            (handle.ns_of(deadline), None)
        };
        Sleep {
            timer: HrSleeper::new(handle, ClockId::Monotonic, at),
            test,
        }
    }

    /// The pinned timer, and the test clock's state.
    #[inline]
    fn fields(self: Pin<&mut Self>) -> (Pin<&mut HrSleeper<Handle>>, &mut Option<Box<TestState>>) {
        // SAFETY: structural pinning of `timer` only: it is never moved
        // out of a pinned `Sleep` (which has no `Drop` of its own and is
        // `!Unpin` because the timer is); `test` is a plain `Unpin` field
        // that the `Sleep` never relies on staying in place.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: as above.
        (
            unsafe { Pin::new_unchecked(&mut this.timer) },
            &mut this.test,
        )
    }

    /// The instant at which the future completes
    /// (`tokio::time::Sleep::deadline`).
    pub fn deadline(&self) -> Instant {
        Instant::from_std(self.clock_deadline())
    }

    /// The deadline by the crate's clock: the test state's, or else the
    /// timer's expiry, made when no clock had been paused (so its
    /// conversion was the identity).
    fn clock_deadline(&self) -> StdInstant {
        match &self.test {
            Some(t) => t.deadline,
            None => self.timer.system_ref().instant_of(self.timer.expires()),
        }
    }

    /// Whether it has completed: its timer fired, or a poll found its
    /// deadline passed (`tokio::time::Sleep::is_elapsed`). As tokio's, a
    /// `Sleep` that was never polled has not elapsed, even if its deadline
    /// has passed, and a [reset](Sleep::reset) to a later deadline makes it
    /// pending again.
    pub fn is_elapsed(&self) -> bool {
        #[cfg(feature = "tokio")]
        if crate::tokio_clock::CAN_PAUSE {
            if let Some(s) = self.test.as_ref().and_then(|t| t.tokio.as_ref()) {
                return s.is_elapsed();
            }
        }
        self.timer.is_expired() || self.test.as_ref().is_some_and(|t| t.paused.fired())
    }

    /// Moves the deadline to `deadline`, earlier or later, whether or not
    /// the future has completed: it is pending again until the new
    /// deadline (`tokio::time::Sleep::reset`, the kernel's
    /// `hrtimer_start()` on a queued timer). Moves the same timer in its
    /// queue: no allocation, no clock read; a move to a later deadline
    /// takes no lock either (the timer keeps its place, and is queued
    /// again for the new deadline when the old one comes, as tokio's
    /// `reset` does). A deadline at or before one
    /// that already fired completes at once; a task waiting on it is woken
    /// if the new deadline has passed.
    ///
    /// # Panics
    /// If the timer system refuses timers (it has shut down).
    pub fn reset(self: Pin<&mut Self>, deadline: Instant) {
        self.reset_inner(deadline, true);
    }

    /// [`reset`](Self::reset), except that a sleep waiting on tokio's
    /// timer leaves it, to wait on a new one from its next poll: what
    /// tokio's `Interval` does after a tick (`reset_without_reregister`),
    /// so that the task is not woken for the next tick unless it polls.
    pub(crate) fn reset_without_reregister(self: Pin<&mut Self>, deadline: Instant) {
        self.reset_inner(deadline, false);
    }

    fn reset_inner(self: Pin<&mut Self>, deadline: Instant, _reregister: bool) {
        let deadline = deadline.into_std();
        let (t, test) = self.fields();
        #[cfg(feature = "tokio")]
        if crate::tokio_clock::CAN_PAUSE {
            if let Some(state) = test.as_mut().filter(|s| s.tokio.is_some()) {
                state.deadline = deadline;
                if _reregister {
                    // It waits on tokio's timer: tokio's reset.
                    if let Some(s) = &mut state.tokio {
                        s.as_mut().reset(deadline.into());
                    }
                    return;
                }
                // Its next poll makes a tokio timer, or queues its own.
                state.tokio = None;
            }
        }
        let at = if clock::ever_paused() {
            let state = test.get_or_insert_with(|| TestState::boxed(deadline));
            state.deadline = deadline;
            let at = t.system_ref().ns_of(clock::to_real(deadline));
            if state.paused.reset(deadline) {
                // It waits on the paused clock, which moved it; its timer
                // is idle (not queued: this cannot fail) and takes the
                // real expiry, for when the clock resumes.
                if let Err(e) = t.set_expires(at) {
                    panic!("utimer-async: cannot start a timer: {e}");
                }
                return;
            }
            at
        } else {
            t.system_ref().ns_of(deadline)
        };
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

impl TestState {
    fn boxed(deadline: StdInstant) -> Box<TestState> {
        Box::new(TestState {
            deadline,
            paused: VirtualTimer::default(),
            #[cfg(feature = "tokio")]
            tokio: None,
        })
    }
}

impl Future for Sleep {
    type Output = ();

    /// # Panics
    /// If the timer system refuses timers (it has shut down).
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // A constant: false unless tokio was built with `test-util`.
        #[cfg(feature = "tokio")]
        if crate::tokio_clock::CAN_PAUSE {
            return self.poll_under_tokio(cx);
        }
        self.poll_own(cx)
    }
}

impl Sleep {
    /// A poll on the crate's own clock: the real one, or the calling
    /// thread's paused one.
    #[inline]
    fn poll_own(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // In a process where no clock was ever paused: one relaxed load.
        let deadline = if clock::ever_paused() {
            if let Some(clock) = clock::paused() {
                return self.poll_paused(&clock, cx);
            }
            Some(self.clock_deadline())
        } else {
            None
        };
        let (mut t, test) = self.fields();
        let state = if t.is_queued() || t.is_expired() {
            t.poll_expired(cx)
        } else {
            let at = match deadline {
                None => t.expires(),
                // The clock may have moved away from real time since the
                // expiry was converted; and it left the paused clock.
                Some(d) => {
                    if let Some(s) = test.as_mut() {
                        drop(s.paused.release());
                    }
                    t.system_ref().ns_of(clock::to_real(d))
                }
            };
            let passed = match deadline {
                None => passed(t.system_ref(), at),
                Some(d) => clock::now() >= d,
            };
            if passed {
                t.complete();
                return Poll::Ready(());
            }
            // The first poll (or the first after a reset that found it
            // idle): queue it with this waker.
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

/// How far ahead of the coarse clock a deadline is surely not passed yet:
/// the coarse clock trails the precise one by at most a kernel tick (10 ms
/// at the lowest `HZ`, 100). Wrong only in the safe direction: a deadline
/// taken for not passed is queued, and fires at once.
const COARSE_LAG: u64 = 20_000_000;

/// Whether the deadline at `at` ns has passed: the coarse clock (a few
/// ns, no hardware read) decides for deadlines it shows passed and for
/// those more than [`COARSE_LAG`] ahead of it, which is nearly every
/// timeout and sleep; the precise clock decides the rest.
#[inline]
fn passed(handle: &Handle, at: Ktime) -> bool {
    let at = at.as_nanos();
    let coarse = handle
        .system()
        .clock_ns_coarse(ClockId::Monotonic)
        .as_nanos();
    coarse >= at || (at - coarse <= COARSE_LAG && handle.ns_of(StdInstant::now()).as_nanos() >= at)
}

impl Sleep {
    /// A poll where tokio's clock can be paused (tokio built with
    /// `test-util`): on tokio's timer if it waits on one already, or if the
    /// calling thread's runtime has a paused (or resumed, offset) clock;
    /// else on its own. The thread's own paused clock comes first.
    #[cfg(feature = "tokio")]
    #[inline(never)]
    fn poll_under_tokio(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        use crate::tokio_clock;
        if clock::paused().is_some() {
            return self.poll_own(cx);
        }
        let delegated = self.test.as_ref().is_some_and(|t| t.tokio.is_some());
        if delegated || tokio_clock::clock_is_virtual() {
            return self.poll_tokio(cx);
        }
        self.poll_own(cx)
    }

    /// A poll on tokio's timer: the sleep leaves its own, and waits on a
    /// `tokio::time::Sleep` for its deadline from now on.
    #[cfg(feature = "tokio")]
    #[cold]
    fn poll_tokio(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let deadline = self.clock_deadline();
        let (mut t, test) = self.fields();
        if t.is_queued() {
            t.as_mut().cancel();
        }
        let state = test.get_or_insert_with(|| TestState::boxed(deadline));
        drop(state.paused.release());
        let at = state.deadline;
        let s = state
            .tokio
            .get_or_insert_with(|| crate::tokio_clock::sleep_until(at));
        let r = s.as_mut().poll(cx);
        if r.is_ready() {
            t.complete();
        }
        r
    }

    /// A poll on the calling thread's paused clock: the sleep leaves its
    /// real timer, if it had one queued, and waits among the clock's
    /// timers.
    #[cold]
    fn poll_paused(self: Pin<&mut Self>, clock: &Arc<TestClock>, cx: &mut Context<'_>) -> Poll<()> {
        let deadline = self.clock_deadline();
        let (mut t, test) = self.fields();
        if t.is_queued() {
            t.as_mut().cancel();
        }
        let state = test.get_or_insert_with(|| TestState::boxed(deadline));
        let r = state.paused.poll(clock, state.deadline, cx);
        if r.is_ready() {
            t.complete();
        }
        r
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
