//! Errors.

use std::fmt;

/// Why a timer operation was refused. Nothing is changed when an error is
/// returned. Small enough (8 bytes) that results carrying it are returned in
/// registers on the hot paths.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TimerError {
    /// The timer's [`TimerSystem`](crate::TimerSystem) has shut down: it was
    /// dropped, its [`Runtime`](crate::Runtime) stopped
    /// ([`Runtime::shutdown`](crate::Runtime::shutdown) or drop), or
    /// [`TimerSystem::shutdown`](crate::TimerSystem::shutdown) was called.
    /// It accepts no timers: arming, re-arming or creating one fails with
    /// this (`ESHUTDOWN` in C), as tokio's timers fail once their runtime
    /// is gone (`tokio::time::error::Error::shutdown`). The timer itself
    /// stays valid (and inert): it is not pending.
    Shutdown,
    /// `add` on a timer that is already pending (the kernel would `BUG()`).
    AlreadyPending,
    /// `try_delete_sync`: the callback is running right now; nothing was
    /// changed.
    Running,
    /// `delete_sync` or `shutdown_sync` called from the timer's own callback,
    /// where waiting for the callback would wait forever; nothing was changed.
    InOwnCallback,
    /// `sleep` inside a timer callback: the expiry run that must fire the
    /// sleep's timer cannot go on while its callback blocks.
    InCallback,
    /// A worker index out of range.
    NoSuchWorker {
        /// The index given (saturated to `u32::MAX`).
        worker: u32,
    },
    /// Taking a worker offline that is offline, or bringing one online that
    /// is online.
    WorkerState {
        /// The worker.
        worker: u32,
        /// Whether it is online.
        online: bool,
    },
    /// Taking the last online worker offline: its timers would have nowhere
    /// to go.
    LastWorker,
    /// A [`Topology`](crate::Topology) override describes another number of
    /// workers than the system has
    /// ([`Builder::workers`](crate::Builder::workers)).
    BadTopology {
        /// Workers the topology describes (saturated to `u32::MAX`).
        described: u32,
    },
    /// A POSIX timer ID that names no timer of this system: never issued,
    /// deleted, or another system's (`EINVAL`).
    NoSuchTimer,
    /// An argument out of range: a negative or non-normalized `timespec`
    /// (`tv_nsec` outside `0..1_000_000_000`), an unknown clock or
    /// notification, a signal number out of range (`EINVAL`).
    InvalidArgument,
    /// No memory for another timer, or the ID space is full (`EAGAIN` as
    /// `timer_create` says).
    NoSpace,
    /// More workers than a system may have
    /// ([`MAX_WORKERS`](crate::MAX_WORKERS)), refused before anything is
    /// made or any thread starts (`EINVAL`).
    TooManyWorkers {
        /// The count asked for (saturated to `u32::MAX`).
        requested: u32,
    },
    /// A file descriptor or signal could not be set up; the payload is the
    /// `errno` the kernel gave.
    Os(i32),
}

impl TimerError {
    /// The `errno` value the C API reports for this error (POSIX names:
    /// `EINVAL`, `EAGAIN`, `EDEADLK`, ...).
    pub fn errno(&self) -> i32 {
        match self {
            TimerError::Shutdown => libc::ESHUTDOWN,
            TimerError::AlreadyPending => libc::EALREADY,
            TimerError::Running => libc::EBUSY,
            TimerError::InOwnCallback => libc::EDEADLK,
            TimerError::InCallback => libc::EDEADLK,
            TimerError::NoSuchWorker { .. } => libc::EINVAL,
            TimerError::WorkerState { .. } => libc::EALREADY,
            TimerError::LastWorker => libc::EBUSY,
            TimerError::BadTopology { .. } => libc::EINVAL,
            TimerError::NoSuchTimer => libc::EINVAL,
            TimerError::InvalidArgument => libc::EINVAL,
            TimerError::NoSpace => libc::EAGAIN,
            TimerError::TooManyWorkers { .. } => libc::EINVAL,
            TimerError::Os(e) => *e,
        }
    }
}

impl fmt::Display for TimerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimerError::Shutdown => f.write_str("the timer system has been shut down"),
            TimerError::AlreadyPending => f.write_str("the timer is already pending"),
            TimerError::Running => f.write_str("the timer's callback is running"),
            TimerError::InCallback => f.write_str(
                "a timer callback may not sleep: it would block the expiry run that must wake it",
            ),
            TimerError::InOwnCallback => f.write_str(
                "a synchronous delete from the timer's own callback would wait for itself",
            ),
            TimerError::NoSuchWorker { worker } => {
                write!(f, "no worker {worker}: worker indices start at 0 and stay below the system's worker count")
            }
            TimerError::WorkerState { worker, online: true } => {
                write!(f, "worker {worker} is already online")
            }
            TimerError::WorkerState { worker, online: false } => {
                write!(f, "worker {worker} is already offline")
            }
            TimerError::LastWorker => f.write_str(
                "the last online worker cannot go offline: its timers would have nowhere to go",
            ),
            TimerError::BadTopology { described } => write!(
                f,
                "the topology describes {described} workers, not as many as the system has: give one node per worker"
            ),
            TimerError::NoSuchTimer => f.write_str(
                "no such POSIX timer in this system: the ID was never issued, was deleted, or belongs to another system",
            ),
            TimerError::InvalidArgument => f.write_str(
                "invalid argument: timespecs must be non-negative with tv_nsec below 1e9; clocks, notifications and signals must be known",
            ),
            TimerError::NoSpace => f.write_str("no room for another POSIX timer"),
            // (The number is `MAX_WORKERS`, which this layer cannot name;
            // tests/bad_input.rs checks that they agree.)
            TimerError::TooManyWorkers { requested } => write!(
                f,
                "{requested} workers: a timer system has at most 1024 (utimer::MAX_WORKERS); 0 means one per CPU"
            ),
            TimerError::Os(e) => write!(f, "the kernel refused: errno {e} ({})", std::io::Error::from_raw_os_error(*e)),
        }
    }
}

impl std::error::Error for TimerError {}

#[cfg(test)]
mod tests {
    use super::TimerError;

    /// Results carrying the error stay in registers on the arm path: a
    /// variant with two `u32` fields once made every `modify` return
    /// through memory, 10-15% slower.
    #[test]
    fn results_stay_small() {
        assert!(std::mem::size_of::<TimerError>() <= 8);
        assert!(std::mem::size_of::<Result<bool, TimerError>>() <= 8);
    }
}
