//! [`HrTimer`]: the handle to a high-resolution timer.

use super::base::{self, lock_base};
use super::entry::{Callback, HrEntry, HrFire, HrRestart};
use super::expire::running_here;
use super::HrTable;
use crate::sync::{futex, spin_hint};
use crate::time::{ClockId, Ktime, TickSource};
use crate::TimerError;
use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Spins this many times before sleeping on the futex in `cancel`.
const SPINS_BEFORE_SLEEP: u32 = 200;

/// What an hrtimer needs from the system above it: its table, the clock,
/// whom to wake, and what a blocked worker thread runs meanwhile.
pub(crate) trait HrEnv: Send + Sync {
    fn table(&self) -> &HrTable;
    fn ticks(&self) -> &TickSource;
    /// Wakes `worker`'s thread (an earlier timer landed on it).
    fn wake(&self, worker: usize);
    /// The worker this thread is bound to, if any.
    fn entered_worker(&self) -> Option<usize>;
    /// Runs `worker`'s due timers (wheel and hrtimers); returns when it
    /// must run again (monotonic instant), if known.
    fn run_blocked(&self, worker: usize) -> Option<Instant>;
}

/// A high-resolution timer: fires at its expiry in nanoseconds of its
/// clock, not at a tick boundary. The kernel's `struct hrtimer`.
///
/// Created by [`TimerSystem::hrtimer`](crate::TimerSystem::hrtimer) on the
/// creating thread's worker, whose thread runs its callback, always (see
/// the `hrtimer` module docs for the wheel/hrtimer split). Any thread may
/// start, restart and cancel it. Its callback never runs twice at once.
/// Dropping the handle cancels the timer without waiting; a callback
/// running at that moment finishes and cannot restart it.
pub struct HrTimer {
    entry: Arc<HrEntry>,
    env: Arc<dyn HrEnv>,
}

impl HrTimer {
    pub(crate) fn new(
        env: Arc<dyn HrEnv>,
        worker: usize,
        clock: ClockId,
        f: impl Fn(&mut HrFire) -> HrRestart + Send + Sync + 'static,
    ) -> HrTimer {
        let index = env.table().index(worker, clock) as u32;
        let entry: Arc<HrEntry<Callback>> = Arc::new(HrEntry::new(index, f));
        {
            // Room in its base's queue, so that a start never allocates.
            let (_, mut g) = lock_base(env.table(), &entry);
            g.queue.promise();
        }
        HrTimer { entry, env }
    }

    fn table(&self) -> &HrTable {
        self.env.table()
    }

    /// The clock the timer counts in.
    pub fn clock(&self) -> ClockId {
        let (base, _g) = lock_base(self.table(), &self.entry);
        base.clock
    }

    /// The worker whose thread runs the callback.
    pub fn worker(&self) -> usize {
        let (base, _g) = lock_base(self.table(), &self.entry);
        base.worker()
    }

    /// The current time of the timer's clock: the kernel's
    /// `hrtimer_cb_get_time()` outside a callback.
    pub fn now(&self) -> Ktime {
        Ktime::from_nanos(self.env.ticks().now_ns(self.clock()))
    }

    /// Starts (or restarts) the timer to fire when its clock reads `at`
    /// (absolute): the kernel's `hrtimer_start(HRTIMER_MODE_ABS)`. A time
    /// already passed fires at the worker's next expiry run.
    ///
    /// # Errors
    /// [`TimerError::Shutdown`] if the system is gone.
    #[doc(alias = "hrtimer_start")]
    pub fn start(&self, at: Ktime) -> Result<(), TimerError> {
        self.start_range(at, Duration::ZERO)
    }

    /// [`start`](Self::start) in ns, for the crate's own layers.
    pub(crate) fn start_ns(&self, at: u64) -> Result<(), TimerError> {
        self.start(Ktime::from_nanos(at))
    }

    /// [`expires`](Self::expires) in ns, for the crate's own layers.
    pub(crate) fn expires_ns(&self) -> Option<u64> {
        self.expires().map(Ktime::as_nanos)
    }

    /// Starts the timer to fire `d` from now, never earlier: the kernel's
    /// `hrtimer_start(HRTIMER_MODE_REL)`.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    #[doc(alias = "hrtimer_start")]
    pub fn start_after(&self, d: Duration) -> Result<(), TimerError> {
        self.start_range_after(d, Duration::ZERO)
    }

    /// Starts the timer to fire at `at` or up to `slack` later, so that it
    /// can share a wake-up with its neighbours: the kernel's
    /// `hrtimer_start_range_ns(HRTIMER_MODE_ABS)`.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    #[doc(alias = "hrtimer_start_range_ns")]
    pub fn start_range(&self, at: Ktime, slack: Duration) -> Result<(), TimerError> {
        let hard = (at + slack).as_nanos();
        let wake = base::start(self.table(), &self.entry, at.as_nanos(), hard)?;
        if let Some(w) = wake {
            self.env.wake(w);
        }
        Ok(())
    }

