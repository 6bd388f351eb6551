//! Blocking sleep for any thread: the kernel's `schedule_timeout()`.
//!
//! A [`Sleeper`] owns a single-shot timer whose callback unparks the
//! sleeping thread. `sleep_until` arms it and waits until the callback has
//! run or another thread interrupts the sleep, then removes the timer with
//! `delete_sync` (an idle or pending single-shot timer costs about a plain
//! `delete` there: seed 001). The sleep never ends early: the timer fires at
//! or after its deadline tick, which relative expiries round up, and only
//! its callback reports the sleep as elapsed.
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
use crate::sync::parker::Parker;
use crate::time::Expiry;
use crate::{Timer, TimerError, TimerFlags};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    timer: Timer,
    state: Arc<State>,
    core: Core,
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
    pub(crate) fn new(core: Core) -> Sleeper {
        let state = Arc::new(State::default());
        let s = state.clone();
        let worker = core.bases.current_worker();
        let timer = Timer::new(&core.bases, worker, TimerFlags::NONE, move |_| {
            s.fired.store(true, SeqCst);
            s.parker.unpark();
        });
        Sleeper { timer, state, core }
    }

    /// A handle that cuts this sleeper's sleeps short.
    pub fn interrupter(&self) -> Interrupter {
        Interrupter {
            state: self.state.clone(),
        }
    }

    /// Sleeps for at least `d` (rounded up to whole ticks).
    ///
    /// # Errors
    /// As [`sleep_until`](Self::sleep_until).
    pub fn sleep(&self, d: Duration) -> Result<SleepOutcome, TimerError> {
        self.sleep_until(d)
    }

    /// Sleeps until the clock has reached `deadline`, or until interrupted:
    /// returns [`SleepOutcome::Elapsed`] only once a worker's expiry run, at
    /// a tick at or after the deadline tick (so after the clock read at
    /// least that tick), has fired the sleep's timer. A relative deadline is
    /// rounded up to whole ticks from now.
    ///
    /// # Errors
    /// [`TimerError::InCallback`] inside a timer callback;
    /// [`TimerError::Shutdown`] if the system is gone.
    pub fn sleep_until(&self, deadline: impl Into<Expiry>) -> Result<SleepOutcome, TimerError> {
        if in_callback() {
            return Err(TimerError::InCallback);
        }
        let bases = &self.core.bases;
        let deadline = bases.ticks.resolve(deadline.into());
        self.state.fired.store(false, SeqCst);
        self.timer.modify(deadline)?;
        let outcome = match bases.entered_worker() {
            None => self.park_until_done(),
            Some(worker) => self.run_until_done(worker),
        };
        self.timer.delete_sync()?;
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

    /// Not a worker: someone else runs the timer.
    fn park_until_done(&self) -> SleepOutcome {
        loop {
            let token = self.state.parker.token();
            if let Some(outcome) = self.outcome() {
                return outcome;
            }
            self.state.parker.park(token, None);
        }
    }

    /// On `worker`'s thread: run its timers while waiting, tickless in
    /// between (the runtime's idle loop, with this sleeper's parker).
    fn run_until_done(&self, worker: usize) -> SleepOutcome {
        let Core { bases, nohz } = &self.core;
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
            let timeout = match nohz.idle_enter(bases, worker).earliest() {
                Some(tick) if tick <= bases.ticks.now_precise() => Some(Duration::ZERO),
                // A manual clock has no instant: look again after a tick.
                Some(tick) => Some(
                    bases
                        .ticks
                        .instant_of(tick)
                        .map_or(bases.ticks.tick(), |at| {
                            at.saturating_duration_since(Instant::now())
                        }),
                ),
                None => None,
            };
            if timeout != Some(Duration::ZERO) {
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
