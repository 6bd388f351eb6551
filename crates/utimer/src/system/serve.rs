//! Sleeping threads that serve the hrtimers: a thread that sleeps fires
//! the system's due hrtimers itself, as a CPU's own timer interrupt fires
//! its hrtimers in the kernel, and the workers sleep past them.
//!
//! # Why
//!
//! In the kernel, a periodic POSIX timer of a process that sleeps in
//! `nanosleep` costs one wake-up per period: the timer interrupt wakes the
//! sleeping CPU, which queues the signal to the task it wakes. A worker
//! thread costs two: the worker's CPU wakes to fire the timer, and the
//! signal then wakes the program's CPU. On a virtual machine each wake-up
//! of an idle CPU is a trip through the hypervisor, and a program that
//! lives on timer signals (stress-ng's timer stressors, a periodic control
//! loop) runs at the rate of those trips. So a program thread that sleeps
//! in one of the calls the drop-in library takes over (`nanosleep`,
//! `clock_nanosleep`, `sleep`, `usleep`) serves the hrtimers while it
//! sleeps: it sleeps until the earlier of its own deadline and their first
//! expiry, fires what is due, and sleeps on.
//!
//! # The hand-over
//!
//! One thread serves at a time ([`TimerSystem::serve`] claims the role,
//! [`Serving`]'s drop gives it back). While one serves, a worker that goes
//! idle sleeps until its wheel events, or a grace ([`SERVE_GRACE`]) after
//! its first hrtimer expiry: its hrtimers are the server's. Such a worker
//! sleeps on an alarm (`sync/alarm.rs`) that the server moves without
//! waking it:
//!
//! ```text
//!   claim:   served = true
//!   sleep:   each base publishes its first expiry (an earlier start wakes
//!            the server); the server's alarm is set to the earliest, or
//!            its own deadline; at the first sleep of a claim, every
//!            worker parked on its alarm then sleeps on past its hrtimers
//!            (to its wheel deadline or the grace)
//!   release: served = false; every worker parked on its alarm wakes at
//!            its first hrtimer expiry, read now
//! ```
//!
//! Giving the role back costs one `timerfd_settime` per worker with
//! hrtimers, and no wake-up: a worker wakes for its hrtimers only if no
//! thread serves by then. A worker that parks while no thread has served
//! since its last park sleeps on its futex instead, as any runtime worker
//! (`WorkerSleep`).
//!
//! # The grace
//!
//! The serving thread is the program's: between two looks at the bases it
//! may run a handler of the program's that blocks, or wait for a CPU. A
//! worker whose hrtimers a thread serves therefore wakes a grace after its
//! first one; if one is then a grace overdue, the server is stuck, and the
//! worker fires its hrtimers itself, on time, until the server takes a step
//! again (`HrTable::beats`). A timer is so never later than the grace
//! behind a stuck server, and a worker that is served wakes at most once
//! per grace to look.
//!
//! # Ground rules
//!
//! * `HrTable::served` is written with `SeqCst` before the claim or release
//!   looks at any worker, and a worker reads it under its own plan lock
//!   ([`WorkerSleep`]) when it decides what to set its alarm to. So either
//!   the worker sees the new value, or the claim or release finds the
//!   worker parked under that lock and moves its alarm.
//! * An hrtimer queued earlier than a base's published first expiry (a
//!   start, or an expiry run that queues a periodic timer again, while the
//!   server may have found the queue empty) wakes the base's worker (as
//!   without a server) and kicks the server (`Nohz::wake_hr`): whichever
//!   sleeps for it, it is not missed. A worker that wakes while a thread
//!   serves keeps the server's published expiry (`HrTable::idle_exit`,
//!   under the base's lock), so a start before it still reaches someone.
//! * A start (not an expiry run) while a thread serves does not wake a
//!   worker parked leaving its hrtimers to that thread: under the plan
//!   lock, its alarm is brought forward to a grace after the new expiry
//!   and the expiry is kept for the release (`WorkerSleep::hr_started`),
//!   and only the server is kicked. The start may have read `served`
//!   before a release that looked at an empty base without its lock: the
//!   plan lock orders the two, and the release then wakes the worker for
//!   the kept expiry, or the start finds the alarm no longer left and
//!   wakes the worker.
//! * Lock order: a base's lock, then nothing; a worker's plan lock, then
//!   nothing (the alarm's system call is made under it); the server slot,
//!   then the server's parked lock. No base lock is held while a plan lock
//!   is taken.
//! * The server runs callbacks on its own thread: if a callback must not be
//!   interrupted, the caller keeps handlers out meanwhile (the drop-in
//!   library runs the expiry in a critical section and holds back the
//!   timer signals it queues until the run is over,
//!   `posix::hold_signals`).
//!
//! The loom models below check the release against a worker going to
//! sleep and against a start that moves a worker's alarm, an unpark
//! against a worker's plan, and an expiry run's queueing against the
//! server's look.

