//! The hierarchical pull model (Linux 6.9; the kernel's
//! `kernel/time/timer_migration.c`, Linux 6.9): movable timers are always
//! queued on the arming worker, and an idle worker's movable timers are
//! expired by a busy one, so that idle workers stay asleep.
//!
//! # Why pull, not push
//!
//! Before 6.9 the kernel chose, at enqueue, a CPU that would be busy when
//! the timer expired, and queued the timer there. Most timers are cancelled
//! before they expire, so the guess was mostly wasted, and the guess is
//! wrong by nature. Now every timer is queued locally; a CPU going idle
//! reports its first *movable* (global) expiry into a hierarchy, and a busy
//! CPU, the *migrator*, expires it remotely when it is due. Pinned timers
//! still wake their own CPU.
//!
//! utimer does the same with workers for CPUs. A worker that goes idle
//! arms its own wake-up only for its pinned (local) timers, and for the
//! first movable timer of the whole system if it is the last worker to go
//! idle. Deferrable timers stay on their own base and run only on their own
//! worker's tick: they never wake anyone and are never pulled (the kernel
//! in 6.9 keeps them on `BASE_DEF` the same way; turning them into movable
//! timers would let a migrator run them, but then the last idle worker
//! would have to wake for them, which is what "deferrable" promises it
//! need not do).
//!
//! # Topology
//!
//! Workers sit in groups of at most 8, groups of one NUMA node in groups of
//! 8 above them, up to one root per node, all nodes' subtrees equally deep;
//! above that cross-node level, node roots in groups of 8 up to one top
//! (`topology.rs`). 20 workers on two nodes (16 + 4):
//!
//! ```text
//! LVL 2                         [GRP2:0]                 cross-node
//!                         /                 \
//! LVL 1            [GRP1:0 n0]            [GRP1:1 n1]
//!                  /        \                  |
//! LVL 0   [GRP0:0 n0]   [GRP0:1 n0]       [GRP0:2 n1]
//!          /  ...  \     /  ...  \         /  ...  \
//! workers 0   ...   7   8   ...   15      16  ...  19
//! ```
//!
//! Each group has a state word (`state.rs`: active-children mask, migrator,
//! sequence counter; changed only by compare-and-swap) and an event queue:
//! one slot per child, holding the child's first movable event (expiry and
//! the worker whose base has it) as last reported, and a lock-free mirror
//! of the earliest (`Group::next`).
//!
//! * **Going active** (`activate_up`): set the child's bit; if the group had
//!   no migrator, the child becomes it and the walk goes on to the parent,
//!   else it stops. Lock-free.
//! * **Going idle** (`walk_up` with `Why::Idle`): store the worker's first
//!   movable expiry in its group's slot, clear its bit (handing the
//!   migrator role to the lowest other active child, or to nobody); while
//!   the group is left idle, carry its first event up to the parent the
//!   same way. If the top is left idle, the worker was the last: it arms
//!   its wake-up for the top's first event, the first movable expiry in
//!   the system.
//! * **Remote expiry** (`due`, then the nohz layer): on each tick, a worker
//!   walks up the groups where it is the migrator and reads each one's
//!   `next` without a lock; when one is due it collects the idle workers
//!   whose events are due, and expires each one's global base under that
//!   base's lock, exactly as the owner's run would (`running` set, one run
//!   per base, `delete_sync` waiting as usual). It then reads the base's
//!   next expiry under the same lock and walks it up (`remote_update`).
//! * **New timers on an idle worker**: an enqueue on an idle worker's global
//!   base that fires before its reported event reaches `new_timer` through
//!   the base layer's wake hook: the event is lowered and walked up instead
//!   of waking the worker; only when everybody sleeps and it is earlier
//!   than the armed wake-up is the worker that armed it woken.
//!
//! # Beyond the kernel: stalled workers
//!
//! A kernel CPU is interrupted by its tick; a worker thread in a long job is
//! not. Each worker stores a *heartbeat* (the tick of its last tick point:
//! its expiry run). A monitor (the runtime's `utimer-monitor` thread, or
//! the simulator's) looks every tick while some worker is active; an
//! active member whose heartbeat is more than the *stall bound* old
//! ([`Builder::stall_bound`](crate::Builder::stall_bound), 2 ticks by
//! default) is deactivated on its behalf (`stall`), exactly as if it had
//! gone idle: its movable timers are pulled by a migrator, or, if it was
//! the last active worker, by the monitor itself, which then arms its own
//! wake-up as the last idle worker would. At its next tick point the
//! worker sees its `stalled` flag and activates again. So a stuck worker's
//! movable timers are late by at most the stall bound plus two ticks (one
//! for the monitor's period, one for the migrator's tick); its pinned
//! timers wait for it, as they must.
//!
//! The stuck worker and a migrator may both reach its global base; the
//! base's lock and its one-run-at-a-time flag (`timer_list/base/expire.rs`) make sure
//! no callback runs twice or twice at once (`tests/loom.rs`,
//! `stalled_worker_and_migrator_share_a_base`).
//!
//! # Lifetime rules
//!
//! The hierarchy is built once with the system, from its [`Topology`], and
//! lives as long as the system's idle state: groups and leaves are never
//! added or freed. Membership changes instead: a worker is a member from
//! its registration (or bringing it online) until its `Worker` is dropped
//! (or it is taken offline). A non-member's movable timers are never
//! pulled and it wakes for them itself, as before the pull model.
//!
//! # Locking rules
//!
//! * Lock order: **base lock, then leaf lock, then group locks from child to
//!   parent**. Walks take group locks hand over hand upward; nothing that
//!   holds a group lock takes a leaf or base lock, and nothing walks down.
//! * A group's event slots and its top-only wake-up record are protected by
//!   its lock; `next` is written under it and read without it.
//! * A leaf's `member` and `event` are protected by its lock; `active` and
//!   `stalled` are written under it and read without it.
//! * The state word is only changed by compare-and-swap, and a change of a
//!   group's view of a child always reads the group's word first and the
//!   child's state second (`Hierarchy::reconcile`).
//! * Going idle, a stall and a remote expiry's update run with the worker's
//!   global base locked, so that an arm on that base is either seen by the
//!   walk or comes after it and reaches `new_timer`. Going active does too,
//!   and clears the base's idle threshold under the same lock: a stall
//!   cannot land between the two (its threshold would be wiped while the
//!   worker counts as idle, and an arm there would reach nobody).
//! * A heartbeat is a tick of the precise clock: the coarse one lags by up
//!   to a few ticks, and a worker that has just woken would look stalled.
//!
//! # The race the sequence counter prevents
//!
//! Going active is lock-free, and so is the way each walker brings a
//! parent's view of a child up to date: it reads the parent's word, then
//! the child's state, and swaps in the reconciled word. Take two workers
//! in one group, and the group's parent:
//!
//! ```text
//! LVL 1          [GRP1:0]  active = {GRP0:0, GRP0:1}, migrator = GRP0:1
//!                /       \
//! LVL 0   [GRP0:0]       [GRP0:1]   (busy elsewhere; does not change)
//!          W0   W1
//! ```
//!
//! 1. W0, the only active worker of GRP0:0, goes idle: GRP0:0 becomes
//!    idle, and W0 walks on to GRP1:0. It reads GRP1:0's word (GRP0:0 still
//!    listed as active), then GRP0:0's state: idle. It computes the word
//!    without GRP0:0, but is delayed before its swap.
//! 2. W1 wakes: GRP0:0 becomes active again with W1 as migrator, and W1
//!    walks on to GRP1:0. It reads GRP1:0's word, then GRP0:0's state:
//!    active. GRP1:0 already lists GRP0:0, so the bits do not change.
//! 3. W0's swap. Without a counter, GRP1:0's word is bit for bit what W0
//!    read in step 1, the swap succeeds, and GRP1:0 says GRP0:0 is idle
//!    while W1 is active in it: nobody above GRP0:0 will look at its
//!    events, and if GRP0:1 goes idle too, W1's group is not counted and
//!    the last idle worker arms no wake-up for the system.
//!
//! With the counter, W1's swap in step 2 bumped it although the bits stayed
//! the same, so W0's swap fails. W0 reads GRP1:0's word again and then
//! GRP0:0's state, now active, and leaves the bit set. In general: for any
//! group, the swap that lands last read the child's state after every
//! earlier swap had landed, so the last word written reflects the child's
//! final state. The loom model `sequence_counter_race` plays these steps.
//! (The counter has 16 bits: a swap would wrongly succeed only if exactly
//! 65,536 other swaps of that group landed between its read and its swap.)
//!
//! # Files
//!
//! `topology.rs` (the machine and the layout), `state.rs` (the word),
//! `group.rs` (groups, leaves, event queues), `walk.rs` (the walks), `ops.rs`
//! (one operation per event in a worker's life), `trace.rs` (tracepoints).

