//! Timers: created once with a callback, then armed, re-armed and cancelled
//! any number of times, from any thread, with no allocation.
//!
//! # Ground rules
//!
//! * Any thread may call any method on any timer at any time; a timer is on
//!   at most one base, found with `lock_timer_base()` (see [`crate::base`]).
//! * A timer armed on a worker's thread (see
//!   [`TimerSystem::enter`](crate::TimerSystem::enter)) goes to that
//!   worker's base; from other threads, to the thread's home worker, picked
//!   once per thread without any lock.
//! * The callback runs on the thread that expires the base, outside every
//!   lock, and receives a borrowed handle to its own timer, through which it
//!   may re-arm or delete it.
//! * Dropping the [`Timer`] cancels it and waits until its callback is not
//!   running anywhere, then frees it. Dropping it inside its own callback
//!   is allowed: the memory is freed when the callback returns.
//! * Expiries are absolute ticks of the system's clock (the kernel's
//!   jiffies); `*_after` and `*_at` convert from `Duration` and `Instant`,
//!   rounding up so the timer is never early.

pub(crate) mod delete_sync;
pub(crate) mod modify;
pub(crate) mod raw;
pub(crate) mod state;

use crate::base::lock_timer_base;
use crate::TimerError;
use modify::Mode;
use raw::RawTimer;
use state::{expires_of, is_pending};
use std::ptr::NonNull;
use std::sync::atomic::Ordering::Acquire;
use std::time::{Duration, Instant};

/// Flags fixed when a timer is created (the kernel's `TIMER_*` flags).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct TimerFlags(u32);

impl TimerFlags {
    /// Expire on the worker the timer was armed on, never elsewhere
    /// (`TIMER_PINNED`). Pinned timers live in the worker's local base.
    pub const PINNED: TimerFlags = TimerFlags(state::PINNED);
    /// Never wake an idle worker for this timer; it runs when the worker is
    /// awake anyway (`TIMER_DEFERRABLE`). Lives in the deferrable base.
    pub const DEFERRABLE: TimerFlags = TimerFlags(state::DEFERRABLE);

    /// No flags: a movable timer in the worker's global base.
    pub const fn empty() -> TimerFlags {
        TimerFlags(0)
    }

    /// Whether every flag of `other` is set.
    pub const fn contains(self, other: TimerFlags) -> bool {
        self.0 & other.0 == other.0
    }

    pub(crate) const fn bits(self) -> u32 {
        self.0
    }
}

impl std::ops::BitOr for TimerFlags {
    type Output = TimerFlags;
    fn bitor(self, rhs: TimerFlags) -> TimerFlags {
        TimerFlags(self.0 | rhs.0)
    }
}

/// A timer: the kernel's `struct timer_list`.
///
/// Created by [`TimerSystem::timer`](crate::TimerSystem::timer). Methods take
/// `&self` and may be called from any thread; share a timer with `Arc` or
/// by reference. One heap allocation of 32 bytes plus the callback's
/// captures; the handle is one pointer.
pub struct Timer {
    raw: NonNull<RawTimer>,
}

// SAFETY: the callback is Send + Sync, and all shared state is synchronized
// (atomics, or fields protected by the base lock).
unsafe impl Send for Timer {}
// SAFETY: as above; every method takes &self and synchronizes internally.
unsafe impl Sync for Timer {}

impl Timer {
    pub(crate) fn from_raw(raw: NonNull<RawTimer>) -> Timer {
        Timer { raw }
    }

    /// The system the timer belongs to.
    pub(crate) fn system_handle(&self) -> &crate::system::Shared {
        self.raw().system()
    }

    #[inline]
    fn raw(&self) -> &RawTimer {
        // SAFETY: the handle owns the allocation (or, inside a callback,
        // borrows it while the callback runs): it is live.
        unsafe { self.raw.as_ref() }
    }

    /// Arms a timer that is not pending to expire at tick `expires`, on the
    /// caller's base. The kernel's `add_timer()`.
    ///
    /// # Errors
    /// [`TimerError::AlreadyPending`] if it is pending (use
    /// [`modify`](Self::modify) to re-arm), [`TimerError::Shutdown`] if its
    /// system has been dropped.
    #[inline]
    pub fn add(&self, expires: u64) -> Result<(), TimerError> {
        modify::modify(self.raw, expires, Mode::Add(None)).map(|_| ())
    }

