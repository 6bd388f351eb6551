//! POSIX per-process timers: `timer_create(CLOCK_MONOTONIC)`, armed and
//! disarmed with `timer_settime`, in two flavours:
//!
//! * `SIGEV_NONE`: no notification at all. Note that Linux does not queue
//!   an hrtimer for such a timer (`common_hrtimer_arm()` skips
//!   `hrtimer_start` for `SIGEV_NONE`; expiry is computed when asked), so
//!   this row is the syscall and the posix-timer bookkeeping only. On some
//!   kernels `timer_gettime` even reports it still running after a disarm.
//! * `SIGEV_SIGNAL` with an ignored real-time signal: the kernel really
//!   queues and dequeues an hrtimer on every arm and disarm, which is the
//!   honest "kernel timer" cost. (The timers are never due during the run.)
//!
//! Every operation is a system call, so this row shows what "just let the
//! kernel do it" costs from user space: the kernel's own timer code is fast,
//! the syscall around it is not. Each pending timer also pins kernel memory
//! and counts against `RLIMIT_SIGPENDING`, which is why this peer is not
//! filled with a million timers.

use std::io;
use std::time::Duration;

/// `it_value = value`, `it_interval = interval`.
pub fn itimerspec_periodic(value: Duration, interval: Duration) -> libc::itimerspec {
    let ts = |d: Duration| libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    };
    libc::itimerspec {
        it_interval: ts(interval),
        it_value: ts(value),
    }
}

/// `it_value = after`, no interval; zero disarms.
pub fn itimerspec(after: Duration) -> libc::itimerspec {
    libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: after.as_secs() as libc::time_t,
            tv_nsec: after.subsec_nanos() as libc::c_long,
        },
    }
}

/// How a POSIX timer notifies (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notify {
    None,
    /// An ignored real-time signal.
    Signal,
}

/// The signal used by [`Notify::Signal`] timers, ignored process-wide.
fn ignored_signal() -> libc::c_int {
    static IGNORE: std::sync::Once = std::sync::Once::new();
    let sig = libc::SIGRTMIN() + 3;
    IGNORE.call_once(|| {
        // SAFETY: installing SIG_IGN for a real-time signal nobody else uses.
        unsafe { libc::signal(sig, libc::SIG_IGN) };
    });
    sig
}

/// One POSIX timer.
#[derive(Debug)]
pub struct PosixTimer(libc::timer_t);

