//! [`Runtime`]: worker threads that run timer callbacks and jobs, and sleep
//! without a periodic tick.
//!
//! Each thread is one worker of a [`TimerSystem`] (registered through the
//! integration API, [`crate::Worker`]) with a job queue and a parker:
//!
//! ```text
//! loop {
//!     token = parker.token()               // before looking for work
//!     shutdown? exit
//!     run_expired()                        // timers due now
//!     run queued jobs, and between two jobs
//!         run_expired() once a tick passed // busy: tick granularity
//!     nothing ran?
//!         idle_enter(): next timer tick    // publish it in the bases
//!         park(token) until then, or until unpark // a job, an earlier timer, shutdown
//!         idle_exit()
//! }
//! ```
//!
//! An idle worker has no timer interrupt at all: with no pinned timers it
//! sleeps until something arrives. Its movable timers are expired by a
//! busy worker (the pull model, `migration/`), and the last worker to go
//! idle wakes for the first movable timer of all. A monitor thread
//! (`utimer-monitor`) watches for workers stuck in long jobs and has their
//! movable timers pulled (see [`Builder::stall_bound`]).
//!
//! Each worker sleeps on a futex parker (`sync/parker.rs`, with its loom
//! model): it takes a token before it looks for work and sleeps only while
//! no `unpark` came since, so a job queued or a timer armed after the look
//! is never missed. In a system whose sleeping threads may serve the
//! hrtimers ([`Builder::sleepers_serve`]), it sleeps on an alarm instead,
//! by the same token rule, whose time such a thread moves without waking
//! it (`system/serve.rs`).
//!
//! Shutdown is orderly. The system shuts down first
//! ([`TimerSystem::shutdown`]): timers still pending are cancelled (their
//! callbacks never run), and arming, re-arming or creating one through a
//! handle kept past the runtime returns
//! [`TimerError::Shutdown`](crate::TimerError::Shutdown): a system with no
//! threads left to fire its timers accepts none. Then every thread
//! finishes the job or callback it is running and exits (a job sleeping on
//! its worker wakes with that error); jobs still queued are dropped
//! without running; the threads are joined. The shutdown flag is looked
//! at after the parker's token is taken, so a shutdown that lands between
//! the look and the park still wakes the worker.
//!
//! A job may drop or shut down its own runtime: the other workers are
//! stopped and joined, and the worker running that job exits once the job
//! returns (a thread cannot join itself). A job that sleeps
//! ([`TimerSystem::sleep`]) keeps its worker's timers running while it
//! waits, so every worker may sleep at once.

use super::clockwatch::ClockWatch;
use crate::nohz::Idle;
use crate::sync::parker::Parker;
use crate::sync::spin_hint;
use crate::sync::thread::spawn_masked;
use crate::system::serve::WorkerSleep;
use crate::system::{cpu_to_spare, Ahead};
use crate::{Builder, TimerSystem};
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

type Job = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Slot {
    jobs: Mutex<VecDeque<Job>>,
    parker: Parker,
    /// Times this worker woke from a park (for tests and `utimer bench`).
    wakeups: AtomicU64,
    /// Jobs that panicked (caught; the worker goes on).
    job_panics: AtomicU64,
}

struct Pool {
    slots: Box<[Slot]>,
    shutdown: AtomicBool,
    next: AtomicUsize,
}

impl Builder {
    /// Starts a [`Runtime`] with these settings: one thread per worker,
    /// which expires its worker's timers and sleeps in between, and the
    /// pull model's monitor. The same as [`Runtime::with_builder`].
    ///
    /// # Errors
    /// As [`Runtime::with_builder`].
    pub fn start(self) -> std::io::Result<Runtime> {
        Runtime::with_builder(self)
    }
}

/// Worker threads over a [`TimerSystem`]: the embedded default runtime.
pub struct Runtime {
    sys: Arc<TimerSystem>,
    pool: Arc<Pool>,
    threads: Vec<JoinHandle<()>>,
    clockwatch: Option<ClockWatch>,
}

