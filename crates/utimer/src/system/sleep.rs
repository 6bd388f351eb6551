//! Blocking sleep for any thread: the kernel's `nanosleep()` /
//! `hrtimer_nanosleep()`.
//!
//! A [`Sleeper`] ends its sleeps at their deadlines, not at the next wheel
//! bucket boundary: as the kernel's `nanosleep` does, it sleeps on an
//! hrtimer, and a sleep ends microseconds after its deadline. It never ends
//! early: it reports the sleep as elapsed only once the monotonic clock has
//! read the deadline. Another thread may interrupt it ([`Interrupter`]).
//!
//! # Who runs the timer
//!
//! * On a thread that is no worker, the hrtimer is the kernel's own: the
//!   thread waits on its parker with the deadline as the futex timeout and
//!   its timer slack at 1 ns for the sleep (restored after), which is what
//!   `nanosleep` arms on the sleeping CPU. No worker wakes for it, and the
//!   wake-up needs no hand-off from a worker thread. With a manual
//!   [`Clock`](crate::Clock), time moves only when the clock is advanced,
//!   so the sleep is a utimer hrtimer on the thread's home worker instead,
//!   whose callback unparks the thread.
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
use crate::hrtimer::{self, HrRestart, HrTimer};
use crate::nohz::Idle;
use crate::sync::futex;
use crate::sync::parker::Parker;
use crate::time::{ClockId, Expiry};
use crate::timer_list::base::in_callback;
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
    #[doc(alias = "nanosleep")]
    pub fn sleep(&self, d: Duration) -> Result<SleepOutcome, TimerError> {
        self.sleep_until(d)
    }

    /// Sleeps until `deadline`, or until interrupted: returns
    /// [`SleepOutcome::Elapsed`] only once the monotonic clock read at
    /// least the deadline, never before. On a worker's thread the sleep is
    /// an hrtimer that the worker's own loop runs while it waits (tickless,
    /// running its other timers meanwhile). Any other thread waits on the
    /// deadline itself: a futex wait whose timeout is the kernel's hrtimer,
    /// as `nanosleep` uses, with the thread's timer slack at 1 ns for the
    /// sleep, so no worker wakes for it (with a manual [`Clock`](crate::Clock),
    /// an hrtimer that advancing the clock fires). An [`Expiry::After`] counts from now to the nanosecond, an
    /// [`Expiry::At`] is that instant, and a tick ([`Expiry::Tick`],
    /// [`Expiry::AfterTicks`]) stands for the moment that tick begins.
    ///
    /// # Errors
    /// [`TimerError::InCallback`] inside a timer callback;
    /// [`TimerError::Shutdown`] once the system has shut down
    /// ([`TimerSystem::shutdown`](crate::TimerSystem::shutdown), which a
    /// [`Runtime`](crate::Runtime)'s shutdown calls), at once, or when it
    /// shuts down during a sleep on one of its workers' threads (a sleep on
    /// another thread runs to its deadline: it needs no worker).
    pub fn sleep_until(&self, deadline: impl Into<Expiry>) -> Result<SleepOutcome, TimerError> {
        if in_callback() || hrtimer::in_callback() {
            return Err(TimerError::InCallback);
        }
        let bases = &self.core.bases;
        if bases.is_shut_down() {
            return Err(TimerError::Shutdown);
        }
        let ticks = &bases.ticks;
        let at = match deadline.into() {
            Expiry::After(d) => ticks
                .now_ns(ClockId::Monotonic)
                .saturating_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
            Expiry::At(instant) => ticks.ns_of_instant(instant),
            e => ticks.ns_of_tick(ticks.resolve(e)),
        };
        self.state.fired.store(false, SeqCst);
        let worker = bases.entered_worker();
        if worker.is_none() && !ticks.clock().is_manual() {
            return Ok(self.wait_until(at));
        }
        self.timer.start_ns(at)?;
        let outcome = match worker {
            None => Ok(self.park_until_done()),
            Some(worker) => self.run_until_done(worker),
        };
        self.timer.cancel()?;
        outcome
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

    /// Not a worker, with a real clock: the thread waits on the deadline
    /// itself, with 1 ns of timer slack for the sleep (the kernel's own
    /// hrtimer behind the futex timeout, as `nanosleep` uses), so no
    /// worker wakes for it and nothing is handed over; an interrupt
    /// unparks it.
    fn wait_until(&self, at: u64) -> SleepOutcome {
        let ticks = &self.core.bases.ticks;
        let slack = futex::set_timer_slack(1);
        let outcome = loop {
            let token = self.state.parker.token();
            if let Some(outcome) = self.outcome() {
                break outcome;
            }
            let now = ticks.now_ns(ClockId::Monotonic);
            if now >= at {
                break SleepOutcome::Elapsed;
            }
            self.state
                .parker
                .park(token, Some(Duration::from_nanos(at - now)));
        };
        futex::set_timer_slack(slack);
        outcome
    }

    /// Not a worker, on a manual clock: whoever advances the clock runs
    /// the hrtimer, which unparks this thread.
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
    /// between (the runtime's idle loop, with this sleeper's parker). The
    /// system's shutdown cancels the sleep's timer and calls the worker's
    /// waker (this parker): the sleep ends with [`TimerError::Shutdown`].
    fn run_until_done(&self, worker: usize) -> Result<SleepOutcome, TimerError> {
        let Core { bases, nohz, .. } = &*self.core;
        let s = self.state.clone();
        let previous = nohz.swap_waker(worker, Some(Arc::new(move || s.parker.unpark())));
        let outcome = loop {
            let token = self.state.parker.token();
            if let Some(outcome) = self.outcome() {
                break Ok(outcome);
            }
            if bases.is_shut_down() {
                break Err(TimerError::Shutdown);
            }
            nohz.run_expired(bases, worker, bases.ticks.now_precise());
            if let Some(outcome) = self.outcome() {
                break Ok(outcome);
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