mod group;
mod ops;
mod state;
#[cfg(all(test, loom))]
mod tests;
mod topology;
mod trace;
mod walk;

pub(crate) use ops::{Deactivated, NewTimer};
pub use topology::Topology;
pub(crate) use walk::{TopIdle, Wake};

use group::{Group, Leaf};
use std::sync::atomic::Ordering::Relaxed;
use topology::{Child, Layout};

/// The pull model's hierarchy of one system.
pub(crate) struct Hierarchy {
    groups: Box<[Group]>,
    leaves: Box<[Leaf]>,
    levels: u8,
    top: u32,
}

/// One worker's pull-model counters ([`Metrics::migration_stats`]).
///
/// [`Metrics::migration_stats`]: crate::Metrics::migration_stats
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MigrationStats {
    /// Expiry runs this worker did of other workers' global bases.
    pub remote_expiries: u64,
    /// Expiry runs other workers (or the monitor) did of this worker's
    /// global base.
    pub pulled_from: u64,
    /// Times this worker, going idle, handed its level-0 group's migrator
    /// role to another worker.
    pub handoffs: u64,
    /// Times it went idle.
    pub idle_entries: u64,
    /// Times it became active again after being idle or stalled.
    pub wakeups: u64,
    /// Times the monitor found it stalled.
    pub stalls: u64,
    /// Compare-and-swaps of group state words done on its behalf.
    pub cas: u64,
    /// Group locks taken on its behalf.
    pub locks: u64,
}