    /// Arms a timer that is not pending on `worker`'s base. The kernel's
    /// `add_timer_on()`. If the timer's callback is running right now, the
    /// timer stays on the base running it (so that the callback never runs
    /// on two workers at once) and moves on its next arming.
    ///
    /// # Errors
    /// As [`add`](Self::add), plus [`TimerError::NoSuchWorker`].
    pub fn add_on(&self, worker: usize, expires: u64) -> Result<(), TimerError> {
        self.raw().system().check_worker(worker)?;
        modify::modify(self.raw, expires, Mode::Add(Some(worker as u32))).map(|_| ())
    }

    /// Arms or re-arms the timer to expire at tick `expires`; returns whether
    /// it was pending. The kernel's `mod_timer()`.
    ///
    /// Re-arming to an expiry that fires in the same tick as the current one
    /// takes no lock (seed 002; see `timer/modify.rs`). An expiry in the past
    /// fires at the next expiry run; one beyond the wheel's range (12 days at
    /// 1 ms ticks) is clamped to it.
    ///
    /// # Errors
    /// [`TimerError::Shutdown`] if the timer's system has been dropped.
    #[inline]
    pub fn modify(&self, expires: u64) -> Result<bool, TimerError> {
        modify::modify(self.raw, expires, Mode::Modify)
    }

    /// Re-arms the timer only if it is pending; returns whether it was. The
    /// kernel's `mod_timer_pending()`.
    ///
    /// # Errors
    /// [`TimerError::Shutdown`] if the timer's system has been dropped.
    #[inline]
    pub fn modify_pending(&self, expires: u64) -> Result<bool, TimerError> {
        modify::modify(self.raw, expires, Mode::PendingOnly)
    }

    /// Arms the timer, or moves a pending timer's expiry *earlier* (never
    /// later); returns whether it was pending. The kernel's `timer_reduce()`.
    ///
    /// # Errors
    /// [`TimerError::Shutdown`] if the timer's system has been dropped.
    #[inline]
    pub fn reduce(&self, expires: u64) -> Result<bool, TimerError> {
        modify::modify(self.raw, expires, Mode::Reduce)
    }

    /// Cancels the timer; returns whether it was pending. Its callback may
    /// still be running on another thread when this returns. The kernel's
    /// `timer_delete()` (formerly `del_timer()`).
    #[inline]
    pub fn delete(&self) -> bool {
        modify::delete(self.raw())
    }

    /// Cancels the timer and waits until its callback is not running on any
    /// worker; returns whether it was pending. On `Ok` the callback neither
    /// runs nor will run unless the timer is armed again. The kernel's
    /// `timer_delete_sync()`: one base looked at, whatever the number of
    /// workers; an idle timer costs one atomic load. Read the
    /// synchronization rules in `timer/delete_sync.rs`: never call it while
    /// holding a lock the callback takes.
    ///
    /// # Errors
    /// [`TimerError::InOwnCallback`] when called from the timer's own
    /// callback (it would wait for itself); nothing is changed then.
    pub fn delete_sync(&self) -> Result<bool, TimerError> {
        delete_sync::delete_sync(self.raw, delete_sync::Sync::Wait, false)
    }

    /// Cancels the timer unless its callback is running; returns whether it
    /// was pending. The kernel's `try_to_del_timer_sync()`.
    ///
    /// # Errors
    /// [`TimerError::Running`] if the callback is running on some worker
    /// (or is the caller); nothing is changed then.
    pub fn try_delete_sync(&self) -> Result<bool, TimerError> {
        delete_sync::delete_sync(self.raw, delete_sync::Sync::Try, false)
    }

    /// Cancels the timer and refuses every later arm: `add`, `modify`,
    /// `reduce` and the rest then do nothing and report the timer as not
    /// pending. Returns whether it was pending. Does not wait for a running
    /// callback. The kernel's `timer_shutdown()`.
    pub fn shutdown(&self) -> bool {
        delete_sync::shutdown(self.raw)
    }

    /// [`shutdown`](Self::shutdown), then waits until the callback is not
    /// running, as [`delete_sync`](Self::delete_sync). Because the callback's
    /// own re-arms are refused, this terminates even for a timer that
    /// re-arms itself. The kernel's `timer_shutdown_sync()`.
    ///
    /// # Errors
    /// [`TimerError::InOwnCallback`] when called from the timer's own
    /// callback; nothing is changed then.
    pub fn shutdown_sync(&self) -> Result<bool, TimerError> {
        delete_sync::delete_sync(self.raw, delete_sync::Sync::Wait, true)
    }

