//! The bench groups, one module each: every `run` function of the crate's
//! `GROUPS` table lives here.

pub(crate) mod async_runtime;
pub(crate) mod async_server;
pub(crate) mod async_timers;
pub(crate) mod cases;
pub(crate) mod threads;

// The kernel patches utimer rebuilt, each replayed with its own experiment
// (docs/kernel.md).
pub(crate) mod delete_sync;
pub(crate) mod latency;
pub(crate) mod posix_timers;
pub(crate) mod pull_model;
pub(crate) mod rearm_shares;