use crate::sync::alarm::{Alarm, NEVER, NOW};
use crate::sync::{AtomicU32, Mutex, MutexGuard};
use crate::time::Ktime;
use crate::TimerSystem;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, OnceLock};

/// The system's serving state (in `Core`).
pub(crate) struct Serve {
    /// The thread that serves now, for kicks: set after the claim, taken
    /// before the release.
    server: Mutex<Option<Arc<Server>>>,
    /// Each worker's sleep, installed by the runtime (none for a system
    /// without threads, which then cannot be served).
    workers: OnceLock<Box<[WorkerSleep]>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Serve {
    pub(crate) fn new() -> Serve {
        Serve {
            server: Mutex::new(None),
            workers: OnceLock::new(),
        }
    }

    /// The runtime's workers sleep on these from now on.
    pub(crate) fn install(&self, sleeps: Box<[WorkerSleep]>) {
        let _ = self.workers.set(sleeps);
    }

    /// Worker `w`'s sleep, if the runtime installed them.
    pub(crate) fn worker(&self, w: usize) -> Option<&WorkerSleep> {
        self.workers.get().and_then(|s| s.get(w))
    }

    /// An earlier hrtimer was armed: the serving thread, if any, looks
    /// again.
    pub(crate) fn kick(&self) {
        if let Some(s) = lock(&self.server).as_ref() {
            s.kick();
        }
    }
}

/// What a worker planned its sleep to (under [`WorkerSleep::plan`]).
struct Plan {
    /// Parked (or about to).
    parked: bool,
    /// On its alarm (it parked while a thread served); else on the futex
    /// of `seq`, with a timeout, as the runtime's parker.
    on_alarm: bool,
    /// Its deadline without hrtimers, monotonic ns ([`NEVER`]: none).
    wheel: u64,
    /// When it wakes: what its alarm is set to, or its futex timeout.
    armed: u64,
    /// `HrTable::claims` when it last parked.
    claims: u64,
    /// The serving thread looked stuck when this worker last woke (a
    /// hrtimer a grace overdue), at `HrTable::beats` = `stuck_at`: the
    /// worker fires the hrtimers itself until the thread takes a step.
    stuck: bool,
    stuck_at: u64,
    /// Its first hrtimer expiry when it last parked, or lowered since by a
    /// start ([`WorkerSleep::hr_started`]).
    hr: u64,
    /// Its alarm leaves the hrtimers to a serving thread (set a grace
    /// after them, or past them to its wheel deadline).
    left: bool,
    /// The earliest expiry [`WorkerSleep::hr_started`] was told of since
    /// the alarm was left: the release wakes the worker for it even if its
    /// own look at the bases missed the start (an empty base's look takes
    /// no lock, `HrBase::idle_enter`).
    started: u64,
}

/// How long after its first hrtimer expiry a worker wakes while a thread
/// serves: if that thread has not fired it by then (it runs a handler of
/// the program's that blocks, or it is starved of a CPU), the worker fires
/// it, and fires the rest on time until the thread serves again. A worker
/// whose timers a thread serves so wakes at most once per grace (or per
/// period of a longer periodic timer), to look.
pub const SERVE_GRACE: std::time::Duration = std::time::Duration::from_millis(5);
const GRACE_NS: u64 = SERVE_GRACE.as_nanos() as u64;

/// How one runtime worker sleeps when threads may serve: the futex
/// parker's protocol, with the sleep on an alarm while a thread serves.
///
/// A worker that parks while no thread has served since its last park
/// sleeps on a futex with a timeout, as any runtime worker (a real-time
/// one wakes ahead of its expiry by the same means, and an unpark is a
/// futex wake, not a timer interrupt). One that parks while a thread
/// serves, or has served since, sleeps on its alarm: until its wheel
/// deadline while a thread serves (the thread that gives the role back
/// moves the alarm to the first hrtimer expiry), else until its first
/// expiry. A program that sleeps between its timers claims and gives back
/// the role over and over; between two claims its workers stay on their
/// alarms. A worker on its futex when a thread begins to serve wakes for
/// its hrtimers as planned (a wake-up the server makes needless, never a
/// late one).
pub(crate) struct WorkerSleep {
    /// Bumped by every unpark; read before looking for work (the futex
    /// parker's protocol, `sync/parker.rs`); the futex word.
    seq: AtomicU32,
    plan: Mutex<Plan>,
    alarm: Alarm,
}

/// How a planned sleep is slept.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Sleep {
    /// An unpark came since the token: no sleep.
    No,
    /// On the alarm.
    Alarm,
    /// On the futex until this monotonic time.
    Futex(u64),
}