    /// [`start`](Self::start) unless its callback runs on another thread:
    /// then [`TimerError::Running`] and nothing changed (wait with
    /// [`cancel`](Self::cancel) and try again). A queued timer moves in
    /// place: the kernel's `hrtimer_try_to_cancel()` and `hrtimer_start()`
    /// under one lock of the base.
    ///
    /// # Errors
    /// [`TimerError::Running`]; [`TimerError::Shutdown`] if the system is
    /// gone.
    pub(crate) fn start_unless_running(&self, at: u64) -> Result<(), TimerError> {
        let wake = base::start_unless_running(self.table(), &self.entry, at, at)?;
        if let Some(w) = wake {
            self.env.wake(w);
        }
        Ok(())
    }

    /// Whether this thread runs this timer's callback now.
    pub(crate) fn running_here(&self) -> bool {
        running_here(&self.entry)
    }

    /// [`start_range`](Self::start_range), `d` from now.
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub fn start_range_after(&self, d: Duration, slack: Duration) -> Result<(), TimerError> {
        self.start_range(self.now() + d, slack)
    }

    /// Cancels the timer unless its callback is running: the kernel's
    /// `hrtimer_try_to_cancel()`. `Ok(true)` if it was queued.
    ///
    /// # Errors
    /// [`TimerError::Running`] while its callback runs (nothing changed).
    #[doc(alias = "hrtimer_try_to_cancel")]
    pub fn try_cancel(&self) -> Result<bool, TimerError> {
        base::try_cancel(self.table(), &self.entry)
    }

    /// Cancels the timer and waits until its callback is not running: the
    /// kernel's `hrtimer_cancel()`. Returns whether it was queued. After
    /// `Ok`, the timer is neither queued nor running (unless another thread
    /// starts it again). See the wheel's `delete_sync` for the rules about
    /// locks shared with the callback.
    ///
    /// # Errors
    /// [`TimerError::InOwnCallback`] from its own callback (nothing
    /// changed).
    #[doc(alias = "hrtimer_cancel")]
    pub fn cancel(&self) -> Result<bool, TimerError> {
        loop {
            match self.try_cancel() {
                Err(TimerError::Running) => {}
                done => return done,
            }
            if running_here(&self.entry) {
                return Err(TimerError::InOwnCallback);
            }
            self.wait_for_callback();
        }
    }

    /// Waits until the callback running now has returned.
    fn wait_for_callback(&self) {
        let (base, mut g) = lock_base(self.table(), &self.entry);
        if !base.is_running(&self.entry) {
            return;
        }
        g.waiters += 1;
        let seq = base.callback_seq.load(Relaxed);
        drop(g);
        for _ in 0..SPINS_BEFORE_SLEEP {
            if base.callback_seq.load(Acquire) != seq {
                return;
            }
            spin_hint();
        }
        let Some(worker) = self.env.entered_worker() else {
            while base.callback_seq.load(Acquire) == seq {
                futex::wait(&base.callback_seq, seq);
            }
            return;
        };
        // A worker's thread keeps its own timers running while it waits
        // (they may be what the callback waits for).
        let tick = self.env.ticks().tick();
        while base.callback_seq.load(Acquire) == seq {
            let slice = self.env.run_blocked(worker).map_or(tick, |at| {
                tick.min(at.saturating_duration_since(Instant::now()))
            });
            futex::wait_timeout(&base.callback_seq, seq, Some(slice));
        }
    }

    /// Queued, or its callback running: the kernel's `hrtimer_active()`.
    #[doc(alias = "hrtimer_active")]
    pub fn is_active(&self) -> bool {
        let (base, _g) = lock_base(self.table(), &self.entry);
        self.entry.is_queued() || base.is_running(&self.entry)
    }

    /// Queued (waiting to fire): the kernel's `hrtimer_is_queued()`.
    #[doc(alias = "hrtimer_is_queued")]
    pub fn is_queued(&self) -> bool {
        self.entry.is_queued()
    }

    /// Whether its callback runs right now (on its worker).
    pub fn is_running(&self) -> bool {
        let (base, _g) = lock_base(self.table(), &self.entry);
        base.is_running(&self.entry)
    }

    /// The soft expiry it is queued for (`None`: not queued). The kernel's
    /// `hrtimer_get_softexpires()`.
    #[doc(alias = "hrtimer_get_softexpires")]
    pub fn expires(&self) -> Option<Ktime> {
        let _g = lock_base(self.table(), &self.entry);
        self.entry
            .is_queued()
            .then(|| Ktime::from_nanos(self.entry.soft.load(Relaxed)))
    }

    /// Time left until it fires (`Some(ZERO)` when due; `None`: not
    /// queued). The kernel's `hrtimer_get_remaining()`.
    #[doc(alias = "hrtimer_get_remaining")]
    pub fn remaining(&self) -> Option<Duration> {
        let at = self.expires()?;
        Some(at.saturating_duration_since(self.now()))
    }

    /// Moves the timer to its worker's base of another clock. Only while it
    /// is neither queued nor running (cancel it first).
    ///
    /// # Errors
    /// [`TimerError::AlreadyPending`] if queued, [`TimerError::Running`]
    /// while its callback runs.
    pub fn set_clock(&self, clock: ClockId) -> Result<(), TimerError> {
        base::set_clock(self.table(), &self.entry, clock)
    }
}

impl Drop for HrTimer {
    fn drop(&mut self) {
        base::shutdown(self.env.table(), &self.entry);
    }
}

impl std::fmt::Debug for HrTimer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HrTimer")
            .field("queued", &self.is_queued())
            .field("soft", &self.entry.soft.load(Relaxed))
            .finish()
    }
}
