//! Per-base statistics.

use std::ops::AddAssign;

/// Counters kept under a base's lock.
#[derive(Copy, Clone, Debug, Default)]
pub(crate) struct Counters {
    pub(crate) armed: u64,
    pub(crate) fired: u64,
    pub(crate) deleted: u64,
    pub(crate) requeued: u64,
    pub(crate) recalced: u64,
    pub(crate) migrated: u64,
    pub(crate) panicked: u64,
}

/// A snapshot of one base's statistics, or their sum over several bases
/// ([`Metrics::totals`](crate::Metrics::totals)).
///
/// Balance: `armed == fired + deleted + pending` for the whole system at any
/// quiescent moment (a timer re-armed while pending is not armed again; a
/// timer moving between bases stays counted where it was armed).
///
/// The three `modify` outcomes are those of the kernel's same-bucket re-arm (Linux's 2016
/// same-bucket patch), counted for re-arms of pending timers:
/// `matched` (no lock taken: the new expiry fires in the same tick as the
/// old bucket), `requeued` (locked and requeued at the bucket computed
/// before locking), `recalced` (locked, and the bucket had to be recomputed
/// because the base clock moved or the timer changed base).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct BaseStats {
    /// Timers armed while not pending.
    pub armed: u64,
    /// Callbacks run.
    pub fired: u64,
    /// Pending timers removed by `delete` (or by dropping the handle).
    pub deleted: u64,
    /// Timers queued right now.
    pub pending: u64,
    /// Re-arms answered without the lock. Counted only when statistics are
    /// enabled ([`Builder::stats`](crate::Builder::stats)): the count costs
    /// an atomic add on the fast path.
    pub matched: u64,
    /// Re-arms requeued at the bucket computed before taking the lock.
    pub requeued: u64,
    /// Re-arms whose bucket was recomputed under the lock.
    pub recalced: u64,
    /// Timers that moved here from another base.
    pub migrated: u64,
    /// Callbacks that panicked (caught; the timer counts as fired).
    pub panicked: u64,
}

impl BaseStats {
    pub(crate) fn from_counters(c: &Counters, pending: usize, matched: u64) -> Self {
        BaseStats {
            armed: c.armed,
            fired: c.fired,
            deleted: c.deleted,
            pending: pending as u64,
            matched,
            requeued: c.requeued,
            recalced: c.recalced,
            migrated: c.migrated,
            panicked: c.panicked,
        }
    }
}

impl AddAssign for BaseStats {
    fn add_assign(&mut self, o: BaseStats) {
        self.armed += o.armed;
        self.fired += o.fired;
        self.deleted += o.deleted;
        self.pending += o.pending;
        self.matched += o.matched;
        self.requeued += o.requeued;
        self.recalced += o.recalced;
        self.migrated += o.migrated;
        self.panicked += o.panicked;
    }
}