impl WorkerSleep {
    pub(crate) fn new() -> std::io::Result<WorkerSleep> {
        Ok(WorkerSleep {
            seq: AtomicU32::new(0),
            plan: Mutex::new(Plan {
                parked: false,
                on_alarm: false,
                wheel: NEVER,
                armed: NEVER,
                claims: 0,
                stuck: false,
                stuck_at: 0,
                hr: NEVER,
                left: false,
                started: NEVER,
            }),
            alarm: Alarm::new()?,
        })
    }

    /// The token to park with: read it before looking for work.
    pub(crate) fn token(&self) -> u32 {
        self.seq.load(SeqCst)
    }

    /// Wakes the worker parked (or about to park) on this.
    pub(crate) fn unpark(&self) {
        self.seq.fetch_add(1, SeqCst);
        let mut p = lock(&self.plan);
        if p.parked {
            if p.on_alarm {
                self.alarm.set(NOW);
            } else {
                crate::sync::futex::wake_all(&self.seq);
            }
            p.armed = NOW;
        }
    }

    /// Sleeps until an unpark after `token` was read, or until `wheel`
    /// (monotonic ns), or `hr` (a [`SERVE_GRACE`] later while a thread
    /// serves and has made progress since this worker last parked).
    /// `serving` answers whether one serves, how many claims and serving
    /// steps were made so far (`HrTable::served`, `claims`, `beats`, read
    /// under the plan lock: module docs); `now` reads the monotonic clock,
    /// `hr_first` the worker's first hrtimer expiry (monotonic ns).
    pub(crate) fn park(
        &self,
        token: u32,
        wheel: u64,
        hr: u64,
        serving: &dyn Fn() -> (bool, u64, u64),
        now: &dyn Fn() -> u64,
        hr_first: &dyn Fn() -> u64,
    ) {
        match self.plan_park(token, wheel, hr, serving) {
            Sleep::No => {}
            Sleep::Alarm => self.alarm.wait(),
            Sleep::Futex(at) => {
                let timeout = (at != NEVER)
                    .then(|| std::time::Duration::from_nanos(at.saturating_sub(now())));
                crate::sync::futex::wait_timeout(&self.seq, token, timeout);
            }
        }
        let mut p = lock(&self.plan);
        p.parked = false;
        let (served, _, beats) = serving();
        // An hrtimer a grace overdue: the server did not fire it.
        let first = hr_first();
        if served && first != NEVER && now() >= first.saturating_add(GRACE_NS) {
            p.stuck = true;
            p.stuck_at = beats;
        }
    }