/// One group of a hierarchy, as [`Metrics::hierarchy`] reports it.
///
/// [`Metrics::hierarchy`]: crate::Metrics::hierarchy
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct GroupInfo {
    /// 0 for groups of workers.
    pub level: u8,
    /// The NUMA node of every worker below, for groups below the cross-node
    /// level.
    pub node: Option<u32>,
    /// Index of the parent group, `None` for the top.
    pub parent: Option<usize>,
    /// Workers (level 0) or group indices (above).
    pub children: Vec<usize>,
    /// One bit per active child.
    pub active: u8,
    /// The child (its position in `children`) that handles the group's
    /// events, if any child is active.
    pub migrator: Option<u8>,
    /// The group's first movable event (tick) as its queue has it.
    pub next_event: Option<u64>,
}

impl Hierarchy {
    pub(crate) fn new(topology: &Topology) -> Hierarchy {
        let layout = Layout::build(topology);
        Hierarchy {
            groups: layout.groups.iter().map(Group::new).collect(),
            leaves: layout
                .leaves
                .iter()
                .map(|&(g, s)| Leaf::new(g, s))
                .collect(),
            levels: layout.levels,
            top: layout.top,
        }
    }

    /// Number of levels.
    pub(crate) fn levels(&self) -> u8 {
        self.levels
    }

    /// Worker `w`'s counters.
    pub(crate) fn stats(&self, w: usize) -> MigrationStats {
        let c = &self.leaves[w].counters;
        MigrationStats {
            remote_expiries: c.remote_expiries.load(Relaxed),
            pulled_from: c.pulled_from.load(Relaxed),
            handoffs: c.handoffs.load(Relaxed),
            idle_entries: c.idle_entries.load(Relaxed),
            wakeups: c.wakeups.load(Relaxed),
            stalls: c.stalls.load(Relaxed),
            cas: c.cas.load(Relaxed),
            locks: c.locks.load(Relaxed),
        }
    }

    /// Every group's state.
    pub(crate) fn info(&self) -> Vec<GroupInfo> {
        self.groups
            .iter()
            .map(|g| {
                let state = g.state();
                let next = walk::lock(&g.events).first().get().map(|e| e.expires);
                GroupInfo {
                    level: g.level,
                    node: g.node,
                    parent: g.parent.map(|p| p as usize),
                    children: g
                        .children
                        .iter()
                        .map(|c| match *c {
                            Child::Worker(w) | Child::Group(w) => w as usize,
                        })
                        .collect(),
                    active: state.active(),
                    migrator: state.migrator(),
                    next_event: next,
                }
            })
            .collect()
    }

    /// With no walk under way: every group's active mask and migrator agree
    /// with its children's states. `Err` names the first group that does not.
    pub(crate) fn check(&self) -> Result<(), String> {
        for (i, g) in self.groups.iter().enumerate() {
            let state = g.state();
            let mut want = 0u8;
            for (s, &c) in g.children.iter().enumerate() {
                if self.child_active(c) {
                    want |= 1 << s;
                }
            }
            if state.active() != want {
                return Err(format!(
                    "group {i} (level {}) lists active children {:#010b}, but {:#010b} are active",
                    g.level,
                    state.active(),
                    want
                ));
            }
            match state.migrator() {
                Some(m) if want & (1 << m) == 0 => {
                    return Err(format!("group {i}: migrator {m} is not active"))
                }
                None if want != 0 => {
                    return Err(format!("group {i}: active children, no migrator"))
                }
                _ => {}
            }
        }
        Ok(())
    }
}
