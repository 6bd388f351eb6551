//! Timers: created once with a callback, then armed, re-armed and cancelled
//! any number of times, from any thread, with no allocation.
//!
//! # Ground rules
//!
//! * Any thread may call any method on any timer at any time; a timer is on
//!   at most one base, found with `lock_timer_base()` (see `base/`).
//! * A timer armed on a worker's thread (see
//!   [`TimerSystem::enter`](crate::TimerSystem::enter)) goes to that
//!   worker's base; from other threads, to the thread's home worker, picked
//!   once per thread without any lock.
//! * The callback runs on the thread that expires the base, outside every
//!   lock, and receives a borrowed handle to its own timer, through which it
//!   may re-arm or delete it. While it runs, the timer stays on that base.
//! * Dropping the [`Timer`] cancels it and never waits: if its callback is
//!   running (on another thread, or this very callback dropped it), the
//!   thread running it frees the timer when the callback returns. Only
//!   [`delete_sync`](Timer::delete_sync) and
//!   [`shutdown_sync`](Timer::shutdown_sync) wait for a running callback.
//! * Every arming call takes an [`Expiry`]: a tick, a `Duration` from now or
//!   an `Instant`. Relative expiries round up, so the timer is never early.
//!
//! # In a callback
//!
//! * [`Timer::expires`] shows the latest arm, which may be a re-arm that
//!   another thread made while the callback runs (the callback then runs
//!   again at that expiry).
//! * Two callbacks that call `delete_sync` on each other's timers wait for
//!   each other forever, as two kernel timers would: break such cycles with
//!   [`Timer::delete`] or [`Timer::try_delete_sync`].

mod delete_sync;
mod modify;

use crate::time::Expiry;
use crate::timer_list::base::{lock_timer_base, timer_base, Bases};
use crate::timer_list::entry::{RawTimer, TimerRef, VTable, DEFERRABLE, DROPPED, PINNED, SHUTDOWN};
use crate::TimerError;
use delete_sync::Wait;
use modify::Mode;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::atomic::Ordering::Acquire;
use std::sync::Arc;

/// Flags fixed when a timer is created (the kernel's `TIMER_*` flags).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct TimerFlags(u32);

impl TimerFlags {
    /// No flags: a movable timer in the worker's global base.
    pub const NONE: TimerFlags = TimerFlags(0);
    /// Expire on the worker the timer was armed on, never elsewhere
    /// (`TIMER_PINNED`). Pinned timers live in the worker's local base.
    pub const PINNED: TimerFlags = TimerFlags(PINNED);
    /// Never wake an idle worker for this timer; it runs when the worker is
    /// awake anyway (`TIMER_DEFERRABLE`). Lives in the deferrable base.
    pub const DEFERRABLE: TimerFlags = TimerFlags(DEFERRABLE);

    /// No flags (the same as [`TimerFlags::NONE`]).
    pub const fn empty() -> TimerFlags {
        TimerFlags::NONE
    }

