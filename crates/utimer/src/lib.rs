//! utimer: kernel-grade timers for user space.
//!
//! The Linux kernel's timer subsystem, rebuilt as a library. Its modules
//! stand in layers, each importing only the ones below it:
//!
//! | layer | modules | what |
//! |---|---|---|
//! | 0 | `sync/`, [`time`], `error` | the loom shim, spinlock, futex and parker; clocks and [`Expiry`]; errors |
//! | 1 | [`wheel`] | the non-cascading timer wheel, a pure data structure |
//! | 2 | `entry/` | the timer entry: header, state word, lifetime rules |
//! | 3 | [`base`] | per-worker bases with their own locks, the table of bases, expiry |
//! | 3 | [`hrtimer`] | high-resolution timers: per-worker, per-clock ordered queues, nanosecond expiries |
//! | 4 | `timer/` | [`Timer`]: arm, modify, reduce, delete, `delete_sync` |
//! | 5 | `migration/` | the pull model's hierarchy: groups, state words, event queues ([`Topology`]) |
//! | 6 | `nohz/` | tickless idle: next events of every source, wakers, wake policy, remote expiry, stall monitor |
//! | 7 | `system/` | the [`TimerSystem`] facade, [`Builder`], [`Worker`], [`Sleeper`], [`HrSleeper`] |
//! | 8 | [`posix`] | POSIX timers: the ID table with lock-free lookup (seed 003), `timer_settime` semantics, notifications |
//! | 9 | [`runtime`], [`sim`] | [`Runtime`]: worker threads; the pull model's simulator |
//!
//! A timer names its base through an address in its header: that is data,
//! not an import. The base layer calls up only through the hooks the system
//! installs in its table (whom to wake, what to run while blocked, whom to
//! tell about a panic).
//!
//! ```
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::sync::Arc;
//! use std::time::Duration;
//! use utimer::{Clock, TimerSystem};
//!
//! let clock = Clock::manual();
//! let sys = TimerSystem::builder().workers(1).clock(clock.clone()).build();
//! let fired = Arc::new(AtomicUsize::new(0));
//! let f = fired.clone();
//! let timer = sys.timer(move |_| {
//!     f.fetch_add(1, Ordering::Relaxed);
//! });
//! timer.modify(Duration::from_millis(10)).unwrap(); // arm: mod_timer(), 10 ticks from now
//! assert!(timer.modify(11).unwrap());                // re-arm to tick 11: was pending
//! clock.advance(11);
//! sys.run_expired(0, sys.now()).unwrap();            // the worker's expiry run
//! assert_eq!(fired.load(Ordering::Relaxed), 1);
//! assert!(!timer.delete());                          // already fired
//! ```
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod base;
mod entry;
mod error;
pub mod hrtimer;
mod migration;
mod nohz;
pub mod posix;
pub mod runtime;
#[cfg(not(loom))]
pub mod sim;
mod sync;
mod system;
pub mod time;
mod timer;
pub mod wheel;

pub use base::{BaseKind, BaseStats};
pub use error::TimerError;
pub use hrtimer::{HrBaseInfo, HrFire, HrRestart, HrStats, HrTimer};
pub use migration::{GroupInfo, MigrationStats, Topology};
#[cfg(not(loom))]
pub use posix::{ItimerSpec, Notify, TimerId};
#[cfg(not(loom))]
pub use runtime::Runtime;
pub use system::{
    Builder, EnterGuard, HrSleeper, Interrupter, SleepOutcome, Sleeper, SystemRef, TimerList,
    TimerSystem, WheelBaseInfo, Worker, WorkerTimers,
};
pub use time::{Clock, ClockId, Expiry};
pub use timer::{Timer, TimerFlags};

// The README's examples run as doctests of `utimer-async`, the crate that
// can see every front end they show.
