//! The integration API: an executor, event loop or poller that owns its
//! threads makes one of them a utimer worker.
//!
//! The thread registers with a *waker*, a closure that interrupts its
//! sleep. Then its loop runs, in the same shape as the kernel's idle loop
//! with `NO_HZ`:
//!
//! ```text
//! loop {
//!     do_work();                           // your tasks, I/O completions, ...
//!     worker.run_expired();                // the kernel's run_timer_softirq()
//!     match worker.idle() {                // tick_nohz_idle_enter(): may I sleep?
//!         Some(tick) => sleep_until(tick), //   until the next timer, at the latest
//!         None => sleep(),                 //   no timer: until woken
//!     }                                    // (the waker cuts either short)
//!     worker.busy();                       // tick_nohz_idle_exit()
//! }
//! ```
//!
//! Between `idle()` and `busy()` the worker's bases know when it will wake.
//! A timer armed there (from any thread) that fires earlier calls the waker,
//! as the kernel's `trigger_dyntick_cpu()` sends an IPI. Deferrable timers
//! never wake it. A complete event loop built this way is in
//! `examples/event_loop.rs`.

use crate::system::Waker;
use crate::{EnterGuard, TimerError, TimerSystem};
use std::sync::Arc;
use std::time::Instant;

/// A thread registered as one of a [`TimerSystem`]'s workers
/// ([`TimerSystem::register_worker`]). Timers this thread arms go to its
/// worker's bases. Dropping it unregisters the waker.
pub struct Worker<'a> {
    sys: &'a TimerSystem,
    index: usize,
    _enter: EnterGuard<'a>,
}

impl TimerSystem {
    /// Makes the current thread worker `worker`, woken through `wake` when a
    /// timer armed on its idle bases must fire before it planned to wake.
    /// `wake` may be called from any thread, never under a utimer lock; it
    /// must not block.
    ///
    /// # Errors
    /// [`TimerError::NoSuchWorker`] if `worker` is out of range.
    pub fn register_worker(
        &self,
        worker: usize,
        wake: impl Fn() + Send + Sync + 'static,
    ) -> Result<Worker<'_>, TimerError> {
        let enter = self.enter(worker)?;
        let waker: Waker = Arc::new(wake);
        self.shared().set_waker(worker, Some(waker));
        Ok(Worker {
            sys: self,
            index: worker,
            _enter: enter,
        })
    }
}

impl Worker<'_> {
    /// This worker's index.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Runs every callback of this worker's timers that is due now (precise
    /// clock); returns how many ran. The kernel's `run_timer_softirq()`.
    pub fn run_expired(&self) -> usize {
        let now = self.sys.now_precise();
        self.sys.run_expired(self.index, now).unwrap_or(0)
    }

    /// "I am going idle: until when may I sleep?" Returns the tick at which
    /// this worker's next timer is due, or `None` if it has none, and from
    /// now until [`busy`](Self::busy) wakes the thread through its waker
    /// when an earlier timer is armed on its bases. If the tick is not in
    /// the future, run [`run_expired`](Self::run_expired) instead of sleeping.
    /// The kernel's `tick_nohz_idle_enter()`.
    pub fn idle(&self) -> Option<u64> {
        self.sys.shared().go_idle(self.index)
    }

    /// [`idle`](Self::idle), as the instant to sleep until (monotonic
    /// clock; `None` for no timer, or for a manual clock).
    pub fn idle_until(&self) -> Option<Instant> {
        self.idle().and_then(|tick| self.sys.instant_of(tick))
    }

    /// "I am busy again": arms on this worker's bases stop waking it. The
    /// kernel's `tick_nohz_idle_exit()`.
    pub fn busy(&self) {
        self.sys.shared().go_busy(self.index);
    }
}

impl Drop for Worker<'_> {
    fn drop(&mut self) {
        self.busy();
        self.sys.shared().set_waker(self.index, None);
    }
}

impl std::fmt::Debug for Worker<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("index", &self.index)
            .finish()
    }
}
