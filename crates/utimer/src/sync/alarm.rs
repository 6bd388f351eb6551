//! An alarm: a sleep whose wake-up time another thread can move without
//! waking the sleeper, the user-space form of the kernel's clock event
//! device (`clockevents_program_event()`).
//!
//! A futex timeout is fixed when the sleeper goes to sleep: to change it,
//! another thread must wake the sleeper, which then sleeps again. That
//! costs a wake-up of a sleeping CPU each time the time moves, which is
//! exactly what a stand-in that serves a worker's hrtimers (see
//! `system/serve.rs`) must avoid. An alarm is a `CLOCK_MONOTONIC` timerfd:
//! [`set`](Alarm::set) (`timerfd_settime` with `TFD_TIMER_ABSTIME`) moves
//! its expiry from any thread, and a sleeper blocked on it wakes only when
//! it expires. Setting it also clears an expiry that nobody has read yet,
//! so each sleep starts from the time it was set to.
//!
//! A timerfd's expiry is not stretched by the sleeper's timer slack (a
//! futex or `poll` timeout is, by up to 50 µs for a normal thread): an
//! alarm wakes when it is set to.
//!
//! The alarm owns one descriptor, made with `TFD_CLOEXEC` and closed when
//! it drops. Every call is the raw system call: a library that takes over
//! the C library's `timerfd_*`, `read` or `close` (the drop-in does) must
//! not see its own alarms.

use std::io;
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The descriptor numbers the alarms hold (one bit per number below
/// `WORDS * 64`): a library that takes over `close` keeps the program's
/// `close` and `closefrom` off them ([`owns_fd`]).
#[cfg(not(loom))]
const WORDS: usize = 1024;
#[cfg(not(loom))]
static OWNED: [AtomicU64; WORDS] = [const { AtomicU64::new(0) }; WORDS];

#[cfg(not(loom))]
fn mark(fd: i32, owned: bool) {
    let Ok(n) = usize::try_from(fd) else { return };
    if let Some(w) = OWNED.get(n / 64) {
        let bit = 1u64 << (n % 64);
        if owned {
            w.fetch_or(bit, Relaxed);
        } else {
            w.fetch_and(!bit, Relaxed);
        }
    }
}

/// Whether descriptor `fd` is one that utimer's alarms hold (a runtime
/// worker's, or a thread's that serves the hrtimers): not the program's to
/// close. Numbers from 65,536 up are never reported.
#[cfg(not(loom))]
pub fn owns_fd(fd: i32) -> bool {
    let Ok(n) = usize::try_from(fd) else {
        return false;
    };
    OWNED
        .get(n / 64)
        .is_some_and(|w| w.load(Relaxed) & (1u64 << (n % 64)) != 0)
}

/// Calls `f` with each descriptor of `first..=last` that [`owns_fd`]
/// reports, in increasing order.
#[cfg(not(loom))]
pub fn for_each_owned_fd(first: u32, last: u32, mut f: impl FnMut(i32)) {
    let last = last.min((WORDS * 64 - 1) as u32);
    let mut n = first;
    while n <= last {
        let word = OWNED[n as usize / 64].load(Relaxed) >> (n % 64);
        if word == 0 {
            n = (n / 64 + 1) * 64;
            continue;
        }
        n += word.trailing_zeros();
        if n <= last {
            f(n as i32);
        }
        n += 1;
    }
}

/// A `CLOCK_MONOTONIC` timerfd that one thread sleeps on and any thread
/// sets.
#[cfg(not(loom))]
pub(crate) struct Alarm {
    fd: i32,
}

/// [`Alarm::set`]'s time for "at once" (any past time does).
pub(crate) const NOW: u64 = 1;
/// [`Alarm::set`]'s time for "never".
pub(crate) const NEVER: u64 = u64::MAX;

/// A sleep ended by a signal handler ([`Alarm::wait_or_signal`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Interrupted;

#[cfg(not(loom))]
impl Alarm {
    /// A new alarm, not set.
    pub(crate) fn new() -> io::Result<Alarm> {
        // SAFETY: timerfd_create takes two integers and returns a new
        // descriptor or -1.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_timerfd_create,
                libc::CLOCK_MONOTONIC,
                libc::TFD_CLOEXEC,
            )
        } as i32;
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let fd = above_stdio(fd);
        mark(fd, true);
        Ok(Alarm { fd })
    }

    /// Makes the alarm go off at `at`, in nanoseconds of
    /// `CLOCK_MONOTONIC` ([`NOW`]: at once; [`NEVER`]: never), replacing
    /// the time it had and clearing an expiry not yet read.
    pub(crate) fn set(&self, at: u64) {
        let mut its: libc::itimerspec = itimerspec_zero();
        if at != NEVER {
            let at = at.max(NOW);
            its.it_value.tv_sec = (at / 1_000_000_000).min(i64::MAX as u64) as libc::time_t;
            its.it_value.tv_nsec = (at % 1_000_000_000) as libc::c_long;
        }
        // SAFETY: a descriptor this alarm owns; `its` is a live
        // itimerspec; no old value is asked for.
        unsafe {
            libc::syscall(
                libc::SYS_timerfd_settime,
                self.fd,
                libc::TFD_TIMER_ABSTIME,
                &raw const its,
                std::ptr::null_mut::<libc::itimerspec>(),
            )
        };
    }

    /// Sleeps until the alarm goes off (at once if it went off since it
    /// was last set). Signals that interrupt the sleep do not end it.
    pub(crate) fn wait(&self) {
        let mut n = 0u64;
        loop {
            // SAFETY: reads 8 bytes into a live u64 from a descriptor this
            // alarm owns.
            let r = unsafe { libc::syscall(libc::SYS_read, self.fd, &raw mut n, 8) };
            if r == 8 {
                return;
            }
            if io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                descriptor_gone();
                return;
            }
        }
    }

    /// Sleeps until the alarm goes off or a signal handler runs on this
    /// thread: `Err(Interrupted)` then, as the kernel's `nanosleep` returns
    /// `EINTR`. A stop and continue (no handler) does not end the sleep.
    /// The raw system call: no cancellation point (the caller decides where
    /// a cancellation may act).
    pub(crate) fn wait_or_signal(&self) -> Result<(), Interrupted> {
        let mut pfd = libc::pollfd {
            fd: self.fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one live pollfd; no timeout and no mask (NULL pointers
        // are allowed for both); the kernel writes only `revents`.
        let r = unsafe {
            libc::syscall(
                libc::SYS_ppoll,
                &raw mut pfd,
                1 as libc::c_ulong,
                std::ptr::null::<libc::timespec>(),
                std::ptr::null::<libc::sigset_t>(),
                0 as libc::size_t,
            )
        };
        if r < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            return Err(Interrupted);
        }
        if pfd.revents & libc::POLLNVAL != 0 {
            descriptor_gone();
        }
        Ok(())
    }
}

