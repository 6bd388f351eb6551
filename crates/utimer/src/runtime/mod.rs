//! The runtime layer: worker threads that run timers and jobs, and sleep
//! without a periodic tick.
//!
//! [`Runtime`] is the embedded default: N worker threads, each registered
//! through the integration API ([`Worker`](crate::Worker)) that programs
//! owning their threads use directly. This is the top layer: it uses the
//! [`TimerSystem`](crate::TimerSystem) facade and nothing below it. Beside
//! the workers and the stall monitor it runs `utimer-clockwatch`
//! (`clockwatch.rs`), which wakes workers when the wall clock is set.

#[cfg(not(loom))]
mod clockwatch;
#[cfg(not(loom))]
mod pool;

#[cfg(not(loom))]
pub use pool::Runtime;
