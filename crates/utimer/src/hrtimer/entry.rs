//! The hrtimer entry: one allocation per timer, shared by its handle and,
//! while it is queued or firing, by its base.
//!
//! # Lifetime rules
//!
//! * The entry is an `Arc`. The handle ([`HrTimer`](crate::HrTimer)) holds
//!   one reference; a base's queue holds one while the timer is queued; an
//!   expiry run holds the queue's reference while the callback runs and
//!   either queues it again (restart) or drops it. So the entry outlives
//!   every use, with no unsafe code, and the last reference may be dropped
//!   on a worker after its callback returned: the callback's captures are
//!   then dropped there, never under a base lock.
//! * Dropping the handle cancels the timer without waiting and sets
//!   [`SHUTDOWN`](crate::sync::state::SHUTDOWN), so that a callback running at that moment cannot restart
//!   it.
//!
//! # Who may touch what
//!
//! * `handle`, `soft`, `hard` and the [`SHUTDOWN`](crate::sync::state::SHUTDOWN) flag are written only
//!   with the lock of the base named in `base` held. `soft` and `hard` may
//!   be read by anyone (`expires()`: a read racing a restart may see the
//!   old or the new expiry, never a torn one).
//! * `base` names the timer's base. It changes only under that base's lock
//!   and only while the timer is neither queued nor running (a clock
//!   change), or while moving it to another worker's base: then it carries
//!   [`MIGRATING_WORKER`] from the old lock's release until the new lock is held,
//!   and lockers wait (`lock_base`). A callback never moves off the base
//!   where it runs.

use crate::sync::{AtomicU32, AtomicU64};
use crate::time::Ktime;
use std::sync::atomic::Ordering::Relaxed;

/// `handle` of a timer that is not queued.
pub(crate) const NOT_QUEUED: u32 = u32::MAX;
/// Tag bit of `base`: the timer is moving between two bases. The
/// counterpart of the wheel entry's `MIGRATING`, which tags an address
/// where this tags a worker's number (`sync/state.rs`).
pub(crate) const MIGRATING_WORKER: u32 = 1 << 31;

/// What a callback returns: the kernel's `enum hrtimer_restart`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum HrRestart {
    /// Do not queue the timer again (`HRTIMER_NORESTART`).
    NoRestart,
    /// Queue it again at the expiry the callback set through
    /// [`HrFire::forward`] or [`HrFire::set_expires`] (`HRTIMER_RESTART`).
    /// Ignored if another thread started or cancelled the timer meanwhile.
    Restart,
}

/// A firing timer, as its callback sees it: the expiry run's clock reading
/// and the timer's expiry, which the callback may move before returning
/// [`HrRestart::Restart`].
#[derive(Debug)]
pub struct HrFire {
    pub(crate) now: u64,
    pub(crate) soft: u64,
    pub(crate) hard: u64,
}

impl HrFire {
    /// The clock reading of the expiry run, in nanoseconds of the timer's
    /// clock (the kernel's `hrtimer_cb_get_time()`).
    #[doc(alias = "hrtimer_cb_get_time")]
    pub fn now(&self) -> Ktime {
        Ktime::from_nanos(self.now)
    }

    /// The expiry the timer fired for (its soft expiry: the earliest time
    /// it may fire): the kernel's `hrtimer_get_softexpires()`.
    #[doc(alias = "hrtimer_get_softexpires")]
    pub fn expires(&self) -> Ktime {
        Ktime::from_nanos(self.soft)
    }

    /// Sets the expiry to restart at, keeping the slack (the kernel's
    /// `hrtimer_set_expires()`).
    #[doc(alias = "hrtimer_set_expires")]
    pub fn set_expires(&mut self, at: Ktime) {
        let slack = self.hard - self.soft;
        self.soft = at.as_nanos();
        self.hard = self.soft.saturating_add(slack);
    }

    /// [`now`](Self::now) in ns, for the crate's own callbacks.
    pub(crate) fn now_ns(&self) -> u64 {
        self.now
    }

    /// [`set_expires`](Self::set_expires) in ns, for the crate's own
    /// callbacks.
    pub(crate) fn set_expires_ns(&mut self, ns: u64) {
        self.set_expires(Ktime::from_nanos(ns));
    }

