//! Taking a worker offline and back (the kernel's CPU hotplug:
//! `timers_dead_cpu()` / `timers_prepare_cpu()`).
//!
//! `Bases::take_offline(w)` marks the worker's three bases offline (under
//! each lock) and routes the worker to an online one: from then on no arm
//! lands there (`modify` sees the flag and re-targets, see
//! `timer/modify.rs`), and no expiry run starts there. It waits for a run
//! already under way to end (the run stops after the callback in progress:
//! a callback never moves off the base where it runs), then moves every
//! pending timer, pinned ones included, to the same kind of base on the
//! routed worker, in one batch: each timer is taken off the wheel and
//! tagged `MIGRATING` under the old lock, and lands under the new lock,
//! with no two locks held (as `BaseGuard::migrate`). Its state word keeps
//! saying "pending" until it lands, so a `delete`, `delete_sync` or
//! `modify_pending` of a moving timer never answers "not pending" without a
//! lock: it waits in `lock_timer_base()` until the timer has landed, then
//! acts on it there; nothing is lost or fires twice.
//!
//! A moved timer lands at the tick its bucket fires (its expiry rounded up
//! to its level), which becomes its expiry of record: a lock-free
//! same-bucket re-arm (`timer/modify.rs`) writes nothing and relies on
//! that tick, so re-queueing at the older expiry of record could fire it
//! before the expiry that re-arm asked for.
//!
//! Hot-plug operations are serialized by one mutex; they are rare and may
//! block (waiting for a callback), so they are refused inside a callback.

use super::{Bases, TimerPtr, KINDS};
use crate::sync::{Mutex, MutexGuard};
use crate::timer_list::base::in_callback;
use crate::timer_list::entry::{TimerRef, MIGRATING};
use crate::TimerError;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};

/// Which workers are online, and where each offline one is routed.
pub(crate) struct Hotplug {
    lock: Mutex<()>,
    /// Per worker: `u32::MAX` while online, else the online worker that
    /// takes its arms.
    route: Box<[crate::sync::AtomicU32]>,
}

const ONLINE: u32 = u32::MAX;

impl Hotplug {
    pub(crate) fn new(workers: usize) -> Hotplug {
        Hotplug {
            lock: Mutex::new(()),
            route: (0..workers)
                .map(|_| crate::sync::AtomicU32::new(ONLINE))
                .collect(),
        }
    }
}

impl Bases {
    /// The worker that takes `worker`'s arms: itself while online.
    #[inline]
    pub(crate) fn route(&self, worker: usize) -> usize {
        match self.hotplug.route[worker].load(Relaxed) {
            ONLINE => worker,
            to => to as usize,
        }
    }

    /// Whether `worker` is online.
    pub(crate) fn is_online(&self, worker: usize) -> bool {
        self.hotplug.route[worker].load(SeqCst) == ONLINE
    }

    /// Points every offline worker at the first online worker after it.
    fn reroute(&self) {
        let n = self.workers();
        for w in 0..n {
            if self.hotplug.route[w].load(SeqCst) == ONLINE {
                continue;
            }
            let to = (1..n)
                .map(|d| (w + d) % n)
                .find(|&o| self.hotplug.route[o].load(SeqCst) == ONLINE)
                .expect("one worker always stays online");
            self.hotplug.route[w].store(to as u32, SeqCst);
        }
    }

    /// Serializes hot-plug operations: the caller holds it across this
    /// layer's part and the hierarchy's.
    pub(crate) fn hotplug_serial(&self) -> MutexGuard<'_, ()> {
        self.hotplug.lock.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes `worker` offline and moves its pending timers to an online
    /// worker; returns how many moved and where. See the module docs.
    ///
    /// # Errors
    /// [`TimerError::NoSuchWorker`]; [`TimerError::WorkerState`] if it is
    /// already offline; [`TimerError::LastWorker`] if it is the only one
    /// online; [`TimerError::InCallback`] inside a timer callback.
    pub(crate) fn take_offline(
        &self,
        worker: usize,
        _serial: &MutexGuard<'_, ()>,
    ) -> Result<(usize, usize), TimerError> {
        self.check_worker(worker)?;
        if in_callback() {
            return Err(TimerError::InCallback);
        }
        if !self.is_online(worker) {
            return Err(TimerError::WorkerState {
                worker: worker as u32,
                online: false,
            });
        }
        if (0..self.workers()).all(|w| w == worker || !self.is_online(w)) {
            return Err(TimerError::LastWorker);
        }
        // Route first (so that re-targeted arms have a place), then flag
        // the bases (so that nothing new lands or runs there).
        self.hotplug.route[worker].store(0, SeqCst);
        self.reroute();
        let to = self.route(worker);
        for kind in 0..KINDS {
            let base = &self.all()[worker * KINDS + kind];
            let mut guard = base.lock();
            guard.closed |= super::OFFLINE;
            base.idle_until.store(0, Relaxed);
        }
        let mut moved = 0;
        for kind in 0..KINDS {
            moved += self.move_all(worker * KINDS + kind, to * KINDS + kind);
        }
        Ok((moved, to))
    }

