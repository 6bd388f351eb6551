//! utimer: kernel-grade timers for user space.
//!
//! The Linux kernel's timer subsystem rebuilt as a library: a worker thread
//! plays the part of a kernel CPU, each worker has its own timer bases with
//! their own locks, and any thread may arm, re-arm and cancel any timer.
//! Linux only.
//!
//! # A first timer
//!
//! A [`Runtime`] starts worker threads that run the timers' expiry; its
//! [`TimerSystem`] makes the timers.
//!
//! ```
//! use std::sync::mpsc;
//! use std::time::{Duration, Instant};
//! use utimer::Runtime;
//!
//! let rt = Runtime::new(2).unwrap();
//! let (tx, rx) = mpsc::channel();
//! let timer = rt.system().timer(move |_| tx.send(Instant::now()).unwrap());
//! let armed = Instant::now();
//! timer.modify(Duration::from_millis(20)).unwrap(); // mod_timer(): arm
//! let fired = rx.recv_timeout(Duration::from_secs(10)).unwrap();
//! assert!(fired - armed >= Duration::from_millis(20)); // never early
//! rt.shutdown();
//! ```
//!
//! # Which timer
//!
//! | you need | use | fires | cost |
//! |---|---|---|---|
//! | a timeout that is usually cancelled or pushed back (per request, per connection, keepalive) | [`Timer`] (`sys.timer(f)`), the kernel's `timer_list` | never early, at most one granule of its wheel level late (about 12.5% of the timeout; exact under 63 ticks) | O(1), no allocation per arm |
//! | a deadline that must be met: periodic work, a precise wake-up | [`HrTimer`] (`sys.hrtimer(clock, f)`), the kernel's `hrtimer` | at its nanosecond expiry, plus the wake-up latency | O(log n) |
//! | to block a thread until a time | [`TimerSystem::sleep`], [`TimerSystem::sleep_until`], a [`Sleeper`] | as an hrtimer | — |
//! | POSIX semantics: signals, an fd, overruns, wall-clock timers | [`sys.posix()`](TimerSystem::posix): [`timer_create`](PosixTimers::timer_create) … [`timer_delete`](PosixTimers::timer_delete) ([`posix`]) | as an hrtimer; periodic timers do not drift | lock-free ID lookup |
//!
//! Async code uses the `utimer-async` crate (`tokio::time`-shaped futures
//! for any executor) and C code the `utimer-capi` library.
//!
//! # Arming
//!
//! Every arming call of a [`Timer`] ([`add`](Timer::add),
//! [`modify`](Timer::modify), [`modify_pending`](Timer::modify_pending),
//! [`reduce`](Timer::reduce)) takes an [`Expiry`]: a `Duration` from now,
//! an `Instant`, [`Expiry::AfterTicks`], or an absolute tick
//! ([`Expiry::Tick`], like the kernel's `jiffies + n`;
//! [`TimerSystem::now`] is the coarse tick). A bare integer is no expiry.
//! The verbs are the kernel's: `modify` arms or re-arms (`mod_timer()`),
//! `reduce` only ever moves a timer earlier (`timer_reduce()`), `delete`
//! cancels (`timer_delete()`), [`delete_sync`](Timer::delete_sync) also
//! waits for a running callback (`timer_delete_sync()`), and
//! [`shutdown`](Timer::shutdown) refuses later arms (`timer_shutdown()`).
//! An arm goes to the calling thread's worker; a re-arm into the bucket the
//! timer is already in takes no lock.
//!
//! ```
//! # use std::time::Duration;
//! # use utimer::{Expiry, Runtime, TimerFlags, HrRestart, ClockId};
//! # let rt = Runtime::new(1).unwrap();
//! let sys = rt.system();
//! let timeout = sys.timer(|_| {});
//! timeout.modify(Duration::from_secs(30)).unwrap(); // a request timeout
//! timeout.modify(Duration::from_secs(30)).unwrap(); // pushed back: usually no lock
//! timeout.delete_sync().unwrap();                  // answered: gone, callback not running
//!
//! let pinned = sys.timer_with_flags(TimerFlags::PINNED, |_| {});
//! pinned.add(Expiry::AfterTicks(10)).unwrap(); // always expired by this worker
//!
//! let tick = sys.hrtimer(ClockId::Monotonic, |_| HrRestart::NoRestart);
//! tick.start_after(Duration::from_micros(500)).unwrap(); // nanosecond expiry
//! sys.sleep(Duration::from_millis(1)).unwrap();          // schedule_timeout()
//! # drop((timeout, pinned, tick)); rt.shutdown();
//! ```
//!
//! # Guarantees
//!
//! * **Never early.** A timer never fires before its expiry; relative
//!   expiries read the precise clock and round up.
//! * **How late.** A wheel timer fires at most one granule of the wheel
//!   level its timeout selects late (the timeout is the expiry minus
//!   [`TimerSystem::now`] at the arm), however far its worker's base clock
//!   has fallen behind and whoever arms it, a callback included; an
//!   expiry at or before the present fires at the next expiry run. See
//!   [`wheel`] for the levels.
//! * **Callbacks** run outside every lock, one at a time per timer, and may
//!   re-arm, delete or drop their own timer; dropping a [`Timer`] never
//!   blocks.
//! * **Idle workers sleep** with no periodic tick; their movable timers are
//!   expired by a busy worker (the kernel's pull model), deferrable ones
//!   wait for their worker.
//!
//! # Without threads of utimer's own
//!
//! A [`TimerSystem`] made with [`TimerSystem::without_threads`] or
//! [`Builder::build_without_threads`] starts no threads (the names say
//! so; [`Runtime::new`] and [`Builder::start`] do): bind your own threads
//! to its workers
//! ([`TimerSystem::register_worker`], [`TimerSystem::enter`]) and run
//! their expiry ([`TimerSystem::run_expired`]), or drive it from a manual
//! [`Clock`] in tests:
//!
//! ```
//! use utimer::{Clock, Expiry, TimerSystem};
//!
//! let clock = Clock::manual();
//! let sys = TimerSystem::builder()
//!     .workers(1)
//!     .clock(clock.clone())
//!     .build_without_threads();
//! let timer = sys.timer(|_| {});
//! timer.modify(Expiry::Tick(50)).unwrap(); // absolute tick 50 (level 0: exact)
//! clock.set(49);
//! assert_eq!(sys.run_expired(0, sys.now()).unwrap(), 0); // never early
//! clock.set(50);
//! assert_eq!(sys.run_expired(0, sys.now()).unwrap(), 1);
//! ```
//!
//! Counters and the kernel's `/proc/timer_list` of a running system are
//! on [`sys.metrics()`](TimerSystem::metrics). The pure timer wheel is
//! usable on its own ([`wheel::Wheel`]). How the
//! modules stand in layers, and why, is in `docs/architecture.md`; each
//! module's own documentation explains its part.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