impl PosixTimer {
    pub fn new(notify: Notify) -> io::Result<Self> {
        // SAFETY: an all-zero sigevent is a valid value.
        let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
        match notify {
            Notify::None => sev.sigev_notify = libc::SIGEV_NONE,
            Notify::Signal => {
                sev.sigev_notify = libc::SIGEV_SIGNAL;
                sev.sigev_signo = ignored_signal();
            }
        }
        let mut id: libc::timer_t = std::ptr::null_mut();
        // SAFETY: both pointers are valid for the duration of the call.
        let rc = unsafe { libc::timer_create(libc::CLOCK_MONOTONIC, &mut sev, &mut id) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(PosixTimer(id))
    }

    /// Arms to fire `after` from now (relative); `Duration::ZERO` disarms.
    #[inline]
    pub fn set(&self, after: Duration) -> io::Result<()> {
        let spec = itimerspec(after);
        // SAFETY: `self.0` is a live timer id; `spec` outlives the call.
        let rc = unsafe { libc::timer_settime(self.0, 0, &spec, std::ptr::null_mut()) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// `timer_settime` with a full setting (relative; `spec.it_interval`
    /// makes it periodic).
    #[inline]
    pub fn settime(&self, spec: &libc::itimerspec) -> io::Result<()> {
        // SAFETY: `self.0` is a live timer id; `spec` outlives the call.
        let rc = unsafe { libc::timer_settime(self.0, 0, spec, std::ptr::null_mut()) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// `timer_gettime`: the time to the next expiry and the interval.
    #[inline]
    pub fn gettime(&self) -> io::Result<libc::itimerspec> {
        let mut cur = itimerspec(Duration::ZERO);
        // SAFETY: `self.0` is a live timer id; `cur` is writable.
        let rc = unsafe { libc::timer_gettime(self.0, &mut cur) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(cur)
    }

    /// `timer_getoverrun`.
    #[inline]
    pub fn getoverrun(&self) -> io::Result<i32> {
        // SAFETY: `self.0` is a live timer id.
        let rc = unsafe { libc::timer_getoverrun(self.0) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(rc)
    }

    /// Whether the timer is armed (`timer_gettime`).
    pub fn is_armed(&self) -> bool {
        let mut cur = itimerspec(Duration::ZERO);
        // SAFETY: as above.
        unsafe { libc::timer_gettime(self.0, &mut cur) };
        cur.it_value.tv_sec != 0 || cur.it_value.tv_nsec != 0
    }
}

impl Drop for PosixTimer {
    fn drop(&mut self) {
        // SAFETY: `self.0` is a live timer id, deleted exactly once.
        unsafe { libc::timer_delete(self.0) };
    }
}

/// POSIX timers as a benchmark peer. Ticks are 1 ms; deadlines are turned
/// into relative timeouts against a fixed virtual `now`, so no clock is
/// read in user space. `SIGNAL` picks [`Notify::Signal`].
#[derive(Debug)]
pub struct PosixPeer<const SIGNAL: bool> {
    now: u64,
}

/// Why kernel timers are not filled beyond [`KERNEL_MAX_PENDING`].
pub const KERNEL_LIMIT_WHY: &str = "millions of kernel timers are not sensible \
    (one kernel object each, bounded by RLIMIT_SIGPENDING / RLIMIT_NOFILE)";

/// The largest fill used for the kernel peers.
pub const KERNEL_MAX_PENDING: usize = 10_000;

#[inline]
pub fn relative(now: u64, expires: u64) -> Duration {
    Duration::from_millis(expires.saturating_sub(now).max(1))
}

impl<const SIGNAL: bool> super::TimerPeer for PosixPeer<SIGNAL> {
    type Handle = PosixTimer;
    const NAME: &'static str = if SIGNAL {
        "POSIX timer (signal)"
    } else {
        "POSIX timer (none)"
    };
    const MAX_PENDING: (usize, &'static str) = (KERNEL_MAX_PENDING, KERNEL_LIMIT_WHY);

    fn new() -> Result<Self, String> {
        Ok(PosixPeer {
            now: super::START_TICK,
        })
    }

    fn now(&mut self) -> u64 {
        self.now
    }

    fn handle(&mut self) -> Result<PosixTimer, String> {
        let notify = if SIGNAL { Notify::Signal } else { Notify::None };
        PosixTimer::new(notify).map_err(|e| format!("timer_create: {e}"))
    }

    #[inline]
    fn arm(&mut self, h: &mut PosixTimer, expires: u64) {
        let _ = h.set(relative(self.now, expires));
    }

    #[inline]
    fn rearm(&mut self, h: &mut PosixTimer, expires: u64) {
        let _ = h.set(relative(self.now, expires));
    }

    #[inline]
    fn cancel(&mut self, h: &mut PosixTimer) {
        let _ = h.set(Duration::ZERO);
    }

    fn is_pending(&self, h: &PosixTimer) -> Option<bool> {
        // Unreliable for SIGEV_NONE (see the module docs).
        SIGNAL.then(|| h.is_armed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arm_and_disarm() {
        let t = PosixTimer::new(Notify::Signal).unwrap();
        assert!(!t.is_armed());
        t.set(Duration::from_secs(10)).unwrap();
        assert!(t.is_armed());
        t.set(Duration::ZERO).unwrap();
        assert!(!t.is_armed());
        let n = PosixTimer::new(Notify::None).unwrap();
        n.set(Duration::from_secs(10)).unwrap();
        n.set(Duration::ZERO).unwrap();
    }
}