    /// Opens `worker`'s bases again (the caller checked that it is
    /// offline): arms land there again.
    pub(crate) fn bring_online(&self, worker: usize, _serial: &MutexGuard<'_, ()>) {
        let now = self.ticks.now();
        for kind in 0..KINDS {
            let base = &self.all()[worker * KINDS + kind];
            let mut guard = base.lock();
            guard.closed &= !super::OFFLINE;
            guard.forward(now);
            // The worker counts as idle until its thread says otherwise:
            // the first arm on its global base reaches the wake hook (the
            // hierarchy learns it), and the caller wakes the thread.
            if kind == super::BaseKind::Global as usize {
                base.idle_until.store(u64::MAX, Relaxed);
            }
        }
        self.hotplug.route[worker].store(ONLINE, SeqCst);
        self.reroute();
    }

    /// Moves every pending timer of base `from` to base `to`, once no
    /// expiry run is under way on `from`.
    fn move_all(&self, from: usize, to: usize) -> usize {
        let (from, to) = (&self.all()[from], &self.all()[to]);
        let mut guard = loop {
            let guard = from.lock();
            if !guard.expiring {
                break guard;
            }
            // A callback is running there: let it finish (it may block for
            // long; sleep rather than spin).
            drop(guard);
            std::thread::sleep(std::time::Duration::from_micros(50));
        };
        let locked = guard.locked();
        let tagged = from.erased().map_addr(|a| a | MIGRATING);
        let mut moving = Vec::new();
        guard.wheel.drain(|TimerPtr(ptr)| {
            // SAFETY: a queued timer is live (entry/ lifetime rules), and we
            // hold its base's lock.
            let t = unsafe { TimerRef::new(ptr) };
            // The state word stays as it is (pending) until the timer lands:
            // lock-free readers must not take a moving timer for idle.
            let word = t.get().state.load(Relaxed);
            // It lands at the tick its bucket fires, not at its expiry of
            // record: a lock-free same-bucket re-arm wrote nothing and
            // relies on that tick (`timer/modify.rs`), so the record may be
            // earlier than the latest expiry asked for. Never early, and no
            // later than it would have fired here (a fresher clock places
            // it on the same or a finer level).
            let at = word.fires_at().unwrap_or(word.expires());
            // SAFETY: the word is this base's address, tagged MIGRATING.
            unsafe { t.get().set_base_word(tagged, &locked) };
            moving.push((ptr, at));
        });
        guard.publish_next();
        drop(guard);
        let mut guard = to.lock();
        let locked = guard.locked();
        for &(ptr, expires) in &moving {
            // SAFETY: detached and tagged MIGRATING under `from`'s lock, the
            // timer is live (its handle's drop and free wait in
            // lock_timer_base() for it to land) and nobody else touches it.
            let t = unsafe { TimerRef::new(ptr) };
            // SAFETY: the word is `to`'s address.
            unsafe { t.get().set_base_word(to.erased(), &locked) };
            guard.add_timer(t, expires, None);
        }
        guard.stats.migrated += moving.len() as u64;
        moving.len()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use crate::timer_list::base::testing::delete_during_a_held_move;
    use std::thread;

    /// Found by the soak: a timer that a hot-unplug is moving between two
    /// bases read as idle, so `delete`, `delete_sync`, `modify_pending` and
    /// `is_pending` answered "not pending" without a lock, while it landed
    /// pending on the other worker (and fired later). The test holds the
    /// target base's lock to keep the move between its two halves.
    #[test]
    fn a_timer_moved_by_offline_stays_pending() {
        let (sys, offline) =
            delete_during_a_held_move(|sys, _| thread::spawn(move || sys.offline(0)));
        assert_eq!(offline, Ok(1));
        let s = sys.metrics().totals();
        assert_eq!((s.armed, s.deleted, s.pending), (1, 1, 0));
    }
}
