//! The wheel timer: the kernel's `kernel/time/timer.c` (`struct
//! timer_list`), beside its sibling [`hrtimer`](crate::hrtimer)
//! (`hrtimer.c`).
//!
//! One layer in three parts, bottom up, each importing only the ones
//! before it:
//!
//! | part | holds | kernel |
//! |------|-------|--------|
//! | `entry/` | what a base queues: the state word, the base link, the wheel key, the callback's vtable | `struct timer_list` |
//! | `base/` | per worker three bases, each a wheel under one lock; enqueue, expiry, the idle mirror, hot-plug | `struct timer_base`, `__run_timers()`, `timers_dead_cpu()` |
//! | `timer/` | the handle users hold: arm, re-arm, cancel, `delete_sync`, `shutdown` | `mod_timer()`, `timer_delete_sync()`, `timer_shutdown_sync()` |
//!
//! The pure wheel underneath (levels, buckets, granularity) is
//! [`wheel`](crate::wheel); the pull model that expires an idle worker's
//! timers (`migration/`) and the idle state (`nohz/`) stand above. The
//! layer order is written once, in `tests/layers.rs`, and drawn in
//! `docs/architecture.md`.

pub(crate) mod base;
pub(crate) mod entry;
pub(crate) mod timer;

pub use base::{BaseKind, BaseStats};
pub use timer::{Timer, TimerFlags};
