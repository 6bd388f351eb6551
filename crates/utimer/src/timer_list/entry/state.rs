//! [`TimerState`]: the word that says where a timer is, read without a lock.
//!
//! ```text
//!  63                                      10 9          0
//! +------------------------------------------+------------+
//! |  expires (54 bits, clamped, in ticks)    | bucket idx |
//! +------------------------------------------+------------+
//!          idx <  DUE: pending, in that bucket
//!          idx == DUE: pending and due: on the due list, or taken out of
//!                      its bucket by a forward (on the run list)
//!          idx == IDX_RUNNING: not pending, its callback is running
//!          idx == IDX_NONE: not pending, callback not running (idle)
//! ```
//!
//! One load gives a consistent `(pending, expires, bucket)` triple, which is
//! what makes the lock-free same-bucket check of `modify` exact (see
//! `timer/modify.rs`), and tells `delete_sync` in one load that a timer is
//! idle — neither pending nor running — so it may return without a lock.
//! (A timer re-armed by its own callback shows as pending while the
//! callback still runs; only the base's `running` tells then.) The kernel
//! keeps `expires` in `timer_list` and the bucket in `flags`, and reads them
//! with two loads.
//!
//! Every change of the word is one of the named transitions below, and each
//! takes a [`Locked`] proof: the word is written only under the lock of the
//! base the timer is on.
//!
//! ```text
//!            queue                  mark_running
//!   idle ------------> pending --------------------> running
//!    ^  <------------     |  ^                         |  |
//!    |     detach         |  |       queue (re-arm     |  |
//!    |                    |  +-------from callback)----+  |
//!    +--------------------+------------- finish_running --+
//! ```

use super::Locked;
use crate::sync::AtomicU64;
use crate::wheel::{bucket_expiry, DUE, MAX_DELTA, MAX_TICK};
use std::sync::atomic::Ordering::{self, Relaxed, Release};

const IDX_BITS: u32 = 10;
/// Bucket index meaning "not queued anywhere, callback not running".
const IDX_NONE: u16 = (1 << IDX_BITS) - 1;
/// Bucket index meaning "not queued; its callback is running".
const IDX_RUNNING: u16 = IDX_NONE - 1;
const IDX_MASK: u64 = IDX_NONE as u64;

// Clamped expiries fit the packed field.
const _: () = assert!(MAX_TICK + MAX_DELTA < 1 << (64 - IDX_BITS));

/// One snapshot of a [`TimerState`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Word(u64);

impl Word {
    #[inline(always)]
    const fn pack(expires: u64, idx: u16) -> Word {
        Word((expires << IDX_BITS) | idx as u64)
    }

    /// The expiry of record (the last one the timer was queued with).
    #[inline(always)]
    pub(crate) fn expires(self) -> u64 {
        self.0 >> IDX_BITS
    }

    /// The wheel bucket (meaningful while pending).
    #[inline(always)]
    pub(crate) fn idx(self) -> u16 {
        (self.0 & IDX_MASK) as u16
    }

    /// Queued in a bucket or on the due list.
    #[inline(always)]
    pub(crate) fn is_pending(self) -> bool {
        self.idx() <= DUE
    }

    /// Neither pending nor running its callback.
    #[inline(always)]
    pub(crate) fn is_idle(self) -> bool {
        self.0 & IDX_MASK == IDX_MASK
    }

    /// Not pending, and its callback is running.
    #[inline(always)]
    pub(crate) fn is_running(self) -> bool {
        self.idx() == IDX_RUNNING
    }

    /// The tick at which a pending timer's bucket fires; `None` if it is on
    /// the due list (due already) or not pending.
    #[inline(always)]
    pub(crate) fn bucket_time(self) -> Option<u64> {
        bucket_expiry(self.expires(), self.idx())
    }

    /// The tick at which a pending timer fires: its bucket's time, or its
    /// expiry if it is due already; `None` if not pending.
    #[inline]
    pub(crate) fn fires_at(self) -> Option<u64> {
        if !self.is_pending() {
            return None;
        }
        Some(self.bucket_time().unwrap_or(self.expires()))
    }
}

