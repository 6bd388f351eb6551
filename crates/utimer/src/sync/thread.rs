//! utimer's own threads (workers, the monitor, the clock watcher, the
//! membarrier registration) start with every signal blocked.
//!
//! A program's signal handler must never run on one of them: a handler that
//! calls a timer function there could wait for a lock that the interrupted
//! worker holds (the expiry run holds a base's lock), and a timer signal
//! meant for the program's threads would be taken by a thread that never
//! looks at it. The kernel has no such threads; glibc's `SIGEV_THREAD`
//! helper blocks every signal for the same reason.
//!
//! The mask is set in the spawning thread around the spawn, so the new
//! thread inherits it from its first instruction: blocking it from inside
//! the new thread would leave a window in which a signal could land.
//!
//! They also start on the process's CPUs at the ordinary policy, whatever
//! thread happened to start them: the first `timer_create` may come from a
//! thread that the program pinned to one CPU and made real-time
//! (cyclictest's measuring thread is both), and utimer's threads would
//! otherwise inherit that, crowding the very CPU whose latency the program
//! measures. A worker's real-time priority is set on purpose instead
//! (`system/realtime.rs`); a runtime that pins its workers does so after.

use std::io;
use std::thread::{Builder, JoinHandle};

/// Spawns a thread named `name` running `f`, with every signal blocked.
///
/// # Errors
/// As [`std::thread::Builder::spawn`].
pub(crate) fn spawn_masked<F, T>(name: String, f: F) -> io::Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let saved = block_all();
    let spawned = Builder::new().name(name).spawn(move || {
        detach_from_spawner();
        f()
    });
    restore(saved);
    spawned
}

/// Moves the calling (new) thread to the process's CPUs (the main
/// thread's set) and to `SCHED_OTHER` if it inherited a real-time policy.
/// Best effort; system calls, not glibc's functions, which a drop-in
/// library may interpose.
#[cfg(not(miri))]
fn detach_from_spawner() {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_getaffinity
    // writes at most its size into it; sched_setaffinity and
    // sched_setscheduler read the values given from this stack.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        let pid = libc::getpid();
        if libc::syscall(libc::SYS_sched_getaffinity, pid, size, &mut set as *mut _) > 0 {
            libc::syscall(libc::SYS_sched_setaffinity, 0, size, &set as *const _);
        }
        let policy = libc::syscall(libc::SYS_sched_getscheduler, 0) as i32;
        let policy = policy & !libc::SCHED_RESET_ON_FORK;
        if policy == libc::SCHED_FIFO || policy == libc::SCHED_RR {
            let param = libc::sched_param { sched_priority: 0 };
            libc::syscall(
                libc::SYS_sched_setscheduler,
                0,
                libc::SCHED_OTHER,
                &param as *const libc::sched_param,
            );
        }
    }
}

/// Miri has neither affinity nor scheduling policies.
#[cfg(miri)]
fn detach_from_spawner() {}

/// The CPUs the process may run on (the main thread's set), which the
/// thread asking may not (it may be pinned); empty if unknown.
pub(crate) fn process_cpu_list() -> Vec<usize> {
    #[cfg(not(miri))]
    // SAFETY: as in `detach_from_spawner`; CPU_ISSET reads the set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        let pid = libc::getpid();
        if libc::syscall(libc::SYS_sched_getaffinity, pid, size, &mut set as *mut _) > 0 {
            return (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .collect();
        }
    }
    Vec::new()
}

/// How many CPUs the process may run on ([`process_cpu_list`]); at least 1.
pub(crate) fn process_cpus() -> usize {
    match process_cpu_list().len() {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
}

/// Blocks every signal in the calling thread; returns the mask it had.
#[cfg(not(miri))]
fn block_all() -> Option<libc::sigset_t> {
    // SAFETY: zeroed sigset_t values are valid empty sets; sigfillset and
    // pthread_sigmask only write the sets they are given.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        (libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old) == 0).then_some(old)
    }
}

/// Miri has no signal masks; its threads never take signals.
#[cfg(miri)]
fn block_all() -> Option<libc::sigset_t> {
    None
}

/// Puts back the mask `block_all` saved.
fn restore(saved: Option<libc::sigset_t>) {
    if let Some(old) = saved {
        // SAFETY: `old` is the mask pthread_sigmask returned above.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    }
}

#[cfg(all(test, not(miri), not(loom)))]
mod tests {
    use super::spawn_masked;

    /// The blocked set of the calling thread.
    fn blocked() -> libc::sigset_t {
        // SAFETY: a zeroed sigset_t is valid; pthread_sigmask writes it.
        unsafe {
            let mut cur: libc::sigset_t = std::mem::zeroed();
            libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), &mut cur);
            cur
        }
    }

    fn is_blocked(set: &libc::sigset_t, sig: i32) -> bool {
        // SAFETY: reads a valid set.
        unsafe { libc::sigismember(set, sig) == 1 }
    }

    /// The CPUs the calling thread may run on.
    fn cpus() -> Vec<usize> {
        // SAFETY: as in `detach_from_spawner`.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set);
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .collect()
        }
    }

    #[test]
    fn the_thread_starts_on_the_process_cpus_not_its_spawners() {
        let all = cpus();
        let process = super::process_cpus();
        assert_eq!(process, all.len(), "the test thread starts unpinned");
        // A spawner pinned to one CPU (in a thread of its own, so that the
        // test's thread keeps its set).
        let inner = std::thread::spawn(move || {
            // SAFETY: a one-CPU set from this stack.
            unsafe {
                let mut one: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(all[0], &mut one);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &one);
            }
            assert_eq!(cpus().len(), 1);
            assert_eq!(
                super::process_cpus(),
                process,
                "the process's, not the pinned caller's"
            );
            spawn_masked("t".into(), cpus).unwrap().join().unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(inner.len(), process, "{inner:?}");
    }

    #[test]
    fn the_thread_blocks_every_signal_and_the_spawner_keeps_its_mask() {
        let before = blocked();
        let inside = spawn_masked("t".into(), || {
            let set = blocked();
            (1..=libc::SIGRTMAX())
                .filter(|&s| s != libc::SIGKILL && s != libc::SIGSTOP)
                .filter(|&s| !(32..libc::SIGRTMIN()).contains(&s))
                .all(|s| is_blocked(&set, s))
        })
        .unwrap()
        .join()
        .unwrap();
        assert!(inside, "a signal is left unblocked on utimer's thread");
        let after = blocked();
        for s in 1..=libc::SIGRTMAX() {
            assert_eq!(is_blocked(&before, s), is_blocked(&after, s), "signal {s}");
        }
    }
}
