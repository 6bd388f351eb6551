//! `timerfd`: a timer that is a file descriptor
//! (`timerfd_create(CLOCK_MONOTONIC)`), armed and disarmed with
//! `timerfd_settime`. Event loops built on epoll use one per timer or one
//! per loop (re-armed to the earliest deadline of a user-space queue).
//!
//! Like POSIX timers, every operation is a system call; each pending timer
//! holds a file descriptor, so millions of them are not sensible.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use super::posix::{itimerspec, relative, KERNEL_LIMIT_WHY, KERNEL_MAX_PENDING};

/// One timerfd.
#[derive(Debug)]
pub struct TimerFd(OwnedFd);

impl TimerFd {
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain syscall wrapper; the result is checked.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a fresh descriptor that nothing else owns.
        Ok(TimerFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Arms to fire `after` from now (relative); `Duration::ZERO` disarms.
    #[inline]
    pub fn set(&self, after: Duration) -> io::Result<()> {
        let spec = itimerspec(after);
        // SAFETY: valid descriptor; `spec` outlives the call.
        let rc =
            unsafe { libc::timerfd_settime(self.0.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Whether the timer is armed (`timerfd_gettime`).
    pub fn is_armed(&self) -> bool {
        let mut cur = itimerspec(Duration::ZERO);
        // SAFETY: as above.
        unsafe { libc::timerfd_gettime(self.0.as_raw_fd(), &mut cur) };
        cur.it_value.tv_sec != 0 || cur.it_value.tv_nsec != 0
    }
}

impl TimerFd {
    /// Arms periodically with an absolute first expiry: `first_ns` of
    /// `CLOCK_MONOTONIC` (`TFD_TIMER_ABSTIME`), then every `interval`.
    pub fn set_periodic_abs(&self, first_ns: u64, interval: Duration) -> io::Result<()> {
        let first = Duration::from_nanos(first_ns);
        let spec = super::posix::itimerspec_periodic(first, interval);
        // SAFETY: valid descriptor; `spec` outlives the call.
        let rc = unsafe {
            libc::timerfd_settime(
                self.0.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Blocks until the timer has expired (`poll(2)`, then `read(2)`) and
    /// returns the number of expirations since the last read.
    pub fn wait(&self) -> io::Result<u64> {
        let mut pfd = libc::pollfd {
            fd: self.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        loop {
            // SAFETY: `pfd` is a valid pollfd for a live descriptor.
            let rc = unsafe { libc::poll(&mut pfd, 1, -1) };
            if rc == 1 {
                break;
            }
            let e = io::Error::last_os_error();
            if rc < 0 && e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        let mut expirations = 0u64;
        // SAFETY: reads 8 bytes into a live u64 from a valid descriptor.
        let n = unsafe { libc::read(self.0.as_raw_fd(), (&mut expirations as *mut u64).cast(), 8) };
        if n != 8 {
            return Err(io::Error::last_os_error());
        }
        Ok(expirations)
    }
}

/// Blocks until `deadline` on a fresh timerfd (for the latency group):
/// arm it relative to now, `poll(2)` until it is readable, read it. Returns
/// false if a system call failed.
pub fn sleep_until(deadline: std::time::Instant) -> bool {
    let Ok(fd) = TimerFd::new() else { return false };
    let after = deadline.saturating_duration_since(std::time::Instant::now());
    if fd.set(after.max(Duration::from_nanos(1))).is_err() {
        return false;
    }
    fd.wait().is_ok()
}

/// timerfd as a benchmark peer (virtual `now`, relative timeouts).
#[derive(Debug)]
pub struct TimerFdPeer {
    now: u64,
}

impl super::TimerPeer for TimerFdPeer {
    type Handle = TimerFd;
    const NAME: &'static str = "timerfd";
    const MAX_PENDING: (usize, &'static str) = (KERNEL_MAX_PENDING, KERNEL_LIMIT_WHY);

    fn new() -> Result<Self, String> {
        Ok(TimerFdPeer {
            now: super::START_TICK,
        })
    }

    fn now(&mut self) -> u64 {
        self.now
    }

    fn handle(&mut self) -> Result<TimerFd, String> {
        TimerFd::new().map_err(|e| format!("timerfd_create: {e}"))
    }

    #[inline]
    fn arm(&mut self, h: &mut TimerFd, expires: u64) {
        let _ = h.set(relative(self.now, expires));
    }

    #[inline]
    fn rearm(&mut self, h: &mut TimerFd, expires: u64) {
        let _ = h.set(relative(self.now, expires));
    }

    #[inline]
    fn cancel(&mut self, h: &mut TimerFd) {
        let _ = h.set(Duration::ZERO);
    }

    fn is_pending(&self, h: &TimerFd) -> Option<bool> {
        Some(h.is_armed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arm_and_disarm() {
        let t = TimerFd::new().unwrap();
        assert!(!t.is_armed());
        t.set(Duration::from_secs(10)).unwrap();
        assert!(t.is_armed());
        t.set(Duration::ZERO).unwrap();
        assert!(!t.is_armed());
    }
}