    /// The first half of [`park`](Self::park): records the plan, and sets
    /// the alarm if it sleeps on it.
    fn plan_park(
        &self,
        token: u32,
        wheel: u64,
        hr: u64,
        serving: &dyn Fn() -> (bool, u64, u64),
    ) -> Sleep {
        let sleep = {
            let mut p = lock(&self.plan);
            let (served, claims, beats) = serving();
            // The server fires the hrtimers, unless it looked stuck and
            // has taken no step since.
            p.stuck &= beats == p.stuck_at;
            let left = served && !p.stuck;
            p.parked = true;
            p.wheel = wheel;
            p.hr = hr;
            p.on_alarm = served || claims != p.claims;
            p.left = p.on_alarm && left;
            p.started = NEVER;
            p.claims = claims;
            p.armed = if left {
                wheel.min(hr.saturating_add(GRACE_NS))
            } else {
                wheel.min(hr)
            };
            if p.on_alarm {
                self.alarm.set(p.armed);
                Sleep::Alarm
            } else {
                Sleep::Futex(p.armed)
            }
        };
        if self.seq.load(SeqCst) == token {
            sleep
        } else {
            Sleep::No
        }
    }

    /// A thread began serving: a worker parked on its alarm sleeps past
    /// its hrtimers (by the grace).
    fn leave_hrtimers(&self) {
        let mut p = lock(&self.plan);
        if !(p.parked && p.on_alarm) {
            return;
        }
        p.left = true;
        let at = p.wheel.min(p.hr.saturating_add(GRACE_NS));
        if p.armed < at && p.armed != NOW {
            self.alarm.set(at);
            p.armed = at;
        }
    }

    /// While a thread serves, a start queued an hrtimer of this worker's
    /// before what its bases published; `first` is the worker's first
    /// hrtimer expiry now (monotonic ns). A worker parked on its alarm
    /// leaving its hrtimers to the serving thread is not woken: its alarm
    /// is brought forward to a grace after `first`, if later, so that it
    /// still fires the timer should the serving thread be stuck. Returns
    /// `false` for any other worker: the caller wakes it.
    pub(crate) fn hr_started(&self, first: u64) -> bool {
        let mut p = lock(&self.plan);
        if !(p.parked && p.on_alarm && p.left) {
            return false;
        }
        p.hr = p.hr.min(first);
        p.started = p.started.min(first);
        let at = p.wheel.min(p.hr.saturating_add(GRACE_NS));
        if at < p.armed {
            self.alarm.set(at);
            p.armed = at;
        }
        true
    }

    /// The serving thread left: a worker parked on its alarm wakes for its
    /// first hrtimer expiry `hr` (read after `served` went false). One on
    /// its futex planned for its hrtimers already.
    fn take_hrtimers(&self, hr: u64) {
        let mut p = lock(&self.plan);
        if p.parked && p.on_alarm {
            p.left = false;
            p.hr = hr.min(std::mem::replace(&mut p.started, NEVER));
            let at = p.wheel.min(p.hr);
            if at < p.armed {
                self.alarm.set(at);
                p.armed = at;
            }
        }
    }

    /// When a parked worker wakes (for the models).
    #[cfg(all(test, loom))]
    fn wakes_at(&self) -> u64 {
        lock(&self.plan).armed
    }
}