    /// Moves the expiry forward by whole `interval`s until it is after
    /// [`now`](Self::now), and returns how many intervals it moved (0 if it
    /// already was): the kernel's `hrtimer_forward_now()`. Periodic timers
    /// built on it do not drift: each expiry is the first one plus a whole
    /// number of intervals, whenever the callback runs. A zero interval
    /// moves nothing.
    #[doc(alias = "hrtimer_forward_now")]
    pub fn forward(&mut self, interval: std::time::Duration) -> u64 {
        let (soft, n) = forward_expiry(self.soft, self.now, interval);
        let slack = self.hard - self.soft;
        self.soft = soft;
        self.hard = soft.saturating_add(slack);
        n
    }
}

/// `expires` moved forward by whole `interval`s until it is after `now`,
/// and how many it moved: the arithmetic of the kernel's `hrtimer_forward()`
/// (saturating at `u64::MAX`, where it stops).
pub(crate) fn forward_expiry(expires: u64, now: u64, interval: std::time::Duration) -> (u64, u64) {
    let step = u64::try_from(interval.as_nanos()).unwrap_or(u64::MAX);
    if now < expires || step == 0 {
        return (expires, 0);
    }
    let n = (now - expires) / step + 1;
    match n.checked_mul(step).and_then(|d| expires.checked_add(d)) {
        Some(next) => (next, n),
        None => (u64::MAX, n),
    }
}

/// An hrtimer's callback.
pub(crate) type Callback = dyn Fn(&mut HrFire) -> HrRestart + Send + Sync;

/// The shared part of an hrtimer. `F` is the callback, unsized once the
/// entry is behind an `Arc<HrEntry>` (one allocation for both).
pub(crate) struct HrEntry<F: ?Sized = Callback> {
    /// The base's index in its table, [`MIGRATING_WORKER`] while moving.
    pub(crate) base: AtomicU32,
    /// The queue handle while queued, else [`NOT_QUEUED`]. Base lock.
    pub(crate) handle: AtomicU32,
    /// [`SHUTDOWN`](crate::sync::state::SHUTDOWN). Written under the base lock.
    pub(crate) flags: AtomicU32,
    /// Soft expiry (the earliest it may fire), ns of its base's clock.
    pub(crate) soft: AtomicU64,
    /// Hard expiry (soft + slack: the latest it should fire).
    pub(crate) hard: AtomicU64,
    pub(crate) callback: F,
}

impl<F> HrEntry<F> {
    pub(crate) fn new(base: u32, callback: F) -> Self {
        HrEntry {
            base: AtomicU32::new(base),
            handle: AtomicU32::new(NOT_QUEUED),
            flags: AtomicU32::new(0),
            soft: AtomicU64::new(0),
            hard: AtomicU64::new(0),
            callback,
        }
    }
}

impl<F: ?Sized> HrEntry<F> {
    /// Queued on its base (read under the base lock to be exact).
    #[inline]
    pub(crate) fn is_queued(&self) -> bool {
        self.handle.load(Relaxed) != NOT_QUEUED
    }

    /// The address that a base's `running` compares against.
    #[inline]
    pub(crate) fn addr(&self) -> *mut () {
        self as *const Self as *const () as *mut ()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn forward_moves_whole_intervals_past_now() {
        let ms = Duration::from_millis(1);
        assert_eq!(forward_expiry(10, 5, ms), (10, 0), "not yet expired");
        assert_eq!(forward_expiry(1_000, 1_000, ms), (1_001_000, 1));
        assert_eq!(forward_expiry(1_000, 3_500_000, ms), (4_001_000, 4));
        assert_eq!(forward_expiry(1_000, 3_500_000, Duration::ZERO), (1_000, 0));
        assert_eq!(forward_expiry(u64::MAX - 5, u64::MAX, ms), (u64::MAX, 1));
        assert_eq!(forward_expiry(0, u64::MAX, Duration::MAX).0, u64::MAX);
    }

    #[test]
    fn fire_keeps_the_slack() {
        let mut f = HrFire {
            now: 10_500,
            soft: 10_000,
            hard: 10_100,
        };
        assert_eq!(f.forward(Duration::from_nanos(1_000)), 1);
        assert_eq!((f.soft, f.hard), (11_000, 11_100));
        f.set_expires(Ktime::MAX);
        assert_eq!((f.soft, f.hard), (u64::MAX, u64::MAX));
    }
}
