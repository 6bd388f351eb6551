//! Shutting a [`TimerSystem`] down.
//!
//! Dropping the system shuts every base down: pending timers are cancelled
//! (their callbacks never run), hrtimers included, and later arms return
//! [`TimerError::Shutdown`](crate::TimerError::Shutdown). The timers
//! themselves stay valid and inert: each keeps the base table alive until
//! its handle is dropped. A callback running at that moment finishes.

use super::TimerSystem;

impl Drop for TimerSystem {
    fn drop(&mut self) {
        for base in self.core.bases.all() {
            base.shut_down();
        }
        self.core.nohz.hr.shutdown();
    }
}