/// A thread's means to serve a system's hrtimers while it sleeps: the
/// alarm it sleeps on. Make one per thread and keep it
/// ([`TimerSystem::serve`]).
pub struct Server {
    /// Bumped by every kick; read before each look at the bases.
    seq: AtomicU32,
    /// Whether it sleeps on its alarm, and what the alarm is set to.
    parked: Mutex<ServerPark>,
    alarm: Alarm,
}

/// A server's sleep (under [`Server::parked`]).
struct ServerPark {
    /// Sleeping on the alarm (or about to).
    parked: bool,
    /// What the alarm was last set to (monotonic ns; [`NOW`] after a
    /// kick, [`NEVER`] when never set): a wait for the same time makes no
    /// system call.
    armed: u64,
}

impl ServerPark {
    /// Sets `alarm` to `at` unless it is set to that already. Either it has
    /// not gone off, or it went off and stays readable: the same sleep as a
    /// fresh setting (a wait for a time already past returns before it
    /// sleeps).
    fn arm(&mut self, alarm: &Alarm, at: u64) {
        if self.armed != at {
            alarm.set(at);
            self.armed = at;
        }
    }
}

impl Server {
    /// A server for the calling thread: one `CLOCK_MONOTONIC` timerfd
    /// (`TFD_CLOEXEC`), closed when the last handle drops.
    ///
    /// # Errors
    /// `timerfd_create`'s (`EMFILE`, `ENFILE`, `ENOMEM`).
    pub fn new() -> std::io::Result<Server> {
        Ok(Server {
            seq: AtomicU32::new(0),
            parked: Mutex::new(ServerPark {
                parked: false,
                armed: NEVER,
            }),
            alarm: Alarm::new()?,
        })
    }

    /// An earlier hrtimer was armed: look again.
    fn kick(&self) {
        self.seq.fetch_add(1, SeqCst);
        let mut p = lock(&self.parked);
        if p.parked {
            p.arm(&self.alarm, NOW);
        }
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").finish_non_exhaustive()
    }
}

/// Why [`Serving::wait`] returned.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Woke {
    /// Hrtimers are due: run them ([`Serving::run_expired`]) and wait
    /// again.
    Due,
    /// The deadline passed.
    Deadline,
    /// A signal handler ran on this thread (the kernel's `nanosleep`
    /// returns `EINTR`).
    Interrupted,
}

/// The serving role, held by one thread ([`TimerSystem::serve`]); dropping
/// it hands the hrtimers back to the workers.
pub struct Serving<'a> {
    sys: &'a TimerSystem,
    server: Arc<Server>,
    /// The workers parked on their alarms were told to sleep past their
    /// hrtimers (`WorkerSleep::leave_hrtimers`): done once, at the first
    /// sleep (after the server's own alarm is set, see `wait`).
    left: std::cell::Cell<bool>,
}

impl TimerSystem {
    /// Claims the serving role for the calling thread: from now until the
    /// [`Serving`] drops, the thread sleeps through
    /// [`Serving::wait`] and fires the due hrtimers of every worker with
    /// [`Serving::run_expired`], and the workers sleep past them. `None` if
    /// another thread serves now, or the system does not let threads serve
    /// ([`Builder::sleepers_serve`](crate::Builder::sleepers_serve) off, or
    /// no [`Runtime`](crate::Runtime)). There is no kernel counterpart: a
    /// CPU's timer interrupt fires its own hrtimers
    /// (`hrtimer_interrupt()`), and this is how a sleeping thread does the
    /// same for a user-space system.
    pub fn serve(&self, server: &Arc<Server>) -> Option<Serving<'_>> {
        let hr = &self.core.nohz.hr;
        self.core.serve.workers.get()?;
        // A worker's own thread runs its timers in its loop, never here.
        if self.core.bases.entered_worker().is_some() {
            return None;
        }
        if !hr.serve_mode
            || hr
                .served
                .compare_exchange(false, true, SeqCst, SeqCst)
                .is_err()
        {
            return None;
        }
        // A worker that parks from now on, even after the release, sleeps
        // on its alarm (`WorkerSleep`): the next claim moves it.
        hr.claims.fetch_add(1, SeqCst);
        *lock(&self.core.serve.server) = Some(server.clone());
        Some(Serving {
            sys: self,
            server: server.clone(),
            left: std::cell::Cell::new(false),
        })
    }
}

