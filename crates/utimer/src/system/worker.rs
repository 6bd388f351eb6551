//! The integration API: an executor, event loop or poller that owns its
//! threads makes one of them a utimer worker.
//!
//! The thread registers with a *waker*, a closure that interrupts its
//! sleep. Then its loop runs, in the same shape as the kernel's idle loop
//! with `NO_HZ`:
//!
//! ```text
//! loop {
//!     do_work();                             // your tasks, I/O completions, ...
//!     worker.run_expired();                  // the kernel's run_timer_softirq()
//!     match worker.idle_enter() {            // tick_nohz_idle_enter(): may I sleep?
//!         Some(tick) => sleep_until(tick),   //   until the next timer, at the latest
//!         None => sleep(),                   //   no timer: until woken
//!     }                                      // (the waker cuts either short)
//!     worker.idle_exit();                    // tick_nohz_idle_exit()
//! }
//! ```
//!
//! Between `idle_enter()` and `idle_exit()` the worker's bases know when it
//! will wake. A timer armed there (from any thread) that fires earlier calls
//! the waker, as the kernel's `trigger_dyntick_cpu()` sends an IPI.
//! Deferrable timers never wake it. A complete event loop built this way is
//! in `examples/event_loop.rs`.
//!
//! A registered worker takes part in the pull model (`migration/`): while
//! it is idle, its movable timers are expired by a busy worker and do not
//! wake it; `run_expired` also expires idle workers' movable timers when
//! this worker is their migrator. Its pinned timers run only when its
//! thread runs them, and a long job on that thread delays them; its
//! movable ones are pulled by others once it has missed its tick points
//! for longer than the stall bound, if a stall monitor runs
//! ([`TimerSystem::run_monitor`](crate::TimerSystem::run_monitor); a
//! [`Runtime`](crate::Runtime) has one). A thread that blocks inside utimer (a [`sleep`], or a
//! `delete_sync` waiting for a callback elsewhere) keeps running its own
//! timers while it waits.
//!
//! [`sleep`]: crate::TimerSystem::sleep

use super::Core;
use crate::nohz::{Idle, Waker};
use crate::timer_list::base::{Bases, Binding};
use std::marker::PhantomData;
use std::time::Instant;

/// A thread registered as one of a [`TimerSystem`](crate::TimerSystem)'s
/// workers ([`TimerSystem::register_worker`](crate::TimerSystem::register_worker)).
///
/// An owned handle (it keeps the system's bases alive, not the system: a
/// dropped system cancels its timers as usual) that an executor can keep in
/// its per-thread state. Timers this thread arms go to its worker's bases.
/// It is bound to the thread that registered (not `Send`). Dropping it
/// unregisters the waker and unbinds the thread.
pub struct Worker {
    core: Core,
    index: usize,
    previous: Binding,
    /// Its thread, in the system's list of real-time workers.
    tid: libc::pid_t,
    _not_send: PhantomData<*const ()>,
}

impl Worker {
    pub(crate) fn register(core: Core, index: usize, wake: Waker) -> Worker {
        let previous = core.bases.enter(index);
        // The first thread to register a worker owns its bases: its locks
        // skip the atomic read-modify-write while it is busy.
        for b in core.bases.of_worker(index) {
            b.claim_ownership();
        }
        core.nohz.swap_waker(index, Some(wake));
        // Its heartbeat from the precise clock: the coarse one lags by up
        // to a few ticks, enough for the monitor to count it stalled.
        if core.nohz.hier.join(index, core.bases.ticks.now_precise()) {
            core.nohz.monitor.someone_active();
        }
        // It takes the workers' real-time priority, if they have one.
        let tid = core.realtime.join();
        Worker {
            core,
            index,
            previous,
            tid,
            _not_send: PhantomData,
        }
    }

    /// Whether the workers run at a real-time priority
    /// ([`TimerSystem::serve_realtime`](crate::TimerSystem::serve_realtime)):
    /// then the runtime wakes ahead of an expiry.
    pub(crate) fn realtime(&self) -> bool {
        self.core.realtime.priority() > 0
    }

