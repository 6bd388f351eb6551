//! Blocking until a word changes: Linux futexes (the waiting half of
//! `delete_sync`). Under loom, a yield loop that reads through an RMW.

use super::AtomicU32;
#[cfg(loom)]
use std::sync::atomic::Ordering::AcqRel;

/// Blocks while `*word == expected`. May return spuriously: callers
/// re-check.
pub(crate) fn wait(word: &AtomicU32, expected: u32) {
    wait_timeout(word, expected, None);
}

/// [`wait`], for at most `timeout` (relative).
pub(crate) fn wait_timeout(word: &AtomicU32, expected: u32, timeout: Option<std::time::Duration>) {
    #[cfg(not(loom))]
    {
        let ts = timeout.map(|d| libc::timespec {
            tv_sec: d.as_secs().min(i64::MAX as u64) as libc::time_t,
            tv_nsec: d.subsec_nanos() as libc::c_long,
        });
        let ts_ptr = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: FUTEX_WAIT reads the aligned u32 behind a live atomic and
        // sleeps only while it equals `expected`; `ts_ptr` is null or points
        // to a live timespec. No memory is written.
        unsafe {
            libc::syscall(
                libc::SYS_futex,
                word.as_ptr(),
                libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
                expected,
                ts_ptr,
            );
        }
    }
    // Under loom: an untimed wait returns only once the word changed (a lost
    // wake-up then shows as an endless path); a timed one may give up.
    #[cfg(loom)]
    while word.fetch_add(0, AcqRel) == expected {
        loom::thread::yield_now();
        if timeout.is_some() {
            break;
        }
    }
}

/// Wakes every thread blocked in [`wait`] on `word`.
pub(crate) fn wake_all(word: &AtomicU32) {
    #[cfg(not(loom))]
    // SAFETY: FUTEX_WAKE only uses the address as a key; it touches no memory.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            i32::MAX,
        );
    }
    #[cfg(loom)]
    let _ = word;
}

/// Sets the calling thread's timer slack (`PR_SET_TIMERSLACK`: how much
/// later than asked the kernel may end its timed waits, 50 µs by default)
/// and returns the previous value. No-op returning `ns` under loom, under
/// Miri (which has no `prctl`) or off Linux.
pub(crate) fn set_timer_slack(ns: u64) -> u64 {
    #[cfg(all(target_os = "linux", not(loom), not(miri)))]
    {
        // SAFETY: PR_GET_TIMERSLACK and PR_SET_TIMERSLACK take and return
        // integers; they touch no memory of ours.
        unsafe {
            let old = libc::prctl(libc::PR_GET_TIMERSLACK, 0, 0, 0, 0);
            libc::prctl(libc::PR_SET_TIMERSLACK, ns.max(1) as libc::c_ulong, 0, 0, 0);
            if old > 0 {
                return old as u64;
            }
        }
    }
    ns
}
