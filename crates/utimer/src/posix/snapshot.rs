//! A POSIX timer's setting as `timer_gettime` and `timer_getoverrun` read
//! it ([`setting`]: the kernel's `common_timer_get()`), and without
//! `it_lock`: a copy of the fields they need, written by every `it_lock`
//! section, whose whole length is a write section of a sequence count
//! (`sync/seqcount.rs`), the way the kernel's readers of a `seqcount_t`
//! never take the writers' lock.
//!
//! # Why
//!
//! `timer_gettime` is a read, but a mutex makes it two atomic
//! read-modify-writes (lock, and the unlock that looks for waiters): a
//! third of the call. With the copy, a reader writes nothing shared: it
//! loads the words, reads the clock, and checks the count; a write section
//! that overlapped sends it to the locked path, as does any state the copy
//! does not cover (a process-directed signal's carried overruns, which
//! `timer_getoverrun` latches under the lock).
//!
//! # Ground rules
//!
//! * Only a holder of the timer's `it_lock` writes, and its write section
//!   spans its whole hold of the lock (`Locked` in `timer.rs` opens it on
//!   taking the lock and closes it on dropping it), so write sections
//!   never overlap, and a reader never pairs the state of before a
//!   section with something the section did meanwhile (an expiry queues
//!   its signal or adds to its timerfd under the lock: a reader woken by
//!   that finds the section open, or closed with its state).
//! * The copy is the state as of the last `it_lock` section's end: a
//!   reader whose count validates read a state that existed, at an instant
//!   between its first and last load, and its clock read lies in the same
//!   window, so the answer is the one a locked call would have given then.

use super::ItimerSpec;
use crate::hrtimer::forward_expiry;
use crate::sync::seqcount::SeqCount;
use crate::sync::{AtomicU32, AtomicU64};
use crate::time::ClockId;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

/// The fields of a timer's state that its lock-free readers need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Seen {
    pub(crate) deleted: bool,
    pub(crate) armed: bool,
    /// A signal of the timer waits for acceptance.
    pub(crate) sig_queued: bool,
    /// Periods are carried for a pending process-directed signal
    /// (`timer_getoverrun` must take the lock to latch them).
    pub(crate) carrying: bool,
    pub(crate) eff: ClockId,
    pub(crate) expires: u64,
    pub(crate) interval: u64,
    pub(crate) overrun_last: i32,
}

const DELETED: u32 = 1;
const ARMED: u32 = 2;
const SIG_QUEUED: u32 = 4;
const CARRYING: u32 = 8;
/// `eff`, as its index in `ClockId::ALL`, from this bit up.
const EFF_SHIFT: u32 = 8;

/// The published copy (module docs).
pub(crate) struct Snapshot {
    count: SeqCount,
    flags: AtomicU32,
    expires: AtomicU64,
    interval: AtomicU64,
    overrun_last: AtomicU32,
}

impl Snapshot {
    /// A copy of `seen`.
    pub(crate) fn new(seen: &Seen) -> Snapshot {
        let s = Snapshot {
            count: SeqCount::new(),
            flags: AtomicU32::new(0),
            expires: AtomicU64::new(0),
            interval: AtomicU64::new(0),
            overrun_last: AtomicU32::new(0),
        };
        s.publish(seen);
        s
    }

    /// Opens a write section: the caller has just taken the timer's
    /// `it_lock`, and holds it until [`end`](Self::end). Readers meanwhile
    /// take the lock, so none sees the state of before the section next to
    /// an effect of it (an expiry's signal or timerfd count).
    #[inline]
    pub(crate) fn begin(&self) {
        self.count.write_begin();
    }

    /// Closes the write section with `seen`, the state as the section
    /// leaves it.
    #[inline]
    pub(crate) fn end(&self, seen: &Seen) {
        self.store(seen);
        self.count.write_end();
    }

    /// Publishes `seen` in a section of its own. The caller holds the
    /// timer's `it_lock`.
    #[inline]
    pub(crate) fn publish(&self, seen: &Seen) {
        self.begin();
        self.end(seen);
    }

    fn store(&self, seen: &Seen) {
        let eff = ClockId::ALL
            .iter()
            .position(|&c| c == seen.eff)
            .unwrap_or(0) as u32;
        let bit = |on: bool, b: u32| if on { b } else { 0 };
        let flags = bit(seen.deleted, DELETED)
            | bit(seen.armed, ARMED)
            | bit(seen.sig_queued, SIG_QUEUED)
            | bit(seen.carrying, CARRYING)
            | (eff << EFF_SHIFT);
        self.flags.store(flags, Relaxed);
        self.expires.store(seen.expires, Relaxed);
        self.interval.store(seen.interval, Relaxed);
        self.overrun_last.store(seen.overrun_last as u32, Relaxed);
    }

