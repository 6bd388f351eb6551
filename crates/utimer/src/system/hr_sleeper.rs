//! [`HrSleeper`]: an hrtimer that wakes a task, embedded in the pinned
//! memory of whoever waits (`hrtimer/sleeper.rs` has the protocol).

use super::TimerSystem;
use crate::hrtimer::sleeper::{self, SleeperNode, FIRED};
use crate::time::{ClockId, Ktime};
use crate::TimerError;
use std::marker::PhantomPinned;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

/// Something that names one [`TimerSystem`] and keeps it alive: what an
/// [`HrSleeper`] holds to reach its base.
///
/// # Safety
/// [`system`](Self::system) returns the same system every time it is
/// called on the same value, and that system lives at least as long as the
/// value (an [`HrSleeper`] reaches its base through it in its `drop`).
pub unsafe trait SystemRef {
    /// The system.
    fn system(&self) -> &TimerSystem;
}

// SAFETY: the `Arc` keeps its system alive and always names it.
unsafe impl SystemRef for Arc<TimerSystem> {
    #[inline]
    fn system(&self) -> &TimerSystem {
        self
    }
}

// SAFETY: a `'static` reference lives forever and always names one system.
unsafe impl SystemRef for &'static TimerSystem {
    #[inline]
    fn system(&self) -> &TimerSystem {
        self
    }
}

/// A high-resolution timer that wakes a task, stored in the memory of the
/// future that waits on it: the kernel's `struct hrtimer_sleeper`
/// (`hrtimer_sleeper_start_expires()`, woken by `hrtimer_wakeup()`).
///
/// Where an [`HrTimer`](crate::HrTimer) is an allocated entry with a
/// callback, a sleeper is 64 bytes of links, expiry and [`Waker`] plus its
/// [`SystemRef`], queued in its base's intrusive heap while it waits:
/// starting, firing and dropping it allocate nothing. It must be pinned
/// (`Box::pin`, `std::pin::pin!`, or a field of a pinned future) before it
/// is started, and its drop takes it out of its base's heap.
///
/// * [`start`](Self::start) queues it on the starting thread's worker
///   for its clock: its home worker, or, on a system whose workers are
///   pinned to CPUs ([`Builder::pin_workers`](crate::Builder::pin_workers)),
///   the worker of the CPU it runs on at that moment (the first start
///   binds it; restarts stay there, unless that worker is offline); the
///   worker's expiry run wakes its waker once the clock reads its expiry,
///   never earlier.
/// * [`poll_expired`](Self::poll_expired) is ready once it fired, and
///   otherwise makes the context's waker the one its fire wakes.
/// * Dropping or [cancelling](Self::cancel) it never waits: its "callback"
///   is a waker taken under the base lock and woken after it, so nothing
///   of the sleeper is in use once it is out of the heap.
/// * When the system shuts down while it is queued, it is woken and
///   `poll_expired` answers [`TimerError::Shutdown`].
pub struct HrSleeper<S: SystemRef> {
    node: SleeperNode,
    sys: S,
    _pinned: PhantomPinned,
}

impl<S: SystemRef> HrSleeper<S> {
    /// A sleeper on `sys`'s bases of `clock`, to fire at `expires` (a time
    /// of `clock`) once started. The kernel's
    /// `hrtimer_setup_sleeper_on_stack()`.
    #[doc(alias = "hrtimer_setup_sleeper_on_stack")]
    pub fn new(sys: S, clock: ClockId, expires: Ktime) -> Self {
        HrSleeper {
            node: SleeperNode::new(clock, expires.as_nanos()),
            sys,
            _pinned: PhantomPinned,
        }
    }

    /// The system reference it holds.
    pub fn system_ref(&self) -> &S {
        &self.sys
    }

    /// The clock its expiry counts in.
    pub fn clock(&self) -> ClockId {
        self.node.clock()
    }

    /// The expiry it was last given (the kernel's `hrtimer_get_expires()`).
    #[inline]
    #[doc(alias = "hrtimer_get_expires")]
    pub fn expires(&self) -> Ktime {
        Ktime::from_nanos(self.node.deadline())
    }

    /// Queued, waiting to fire (`hrtimer_is_queued()`).
    #[inline]
    pub fn is_queued(&self) -> bool {
        sleeper::is_queued(self.node.state())
    }

    /// It fired since it was last started (its waker was woken).
    #[inline]
    pub fn is_expired(&self) -> bool {
        self.node.state() == FIRED
    }

