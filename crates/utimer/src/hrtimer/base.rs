//! hrtimer bases: one ordered queue per worker and clock, one lock each
//! (the kernel's `struct hrtimer_clock_base` inside its per-CPU
//! `hrtimer_cpu_base`).
//!
//! # Ground rules: who may touch what
//!
//! * The queue, `expiring`, `waiters`, `closed` and the counters live in
//!   [`HrInner`], behind the base's lock: a [`SpinLock`] (an exchange to
//!   take, a plain store to release), as the kernel's `raw_spinlock_t` in
//!   `hrtimer_cpu_base`. Nothing under it sleeps, runs a callback or wakes
//!   a thread: callbacks run with the lock dropped, wakers are woken and
//!   replaced ones dropped after it, the worker is woken after it.
//! * `running` names the entry whose callback the base's expiry run is
//!   running, outside the lock; it is written under the lock.
//!   `callback_seq` is the futex word that `cancel` sleeps on until that
//!   callback returns.
//! * `idle_until` is 0 while the worker is awake; while it sleeps, the hard
//!   expiry (ns of this clock) below which a start must wake it. Written
//!   under the lock by the worker going idle and by the start that wakes
//!   it; cleared freely by the worker when it wakes.
//! * `first_soft` and `first_hard` mirror the queue's first entry (its
//!   soft and hard expiry, `u64::MAX` when empty). Written only by the
//!   guard's drop, under the lock, so they are exact whenever the lock is
//!   free; read without the lock by the tick's expiry run (skip a base with
//!   nothing due without locking it or reading its clock) and by
//!   `next_expiry`. A reader that races a start sees the queue as it was
//!   just before, which a lock could not rule out either: the start wakes
//!   the worker if it must (`idle_until`). A change of `first_hard` also
//!   invalidates the worker's next-event summary, under the same lock
//!   (`sync/summary.rs`).
//! * `route` is written by hot-plug only (serialized by the system's
//!   hot-plug mutex), read by starts that find the base offline.
//!
//! # Lock order
//!
//! A thread holds at most one hrtimer base lock, never together with a
//! wheel base lock or a hierarchy lock: moving a timer to another base
//! drops the old lock before it takes the new one (`MIGRATING_WORKER` in between),
//! as the wheel's `lock_timer_base()` protocol does.

use super::entry::{HrEntry, MIGRATING_WORKER, NOT_QUEUED};
use super::queue::{Handle, Queue};
use super::sleeper::Pairing;
use super::HrTable;
use crate::sync::state::{DEAD, OFFLINE, SHUTDOWN};
use crate::sync::summary::NextSummary;
use crate::sync::{AtomicPtr, AtomicU32, AtomicU64, Backoff, SpinLock, UnsafeCell};
use crate::time::ClockId;
use crate::TimerError;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::Arc;

/// `HrBase::route` of an online worker.
pub(crate) const ONLINE: u32 = u32::MAX;

/// The lock-protected part of a base.
pub(crate) struct HrInner {
    pub(crate) queue: Queue<Arc<HrEntry>>,
    /// The sleepers queued here (`sleeper.rs`): intrusive, ordered by
    /// expiry, no slack.
    pub(crate) sleepers: Pairing,
    /// An expiry run is under way: no second one starts.
    pub(crate) expiring: bool,
    /// Threads waiting in `cancel` for the running callback.
    pub(crate) waiters: u32,
    /// [`DEAD`], [`OFFLINE`].
    pub(crate) closed: u8,
    /// Callbacks run.
    pub(crate) fired: u64,
    /// The latest clock reading an expiry run of this base used: the
    /// clock has read it, so an expiry at or before it is already due.
    pub(crate) last_now: u64,
    /// Callbacks that panicked (caught).
    pub(crate) panicked: u64,
}

impl HrInner {
    /// The first soft and hard expiry over the queue and the sleepers
    /// (`u64::MAX` when both are empty): nothing is due before the soft
    /// one, the worker must wake at the hard one.
    #[inline]
    pub(crate) fn first(&self) -> (u64, u64) {
        let (soft, hard) = self.queue.first().unwrap_or((u64::MAX, u64::MAX));
        let s = self.sleepers.first().unwrap_or(u64::MAX);
        (soft.min(s), hard.min(s))
    }

    /// The first hard expiry, if anything is queued.
    #[inline]
    pub(crate) fn first_hard(&self) -> Option<u64> {
        let hard = self.first().1;
        (hard != u64::MAX || self.pending() != 0).then_some(hard)
    }

    /// Timers and sleepers queued.
    #[inline]
    pub(crate) fn pending(&self) -> usize {
        self.queue.len() + self.sleepers.len()
    }
}