    /// This worker's index.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Runs every callback of this worker's timers that is due now (precise
    /// clock); returns how many ran. The kernel's `run_timer_softirq()`.
    #[doc(alias = "run_timer_softirq")]
    pub fn run_expired(&self) -> usize {
        let bases = &self.core.bases;
        let now = bases.ticks.now_precise();
        self.core.nohz.run_expired(bases, self.index, now).0
    }

    /// "I am going idle: until when may I sleep?" Returns the tick at which
    /// this worker must run again, or `None` for "until woken": its next
    /// pinned timer, and, if it is the last worker of the pull model to go
    /// idle, the first movable timer of all workers (its own movable
    /// timers are otherwise left to busy workers). From now until
    /// [`idle_exit`](Self::idle_exit) the thread is woken through its waker
    /// when an earlier timer needs it. If the tick is not in the future,
    /// run [`run_expired`](Self::run_expired) instead of sleeping. The
    /// kernel's `tick_nohz_idle_enter()`.
    ///
    /// A tick is coarse for hrtimers: their expiry is rounded up to the
    /// next tick here (never early, up to a tick late). A loop that wants
    /// them on time sleeps until [`idle_enter_until`](Self::idle_enter_until)
    /// instead.
    #[doc(alias = "tick_nohz_idle_enter")]
    pub fn idle_enter(&self) -> Option<u64> {
        let next = self.core.nohz.idle_enter(&self.core.bases, self.index);
        next.earliest_tick(&self.core.bases.ticks)
    }

    /// [`idle_enter`](Self::idle_enter), as the instant to sleep until,
    /// precise to the nanosecond for hrtimers (monotonic clock; `None` for
    /// no timer, or for a manual clock). Set the thread's timer slack low
    /// (`prctl(PR_SET_TIMERSLACK)`) if the sleep is a futex or `epoll`
    /// timeout: the kernel otherwise adds up to 50 µs to it.
    pub fn idle_enter_until(&self) -> Option<Instant> {
        let next = self.core.nohz.idle_enter(&self.core.bases, self.index);
        next.deadline(&self.core.bases.ticks)
    }

    /// [`idle_enter`](Self::idle_enter), as what the runtime's loop does
    /// next: run at once, or sleep for at most a duration.
    pub(crate) fn idle(&self) -> Idle {
        self.core.nohz.idle(&self.core.bases, self.index)
    }

    /// [`idle`](Self::idle) for a worker that sleeps on an alarm: `None`
    /// to run at once, else its wheel deadline and first hrtimer expiry in
    /// monotonic ns (`system/serve.rs`).
    pub(crate) fn idle_split(&self) -> Option<(u64, u64)> {
        self.core.nohz.idle_split(&self.core.bases, self.index)
    }

    /// This worker's first hrtimer expiry now, monotonic ns (`u64::MAX`:
    /// none), without a lock.
    pub(crate) fn hr_first(&self) -> u64 {
        self.core
            .nohz
            .hr
            .first_soft(self.index, &self.core.bases.ticks)
    }

    /// Whether a thread serves the hrtimers now (`system/serve.rs`).
    pub(crate) fn served(&self) -> bool {
        self.serving().0
    }

    /// Whether a thread serves the hrtimers now, and how many claims of
    /// the role and serving steps were made so far (`system/serve.rs`).
    pub(crate) fn serving(&self) -> (bool, u64, u64) {
        use std::sync::atomic::Ordering::SeqCst;
        let hr = &self.core.nohz.hr;
        (
            hr.served.load(SeqCst),
            hr.claims.load(SeqCst),
            hr.beats.load(SeqCst),
        )
    }

    /// "I am busy again": arms on this worker's bases stop waking it. The
    /// kernel's `tick_nohz_idle_exit()`.
    #[doc(alias = "tick_nohz_idle_exit")]
    pub fn idle_exit(&self) {
        self.core.nohz.idle_exit(&self.core.bases, self.index);
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.core.realtime.leave(self.tid);
        self.idle_exit();
        for b in self.core.bases.of_worker(self.index) {
            b.release_ownership();
        }
        // Out of the pull model: nobody pulls its timers any more, and if
        // it was the last active worker, the idle worker with the first
        // movable event is woken to take the wake-up duty.
        let top = self.core.nohz.hier.leave(self.index);
        self.core.nohz.swap_waker(self.index, None);
        self.core.nohz.act(top);
        Bases::leave(self.previous);
    }
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("index", &self.index)
            .finish()
    }
}
