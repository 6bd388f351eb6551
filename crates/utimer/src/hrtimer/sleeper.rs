//! Sleepers: hrtimers embedded in the memory of whoever waits on them, the
//! kernel's `struct hrtimer_sleeper` (an `hrtimer` and the task that its
//! callback, `hrtimer_wakeup()`, wakes).
//!
//! An [`HrTimer`](crate::HrTimer) is an `Arc`'d entry with a callback: one
//! allocation per timer and a slot in its base's heap. A future that
//! sleeps needs neither: all its "callback" does is wake a task. A
//! sleeper is a [`SleeperNode`] inside the pinned future itself (64 bytes:
//! three links, the key and the deadline, the waker, a state word and the
//! base's index), queued in its base's [`Pairing`] heap, so arming, firing
//! and dropping allocate nothing and a pending sleep costs its own size
//! and nothing else, as the kernel's on-stack `hrtimer_sleeper` in
//! `nanosleep` does.
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
//! * `expires` is the heap's key: written by the owner's start (under the
//!   lock while queued) and by the expiry run when it moves the node
//!   (below); the heap reads it under the lock.
//! * `deadline` is the expiry the owner wants, never earlier than
//!   `expires` while the node is queued. The owner writes it: with
//!   `expires` in a start, or alone, without the lock, to move a queued
//!   node later ([`try_extend`]). The expiry run reads it.
//! * `state` ([`IDLE`], [`QUEUED`], [`FIRED`], [`DEAD`], and the flag
//!   [`MOVED`] on `QUEUED`) is written under the lock: `QUEUED` and `IDLE`
//!   by the owner's start and cancel, `MOVED`, `FIRED` by the expiry run,
//!   `DEAD` by shutdown. **A node that is not queued is touched by nobody
//!   but its owner**: the run, hot-plug and shutdown reach it only through
//!   the heap, and the store that takes it out of `QUEUED` (Release) is
//!   their last access to it. So an owner that reads a state that is not
//!   queued (Acquire) may use, drop or free the node without a lock, and
//!   one that reads a queued state takes the lock and reads again (but for
//!   the two lock-free paths below).
//! * The waker is kept as its two raw parts, each an atomic (`waker_data`,
//!   `waker_vtable`; a null vtable for none), so that its owner can compare
//!   it with a new one without the lock (below). Both are written under
//!   the lock while the node is queued (the owner installs a waker, the
//!   run or shutdown takes it: vtable first, then data with Release), or
//!   by the owner alone otherwise. The parts are those of a `Waker` the
//!   node owns: installing one forgets it, taking one rebuilds it.
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
//! # Two paths without the lock
//!
//! Most sleeps and timeouts are polled again while pending (their task
//! woke for something else) or moved later (an idle timeout pushed back by
//! each request) long before they fire: tokio serves both without its
//! driver lock, and so do these.
//!
//! * **A poll with the same waker** ([`poll`]): a queued node whose waker
//!   has the new waker's parts (what `Waker::will_wake` compares) needs no
//!   change; the poll answers pending without the lock. The owner reads
//!   the data part (Acquire), then the vtable: a take racing it shows
//!   both parts, or a null vtable (no match, so the poll takes the lock),
//!   never the new data with the old vtable. If the take is under way, the
//!   run wakes a waker that wakes the same task.
//! * **A move to a later expiry** ([`try_extend`]): the owner writes only
//!   `deadline`, and the node stays where it is in the heap. When its key
//!   comes due, the run reads `deadline`: passed, it fires; not yet, it
//!   re-keys the node to it and queues it again (tokio's
//!   `extend_expiration`, the kernel's `hrtimer_forward()` done by the
//!   run). The race is a Dekker pair, with a `SeqCst` fence on each side:
//!
//! ```text
//!   owner (try_extend)                 expiry run (take_due), lock held
//!   ------------------                 --------------------------------
//!   deadline = D          (relaxed)    pop the node (key <= now)
//!   fence(SeqCst)                      state = QUEUED|MOVED  (relaxed)
//!   s = state             (relaxed)    fence(SeqCst)
//!   s == QUEUED: done                  d = deadline          (relaxed)
//!   else: start() under the lock       d <= now: fire; else key = d, requeue
//! ```
//!
//! Either the owner reads `MOVED` (or `FIRED`), and takes the lock, which
//! waits for the run and then starts the node afresh; or the run reads
//! `D`. Never both miss. `MOVED` stays until the owner's next start: a
//! node the run re-keyed has a key the owner did not write, so its later
//! moves take the lock. The run pays one fence per batch of nodes.
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
use crate::sync::{fence, AtomicPtr, AtomicU32, AtomicU64, UnsafeCell};
use crate::time::ClockId;
use crate::TimerError;
use std::ptr::{self, NonNull};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::task::{Poll, RawWakerVTable, Waker};

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
/// `state` flag, only with [`QUEUED`]: the expiry run has read (or is
/// reading) the node's `deadline` and may have re-keyed it.
pub(crate) const MOVED: u32 = 4;

