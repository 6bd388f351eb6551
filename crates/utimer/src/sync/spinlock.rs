//! The timer base lock: a test-and-set spinlock that yields when contended.
//!
//! The kernel protects each `timer_base` with a raw spinlock because its
//! critical sections are a handful of pointer writes. utimer's are the same
//! (no callback, allocation or system call ever runs under a base lock), so
//! the uncontended path is one atomic exchange to lock and one plain release
//! store to unlock — half the atomic work of a futex mutex, whose unlock must
//! be an atomic read-modify-write to learn whether to wake a sleeper.
//!
//! User space differs from the kernel in one way: the holder can be
//! preempted. A waiter therefore spins briefly (reading, not writing, the
//! lock word) and then yields its CPU on every further attempt, so a
//! descheduled holder gets to run and release the lock.

use super::{spin_hint, yield_now, AtomicBool};
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

/// Spins this many times before starting to yield.
const SPINS_BEFORE_YIELD: u32 = 64;

pub(crate) struct SpinLock {
    locked: AtomicBool,
}

impl SpinLock {
    pub(crate) fn new() -> Self {
        SpinLock {
            locked: AtomicBool::new(false),
        }
    }

    /// Takes the lock. Not reentrant: locking twice on one thread deadlocks.
    #[inline]
    pub(crate) fn lock(&self) {
        if self.locked.swap(true, Acquire) {
            self.lock_contended();
        }
    }

    #[cold]
    fn lock_contended(&self) {
        let mut spins = 0;
        loop {
            while self.locked.load(Relaxed) {
                if spins < SPINS_BEFORE_YIELD {
                    spins += 1;
                    spin_hint();
                } else {
                    yield_now();
                }
            }
            if !self.locked.swap(true, Acquire) {
                return;
            }
        }
    }

    /// Releases the lock. Must only be called by the holder.
    #[inline]
    pub(crate) fn unlock(&self) {
        self.locked.store(false, Release);
    }
}
