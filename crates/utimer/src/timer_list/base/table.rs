//! The table of every worker's bases, and what it owns besides them: the
//! clock, the binding of threads to workers and the hooks.
//!
//! # Choosing a base without a global lock
//!
//! Like the kernel's `mod_timer()`, arming a timer queues it on the caller's
//! own worker: the worker the thread entered, or else the thread's *home*
//! worker, assigned once per thread round-robin from a global counter (one
//! relaxed atomic add per thread lifetime). No lock, no shared cache line.
//!
//! # Hooks
//!
//! The base layer must sometimes act on behalf of the layers above it
//! without importing them. [`Hooks`] is that seam, installed by the system
//! when it builds the table:
//!
//! * **whom to wake** when an enqueue lands on an idle worker's base before
//!   it planned to wake: one policy point (today: that worker; with the pull
//!   model, the hierarchy decides);
//! * **what to run while blocked**: a worker's thread waiting inside utimer
//!   (`delete_sync` on a callback elsewhere) keeps running its own expired
//!   timers, as a kernel CPU keeps taking interrupts while a task sleeps;
//! * **whom to tell about a panic** in a callback.

use super::{Base, BaseKind, BaseStats, Summaries, KINDS};
use crate::sync::thread_local;
use crate::time::TickSource;
use crate::timer_list::entry::{DEFERRABLE, PINNED};
use crate::TimerError;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::Arc;

/// Called with the payload of a callback's panic.
pub(crate) type PanicHook = Arc<dyn Fn(&(dyn std::any::Any + Send)) + Send + Sync>;

/// What the base layer asks of the layers above it (see the module docs).
pub(crate) trait Hooks: Send + Sync {
    /// An enqueue on `worker`'s idle `kind` base fires at `expiry`, before
    /// the worker planned to wake. Called with no lock held.
    fn timer_on_idle(&self, worker: usize, kind: BaseKind, expiry: u64);

    /// The thread bound to `worker` is blocked inside utimer: run whatever
    /// of that worker is due, and return the tick it next needs to run
    /// again (`None`: nothing queued that would wake it).
    fn run_blocked(&self, bases: &Bases, worker: usize) -> Option<u64>;
}

/// Settings the table copies into each base.
#[derive(Clone, Debug)]
pub(crate) struct BasesConfig {
    /// Count lock-free `modify` hits.
    pub(crate) stats: bool,
    /// Room for this many pending timers per base.
    pub(crate) capacity: usize,
    /// The CPU each worker is pinned to (`Builder::pin_workers`): then a
    /// thread that is no worker's arms on the worker of the CPU it first
    /// armed from, as the kernel arms on the current CPU.
    pub(crate) pinned: Option<Vec<usize>>,
}

/// Every worker's three bases, the clock, and the hooks.
pub(crate) struct Bases {
    /// `worker * KINDS + kind`.
    bases: Box<[Base]>,
    workers: usize,
    pub(crate) ticks: TickSource,
    hooks: Arc<dyn Hooks>,
    panic_hook: Option<PanicHook>,
    pub(crate) hotplug: super::Hotplug,
    /// Every worker's next-event summary (`sync/summary.rs`), shared with the
    /// hrtimer bases.
    pub(crate) summaries: Arc<Summaries>,
    /// `cpu_worker[cpu]`: the worker pinned to `cpu` (`NO_WORKER`: none);
    /// empty when the workers are not pinned.
    cpu_worker: Box<[u32]>,
    /// This table's identity for thread bindings: never reused (an address
    /// could be, by a table allocated after this one is freed, and a
    /// binding restored out of order could then name the wrong table).
    id: u64,
    /// Set once, when the system shuts down (`TimerSystem::shutdown`),
    /// before any base is closed: what the callers that hold no base lock
    /// (POSIX `timer_create`, a sleep, registering a worker) look at. The
    /// bases' own `DEAD` flag, under their locks, is what arms obey.
    shut_down: AtomicBool,
}

/// Table identities; 0 is "none".
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The table (by id) and worker this thread entered; id 0: none.
    static ENTERED: Cell<(u64, usize)> = Cell::new((0, 0));
    /// This thread's home worker number (before reduction modulo workers).
    static HOME: Cell<usize> = Cell::new(usize::MAX);
    /// The CPU this thread first armed from, for tables whose workers are
    /// pinned (`usize::MAX`: not asked yet).
    static HOME_CPU: Cell<usize> = Cell::new(usize::MAX);
}