impl Serving<'_> {
    /// Sleeps until `deadline` (a time of `CLOCK_MONOTONIC`) or until
    /// an hrtimer is due, whichever is first, or until a signal handler
    /// runs on this thread ([`Woke`] says which). `interrupted` tells
    /// whether a handler ran since the caller began (one that ran on the
    /// way out of a system call made here, before the sleep itself); it is
    /// asked before each sleep. Not a cancellation point.
    pub fn wait(&self, deadline: Ktime, interrupted: &dyn Fn() -> bool) -> Woke {
        let deadline = deadline.as_nanos();
        let core = &self.sys.core;
        let ticks = &core.bases.ticks;
        let server = &self.server;
        loop {
            let seen = server.seq.load(SeqCst);
            core.nohz.hr.beats.fetch_add(1, SeqCst);
            let first = core.nohz.hr.idle_enter_all(ticks).unwrap_or(NEVER);
            let now = ticks.now_ns(crate::ClockId::Monotonic);
            if first <= now {
                return Woke::Due;
            }
            if deadline <= now {
                return Woke::Deadline;
            }
            {
                let mut p = lock(&server.parked);
                p.parked = true;
                p.arm(&server.alarm, first.min(deadline));
            }
            if interrupted() {
                lock(&server.parked).parked = false;
                return Woke::Interrupted;
            }
            self.leave_hrtimers();
            let r = if server.seq.load(SeqCst) == seen {
                server.alarm.wait_or_signal()
            } else {
                Ok(())
            };
            lock(&server.parked).parked = false;
            if r.is_err() {
                return Woke::Interrupted;
            }
        }
    }

    /// Before the first sleep of this claim: each worker parked on its
    /// alarm sleeps past its hrtimers. After the server's alarm is set:
    /// the kernel then finds the server's timer already queued at the
    /// worker's first expiry, and moving the worker's later leaves the
    /// CPU's next timer event where it is (no reprogramming, which costs a
    /// trip through the hypervisor on a virtual machine); in the other
    /// order the event moves twice. Until it is done a worker may wake for
    /// its hrtimers (a needless wake-up, never a late timer), and a claim
    /// that never sleeps leaves the workers' alarms alone.
    fn leave_hrtimers(&self) {
        if self.left.replace(true) {
            return;
        }
        if let Some(sleeps) = self.sys.core.serve.workers.get() {
            for s in sleeps.iter() {
                s.leave_hrtimers();
            }
        }
    }

    /// Fires every worker's due hrtimers on this thread; returns how many
    /// ran. The kernel's `hrtimer_interrupt()`.
    pub fn run_expired(&self) -> usize {
        let core = &self.sys.core;
        core.nohz.hr.run_expired_all(
            &core.bases.ticks,
            &|payload| {
                if let Some(hook) = core.bases.panic_hook() {
                    hook(payload);
                }
            },
            &|w| core.nohz.wake_hr(w),
        )
    }
}

impl Drop for Serving<'_> {
    fn drop(&mut self) {
        let core = &self.sys.core;
        let hr = &core.nohz.hr;
        lock(&core.serve.server).take();
        hr.served.store(false, SeqCst);
        let Some(sleeps) = core.serve.workers.get() else {
            return;
        };
        for (w, s) in sleeps.iter().enumerate() {
            let first = hr.idle_enter(w, &core.bases.ticks).unwrap_or(NEVER);
            s.take_hrtimers(first);
        }
    }
}

impl std::fmt::Debug for Serving<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Serving").finish_non_exhaustive()
    }
}

