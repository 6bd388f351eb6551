//! Sleepers: hrtimers embedded in the memory of whoever waits on them, the
//! kernel's `struct hrtimer_sleeper` (an `hrtimer` and the task that its
//! callback, `hrtimer_wakeup()`, wakes).
//!
//! An [`HrTimer`](crate::HrTimer) is an `Arc`'d entry with a callback: one
//! allocation per timer and a slot in its base's heap. A future that
//! sleeps needs neither: all its "callback" does is wake a task. A
//! sleeper is a [`SleeperNode`] inside the pinned future itself (56 bytes:
//! three links, the expiry, the waker, a state word and the base's index),
//! queued in its base's [`Pairing`] heap, so arming, firing and dropping
//! allocate nothing and a pending sleep costs its own size and nothing
//! else, as the kernel's on-stack `hrtimer_sleeper` in `nanosleep` does.
//!
//! # Ground rules: who may touch what
//!
//! The *owner* is whoever holds the pinned sleeper (`&mut` through `Pin`:
//! one thread at a time). Other threads reach a node only through the heap
//! of the base it is queued on, under that base's lock: the base's expiry
//! run, hot-plug and shutdown.
//!
//! * `links` belong to the heap: read and written under the lock of the
//!   base named in `base`, only while the node is queued.
//! * `waker`: under that lock while queued (the expiry run takes it);
//!   the owner's alone otherwise.
//! * `expires` is written only by the owner, under the lock while queued;
//!   the heap reads it under the lock. The owner may read it at any time.
//! * `state` ([`IDLE`], [`QUEUED`], [`FIRED`], [`DEAD`]) is written under
//!   the lock: `QUEUED` and `IDLE` by the owner's start and cancel,
//!   `FIRED` by the expiry run, `DEAD` by shutdown. **A node that is not
//!   `QUEUED` is touched by nobody but its owner**: the run, hot-plug and
//!   shutdown reach it only through the heap, and the store that takes it
//!   out of `QUEUED` (Release) is their last access to it. So an owner that
//!   reads a state other than `QUEUED` (Acquire) may use, drop or free the
//!   node without a lock, and one that reads `QUEUED` takes the lock and
//!   reads again.
//! * `base` is the base's index ([`UNBOUND`] and the clock until the first
//!   start binds it to the starting thread's worker). The owner changes it
//!   while the node is not queued; hot-plug changes it while moving queued
//!   nodes, with [`MIGRATING_WORKER`] set from the old lock's release until the
//!   new one is held (`lock_base_word` waits it out), as for entries.
//!
//! # Lifetime
//!
//! The heap holds raw pointers to nodes. A node is pinned (it never moves
//! while it can be queued), and the owner's drop takes it out of the heap,
//! under the lock, before its memory goes (`Pin`'s drop guarantee: pinned
//! memory is not reused before `drop` runs). So every pointer in a heap
//! names a live node.
//!
//! # Waking
//!
//! The expiry run takes the waker out of the node under the lock, marks it
//! `FIRED` and wakes it after the lock is dropped: a waker's code never
//! runs under a base lock (it may drop a task, whose futures drop other
//! sleepers, which lock this base). For the same reason the owner drops a
//! waker it replaces only after the lock. The owner's drop never waits:
//! there is no callback of its own to wait for.
//!
//! `tests/loom_sleeper.rs` models the run against the owner's poll, reset
//! and drop; Miri runs the heap's and the sleeper's tests.

use super::base::{lock_base_word, wake_for, HrGuard, ONLINE};
use super::entry::MIGRATING_WORKER;
use super::HrTable;
use crate::sync::state as closed;
use crate::sync::{AtomicU32, AtomicU64, UnsafeCell};
use crate::time::ClockId;
use crate::TimerError;
use std::ptr::{self, NonNull};
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::task::{Poll, Waker};

mod pairing;
pub(crate) use pairing::Pairing;

/// `state`: never started, or cancelled.
pub(crate) const IDLE: u32 = 0;
/// `state`: in its base's heap.
pub(crate) const QUEUED: u32 = 1;
/// `state`: its expiry run took it out of the heap and woke its waker.
pub(crate) const FIRED: u32 = 2;
/// `state`: the system shut down while it was queued.
pub(crate) const DEAD: u32 = 3;