/// Whether `state` is [`QUEUED`], with or without [`MOVED`].
#[inline(always)]
pub(crate) fn is_queued(state: u32) -> bool {
    state & !MOVED == QUEUED
}

/// A waker's raw parts, what `Waker::will_wake` compares.
#[inline(always)]
fn parts(w: &Waker) -> (*mut (), *mut RawWakerVTable) {
    (
        w.data().cast_mut(),
        (w.vtable() as *const RawWakerVTable).cast_mut(),
    )
}

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
    /// The waker's data pointer (module docs).
    waker_data: AtomicPtr<()>,
    /// The waker's vtable; null: no waker.
    waker_vtable: AtomicPtr<RawWakerVTable>,
    /// The heap's key.
    pub(crate) expires: AtomicU64,
    /// The expiry the owner wants, `>= expires` while queued.
    deadline: AtomicU64,
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
            waker_data: AtomicPtr::new(ptr::null_mut()),
            waker_vtable: AtomicPtr::new(ptr::null_mut()),
            expires: AtomicU64::new(expires),
            deadline: AtomicU64::new(expires),
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

    /// The expiry the owner set: what the node fires for (its heap key
    /// may be earlier, until the run re-keys it).
    #[inline]
    pub(crate) fn deadline(&self) -> u64 {
        self.deadline.load(Relaxed)
    }

    /// The owner sets the expiry of a node that is not queued.
    #[inline]
    pub(crate) fn set_expires_idle(&self, expires: u64) {
        debug_assert!(!is_queued(self.state.load(Relaxed)));
        self.expires.store(expires, Relaxed);
        self.deadline.store(expires, Relaxed);
    }

    /// Marks a node that is not queued as fired, without queuing it (a
    /// future that found its deadline passed completes at once). The
    /// owner alone touches a node that is not queued; a queued one is left
    /// alone.
    pub(crate) fn mark_fired_idle(&self) {
        if !is_queued(self.state.load(Acquire)) {
            self.state.store(FIRED, Release);
        }
    }

    /// Whether the node's waker wakes what `w` wakes (`will_wake`),
    /// without the lock: the owner's check (module docs).
    #[inline]
    fn holds(&self, w: &Waker) -> bool {
        let (d, v) = parts(w);
        self.waker_data.load(Acquire) == d && self.waker_vtable.load(Relaxed) == v
    }

    /// Installs a clone of `w` unless the node's waker wakes the same
    /// task; returns the one replaced.
    ///
    /// # Safety
    /// The caller holds the base lock of a queued node, or owns a node
    /// that is not queued.
    #[inline]
    unsafe fn install_waker(&self, w: &Waker) -> Option<Waker> {
        if self.holds(w) {
            return None;
        }
        // SAFETY: the caller's contract.
        let old = unsafe { self.take_waker() };
        let (d, v) = parts(&std::mem::ManuallyDrop::new(w.clone()));
        self.waker_data.store(d, Relaxed);
        self.waker_vtable.store(v, Relaxed);
        old
    }

    /// Takes the waker out.
    ///
    /// # Safety
    /// The caller holds the base lock of a queued node, or owns a node
    /// that is not queued.
    #[inline]
    unsafe fn take_waker(&self) -> Option<Waker> {
        let v = self.waker_vtable.load(Relaxed);
        if v.is_null() {
            return None;
        }
        let d = self.waker_data.load(Relaxed);
        self.waker_vtable.store(ptr::null_mut(), Relaxed);
        self.waker_data.store(ptr::null_mut(), Release);
        // SAFETY: the parts are those of a waker the node owns (forgotten
        // by `install_waker`), taken once: the vtable is cleared above,
        // and the caller's contract excludes a concurrent take.
        Some(unsafe { Waker::new(d, &*v) })
    }
}

