//! The timer system: N workers, three bases each, one clock.
//!
//! [`TimerSystem`] is the user-space counterpart of the kernel's per-CPU
//! `timer_bases`. A kernel CPU becomes a *worker*; this layer owns no threads
//! (the runtime layer adds them): any thread may bind itself to a worker with
//! [`TimerSystem::enter`] and run that worker's expired timers with
//! [`TimerSystem::run_expired`].
//!
//! # Choosing a base without a global lock
//!
//! Like the kernel's `mod_timer()`, arming a timer queues it on the caller's
//! own worker: the worker the thread entered, or else the thread's *home*
//! worker, assigned once per thread round-robin from a global counter (one
//! relaxed atomic add per thread lifetime). No lock, no shared cache line.

use crate::base::{run_expired, Base, BaseConfig, BaseKind, BaseStats, KINDS};
use crate::clock::{Clock, TickSource};
use crate::timer::raw::RawTimer;
use crate::timer::state::{DEFERRABLE, PINNED};
use crate::{Timer, TimerError, TimerFlags};
use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Which lock-free check `modify` makes before taking the base lock.
///
/// [`SameBucket`](ModifyCheck::SameBucket) is utimer's; the other is the
/// kernel's check before seed 002, kept only so that `utimer bench` can
/// reproduce that patch's before/after table.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum ModifyCheck {
    /// Skip the lock when the new expiry fires in the same tick as the
    /// current bucket (seed 002). The default.
    #[default]
    SameBucket,
    /// Skip the lock only when the expiry is unchanged (the kernel before
    /// 2016). For benchmarks.
    ExpiryUnchanged,
}

/// State shared by the system handle and every timer.
pub(crate) struct Shared {
    pub(crate) bases: Box<[Base]>,
    pub(crate) workers: usize,
    pub(crate) ticks: TickSource,
    /// Per worker: how to wake its thread when a timer armed on its idle
    /// bases fires before it would wake (set by `register_worker`).
    wakers: Box<[Mutex<Option<Waker>>]>,
    /// Told about every callback that panics.
    pub(crate) panic_hook: Option<PanicHook>,
}

/// Called with the payload of a callback's panic.
pub(crate) type PanicHook = Arc<dyn Fn(&(dyn std::any::Any + Send)) + Send + Sync>;

/// Wakes one worker's thread.
pub(crate) type Waker = Arc<dyn Fn() + Send + Sync>;

#[cfg(not(loom))]
std::thread_local! {
    /// The (system, worker) this thread has entered, if any.
    static ENTERED: Cell<(*const Shared, usize)> = const { Cell::new((std::ptr::null(), 0)) };
    /// This thread's home worker number (before reduction modulo workers).
    static HOME: Cell<usize> = const { Cell::new(usize::MAX) };
}
#[cfg(loom)]
loom::thread_local! {
    static ENTERED: Cell<(*const Shared, usize)> = Cell::new((std::ptr::null(), 0));
    static HOME: Cell<usize> = Cell::new(usize::MAX);
}

static NEXT_HOME: AtomicUsize = AtomicUsize::new(0);

impl Shared {
    /// The worker this thread entered, if it entered one of this system's.
    pub(crate) fn entered_worker(&self) -> Option<usize> {
        let (sys, worker) = ENTERED.with(|e| e.get());
        std::ptr::eq(sys, self).then_some(worker)
    }

    /// The worker whose bases this thread arms timers on.
    #[inline]
    pub(crate) fn current_worker(&self) -> usize {
        let (sys, worker) = ENTERED.with(|e| e.get());
        if std::ptr::eq(sys, self) {
            return worker;
        }
        let home = HOME.with(|h| {
            if h.get() == usize::MAX {
                h.set(NEXT_HOME.fetch_add(1, Ordering::Relaxed));
            }
            h.get()
        });
        home % self.workers
    }

    /// `Ok` if `worker` exists.
    pub(crate) fn check_worker(&self, worker: usize) -> Result<(), TimerError> {
        if worker < self.workers {
            Ok(())
        } else {
            Err(TimerError::NoSuchWorker {
                worker: worker.try_into().unwrap_or(u32::MAX),
            })
        }
    }

    /// The base a timer with `flags` uses on `worker`.
    #[inline]
    pub(crate) fn base_index(&self, worker: usize, flags: u32) -> u32 {
        let kind = if flags & DEFERRABLE != 0 {
            BaseKind::Deferrable
        } else if flags & PINNED != 0 {
            BaseKind::Local
        } else {
            BaseKind::Global
        };
        (worker * KINDS + kind as usize) as u32
    }

