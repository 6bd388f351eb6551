//! The boundary: the panic guard every export runs in, `errno`, and the
//! mapping of utimer's errors to it.

use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use utimer::TimerError;

/// A failure to report: the `errno` value.
pub(crate) type Errno = c_int;

/// Sets the calling thread's `errno`.
pub(crate) fn set_errno(e: Errno) {
    // SAFETY: `__errno_location` returns the calling thread's errno slot,
    // valid for the thread's lifetime.
    unsafe { *libc::__errno_location() = e };
}

/// Runs `f` at the boundary: `Ok(v)` is returned, `Err(e)` sets `errno`
/// and returns `fail`, a panic sets `EFAULT` and returns `fail`.
pub(crate) fn guard<R: Copy>(fail: R, f: impl FnOnce() -> Result<R, Errno>) -> R {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            set_errno(e);
            fail
        }
        Err(_) => {
            set_errno(libc::EFAULT);
            fail
        }
    }
}

/// utimer's error as `errno`. A system that is gone reads as `EINVAL`: the
/// handle no longer names a usable timer (the library's documented rule).
pub(crate) fn errno(e: TimerError) -> Errno {
    match e {
        TimerError::Shutdown => libc::EINVAL,
        e => e.errno(),
    }
}

/// A reference from a pointer that C passed, or `EINVAL` for NULL.
///
/// # Safety
/// A non-null `p` must point to a live `T` for `'a`.
pub(crate) unsafe fn handle<'a, T>(p: *const T) -> Result<&'a T, Errno> {
    // SAFETY: the caller's promise.
    unsafe { p.as_ref() }.ok_or(libc::EINVAL)
}

/// A bool as C's 0 / 1.
pub(crate) fn int(b: bool) -> c_int {
    c_int::from(b)
}
