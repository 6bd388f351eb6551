//! Waiting for another thread to finish a short step (release a lock,
//! leave a critical section, finish moving a timer): spin, then yield,
//! then sleep.
//!
//! # Why not spin and yield for ever
//!
//! A kernel spinlock's holder cannot be preempted; a user-space one can.
//! A waiter that yields hands its CPU over only to a thread of its own
//! real-time priority on its own CPU (`sched_yield(2)`): a `SCHED_FIFO` or
//! `SCHED_RR` waiter (the drop-in library runs its workers at the program's
//! real-time priority) keeps a normal-priority holder on that CPU from
//! running at all, and one queued on another busy CPU from being pulled
//! over. It then spins until the holder is scheduled somewhere else, or
//! until the kernel's real-time throttling stops it (after 950 ms of each
//! second, by default): a stall of a whole CPU for hundreds of
//! milliseconds. So a wait that outlasts a bounded number of spins and
//! yields sleeps, for a time that doubles up to a millisecond: a sleeping
//! waiter lets every other thread run, the holder included. The steps
//! waited for are a handful of memory writes, so a waiter that sleeps at
//! all has waited for a preempted thread, and a millisecond bounds how
//! late it notices that thread's release.

use super::{spin_hint, yield_now};

/// Busy-wait hints before the first yield.
const SPINS: u32 = 64;
/// Yields after the spins, before the first sleep.
const YIELDS: u32 = 8;
/// The first sleep, in nanoseconds; each further one doubles, up to
/// [`MAX_SLEEP_NS`].
const FIRST_SLEEP_NS: u64 = 1_000;
/// The longest sleep.
const MAX_SLEEP_NS: u64 = 1_000_000;

/// One wait's progress: call [`snooze`](Self::snooze) each time the
/// awaited change has not come yet.
pub(crate) struct Backoff {
    step: u32,
}

impl Backoff {
    pub(crate) const fn new() -> Backoff {
        Backoff { step: 0 }
    }

    /// Waits a little, longer the more often it was called: a spin hint,
    /// then a yield, then a sleep (module docs). Under loom, a yield.
    pub(crate) fn snooze(&mut self) {
        let step = self.step;
        self.step = step.saturating_add(1);
        if cfg!(loom) || step < SPINS {
            spin_hint();
        } else if step < SPINS + YIELDS {
            yield_now();
        } else {
            sleep_ns(sleep_for(step - SPINS - YIELDS));
        }
    }
}

/// The `n`-th sleep's length: doubling from [`FIRST_SLEEP_NS`], capped.
fn sleep_for(n: u32) -> u64 {
    FIRST_SLEEP_NS
        .checked_shl(n)
        .map_or(MAX_SLEEP_NS, |ns| ns.min(MAX_SLEEP_NS))
}

/// Sleeps `ns` nanoseconds with the system call itself: the drop-in
/// library takes over the libc sleeps, and a wait inside the library must
/// not come back into it.
#[cfg(not(any(loom, miri)))]
fn sleep_ns(ns: u64) {
    let ts = libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: reads one live timespec; no remainder is asked for. A signal
    // that cuts it short only ends this one sleep early.
    unsafe {
        libc::syscall(
            libc::SYS_nanosleep,
            &raw const ts,
            std::ptr::null_mut::<libc::timespec>(),
        )
    };
}

#[cfg(loom)]
fn sleep_ns(_ns: u64) {
    yield_now();
}

/// Miri runs no system call it does not know; its own sleep is the same.
#[cfg(all(miri, not(loom)))]
fn sleep_ns(ns: u64) {
    std::thread::sleep(std::time::Duration::from_nanos(ns));
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn sleeps_double_from_a_microsecond_to_a_millisecond() {
        assert_eq!(sleep_for(0), 1_000);
        assert_eq!(sleep_for(1), 2_000);
        assert_eq!(sleep_for(9), 512_000);
        assert_eq!(sleep_for(10), MAX_SLEEP_NS);
        assert_eq!(sleep_for(u32::MAX), MAX_SLEEP_NS);
    }
}