    /// Runs `f` on the published state, inside the read window (so that a
    /// clock `f` reads is read while that state holds). `None`: a write
    /// overlapped; take the lock.
    #[inline]
    pub(crate) fn read<R>(&self, f: impl FnOnce(&Seen) -> R) -> Option<R> {
        let start = self.count.read_begin()?;
        let flags = self.flags.load(Relaxed);
        let seen = Seen {
            deleted: flags & DELETED != 0,
            armed: flags & ARMED != 0,
            sig_queued: flags & SIG_QUEUED != 0,
            carrying: flags & CARRYING != 0,
            eff: ClockId::ALL
                .get((flags >> EFF_SHIFT) as usize)
                .copied()
                .unwrap_or(ClockId::Monotonic),
            expires: self.expires.load(Relaxed),
            interval: self.interval.load(Relaxed),
            overrun_last: self.overrun_last.load(Relaxed) as i32,
        };
        let r = f(&seen);
        (!self.count.read_retry(start)).then_some(r)
    }
}

/// What a locked reader of a `SIGEV_NONE` timer stores back.
pub(crate) enum Change {
    /// A periodic timer moved on to its next period.
    Forward(u64),
    /// A one-shot timer that expired.
    Disarm,
}

/// A timer's setting from its fields: the kernel's `common_timer_get()`.
/// `now` (the time of its effective clock) is read only if it is armed.
/// Also returns the change a locked caller stores (a `SIGEV_NONE` timer,
/// never queued, moves on when asked).
pub(crate) fn setting(
    sig_none: bool,
    armed: bool,
    expires: u64,
    interval_ns: u64,
    sig_queued: bool,
    now: impl FnOnce() -> u64,
) -> (ItimerSpec, Option<Change>) {
    let interval = Duration::from_nanos(interval_ns);
    let disarmed = ItimerSpec {
        value: Duration::ZERO,
        interval,
    };
    if !armed {
        return (disarmed, None);
    }
    let now = now();
    let mut expires = expires;
    let mut change = None;
    if sig_none && now >= expires {
        if interval_ns == 0 {
            return (disarmed, Some(Change::Disarm));
        }
        // Never queued: it moves forward on demand, so it keeps wrapping.
        expires = forward_expiry(expires, now, interval).0;
        change = Some(Change::Forward(expires));
    } else if !sig_none && sig_queued && interval_ns > 0 && now >= expires {
        // Waiting for its signal's acceptance, it looks at the periods
        // only now and then: the next one is where the period says (the
        // kernel's common_timer_get() forwards a timer whose re-arm waits
        // for delivery the same way). Not stored: the timer moves on when
        // it looks.
        expires = forward_expiry(expires, now, interval).0;
    }
    let value = match expires.checked_sub(now) {
        Some(left) if left > 0 => Duration::from_nanos(left),
        // Due, and the notification not yet out: never report 0 for an
        // armed timer (0 means disarmed).
        _ => Duration::from_nanos(1),
    };
    (ItimerSpec { value, interval }, change)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_read_returns_what_was_published() {
        let mut seen = Seen {
            deleted: false,
            armed: true,
            sig_queued: true,
            carrying: false,
            eff: ClockId::Realtime,
            expires: u64::MAX - 3,
            interval: 1_000,
            overrun_last: i32::MAX,
        };
        let s = Snapshot::new(&seen);
        assert_eq!(s.read(|x| *x), Some(seen));
        for eff in ClockId::ALL {
            seen = Seen {
                deleted: true,
                armed: false,
                sig_queued: false,
                carrying: true,
                eff,
                expires: 0,
                interval: 0,
                overrun_last: -1,
            };
            s.publish(&seen);
            assert_eq!(s.read(|x| *x), Some(seen));
        }
    }

    #[test]
    fn a_read_overlapping_a_write_is_refused() {
        let seen = Seen {
            deleted: false,
            armed: true,
            sig_queued: false,
            carrying: false,
            eff: ClockId::Monotonic,
            expires: 5,
            interval: 0,
            overrun_last: 0,
        };
        let s = Snapshot::new(&seen);
        // A publish from inside the window (what another thread's write
        // section looks like to this reader).
        assert_eq!(s.read(|_| s.publish(&seen)), None);
        // A write in progress (its begin seen, its end not yet).
        s.count.write_begin();
        assert_eq!(s.read(|x| *x), None);
        s.count.write_end();
        assert_eq!(s.read(|x| *x), Some(seen));
    }
}