/// One worker's queue for one clock. Aligned so that workers never share
/// a cache line.
#[repr(align(128))]
pub(crate) struct HrBase {
    /// `worker * CLOCKS + clock`.
    pub(crate) index: u32,
    pub(crate) clock: ClockId,
    /// Protects `inner`.
    lock: SpinLock,
    inner: UnsafeCell<HrInner>,
    /// The entry whose callback runs now, or null.
    pub(crate) running: AtomicPtr<()>,
    /// Bumped when a callback returns while someone waits for it.
    pub(crate) callback_seq: AtomicU32,
    /// See the module docs.
    pub(crate) idle_until: AtomicU64,
    /// The queue's first soft expiry, `u64::MAX` if empty (module docs).
    first_soft: AtomicU64,
    /// The queue's first hard expiry, `u64::MAX` if empty (module docs).
    first_hard: AtomicU64,
    /// [`ONLINE`], or the worker whose base of this clock takes this
    /// offline worker's timers.
    pub(crate) route: AtomicU32,
    /// The worker's next-event summary, invalidated when `first_hard`
    /// changes.
    summary: *const NextSummary,
}

// SAFETY: `summary` points to an atomic that the table holding this base
// keeps alive (`HrTable::summaries`); `inner` is only reached through an
// `HrGuard`, which holds `lock`; everything else is Sync.
unsafe impl Sync for HrBase {}
// SAFETY: as above.
unsafe impl Send for HrBase {}

/// The base lock held: [`HrInner`] through `Deref`; publishes the first
/// expiry mirrors when dropped.
pub(crate) struct HrGuard<'a> {
    base: &'a HrBase,
}

impl std::ops::Deref for HrGuard<'_> {
    type Target = HrInner;
    #[inline(always)]
    fn deref(&self) -> &HrInner {
        // SAFETY: the guard exists only while `lock` is held.
        self.base.inner.with(|p| unsafe { &*p })
    }
}

impl std::ops::DerefMut for HrGuard<'_> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut HrInner {
        // SAFETY: the guard exists only while `lock` is held, and `&mut
        // self` makes this the only reference derived from it.
        self.base.inner.with_mut(|p| unsafe { &mut *p })
    }
}

impl Drop for HrGuard<'_> {
    /// Publishes the queue's first entry, then releases the lock.
    #[inline]
    fn drop(&mut self) {
        let (soft, hard) = (**self).first();
        let b = self.base;
        if b.first_soft.load(Relaxed) != soft {
            b.first_soft.store(soft, Release);
        }
        if b.first_hard.load(Relaxed) != hard {
            b.first_hard.store(hard, Release);
            // SAFETY: see `HrBase::summary`.
            unsafe { &*b.summary }.invalidate();
        }
        b.lock.unlock();
    }
}

impl HrBase {
    /// `summary`: the worker's, in a `Summaries` that outlives the base.
    pub(crate) fn new(index: u32, clock: ClockId, summary: *const NextSummary) -> HrBase {
        HrBase {
            index,
            clock,
            lock: SpinLock::new(),
            inner: UnsafeCell::new(HrInner {
                queue: Queue::new(),
                sleepers: Pairing::new(),
                expiring: false,
                waiters: 0,
                closed: 0,
                fired: 0,
                last_now: 0,
                panicked: 0,
            }),
            running: AtomicPtr::new(std::ptr::null_mut()),
            callback_seq: AtomicU32::new(0),
            idle_until: AtomicU64::new(0),
            first_soft: AtomicU64::new(u64::MAX),
            first_hard: AtomicU64::new(u64::MAX),
            route: AtomicU32::new(ONLINE),
            summary,
        }
    }

