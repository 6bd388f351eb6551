//! [`Builder`]: a [`TimerSystem`]'s settings, and the two ways to make
//! one: [`start`](Builder::start) (with worker threads, a
//! [`Runtime`](crate::Runtime); added by the runtime layer) or
//! [`build_without_threads`](Builder::build_without_threads) (the caller
//! drives expiry).

use super::{Core, TimerSystem};
use crate::migration::{Hierarchy, Topology};
use crate::nohz::Nohz;
use crate::time::{Clock, TickSource};
use crate::timer_list::base::{Bases, BasesConfig, PanicHook, Summaries};
use crate::TimerError;
use std::sync::Arc;
use std::time::Duration;

/// The most workers a [`TimerSystem`] may have: 1,024, the CPUs a
/// `cpu_set_t` holds (glibc's `CPU_SETSIZE`, the most the library sees a
/// process run on), so that one worker per CPU is always within it. A
/// larger count ([`Builder::workers`], [`Runtime::new`](crate::Runtime::new),
/// C's `utimer_open`) is refused with [`TimerError::TooManyWorkers`]
/// (`io::ErrorKind::InvalidInput` from a [`Runtime`](crate::Runtime),
/// `EINVAL` in C) before any thread starts.
pub const MAX_WORKERS: usize = 1024;

/// Configures a [`TimerSystem`]: the number of workers, the tick, the
/// clock, and the rest below. Start it with threads of its own
/// ([`start`](Self::start), which gives a [`Runtime`](crate::Runtime)), or
/// build a bare system whose timers fire only when a thread runs expiry
/// ([`build_without_threads`](Self::build_without_threads)).
#[derive(Clone)]
pub struct Builder {
    workers: usize,
    tick: Duration,
    clock: Clock,
    stats: bool,
    capacity: usize,
    panic_hook: Option<PanicHook>,
    topology: Option<Topology>,
    pin: Option<Vec<usize>>,
    stall_bound: u64,
    pull: bool,
    sleepers_serve: bool,
}

impl std::fmt::Debug for Builder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Builder")
            .field("workers", &self.workers)
            .field("tick", &self.tick)
            .field("clock", &self.clock)
            .field("stats", &self.stats)
            .field("capacity", &self.capacity)
            .field("panic_hook", &self.panic_hook.is_some())
            .field("topology", &self.topology)
            .field("pin", &self.pin)
            .field("stall_bound", &self.stall_bound)
            .field("pull", &self.pull)
            .field("sleepers_serve", &self.sleepers_serve)
            .finish()
    }
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            workers: process_cpus(),
            tick: Duration::from_millis(1),
            clock: Clock::monotonic(),
            stats: false,
            capacity: 0,
            panic_hook: None,
            topology: None,
            pin: None,
            stall_bound: 2,
            pull: true,
            sleepers_serve: false,
        }
    }
}

