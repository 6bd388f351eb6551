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
//! The bases of all workers live in one table (`Bases`, `table.rs`), which
//! also owns the clock, the thread-to-worker binding and the hooks through
//! which this layer calls up without importing upward: whom to wake when a
//! timer lands on an idle base, what to run while a worker's thread blocks,
//! and whom to tell about a callback's panic.
//!
//! # Ground rules: who may touch what
//!
//! "The base's lock" is a `BiasedLock`
//! (`sync/biased.rs`): the thread that registered as the base's worker
//! (its owner) takes it without an atomic read-modify-write while it is
//! biased; every other thread takes the spinlock inside it, revoking the
//! bias first if it is on. Either way it is one lock with one holder, and
//! everything below holds as written.
//!
//! * The wheel, the statistics, `closed`, `expiring` and `waiters` are only
//!   touched with the base's lock held, through a `BaseGuard`.
//! * A timer's state word, base link and wheel key are written only by a
//!   thread holding the lock of the base named in the timer's base link;
//!   the guard's `Locked` proof is what the timer's setters take. Anyone
//!   may read the state word and the base link at any time.
//! * `clk` mirrors the wheel clock: written under the lock, read by anyone
//!   (only for the lock-free same-bucket check in `modify`).
//! * `next` mirrors the wheel's next expiry: written under the lock by
//!   whatever changes the wheel, read by anyone (`Base::next_expiry`: the idle path,
//!   the pull model, `next_expiry`), who takes the lock only when the
//!   mirror says the wheel's cache must be recomputed.
//! * `running` is written under the lock by the thread expiring this base;
//!   it names the timer whose callback that thread is running, outside the
//!   lock. `waiters` and `callback_seq` (the futex word) let `delete_sync`
//!   sleep until that callback returns.
//! * `idle_until` is written by the owning worker: under the lock when it
//!   goes idle; when it wakes, freely for its local base and under the
//!   lock for its global one, which a stall or a remote expiry (also under
//!   the lock) may mark idle again at any moment. Enqueues read it under
//!   the lock.
//! * No callback, deallocation or user code ever runs under a base lock.
//!   The one allocation that can happen there is the wheel's block array growing
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
//! directions. Finding a timer's base is the kernel's `lock_timer_base()`:
//! read the base link, lock that base, re-read the link, and retry if the
//! timer moved meanwhile or is `MIGRATING`.
//!
//! The other locks never nest inside a base lock today: the hooks are called
//! only after the base lock is released (in `BaseGuard`'s drop), the
//! worker's waker lock is taken there or at registration, and the runtime's
//! job queues are independent. The pull model (`migration/`) adds exactly
//! one nesting, in one direction: **a base lock may be held while taking a
//! hierarchy lock (a worker's leaf lock, then group locks from child to
//! parent), never the reverse**: going idle, a stall and a remote expiry's
//! update run under the worker's global base lock
//! (`Base::with_next_expiry`). Nothing that holds a hierarchy lock takes
//! a base lock.
//!
//! # Staying fresh
//!
//! A base's clock moves when its expiry runs. A worker that sleeps, or that
//! is stuck in a long job, leaves it behind, and a timer placed relative to
//! a stale clock lands on a needlessly coarse level (late by up to that
//! level's granule). Level 0 is exact whatever the clock, but before placing
//! a timer on a coarser level the base reads the system clock and brings
//! its own forward (the kernel's `forward_timer_base()`; see
//! `BaseGuard::place`). A bucket whose tick has passed does not stop it, as
//! it stops the kernel's: the wheel takes such buckets out for the next run
//! (the one under way, during a run) and the base marks their timers due.
//! So every arm, by a user or by a callback in the middle of a run, is
//! placed as on a fresh base, and an expiry in the past always fires at
//! the next run. A forward costs one step per block of 16 entries taken
//! out and one store per timer, once per timer: the next run would have
//! touched them anyway.

mod expire;
mod guard;
mod hotplug;
mod idle;
mod stats;
mod table;
#[cfg(all(test, not(loom)))]
pub(crate) mod testing;
mod trace;

pub(crate) use crate::sync::summary::{NextSummary, Summaries};
pub(crate) use expire::{in_callback, run_expired, running_here};
pub(crate) use guard::{free_timer, lock_timer_base, timer_base, BaseGuard};
pub(crate) use hotplug::Hotplug;
pub use stats::BaseStats;
pub(crate) use stats::Counters;
pub(crate) use table::{Bases, BasesConfig, Binding, Hooks, PanicHook};

use crate::sync::{AtomicPtr, AtomicU32, AtomicU64, BiasedLock, Held, UnsafeCell};
use crate::timer_list::entry::{RawTimer, TimerRef};
use crate::wheel::{level_limit, Unchecked, Wheel};
use std::ptr::NonNull;
use std::sync::atomic::Ordering::{Acquire, Relaxed};