/// Flag of `base`: not bound to a worker yet; the low bits are the clock.
pub(crate) const UNBOUND: u32 = 1 << 30;

/// The heap's links of a node. Base lock.
pub(crate) struct Links {
    /// The parent if this is its first child, else the previous sibling;
    /// null for the root.
    pub(crate) prev: *mut SleeperNode,
    pub(crate) child: *mut SleeperNode,
    pub(crate) next: *mut SleeperNode,
}

/// A sleeper's timer. See the module docs for who may touch which field.
pub(crate) struct SleeperNode {
    pub(crate) links: UnsafeCell<Links>,
    waker: UnsafeCell<Option<Waker>>,
    pub(crate) expires: AtomicU64,
    state: AtomicU32,
    base: AtomicU32,
}

// SAFETY: the raw pointers in `links` and the waker are accessed only
// under the rules of the module docs (the base lock, or the owner alone
// while the node is not queued); everything else is atomic.
unsafe impl Send for SleeperNode {}
// SAFETY: as for `Send`; `&SleeperNode` gives access only to atomics.
unsafe impl Sync for SleeperNode {}

impl SleeperNode {
    /// A node for `clock`, not bound to a worker, not queued.
    pub(crate) fn new(clock: ClockId, expires: u64) -> SleeperNode {
        SleeperNode {
            links: UnsafeCell::new(Links {
                prev: ptr::null_mut(),
                child: ptr::null_mut(),
                next: ptr::null_mut(),
            }),
            waker: UnsafeCell::new(None),
            expires: AtomicU64::new(expires),
            state: AtomicU32::new(IDLE),
            base: AtomicU32::new(UNBOUND | clock as u32),
        }
    }

    /// The state word (Acquire: see the module docs).
    #[inline]
    pub(crate) fn state(&self) -> u32 {
        self.state.load(Acquire)
    }

    /// The clock the node counts in.
    pub(crate) fn clock(&self) -> ClockId {
        let b = self.base.load(Relaxed) & !(UNBOUND | MIGRATING_WORKER);
        ClockId::ALL[b as usize % super::CLOCKS]
    }

    /// The owner sets the expiry of a node that is not queued.
    #[inline]
    pub(crate) fn set_expires_idle(&self, expires: u64) {
        debug_assert_ne!(self.state.load(Relaxed), QUEUED);
        self.expires.store(expires, Relaxed);
    }

    /// Marks a node that is not queued as fired, without queuing it (a
    /// future that found its deadline passed completes at once). The
    /// owner alone touches a node that is not queued; a queued one is left
    /// alone.
    pub(crate) fn mark_fired_idle(&self) {
        if self.state.load(Acquire) != QUEUED {
            self.state.store(FIRED, Release);
        }
    }

    /// Takes the waker out. The caller holds the base lock of a queued
    /// node, or owns a node that is not queued.
    #[inline]
    unsafe fn take_waker(&self) -> Option<Waker> {
        // SAFETY: the caller has the access the module docs require.
        self.waker.with_mut(|w| unsafe { (*w).take() })
    }
}

impl Drop for SleeperNode {
    /// Drops the waker through the cell, so that loom sees the owner's
    /// last access (a run still touching the node would race with it).
    fn drop(&mut self) {
        debug_assert_ne!(self.state.load(Relaxed), QUEUED, "dropped while queued");
        // SAFETY: `&mut self`: not queued (the owner's drop cancelled it),
        // so nobody else can reach the node.
        drop(unsafe { self.take_waker() });
    }
}

/// Wakers the owner's start or poll took out of the node, to drop or wake
/// after the lock.
#[derive(Default)]
#[must_use]
pub(crate) struct Leftover {
    /// A waker replaced by another.
    pub(crate) replaced: Option<Waker>,
    /// The waker of a sleeper that a start found already due.
    pub(crate) to_wake: Option<Waker>,
}