    pub(crate) fn base(&self, worker: usize, kind: BaseKind) -> &Base {
        &self.bases[worker * KINDS + kind as usize]
    }

    /// Installs (or removes) `worker`'s waker.
    pub(crate) fn set_waker(&self, worker: usize, waker: Option<Waker>) {
        *self.wakers[worker]
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = waker;
    }

    /// Wakes `worker`'s thread, if it registered a waker. Called with no
    /// base lock held.
    pub(crate) fn wake_worker(&self, worker: usize) {
        let waker = self.wakers[worker]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(wake) = waker {
            wake();
        }
    }

    /// The worker is going idle: returns the tick its timers need it again
    /// (`None`: no timer; deferrable timers never count) and publishes that
    /// tick in its local and global bases, so that an earlier timer armed
    /// there from now on wakes it. Each base's value is stored under its
    /// lock together with a fresh look at its next expiry, so no arm can
    /// slip in between unseen. The kernel's `tick_nohz_stop_tick()` side of
    /// `get_next_timer_interrupt()`.
    pub(crate) fn go_idle(&self, worker: usize) -> Option<u64> {
        let bases = [
            self.base(worker, BaseKind::Local),
            self.base(worker, BaseKind::Global),
        ];
        let mut until = u64::MAX;
        for base in bases {
            if let Some(next) = base.lock().wheel.next_expiry() {
                until = until.min(next);
            }
        }
        for base in bases {
            let mut guard = base.lock();
            if let Some(next) = guard.wheel.next_expiry() {
                until = until.min(next);
            }
            base.idle_until.store(until.max(1), Ordering::Relaxed);
        }
        (until != u64::MAX).then_some(until)
    }

    /// The worker is busy again: arms need not wake it.
    pub(crate) fn go_busy(&self, worker: usize) {
        for kind in [BaseKind::Local, BaseKind::Global] {
            self.base(worker, kind)
                .idle_until
                .store(0, Ordering::Relaxed);
        }
    }
}

/// Configures a [`TimerSystem`].
#[derive(Clone)]
pub struct Builder {
    workers: usize,
    tick: Duration,
    clock: Clock,
    stats: bool,
    modify_check: ModifyCheck,
    capacity: usize,
    panic_hook: Option<PanicHook>,
}

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("workers", &self.workers)
            .field("tick", &self.tick)
            .field("clock", &self.clock)
            .field("stats", &self.stats)
            .field("modify_check", &self.modify_check)
            .field("capacity", &self.capacity)
            .field("panic_hook", &self.panic_hook.is_some())
            .finish()
    }
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
            tick: Duration::from_millis(1),
            clock: Clock::monotonic(),
            stats: false,
            modify_check: ModifyCheck::SameBucket,
            capacity: 0,
            panic_hook: None,
        }
    }
}

impl Builder {
    /// Number of workers (default: available CPUs). Clamped to 1 ..= 65,536.
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = n.clamp(1, 1 << 16);
        self
    }

    /// Length of one tick (default 1 ms). Clamped to at least 1 µs. The
    /// wheel's range is 1,056,964,607 ticks (12.2 days at 1 ms).
    pub fn tick(mut self, tick: Duration) -> Self {
        self.tick = tick.max(Duration::from_micros(1));
        self
    }

    /// The time source (default [`Clock::monotonic`]).
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Count lock-free `modify` hits (`BaseStats::matched`; default off: it
    /// costs an atomic add on the fastest path). Locked events are always
    /// counted.
    pub fn stats(mut self, on: bool) -> Self {
        self.stats = on;
        self
    }

    /// The lock-free check `modify` makes (default
    /// [`ModifyCheck::SameBucket`]).
    pub fn modify_check(mut self, check: ModifyCheck) -> Self {
        self.modify_check = check;
        self
    }

    /// Room for this many pending timers per base, so that arming never
    /// allocates below it (default 0: grow on demand).
    pub fn capacity_per_base(mut self, n: usize) -> Self {
        self.capacity = n;
        self
    }

    /// Calls `hook` with the payload of every timer callback that panics
    /// (after the panic is caught and counted; outside every lock; on the
    /// expiring thread). The worker goes on either way.
    pub fn on_callback_panic(
        mut self,
        hook: impl Fn(&(dyn std::any::Any + Send)) + Send + Sync + 'static,
    ) -> Self {
        self.panic_hook = Some(Arc::new(hook));
        self
    }

    /// Creates the system.
    pub fn build(self) -> TimerSystem {
        let ticks = TickSource::new(self.clock, self.tick);
        let clk = ticks.now();
        let config = BaseConfig {
            same_bucket: self.modify_check == ModifyCheck::SameBucket,
            count_matches: self.stats,
            capacity: self.capacity,
        };
        let shared = Arc::new_cyclic(|me| Shared {
            bases: (0..self.workers * KINDS)
                .map(|i| Base::new(i as u32, clk, me.as_ptr(), config))
                .collect(),
            workers: self.workers,
            ticks,
            wakers: (0..self.workers).map(|_| Mutex::new(None)).collect(),
            panic_hook: self.panic_hook,
        });
        TimerSystem { shared }
    }
}

