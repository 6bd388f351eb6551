//! Blocking sleep for any thread: the kernel's `nanosleep()` /
//! `hrtimer_nanosleep()`.
//!
//! A [`Sleeper`] owns a single-shot hrtimer (`hrtimer/`) on the monotonic
//! clock whose callback unparks the sleeping thread. `sleep_until` starts
//! it and waits until the callback has run or another thread interrupts
//! the sleep, then cancels it (waiting for a callback in flight). As the
//! kernel's `nanosleep` does, it uses an hrtimer, not the wheel: a sleep
//! ends microseconds after its deadline, not at the next bucket boundary.
//! It never ends early: the timer fires only once its clock has read the
//! deadline, and only its callback reports the sleep as elapsed.
//!
//! # Who runs the timer
//!
//! * On a thread that is no worker, the timer goes to the thread's home
//!   worker, and the thread parks until its callback runs: some worker must
//!   be running (a [`Runtime`](crate::Runtime), or threads registered as
//!   workers).
//! * On a worker's thread (inside a job, say), the timer goes to the
//!   thread's own worker, and while it waits the thread keeps running that
//!   worker's timers — this one among them — and sleeps tickless in
//!   between, woken early by arms on its bases, exactly as its idle loop
//!   would. So every worker can sleep at once, and a system of one worker
//!   can sleep on its only worker.
//! * Inside a timer callback a sleep is refused with
//!   [`TimerError::InCallback`]: the expiry run of that base cannot go on
//!   while its callback blocks (the kernel's timer callbacks may not sleep
//!   either).

use super::Core;
use crate::base::in_callback;
use crate::hrtimer::{self, HrRestart, HrTimer};
use crate::nohz::Idle;
use crate::sync::futex;
use crate::sync::parker::Parker;
use crate::time::{ClockId, Expiry};
use crate::TimerError;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

/// How a sleep ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SleepOutcome {
    /// The deadline passed.
    Elapsed,
    /// Another thread cut it short ([`Interrupter::interrupt`]).
    Interrupted,
}

#[derive(Default)]
struct State {
    parker: Parker,
    fired: AtomicBool,
    interrupted: AtomicBool,
}

/// A reusable, interruptible sleep for one thread at a time
/// ([`TimerSystem::sleeper`](crate::TimerSystem::sleeper)).
pub struct Sleeper {
    timer: HrTimer,
    state: Arc<State>,
    core: Arc<Core>,
}

/// Cuts a [`Sleeper`]'s current (or next) sleep short, from any thread.
#[derive(Clone)]
pub struct Interrupter {
    state: Arc<State>,
}

impl Interrupter {
    /// Ends the sleep in progress with [`SleepOutcome::Interrupted`], or the
    /// next one at once if none is in progress.
    pub fn interrupt(&self) {
        self.state.interrupted.store(true, SeqCst);
        self.state.parker.unpark();
    }
}

impl std::fmt::Debug for Interrupter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interrupter").finish_non_exhaustive()
    }
}

impl Sleeper {
    pub(crate) fn new(core: Arc<Core>) -> Sleeper {
        let state = Arc::new(State::default());
        let s = state.clone();
        let worker = core.bases.route(core.bases.current_worker());
        let timer = HrTimer::new(core.clone(), worker, ClockId::Monotonic, move |_| {
            s.fired.store(true, SeqCst);
            s.parker.unpark();
            HrRestart::NoRestart
        });
        Sleeper { timer, state, core }
    }

    /// A handle that cuts this sleeper's sleeps short.
    pub fn interrupter(&self) -> Interrupter {
        Interrupter {
            state: self.state.clone(),
        }
    }

    /// Sleeps for at least `d` (to the nanosecond: the kernel's
    /// `nanosleep()`).
    ///
    /// # Errors
    /// As [`sleep_until`](Self::sleep_until).
    pub fn sleep(&self, d: Duration) -> Result<SleepOutcome, TimerError> {
        self.sleep_until(d)
    }

