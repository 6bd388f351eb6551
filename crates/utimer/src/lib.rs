//! utimer: kernel-grade timers for user space.
//!
//! The Linux kernel's timer subsystem, rebuilt as a library, bottom up:
//!
//! 1. [`wheel`]: the non-cascading timer wheel, a pure data structure.
//! 2. [`base`] and [`Timer`]: per-worker timer bases, each with its own lock;
//!    any thread may arm, modify and cancel any timer.
//! 3. [`TimerSystem`]: the workers and their clock.
//!
//! ```
//! use std::sync::atomic::{AtomicUsize, Ordering};
//! use std::sync::Arc;
//! use utimer::{Clock, TimerFlags, TimerSystem};
//!
//! let clock = Clock::manual();
//! let sys = TimerSystem::builder().workers(1).clock(clock.clone()).build();
//! let fired = Arc::new(AtomicUsize::new(0));
//! let f = fired.clone();
//! let timer = sys.timer(TimerFlags::empty(), move |_| {
//!     f.fetch_add(1, Ordering::Relaxed);
//! });
//! timer.modify(sys.now() + 10).unwrap();       // arm: mod_timer()
//! assert!(timer.modify(sys.now() + 11).unwrap()); // re-arm: was pending
//! clock.advance(11);
//! sys.run_expired(0, sys.now()).unwrap();      // the worker's expiry run
//! assert_eq!(fired.load(Ordering::Relaxed), 1);
//! assert!(!timer.delete());                    // already fired
//! ```
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod base;
pub mod clock;
mod error;
pub mod runtime;
mod sync;
mod system;
mod timer;
pub mod wheel;

pub use base::{BaseKind, BaseStats};
pub use clock::Clock;
pub use error::TimerError;
#[cfg(not(loom))]
pub use runtime::Runtime;
pub use runtime::{Interrupter, SleepOutcome, Sleeper, Worker};
pub use system::{Builder, EnterGuard, ModifyCheck, TimerSystem};
pub use timer::{Timer, TimerFlags};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;