    /// Takes the base lock (`raw_spin_lock_irqsave(&cpu_base->lock)`).
    /// Not reentrant: a thread holds at most one hrtimer base lock.
    #[inline]
    pub(crate) fn lock(&self) -> HrGuard<'_> {
        self.lock.lock();
        HrGuard { base: self }
    }

    /// The worker the base belongs to.
    #[inline]
    pub(crate) fn worker(&self) -> usize {
        self.index as usize / super::CLOCKS
    }

    /// Whether `e`'s callback runs on this base now.
    #[inline]
    pub(crate) fn is_running(&self, e: &HrEntry) -> bool {
        self.running.load(Acquire) == e.addr()
    }

    /// The first hard expiry, without the lock (module docs).
    #[inline]
    pub(crate) fn next_expiry(&self) -> Option<u64> {
        let hard = self.first_hard.load(Acquire);
        (hard != u64::MAX).then_some(hard)
    }

    /// The first hard expiry, read under the lock (what the worker's
    /// summary is computed from, `sync/summary.rs`).
    pub(crate) fn next_expiry_locked(&self) -> Option<u64> {
        let hard = self.lock().first().1;
        (hard != u64::MAX).then_some(hard)
    }

    /// The first soft expiry, without the lock (module docs): nothing is
    /// due before it.
    #[inline]
    pub(crate) fn first_soft(&self) -> u64 {
        self.first_soft.load(Acquire)
    }

    /// The worker goes idle: publish the first hard expiry (or "none") so
    /// that an earlier start wakes it, and return it, under one lock.
    pub(crate) fn idle_enter(&self) -> Option<u64> {
        // An empty base that already published "none" has nothing to
        // publish: no lock (a thread that serves looks at every base before
        // each sleep, and most are empty). A start racing this look finds
        // "none" published and wakes the worker (`wake_for`), as it would
        // after a look under the lock.
        if self.first_soft.load(Acquire) == u64::MAX
            && self.first_hard.load(Acquire) == u64::MAX
            && self.idle_until.load(Relaxed) == u64::MAX
        {
            return None;
        }
        let g = self.lock();
        let next = g.first_hard();
        self.idle_until
            .store(next.unwrap_or(u64::MAX).max(1), Relaxed);
        drop(g);
        next
    }
}

/// Locks the base `e` is on: the kernel's `lock_hrtimer_base()`. Waits
/// while it moves between bases.
pub(crate) fn lock_base<'t>(table: &'t HrTable, e: &HrEntry) -> (&'t HrBase, HrGuard<'t>) {
    lock_base_word(table, &e.base)
}

/// [`lock_base`] for whatever names its base in `word` (an entry's or a
/// sleeper's `base`).
pub(crate) fn lock_base_word<'t>(
    table: &'t HrTable,
    word: &AtomicU32,
) -> (&'t HrBase, HrGuard<'t>) {
    let mut backoff = Backoff::new();
    loop {
        let b = word.load(Acquire);
        if b & MIGRATING_WORKER != 0 {
            backoff.snooze();
            continue;
        }
        let base = table.base_at(b as usize);
        let guard = base.lock();
        if word.load(Relaxed) == b {
            return (base, guard);
        }
    }
}

/// Takes `e` out of its base's queue, if queued; returns the queue's
/// reference (to drop after the lock).
pub(crate) fn dequeue(g: &mut HrGuard<'_>, e: &HrEntry) -> Option<Arc<HrEntry>> {
    let h = e.handle.load(Relaxed);
    if h == NOT_QUEUED {
        return None;
    }
    e.handle.store(NOT_QUEUED, Relaxed);
    super::trace::hrtimer_cancel(e.addr().addr());
    g.queue.remove(Handle::from_index(h))
}

/// Queues `e` at `soft..=hard` with the reference `own` (or a new one),
/// or moves it there if already queued. Returns the worker to wake, if the
/// base's worker sleeps past `hard`.
pub(crate) fn enqueue(
    base: &HrBase,
    g: &mut HrGuard<'_>,
    e: &Arc<HrEntry>,
    own: Option<Arc<HrEntry>>,
    soft: u64,
    hard: u64,
) -> Option<usize> {
    let h = e.handle.load(Relaxed);
    if h != NOT_QUEUED {
        e.soft.store(soft, Relaxed);
        e.hard.store(hard, Relaxed);
        g.queue.update(Handle::from_index(h), soft, hard);
        super::trace::hrtimer_start(e.addr().addr(), base.worker(), base.clock, soft, hard);
    } else {
        place(g, own.unwrap_or_else(|| e.clone()), soft, hard);
    }
    wake_for(base, hard)
}

/// Queues `e`, which is not queued, at `soft..=hard`.
pub(crate) fn place(g: &mut HrGuard<'_>, e: Arc<HrEntry>, soft: u64, hard: u64) {
    e.soft.store(soft, Relaxed);
    e.hard.store(hard, Relaxed);
    let h = g.queue.insert(soft, hard, e);
    if let Some(e) = g.queue.get(h) {
        e.handle.store(h.index(), Relaxed);
        let b = g.base;
        super::trace::hrtimer_start(e.addr().addr(), b.worker(), b.clock, soft, hard);
    }
}

/// The base's worker sleeps past `hard`: lower its wake-up and name it.
pub(crate) fn wake_for(base: &HrBase, hard: u64) -> Option<usize> {
    let idle = base.idle_until.load(Relaxed);
    (idle != 0 && hard < idle).then(|| {
        base.idle_until.store(hard.max(1), Relaxed);
        base.worker()
    })
}