    /// Whether every flag of `other` is set.
    pub const fn contains(self, other: TimerFlags) -> bool {
        self.0 & other.0 == other.0
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
/// by reference. One heap allocation of 24 bytes plus the callback's
/// captures; the handle is one pointer.
///
/// One convention across the family, the kernel's: a call that can fail
/// returns a `Result` (an arm on a system that has shut down, a wait that
/// would wait for itself), and one that cannot answers plainly, as the
/// kernel's `timer_delete()`, `timer_shutdown()` and `timer_pending()`
/// return their `int` with no error: [`delete`](Self::delete),
/// [`shutdown`](Self::shutdown) and [`is_pending`](Self::is_pending)
/// return `bool`. Every "was it pending" answer is that `bool`.
pub struct Timer {
    raw: NonNull<RawTimer>,
}

// SAFETY: the callback is Send + Sync, and all shared state is synchronized
// (atomics, or fields protected by the base lock).
unsafe impl Send for Timer {}
// SAFETY: as above; every method takes &self and synchronizes internally.
unsafe impl Sync for Timer {}

/// The allocation: the header, then the callback.
#[repr(C)]
struct TimerCell<F> {
    raw: RawTimer,
    f: F,
}

trait HasVTable {
    const VTABLE: VTable;
}

impl<F: Fn(&Timer) + Send + Sync + 'static> HasVTable for F {
    const VTABLE: VTable = VTable {
        call: call_cell::<F>,
        free: free_cell::<F>,
    };
}

/// # Safety
/// `raw` is the allocation's pointer of a live `TimerCell<F>`.
unsafe fn call_cell<F: Fn(&Timer)>(raw: NonNull<RawTimer>) {
    // SAFETY: the caller's contract; `repr(C)` puts the header first.
    let cell = unsafe { raw.cast::<TimerCell<F>>().as_ref() };
    // A borrowed handle: the callback may use it but never drops it.
    let me = ManuallyDrop::new(Timer { raw });
    (cell.f)(&me)
}

/// # Safety
/// `raw` came from `Box::leak` of a `TimerCell<F>`, and nothing references
/// it any more.
unsafe fn free_cell<F>(raw: NonNull<RawTimer>) {
    // SAFETY: the caller's contract.
    drop(unsafe { Box::from_raw(raw.cast::<TimerCell<F>>().as_ptr()) });
}

impl Timer {
    /// A new timer, not pending, homed on `worker`'s base for `flags`. The
    /// kernel's `timer_setup()`.
    pub(crate) fn new<F>(bases: &Arc<Bases>, worker: usize, flags: TimerFlags, f: F) -> Timer
    where
        F: Fn(&Timer) + Send + Sync + 'static,
    {
        let base = bases.base_for(worker, flags.0);
        // SAFETY: `base` lives in `bases`, which the timer keeps alive with
        // the count taken just below (given back by `base::free_timer`).
        let raw = unsafe { RawTimer::new(base.erased(), flags.0, &<F as HasVTable>::VTABLE) };
        bases.retain_for_timer();
        let cell = Box::new(TimerCell { raw, f });
        Timer {
            raw: NonNull::from(Box::leak(cell)).cast(),
        }
    }

    /// The timer, borrowed for as long as this handle is.
    #[inline(always)]
    fn r(&self) -> TimerRef<'_> {
        // SAFETY: the handle owns the allocation (or, inside a callback,
        // borrows it while the callback runs, during which it is not
        // freed): it is live while `self` is borrowed.
        unsafe { TimerRef::new(self.raw) }
    }

    /// The table of bases the timer belongs to.
    #[inline]
    pub(crate) fn bases(&self) -> &Bases {
        timer_base(self.r().get()).table()
    }

    /// An expiry as a tick. Ticks pass through without touching the clock.
    #[inline(always)]
    fn tick(&self, expiry: impl Into<Expiry>) -> u64 {
        match expiry.into() {
            Expiry::Tick(tick) => tick,
            other => self.bases().ticks.resolve(other),
        }
    }

    /// Arms a timer that is not pending, on the caller's base. The kernel's
    /// `add_timer()`.
    ///
    /// # Errors
    /// [`TimerError::AlreadyPending`] if it is pending (use
    /// [`modify`](Self::modify) to re-arm), [`TimerError::Shutdown`] if its
    /// system has been dropped.
    #[inline]
    #[doc(alias = "add_timer")]
    pub fn add(&self, expiry: impl Into<Expiry>) -> Result<(), TimerError> {
        modify::add(self.r(), self.tick(expiry), None)
    }

    /// Arms a timer that is not pending on `worker`'s base. The kernel's
    /// `add_timer_on()`. If the timer's callback is running right now, the
    /// timer stays on the base running it (so that the callback never runs
    /// on two workers at once) and moves on its next arming.
    ///
    /// # Errors
    /// As [`add`](Self::add), plus [`TimerError::NoSuchWorker`].
    #[doc(alias = "add_timer_on")]
    pub fn add_on(&self, worker: usize, expiry: impl Into<Expiry>) -> Result<(), TimerError> {
        self.bases().check_worker(worker)?;
        modify::add(self.r(), self.tick(expiry), Some(worker as u32))
    }