/// The alarm's descriptor was closed behind its back (a raw `close`
/// system call that no library sees): each wait then returns at once, so
/// it sleeps a millisecond rather than spin; timers fire up to that late.
#[cfg(not(loom))]
fn descriptor_gone() {
    let ms = libc::timespec {
        tv_sec: 0,
        tv_nsec: 1_000_000,
    };
    // SAFETY: reads one live timespec; no remainder is asked for.
    unsafe {
        libc::syscall(
            libc::SYS_nanosleep,
            &raw const ms,
            std::ptr::null_mut::<libc::timespec>(),
        )
    };
}

/// `fd` moved to a number from 3 up if it took one of the standard
/// streams' (a daemon that closed them reopens them by number), else
/// itself.
#[cfg(not(loom))]
fn above_stdio(fd: i32) -> i32 {
    if fd > 2 {
        return fd;
    }
    // SAFETY: F_DUPFD_CLOEXEC duplicates a descriptor we own to the lowest
    // free number from 3; close then drops the old number, which is ours.
    unsafe {
        let moved = libc::syscall(libc::SYS_fcntl, fd, libc::F_DUPFD_CLOEXEC, 3) as i32;
        if moved < 0 {
            return fd;
        }
        libc::syscall(libc::SYS_close, fd);
        moved
    }
}

#[cfg(not(loom))]
impl Drop for Alarm {
    fn drop(&mut self) {
        mark(self.fd, false);
        // SAFETY: the descriptor is this alarm's, closed once, here.
        unsafe { libc::syscall(libc::SYS_close, self.fd) };
    }
}

#[cfg(not(loom))]
fn itimerspec_zero() -> libc::itimerspec {
    libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
    }
}

#[cfg(all(test, not(miri), not(loom)))]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn mono_ns() -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: writes one live timespec.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }

    #[test]
    fn goes_off_at_its_time_never_before() {
        let a = Alarm::new().unwrap();
        let at = mono_ns() + 2_000_000;
        a.set(at);
        a.wait();
        assert!(mono_ns() >= at, "woke before its time");
    }

    #[test]
    fn set_from_another_thread_moves_the_wake_up() {
        let a = std::sync::Arc::new(Alarm::new().unwrap());
        a.set(mono_ns() + 60_000_000_000);
        let b = a.clone();
        let start = Instant::now();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            b.set(NOW);
        });
        a.wait();
        t.join().unwrap();
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the move was lost"
        );
    }

    #[test]
    fn its_descriptor_is_owned_while_it_lives() {
        let a = Alarm::new().unwrap();
        let fd = a.fd;
        assert!(owns_fd(fd));
        let mut seen = Vec::new();
        for_each_owned_fd(0, u32::MAX, |f| seen.push(f));
        assert!(seen.contains(&fd), "{seen:?} lacks {fd}");
        drop(a);
        assert!(!owns_fd(fd));
        assert!(!owns_fd(-1));
    }

    #[test]
    fn setting_clears_an_unread_expiry() {
        let a = Alarm::new().unwrap();
        a.set(NOW);
        std::thread::sleep(Duration::from_millis(2));
        let at = mono_ns() + 5_000_000;
        a.set(at);
        a.wait();
        assert!(mono_ns() >= at, "an old expiry ended the new sleep");
    }
}

/// Under loom, an alarm is the time it is set to: the models check what
/// a sleeper's alarm says when the threads are done (`system/serve.rs`),
/// and a wait returns at once (a spurious wake-up, which every sleeper
/// allows).
#[cfg(loom)]
pub(crate) struct Alarm {
    pub(crate) at: crate::sync::AtomicU64,
}

#[cfg(loom)]
impl Alarm {
    pub(crate) fn new() -> io::Result<Alarm> {
        Ok(Alarm {
            at: crate::sync::AtomicU64::new(NEVER),
        })
    }

    pub(crate) fn set(&self, at: u64) {
        self.at.store(at, std::sync::atomic::Ordering::SeqCst);
    }

    pub(crate) fn wait(&self) {
        loom::thread::yield_now();
    }

    pub(crate) fn wait_or_signal(&self) -> Result<(), Interrupted> {
        loom::thread::yield_now();
        Ok(())
    }
}
