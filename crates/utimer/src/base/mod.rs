//! Timer bases: one wheel per base, one lock per base, three bases per worker.
//!
//! A base is the kernel's `struct timer_base`: a wheel, the lock that
//! protects it, its clock and the timer whose callback is running. Each
//! worker owns three, as each kernel CPU does since the pull model (seed
//! 004):
//!
//! | kind | holds | kernel |
//! |------|-------|--------|
//! | [`BaseKind::Local`] | pinned timers: always expired by their worker | `BASE_LOCAL` |
//! | [`BaseKind::Global`] | movable timers: may be expired by another worker when this one idles (pull model) | `BASE_GLOBAL` |
//! | [`BaseKind::Deferrable`] | deferrable timers: never wake an idle worker | `BASE_DEF` |
//!
//! # Ground rules: who may touch what
//!
//! * The wheel, the statistics and `dead` are only touched with the base's
//!   lock held (a `BaseGuard`).
//! * A timer's `expires_idx`, `base` and wheel key are written only by a
//!   thread holding the lock of the base named in the timer's `base` word.
//!   Anyone may read `expires_idx` and `base` at any time.
//! * `clk` mirrors the wheel clock: written under the lock, read by anyone
//!   (only for the lock-free same-bucket check in `modify`).
//! * `running` is written under the lock by the thread expiring this base;
//!   it names the timer whose callback that thread is running, outside the
//!   lock. `waiters` (under the lock) and `callback_seq` (the futex word)
//!   let `delete_sync` sleep until that callback returns.
//! * `idle_until` is written by the owning worker: under the lock when it
//!   goes idle, freely when it wakes. Enqueues read it under the lock.
//! * No callback, deallocation or user code ever runs under a base lock.
//!   The one allocation that can happen there is the wheel's slab growing
//!   when the base holds more pending timers than ever before (amortized
//!   doubling; [`Builder::capacity_per_base`](crate::Builder::capacity_per_base)
//!   reserves it up front).
//!
//! # Lock order
//!
//! A thread holds at most one base lock at a time. Moving a timer between
//! bases in `modify` takes the old base's lock, marks the timer `MIGRATING`,
//! **releases** the old lock and only then takes the new one. As two base
//! locks are never held at once, there is no order between them to get
//! wrong, and no deadlock between two threads moving timers in opposite
//! directions. The other locks never nest with a base lock: a worker's
//! waker (`Shared::wakers`) is taken only after the base lock is released
//! (in `BaseGuard`'s drop) or at registration, and the runtime's job queues
//! are independent. Finding a timer's base is the kernel's
//! `lock_timer_base()`: read `base`, lock that base, re-read `base`, and
//! retry if the timer moved meanwhile or is `MIGRATING`.

mod expire;
mod stats;

pub(crate) use expire::{free_after_callback, run_expired, running_here};
pub use stats::BaseStats;
pub(crate) use stats::Counters;

use crate::sync::{load_for_spin, spin_hint, AtomicPtr, AtomicU32, AtomicU64, SpinLock};
use crate::system::Shared;
use crate::timer::raw::RawTimer;
use crate::timer::state::{is_pending, pack, IDX_NONE, IDX_RUNNING, MIGRATING};
use crate::wheel::{calc_position, clamp_expiry, Key, Position, Wheel};
use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

/// Which of a worker's three bases.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum BaseKind {
    /// Pinned timers (the kernel's `BASE_LOCAL`).
    Local = 0,
    /// Movable timers (the kernel's `BASE_GLOBAL`).
    Global = 1,
    /// Deferrable timers (the kernel's `BASE_DEF`).
    Deferrable = 2,
}

/// Bases per worker.
pub(crate) const KINDS: usize = 3;

/// A pointer to a queued timer, as stored in a wheel.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct TimerPtr(pub(crate) NonNull<RawTimer>);

// SAFETY: a TimerPtr is only dereferenced under the rules in `timer/raw.rs`
// (the owning handle keeps the allocation alive while any base can see it).
unsafe impl Send for TimerPtr {}

/// The part of a base protected by its lock.
pub(crate) struct BaseInner {
    pub(crate) wheel: Wheel<TimerPtr>,
    pub(crate) stats: Counters,
    /// Set when the system shuts down: the base accepts no more timers.
    pub(crate) dead: bool,
    /// Threads blocked in `delete_sync` until the running callback returns;
    /// the expiring thread wakes them through `callback_seq`.
    pub(crate) waiters: u32,
}

