//! Walking the hierarchy: going active, going idle, and carrying a changed
//! event up (the kernel's `tmigr_active_up()`, `tmigr_inactive_up()` and
//! `tmigr_update_events()`).

use super::group::{Event, Events, Group, LeafCounters, MONITOR, NEVER, NO_WAKER};
use super::state::GroupState;
use super::topology::Child;
use super::Hierarchy;
use crate::sync::MutexGuard;
use std::sync::atomic::Ordering::SeqCst;

/// Why an event walk runs: decides what happens when it finds the top group
/// idle.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Why {
    /// The worker goes idle: if it is the last, it arms its own wake-up.
    Idle(u32),
    /// The monitor deactivates a stalled worker: if that leaves nobody
    /// active, the monitor arms the wake-up.
    Stall,
    /// A worker leaves the pull model: if nobody stays active, the worker
    /// with the first event is woken to take the duty.
    Leave,
    /// An idle worker's first event changed (a new timer, a remote expiry):
    /// if everybody sleeps and it is earlier than the armed wake-up, whoever
    /// armed it is woken.
    Update,
}

/// Whom to wake after a walk (outside every lock).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Wake {
    Worker(usize),
    Monitor,
}

/// What a walk that reached an idle top asks of its caller.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub(crate) struct TopIdle {
    /// The caller is the last idle worker (or the monitor): arm a wake-up
    /// for this tick.
    pub(crate) arm: Option<u64>,
    /// Someone else must be woken now.
    pub(crate) wake: Option<Wake>,
}

pub(crate) fn lock<T>(m: &crate::sync::Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Hierarchy {
    /// Whether `child` is active now: a worker's flag, a group's migrator.
    pub(crate) fn child_active(&self, child: Child) -> bool {
        match child {
            Child::Worker(w) => self.leaves[w as usize].active.load(SeqCst),
            Child::Group(g) => self.groups[g as usize].state().is_active(),
        }
    }

    /// Brings `group`'s state word in line with `child`'s current state:
    /// reads the group's word, *then* the child's state, and
    /// compare-and-swaps; on failure reads both again. Returns the state
    /// before and after. (Why this order, and why the counter: the race in
    /// the module essay.)
    pub(crate) fn reconcile(
        &self,
        group: &Group,
        slot: u8,
        child: Child,
        counters: &LeafCounters,
    ) -> (GroupState, GroupState) {
        let mut cur = group.state.load(SeqCst);
        loop {
            let child_active = self.child_active(child);
            let before = GroupState::from_word(cur);
            let after = before.reconcile(slot, child_active);
            LeafCounters::bump(&counters.cas);
            match group
                .state
                .compare_exchange(cur, after.word(), SeqCst, SeqCst)
            {
                Ok(_) => {
                    self.trace_group_set(group, before, after, child_active);
                    return (before, after);
                }
                Err(now) => cur = now,
            }
        }
    }

    /// Worker `w` (whose leaf the caller has made active) walks up: each
    /// group it makes active takes it (or its group) as migrator, and the
    /// walk stops at the first group that already had one. Lock-free.
    /// Returns whether it made the top group active.
    pub(crate) fn activate_up(&self, w: usize) -> bool {
        let leaf = &self.leaves[w];
        let (mut g, mut slot, mut child) = (leaf.group, leaf.slot, Child::Worker(w as u32));
        loop {
            let group = &self.groups[g as usize];
            let (before, after) = self.reconcile(group, slot, child, &leaf.counters);
            if before.is_active() || !after.is_active() {
                return false;
            }
            match group.parent {
                Some(p) => (g, slot, child) = (p, group.slot, Child::Group(g)),
                None => return true,
            }
        }
    }

    /// Stores `event` as worker `w`'s in its group and carries the group's
    /// first event up while the group is idle, hand over hand (a child's
    /// lock is held until its parent's is taken, so two walks on one path
    /// never overtake each other). With a deactivating `why`, each group's
    /// state is first reconciled with its child. The caller holds `w`'s
    /// leaf lock (and, for `Idle`, `Stall` and `Update` from a remote
    /// expiry, `w`'s global base lock: base before hierarchy).
    pub(crate) fn walk_up(&self, w: usize, event: Event, why: Why) -> TopIdle {
        let leaf = &self.leaves[w];
        let deactivating = why != Why::Update;
        let (mut g, mut slot, mut child) = (leaf.group, leaf.slot, Child::Worker(w as u32));
        let mut event = event;
        let mut held: Option<MutexGuard<'_, Events>> = None;
        loop {
            let group = &self.groups[g as usize];
            let mut events = lock(&group.events);
            LeafCounters::bump(&leaf.counters.locks);
            drop(held.take());
            events.slots[slot as usize] = event;
            let first = events.first();
            group.next.store(first.expires, SeqCst);
            let state = if deactivating {
                let (before, after) = self.reconcile(group, slot, child, &leaf.counters);
                let was_migrator = before.migrator() == Some(slot);
                if child == Child::Worker(w as u32) && was_migrator && after.is_active() {
                    LeafCounters::bump(&leaf.counters.handoffs);
                }
                after
            } else {
                group.state()
            };
            self.trace_update_events(group, first, state);
            if state.is_active() {
                return TopIdle::default();
            }
            match group.parent {
                Some(p) => {
                    (g, slot, child) = (p, group.slot, Child::Group(g));
                    event = first;
                    held = Some(events);
                }
                None => return top_idle(&mut events, first, why),
            }
        }
    }
}

/// The walk found the top group idle with first event `first`.
fn top_idle(events: &mut Events, first: Event, why: Why) -> TopIdle {
    match why {
        Why::Idle(w) => {
            events.waker = w;
            events.wakeup = first.expires;
            TopIdle {
                arm: first.get().map(|e| e.expires),
                wake: None,
            }
        }
        Why::Stall => {
            events.waker = MONITOR;
            events.wakeup = first.expires;
            TopIdle {
                arm: first.get().map(|e| e.expires),
                wake: None,
            }
        }
        Why::Leave | Why::Update => {
            let Some(first) = first.get() else {
                return TopIdle::default();
            };
            if why == Why::Update && first.expires >= events.wakeup {
                return TopIdle::default();
            }
            let wake = match events.waker {
                MONITOR => Wake::Monitor,
                w if w != NO_WAKER && why == Why::Update => Wake::Worker(w as usize),
                _ => Wake::Worker(first.worker as usize),
            };
            // Whoever is woken re-arms as the last idle worker; until then,
            // every earlier event wakes it again.
            events.wakeup = if why == Why::Leave {
                NEVER
            } else {
                first.expires
            };
            if why == Why::Leave {
                events.waker = NO_WAKER;
            }
            TopIdle {
                arm: None,
                wake: Some(wake),
            }
        }
    }
}