impl Runtime {
    /// A runtime with `workers` threads (0: one per CPU the process may run
    /// on) and otherwise default settings (monotonic clock, 1 ms tick):
    /// tokio's `runtime::Builder::worker_threads`, the kernel's one timer
    /// base per CPU.
    ///
    /// # Errors
    /// `io::ErrorKind::InvalidInput` for more than
    /// [`MAX_WORKERS`](crate::MAX_WORKERS) workers, before any thread
    /// starts; as [`with_builder`](Self::with_builder) otherwise.
    pub fn new(workers: usize) -> std::io::Result<Runtime> {
        Runtime::with_builder(TimerSystem::builder().workers(workers))
    }

    /// A runtime with one thread per worker of the system `builder` makes
    /// (by default, one per available CPU).
    ///
    /// # Errors
    /// `io::ErrorKind::InvalidInput` (its inner error a
    /// [`TimerError`](crate::TimerError)) if the builder's settings are
    /// refused: more than [`MAX_WORKERS`](crate::MAX_WORKERS) workers
    /// ([`TimerError::TooManyWorkers`](crate::TimerError::TooManyWorkers)),
    /// a topology of another size; checked before any thread starts. The
    /// system's error if a thread cannot be spawned (`WouldBlock`,
    /// `EAGAIN`, at the process's thread limit); the ones already started
    /// are stopped.
    pub fn with_builder(builder: Builder) -> std::io::Result<Runtime> {
        let pin = builder.pinned_cpus().map(<[usize]>::to_vec);
        let sys = builder
            .try_build_without_threads()
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        let sys = Arc::new(sys);
        if let Some(serve) = sys.serve_state() {
            // Threads may serve the hrtimers: each worker sleeps on an
            // alarm they can move (`system/serve.rs`).
            let sleeps = (0..sys.workers())
                .map(|_| WorkerSleep::new())
                .collect::<std::io::Result<Box<[_]>>>()?;
            serve.install(sleeps);
        }
        let pool = Arc::new(Pool {
            slots: (0..sys.workers()).map(|_| Slot::default()).collect(),
            shutdown: AtomicBool::new(false),
            next: AtomicUsize::new(0),
        });
        let mut rt = Runtime {
            sys,
            pool,
            threads: Vec::new(),
            clockwatch: None,
        };
        for w in 0..rt.sys.workers() {
            let (sys, pool) = (rt.sys.clone(), rt.pool.clone());
            let cpu = pin.as_ref().map(|p| p[w % p.len()]);
            let handle = spawn_masked(format!("utimer-worker-{w}"), move || {
                if let Some(cpu) = cpu {
                    pin_to(cpu);
                }
                precise_sleeps();
                worker_main(&sys, &pool, w)
            })?;
            rt.threads.push(handle);
        }
        let sys = rt.sys.clone();
        let monitor = spawn_masked("utimer-monitor".into(), move || sys.run_monitor())?;
        rt.threads.push(monitor);
        // Best effort: without it, REALTIME timers still fire, at the wall
        // time the offset said when their worker went to sleep.
        if let Ok((watch, handle)) = ClockWatch::start(rt.sys.clone()) {
            rt.clockwatch = Some(watch);
            rt.threads.push(handle);
        }
        Ok(rt)
    }

    /// The timer system the workers serve: create and arm timers through it
    /// from any thread.
    pub fn system(&self) -> &TimerSystem {
        &self.sys
    }

    /// A shared handle to the system, for jobs and other threads that need
    /// to create timers or sleep. While one is alive the system outlives
    /// [`shutdown`](Self::shutdown), shut down: its pending timers are
    /// cancelled and it accepts no more
    /// ([`TimerError::Shutdown`](crate::TimerError::Shutdown); see
    /// [`TimerSystem::shutdown`]).
    pub fn system_arc(&self) -> Arc<TimerSystem> {
        self.sys.clone()
    }

    /// Runs `job` on a worker (round robin), waking it if it sleeps. A
    /// panicking job is caught and counted; the worker goes on.
    pub fn spawn(&self, job: impl FnOnce() + Send + 'static) {
        let w = self.pool.next.fetch_add(1, SeqCst) % self.pool.slots.len();
        self.spawn_on(w, job);
    }

    /// Runs `job` on worker `worker` (modulo the number of workers).
    pub fn spawn_on(&self, worker: usize, job: impl FnOnce() + Send + 'static) {
        let w = worker % self.pool.slots.len();
        let slot = &self.pool.slots[w];
        slot.jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(Box::new(job));
        unpark(&self.sys, slot, w);
    }