/// A timer's state word: `(expires << 10) | bucket`.
#[derive(Debug)]
pub(crate) struct TimerState(AtomicU64);

impl TimerState {
    /// Idle, expiry 0.
    pub(crate) fn new() -> Self {
        TimerState(AtomicU64::new(Word::pack(0, IDX_NONE).0))
    }

    #[inline(always)]
    pub(crate) fn load(&self, order: Ordering) -> Word {
        Word(self.0.load(order))
    }

    #[inline(always)]
    fn store(&self, w: Word) {
        self.0.store(w.0, Release);
    }

    /// Queued at bucket `idx` (or [`DUE`]) with expiry of record `expires`.
    #[inline(always)]
    pub(crate) fn queue(&self, expires: u64, idx: u16, _: &Locked<'_>) {
        debug_assert!(idx <= DUE);
        self.store(Word::pack(expires, idx));
    }

    /// Taken off the wheel by an expiry run: its callback runs now.
    #[inline(always)]
    pub(crate) fn mark_running(&self, _: &Locked<'_>) {
        let w = self.load(Relaxed);
        self.store(Word::pack(w.expires(), IDX_RUNNING));
    }

    /// The callback returned: idle again, unless it re-armed the timer.
    #[inline(always)]
    pub(crate) fn finish_running(&self, _: &Locked<'_>) {
        let w = self.load(Relaxed);
        if w.is_running() {
            self.store(Word::pack(w.expires(), IDX_NONE));
        }
    }

    /// Taken off the wheel without firing. `running`: its callback is
    /// running right now (it re-armed itself, or was re-armed meanwhile), so
    /// it must keep saying so, or `delete_sync` would take it for idle.
    #[inline(always)]
    pub(crate) fn detach(&self, running: bool, locked: &Locked<'_>) {
        self.detach_from(self.load(Relaxed), running, locked);
    }

    /// [`detach`](Self::detach), given the word as the caller just read it
    /// under the same lock (so it cannot have changed since).
    #[inline(always)]
    pub(crate) fn detach_from(&self, w: Word, running: bool, _: &Locked<'_>) {
        let idx = if running { IDX_RUNNING } else { IDX_NONE };
        self.store(Word::pack(w.expires(), idx));
    }
}

#[cfg(all(test, not(loom)))]
impl TimerState {
    /// The racy store of the kernel's 2016 same-bucket `mod_timer()` (`timer->expires = expires` without the
    /// lock), for the test that replays the race.
    pub(crate) fn unlocked_expires_store(&self, expires: u64) {
        let w = self.load(Relaxed);
        self.store(Word::pack(expires, w.idx()));
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn transitions() {
        // SAFETY: single-threaded test; nothing else touches the word.
        let locked = unsafe { Locked::assume() };
        let s = TimerState::new();
        assert!(s.load(Relaxed).is_idle());
        let big = MAX_TICK + MAX_DELTA;
        s.queue(big, DUE, &locked);
        let w = s.load(Relaxed);
        assert!(w.is_pending() && !w.is_idle());
        assert_eq!((w.expires(), w.fires_at()), (big, Some(big)));
        s.queue(1000, 2 * 64 + 16, &locked); // level 2, fires at 1024
        assert_eq!(s.load(Relaxed).fires_at(), Some(1024));
        s.mark_running(&locked);
        let w = s.load(Relaxed);
        assert!(w.is_running() && !w.is_pending() && !w.is_idle());
        assert_eq!((w.expires(), w.fires_at()), (1000, None));
        s.finish_running(&locked);
        assert!(s.load(Relaxed).is_idle());
        s.queue(5, 5, &locked);
        s.detach(true, &locked);
        assert!(s.load(Relaxed).is_running());
        s.finish_running(&locked);
        assert!(s.load(Relaxed).is_idle());
        s.queue(5, 5, &locked);
        s.mark_running(&locked);
        s.queue(7, 7, &locked); // re-armed by its callback
        s.finish_running(&locked);
        assert!(
            s.load(Relaxed).is_pending(),
            "a re-arm survives the end of the callback"
        );
    }
}
