//! Shutting a [`TimerSystem`] down.
//!
//! [`TimerSystem::shutdown`] (which dropping the system, and stopping its
//! [`Runtime`](crate::Runtime), call) shuts every base down: pending
//! timers are cancelled (their callbacks never run, and they no longer
//! read as pending), hrtimers and POSIX timers included, and later arms
//! return [`TimerError::Shutdown`](crate::TimerError::Shutdown), as do
//! sleeps and POSIX `timer_create`. The timers themselves stay valid and
//! inert: each keeps the base table alive until its handle is dropped. A
//! callback running at that moment finishes.
//!
//! The order: the table's flag first (what callers without a base lock
//! look at), then each base's `DEAD` under its lock (what arms obey: an
//! arm that got in before it is drained with the rest), then the
//! sleepers and the workers' wakers, so that a thread waiting on a worker
//! finds out.

use super::TimerSystem;

impl Drop for TimerSystem {
    fn drop(&mut self) {
        self.shutdown();
    }
}
