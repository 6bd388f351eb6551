//! Blocking until a word changes: Linux futexes (the waiting half of
//! `delete_sync`). Under loom, a yield loop that reads through an RMW.

use super::AtomicU32;
#[cfg(loom)]
use std::sync::atomic::Ordering::AcqRel;

/// Blocks while `*word == expected`. May return spuriously: callers
/// re-check.
pub(crate) fn wait(word: &AtomicU32, expected: u32) {
    #[cfg(not(loom))]
    // SAFETY: FUTEX_WAIT reads the aligned u32 behind a live atomic and
    // sleeps only while it equals `expected`; no memory is written.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
        );
    }
    #[cfg(loom)]
    if word.fetch_add(0, AcqRel) == expected {
        loom::thread::yield_now();
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