    /// Arms or re-arms the timer; returns whether it was pending. The
    /// kernel's `mod_timer()`.
    ///
    /// The timer fires at its expiry rounded up to the granularity of the
    /// wheel level that its timeout (expiry minus [`TimerSystem::now`](crate::TimerSystem::now)
    /// at the call) selects: never early, at most one granule late, however
    /// far its worker's base clock has fallen behind. An expiry at or
    /// before the present fires at the next expiry run of its worker
    /// (from the timer's own callback: the run after the one under way,
    /// if the run has passed that tick); one beyond the wheel's range (12
    /// days at 1 ms ticks) is clamped to it.
    ///
    /// A re-arm of a pending timer to its expiry of record, or to one that
    /// fires at the same tick as its bucket, changes nothing (it keeps its
    /// place and [`expires`](Self::expires)); the latter takes no lock
    /// (as the kernel since 2016; see `timer/modify.rs`).
    ///
    /// # Errors
    /// [`TimerError::Shutdown`] if the timer's system has been dropped.
    #[inline]
    #[doc(alias = "mod_timer")]
    pub fn modify(&self, expiry: impl Into<Expiry>) -> Result<bool, TimerError> {
        modify::modify::<true>(self.r(), self.tick(expiry), Mode::Modify)
    }

    /// Re-arms the timer only if it is pending; returns whether it was. The
    /// kernel's `mod_timer_pending()`.
    ///
    /// # Errors
    /// [`TimerError::Shutdown`] if the timer's system has been dropped.
    #[inline]
    #[doc(alias = "mod_timer_pending")]
    pub fn modify_pending(&self, expiry: impl Into<Expiry>) -> Result<bool, TimerError> {
        modify::modify::<true>(self.r(), self.tick(expiry), Mode::PendingOnly)
    }

    /// Arms the timer, or makes a pending timer fire *earlier* if the new
    /// expiry fires before its current bucket (never later, and never on
    /// another worker); returns whether it was pending. The kernel's
    /// `timer_reduce()`.
    ///
    /// # Errors
    /// [`TimerError::Shutdown`] if the timer's system has been dropped.
    #[inline]
    #[doc(alias = "timer_reduce")]
    pub fn reduce(&self, expiry: impl Into<Expiry>) -> Result<bool, TimerError> {
        modify::modify::<true>(self.r(), self.tick(expiry), Mode::Reduce)
    }

    /// Cancels the timer; returns whether it was pending. Its callback may
    /// still be running on another thread when this returns. The kernel's
    /// `timer_delete()` (formerly `del_timer()`).
    #[inline]
    #[doc(alias = "timer_delete")]
    #[doc(alias = "del_timer")]
    pub fn delete(&self) -> bool {
        modify::delete(self.r())
    }

    /// Cancels the timer and waits until its callback is not running on any
    /// worker; returns whether it was pending. On `Ok` the callback neither
    /// runs nor will run unless the timer is armed again. The kernel's
    /// `timer_delete_sync()`: one base looked at, whatever the number of
    /// workers; an idle timer costs one atomic load. While it waits on a
    /// worker's thread, that worker's own due timers keep running. Read the
    /// synchronization rules in `timer/delete_sync.rs`: never call it while
    /// holding a lock the callback takes.
    ///
    /// # Errors
    /// [`TimerError::InOwnCallback`] when called from the timer's own
    /// callback (it would wait for itself); nothing is changed then.
    #[doc(alias = "timer_delete_sync")]
    pub fn delete_sync(&self) -> Result<bool, TimerError> {
        delete_sync::delete_sync(self.r(), Wait::Block, false)
    }

    /// Cancels the timer unless its callback is running; returns whether it
    /// was pending. The kernel's `try_to_del_timer_sync()`.
    ///
    /// # Errors
    /// [`TimerError::Running`] if the callback is running on some worker
    /// (or is the caller); nothing is changed then.
    #[doc(alias = "try_to_del_timer_sync")]
    pub fn try_delete_sync(&self) -> Result<bool, TimerError> {
        delete_sync::delete_sync(self.r(), Wait::Try, false)
    }