    /// How many times `worker` woke from sleep so far.
    pub fn wakeups(&self, worker: usize) -> u64 {
        self.pool
            .slots
            .get(worker)
            .map_or(0, |s| s.wakeups.load(SeqCst))
    }

    /// Jobs that panicked so far, over all workers.
    pub fn job_panics(&self) -> u64 {
        self.pool
            .slots
            .iter()
            .map(|s| s.job_panics.load(SeqCst))
            .sum()
    }

    /// Stops the workers and shuts the system down
    /// ([`TimerSystem::shutdown`]): each worker finishes the job or
    /// callback it is running, queued jobs are dropped, threads are joined
    /// (see the module docs); pending timers are cancelled (they no longer
    /// read as pending), and arming, re-arming or creating a timer through
    /// a handle kept ([`system_arc`](Self::system_arc)) returns
    /// [`TimerError::Shutdown`](crate::TimerError::Shutdown), as tokio's
    /// timers fail after `Runtime::shutdown_timeout`. A job sleeping on its
    /// worker ([`TimerSystem::sleep`]) wakes with that error, so this never
    /// waits for a sleep. Dropping the runtime does the same.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.pool.shutdown.store(true, SeqCst);
        // Before the joins: nothing armed from now on is silently lost, and
        // a job sleeping on its worker wakes (`TimerSystem::shutdown`).
        self.sys.shutdown();
        self.sys.stop_monitor();
        if let Some(watch) = &self.clockwatch {
            watch.stop();
        }
        for (w, slot) in self.pool.slots.iter().enumerate() {
            unpark(&self.sys, slot, w);
        }
        let me = thread::current().id();
        for t in self.threads.drain(..) {
            // Dropped inside its own job: that worker exits after the job.
            if t.thread().id() != me {
                let _ = t.join();
            }
        }
        for slot in self.pool.slots.iter() {
            slot.jobs.lock().unwrap_or_else(|e| e.into_inner()).clear();
        }
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.stop();
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("workers", &self.sys.workers())
            .finish()
    }
}

/// Sets this thread's affinity to `cpu` (best effort: an error leaves the
/// thread where it was).
fn pin_to(cpu: usize) {
    #[cfg(target_os = "linux")]
    // SAFETY: a zeroed cpu_set_t is a valid empty set; CPU_SET checks the
    // index against the set's size; the call reads the set it is given.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu < libc::CPU_SETSIZE as usize {
            libc::CPU_SET(cpu, &mut set);
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cpu;
}

/// Sets this thread's timer slack to 1 ns, so that its futex timeouts end
/// when asked, not up to 50 µs later (see the `hrtimer` module docs:
/// hrtimers ask for slack explicitly). Best effort.
fn precise_sleeps() {
    crate::sync::futex::set_timer_slack(1);
}

/// Wakes worker `w`, on its alarm if it sleeps on one (`system/serve.rs`).
fn unpark(sys: &TimerSystem, slot: &Slot, w: usize) {
    match sys.serve_state().and_then(|s| s.worker(w)) {
        Some(sleep) => sleep.unpark(),
        None => slot.parker.unpark(),
    }
}

/// How a worker sleeps: on its futex parker, or on an alarm that threads
/// serving the hrtimers move (`system/serve.rs`).
#[derive(Clone, Copy)]
enum Sleep<'a> {
    Parker(&'a Parker),
    Alarm(&'a WorkerSleep),
}

impl Sleep<'_> {
    fn token(self) -> u32 {
        match self {
            Sleep::Parker(p) => p.token(),
            Sleep::Alarm(a) => a.token(),
        }
    }
}

fn pop_job(slot: &Slot) -> Option<Job> {
    slot.jobs
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .pop_front()
}