/// One timer base. Cache-line aligned so that workers never share a line.
/// `repr(C)` keeps what the lock-free `modify` check reads (`clk`, the
/// configuration copies) on the first line, beside the lock.
#[repr(C, align(128))]
pub(crate) struct Base {
    lock: SpinLock,
    /// Copy of the system's [`ModifyCheck`](crate::ModifyCheck): whether
    /// `modify` makes the lock-free same-bucket check.
    pub(crate) same_bucket: bool,
    /// Copy of the system's statistics switch: count lock-free hits.
    pub(crate) count_matches: bool,
    /// This base's index in the system (`worker * 3 + kind`).
    pub(crate) index: u32,
    /// Mirror of `wheel.clk()`; written under `lock`.
    pub(crate) clk: AtomicU64,
    /// 0 while the owning worker is awake; else the tick it sleeps until
    /// (`u64::MAX`: indefinitely). Written by the worker under `lock` when it
    /// goes idle (and freely when it wakes); an enqueue that fires earlier
    /// wakes it (the kernel's `trigger_dyntick_cpu()`).
    pub(crate) idle_until: AtomicU64,
    /// The timer whose callback is running on this base, or null.
    pub(crate) running: AtomicPtr<RawTimer>,
    /// The system this base belongs to (it lives inside it).
    pub(crate) shared: *const Shared,
    /// Protected by `lock`.
    inner: UnsafeCell<BaseInner>,
    /// Lock-free `modify` hits (only counted when statistics are on), on its
    /// own cache line so counting does not slow down the lock.
    pub(crate) matched: Padded<AtomicU64>,
    /// Bumped when a callback returns while `waiters` is non-zero: the word
    /// `delete_sync` sleeps on (futex).
    pub(crate) callback_seq: AtomicU32,
}

/// Per-base copies of the system's settings.
#[derive(Copy, Clone)]
pub(crate) struct BaseConfig {
    pub(crate) same_bucket: bool,
    pub(crate) count_matches: bool,
    pub(crate) capacity: usize,
}

/// Aligns a field to its own cache-line pair.
#[repr(align(128))]
pub(crate) struct Padded<T>(pub(crate) T);

// SAFETY: `inner` is only accessed through a BaseGuard, i.e. with `lock` held;
// everything else is atomic or immutable (`shared` points to the Sync system).
unsafe impl Sync for Base {}
// SAFETY: as above; TimerPtr is Send.
unsafe impl Send for Base {}

impl Base {
    pub(crate) fn new(index: u32, clk: u64, shared: *const Shared, config: BaseConfig) -> Self {
        Base {
            lock: SpinLock::new(),
            same_bucket: config.same_bucket,
            count_matches: config.count_matches,
            index,
            clk: AtomicU64::new(clk),
            idle_until: AtomicU64::new(0),
            running: AtomicPtr::new(std::ptr::null_mut()),
            shared,
            inner: UnsafeCell::new(BaseInner {
                wheel: Wheel::with_capacity(clk, config.capacity),
                stats: Counters::default(),
                dead: false,
                waiters: 0,
            }),
            matched: Padded(AtomicU64::new(0)),
            callback_seq: AtomicU32::new(0),
        }
    }

    /// The system this base belongs to.
    #[inline]
    pub(crate) fn system(&self) -> &Shared {
        // SAFETY: bases live inside their system's allocation, so the system
        // outlives every reference to one of its bases.
        unsafe { &*self.shared }
    }

    /// Takes the base lock.
    #[inline]
    pub(crate) fn lock(&self) -> BaseGuard<'_> {
        self.lock.lock();
        BaseGuard {
            base: self,
            wake: false,
        }
    }
}

/// Proof that the base lock is held; gives access to the locked part.
pub(crate) struct BaseGuard<'a> {
    pub(crate) base: &'a Base,
    /// An enqueue fires before the idle worker would wake: wake it once the
    /// lock is released.
    wake: bool,
}

impl Deref for BaseGuard<'_> {
    type Target = BaseInner;
    #[inline]
    fn deref(&self) -> &BaseInner {
        // SAFETY: the guard exists only while `lock` is held.
        unsafe { &*self.base.inner.get() }
    }
}

impl DerefMut for BaseGuard<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut BaseInner {
        // SAFETY: the guard exists only while `lock` is held, and `&mut self`
        // makes this the only reference derived from it.
        unsafe { &mut *self.base.inner.get() }
    }
}