    /// The 2004 `del_timer_sync()` that seed 000 replaced: it scans every
    /// base's running timer, so it costs O(workers). For benchmarks only
    /// (`utimer bench` shows seed 000's table with it); use
    /// [`delete_sync`](Self::delete_sync).
    #[doc(hidden)]
    pub fn delete_sync_scan_all(&self) -> bool {
        delete_sync::delete_sync_scan_all(self.raw)
    }

    /// Whether [`shutdown`](Self::shutdown) has been called.
    pub fn is_shutdown(&self) -> bool {
        self.raw().flags.load(Acquire) & state::SHUTDOWN != 0
    }

    /// Whether the timer is queued. The kernel's `timer_pending()`.
    #[inline]
    pub fn is_pending(&self) -> bool {
        is_pending(self.raw().expires_idx.load(Acquire))
    }

    /// The expiry of record, in ticks: the last expiry the timer was queued
    /// with (clamped to the wheel's range). A re-arm that lands in the same
    /// bucket fires at the same tick and keeps this value. The kernel's
    /// `timer->expires`.
    #[inline]
    pub fn expires(&self) -> u64 {
        expires_of(self.raw().expires_idx.load(Acquire))
    }

    /// The tick at which a pending timer fires: its expiry rounded up to its
    /// wheel level's granularity. `None` if not pending; `Some(expires)` for
    /// a timer already due.
    pub fn fires_at(&self) -> Option<u64> {
        let word = self.raw().expires_idx.load(Acquire);
        if !is_pending(word) {
            return None;
        }
        let expires = expires_of(word);
        Some(crate::wheel::bucket_expiry(expires, state::idx_of(word)).unwrap_or(expires))
    }

    /// [`add`](Self::add) after `d` (rounded up to whole ticks).
    ///
    /// # Errors
    /// As [`add`](Self::add).
    pub fn add_after(&self, d: Duration) -> Result<(), TimerError> {
        self.add(self.raw().system().ticks.deadline_after(d))
    }

    /// [`modify`](Self::modify) to `d` from now (rounded up: never early).
    ///
    /// # Errors
    /// As [`modify`](Self::modify).
    pub fn modify_after(&self, d: Duration) -> Result<bool, TimerError> {
        self.modify(self.raw().system().ticks.deadline_after(d))
    }

    /// [`modify`](Self::modify) to fire at or after `deadline`.
    ///
    /// # Errors
    /// As [`modify`](Self::modify).
    pub fn modify_at(&self, deadline: Instant) -> Result<bool, TimerError> {
        self.modify(self.raw().system().ticks.deadline_at(deadline))
    }

    /// The flags the timer was created with.
    pub fn flags(&self) -> TimerFlags {
        let flags = self.raw().flags.load(Acquire);
        TimerFlags(flags & (state::PINNED | state::DEFERRABLE))
    }
}

impl std::fmt::Debug for Timer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timer")
            .field("pending", &self.is_pending())
            .field("expires", &self.expires())
            .field("flags", &self.flags())
            .finish()
    }
}

/// Detaches `raw` wherever it is and waits until its callback is not running
/// on any base (other than as the caller's own callback). Counts a pending
/// timer as deleted.
pub(crate) fn detach_and_wait(raw: NonNull<RawTimer>) {
    let done = delete_sync::delete_sync(raw, delete_sync::Sync::WaitUnchecked, false);
    debug_assert!(done.is_ok());
}

impl Drop for Timer {
    fn drop(&mut self) {
        if crate::base::running_here(self.raw.as_ptr()) {
            // Dropped inside its own callback: cancel any re-arm, and let the
            // expiring thread free the memory when the callback returns.
            let mut guard = lock_timer_base(self.raw());
            if guard.detach_if_pending(self.raw()) {
                guard.stats.deleted += 1;
            }
            drop(guard);
            crate::base::free_after_callback();
            return;
        }
        detach_and_wait(self.raw);
        // SAFETY: this handle owned the timer; it is detached and its callback
        // is not running, so no base can reach it any more.
        unsafe { RawTimer::free(self.raw) };
    }
}
