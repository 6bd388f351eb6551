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
    let spawned = Builder::new().name(name).spawn(f);
    restore(saved);
    spawned
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
