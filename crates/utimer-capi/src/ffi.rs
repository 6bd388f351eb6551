//! The boundary: the panic guard every export runs in, `errno`, the
//! mapping of utimer's errors to it, and the range check of the pointers C
//! passes.

use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use utimer::TimerError;

/// A failure to report: the kernel's error number, set as `errno` at the
/// C boundary only.
pub type Errno = c_int;

/// Sets the calling thread's `errno`.
pub(crate) fn set_errno(e: Errno) {
    // SAFETY: `__errno_location` returns the calling thread's errno slot,
    // valid for the thread's lifetime.
    unsafe { *libc::__errno_location() = e };
}

/// Runs `f` at the boundary: `Ok(v)` is returned, `Err(e)` sets `errno`
/// and returns `fail`, a panic sets `EFAULT` and returns `fail`. Every
/// export of this library runs in it, and so do the drop-in library's
/// calls of the Rust API.
pub fn guard<R>(fail: R, f: impl FnOnce() -> Result<R, Errno>) -> R {
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

/// utimer's error as `errno` ([`TimerError::errno`]): a system that has
/// shut down reads as `ESHUTDOWN`.
pub(crate) fn errno(e: TimerError) -> Errno {
    e.errno()
}

/// A reference from a pointer that C passed, or `EINVAL` for NULL.
///
/// # Safety
/// A non-null `p` must point to a live `T` for `'a`.
pub(crate) unsafe fn handle<'a, T>(p: *const T) -> Result<&'a T, Errno> {
    // SAFETY: the caller's promise.
    unsafe { p.as_ref() }.ok_or(libc::EINVAL)
}

/// The lowest address that can hold a program's data: the zero page is
/// never mapped for a program (`vm.mmap_min_addr` is at least a page unless
/// an administrator sets it to 0 and the program itself maps page zero with
/// `CAP_SYS_RAWIO`, as DOS emulators once did). A constant, not the sysctl:
/// reading `/proc/sys/vm/mmap_min_addr` would cost a system call and a
/// file read in whichever call (or signal handler) came first, and a
/// larger bound read there (65536 on most distributions) could be lowered
/// again at run time. It extends the NULL check to the page NULL is in.
const USER_MIN: usize = 4096;

/// The end of the largest user address space of the architecture, and the
/// pointer bits that the hardware ignores when it may be told to (tags),
/// so that no pointer the kernel could accept is ever refused:
///
/// * x86_64: `TASK_SIZE_MAX` with 5-level paging, `(1 << 56) - 4096` (with
///   4-level paging it is `(1 << 47) - 4096`, lower; an address between the
///   two faults as any unmapped one); bits 57–62 are the tag of Linear
///   Address Masking (`LAM_U57`), which a process may enable.
/// * aarch64: 52-bit virtual addresses, `1 << 52`; the top byte is ignored
///   by the hardware (TBI, always on for user space in Linux) and carries
///   MTE's and HWASan's tags.
/// * elsewhere: no upper bound but the end of the address space.
#[cfg(target_arch = "x86_64")]
const USER_END_AND_TAG: (usize, usize) = ((1 << 56) - 4096, 0x3f << 57);
#[cfg(target_arch = "aarch64")]
const USER_END_AND_TAG: (usize, usize) = (1 << 52, 0xff << 56);
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const USER_END_AND_TAG: (usize, usize) = (usize::MAX, 0);

/// Whether a `T` at `p` lies where a program's memory can be: not in the
/// zero page (NULL included), not ending past the top of the user address
/// space, not wrapping around. An address outside is one the kernel's
/// `access_ok()` refuses, so a system call taking it would fail with
/// `EFAULT`; `timer_settime()`, `timer_gettime()`, `timerfd_settime()`,
/// `timerfd_gettime()` and `timer_create()` (the C library's and the
/// drop-in's) answer the same instead of faulting. Two compares and a mask,
/// no system call. An address inside that maps nothing still faults when
/// read or written: only the kernel can tell that cheaply.
pub fn user_pointer_ok<T>(p: *const T) -> bool {
    let (end, tag) = USER_END_AND_TAG;
    let addr = p as usize & !tag;
    addr >= USER_MIN
        && addr
            .checked_add(std::mem::size_of::<T>())
            .is_some_and(|last| last <= end)
}

/// `Ok` for a pointer [`user_pointer_ok`] accepts, else `EFAULT` (NULL
/// included: callers for which NULL means something test it first).
pub(crate) fn user_pointer<T>(p: *const T) -> Result<(), Errno> {
    if user_pointer_ok(p) {
        Ok(())
    } else {
        Err(libc::EFAULT)
    }
}

/// A bool as C's 0 / 1.
/// Writes `v` to `p`: `EFAULT` for a `p` where no memory can be (NULL
/// included), as the kernel's `copy_to_user()`.
///
/// # Safety
/// `p` is refused by [`user_pointer_ok`] or writable.
pub unsafe fn write_out<T>(p: *mut T, v: T) -> Result<(), Errno> {
    user_pointer(p)?;
    // SAFETY: in range, and the caller promised it writable.
    unsafe { p.write(v) };
    Ok(())
}

/// [`write_out`] unless `p` is NULL: the optional `old_value` of the
/// `settime` calls, written once the timer is armed (the kernel's order).
///
/// # Safety
/// `p` is NULL, refused by [`user_pointer_ok`], or writable.
pub unsafe fn write_old<T>(p: *mut T, v: T) -> Result<(), Errno> {
    if p.is_null() {
        return Ok(());
    }
    // SAFETY: the caller's promise.
    unsafe { write_out(p, v) }
}

pub(crate) fn int(b: bool) -> c_int {
    c_int::from(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok_at<T>(addr: usize) -> bool {
        user_pointer_ok(addr as *const T)
    }

    #[test]
    fn user_pointer_ok_refuses_exactly_what_no_memory_can_be() {
        let (end, tag) = USER_END_AND_TAG;
        // The zero page, NULL included; the next page is fine.
        assert!(!ok_at::<u64>(0) && !ok_at::<u64>(1) && !ok_at::<u64>(USER_MIN - 1));
        assert!(ok_at::<u64>(USER_MIN));
        // A live object anywhere: fine.
        let x = 7_u64;
        assert!(user_pointer_ok(&x));
        // The end of user space: the last object that fits, not one more.
        let size = std::mem::size_of::<libc::itimerspec>();
        assert!(ok_at::<libc::itimerspec>(end - size) || end == usize::MAX);
        if end != usize::MAX {
            assert!(!ok_at::<libc::itimerspec>(end - size + 1));
            assert!(!ok_at::<u8>(end));
        }
        // Ends that wrap.
        assert!(!ok_at::<u64>(usize::MAX - 7));
        assert!(!ok_at::<libc::itimerspec>(usize::MAX & !tag));
        // A tag the hardware may ignore refuses nothing it would accept.
        if tag != 0 {
            assert!(ok_at::<u64>(USER_MIN | (tag & tag.wrapping_neg())));
        }
        #[cfg(target_pointer_width = "64")]
        assert!(!ok_at::<u64>(0xffff_8000_0000_0000));
    }
}