/// Starts `e` at `soft..=hard` on its base, moving it first if its worker
/// is offline: the kernel's `hrtimer_start_range_ns()`. Returns the worker
/// to wake, if any (the caller wakes it after every lock is dropped).
pub(crate) fn start(
    table: &HrTable,
    e: &Arc<HrEntry>,
    soft: u64,
    hard: u64,
) -> Result<Option<usize>, TimerError> {
    start_checked(table, e, soft, hard, false)
}

/// [`start`], refused with [`TimerError::Running`] (nothing changed) while
/// `e`'s callback runs on another thread: a re-arm that must not overlap
/// the old setting's callback, with one lock instead of `try_cancel`'s
/// and `start`'s two. The queued entry is moved in place.
pub(crate) fn start_unless_running(
    table: &HrTable,
    e: &Arc<HrEntry>,
    soft: u64,
    hard: u64,
) -> Result<Option<usize>, TimerError> {
    start_checked(table, e, soft, hard, true)
}

fn start_checked(
    table: &HrTable,
    e: &Arc<HrEntry>,
    soft: u64,
    hard: u64,
    unless_running: bool,
) -> Result<Option<usize>, TimerError> {
    let (mut base, mut g) = lock_base(table, e);
    if unless_running && base.is_running(e) && !super::expire::running_here(e) {
        return Err(TimerError::Running);
    }
    let mut carried = None;
    loop {
        if g.closed & DEAD != 0 || e.flags.load(Relaxed) & SHUTDOWN != 0 {
            // (A carried entry is dropped after the lock.)
            drop(g);
            drop(carried);
            return Err(TimerError::Shutdown);
        }
        // A callback never leaves its base: a timer restarted while its
        // callback runs there stays, and hot-plug moves it after the run.
        if g.closed & OFFLINE == 0 || base.is_running(e) {
            break;
        }
        let to = base.route.load(Relaxed);
        if to == ONLINE {
            break;
        }
        carried = dequeue(&mut g, e).or(carried);
        let target = table.index(to as usize, base.clock);
        e.base.store(target as u32 | MIGRATING_WORKER, Release);
        drop(g);
        base = table.base_at(target);
        g = base.lock();
        e.base.store(target as u32, Release);
    }
    let wake = enqueue(base, &mut g, e, carried, soft, hard);
    Ok(wake)
}

/// Removes `e` from its queue unless its callback is running: the
/// kernel's `hrtimer_try_to_cancel()`. `Ok(true)`: it was queued.
pub(crate) fn try_cancel(table: &HrTable, e: &HrEntry) -> Result<bool, TimerError> {
    let (base, mut g) = lock_base(table, e);
    if base.is_running(e) {
        return Err(TimerError::Running);
    }
    let taken = dequeue(&mut g, e);
    drop(g);
    Ok(taken.is_some())
}

/// Sets [`SHUTDOWN`] and removes `e` from its queue, without waiting for
/// a running callback (which then cannot restart it). For the handle's
/// drop.
pub(crate) fn shutdown(table: &HrTable, e: &HrEntry) -> bool {
    let (_, mut g) = lock_base(table, e);
    e.flags.fetch_or(SHUTDOWN, Relaxed);
    g.queue.unpromise();
    let taken = dequeue(&mut g, e);
    drop(g);
    taken.is_some()
}

/// Moves an idle `e` (neither queued nor running) to its worker's base of
/// `clock`. `Err(Running)` / `Err(AlreadyPending)` otherwise.
pub(crate) fn set_clock(table: &HrTable, e: &HrEntry, clock: ClockId) -> Result<(), TimerError> {
    // Already on that clock: nothing to lock. Only this function moves an
    // entry to a base of another clock (a migration keeps the clock), so
    // the link read here names the clock the entry is on at this instant.
    let b = e.base.load(Acquire);
    if b & MIGRATING_WORKER == 0 && table.base_at(b as usize).clock == clock {
        return Ok(());
    }
    let (base, mut g) = lock_base(table, e);
    if base.clock == clock {
        return Ok(());
    }
    if base.is_running(e) {
        return Err(TimerError::Running);
    }
    if e.is_queued() {
        return Err(TimerError::AlreadyPending);
    }
    // Nobody else can queue it meanwhile: they lock this base first and
    // re-read the link, which already names the new one.
    let to = table.index(base.worker(), clock);
    e.base.store(to as u32, Release);
    g.queue.unpromise();
    drop(g);
    // Its room moves with it (`Queue::promise`).
    table.base_at(to).lock().queue.promise();
    Ok(())
}