    /// Sets the expiry without starting it: a sleeper that is not queued
    /// keeps its state (a fired one stays fired) until it is started; a
    /// queued one moves to `expires`, as [`start`](Self::start) with its
    /// current waker would (the kernel's `hrtimer_set_expires()`).
    ///
    /// # Errors
    /// As [`start`](Self::start), for a queued sleeper.
    #[doc(alias = "hrtimer_set_expires")]
    pub fn set_expires(self: Pin<&mut Self>, expires: Ktime) -> Result<(), TimerError> {
        if self.is_queued() {
            self.start(expires, None)
        } else {
            self.node.set_expires_idle(expires.as_nanos());
            Ok(())
        }
    }

    /// Queues it to fire when its clock reads `expires` (moving it if it is
    /// queued), with `waker` as the waker to wake (`None` keeps the one it
    /// has; a fired sleeper has none until it is polled). The kernel's
    /// `hrtimer_sleeper_start_expires()`.
    ///
    /// A time that its base's latest expiry run had already reached fires
    /// here: it is marked expired without being queued, and its waker is
    /// woken before this returns. Another time already passed fires at the
    /// worker's next expiry run, which is woken for it.
    ///
    /// Moving a queued sleeper later, with no new waker (or the same one),
    /// takes no lock and leaves it where it is in its queue: when the old
    /// time comes, the expiry run finds the new one and queues it again
    /// for it (tokio's `TimerEntry::reset` to a later deadline does the
    /// same). It still never fires before `expires`.
    ///
    /// # Errors
    /// [`TimerError::Shutdown`] if the system is shut down (nothing
    /// changed).
    #[doc(alias = "hrtimer_sleeper_start_expires")]
    pub fn start(
        self: Pin<&mut Self>,
        expires: Ktime,
        waker: Option<&Waker>,
    ) -> Result<(), TimerError> {
        let expires = expires.as_nanos();
        if sleeper::try_extend(&self.node, expires, waker) {
            return Ok(());
        }
        let sys = self.sys.system();
        let bases = &sys.core.bases;
        // SAFETY: we own the node through `Pin<&mut Self>`, so it is pinned
        // and stays so until dropped, and our drop cancels it.
        let (wake, old) = unsafe {
            sleeper::start(
                &sys.core.nohz.hr,
                &self.node,
                || bases.route(bases.local_worker()),
                expires,
                waker,
            )?
        };
        drop(old.replaced);
        if let Some(w) = old.to_wake {
            w.wake();
        }
        if let Some(w) = wake {
            // The worker, and a thread that serves the hrtimers (`serve.rs`).
            crate::hrtimer::HrEnv::wake(&sys.core, w);
        }
        Ok(())
    }

    /// Ready once it fired since it was last started; while it is queued,
    /// `cx`'s waker is the one its fire wakes (a changed waker replaces the
    /// old one). Pending for a sleeper that was never started (nothing will
    /// wake it).
    ///
    /// # Errors
    /// `Ready(Err(`[`TimerError::Shutdown`]`))` if the system shut down
    /// while it was queued.
    pub fn poll_expired(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), TimerError>> {
        let (r, old) = sleeper::poll(&self.sys.system().core.nohz.hr, &self.node, cx.waker());
        drop(old);
        r
    }

    /// Marks it fired without queuing it, if it is not queued: for a
    /// future whose deadline had passed when it was first polled, which
    /// completes at once (the kernel's `hrtimer_start()` of an expired
    /// timer fires it at once). [`is_expired`](Self::is_expired) then
    /// answers true until it is started again. A queued sleeper is left
    /// as it is.
    pub fn complete(self: Pin<&mut Self>) {
        self.node.mark_fired_idle();
    }

    /// Takes it out of its base's queue; returns whether it was queued (a
    /// fired sleeper stays fired). Never waits. The kernel's
    /// `hrtimer_try_to_cancel()`.
    #[doc(alias = "hrtimer_try_to_cancel")]
    pub fn cancel(self: Pin<&mut Self>) -> bool {
        sleeper::cancel(&self.sys.system().core.nohz.hr, &self.node)
    }
}

impl<S: SystemRef> Drop for HrSleeper<S> {
    fn drop(&mut self) {
        sleeper::cancel(&self.sys.system().core.nohz.hr, &self.node);
    }
}

impl<S: SystemRef> std::fmt::Debug for HrSleeper<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HrSleeper")
            .field("clock", &self.clock())
            .field("expires", &self.expires())
            .field("queued", &self.is_queued())
            .field("expired", &self.is_expired())
            .finish()
    }
}
