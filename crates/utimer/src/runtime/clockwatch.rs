//! `utimer-clockwatch`: tells the system when the wall clock is set.
//!
//! An absolute `CLOCK_REALTIME` hrtimer waits for a wall-clock time, but a
//! worker sleeps on the monotonic clock, for as long as the wall clock's
//! offset said when it went to sleep. When the wall clock is set
//! (`settimeofday`, an NTP step, a VM resume), that sleep is wrong. The
//! kernel reprograms its hrtimer bases (`clock_was_set()`); user space
//! learns of it through a timerfd armed with `TFD_TIMER_CANCEL_ON_SET`,
//! whose read fails with `ECANCELED` when the clock is set. This thread
//! blocks in `poll` on one (and on an eventfd that stops it) and calls
//! [`TimerSystem::clock_was_set`](crate::TimerSystem::clock_was_set), which
//! wakes every sleeping worker with `REALTIME` timers: each recomputes its
//! sleep from the new offset, and the timers fire at the new wall time.

use crate::sync::thread::spawn_masked;
use crate::TimerSystem;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;

/// The running watcher: write to `stop` to end it.
pub(crate) struct ClockWatch {
    stop: OwnedFd,
}

fn cvt(rc: i32) -> std::io::Result<i32> {
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// Arms `fd` to be cancelled by the next clock set: an absolute expiry
/// far in the future, with `TFD_TIMER_CANCEL_ON_SET`.
fn arm(fd: &OwnedFd) -> std::io::Result<()> {
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: libc::time_t::MAX / 4,
            tv_nsec: 0,
        },
    };
    // SAFETY: a valid timerfd and a live itimerspec; the old value is not
    // asked for.
    // The system call, as in `start`.
    cvt(unsafe {
        libc::syscall(
            libc::SYS_timerfd_settime,
            fd.as_raw_fd(),
            libc::TFD_TIMER_ABSTIME | libc::TFD_TIMER_CANCEL_ON_SET,
            &spec as *const libc::itimerspec,
            std::ptr::null_mut::<libc::itimerspec>(),
        ) as libc::c_int
    })
    .map(drop)
}

impl ClockWatch {
    /// Starts the thread.
    pub(crate) fn start(
        sys: Arc<TimerSystem>,
    ) -> std::io::Result<(ClockWatch, std::thread::JoinHandle<()>)> {
        // SAFETY: both calls take integer flags and return a new fd or -1,
        // which `cvt` turns into an error; each fd is owned once.
        let (tfd, stop) = unsafe {
            // The system call itself, not libc's wrapper: in a program run
            // on the drop-in library, `timerfd_create` is utimer's own.
            let tfd = cvt(libc::syscall(
                libc::SYS_timerfd_create,
                libc::CLOCK_REALTIME,
                libc::TFD_CLOEXEC | libc::TFD_NONBLOCK,
            ) as libc::c_int)?;
            let tfd = OwnedFd::from_raw_fd(tfd);
            let stop = cvt(libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK))?;
            (tfd, OwnedFd::from_raw_fd(stop))
        };
        arm(&tfd)?;
        let stop_fd = stop.as_raw_fd();
        let handle = spawn_masked("utimer-clockwatch".into(), move || {
            watch(&sys, &tfd, stop_fd)
        })?;
        Ok((ClockWatch { stop }, handle))
    }

    /// Asks the thread to exit (join it afterwards).
    pub(crate) fn stop(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: writes 8 bytes from a live buffer to our eventfd.
        unsafe {
            libc::write(self.stop.as_raw_fd(), one.as_ptr().cast(), 8);
        }
    }
}

fn watch(sys: &TimerSystem, tfd: &OwnedFd, stop: i32) {
    loop {
        let mut fds = [
            libc::pollfd {
                fd: tfd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: stop,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: two live pollfds; no timeout.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if n < 0 {
            continue; // EINTR
        }
        if fds[1].revents != 0 {
            return;
        }
        if fds[0].revents != 0 {
            let mut buf = [0u8; 8];
            // SAFETY: reads at most 8 bytes into a live buffer.
            let rc = unsafe { libc::read(tfd.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
            let err = std::io::Error::last_os_error().raw_os_error();
            if rc < 0 && err == Some(libc::ECANCELED) {
                sys.clock_was_set();
            }
            if arm(tfd).is_err() {
                return;
            }
        }
    }
}
