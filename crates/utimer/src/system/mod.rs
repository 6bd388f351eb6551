//! The timer system: N workers, three bases each, one clock.
//!
//! [`TimerSystem`] is the facade over the layers below it: the user-space
//! counterpart of the kernel's per-CPU `timer_bases` together with its
//! `NO_HZ` idle state. A kernel CPU becomes a *worker*; this layer owns no
//! threads (the runtime layer adds them): any thread may bind itself to a
//! worker with [`TimerSystem::enter`] and run that worker's expired timers
//! with [`TimerSystem::run_expired`], or become a worker with the
//! integration API ([`TimerSystem::register_worker`], `worker.rs`).
//!
//! One file a concern: the facade (here), its settings (`builder.rs`),
//! shutdown (`shutdown.rs`), the integration API (`worker.rs`), blocking
//! sleep (`sleep.rs`), real-time workers (`realtime.rs`) and introspection
//! (`metrics.rs`).
//!
//! # The facade's methods, by job
//!
//! | job | methods | where |
//! |-----|---------|-------|
//! | making one | [`builder`](TimerSystem::builder), [`without_threads`](TimerSystem::without_threads), `workers` | here, `builder.rs` |
//! | clocks | `now`, `now_precise`, `tick`, `clock`, `deadline`, `instant_of`, `clock_ns`, `clock_was_set` | here |
//! | timers | [`timer`](TimerSystem::timer), `timer_with_flags`, [`hrtimer`](TimerSystem::hrtimer), `hrtimer_on` | here |
//! | sleep | [`sleep`](TimerSystem::sleep), `sleep_until`, `sleeper` | here, `sleep.rs` |
//! | driving expiry | `enter`, `current_worker`, `run_expired`, `next_expiry`, `register_worker`, `run_monitor`, `stop_monitor` | here, `worker.rs` |
//! | hot-plug | `offline`, `online`, `is_online` | here |
//! | shutting down | [`shutdown`](TimerSystem::shutdown), `is_shut_down`, drop | here, `shutdown.rs` |
//! | real-time workers | `serve_realtime`, `realtime_priority` | here, `realtime.rs` |
//! | counters and introspection | [`metrics`](TimerSystem::metrics) | `metrics.rs` |
//! | POSIX timers | [`posix`](TimerSystem::posix) | `posix/api.rs`, the layer above |
//!
//! Every inherent `impl TimerSystem` is in this file, but the two that hand
//! out the handles of the last two rows; the other files hold the types
//! the facade hands out. (Two more, for `utimer bench` only, exist with
//! the `bench-internals` feature.)

mod builder;
mod hr;
mod hr_sleeper;
mod metrics;
mod realtime;
pub(crate) mod serve;
mod shutdown;
mod sleep;
mod worker;

pub use builder::{Builder, MAX_WORKERS};
pub use hr_sleeper::{HrSleeper, SystemRef};
pub use metrics::{Metrics, TimerList, WheelBaseInfo, WorkerTimers};
pub(crate) use realtime::{cpu_to_spare, thread_priority, Ahead};
pub use realtime::{MAX_AHEAD, MIN_AHEAD};
pub use serve::{Server, Serving, Woke, SERVE_GRACE};
pub use sleep::{Interrupter, SleepOutcome, Sleeper};
pub use worker::Worker;

use crate::hrtimer::{HrFire, HrRestart, HrTimer};
use crate::nohz::Nohz;
use crate::time::ClockId;
use crate::time::{Clock, Expiry};
use crate::timer_list::base::{Bases, Binding};
use crate::{Timer, TimerError, TimerFlags};
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the facade, its workers and its sleepers share.
#[derive(Clone)]
pub(crate) struct Core {
    pub(crate) bases: Arc<Bases>,
    pub(crate) nohz: Arc<Nohz>,
    /// The workers' real-time priority (`realtime.rs`).
    pub(crate) realtime: Arc<realtime::Realtime>,
    /// Sleeping threads that serve the hrtimers (`serve.rs`).
    pub(crate) serve: Arc<serve::Serve>,
}