/// `Base::next`: the wheel is empty.
const NEXT_NONE: u64 = u64::MAX;
/// `Base::next`: the wheel's cache must be recomputed under the lock.
const NEXT_UNKNOWN: u64 = u64::MAX - 1;

pub(crate) use crate::sync::state::{DEAD, OFFLINE};

impl BaseInner {
    /// The system shut down.
    #[inline(always)]
    pub(crate) fn is_dead(&self) -> bool {
        self.closed & DEAD != 0
    }

    /// The worker is offline.
    #[inline(always)]
    pub(crate) fn is_offline(&self) -> bool {
        self.closed & OFFLINE != 0
    }
}

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

impl BaseKind {
    /// All three, in the order an expiry run takes them.
    pub const ALL: [BaseKind; KINDS] = [BaseKind::Local, BaseKind::Global, BaseKind::Deferrable];
}

/// Bases per worker.
pub(crate) const KINDS: usize = 3;

/// Distances below this land on level 0, which is exact whatever the clock.
const LEVEL0_SPAN: u64 = level_limit(0);

/// A pointer to a queued timer, as stored in a wheel.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct TimerPtr(NonNull<RawTimer>);

// SAFETY: a TimerPtr is only dereferenced under the lifetime rules of
// `entry/` (a queued timer is live), from whichever thread holds the lock.
unsafe impl Send for TimerPtr {}

/// The part of a base protected by its lock.
pub(crate) struct BaseInner {
    pub(crate) wheel: Wheel<TimerPtr, Unchecked>,
    pub(crate) stats: Counters,
    /// [`DEAD`] once the system shut down (the base accepts no more
    /// timers), [`OFFLINE`] while its worker is offline (`hotplug.rs`: no
    /// arm lands here and no expiry run starts here). One byte, so that the
    /// arm path checks both at once.
    pub(crate) closed: u8,
    /// An expiry run of this base is under way (on some thread, maybe in an
    /// outer frame of this one): no second run may start.
    pub(crate) expiring: bool,
    /// Threads blocked in `delete_sync` until the running callback returns;
    /// the expiring thread wakes them through `callback_seq`.
    pub(crate) waiters: u32,
}

/// One timer base. Cache-line aligned so that workers never share a line.
/// `repr(C)` keeps what the lock-free `modify` check reads (`clk`, `table`)
/// on the first line, beside the lock.
#[repr(C, align(128))]
pub(crate) struct Base {
    /// Biased towards the worker's own thread (`sync/biased.rs`).
    lock: BiasedLock,
    /// Copy of the system's statistics switch: count lock-free hits.
    pub(crate) count_matches: bool,
    /// This base's index in its table (`worker * 3 + kind`).
    pub(crate) index: u32,
    /// Mirror of `wheel.clk()`; written under `lock`.
    pub(crate) clk: AtomicU64,
    /// 0 while the owning worker is awake; else the tick below which an
    /// enqueue must call the wake hook (the kernel's
    /// `trigger_dyntick_cpu()`): for a local base, the tick the worker sleeps
    /// until; for a global base in the pull model, its first event as the
    /// hierarchy knows it (`u64::MAX`: none). Written under `lock` when the
    /// worker goes idle, by a remote expiry or a stall (see `migration/`),
    /// and by the enqueue that calls the hook; cleared when the worker
    /// wakes: freely for a local base, under `lock` for a global one (a
    /// stall may publish it again at any moment: [`Base::idle_exit_with`]).
    pub(crate) idle_until: AtomicU64,
    /// The timer whose callback is running on this base, or null.
    pub(crate) running: AtomicPtr<RawTimer>,
    /// Mirror of the wheel's next expiry: [`NEXT_NONE`], [`NEXT_UNKNOWN`]
    /// (the wheel changed since it was computed: ask under the lock), or
    /// the tick. Written under the lock: an arm or a cancel makes it
    /// unknown (one load when it already is), and whoever computes the
    /// next expiry under the lock (a reader that found it unknown, the idle
    /// path, an expiry run, a forward, a drain) stores it. So it is exact
    /// or unknown whenever the lock is free and no expiry run is under way
    /// (during one: exact or a lower bound). Read without the lock by
    /// [`Base::next_expiry`]. Leaving a known value also invalidates the
    /// worker's summary (`sync/summary.rs`). The code that reads and writes it
    /// is in `idle.rs`.
    next: AtomicU64,
    /// The table this base lives in.
    table: *const Bases,
    /// The manual clock's word, or null for the monotonic clock: "now" in
    /// one load on the arm path (see [`Base::jiffies`]).
    manual_clock: *const std::sync::atomic::AtomicU64,
    /// The worker's next-event summary (a sink for a deferrable base),
    /// invalidated under `lock` when `next` leaves a known value.
    summary: *const NextSummary,
    /// `index / 3`: the worker, without a division on the arm path. Here,
    /// on the second line that the arm path reads anyway (`next`,
    /// `table`), so that the first line keeps its layout.
    worker: u32,
    /// Protected by `lock`.
    inner: UnsafeCell<BaseInner>,
    /// Lock-free `modify` hits (only counted when statistics are on), on its
    /// own cache line so counting does not slow down the lock.
    pub(crate) matched: Padded<AtomicU64>,
    /// Bumped when a callback returns while `waiters` is non-zero: the word
    /// `delete_sync` sleeps on (futex).
    pub(crate) callback_seq: AtomicU32,
}