/// `Bases::cpu_worker`: no worker on that CPU.
const NO_WORKER: u32 = u32::MAX;

static NEXT_HOME: AtomicUsize = AtomicUsize::new(0);

/// What [`Bases::enter`] replaced; give it back to [`Bases::leave`].
#[derive(Copy, Clone, Debug)]
pub(crate) struct Binding((u64, usize));

impl Bases {
    pub(crate) fn new(
        workers: usize,
        ticks: TickSource,
        config: &BasesConfig,
        hooks: Arc<dyn Hooks>,
        panic_hook: Option<PanicHook>,
        summaries: Arc<Summaries>,
    ) -> Arc<Bases> {
        let clk = ticks.now();
        let manual = ticks
            .manual_word()
            .map_or(std::ptr::null(), |w| w as *const _);
        Arc::new_cyclic(|me| Bases {
            bases: (0..workers * KINDS)
                .map(|i| {
                    let summary = if i % KINDS == BaseKind::Deferrable as usize {
                        summaries.sink()
                    } else {
                        summaries.of(i / KINDS)
                    };
                    Base::new(i as u32, clk, me.as_ptr(), manual, summary, config)
                })
                .collect(),
            workers,
            ticks,
            hooks,
            panic_hook,
            hotplug: super::Hotplug::new(workers),
            summaries,
            cpu_worker: cpu_worker_table(workers, config.pinned.as_deref()),
            id: NEXT_ID.fetch_add(1, Relaxed),
            shut_down: AtomicBool::new(false),
        })
    }

    /// Marks the system shut down; whether this call did (the first).
    pub(crate) fn mark_shut_down(&self) -> bool {
        !self.shut_down.swap(true, SeqCst)
    }

    /// Whether the system has shut down (see the field).
    #[inline]
    pub(crate) fn is_shut_down(&self) -> bool {
        self.shut_down.load(SeqCst)
    }

    /// Number of workers.
    #[inline]
    pub(crate) fn workers(&self) -> usize {
        self.workers
    }

    pub(crate) fn hooks(&self) -> &dyn Hooks {
        &*self.hooks
    }

    pub(crate) fn panic_hook(&self) -> Option<&PanicHook> {
        self.panic_hook.as_ref()
    }

    /// Every base.
    pub(crate) fn all(&self) -> &[Base] {
        &self.bases
    }

    /// `worker`'s three bases.
    #[inline]
    pub(crate) fn of_worker(&self, worker: usize) -> &[Base] {
        &self.bases[worker * KINDS..(worker + 1) * KINDS]
    }

    /// `worker`'s base of `kind`.
    #[inline]
    pub(crate) fn base(&self, worker: usize, kind: BaseKind) -> &Base {
        &self.bases[worker * KINDS + kind as usize]
    }

    /// The index of the base a timer with `flags` uses on `worker`.
    #[inline(always)]
    pub(crate) fn base_index(worker: usize, flags: u32) -> usize {
        let kind = if flags & DEFERRABLE != 0 {
            BaseKind::Deferrable
        } else if flags & PINNED != 0 {
            BaseKind::Local
        } else {
            BaseKind::Global
        };
        worker * KINDS + kind as usize
    }