/// The owner starts (or restarts) `node` at `expires`, on the base it is
/// bound to, binding it first to `worker()`'s base of its clock. `waker`
/// replaces the node's waker (`None` keeps it; after a fire it has none).
///
/// An expiry at or before the clock reading of the base's latest expiry
/// run is already due: the node is marked [`FIRED`] at once, not queued,
/// and its waker is handed back to be woken. A later one is queued; if it
/// has passed too, the worker, woken for it, fires it at its next run.
///
/// Returns the worker to wake and the wakers to drop or wake, all for
/// after the lock.
///
/// # Safety
/// The caller owns `node`, which is pinned and stays so until it is not
/// queued (its drop calls [`cancel`]).
pub(crate) unsafe fn start(
    table: &HrTable,
    node: &SleeperNode,
    worker: impl FnOnce() -> usize,
    expires: u64,
    waker: Option<&Waker>,
) -> Result<(Option<usize>, Leftover), TimerError> {
    let b = node.base.load(Relaxed);
    if b & UNBOUND != 0 {
        // Not queued, so nobody else reads `base`.
        let clock = node.clock();
        node.base
            .store(table.index(worker(), clock) as u32, Relaxed);
    }
    let (mut base, mut g) = lock_base_word(table, &node.base);
    loop {
        if g.closed & closed::DEAD != 0 {
            return Err(TimerError::Shutdown);
        }
        let to = base.route.load(Relaxed);
        if g.closed & closed::OFFLINE == 0 || to == ONLINE {
            break;
        }
        // Hot-plug moved every queued node off this base: this one is
        // not queued, and only its owner reads `base`.
        debug_assert_ne!(node.state.load(Relaxed), QUEUED);
        let target = table.index(to as usize, base.clock);
        node.base.store(target as u32, Release);
        drop(g);
        base = table.base_at(target);
        g = base.lock();
    }
    let p = NonNull::from(node);
    if node.state.load(Relaxed) == QUEUED {
        // SAFETY: queued on this base, whose lock is held.
        unsafe { g.sleepers.remove(p) };
    }
    node.expires.store(expires, Relaxed);
    let mut left = Leftover::default();
    if let Some(w) = waker {
        // SAFETY: the lock is held, and the node is in no heap right now.
        left.replaced = node
            .waker
            .with_mut(|slot| unsafe { replace_waker(&mut *slot, w) });
    }
    super::trace::hrtimer_start(
        p.as_ptr().addr(),
        base.worker(),
        base.clock,
        expires,
        expires,
    );
    if expires <= g.last_now {
        // SAFETY: as above.
        left.to_wake = unsafe { node.take_waker() };
        node.state.store(FIRED, Release);
        return Ok((None, left));
    }
    // SAFETY: pinned, in no heap, base lock held; it leaves the heap
    // before its memory goes (the caller's contract).
    unsafe { g.sleepers.insert(p) };
    node.state.store(QUEUED, Release);
    let wake = wake_for(base, expires);
    Ok((wake, left))
}

/// Installs `w` unless the slot's waker wakes the same task; returns the
/// one replaced.
fn replace_waker(slot: &mut Option<Waker>, w: &Waker) -> Option<Waker> {
    match slot {
        Some(old) if old.will_wake(w) => None,
        _ => slot.replace(w.clone()),
    }
}

/// The owner polls `node`: ready once fired (`Err` if the system shut down
/// while it was queued); while queued, `waker` is the one its fire wakes.
/// A node never started stays pending. The replaced waker is for after
/// the lock.
pub(crate) fn poll(
    table: &HrTable,
    node: &SleeperNode,
    waker: &Waker,
) -> (Poll<Result<(), TimerError>>, Option<Waker>) {
    let state = match node.state() {
        QUEUED => {
            let (_, g) = lock_base_word(table, &node.base);
            let state = node.state.load(Relaxed);
            if state == QUEUED {
                // SAFETY: queued, base lock held.
                let old = node
                    .waker
                    .with_mut(|slot| unsafe { replace_waker(&mut *slot, waker) });
                drop(g);
                return (Poll::Pending, old);
            }
            state
        }
        s => s,
    };
    let r = match state {
        FIRED => Poll::Ready(Ok(())),
        DEAD => Poll::Ready(Err(TimerError::Shutdown)),
        _ => Poll::Pending,
    };
    (r, None)
}