/// Aligns a field to its own cache-line pair.
#[repr(align(128))]
pub(crate) struct Padded<T>(pub(crate) T);

// SAFETY: `inner` is only accessed through a BaseGuard, i.e. with `lock` held;
// everything else is atomic or immutable (`table` points to the Sync table
// that contains this base, `summary` to an atomic that table keeps alive).
unsafe impl Sync for Base {}
// SAFETY: as above; TimerPtr is Send.
unsafe impl Send for Base {}

impl Base {
    fn new(
        index: u32,
        clk: u64,
        table: *const Bases,
        manual_clock: *const std::sync::atomic::AtomicU64,
        summary: *const NextSummary,
        config: &BasesConfig,
    ) -> Self {
        Base {
            lock: BiasedLock::new(),
            count_matches: config.stats,
            index,
            worker: index / KINDS as u32,
            clk: AtomicU64::new(clk),
            idle_until: AtomicU64::new(0),
            running: AtomicPtr::new(std::ptr::null_mut()),
            next: AtomicU64::new(NEXT_NONE),
            table,
            manual_clock,
            summary,
            inner: UnsafeCell::new(BaseInner {
                wheel: Wheel::build(clk, config.capacity),
                stats: Counters::default(),
                closed: 0,
                expiring: false,
                waiters: 0,
            }),
            matched: Padded(AtomicU64::new(0)),
            callback_seq: AtomicU32::new(0),
        }
    }

    /// The table this base belongs to.
    #[inline(always)]
    pub(crate) fn table(&self) -> &Bases {
        // SAFETY: bases live inside their table's allocation, so the table
        // outlives every reference to one of its bases.
        unsafe { &*self.table }
    }

    /// The system clock's current tick (the kernel's `jiffies`), for
    /// bringing a stale base clock forward.
    #[inline(always)]
    pub(crate) fn jiffies(&self) -> u64 {
        // SAFETY: null, or the manual clock's word, which the table's clock
        // owns; the table outlives its bases.
        match unsafe { self.manual_clock.as_ref() } {
            Some(word) => word.load(Acquire),
            None => self.jiffies_monotonic(),
        }
    }

    /// The monotonic clock's tick: a vDSO call, kept out of line so that
    /// the arm path around it stays small.
    #[inline(never)]
    fn jiffies_monotonic(&self) -> u64 {
        self.table().ticks.now()
    }

    /// The worker this base belongs to.
    #[inline]
    pub(crate) fn worker(&self) -> usize {
        self.worker as usize
    }

    /// Which of its worker's bases this is.
    #[inline]
    pub(crate) fn kind(&self) -> BaseKind {
        BaseKind::ALL[self.index as usize % KINDS]
    }

    /// The pointer that timers on this base store in their base link.
    #[inline(always)]
    pub(crate) fn erased(&self) -> *mut () {
        self as *const Base as *mut ()
    }

    /// Takes the base lock: without an atomic read-modify-write on the
    /// owning worker's thread while the lock is biased towards it
    /// (`sync/biased.rs`).
    #[inline]
    pub(crate) fn lock(&self) -> BaseGuard<'_> {
        let held = self.lock.lock();
        BaseGuard {
            base: self,
            bits: (held == Held::Biased) as u64,
        }
    }

    /// The calling thread becomes the base's owner (it registered as the
    /// worker), if the base has none: its locks take the biased path.
    pub(crate) fn claim_ownership(&self) -> bool {
        self.lock.claim()
    }

    /// The owner unregisters.
    pub(crate) fn release_ownership(&self) {
        self.lock.release_ownership();
    }

    /// Whether `t`'s callback is running on this base.
    #[inline(always)]
    pub(crate) fn is_running(&self, t: TimerRef<'_>) -> bool {
        t.is(self.running.load(Relaxed))
    }

    /// Shuts the base down: every pending timer is cancelled (its callback
    /// never runs) and later arms are refused.
    pub(crate) fn shut_down(&self) {
        let mut guard = self.lock();
        guard.closed |= DEAD;
        let locked = guard.locked();
        let mut cancelled = 0;
        let inner = guard.inner_mut();
        inner.wheel.drain(|TimerPtr(ptr)| {
            // SAFETY: a queued timer is live (entry/ lifetime rules), and we
            // hold its base's lock.
            let t = unsafe { TimerRef::new(ptr) };
            t.get().state.detach(false, &locked);
            cancelled += 1;
        });
        inner.stats.deleted += cancelled;
        guard.publish_next();
    }
}