/// A set of workers, each with its own timer bases. Dropping it shuts the
/// bases down: pending timers are cancelled (their callbacks never run) and
/// later arms return [`TimerError::Shutdown`].
pub struct TimerSystem {
    shared: Arc<Shared>,
}

/// Binds the current thread to a worker until dropped
/// ([`TimerSystem::enter`]).
pub struct EnterGuard<'a> {
    previous: (*const Shared, usize),
    _system: PhantomData<&'a TimerSystem>,
    _not_send: PhantomData<*const ()>,
}

impl Drop for EnterGuard<'_> {
    fn drop(&mut self) {
        ENTERED.with(|e| e.set(self.previous));
    }
}

impl TimerSystem {
    /// A system with `workers` workers and default settings.
    pub fn new(workers: usize) -> TimerSystem {
        Builder::default().workers(workers).build()
    }

    /// A [`Builder`] with default settings.
    pub fn builder() -> Builder {
        Builder::default()
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.shared.workers
    }

    /// The current tick, cheaply (the kernel's `jiffies`). See
    /// [`crate::clock`] for how it relates to real time.
    #[inline]
    pub fn now(&self) -> u64 {
        self.shared.ticks.now()
    }

    /// The current tick from the precise clock, rounded down.
    pub fn now_precise(&self) -> u64 {
        self.shared.ticks.now_precise()
    }

    /// The length of a tick.
    pub fn tick(&self) -> Duration {
        self.shared.ticks.tick()
    }

    /// The clock.
    pub fn clock(&self) -> &Clock {
        self.shared.ticks.clock()
    }

    /// The first tick at or after `d` from now (never early; saturates).
    pub fn deadline_after(&self, d: Duration) -> u64 {
        self.shared.ticks.deadline_after(d)
    }

    /// The first tick at or after `instant`.
    pub fn deadline_at(&self, instant: Instant) -> u64 {
        self.shared.ticks.deadline_at(instant)
    }

    /// The instant `tick` begins, for the monotonic clock.
    pub fn instant_of(&self, tick: u64) -> Option<Instant> {
        self.shared.ticks.instant_of(tick)
    }

    /// Creates a timer that calls `callback` when it expires. The kernel's
    /// `timer_setup()`. The timer is not pending; arm it with
    /// [`Timer::modify`] or [`Timer::add`].
    ///
    /// The callback receives the timer itself and may re-arm or delete it.
    pub fn timer<F>(&self, flags: TimerFlags, callback: F) -> Timer
    where
        F: Fn(&Timer) + Send + Sync + 'static,
    {
        let flags = flags.bits();
        let base = self.shared.base_index(self.shared.current_worker(), flags);
        let raw = RawTimer::alloc(
            &self.shared,
            &self.shared.bases[base as usize],
            flags,
            callback,
        );
        Timer::from_raw(raw)
    }