fn worker_main(sys: &TimerSystem, pool: &Arc<Pool>, w: usize) {
    let slot = &pool.slots[w];
    let serve = sys.serve_state().cloned();
    let sleep = match serve.as_ref().and_then(|s| s.worker(w)) {
        Some(alarm) => Sleep::Alarm(alarm),
        None => Sleep::Parker(&slot.parker),
    };
    let waker_pool = pool.clone();
    let waker_serve = serve.clone();
    let worker = match sys.register_worker(w, move || {
        match waker_serve.as_ref().and_then(|s| s.worker(w)) {
            Some(alarm) => alarm.unpark(),
            None => waker_pool.slots[w].parker.unpark(),
        }
    }) {
        Ok(worker) => worker,
        Err(_) => return,
    };
    let tick = sys.tick();
    let mut ahead = Ahead::default();
    loop {
        // The token first, then the flag: a shutdown after this look bumps
        // the token, and the park below returns at once.
        let seen = sleep.token();
        if pool.shutdown.load(SeqCst) {
            return;
        }
        let mut busy = worker.run_expired() > 0;
        let mut last_timers = Instant::now();
        while let Some(job) = pop_job(slot) {
            busy = true;
            if catch_unwind(AssertUnwindSafe(job)).is_err() {
                slot.job_panics.fetch_add(1, SeqCst);
            }
            if last_timers.elapsed() >= tick {
                worker.run_expired();
                last_timers = Instant::now();
            }
            if pool.shutdown.load(SeqCst) {
                return;
            }
        }
        if busy {
            continue;
        }
        if let Sleep::Alarm(alarm) = sleep {
            match worker.idle_split() {
                None => worker.idle_exit(),
                Some((wheel, hr)) => {
                    let mono = || sys.clock_ns(crate::ClockId::Monotonic).as_nanos();
                    let now = mono();
                    let at = wheel.min(hr);
                    if worker.realtime() && !worker.served() && at != u64::MAX {
                        // Its own hrtimers, on time: wake ahead as below.
                        let park = |d: Duration| {
                            let until = sys.clock_ns(crate::ClockId::Monotonic).as_nanos();
                            let d = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
                            // Nobody serves: the whole sleep is its own.
                            let nobody = || (false, worker.serving().1, worker.serving().2);
                            let first = || worker.hr_first();
                            alarm.park(
                                seen,
                                until.saturating_add(d),
                                u64::MAX,
                                &nobody,
                                &mono,
                                &first,
                            );
                        };
                        let d = Duration::from_nanos(at.saturating_sub(now));
                        sleep_ahead(&park, &|| alarm.token(), seen, d, &mut ahead);
                    } else {
                        let first = || worker.hr_first();
                        alarm.park(seen, wheel, hr, &|| worker.serving(), &mono, &first);
                    }
                    slot.wakeups.fetch_add(1, SeqCst);
                    worker.idle_exit();
                }
            }
            continue;
        }
        let timeout = match worker.idle() {
            Idle::Run => {
                worker.idle_exit();
                continue;
            }
            Idle::Sleep(timeout) => timeout,
        };
        match timeout {
            Some(d) if worker.realtime() => {
                let park = |d: Duration| slot.parker.park(seen, Some(d));
                sleep_ahead(&park, &|| slot.parker.token(), seen, d, &mut ahead);
            }
            _ => slot.parker.park(seen, timeout),
        }
        slot.wakeups.fetch_add(1, SeqCst);
        worker.idle_exit();
    }
}

/// A real-time worker's sleep until `d` from now (`system/realtime.rs`):
/// it parks until `ahead`'s margin before it, then waits the rest on the
/// CPU, so the expiry runs on time; an unpark ends either part. Within the
/// worker's share of waiting on the CPU, and with a CPU to spare, only;
/// else it parks to the end.
fn sleep_ahead(
    park: &dyn Fn(Duration),
    token: &dyn Fn() -> u32,
    seen: u32,
    d: Duration,
    ahead: &mut Ahead,
) {
    let start = Instant::now();
    let due = start + d;
    let margin = ahead.margin();
    // The share counts from where the wait on the CPU would begin.
    if !ahead.within_share(due.checked_sub(margin).unwrap_or(start).max(start)) {
        park(d);
        return;
    }
    if d > margin {
        let wake_at = due - margin;
        park(d - margin);
        if token() != seen {
            return;
        }
        let now = Instant::now();
        if now < wake_at {
            // Woken early (spuriously): sleep again.
            return;
        }
        ahead.woke_late(now - wake_at);
    }
    if !cpu_to_spare() {
        park(due.saturating_duration_since(Instant::now()));
        return;
    }
    let mut now = Instant::now();
    while token() == seen && now < due {
        spin_hint();
        now = Instant::now();
    }
    ahead.spun(now);
}
