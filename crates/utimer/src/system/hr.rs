//! The system as the environment of its hrtimers (`hrtimer::HrEnv`): the
//! table lives in the idle state (`nohz/`), the clock in the wheel bases'
//! table, and a worker's thread blocked in `HrTimer::cancel` runs its
//! worker's timers through the idle layer, as for wheel timers.

use super::Core;
use crate::hrtimer::{HrEnv, HrTable};
use crate::time::TickSource;
use std::sync::atomic::Ordering::SeqCst;
use std::time::Instant;

impl HrEnv for Core {
    fn table(&self) -> &HrTable {
        &self.nohz.hr
    }

    fn ticks(&self) -> &TickSource {
        &self.bases.ticks
    }

    fn wake(&self, worker: usize) {
        // The worker, and a thread that serves, which sleeps for the same
        // expiry (`serve.rs`). A worker that sleeps leaving its hrtimers
        // to the serving thread is not woken: its alarm moves to a grace
        // after the new expiry, and only the serving thread is kicked.
        if self.nohz.hr.served.load(SeqCst) {
            if let Some(sleep) = self.serve.worker(worker) {
                let first = self.nohz.hr.first_hard(worker, &self.bases.ticks);
                if sleep.hr_started(first) {
                    self.serve.kick();
                    return;
                }
            }
        }
        self.nohz.wake_hr(worker);
    }

    fn entered_worker(&self) -> Option<usize> {
        self.bases.entered_worker()
    }

    fn run_blocked(&self, worker: usize) -> Option<Instant> {
        let now = self.bases.ticks.now_precise();
        let (_, next) = self.nohz.run_expired(&self.bases, worker, now);
        next.deadline(&self.bases.ticks)
    }
}
