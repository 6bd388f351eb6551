//! POSIX timers in user space: `timer_create`, `timer_settime`,
//! `timer_gettime`, `timer_getoverrun` and `timer_delete` with the kernel's
//! semantics, without a system call, on hrtimers (`hrtimer/`).
//!
//! # The interface
//!
//! Timers belong to a [`TimerSystem`](crate::TimerSystem) as the kernel's
//! belong to a process, and are named by `int`-sized [`TimerId`]s. The
//! calls are methods of the system's [`PosixTimers`] handle
//! ([`TimerSystem::posix`](crate::TimerSystem::posix), `api.rs`); the C
//! front end maps them one to one. Semantics, as the kernel's (`kernel/time/posix-timers.c`):
//!
//! * `timer_settime` with a zero value disarms; the interval counts only
//!   with a non-zero value; it returns the old setting and resets the
//!   overrun; `abstime` makes the value an absolute time of the timer's
//!   clock. A relative `REALTIME` setting runs on the monotonic clock
//!   (wall-clock steps do not move it); an absolute one follows the wall
//!   clock (see `hrtimer/`).
//! * `timer_settime` and `timer_delete` wait for a notification callback
//!   that is running, unless called from that very callback.
//! * Periodic timers do not drift: each expiry is the first plus a whole
//!   number of intervals, however late a notification ran.
//! * The overrun is the number of periods missed while the previous
//!   notification was not yet consumed (a callback running, a signal
//!   pending), or while the worker was late, clamped to `INT_MAX`; it is
//!   latched with the next notification, as the kernel latches it at
//!   signal delivery. A `SIGEV_NONE` timer is never queued: its state is
//!   computed when asked, and a periodic one keeps wrapping.
//! * A signalling timer armed with an expiry already due (an absolute time
//!   passed, or a relative one so short that it passed while the call
//!   armed it) queues its signal from the calling thread, to that thread
//!   if it does not block the signal, so that the handler has run when
//!   `timer_settime` returns, as the kernel's hrtimer interrupt fires it
//!   before the system call returns.
//! * Times and intervals saturate at the kernel's `KTIME_MAX` (2^63 - 1
//!   ns), as `timespec64_to_ktime()` and `ktime_add_safe()` do.
//! * `timer_gettime` of an armed timer whose expiry has passed but whose
//!   notification is not out yet reports 1 ns, never 0 (which means
//!   disarmed); of an expired one-shot timer, 0.
//!
//! Notifications are in `notify.rs`, with the differences from the kernel
//! that user space imposes (a timer cannot take back a signal it queued).
//!
//! # ID lookup without a shared lock
//!
//! In 2011 every `timer_gettime` took one global spinlock (`idr_lock`) to
//! find its timer; on a 16-CPU machine, 16 processes calling it spent 98%
//! of their time spinning (78.7 s before, 3.3 s after). The fix made the
//! lookup an RCU read: no lock, no write to shared memory; the per-timer
//! lock is taken after the lookup and the owner rechecked under it. utimer
//! does the same with epoch-based reclamation (`table.rs`): the table is
//! process-wide (so an ID from another system is found and refused by the
//! owner check, never confused with one of ours), lookups pin an epoch and
//! read, inserts and deletes serialize on the table's writer lock, and a
//! deleted timer is freed once no lookup can still see it. A lookup then
//! locks the timer (`it_lock`) and checks `deleted` under it: the kernel's
//! `__lock_timer()`.

// Under loom only the table is built (its model is in `table.rs`): the
// rest needs the process-wide static table, which loom cannot model.
#[cfg(not(loom))]
mod api;
#[cfg(not(loom))]
mod notify;
#[cfg(not(loom))]
mod registry;
#[cfg(not(loom))]
mod sigqueue;
mod sigset;
mod snapshot;
pub(crate) mod table;
#[cfg(not(loom))]
mod timer;

#[cfg(not(loom))]
pub use api::PosixTimers;
#[cfg(not(loom))]
pub use notify::{
    hold_signals, report_acceptance, siginfo_of_signalfd, signal_ignored, signalfd_update,
    HeldSignals, Notify, NotifyFn,
};
pub use sigset::SignalSet;

/// Around `fork` (a library's `pthread_atfork` handlers): the lists of
/// timer signals waiting for acceptance are locked across the fork and
/// emptied in the child, which inherits neither the parent's pending
/// signals nor its timers.
#[cfg(not(loom))]
pub mod fork {
    pub use super::sigqueue::{
        fork_child as child, fork_parent as parent, fork_prepare as prepare,
    };
}