    /// Binds this thread to `worker` until the guard is dropped: timers it
    /// arms go to that worker's bases.
    ///
    /// # Errors
    /// [`TimerError::NoSuchWorker`] if `worker` is out of range.
    pub fn enter(&self, worker: usize) -> Result<EnterGuard<'_>, TimerError> {
        self.check_worker(worker)?;
        let me: *const Shared = &*self.shared;
        let previous = ENTERED.with(|e| e.replace((me, worker)));
        Ok(EnterGuard {
            previous,
            _system: PhantomData,
            _not_send: PhantomData,
        })
    }

    /// The worker this thread arms timers on.
    pub fn current_worker(&self) -> usize {
        self.shared.current_worker()
    }

    fn check_worker(&self, worker: usize) -> Result<(), TimerError> {
        self.shared.check_worker(worker)
    }

    /// Runs the callbacks of every timer of `worker` (all three bases) due at
    /// or before tick `now`, and returns how many ran. The kernel's
    /// `run_timer_softirq()`.
    ///
    /// # Errors
    /// [`TimerError::NoSuchWorker`] if `worker` is out of range.
    pub fn run_expired(&self, worker: usize, now: u64) -> Result<usize, TimerError> {
        self.check_worker(worker)?;
        let mut n = 0;
        for kind in [BaseKind::Local, BaseKind::Global, BaseKind::Deferrable] {
            n += run_expired(self.shared.base(worker, kind), now);
        }
        Ok(n)
    }

    /// Runs one base's due callbacks (see [`run_expired`](Self::run_expired)).
    ///
    /// # Errors
    /// [`TimerError::NoSuchWorker`] if `worker` is out of range.
    pub fn run_expired_base(
        &self,
        worker: usize,
        kind: BaseKind,
        now: u64,
    ) -> Result<usize, TimerError> {
        self.check_worker(worker)?;
        Ok(run_expired(self.shared.base(worker, kind), now))
    }

    /// The earliest tick at which a timer of `worker` fires, over its local
    /// and global bases (deferrable timers do not count, as they never wake
    /// a worker). The kernel's `get_next_timer_interrupt()`.
    ///
    /// # Errors
    /// [`TimerError::NoSuchWorker`] if `worker` is out of range.
    pub fn next_expiry(&self, worker: usize) -> Result<Option<u64>, TimerError> {
        self.check_worker(worker)?;
        let local = self.next_expiry_base(worker, BaseKind::Local)?;
        let global = self.next_expiry_base(worker, BaseKind::Global)?;
        Ok(match (local, global) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        })
    }

    /// The earliest tick at which a timer of one base fires.
    ///
    /// # Errors
    /// [`TimerError::NoSuchWorker`] if `worker` is out of range.
    pub fn next_expiry_base(
        &self,
        worker: usize,
        kind: BaseKind,
    ) -> Result<Option<u64>, TimerError> {
        self.check_worker(worker)?;
        Ok(self.shared.base(worker, kind).lock().wheel.next_expiry())
    }

    /// Statistics of one base.
    ///
    /// # Errors
    /// [`TimerError::NoSuchWorker`] if `worker` is out of range.
    pub fn base_stats(&self, worker: usize, kind: BaseKind) -> Result<BaseStats, TimerError> {
        self.check_worker(worker)?;
        Ok(stats_of(self.shared.base(worker, kind)))
    }

    /// Statistics summed over every base.
    pub fn stats(&self) -> BaseStats {
        let mut sum = BaseStats::default();
        for base in self.shared.bases.iter() {
            sum += stats_of(base);
        }
        sum
    }

    /// Heap bytes held by the bases' wheels (slots and bucket heads), not
    /// counting the timers themselves.
    pub fn wheel_heap_bytes(&self) -> usize {
        self.shared
            .bases
            .iter()
            .map(|b| b.lock().wheel.heap_bytes())
            .sum()
    }
}

fn stats_of(base: &Base) -> BaseStats {
    let matched = base.matched.0.load(Ordering::Relaxed);
    let guard = base.lock();
    BaseStats::from_counters(&guard.stats, guard.wheel.len(), matched)
}

impl Drop for TimerSystem {
    fn drop(&mut self) {
        for base in self.shared.bases.iter() {
            let mut guard = base.lock();
            guard.dead = true;
            let mut cancelled = 0;
            guard.wheel.drain(|ptr| {
                // SAFETY: a queued timer is live; we hold its base's lock.
                let timer = unsafe { ptr.0.as_ref() };
                let word = timer.expires_idx.load(Ordering::Relaxed);
                timer.expires_idx.store(
                    crate::timer::state::pack(
                        crate::timer::state::expires_of(word),
                        crate::timer::state::IDX_NONE,
                    ),
                    Ordering::Release,
                );
                cancelled += 1;
            });
            guard.stats.deleted += cancelled;
        }
    }
}

impl std::fmt::Debug for TimerSystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimerSystem")
            .field("workers", &self.shared.workers)
            .field("tick", &self.tick())
            .finish_non_exhaustive()
    }
}