    /// Cancels the timer and refuses every later arm: `add`, `modify`,
    /// `reduce` and the rest then do nothing and report the timer as not
    /// pending. Returns whether it was pending. Does not wait for a running
    /// callback. The kernel's `timer_shutdown()`.
    #[doc(alias = "timer_shutdown")]
    pub fn shutdown(&self) -> bool {
        delete_sync::shutdown(self.r())
    }

    /// [`shutdown`](Self::shutdown), then waits until the callback is not
    /// running, as [`delete_sync`](Self::delete_sync). Because the callback's
    /// own re-arms are refused, this terminates even for a timer that
    /// re-arms itself. The kernel's `timer_shutdown_sync()`.
    ///
    /// # Errors
    /// [`TimerError::InOwnCallback`] when called from the timer's own
    /// callback; nothing is changed then.
    #[doc(alias = "timer_shutdown_sync")]
    pub fn shutdown_sync(&self) -> Result<bool, TimerError> {
        delete_sync::delete_sync(self.r(), Wait::Block, true)
    }

    /// Whether [`shutdown`](Self::shutdown) has been called.
    pub fn is_shutdown(&self) -> bool {
        self.r().get().flags() & SHUTDOWN != 0
    }

    /// Whether the timer is queued. The kernel's `timer_pending()`.
    #[inline]
    #[doc(alias = "timer_pending")]
    pub fn is_pending(&self) -> bool {
        self.r().get().state.load(Acquire).is_pending()
    }

    /// The expiry of record, in ticks: the last expiry the timer was queued
    /// with (clamped to the wheel's range). A re-arm that lands in the same
    /// bucket fires at the same tick and keeps this value, whichever path
    /// (lock-free or locked) answers it. A timer moved by
    /// a hot-unplug ([`TimerSystem::offline`](crate::TimerSystem::offline))
    /// takes the tick its bucket fires at. In the timer's
    /// own callback it is the latest arm, which may be a concurrent re-arm.
    /// The kernel's `timer->expires`.
    #[inline]
    pub fn expires(&self) -> u64 {
        self.r().get().state.load(Acquire).expires()
    }

    /// The tick at which a pending timer fires: its expiry rounded up to its
    /// wheel level's granularity. `None` if not pending; `Some(expires)` for
    /// a timer already due (armed into the past, or left in a bucket whose
    /// tick passed before its worker's expiry ran: it fires at the next run).
    pub fn fires_at(&self) -> Option<u64> {
        self.r().get().state.load(Acquire).fires_at()
    }

    /// The flags the timer was created with.
    pub fn flags(&self) -> TimerFlags {
        TimerFlags(self.r().get().flags() & (PINNED | DEFERRABLE))
    }

    /// Benchmark only: [`modify`](Self::modify) as the kernel's
    /// `mod_timer()` was before 2016, lock-free only when the expiry is
    /// unchanged, with no same-bucket check. For `utimer bench`'s table of
    /// re-arm shares.
    #[cfg(feature = "bench-internals")]
    #[doc(hidden)]
    pub fn modify_without_bucket_check(
        &self,
        expiry: impl Into<Expiry>,
    ) -> Result<bool, TimerError> {
        modify::modify::<false>(self.r(), self.tick(expiry), Mode::Modify)
    }

    /// Benchmark only: `del_timer_sync()` as it was before 2004, scanning
    /// the running timer of every base. For `utimer bench`'s
    /// `delete_sync` tables.
    #[cfg(feature = "bench-internals")]
    #[doc(hidden)]
    pub fn delete_sync_scan_all(&self) -> bool {
        delete_sync::delete_sync_scan_all(self.r())
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

impl Drop for Timer {
    /// Cancels the timer and frees it, without waiting: if its callback is
    /// running (on another thread, or this is that callback), the thread
    /// running it frees the timer once the callback returns.
    fn drop(&mut self) {
        let t = self.r();
        let mut guard = lock_timer_base(t.get());
        guard.delete_timer(t);
        if guard.base.is_running(t) {
            t.get().set_flag(DROPPED, &guard.locked());
            return;
        }
        drop(guard);
        // SAFETY: this handle owned the timer; it is detached and its
        // callback is not running (checked under the lock), so no base can
        // reach it any more.
        unsafe { crate::timer_list::base::free_timer(t) };
    }
}