    /// Sleeps until `deadline`, or until interrupted: returns
    /// [`SleepOutcome::Elapsed`] only once the monotonic clock read at
    /// least the deadline, never before. The sleep's hrtimer runs on the
    /// worker; a thread that is no worker also waits on the deadline
    /// itself (a futex wait with 1 ns timer slack for the sleep, the
    /// kernel's `nanosleep` hrtimer on the sleeping CPU), so it wakes
    /// without a hand-off from the worker. An [`Expiry::After`] counts from now to the nanosecond, an
    /// [`Expiry::At`] is that instant, and a tick ([`Expiry::Tick`],
    /// [`Expiry::AfterTicks`]) stands for the moment that tick begins.
    ///
    /// # Errors
    /// [`TimerError::InCallback`] inside a timer callback;
    /// [`TimerError::Shutdown`] if the system is gone.
    pub fn sleep_until(&self, deadline: impl Into<Expiry>) -> Result<SleepOutcome, TimerError> {
        if in_callback() || hrtimer::in_callback() {
            return Err(TimerError::InCallback);
        }
        let bases = &self.core.bases;
        let ticks = &bases.ticks;
        let at = match deadline.into() {
            Expiry::After(d) => ticks
                .now_ns(ClockId::Monotonic)
                .saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
            Expiry::At(instant) => ticks.ns_of_instant(instant),
            e => ticks.ns_of_tick(ticks.resolve(e)),
        };
        self.state.fired.store(false, SeqCst);
        self.timer.start(at)?;
        let outcome = match bases.entered_worker() {
            None => self.park_until_done(at),
            Some(worker) => self.run_until_done(worker),
        };
        self.timer.cancel()?;
        Ok(outcome)
    }

    /// How the sleep ended, if it did.
    fn outcome(&self) -> Option<SleepOutcome> {
        if self.state.fired.load(SeqCst) {
            Some(SleepOutcome::Elapsed)
        } else if self.state.interrupted.swap(false, SeqCst) {
            Some(SleepOutcome::Interrupted)
        } else {
            None
        }
    }

    /// Not a worker: the worker runs the hrtimer, and with a real clock
    /// this thread also wakes at the deadline by itself.
    fn park_until_done(&self, at: u64) -> SleepOutcome {
        let ticks = &self.core.bases.ticks;
        let own = !ticks.clock().is_manual();
        let slack = own.then(|| futex::set_timer_slack(1));
        let outcome = loop {
            let token = self.state.parker.token();
            if let Some(outcome) = self.outcome() {
                break outcome;
            }
            let timeout = if own {
                let now = ticks.now_ns(ClockId::Monotonic);
                if now >= at {
                    break SleepOutcome::Elapsed;
                }
                Some(Duration::from_nanos(at - now))
            } else {
                None
            };
            self.state.parker.park(token, timeout);
        };
        if let Some(old) = slack {
            futex::set_timer_slack(old);
        }
        outcome
    }

    /// On `worker`'s thread: run its timers while waiting, tickless in
    /// between (the runtime's idle loop, with this sleeper's parker).
    fn run_until_done(&self, worker: usize) -> SleepOutcome {
        let Core { bases, nohz } = &*self.core;
        let s = self.state.clone();
        let previous = nohz.swap_waker(worker, Some(Arc::new(move || s.parker.unpark())));
        let outcome = loop {
            let token = self.state.parker.token();
            if let Some(outcome) = self.outcome() {
                break outcome;
            }
            nohz.run_expired(bases, worker, bases.ticks.now_precise());
            if let Some(outcome) = self.outcome() {
                break outcome;
            }
            if let Idle::Sleep(timeout) = nohz.idle(bases, worker) {
                self.state.parker.park(token, timeout);
            }
            nohz.idle_exit(bases, worker);
        };
        nohz.swap_waker(worker, previous);
        outcome
    }
}

impl std::fmt::Debug for Sleeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sleeper")
            .field("timer", &self.timer)
            .finish()
    }
}