/// The owner takes `node` out of its heap if it is queued: the kernel's
/// `hrtimer_try_to_cancel()`, which for a sleeper never has a callback to
/// wait for. Returns whether it was queued; a fired node stays fired.
pub(crate) fn cancel(table: &HrTable, node: &SleeperNode) -> bool {
    if node.state() != QUEUED {
        return false;
    }
    let (_, mut g) = lock_base_word(table, &node.base);
    if node.state.load(Relaxed) != QUEUED {
        return false; // fired (or shut down) while we took the lock
    }
    // SAFETY: queued on this base, whose lock is held.
    unsafe { g.sleepers.remove(NonNull::from(node)) };
    node.state.store(IDLE, Release);
    super::trace::hrtimer_cancel((node as *const SleeperNode).addr());
    true
}

/// The expiry run: takes up to `out.len()` nodes due at `now` out of the
/// heap, each marked `FIRED` with its waker moved to `out`. Returns how
/// many. Wake them after the lock.
pub(crate) fn take_due(
    g: &mut HrGuard<'_>,
    worker: usize,
    now: u64,
    out: &mut [Option<Waker>],
) -> usize {
    let mut n = 0;
    while n < out.len() {
        // SAFETY: base lock held (`g`).
        let Some(p) = (unsafe { g.sleepers.pop_due(now) }) else {
            break;
        };
        // SAFETY: a node in the heap is live (module docs); it was queued
        // and the lock is held. The state store is our last access.
        let node = unsafe { p.as_ref() };
        super::trace::hrtimer_expire_entry(p.as_ptr().addr(), worker, now);
        // SAFETY: the node is still queued (FIRED is stored below) and the
        // base lock is held: take_waker's contract.
        out[n] = unsafe { node.take_waker() };
        node.state.store(FIRED, Release);
        super::trace::hrtimer_expire_exit(p.as_ptr().addr(), worker);
        n += 1;
    }
    n
}

/// Shutdown or hot-plug: every node of `g`'s heap, taken out and marked
/// with `mark` ([`DEAD`]: their wakers go to `wakers`; `None`: they stay
/// `QUEUED` and their `base` is set to `migrate_to | MIGRATING_WORKER`).
pub(crate) fn drain(
    g: &mut HrGuard<'_>,
    mark: Option<u32>,
    wakers: &mut Vec<Waker>,
) -> Vec<NonNull<SleeperNode>> {
    let mut out = Vec::new();
    // SAFETY: base lock held.
    while let Some(p) = unsafe { g.sleepers.pop_due(u64::MAX) } {
        // SAFETY: live (module docs), lock held.
        let node = unsafe { p.as_ref() };
        match mark {
            Some(target) => {
                node.base.store(target | MIGRATING_WORKER, Release);
                out.push(p);
            }
            None => {
                // SAFETY: as above; the state store is our last access.
                wakers.extend(unsafe { node.take_waker() });
                node.state.store(DEAD, Release);
            }
        }
    }
    out
}

/// Hot-plug: queues the nodes [`drain`] moved off an offline base on
/// `target` (index `index`), whose lock `g` is; marks them [`DEAD`] if it
/// shut down meanwhile. Returns whether the target's worker must wake.
///
/// # Safety
/// `nodes` came from [`drain`] with `Some(index)` and are queued nowhere.
pub(crate) unsafe fn requeue(
    g: &mut HrGuard<'_>,
    target: &super::base::HrBase,
    index: u32,
    nodes: Vec<NonNull<SleeperNode>>,
    wakers: &mut Vec<Waker>,
) -> Option<usize> {
    let mut wake = None;
    for p in nodes {
        // SAFETY: live: its owner's drop waits in `lock_base_word` while
        // `base` carries MIGRATING_WORKER.
        let node = unsafe { p.as_ref() };
        node.base.store(index, Release);
        if g.closed & closed::DEAD != 0 {
            // SAFETY: in transit, owned by us; the state store is our last
            // access.
            wakers.extend(unsafe { node.take_waker() });
            node.state.store(DEAD, Release);
        } else {
            // SAFETY: not in any heap; this base's lock is held.
            unsafe { g.sleepers.insert(p) };
            let e = node.expires.load(Relaxed);
            wake = wake.or(wake_for(target, e));
        }
    }
    wake
}