/// A set of workers, each with its own timer bases. Dropping it (or
/// [`shutdown`](TimerSystem::shutdown), which stopping its
/// [`Runtime`](crate::Runtime) calls) shuts the bases down: pending timers
/// are cancelled (their callbacks never run) and later arms return
/// [`TimerError::Shutdown`].
pub struct TimerSystem {
    core: Core,
    /// The same, shared with hrtimer handles (`hr.rs`).
    env: Arc<Core>,
    /// What the one layer above that keeps state per system keeps here:
    /// the POSIX layer's registry of this system's timers
    /// (`posix/registry.rs`), made on its first use. This layer only holds
    /// it, and drops it with the system, after the bases have shut down;
    /// it imports nothing from above.
    #[cfg(not(loom))]
    above: std::sync::OnceLock<Box<dyn std::any::Any + Send + Sync>>,
}

/// Binds the current thread to a worker until dropped
/// ([`TimerSystem::enter`]).
pub struct EnterGuard<'a> {
    previous: Binding,
    _system: PhantomData<&'a TimerSystem>,
    _not_send: PhantomData<*const ()>,
}

impl Drop for EnterGuard<'_> {
    fn drop(&mut self) {
        Bases::leave(self.previous);
    }
}

impl std::fmt::Debug for EnterGuard<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnterGuard").finish_non_exhaustive()
    }
}

impl TimerSystem {
    /// A system with `workers` workers and default settings, **without
    /// threads of its own**: its timers fire only when a thread runs
    /// expiry ([`run_expired`](Self::run_expired), or a worker registered
    /// with [`register_worker`](Self::register_worker)). For timers that
    /// fire by themselves, start a [`Runtime`](crate::Runtime)
    /// (`Runtime::new`, or [`Builder::start`]). `workers` as
    /// [`Builder::workers`]: 0 is one per CPU the process may run on.
    ///
    /// # Panics
    /// For more than [`MAX_WORKERS`] workers;
    /// [`Builder::try_build_without_threads`] returns the error instead.
    pub fn without_threads(workers: usize) -> TimerSystem {
        Builder::default().workers(workers).build_without_threads()
    }