impl Drop for BaseGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        self.base.lock.unlock();
        if self.wake {
            self.base
                .system()
                .wake_worker(self.base.index as usize / KINDS);
        }
    }
}

impl BaseGuard<'_> {
    /// Queues `timer` at `pos` (computed against this base's current clock)
    /// with expiry of record `expires`. The kernel's `enqueue_timer()`.
    ///
    /// `ptr` must be the allocation's own pointer (the handle's), not one
    /// derived from a `&RawTimer`: expiry casts it to the whole `TimerCell`
    /// to reach the callback, which needs the allocation's provenance.
    #[inline(always)]
    pub(crate) fn enqueue_timer(&mut self, ptr: NonNull<RawTimer>, pos: Position, expires: u64) {
        let idle_until = self.base.idle_until.load(Relaxed);
        self.enqueue_at(ptr, pos, expires, idle_until);
    }

    /// [`enqueue_timer`](Self::enqueue_timer) with the base's `idle_until`
    /// already read: wakes the idle worker if the timer fires before it
    /// would wake.
    #[inline(always)]
    fn enqueue_at(&mut self, ptr: NonNull<RawTimer>, pos: Position, expires: u64, idle_until: u64) {
        // SAFETY: the caller's handle keeps the timer alive.
        let timer = unsafe { ptr.as_ref() };
        let key = self.wheel.insert_at(pos, TimerPtr(ptr));
        // SAFETY: we hold the lock of the base the timer is on (this one).
        unsafe { timer.set_key(key.as_u32()) };
        timer.expires_idx.store(pack(expires, pos.idx), Release);
        if pos.expiry < idle_until {
            self.wake = true;
        }
    }

    /// Queues `timer` to expire at `expires` (clamped to the wheel's range).
    /// The kernel's `internal_add_timer()`.
    #[inline]
    pub(crate) fn internal_add_timer(&mut self, ptr: NonNull<RawTimer>, expires: u64) {
        let idle_until = self.base.idle_until.load(Relaxed);
        if idle_until != 0 {
            // The worker sleeps and its clock stands still: bring it to the
            // present, or the timer lands on a needlessly coarse level (the
            // kernel's `forward_timer_base()` for idle bases).
            let now = self.base.system().ticks.now();
            self.wheel.forward(now);
            self.publish_clk();
        }
        let clk = self.wheel.clk();
        let expires = clamp_expiry(expires, clk);
        self.enqueue_at(ptr, calc_position(expires, clk), expires, idle_until);
    }

    /// Removes `timer` from the wheel if it is queued; returns whether it
    /// was. The kernel's `detach_if_pending()`.
    #[inline(always)]
    pub(crate) fn detach_if_pending(&mut self, timer: &RawTimer) -> bool {
        let word = timer.expires_idx.load(Relaxed);
        if !is_pending(word) {
            return false;
        }
        // SAFETY: we hold the lock of the base the timer is on.
        let key = Key::from_u32(unsafe { timer.key() });
        let removed = self.wheel.remove(key);
        debug_assert_eq!(removed, Some(TimerPtr(NonNull::from(timer))));
        // A timer re-armed by its running callback and deleted before the
        // callback returns is still running: say so, or `delete_sync` would
        // take it for idle.
        let running = self.base.running.load(Relaxed) == NonNull::from(timer).as_ptr();
        let idx = if running { IDX_RUNNING } else { IDX_NONE };
        timer
            .expires_idx
            .store(pack(crate::timer::state::expires_of(word), idx), Release);
        true
    }

    /// Publishes the wheel clock for lock-free readers.
    #[inline]
    pub(crate) fn publish_clk(&self) {
        self.base.clk.store(self.wheel.clk(), Release);
    }
}

/// Locks the base `timer` is on, following it if it moves meanwhile. The
/// kernel's `lock_timer_base()`.
#[inline]
pub(crate) fn lock_timer_base(timer: &RawTimer) -> BaseGuard<'_> {
    let mut word = timer.base.load(Acquire);
    loop {
        if word.addr() & MIGRATING == 0 {
            let guard = timer.base_of(word).lock();
            // Still on that base? `base` only changes under the base lock
            // (or between the two locks of a migration, with MIGRATING set).
            if timer.base.load(Relaxed) == word {
                return guard;
            }
        }
        spin_hint();
        word = load_for_spin(&timer.base);
    }
}