/// What a worker's plan reads of the serving state (`WorkerSleep::park`'s
/// `serving`), for the tests.
/// One worker on a manual clock, with its alarm installed as the runtime
/// would, for the tests.
#[cfg(test)]
fn system() -> Arc<TimerSystem> {
    let sys = TimerSystem::builder()
        .workers(1)
        .clock(crate::Clock::manual())
        .sleepers_serve(true)
        .build_without_threads();
    sys.core
        .serve
        .install(vec![WorkerSleep::new().unwrap()].into_boxed_slice());
    Arc::new(sys)
}

#[cfg(test)]
fn serving_state(sys: &TimerSystem) -> (bool, u64, u64) {
    let hr = &sys.core.nohz.hr;
    (
        hr.served.load(SeqCst),
        hr.claims.load(SeqCst),
        hr.beats.load(SeqCst),
    )
}

#[cfg(all(test, loom))]
mod tests {
    use super::*;
    use crate::{Clock, ClockId, HrRestart};
    use loom::thread;

    /// A thread claims the serving role and gives it back while the
    /// worker decides what to set its alarm to: once both are done (nobody
    /// serves), the worker's alarm is set no later than its hrtimer, in
    /// every interleaving.
    #[test]
    fn a_release_racing_a_worker_going_to_sleep_leaves_it_its_hrtimer() {
        crate::sync::model(|| {
            let sys = system();
            let t = sys
                .hrtimer_on(0, ClockId::Monotonic, |_| HrRestart::NoRestart)
                .unwrap();
            t.start(Ktime::from_nanos(1_000)).unwrap();
            let server = Arc::new(Server::new().unwrap());
            let s2 = sys.clone();
            let th = thread::spawn(move || {
                let serving = s2.serve(&server).expect("nobody else serves");
                drop(serving);
            });
            let core = &sys.core;
            let ws = core.serve.worker(0).unwrap();
            let token = ws.token();
            let hr = core
                .nohz
                .hr
                .idle_enter(0, &core.bases.ticks)
                .unwrap_or(NEVER);
            let _ = ws.plan_park(token, NEVER, hr, &|| serving_state(&sys));
            th.join().unwrap();
            let at = ws.wakes_at();
            assert!(
                at <= 1_000,
                "the worker sleeps until {at}, past its hrtimer at 1000"
            );
        });
    }

    /// While a thread serves, the worker sleeps leaving its hrtimers to it;
    /// a start of an earlier hrtimer (which moves the worker's alarm
    /// without waking it) races the thread giving the role back: once both
    /// are done (nobody serves), the worker wakes no later than the timer,
    /// in every interleaving.
    #[test]
    fn a_start_racing_the_release_leaves_the_worker_its_hrtimer() {
        crate::sync::model(|| {
            let sys = system();
            let core = &sys.core;
            let s2 = sys.clone();
            core.nohz.swap_waker(
                0,
                Some(Arc::new(move || s2.core.serve.worker(0).unwrap().unpark())),
            );
            let t = sys
                .hrtimer_on(0, ClockId::Monotonic, |_| HrRestart::NoRestart)
                .unwrap();
            let server = Arc::new(Server::new().unwrap());
            let serving = sys.serve(&server).expect("nobody else serves");
            let ws = core.serve.worker(0).unwrap();
            let token = ws.token();
            let hr = core
                .nohz
                .hr
                .idle_enter(0, &core.bases.ticks)
                .unwrap_or(NEVER);
            assert_eq!(
                ws.plan_park(token, NEVER, hr, &|| serving_state(&sys)),
                Sleep::Alarm
            );
            let th = thread::spawn(move || {
                t.start(Ktime::from_nanos(1_000)).unwrap();
                t
            });
            drop(serving);
            let t = th.join().unwrap();
            let at = ws.wakes_at();
            assert!(
                at <= 1_000,
                "the worker sleeps until {at}, past its hrtimer at 1000"
            );
            drop(t);
            core.nohz.swap_waker(0, None);
        });
    }