    /// A [`Builder`] with default settings.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.core.bases.workers()
    }

    /// The runtime's workers sleep on alarms that serving threads move
    /// (`serve.rs`): whether they must, and the state to install them in.
    pub(crate) fn serve_state(&self) -> Option<&Arc<serve::Serve>> {
        (self.core.nohz.hr.serve_mode && !self.core.bases.ticks.clock().is_manual())
            .then_some(&self.core.serve)
    }

    /// The current tick, cheaply (the kernel's `jiffies`). With the default
    /// clock it may lag real time by up to the kernel's coarse clock
    /// resolution (1–4 ms): `now() + n` can fire before `n` ticks of real
    /// time have passed. Arm with a relative [`Expiry`] (a `Duration`, or
    /// [`Expiry::AfterTicks`]) for "never early". See [`Clock`]. A tick
    /// count, never nanoseconds: an hrtimer's time is a
    /// [`Ktime`](crate::Ktime) ([`clock_ns`](Self::clock_ns) reads one).
    #[inline]
    #[doc(alias = "jiffies")]
    pub fn now(&self) -> u64 {
        self.core.bases.ticks.now()
    }

    /// The current tick from the precise clock, rounded down: every timer
    /// due at or before it is really due.
    pub fn now_precise(&self) -> u64 {
        self.core.bases.ticks.now_precise()
    }

    /// The length of a tick.
    pub fn tick(&self) -> Duration {
        self.core.bases.ticks.tick()
    }

    /// The clock.
    pub fn clock(&self) -> &Clock {
        self.core.bases.ticks.clock()
    }

    /// The tick an [`Expiry`] stands for now (relative ones rounded up:
    /// never early; saturating).
    pub fn deadline(&self, expiry: impl Into<Expiry>) -> u64 {
        self.core.bases.ticks.resolve(expiry.into())
    }

    /// The instant `tick` begins, for the monotonic clock (`None` for a
    /// manual clock, or beyond `Instant`'s range).
    pub fn instant_of(&self, tick: u64) -> Option<Instant> {
        self.core.bases.ticks.instant_of(tick)
    }

    /// Creates a movable timer (no flags) that calls `callback` when it
    /// expires. The kernel's `timer_setup()`. The timer is not pending; arm
    /// it with [`Timer::modify`] or [`Timer::add`].
    ///
    /// The callback receives the timer itself and may re-arm, delete or
    /// drop it. On a system that has shut down the timer is made, and
    /// arming it returns [`TimerError::Shutdown`].
    #[doc(alias = "timer_setup")]
    pub fn timer<F>(&self, callback: F) -> Timer
    where
        F: Fn(&Timer) + Send + Sync + 'static,
    {
        self.timer_with_flags(TimerFlags::NONE, callback)
    }

    /// [`timer`](Self::timer) with flags ([`TimerFlags::PINNED`],
    /// [`TimerFlags::DEFERRABLE`]).
    pub fn timer_with_flags<F>(&self, flags: TimerFlags, callback: F) -> Timer
    where
        F: Fn(&Timer) + Send + Sync + 'static,
    {
        let bases = &self.core.bases;
        Timer::new(bases, bases.current_worker(), flags, callback)
    }

    /// Creates a high-resolution timer on `clock` that calls `callback`
    /// when it fires, on the calling thread's worker (the kernel's
    /// `hrtimer_setup()`). Start it with [`HrTimer::start`] (absolute ns of
    /// its clock) or [`HrTimer::start_after`]. The callback returns whether
    /// to restart it ([`HrRestart`]), after moving its expiry through
    /// [`HrFire::forward`] for a periodic timer. On a system that has shut
    /// down the timer is made, and starting it returns
    /// [`TimerError::Shutdown`].
    #[doc(alias = "hrtimer_setup")]
    pub fn hrtimer<F>(&self, clock: ClockId, callback: F) -> HrTimer
    where
        F: Fn(&mut HrFire) -> HrRestart + Send + Sync + 'static,
    {
        let worker = self.core.bases.route(self.core.bases.current_worker());
        HrTimer::new(self.env.clone(), worker, clock, callback)
    }

    /// [`hrtimer`](Self::hrtimer) on worker `worker`, whose thread runs the
    /// callback (an offline worker's timers go to the worker it is routed
    /// to when started).
    ///
    /// # Errors
    /// [`TimerError::NoSuchWorker`] if `worker` is out of range;
    /// [`TimerError::Shutdown`] once the system has shut down.
    pub fn hrtimer_on<F>(
        &self,
        worker: usize,
        clock: ClockId,
        callback: F,
    ) -> Result<HrTimer, TimerError>
    where
        F: Fn(&mut HrFire) -> HrRestart + Send + Sync + 'static,
    {
        self.core.bases.check_worker(worker)?;
        self.check_running()?;
        Ok(HrTimer::new(self.env.clone(), worker, clock, callback))
    }

    /// The current time of `clock`, as hrtimers read it: a
    /// [`Ktime`](crate::Ktime), never a tick (the kernel's `ktime_get()`
    /// family, `clock_gettime`; with a manual [`Clock`], its tick × the
    /// tick length, for every clock).
    #[doc(alias = "ktime_get")]
    #[doc(alias = "clock_gettime")]
    pub fn clock_ns(&self, clock: ClockId) -> crate::Ktime {
        crate::Ktime::from_nanos(self.core.bases.ticks.now_ns(clock))
    }

    /// [`clock_ns`](Self::clock_ns) read cheaply: the kernel's coarse
    /// clock (`CLOCK_MONOTONIC_COARSE`, `CLOCK_REALTIME_COARSE`), never
    /// ahead of `clock_ns` and at most one kernel tick behind it, for "has
    /// this expiry passed?" checks that may answer "not yet" a little
    /// late but never "yes" early (`ktime_get_coarse()`). `BOOTTIME` reads
    /// precisely.
    #[doc(alias = "ktime_get_coarse")]
    pub fn clock_ns_coarse(&self, clock: ClockId) -> crate::Ktime {
        crate::Ktime::from_nanos(self.core.bases.ticks.now_ns_coarse(clock))
    }

    /// The wall clock was set: wakes every sleeping worker that has
    /// `REALTIME` hrtimers, so that it recomputes its sleep from the new
    /// offset and they fire at the new wall time (the kernel's
    /// `clock_was_set()`). A [`Runtime`](crate::Runtime) calls it from its
    /// `utimer-clockwatch` thread; a program that owns its workers calls it
    /// when its own `TFD_TIMER_CANCEL_ON_SET` timerfd reports `ECANCELED`.
    /// Returns how many workers were woken.
    pub fn clock_was_set(&self) -> usize {
        let mut woken = 0;
        for w in 0..self.workers() {
            if self.core.nohz.hr.sleeps_on_realtime(w) {
                self.core.nohz.wake(w);
                woken += 1;
            }
        }
        // A thread that serves the hrtimers sleeps with the old offset too.
        if self
            .core
            .nohz
            .hr
            .served
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            self.core.serve.kick();
        }
        woken
    }

    /// Binds this thread to `worker` until the guard is dropped: timers it
    /// arms go to that worker's bases.
    ///
    /// # Errors
    /// [`TimerError::NoSuchWorker`] if `worker` is out of range.
    pub fn enter(&self, worker: usize) -> Result<EnterGuard<'_>, TimerError> {
        self.core.bases.check_worker(worker)?;
        Ok(EnterGuard {
            previous: self.core.bases.enter(worker),
            _system: PhantomData,
            _not_send: PhantomData,
        })
    }

    /// The worker this thread arms timers on.
    pub fn current_worker(&self) -> usize {
        self.core.bases.current_worker()
    }

    /// Runs the callbacks of every timer of `worker` (all three bases) due at
    /// or before tick `now` (and of those already due), and returns how many
    /// ran. The kernel's `run_timer_softirq()`. A base whose expiry is
    /// already under way on another thread is left to that run: a base is
    /// never expired by two threads at once.
    ///
    /// # Errors
    /// [`TimerError::NoSuchWorker`] if `worker` is out of range.
    #[doc(alias = "run_timer_softirq")]
    pub fn run_expired(&self, worker: usize, now: u64) -> Result<usize, TimerError> {
        self.core.bases.check_worker(worker)?;
        Ok(self.core.nohz.run_expired(&self.core.bases, worker, now).0)
    }

    /// The earliest tick at which a timer of `worker` fires, over its local
    /// and global bases and its hrtimers (rounded up to their tick);
    /// deferrable timers do not count, as they never wake a worker. The
    /// kernel's `get_next_timer_interrupt()`.
    ///
    /// One load while nothing of the worker's changed since the last call
    /// (a per-worker summary); after a change, each of its bases is read
    /// under its lock. A call racing an arm or a cancel on another thread
    /// answers as before or as after it, never later than the earliest
    /// timer pending throughout the call. During an expiry run of the
    /// worker, it may answer earlier than the truth (a timer being fired).
    ///
    /// # Errors
    /// [`TimerError::NoSuchWorker`] if `worker` is out of range.
    #[doc(alias = "get_next_timer_interrupt")]
    pub fn next_expiry(&self, worker: usize) -> Result<Option<u64>, TimerError> {
        self.core.bases.check_worker(worker)?;
        Ok(self.core.nohz.next_tick(&self.core.bases, worker))
    }

    /// Makes the current thread worker `worker`: the integration API for
    /// executors and event loops that own their threads (see [`Worker`]).
    /// `wake` is called, from any thread and never under a utimer lock,
    /// when a timer armed on the idle worker's bases must fire before it
    /// planned to wake, and once when the system shuts down
    /// ([`shutdown`](Self::shutdown)); it must not block. One thread per
    /// worker at a time: registering the same worker again replaces the
    /// first registration's waker.
    ///
    /// # Errors
    /// [`TimerError::NoSuchWorker`] if `worker` is out of range;
    /// [`TimerError::Shutdown`] once the system has shut down.
    pub fn register_worker(
        &self,
        worker: usize,
        wake: impl Fn() + Send + Sync + 'static,
    ) -> Result<Worker, TimerError> {
        self.core.bases.check_worker(worker)?;
        self.check_running()?;
        Ok(Worker::register(self.core.clone(), worker, Arc::new(wake)))
    }

    /// Serves a thread of real-time priority `priority` (`SCHED_FIFO` or
    /// `SCHED_RR`, 1..=99): every registered worker thread, and every one
    /// that registers later, runs `SCHED_FIFO` at that priority, so that no
    /// real-time thread below it keeps a timer from firing (the kernel
    /// fires hrtimers from its interrupt, above every task; see
    /// `system/realtime.rs` for why not above). Never lowers; best effort
    /// without the privilege. A real-time worker also wakes ahead of its
    /// next expiry and waits the rest on the CPU (at most [`MAX_AHEAD`] per
    /// wake-up, a tenth of its time, and only with a CPU to spare), so the
    /// expiry is on time. The POSIX layer calls it when a timer that fires
    /// is made for a real-time thread. Returns the priority the workers
    /// run at (0: not raised, e.g. without the privilege).
    ///
    /// # Errors
    /// [`TimerError::InvalidArgument`] for a priority that is no
    /// `SCHED_FIFO` one (outside `sched_get_priority_min(SCHED_FIFO)
    /// ..= sched_get_priority_max(SCHED_FIFO)`, 1..=99 on Linux), which
    /// `sched_setscheduler()` refuses with `EINVAL` too; nothing changes.
    pub fn serve_realtime(&self, priority: i32) -> Result<i32, TimerError> {
        if !realtime::fifo_priorities().contains(&priority) {
            return Err(TimerError::InvalidArgument);
        }
        Ok(self.core.realtime.serve(priority))
    }

    /// The `SCHED_FIFO` priority the workers run at since
    /// [`serve_realtime`](Self::serve_realtime) (0: never raised).
    pub fn realtime_priority(&self) -> i32 {
        self.core.realtime.priority()
    }

    /// Runs the stall monitor on this thread until
    /// [`stop_monitor`](Self::stop_monitor): it wakes every tick while some
    /// registered worker is active, pulls the movable timers of workers
    /// that missed their tick points for longer than the stall bound, and
    /// expires them itself when nobody else is active. A
    /// [`Runtime`](crate::Runtime) runs one; run it yourself with the
    /// integration API. One monitor per system.
    pub fn run_monitor(&self) {
        self.core.nohz.monitor_loop(&self.core.bases);
    }

    /// Ends [`run_monitor`](Self::run_monitor) (now, or at once when it is
    /// next called).
    pub fn stop_monitor(&self) {
        self.core.nohz.monitor.stop();
    }

    /// Shuts the system down now, as dropping it does, while handles to it
    /// live on: every pending timer is cancelled (its callback never runs;
    /// [`Timer::is_pending`](crate::Timer::is_pending) and
    /// [`HrTimer::is_queued`](crate::HrTimer::is_queued) read `false`, a
    /// POSIX timer reads as disarmed), and from then on every arm, re-arm
    /// or creation that can fail (`modify`, `add`, `HrTimer::start`,
    /// [`hrtimer_on`](Self::hrtimer_on), POSIX `timer_create`,
    /// `timer_settime` and `timerfd_create`, a sleep,
    /// [`register_worker`](Self::register_worker)) returns
    /// [`TimerError::Shutdown`](crate::TimerError::Shutdown), as tokio's
    /// timers fail once their runtime has shut down
    /// (`tokio::time::error::Error::shutdown`). A sleep waiting on one of
    /// the system's workers ends with that error; an async sleep's poll
    /// sees it. A callback running now finishes; the stall monitor
    /// ([`run_monitor`](Self::run_monitor)) returns. Idempotent; it never
    /// blocks on a callback.
    ///
    /// [`Runtime::shutdown`](crate::Runtime::shutdown) (and a runtime's
    /// drop) calls it: a system whose worker threads have stopped fires
    /// nothing, so it accepts nothing. A program that runs its own workers
    /// ([`register_worker`](Self::register_worker)) calls it when it stops
    /// them.
    pub fn shutdown(&self) {
        if !self.core.bases.mark_shut_down() {
            return;
        }
        for base in self.core.bases.all() {
            base.shut_down();
        }
        self.core.nohz.hr.shutdown();
        self.core.nohz.monitor.stop();
        // A thread sleeping on a worker (`Sleeper` inside a job) waits for
        // an hrtimer that just went: its waker makes it look again.
        for w in 0..self.workers() {
            self.core.nohz.wake(w);
        }
    }

    /// [`TimerError::Shutdown`] once the system has shut down.
    pub(crate) fn check_running(&self) -> Result<(), TimerError> {
        match self.is_shut_down() {
            true => Err(TimerError::Shutdown),
            false => Ok(()),
        }
    }

    /// Whether the system has shut down ([`shutdown`](Self::shutdown)):
    /// then it accepts no timers. tokio's time driver's `is_shutdown`.
    pub fn is_shut_down(&self) -> bool {
        self.core.bases.is_shut_down()
    }

    /// Takes `worker` offline at run time (the kernel's CPU hot-unplug):
    /// no timer is armed on it or expired by it any more, and its pending
    /// timers, pinned ones and hrtimers included, move to an online worker (the next
    /// online one after it), which fires them as it would its own: nothing
    /// is lost, nothing fires twice, nothing fires earlier than its bucket
    /// would have (a moved timer lands at its bucket's tick). A callback
    /// running on it finishes first (this waits for it); a moving timer
    /// reads as pending, and `delete`, `delete_sync` or a re-arm of it waits
    /// until it has landed. Threads bound to it keep arming, on the worker
    /// it is routed to. Returns how many timers moved.
    ///
    /// # Errors
    /// [`TimerError::NoSuchWorker`]; [`TimerError::WorkerState`] if it is
    /// already offline; [`TimerError::LastWorker`] if no other worker is
    /// online; [`TimerError::InCallback`] inside a timer callback (the wait
    /// could be for that very callback).
    pub fn offline(&self, worker: usize) -> Result<usize, TimerError> {
        // (Timers that land on an idle target before it planned to wake
        // call the wake hook as any arm does.)
        let serial = self.core.bases.hotplug_serial();
        let (moved, to) = self.core.bases.take_offline(worker, &serial)?;
        let (hr_moved, wake) = self.core.nohz.hr.take_offline(worker, to);
        let top = self.core.nohz.hier.offline(worker);
        drop(serial);
        self.core.nohz.act(top);
        for w in wake {
            // The target worker, and a thread that serves (`serve.rs`).
            crate::hrtimer::HrEnv::wake(&self.core, w);
        }
        Ok(moved + hr_moved)
    }

    /// Brings `worker` back online (the kernel's CPU hot-plug): timers are
    /// armed on it again, and if it was registered it takes part in the
    /// pull model again, as an idle worker until its thread (woken now)
    /// passes its next idle exit. Timers that moved away stay where they
    /// are.
    ///
    /// # Errors
    /// [`TimerError::NoSuchWorker`]; [`TimerError::WorkerState`] if it is
    /// already online.
    pub fn online(&self, worker: usize) -> Result<(), TimerError> {
        let serial = self.core.bases.hotplug_serial();
        self.core.bases.check_worker(worker)?;
        if self.core.bases.is_online(worker) {
            return Err(TimerError::WorkerState {
                worker: worker as u32,
                online: true,
            });
        }
        // Member (idle) first, then open the bases: an arm that lands there
        // reaches `new_timer` with the worker already a member.
        self.core.nohz.hier.online(worker);
        self.core.bases.bring_online(worker, &serial);
        self.core.nohz.hr.bring_online(worker);
        drop(serial);
        self.core.nohz.wake(worker);
        Ok(())
    }

    /// Whether `worker` is online (`false` for an index out of range).
    pub fn is_online(&self, worker: usize) -> bool {
        worker < self.workers() && self.core.bases.is_online(worker)
    }

    /// Benchmark only: makes `worker` an active member of the hierarchy
    /// without a thread (a "busy" worker for the pull-model tables).
    #[cfg(feature = "bench-internals")]
    #[doc(hidden)]
    pub fn bench_activate(&self, worker: usize) {
        self.core
            .nohz
            .hier
            .join(worker, self.core.bases.ticks.now_precise());
    }

    /// Benchmark only: the kernel's push heuristic before 6.9 of
    /// `get_nohz_timer_target()`: the calling thread's worker if it is
    /// busy, else the nearest busy worker (the next ones in index order,
    /// which the hierarchy groups by proximity), else its own.
    #[cfg(feature = "bench-internals")]
    #[doc(hidden)]
    pub fn push_target(&self) -> usize {
        let me = self.current_worker();
        let n = self.workers();
        (0..n)
            .map(|d| (me + d) % n)
            .find(|&w| self.core.nohz.hier.is_active(w))
            .unwrap_or(me)
    }

    /// The hrtimer environment, for layers above (POSIX timers).
    pub(crate) fn env(&self) -> Arc<Core> {
        self.env.clone()
    }

    /// The slot of the layer above that keeps state per system (see the
    /// field `above`).
    #[cfg(not(loom))]
    pub(crate) fn above(&self) -> &std::sync::OnceLock<Box<dyn std::any::Any + Send + Sync>> {
        &self.above
    }

    /// The crate's own view, for the simulator.
    pub(crate) fn core(&self) -> &Core {
        &self.core
    }

    /// A reusable, interruptible sleep whose timer belongs to this system
    /// (the kernel's `hrtimer_sleeper`); its sleeps return
    /// [`TimerError::Shutdown`] once the system has shut down.
    pub fn sleeper(&self) -> Sleeper {
        Sleeper::new(self.env.clone())
    }

    /// Blocks this thread for at least `d` (rounded up to whole ticks). The
    /// kernel's `schedule_timeout()`.
    ///
    /// # Errors
    /// As [`Sleeper::sleep_until`].
    #[doc(alias = "schedule_timeout")]
    pub fn sleep(&self, d: Duration) -> Result<(), TimerError> {
        self.sleeper().sleep(d).map(drop)
    }

    /// Blocks this thread until the clock has reached `deadline` (see
    /// [`Sleeper::sleep_until`]).
    ///
    /// # Errors
    /// As [`Sleeper::sleep_until`].
    pub fn sleep_until(&self, deadline: impl Into<Expiry>) -> Result<(), TimerError> {
        self.sleeper().sleep_until(deadline).map(drop)
    }
}

impl std::fmt::Debug for TimerSystem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimerSystem")
            .field("workers", &self.workers())
            .field("tick", &self.tick())
            .finish_non_exhaustive()
    }
}