impl Drop for SleeperNode {
    /// Drops the waker, and touches the links' cell, so that loom sees
    /// the owner's last access (a run still touching the node would race
    /// with it).
    fn drop(&mut self) {
        debug_assert!(!is_queued(self.state.load(Relaxed)), "dropped while queued");
        self.links.with_mut(|_| ());
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
        debug_assert!(!is_queued(node.state.load(Relaxed)));
        let target = table.index(to as usize, base.clock);
        node.base.store(target as u32, Release);
        drop(g);
        base = table.base_at(target);
        g = base.lock();
    }
    let p = NonNull::from(node);
    if is_queued(node.state.load(Relaxed)) {
        // SAFETY: queued on this base, whose lock is held.
        unsafe { g.sleepers.remove(p) };
    }
    node.expires.store(expires, Relaxed);
    node.deadline.store(expires, Relaxed);
    let mut left = Leftover::default();
    if let Some(w) = waker {
        // SAFETY: the lock is held, and the node is in no heap right now.
        left.replaced = unsafe { node.install_waker(w) };
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

/// The owner moves a queued `node` to a later `expires` without the lock,
/// if it can: the node must be queued by the owner's own start (not
/// re-keyed by a run since), `expires` no earlier than its key, and
/// `waker`, if given, the waker already installed. Returns whether it
/// did; if not, the caller starts the node under the lock (which also
/// sets `deadline` again). The module docs walk through the race with the
/// expiry run.
#[inline]
pub(crate) fn try_extend(node: &SleeperNode, expires: u64, waker: Option<&Waker>) -> bool {
    if node.state.load(Relaxed) != QUEUED
        || waker.is_some_and(|w| !node.holds(w))
        || expires < node.expires.load(Relaxed)
    {
        return false;
    }
    node.deadline.store(expires, Relaxed);
    fence(SeqCst);
    node.state.load(Relaxed) == QUEUED
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
        // The waker in the node wakes the same task: nothing to change
        // (module docs, "Two paths without the lock").
        s if is_queued(s) && node.holds(waker) => return (Poll::Pending, None),
        s if is_queued(s) => {
            let (_, g) = lock_base_word(table, &node.base);
            let state = node.state.load(Relaxed);
            if is_queued(state) {
                // SAFETY: queued, base lock held.
                let old = unsafe { node.install_waker(waker) };
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
    if !is_queued(node.state()) {
        return false;
    }
    let (_, mut g) = lock_base_word(table, &node.base);
    if !is_queued(node.state.load(Relaxed)) {
        return false; // fired (or shut down) while we took the lock
    }
    // SAFETY: queued on this base, whose lock is held.
    unsafe { g.sleepers.remove(NonNull::from(node)) };
    node.state.store(IDLE, Release);
    super::trace::hrtimer_cancel((node as *const SleeperNode).addr());
    true
}

/// The expiry run: takes up to `out.len()` nodes due at `now` out of the
/// heap, each marked `FIRED` with its waker moved to `out`. A node whose
/// owner moved its deadline past `now` goes back into the heap, keyed by
/// that deadline (module docs). Returns how many fired, and whether it
/// stopped with due nodes left: it re-keys at most [`REKEY_BUDGET`] nodes
/// per call, so that the lock is held for a bounded time. Wake them
/// after the lock.
pub(crate) fn take_due(
    g: &mut HrGuard<'_>,
    worker: usize,
    now: u64,
    out: &mut [Option<Waker>],
) -> (usize, bool) {
    /// Nodes whose deadline one fence decides.
    const CHUNK: usize = 32;
    let mut n = 0;
    let mut rekeyed = 0;
    while n < out.len() {
        if rekeyed >= REKEY_BUDGET {
            return (n, true);
        }
        let want = (out.len() - n).min(CHUNK);
        let mut due = [ptr::null_mut::<SleeperNode>(); CHUNK];
        let mut k = 0;
        while k < want {
            // SAFETY: base lock held (`g`).
            let Some(p) = (unsafe { g.sleepers.pop_due(now) }) else {
                break;
            };
            // SAFETY: a node in the heap is live (module docs), and still
            // queued: the owner's drop waits for the lock.
            unsafe { p.as_ref() }.state.store(QUEUED | MOVED, Relaxed);
            due[k] = p.as_ptr();
            k += 1;
        }
        if k == 0 {
            break;
        }
        // The run's half of the Dekker pair with `try_extend`.
        fence(SeqCst);
        for &p in &due[..k] {
            // SAFETY: popped above, still queued (the lock is held).
            let node = unsafe { &*p };
            let d = node.deadline.load(Relaxed);
            if d > now {
                node.expires.store(d, Relaxed);
                // SAFETY: live, pinned, in no heap; the lock is held.
                unsafe { g.sleepers.insert(NonNull::from(node)) };
                rekeyed += 1;
                continue;
            }
            super::trace::hrtimer_expire_entry(p.addr(), worker, now);
            // SAFETY: the node is still queued (FIRED is stored below) and
            // the base lock is held: take_waker's contract.
            out[n] = unsafe { node.take_waker() };
            // Our last access to the node.
            node.state.store(FIRED, Release);
            super::trace::hrtimer_expire_exit(p.addr(), worker);
            n += 1;
        }
        if k < want {
            break;
        }
    }
    (n, false)
}

/// The most nodes one [`take_due`] re-keys before it lets the lock go.
const REKEY_BUDGET: usize = 128;

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