    /// An unpark racing the worker's plan: either the worker sees it and
    /// does not sleep, or its alarm goes off at once.
    #[test]
    fn an_unpark_racing_the_plan_is_never_lost() {
        crate::sync::model(|| {
            let sys = system();
            let s2 = sys.clone();
            let token = sys.core.serve.worker(0).unwrap().token();
            let th = thread::spawn(move || s2.core.serve.worker(0).unwrap().unpark());
            let ws = sys.core.serve.worker(0).unwrap();
            let sleeps = ws.plan_park(token, NEVER, NEVER, &|| (false, 0, 0));
            th.join().unwrap();
            assert!(
                sleeps == Sleep::No || ws.wakes_at() == NOW,
                "the worker sleeps ({sleeps:?}) until {}",
                ws.wakes_at()
            );
        });
    }

    /// A worker's expiry run queues a periodic hrtimer again while the
    /// serving thread looks at the bases (it may find the queue empty, the
    /// timer being out for its callback, and plan to sleep past it): the
    /// run's wake-up reaches the thread, or the thread saw the new expiry.
    #[test]
    fn a_timer_queued_again_by_a_worker_reaches_the_server() {
        crate::sync::model(|| {
            let clock = Clock::manual();
            let sys = TimerSystem::builder()
                .workers(1)
                .clock(clock.clone())
                .sleepers_serve(true)
                .build_without_threads();
            sys.core
                .serve
                .install(vec![WorkerSleep::new().unwrap()].into_boxed_slice());
            let sys = Arc::new(sys);
            let t = sys
                .hrtimer_on(0, ClockId::Monotonic, |fire| {
                    fire.set_expires(fire.expires() + std::time::Duration::from_micros(500));
                    HrRestart::Restart
                })
                .unwrap();
            t.start(Ktime::from_nanos(1_000_000)).unwrap();
            // The clock reads 1 ms: the timer is due.
            clock.set(1);
            let server = Arc::new(Server::new().unwrap());
            let serving = sys.serve(&server).expect("nobody else serves");
            let s2 = sys.clone();
            let worker = thread::spawn(move || {
                let core = &s2.core;
                core.nohz.run_expired(&core.bases, 0, 1);
            });
            let core = &sys.core;
            let seen = server.seq.load(SeqCst);
            let first = core
                .nohz
                .hr
                .idle_enter_all(&core.bases.ticks)
                .unwrap_or(NEVER);
            worker.join().unwrap();
            assert!(
                first <= 1_500_000 || server.seq.load(SeqCst) != seen,
                "the server planned to sleep until {first} past the timer at 1500000, unwoken"
            );
            drop(serving);
            drop(t);
        });
    }
}

#[cfg(all(test, not(loom)))]
mod plan_tests {
    use super::*;

    /// A worker that parks after a thread served (and gave the role back)
    /// sleeps on its alarm, where the next claim moves it; one that parks
    /// again with no claim in between goes back to its futex.
    #[test]
    #[cfg_attr(miri, ignore)] // timerfds
    fn a_worker_stays_on_its_alarm_between_two_claims() {
        let sys = system();
        let ws = sys.core.serve.worker(0).unwrap();
        let plan = || {
            let sleep = ws.plan_park(ws.token(), 5_000_000, NEVER, &|| serving_state(&sys));
            lock(&ws.plan).parked = false;
            sleep
        };
        assert_eq!(plan(), Sleep::Futex(5_000_000), "nobody ever served");
        let server = Arc::new(Server::new().unwrap());
        drop(sys.serve(&server).expect("nobody else serves"));
        assert_eq!(plan(), Sleep::Alarm, "a claim came since its last park");
        assert_eq!(plan(), Sleep::Futex(5_000_000), "no claim since");
    }
}