    /// The base a timer with `flags` uses on `worker`.
    #[inline(always)]
    pub(crate) fn base_for(&self, worker: usize, flags: u32) -> &Base {
        &self.bases[Self::base_index(worker, flags)]
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

    /// Takes the strong count a new timer holds on its table.
    pub(crate) fn retain_for_timer(self: &Arc<Self>) {
        std::mem::forget(self.clone());
    }

    /// Gives back a count taken by [`retain_for_timer`](Self::retain_for_timer).
    ///
    /// # Safety
    /// `table` came from such a table, and the count is given back once.
    pub(crate) unsafe fn release_for_timer(table: *const Bases) {
        // SAFETY: forwarded from the caller.
        unsafe { Arc::decrement_strong_count(table) }
    }

    /// The worker this thread entered, if it entered one of this table's.
    #[inline]
    pub(crate) fn entered_worker(&self) -> Option<usize> {
        let (table, worker) = ENTERED.with(|e| e.get());
        (table == self.id).then_some(worker)
    }

    /// The worker whose bases this thread arms timers on.
    #[inline]
    pub(crate) fn current_worker(&self) -> usize {
        let (table, worker) = ENTERED.with(|e| e.get());
        if table == self.id {
            return worker;
        }
        if !self.cpu_worker.is_empty() {
            let cpu = HOME_CPU.with(|c| {
                if c.get() == usize::MAX {
                    c.set(current_cpu());
                }
                c.get()
            });
            if let Some(&w) = self.cpu_worker.get(cpu) {
                if w != NO_WORKER {
                    return w as usize;
                }
            }
        }
        let home = HOME.with(|h| {
            if h.get() == usize::MAX {
                h.set(NEXT_HOME.fetch_add(1, Relaxed));
            }
            h.get()
        });
        home % self.workers
    }

    /// The worker whose bases a timer armed now should go to, for timers
    /// armed by threads that move between CPUs (an executor's tasks): as
    /// [`current_worker`](Self::current_worker), except that on a table
    /// whose workers are pinned it is the worker of the CPU the thread
    /// runs on at this moment (one `sched_getcpu`, a few ns through
    /// `rseq`), as the kernel queues on the local CPU's base. Two threads
    /// that arm at the same time run on two CPUs, so they never share a
    /// base.
    #[inline]
    pub(crate) fn local_worker(&self) -> usize {
        if !self.cpu_worker.is_empty() && self.entered_worker().is_none() {
            if let Some(&w) = self.cpu_worker.get(current_cpu()) {
                if w != NO_WORKER {
                    return w as usize;
                }
            }
        }
        self.current_worker()
    }

    /// Binds this thread to `worker` (checked by the caller) until
    /// [`leave`](Self::leave) is given the returned binding.
    pub(crate) fn enter(&self, worker: usize) -> Binding {
        debug_assert!(worker < self.workers);
        Binding(ENTERED.with(|e| e.replace((self.id, worker))))
    }

    /// Restores the binding that [`enter`](Self::enter) replaced.
    pub(crate) fn leave(previous: Binding) {
        ENTERED.with(|e| e.set(previous.0));
    }

    /// Statistics of one base.
    pub(crate) fn stats_of(base: &Base) -> BaseStats {
        let matched = base.matched.0.load(Relaxed);
        let guard = base.lock();
        BaseStats::from_counters(&guard.stats, guard.wheel.len(), matched)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn each_flag_combination_picks_its_kind() {
        let kinds = [
            (0, BaseKind::Global),
            (PINNED, BaseKind::Local),
            (DEFERRABLE, BaseKind::Deferrable),
            (PINNED | DEFERRABLE, BaseKind::Deferrable),
        ];
        for worker in [0, 1, 7] {
            for (flags, kind) in kinds {
                assert_eq!(
                    Bases::base_index(worker, flags),
                    worker * KINDS + kind as usize,
                    "flags {flags:#x}"
                );
            }
        }
    }
}

/// `Bases::cpu_worker` for workers pinned to `pinned` (worker `i` on
/// `pinned[i % len]`; the first worker of a CPU wins).
fn cpu_worker_table(workers: usize, pinned: Option<&[usize]>) -> Box<[u32]> {
    let Some(cpus) = pinned.filter(|c| !c.is_empty()) else {
        return Box::new([]);
    };
    let max = (0..workers)
        .map(|w| cpus[w % cpus.len()])
        .max()
        .unwrap_or(0);
    let mut table = vec![NO_WORKER; max.min(1 << 16) + 1];
    for w in 0..workers {
        if let Some(slot) = table.get_mut(cpus[w % cpus.len()]) {
            if *slot == NO_WORKER {
                *slot = w as u32;
            }
        }
    }
    table.into_boxed_slice()
}

/// The CPU the calling thread runs on (0 if unknown).
fn current_cpu() -> usize {
    #[cfg(all(target_os = "linux", not(miri)))]
    {
        // SAFETY: sched_getcpu takes nothing.
        let c = unsafe { libc::sched_getcpu() };
        if c >= 0 {
            return c as usize;
        }
    }
    0
}
