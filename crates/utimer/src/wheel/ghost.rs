//! Deferred removal: a cancelled entry lingers until it is re-armed into
//! the same bucket or something else needs the wheel exact.
//!
//! # Why
//!
//! The commonest life of a timer is a timeout armed and cancelled again
//! and again at the same distance: a request deadline, an idle timeout
//! re-armed per message. Above level 0 a bucket spans 8 or more ticks, so
//! most such arms land in the bucket that the cancel just took the timer
//! out of. An eager cancel clears the entry's bit in its block, maybe the
//! bucket's bit in the level bitmap, and the length; the next arm sets
//! them all again. Each of those is a store that the very next operation
//! loads back, so the pair is one dependency chain through memory, on top
//! of the instructions.
//!
//! # How
//!
//! [`Wheel::remove_deferred`] leaves the entry where it is and records it
//! as the wheel's *ghost*: its key, its bucket and its value. At most one
//! ghost exists; a second deferred removal first removes the old ghost for
//! real. [`Wheel::insert_or_revive`] checks whether the entry to be inserted
//! is the ghost's value bound for the ghost's bucket; if so the ghost simply
//! stops being one, and its key is handed back. Nothing else is written.
//!
//! [`Wheel::requeue`] does both for a re-arm: the entry's old place becomes
//! the ghost, and a ghost of the same value in the new bucket is taken
//! back. A timer re-armed back and forth between two buckets (a
//! connection's request timeout and its idle timeout) thus only swaps its
//! two entries' roles. A timer that goes on to yet another bucket pays an
//! ordinary removal (of the older ghost) and insert.
//!
//! ```text
//!   delete(t)          t's entry in bucket 70 ──► ghost (t, 70)
//!   modify(t, e)       e lands in bucket 70   ──► ghost revived, t pending
//!   modify(t, e')      e' lands in bucket 200 ──► entry in 200, ghost (t, 70)
//!   modify(t, e)       bucket 70 again        ──► revived, ghost (t, 200)
//! ```
//!
//! The kernel has no counterpart: its `detach_timer()` unlinks the
//! timer's `hlist_node` at once, which writes only the two neighbours.
//! Here a removal also touches the block's mask and maybe the level bitmap,
//! so putting it off pays.
//!
//! # What stays exact
//!
//! A ghost is invisible to every other method: [`Wheel::len`],
//! [`Wheel::get`] and [`Wheel::values`] leave it out, and whatever reads or
//! moves buckets ([`Wheel::next_expiry`], [`Wheel::forward`],
//! [`Wheel::poll`], [`Wheel::drain`]) first *settles* it, that is, removes
//! it for real. So the next expiry stays exact, the clock never waits on a
//! cancelled entry, and no run hands one out.
//!
//! Reviving is only sound while the entry still sits in the bucket it was
//! recorded with, and while that bucket still fires at the time a fresh
//! insert would get. Both hold because the wheel's clock and its buckets
//! only change inside the methods that settle first: an entry leaves its
//! bucket only when a run or a forward takes the bucket to the run list
//! (`poll`, `forward`), and the clock moves only in those two. A bucket
//! index computed against an unchanged clock names the same firing time.
//! During a run the entries on the run list still carry the bucket they
//! were queued in, so no removal is deferred while a run is under way.
//! An entry recorded as due ([`DUE`]) sits on the due list, or on the run
//! list if a forward took its bucket out (the timer bases mark those
//! timers due): either way the next run hands it out first, which is
//! exactly what an arm into the past asks for, so reviving it serves such
//! an arm wherever it sits. What must never happen, a ghost taken back
//! from the run list by an arm for a bucket in the future, cannot: its
//! record says due, and no future bucket is [`DUE`].
//!
//! The public wheel never defers: only the crate's timer bases call these
//! methods (`delete` and re-arms; a timer's drop removes it for real).
//! The ghost's value may be a pointer to a timer freed since; it is only
//! compared and dropped, never dereferenced (`timer_list/entry/`'s lifetime rules).

use super::{Key, Position, Wheel, DUE};
use crate::wheel::Generation;

/// The one entry whose removal was deferred.
#[derive(Copy, Clone)]
pub(super) struct Ghost<T, G> {
    pub(super) key: Key<G>,
    /// The bucket the entry sits in.
    pub(super) bucket: u16,
    pub(super) value: T,
}

