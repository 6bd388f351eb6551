//! The runtime layer: workers that sleep without a periodic tick.
//!
//! [`Runtime`] is the embedded default: N worker threads. [`Worker`] is the
//! integration API for programs that own their threads; the runtime is
//! built on it.

#[cfg(not(loom))]
mod pool;
mod sleep;
mod worker;

#[cfg(not(loom))]
pub use pool::Runtime;
pub use sleep::{Interrupter, SleepOutcome, Sleeper};
pub use worker::Worker;
