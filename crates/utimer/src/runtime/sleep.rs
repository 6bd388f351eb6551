//! Blocking sleep for any thread: the kernel's `schedule_timeout()`.
//!
//! A [`Sleeper`] owns a single-shot timer whose callback unparks the
//! sleeping thread. `sleep_until` arms it and parks until the callback has
//! run or another thread interrupts the sleep. It then removes the timer
//! with `delete_sync`: an idle or pending single-shot timer costs about a
//! plain `delete` there (seed 001). The sleep never ends early. The timer
//! fires at or after its deadline tick, which `*_after` rounds up, and only
//! its callback reports the sleep as elapsed.
//!
//! The timer needs a worker to run it: under a [`Runtime`](crate::Runtime),
//! or with threads registered as workers. A worker's own thread must not
//! wait for a timer on its own bases, which only it can run. A sleep from a
//! worker's thread is therefore armed on another worker, and refused with
//! [`TimerError::BlocksOnlyWorker`] if there is no other.

use crate::sync::parker::Parker;
use crate::{Timer, TimerError, TimerFlags, TimerSystem};
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

/// A reusable, interruptible sleep for one thread at a time.
pub struct Sleeper {
    timer: Timer,
    state: Arc<State>,
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

impl TimerSystem {
    /// A sleeper whose timer belongs to this system.
    pub fn sleeper(&self) -> Sleeper {
        let state = Arc::new(State::default());
        let s = state.clone();
        let timer = self.timer(TimerFlags::empty(), move |_| {
            s.fired.store(true, SeqCst);
            s.parker.unpark();
        });
        Sleeper { timer, state }
    }

    /// Blocks this thread for at least `d` (rounded up to whole ticks).
    ///
    /// # Errors
    /// As [`Sleeper::sleep_until`].
    pub fn sleep(&self, d: Duration) -> Result<(), TimerError> {
        self.sleeper().sleep(d).map(drop)
    }

    /// Blocks this thread until tick `deadline` has passed.
    ///
    /// # Errors
    /// As [`Sleeper::sleep_until`].
    pub fn sleep_until(&self, deadline: u64) -> Result<(), TimerError> {
        self.sleeper().sleep_until(deadline).map(drop)
    }
}

impl Sleeper {
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
        let sys = self.timer.system_handle();
        self.sleep_until(sys.ticks.deadline_after(d))
    }

    /// Sleeps until tick `deadline` has passed, or until interrupted.
    ///
    /// # Errors
    /// [`TimerError::BlocksOnlyWorker`] on the thread of a system's only
    /// worker; [`TimerError::Shutdown`] if the system is gone.
    pub fn sleep_until(&self, deadline: u64) -> Result<SleepOutcome, TimerError> {
        let sys = self.timer.system_handle();
        let state = &self.state;
        state.fired.store(false, SeqCst);
        let mut token = state.parker.token();
        match sys.entered_worker() {
            // On a worker's thread: arm on another worker (see module docs).
            Some(_) if sys.workers == 1 => return Err(TimerError::BlocksOnlyWorker),
            Some(me) => self.timer.add_on((me + 1) % sys.workers, deadline)?,
            None => self.timer.add(deadline)?,
        }
        let outcome = loop {
            if state.fired.load(SeqCst) {
                break SleepOutcome::Elapsed;
            }
            if state.interrupted.swap(false, SeqCst) {
                break SleepOutcome::Interrupted;
            }
            state.parker.park(token, None);
            token = state.parker.token();
        };
        self.timer.delete_sync()?;
        Ok(outcome)
    }
}

impl std::fmt::Debug for Sleeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sleeper")
            .field("timer", &self.timer)
            .finish()
    }
}
