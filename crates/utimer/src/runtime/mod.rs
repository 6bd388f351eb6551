//! The runtime layer: workers that sleep without a periodic tick.
//!
//! [`Worker`] is the integration API for programs that own their threads.

mod worker;

pub use worker::Worker;
