//! The hierarchy's nodes: groups (with their event queues) and leaves (one
//! per worker).

use super::state::GroupState;
use super::topology::{Child, GroupShape};
use crate::sync::{AtomicBool, AtomicU32, AtomicU64, Mutex};
use std::sync::atomic::Ordering::{Relaxed, SeqCst};

/// "No event": the expiry of an empty slot.
pub(crate) const NEVER: u64 = u64::MAX;

/// `Events::waker` when no worker armed the top's wake-up.
pub(crate) const NO_WAKER: u32 = u32::MAX;
/// `Events::waker` when the stall monitor did.
pub(crate) const MONITOR: u32 = u32::MAX - 1;

/// A child's first movable expiry, and the worker whose global base holds
/// it (the kernel's `struct tmigr_event`, with its `cpu`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    pub(crate) expires: u64,
    pub(crate) worker: u32,
}

impl Event {
    pub(crate) const NONE: Event = Event {
        expires: NEVER,
        worker: u32::MAX,
    };

    /// `Some` unless this is no event.
    pub(crate) fn get(self) -> Option<Event> {
        (self.expires != NEVER).then_some(self)
    }
}

/// A group's event queue: one slot per child, holding the child's first
/// event as last reported. A slot of a child that has since gone active is
/// *stale*: it stays until the migrator finds it due and drops it (the
/// kernel's `ignore` flag, evaluated against the child's state word when
/// used). Protected by the group's lock.
pub(crate) struct Events {
    pub(crate) slots: [Event; super::topology::FANOUT],
    /// Top group only: the tick the worker (or monitor) in `waker` armed its
    /// wake-up for, as the last to go idle (`NEVER`: none armed).
    pub(crate) wakeup: u64,
    /// Top group only: who armed it ([`NO_WAKER`], [`MONITOR`], or a worker).
    pub(crate) waker: u32,
}

impl Events {
    /// The earliest event (ties: the lowest slot).
    pub(crate) fn first(&self) -> Event {
        let mut first = Event::NONE;
        for e in &self.slots {
            if e.expires < first.expires {
                first = *e;
            }
        }
        first
    }
}

/// One group of the hierarchy (the kernel's `struct tmigr_group`).
pub(crate) struct Group {
    /// Active children, migrator, sequence: [`GroupState`]'s word. Changed
    /// only by compare-and-swap.
    pub(crate) state: AtomicU32,
    /// Mirror of `events.first().expires`, written under `events`' lock, read
    /// lock-free by the migrator on each tick (the kernel's
    /// `group->next_expiry`).
    pub(crate) next: AtomicU64,
    /// The event queue.
    pub(crate) events: Mutex<Events>,
    pub(crate) level: u8,
    pub(crate) node: Option<u32>,
    pub(crate) parent: Option<u32>,
    /// This group's slot in its parent.
    pub(crate) slot: u8,
    pub(crate) children: Box<[Child]>,
}

impl Group {
    pub(crate) fn new(shape: &GroupShape) -> Group {
        Group {
            state: AtomicU32::new(GroupState::IDLE.word()),
            next: AtomicU64::new(NEVER),
            events: Mutex::new(Events {
                slots: [Event::NONE; super::topology::FANOUT],
                wakeup: NEVER,
                waker: NO_WAKER,
            }),
            level: shape.level,
            node: shape.node,
            parent: shape.parent,
            slot: shape.slot,
            children: shape.children.clone().into_boxed_slice(),
        }
    }

    /// The state word, unpacked.
    #[inline]
    pub(crate) fn state(&self) -> GroupState {
        GroupState::from_word(self.state.load(SeqCst))
    }
}

/// A worker's place in the hierarchy (the kernel's `struct tmigr_cpu`).
pub(crate) struct Leaf {
    pub(crate) inner: Mutex<LeafInner>,
    /// Active: the worker expires its own movable timers. Written under
    /// `inner`'s lock, read lock-free by its group's walkers and migrator.
    pub(crate) active: AtomicBool,
    /// Set while the stall monitor has deactivated the worker on its
    /// behalf; written under `inner`'s lock, read lock-free at each tick.
    pub(crate) stalled: AtomicBool,
    /// The tick at which the worker last reached a tick point (its expiry
    /// run); written by the worker, read by the stall monitor.
    pub(crate) heartbeat: AtomicU64,
    pub(crate) group: u32,
    pub(crate) slot: u8,
    pub(crate) counters: LeafCounters,
}

/// The part of a leaf protected by its lock.
pub(crate) struct LeafInner {
    /// The worker takes part in the pull model (it registered, or was
    /// brought online).
    pub(crate) member: bool,
    /// The worker is offline: it joins again when it comes back if
    /// `rejoin` (it was a member, or registered meanwhile).
    pub(crate) offline: bool,
    pub(crate) rejoin: bool,
    /// Its first movable expiry as reported to its group while it is not
    /// active (`NEVER`: none).
    pub(crate) event: u64,
}

/// Per-worker counters (relaxed; for tests, `utimer bench` and `utimer sim`).
#[derive(Default)]
pub(crate) struct LeafCounters {
    pub(crate) remote_expiries: AtomicU64,
    pub(crate) handoffs: AtomicU64,
    pub(crate) idle_entries: AtomicU64,
    pub(crate) wakeups: AtomicU64,
    pub(crate) stalls: AtomicU64,
    pub(crate) pulled_from: AtomicU64,
    /// Compare-and-swaps and hierarchy lock acquisitions done on this
    /// worker's behalf (walks for its idle entry and exit, its new timers).
    pub(crate) cas: AtomicU64,
    pub(crate) locks: AtomicU64,
}

impl LeafCounters {
    #[inline]
    pub(crate) fn bump(c: &AtomicU64) {
        c.fetch_add(1, Relaxed);
    }
}

impl Leaf {
    pub(crate) fn new(group: u32, slot: u8) -> Leaf {
        Leaf {
            inner: Mutex::new(LeafInner {
                member: false,
                offline: false,
                rejoin: false,
                event: NEVER,
            }),
            active: AtomicBool::new(false),
            stalled: AtomicBool::new(false),
            heartbeat: AtomicU64::new(0),
            group,
            slot,
            counters: LeafCounters::default(),
        }
    }
}
