//! A base's next expiry and idle threshold: the lock-free `next` mirror
//! that arms and cancels make unknown and whoever computes the next
//! expiry under the lock publishes, the worker's next-event summary it
//! feeds (`sync/summary.rs`), and the `idle_until` threshold through which an
//! arm on an idle worker's base wakes it (the kernel's
//! `base->next_expiry`, `timer_base_try_to_set_idle()` and
//! `tmigr_cpu_activate()` side of `timer.c`).

use super::{Base, BaseGuard, NEXT_NONE, NEXT_UNKNOWN};
use crate::sync::summary::NextSummary;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

impl Base {
    /// This base's next expiry: one load of its mirror, or, when the
    /// mirror does not know (the wheel changed since it was last
    /// computed), computed under the lock and published. (The idle computation never asks a deferrable
    /// base: those never wake a worker.)
    #[inline]
    pub(crate) fn next_expiry(&self) -> Option<u64> {
        match self.next.load(Acquire) {
            NEXT_NONE => None,
            NEXT_UNKNOWN => self.next_expiry_locked(),
            tick => Some(tick),
        }
    }

    /// This base's next expiry computed under its lock (and published in
    /// the mirror): what the summary's slow path reads (`sync/summary.rs`).
    #[cold]
    pub(crate) fn next_expiry_locked(&self) -> Option<u64> {
        self.lock().publish_next()
    }

    /// The worker's next-event summary (`sync/summary.rs`).
    #[inline(always)]
    pub(super) fn summary(&self) -> &NextSummary {
        // SAFETY: set at construction to a summary of the table's
        // `Summaries`, which the table keeps as long as its bases.
        unsafe { &*self.summary }
    }

    /// The worker goes idle until `until` (at the latest): publishes the
    /// earlier of that and this base's next expiry, so that an arm that
    /// fires before it calls the wake hook. Returns the next expiry, read
    /// under the same lock, so no arm slips in between unseen.
    pub(crate) fn idle_enter(&self, until: u64) -> Option<u64> {
        let mut guard = self.lock();
        let next = guard.publish_next();
        let until = next.map_or(until, |n| n.min(until));
        self.idle_until.store(until.max(1), Relaxed);
        next
    }

    /// Runs `f` with this base's next expiry, under the base's lock (so no
    /// arm slips in between unseen); stores the threshold `f` returns, if
    /// any, in `idle_until`: an enqueue that fires before it then calls the
    /// wake hook. `f` may take hierarchy locks (base before hierarchy), and
    /// no base lock.
    pub(crate) fn with_next_expiry<R>(&self, f: impl FnOnce(Option<u64>) -> (R, Option<u64>)) -> R {
        let mut guard = self.lock();
        let next = guard.publish_next();
        let (r, threshold) = f(next);
        if let Some(t) = threshold {
            self.idle_until.store(t.max(1), Relaxed);
        }
        drop(guard);
        r
    }

    /// [`BaseGuard::mirror_changed`], for a caller that holds the lock
    /// without the guard at hand.
    #[inline(always)]
    pub(super) fn mirror_changed(&self) {
        if self.next.load(Relaxed) != NEXT_UNKNOWN {
            self.next.store(NEXT_UNKNOWN, Release);
            self.summary().invalidate();
        }
    }

    /// The worker is busy again: arms here need not wake it.
    pub(crate) fn idle_exit(&self) {
        self.idle_until.store(0, Relaxed);
    }

    /// [`idle_exit`](Self::idle_exit) for a base whose threshold others
    /// publish too (a global base: a stall, a remote expiry's update, each
    /// under the lock, through [`with_next_expiry`](Self::with_next_expiry)):
    /// runs `f`, which makes the worker active in the hierarchy, and clears
    /// the threshold, both under the base's lock. A stall then lands wholly
    /// before (and is undone here) or wholly after (and its threshold
    /// stays); a lock-free clear after `f` could wipe the threshold of a
    /// stall that came in between, and arms would no longer reach the
    /// hierarchy. `f` may take hierarchy locks (base before hierarchy), and
    /// no base lock.
    pub(crate) fn idle_exit_with<R>(&self, f: impl FnOnce() -> R) -> R {
        let guard = self.lock();
        let r = f();
        self.idle_until.store(0, Relaxed);
        drop(guard);
        r
    }
}

impl BaseGuard<'_> {
    /// The wheel changed (a timer came or went): the mirror no longer
    /// knows the first expiry. The next reader computes it under the lock
    /// and publishes it ([`Base::next_expiry`]); until then, arms and
    /// cancels pay one load here, not a recomputation.
    #[inline(always)]
    pub(super) fn mirror_changed(&self) {
        self.base.mirror_changed();
    }

    /// The wheel's next expiry, computed (a bitmap scan if its cache is
    /// stale) and stored in the lock-free mirror.
    pub(crate) fn publish_next(&mut self) -> Option<u64> {
        let next = self.wheel.next_expiry();
        let word = next.unwrap_or(NEXT_NONE);
        let old = self.base.next.load(Relaxed);
        if old != word {
            self.base.next.store(word, Release);
            // From unknown: the move to unknown already invalidated it.
            if old != NEXT_UNKNOWN {
                self.base.summary().invalidate();
            }
        }
        next
    }
}