mod error;
pub mod hrtimer;
mod migration;
mod nohz;
pub mod posix;
pub mod runtime;
#[cfg(all(not(loom), feature = "bench-internals"))]
pub mod sim;
mod sync;
mod system;

/// The one entry point of the loom models, under `--cfg loom` only: the
/// integration tests' models (`tests/loom*.rs`) run through the same
/// helper, with the same bounds, as the crate's own.
#[cfg(loom)]
#[doc(hidden)]
pub mod loom_model {
    pub use crate::sync::{model, model_bounded, PREEMPTIONS};
}
pub mod time;
mod timer_list;
pub mod wheel;

pub use error::TimerError;
pub use hrtimer::{HrBaseInfo, HrFire, HrRestart, HrStats, HrTimer};
pub use migration::{GroupInfo, MigrationStats, Topology};
#[cfg(not(loom))]
pub use posix::{ItimerSpec, Notify, PosixTimers, TimerId};
#[cfg(not(loom))]
pub use runtime::Runtime;
#[cfg(not(loom))]
pub use sync::alarm::{for_each_owned_fd, owns_fd};
pub use system::{
    Builder, EnterGuard, HrSleeper, Interrupter, Metrics, Server, Serving, SleepOutcome, Sleeper,
    SystemRef, TimerList, TimerSystem, WheelBaseInfo, Woke, Worker, WorkerTimers, MAX_AHEAD,
    MAX_WORKERS, MIN_AHEAD, SERVE_GRACE,
};
pub use time::{Clock, ClockId, Expiry, Ktime};
pub use timer_list::{BaseKind, BaseStats, Timer, TimerFlags};

// The README's examples run as doctests of `utimer-async`, the crate that
// can see every front end they show.
