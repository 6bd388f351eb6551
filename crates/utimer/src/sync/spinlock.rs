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
//! lock word), then yields, then sleeps ([`Backoff`]): a real-time waiter
//! that only yielded would keep a preempted holder of lower priority from
//! ever running on its CPU.

#[cfg(loom)]
use super::yield_now;
use super::AtomicBool;
#[cfg(not(loom))]
use super::Backoff;
#[cfg(not(loom))]
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::Ordering::{Acquire, Release};

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
    #[cfg(loom)]
    fn lock_contended(&self) {
        // Loom explores every value a plain load may return, including a
        // stale `true` forever (C11 only promises visibility "eventually"),
        // which would make the read-only spin below an infinite path. An
        // exchange always reads the latest value.
        while self.locked.swap(true, Acquire) {
            yield_now();
        }
    }

    #[cold]
    #[cfg(not(loom))]
    fn lock_contended(&self) {
        let mut backoff = Backoff::new();
        loop {
            while self.locked.load(Relaxed) {
                backoff.snooze();
            }
            if !self.locked.swap(true, Acquire) {
                return;
            }
        }
    }

    /// Releases the lock. Must only be called by the holder.
    #[inline]
    pub(crate) fn unlock(&self) {
        #[cfg(not(loom))]
        self.locked.store(false, Release);
        // C11 lets a plain store sit after any number of other threads'
        // exchanges in the modification order ("eventually" visible); loom
        // explores that as an endless spin. An exchange cannot.
        #[cfg(loom)]
        self.locked.swap(false, Release);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::SpinLock;
    use std::sync::atomic::AtomicBool;
    use std::sync::atomic::Ordering::SeqCst;
    use std::time::{Duration, Instant};

    /// Pins the calling thread to `cpu`.
    fn pin(cpu: usize) {
        // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET writes inside
        // it; sched_setaffinity reads it (0: the calling thread).
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            assert_eq!(
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
                0,
                "sched_setaffinity: {}",
                std::io::Error::last_os_error()
            );
        }
    }

    /// A `SCHED_FIFO` thread that wants the lock while a normal thread
    /// holds it on the same CPU gets it soon: the waiter sleeps, so the
    /// holder runs. (Yielding alone hands the CPU to nobody below the
    /// waiter's priority: the holder ran again only when the kernel's
    /// real-time throttling stopped the waiter, most of a second later.)
    /// Without the privilege to use `SCHED_FIFO`, only the hand-over is
    /// checked.
    #[test]
    #[cfg_attr(miri, ignore)]
    fn a_real_time_waiter_lets_a_preempted_holder_release() {
        let lock = SpinLock::new();
        let held = AtomicBool::new(false);
        let contending = AtomicBool::new(false);
        let cpu = crate::sync::thread::process_cpu_list()
            .first()
            .copied()
            .unwrap_or(0);
        let waited = std::thread::scope(|s| {
            s.spawn(|| {
                pin(cpu);
                lock.lock();
                held.store(true, SeqCst);
                // Runs on only when the waiter, on this CPU, lets it.
                while !contending.load(SeqCst) {
                    std::hint::spin_loop();
                }
                lock.unlock();
            });
            while !held.load(SeqCst) {
                std::thread::yield_now();
            }
            s.spawn(|| {
                pin(cpu);
                let param = libc::sched_param { sched_priority: 1 };
                // SAFETY: reads one live sched_param (0: the calling thread).
                let rt = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0;
                if !rt {
                    eprintln!(
                        "no SCHED_FIFO here ({}): the hand-over only",
                        std::io::Error::last_os_error()
                    );
                }
                contending.store(true, SeqCst);
                let t0 = Instant::now();
                lock.lock();
                let waited = t0.elapsed();
                lock.unlock();
                (rt, waited)
            })
            .join()
            .unwrap()
        });
        let (rt, waited) = waited;
        if rt {
            assert!(
                waited < Duration::from_millis(400),
                "the real-time waiter held its CPU from the lock's holder for {waited:?}"
            );
        }
    }
}