/// Whether timer signals of number `signo` wait behind its pending slot
/// (a standard signal's one pending instance): a library that reports
/// acceptances passes every accepted signal of that number to
/// [`PosixTimers::signal_accepted`], not only timer signals, so that the
/// next one is queued as soon as the slot is free. Lock-free.
#[cfg(not(loom))]
pub fn timer_signals_waiting(signo: i32) -> bool {
    sigqueue::waiting(signo) && sigqueue::is_standard(signo)
}

use crate::TimerError;
use std::time::Duration;

#[cfg(not(loom))]
std::thread_local! {
    /// Depth of [`in_signal_handler`] on this thread.
    static IN_HANDLER: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Runs `f` as a signal handler's code: the POSIX timer calls it makes
/// (`timer_gettime`, `timer_settime`, `timer_getoverrun`,
/// [`signal_accepted`](PosixTimers::signal_accepted)) then look their
/// timer up without pinning the ID table's epoch, which can allocate and
/// free, so that they are async-signal-safe as POSIX requires even when
/// the handler interrupted `malloc` (`table.rs`, "Lookups from signal
/// handlers"). Wrap a handler's body in it; the drop-in library's handler
/// trampoline does. Costs two thread-local writes.
#[cfg(not(loom))]
pub fn in_signal_handler<R>(f: impl FnOnce() -> R) -> R {
    struct Restore;
    impl Drop for Restore {
        fn drop(&mut self) {
            IN_HANDLER.with(|d| d.set(d.get() - 1));
        }
    }
    IN_HANDLER.with(|d| d.set(d.get() + 1));
    let _restore = Restore;
    f()
}

/// Whether this thread runs a signal handler's code.
#[cfg(not(loom))]
#[inline]
pub(crate) fn signal_context() -> bool {
    IN_HANDLER.with(std::cell::Cell::get) > 0
}

/// A POSIX timer's ID (`timer_t` as the kernel's `int`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TimerId(pub(crate) i32);

impl TimerId {
    /// The ID as an `int`.
    pub fn raw(self) -> i32 {
        self.0
    }

    /// An ID from an `int` (any value: a bad one is refused with
    /// [`TimerError::NoSuchTimer`] when used).
    pub fn from_raw(id: i32) -> TimerId {
        TimerId(id)
    }
}

/// A timer's setting: `struct itimerspec`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ItimerSpec {
    /// Time to the next expiry (relative), or the expiry (absolute, with
    /// `abstime`); zero disarms.
    pub value: Duration,
    /// The period after the first expiry; zero for a one-shot timer.
    pub interval: Duration,
}

impl ItimerSpec {
    /// A one-shot setting.
    pub fn once(value: Duration) -> ItimerSpec {
        ItimerSpec {
            value,
            interval: Duration::ZERO,
        }
    }

    /// A periodic setting: first after `value`, then every `interval`.
    pub fn periodic(value: Duration, interval: Duration) -> ItimerSpec {
        ItimerSpec { value, interval }
    }

    /// From a C `itimerspec`.
    ///
    /// # Errors
    /// [`TimerError::InvalidArgument`] for a negative `tv_sec` or a
    /// `tv_nsec` outside `0..1_000_000_000` (`EINVAL`).
    pub fn from_c(spec: &libc::itimerspec) -> Result<ItimerSpec, TimerError> {
        Ok(ItimerSpec {
            value: duration_from_c(&spec.it_value)?,
            interval: duration_from_c(&spec.it_interval)?,
        })
    }

    /// As a C `itimerspec` (seconds saturate at `time_t::MAX`).
    pub fn to_c(&self) -> libc::itimerspec {
        libc::itimerspec {
            it_value: duration_to_c(self.value),
            it_interval: duration_to_c(self.interval),
        }
    }
}

/// A C `timespec` as a `Duration`, checked as the kernel's
/// `timespec64_valid()`.
///
/// # Errors
/// [`TimerError::InvalidArgument`] if negative or not normalized.
#[doc(alias = "timespec64_valid")]
pub fn duration_from_c(ts: &libc::timespec) -> Result<Duration, TimerError> {
    if ts.tv_sec < 0 || !(0..1_000_000_000).contains(&ts.tv_nsec) {
        return Err(TimerError::InvalidArgument);
    }
    Ok(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// A `Duration` as a C `timespec` (seconds saturate).
pub fn duration_to_c(d: Duration) -> libc::timespec {
    libc::timespec {
        tv_sec: libc::time_t::try_from(d.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_nsec: d.subsec_nanos() as libc::c_long,
    }
}