impl<T: Copy + PartialEq, G: Generation> Wheel<T, G> {
    /// Removes the entry `key`, holding `value` in `bucket`, possibly later
    /// (see the module docs): until then it is invisible, and
    /// [`insert_or_revive`](Self::insert_or_revive) of the same value into
    /// the same bucket takes it back. The kernel's `detach_timer()`, put
    /// off.
    #[inline(always)]
    pub(crate) fn remove_deferred(&mut self, key: Key<G>, bucket: u16, value: T) {
        if self.in_run {
            // Run-list entries still name the bucket they came from.
            self.remove(key);
            return;
        }
        debug_assert!(self.lists.get(key.slot, key.gen) == Some(&value));
        debug_assert!(self.sits_in(key, bucket));
        let ghost = Ghost { key, bucket, value };
        if let Some(old) = self.ghost.replace(ghost) {
            self.remove(old.key);
        }
    }

    /// Queues `value` at `pos` (as [`insert_at`](Self::insert_at)), by
    /// reviving the ghost if it holds `value` in that very bucket.
    #[inline(always)]
    pub(crate) fn insert_or_revive(&mut self, pos: Position, value: T) -> Key<G> {
        match self.revive(pos, value) {
            Some(key) => {
                self.ghost = None;
                key
            }
            None => self.insert_at(pos, value),
        }
    }

    /// Moves the entry `key`, holding `value` in `bucket`, to `pos`, and
    /// returns its new key: a removal and an insert, where the insert may
    /// revive the ghost and the removal is deferred. So a timer re-armed
    /// back and forth between two buckets (a connection's request timeout
    /// and its idle timeout) swaps its two entries' roles, and writes
    /// nothing else.
    #[inline(always)]
    pub(crate) fn requeue(&mut self, key: Key<G>, bucket: u16, value: T, pos: Position) -> Key<G> {
        if let Some(revived) = self.revive(pos, value) {
            // No run is under way (no ghost exists during one), and the
            // ghost and `key` are two entries of `value` (maybe in one
            // bucket): the old place becomes the ghost.
            debug_assert!(!self.in_run && revived != key);
            debug_assert!(self.sits_in(key, bucket));
            self.ghost = Some(Ghost { key, bucket, value });
            return revived;
        }
        self.remove_deferred(key, bucket, value);
        self.insert_at(pos, value)
    }

    /// The ghost's key, if the ghost holds `value` in `pos`'s bucket.
    #[inline(always)]
    fn revive(&self, pos: Position, value: T) -> Option<Key<G>> {
        let ghost = self.ghost?;
        if ghost.bucket != pos.idx || ghost.value != value {
            return None;
        }
        // The bucket is still pending and the clock unmoved, so the cached
        // next expiry already covers it.
        debug_assert!(pos.idx == DUE || self.recalc || self.next <= pos.expiry);
        Some(ghost.key)
    }
}

impl<T, G: Generation> Wheel<T, G> {
    /// Removes the ghost for real, if there is one.
    #[inline(always)]
    pub(super) fn settle(&mut self) {
        if self.ghost.is_some() {
            self.settle_ghost();
        }
    }

    #[inline(never)]
    fn settle_ghost(&mut self) {
        if let Some(ghost) = self.ghost.take() {
            let removed = self.remove(ghost.key);
            debug_assert!(removed.is_some());
        }
    }

    /// Whether entry `key` sits in `bucket`, as its timer's word says:
    /// an entry said to be due ([`DUE`]) may also sit on the run list
    /// outside a run, or on the next run's list (a forward took its bucket
    /// out). All are due at the next run, so reviving it there is as right
    /// as reviving it on the due list (for assertions).
    pub(super) fn sits_in(&self, key: Key<G>, bucket: u16) -> bool {
        let actual = self.lists.bucket_of_slot(key.slot);
        actual == bucket as usize
            || (bucket == DUE && (actual == super::RUN || actual == super::NEXT))
    }

    /// Whether `key` names the ghost.
    #[inline(always)]
    pub(super) fn is_ghost(&self, key: Key<G>) -> bool {
        self.ghost.as_ref().is_some_and(|g| g.key == key)
    }
}

#[cfg(test)]
mod tests;