impl Builder {
    /// Number of workers, the kernel's `nr_cpu_ids` (default, and for 0:
    /// one per CPU the process may run on, as its main thread's affinity
    /// says: not the calling thread's, which may be pinned). At most
    /// [`MAX_WORKERS`]: a larger count makes the build fail with
    /// [`TimerError::TooManyWorkers`] (and [`start`](Self::start) with
    /// `io::ErrorKind::InvalidInput`) before anything is made.
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = match n {
            0 => process_cpus(),
            n => n,
        };
        self
    }

    /// The number of workers the system will have (see
    /// [`workers`](Self::workers)).
    pub fn worker_count(&self) -> usize {
        self.workers
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

    /// Describes the machine for the pull model's hierarchy instead of
    /// detecting it: one NUMA node per worker (see [`Topology`]). Tests and
    /// the simulator use it to describe any machine.
    pub fn topology(mut self, topology: Topology) -> Self {
        self.topology = Some(topology);
        self
    }

    /// Pins worker `i` to CPU `cpus[i % cpus.len()]`: a
    /// [`Runtime`](crate::Runtime) sets its threads' affinity so, and the
    /// detected topology puts each worker on that CPU's node. (A thread of
    /// your own registered with the integration API is yours to pin.)
    pub fn pin_workers(mut self, cpus: Vec<usize>) -> Self {
        self.pin = (!cpus.is_empty()).then_some(cpus);
        self
    }

    /// A worker that has not reached a tick point for more than this many
    /// ticks while active counts as stalled: its movable timers are pulled
    /// by other workers (default 2; at least 1). See the `migration` module
    /// docs.
    pub fn stall_bound(mut self, ticks: u64) -> Self {
        self.stall_bound = ticks.max(1);
        self
    }

    /// Benchmark only: the pull model (default on) off. Idle registered
    /// workers then wake for their own movable timers and nobody pulls a
    /// stalled worker's, as in the kernel before 6.9 (`utimer bench`'s
    /// pull-model tables compare the two).
    #[cfg(feature = "bench-internals")]
    #[doc(hidden)]
    pub fn pull_model(mut self, on: bool) -> Self {
        self.pull = on;
        self
    }

    /// Lets a thread that sleeps in [`TimerSystem::serve`] fire the
    /// system's hrtimers itself, as a CPU's own timer interrupt fires its
    /// hrtimers in the kernel, while the [`Runtime`](crate::Runtime)'s
    /// workers sleep past them (default off; see [`Serving`]). The
    /// runtime's workers then sleep on an alarm that such a thread moves
    /// without waking them (one timerfd per worker). A system without
    /// threads of its own ignores it: [`TimerSystem::serve`] answers
    /// `None`.
    ///
    /// [`Serving`]: crate::Serving
    pub fn sleepers_serve(mut self, on: bool) -> Self {
        self.sleepers_serve = on;
        self
    }

    /// One worker pinned to each CPU the process may run on (its main
    /// thread's affinity, not the calling thread's), as the kernel keeps
    /// timer bases per CPU: [`workers`](Self::workers) and
    /// [`pin_workers`](Self::pin_workers) in one. A thread that is no
    /// worker's then arms on the worker of the CPU it first armed from.
    /// Unchanged if the set cannot be read.
    pub fn pin_to_process_cpus(self) -> Self {
        let cpus = process_cpu_list();
        if cpus.is_empty() {
            return self;
        }
        self.workers(cpus.len()).pin_workers(cpus)
    }

    /// [`TimerError::TooManyWorkers`] for more than [`MAX_WORKERS`]
    /// workers: checked before anything is made or started.
    pub(crate) fn check_workers(&self) -> Result<(), TimerError> {
        if self.workers > MAX_WORKERS {
            return Err(TimerError::TooManyWorkers {
                requested: u32::try_from(self.workers).unwrap_or(u32::MAX),
            });
        }
        Ok(())
    }

    /// The CPUs given to [`pin_workers`](Self::pin_workers).
    pub(crate) fn pinned_cpus(&self) -> Option<&[usize]> {
        self.pin.as_deref()
    }

    /// Creates the system **without threads of its own**: its timers fire
    /// only when a thread runs expiry ([`TimerSystem::run_expired`], or a
    /// worker registered with [`TimerSystem::register_worker`]). For an
    /// event loop that owns its threads, or a test that drives a manual
    /// [`Clock`]; [`start`](Self::start) runs worker threads instead.
    ///
    /// # Panics
    /// If more than [`MAX_WORKERS`] workers were asked for, or a
    /// [`topology`](Self::topology) override describes another number of
    /// workers; [`try_build_without_threads`](Self::try_build_without_threads)
    /// returns the error instead.
    pub fn build_without_threads(self) -> TimerSystem {
        match self.try_build_without_threads() {
            Ok(sys) => sys,
            Err(e) => panic!("utimer::Builder::build: {e}"),
        }
    }

    /// [`build_without_threads`](Self::build_without_threads), returning
    /// the error rather than panicking.
    ///
    /// # Errors
    /// [`TimerError::TooManyWorkers`] for more than [`MAX_WORKERS`]
    /// workers; [`TimerError::BadTopology`] if a
    /// [`topology`](Self::topology) override describes another number of
    /// workers.
    pub fn try_build_without_threads(self) -> Result<TimerSystem, TimerError> {
        self.check_workers()?;
        let topology = match self.topology {
            Some(t) => {
                t.check(self.workers)?;
                t
            }
            None => Topology::detect(self.workers, self.pin.as_deref()),
        };
        let ticks = TickSource::new(self.clock, self.tick);
        let summaries = Arc::new(Summaries::new(self.workers));
        let nohz = Nohz::new(
            self.workers,
            Hierarchy::new(&topology),
            self.stall_bound,
            self.pull,
            summaries.clone(),
            self.sleepers_serve,
        );
        let config = BasesConfig {
            stats: self.stats,
            capacity: self.capacity,
            pinned: self.pin.clone(),
        };
        let bases = Bases::new(
            self.workers,
            ticks,
            &config,
            nohz.clone(),
            self.panic_hook,
            summaries,
        );
        let serve = Arc::new(super::serve::Serve::new());
        let kick = serve.clone();
        let _ = nohz.serve_kick.set(Box::new(move || kick.kick()));
        let core = Core {
            serve,
            bases,
            nohz,
            realtime: Default::default(),
        };
        Ok(TimerSystem {
            env: Arc::new(core.clone()),
            core,
            #[cfg(not(loom))]
            above: std::sync::OnceLock::new(),
        })
    }
}

/// The default worker count: the process's CPUs (`sync/thread.rs`).
#[cfg(not(loom))]
fn process_cpus() -> usize {
    crate::sync::thread::process_cpus()
}

/// The process's CPUs (`sync/thread.rs`).
#[cfg(not(loom))]
fn process_cpu_list() -> Vec<usize> {
    crate::sync::thread::process_cpu_list()
}

/// Under loom there are no real threads to count.
#[cfg(loom)]
fn process_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Under loom there are no real threads to pin.
#[cfg(loom)]
fn process_cpu_list() -> Vec<usize> {
    Vec::new()
}
