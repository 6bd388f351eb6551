//! `timerfd_create`, `timerfd_settime`, `timerfd_gettime`, and the
//! descriptor calls that end a timerfd (`close`, `close_range`,
//! `closefrom`, `dup2`, `dup3`).
//!
//! A utimer timerfd is the C library's (`utimer_timerfd_create`: an
//! eventfd the program reads, written through a private duplicate); the
//! kernel's serve the `_ALARM` clocks, unknown flags, and
//! `TFD_TIMER_CANCEL_ON_SET`. Which one a descriptor is, is two atomic
//! loads (`utimer_capi::timerfd_clock`): a descriptor that is not a utimer
//! timerfd goes to glibc untouched, so the kernel answers for it (`EINVAL`
//! for a pipe, `EBADF` for a closed number, and its own timerfds).
//!
//! # Handing a timerfd to the kernel: `TFD_TIMER_CANCEL_ON_SET`
//!
//! Only the kernel knows when the wall clock is set, so a `CLOCK_REALTIME`
//! timerfd armed with `TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET` becomes
//! a kernel timerfd in place: one is made with the descriptor's status and
//! descriptor flags, `dup3` puts it on the program's number (an atomic
//! replacement: the number never names nothing), utimer's timer is deleted,
//! and the kernel's is armed. The expiration count of the old one is not
//! carried over; the new setting resets it anyway.

use crate::critical;
use crate::global::system;
use crate::real::{fail, real};
use std::ffi::c_int;
use utimer::ClockId;
use utimer_capi as capi;

/// `timerfd_create()`.
pub(crate) fn create(clock: libc::clockid_t, flags: c_int) -> c_int {
    let _section = critical::enter();
    let known = flags & !(libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) == 0;
    match (system(), ClockId::from_raw(clock)) {
        (Some(u), Some(clock)) if known => capi::guard(-1, || u.timerfd_create(clock, flags)),
        // SAFETY: glibc's function, the caller's arguments.
        _ => unsafe { (real().timerfd_create)(clock, flags) },
    }
}

/// `timerfd_settime()`. The kernel reads `new` first: `EFAULT` for one
/// where no memory can be (`capi::user_pointer_ok`, NULL included) comes
/// before the flags' `EINVAL`.
///
/// # Safety
/// As glibc's.
pub(crate) unsafe fn settime(
    fd: c_int,
    flags: c_int,
    new: *const libc::itimerspec,
    old: *mut libc::itimerspec,
) -> c_int {
    let _section = critical::enter();
    let (Some(clock), Some(u)) = (capi::timerfd_clock(fd), system()) else {
        // SAFETY: glibc's function, the caller's arguments.
        return unsafe { (real().timerfd_settime)(fd, flags, new, old) };
    };
    if !capi::user_pointer_ok(new) {
        return fail(libc::EFAULT);
    }
    let valid = libc::TFD_TIMER_ABSTIME | libc::TFD_TIMER_CANCEL_ON_SET;
    if flags & !valid != 0 {
        return fail(libc::EINVAL);
    }
    let cancel = libc::TFD_TIMER_ABSTIME | libc::TFD_TIMER_CANCEL_ON_SET;
    if flags & cancel == cancel && clock == libc::CLOCK_REALTIME {
        // SAFETY: the caller's pointers.
        return unsafe { hand_to_kernel(u, fd, flags, new, old) };
    }
    // CANCEL_ON_SET means nothing here (the kernel ignores it without both
    // ABSTIME and a REALTIME clock).
    capi::guard(-1, || {
        // SAFETY: checked in range above; the caller promised it readable.
        let was = u.timerfd_settime(fd, flags & libc::TFD_TIMER_ABSTIME, unsafe { &*new })?;
        // SAFETY: the caller's promise for `old`.
        unsafe { capi::write_old(old, was) }?;
        Ok(0)
    })
}

/// `TFD_TIMER_CANCEL_ON_SET`: the kernel's timerfd replaces utimer's on the
/// same descriptor number (module docs).
///
/// # Safety
/// As `settime`, and `new` checked with `capi::user_pointer_ok`.
unsafe fn hand_to_kernel(
    u: &capi::utimer_t,
    fd: c_int,
    flags: c_int,
    new: *const libc::itimerspec,
    old: *mut libc::itimerspec,
) -> c_int {
    // Refuse what the kernel would refuse before touching anything.
    // SAFETY: the caller's pointer, checked in range, read once if non-null.
    let Some(spec) = (unsafe { new.as_ref() }) else {
        return fail(libc::EFAULT);
    };
    if utimer::ItimerSpec::from_c(spec).is_err() {
        return fail(libc::EINVAL);
    }
    let Some(was) = capi::guard(None, || u.timerfd_gettime(fd).map(Some)) else {
        return -1;
    };
    // SAFETY: fcntl reads the flags of a descriptor we checked is open.
    let (status, fdflags) = unsafe {
        (
            libc::fcntl(fd, libc::F_GETFL),
            libc::fcntl(fd, libc::F_GETFD),
        )
    };
    if status < 0 || fdflags < 0 {
        return -1;
    }
    let tfd_flags = libc::TFD_CLOEXEC | (status & libc::O_NONBLOCK);
    // SAFETY: glibc's function.
    let k = unsafe { (real().timerfd_create)(libc::CLOCK_REALTIME, tfd_flags) };
    if k < 0 {
        return -1;
    }
    let cloexec = if fdflags & libc::FD_CLOEXEC != 0 {
        libc::O_CLOEXEC
    } else {
        0
    };
    // `fd` is its timerfd.
    let _ = capi::guard(-1, || u.timerfd_release(fd).map(|()| 0));
    // SAFETY: descriptors we own (`k`) and the program's (`fd`), which it
    // asked to re-arm: the replacement keeps its number and flags.
    unsafe {
        if (real().dup3)(k, fd, cloexec) < 0 {
            let e = crate::real::errno();
            (real().close)(k);
            return fail(e);
        }
        (real().close)(k);
        if (real().timerfd_settime)(fd, flags, new, std::ptr::null_mut()) != 0 {
            return -1;
        }
        if !old.is_null() {
            // Armed, as the kernel's: it writes the old value last.
            if !capi::user_pointer_ok(old) {
                return fail(libc::EFAULT);
            }
            old.write(was);
        }
    }
    0
}

/// `timerfd_gettime()`.
///
/// # Safety
/// As glibc's.
pub(crate) unsafe fn gettime(fd: c_int, cur: *mut libc::itimerspec) -> c_int {
    let _section = critical::enter();
    match (capi::timerfd_clock(fd), system()) {
        (Some(_), Some(u)) => capi::guard(-1, || {
            let v = u.timerfd_gettime(fd)?;
            // SAFETY: the caller's pointer: refused or writable.
            unsafe { capi::write_out(cur, v) }?;
            Ok(0)
        }),
        // SAFETY: glibc's function, the caller's arguments.
        _ => unsafe { (real().timerfd_gettime)(fd, cur) },
    }
}

/// Before a `read` of `fd`: a utimer timerfd's count takes every expiry
/// passed by now, as the kernel's `timerfd_read()` forwards the timer (a
/// worker that is late to write one would otherwise leave the count short
/// of the periods elapsed). Two atomic loads for any other descriptor.
#[inline]
pub(crate) fn before_read(fd: c_int) {
    if capi::timerfd_clock(fd).is_none() {
        return;
    }
    let _section = critical::enter();
    if let Some(u) = crate::global::started() {
        capi::guard((), || {
            u.timerfd_expire_due(fd);
            Ok(())
        });
    }
}

/// Ends the utimer timerfd on `fd`, if there is one, before the number is
/// closed or replaced.
fn release(fd: c_int) {
    if capi::timerfd_clock(fd).is_none() {
        return;
    }
    let _section = critical::enter();
    if let Some(u) = system() {
        let _ = capi::guard(-1, || u.timerfd_release(fd).map(|()| 0));
    }
}

/// `close()`. A descriptor of utimer's own (`utimer::owns_fd`: a worker's
/// or a sleeping thread's alarm) is no descriptor of the program's:
/// `EBADF`, as the kernel answers for a number the program never opened.
pub(crate) fn close(fd: c_int) -> c_int {
    if utimer::owns_fd(fd) {
        return crate::real::fail(libc::EBADF);
    }
    release(fd);
    crate::accept::forget_fd(fd);
    // SAFETY: glibc's function.
    unsafe { (real().close)(fd) }
}

/// `close_range()`: the utimer timerfds in `first..=last` end before the
/// kernel closes the range. Nothing ends when the call only marks the
/// range close-on-exec (`CLOSE_RANGE_CLOEXEC`: an `exec` ends every timer
/// anyway), when it would fail on its arguments, or with
/// `CLOSE_RANGE_UNSHARE`, which closes the numbers in the caller's private
/// copy of the descriptor table while the process's other threads keep
/// them open.
pub(crate) fn close_range(first: libc::c_uint, last: libc::c_uint, flags: c_int) -> c_int {
    if first <= last && flags == 0 {
        capi::for_each_timerfd(first, last, release);
        crate::accept::forget_range(first, last);
    }
    if first > last || flags & libc::CLOSE_RANGE_CLOEXEC as c_int != 0 {
        // Fails on its arguments, or only marks close-on-exec (utimer's own
        // descriptors are already).
        return real_close_range(first, last, flags);
    }
    // utimer's own descriptors stay open: the range is closed around them.
    let mut from = first;
    let mut rc = 0;
    utimer::for_each_owned_fd(first, last, |fd| {
        let fd = fd as libc::c_uint;
        if fd > from {
            rc |= real_close_range(from, fd - 1, flags);
        }
        from = fd + 1;
    });
    if from <= last {
        rc |= real_close_range(from, last, flags);
    }
    rc
}

fn real_close_range(first: libc::c_uint, last: libc::c_uint, flags: c_int) -> c_int {
    match real().close_range {
        // SAFETY: glibc's function, the caller's arguments.
        Some(f) => unsafe { f(first, last, flags) },
        // SAFETY: the system call takes three integers.
        None => unsafe { libc::syscall(libc::SYS_close_range, first, last, flags) as c_int },
    }
}

/// `closefrom()`: every utimer timerfd from `low` up ends, then glibc
/// closes the numbers (a negative `low` is 0, as glibc reads it).
pub(crate) fn closefrom(low: c_int) {
    let first = low.max(0) as libc::c_uint;
    let mut owned = false;
    utimer::for_each_owned_fd(first, libc::c_uint::MAX, |_| owned = true);
    if owned {
        // utimer's own descriptors stay open (`close_range`).
        close_range(first, libc::c_uint::MAX, 0);
        return;
    }
    capi::for_each_timerfd(first, libc::c_uint::MAX, release);
    crate::accept::forget_range(first, libc::c_uint::MAX);
    match real().closefrom {
        // SAFETY: glibc's function, the caller's argument.
        Some(f) => unsafe { f(low) },
        None => {
            // SAFETY: the system call takes three integers.
            unsafe { libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, 0) };
        }
    }
}

/// Whether `fd` is open.
fn is_open(fd: c_int) -> bool {
    // SAFETY: F_GETFD takes an integer and reads nothing of ours.
    unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
}

/// After a duplicate `new` of `old` was made: if `old` is a utimer
/// timerfd, `new` names its timer too.
fn duplicated(old: c_int, new: c_int) {
    if new >= 0 {
        crate::accept::duplicated(old, new);
    }
    if new < 0 || capi::timerfd_clock(old).is_none() {
        return;
    }
    let _section = critical::enter();
    if let Some(u) = system() {
        let _ = capi::guard(-1, || u.timerfd_dup(old, new).map(|()| 0));
    }
}

/// `dup()`.
pub(crate) fn dup(old: c_int) -> c_int {
    // SAFETY: glibc's function.
    let new = unsafe { (real().dup)(old) };
    duplicated(old, new);
    new
}

/// `dup2()`: a timerfd on `new` ends when another file replaces it, and a
/// duplicate of a timerfd names its timer.
pub(crate) fn dup2(old: c_int, new: c_int) -> c_int {
    if old != new && utimer::owns_fd(new) {
        // utimer's own descriptor cannot be replaced: the kernel's answer
        // for a number it cannot take now.
        return crate::real::fail(libc::EBUSY);
    }
    if old != new && is_open(old) {
        release(new);
    }
    // SAFETY: glibc's function.
    let r = unsafe { (real().dup2)(old, new) };
    if old != new {
        duplicated(old, r);
    }
    r
}

/// `dup3()`, as `dup2`.
pub(crate) fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
    if old != new && utimer::owns_fd(new) {
        // As `dup2`.
        return crate::real::fail(libc::EBUSY);
    }
    if old != new && is_open(old) && flags & !libc::O_CLOEXEC == 0 {
        release(new);
    }
    // SAFETY: glibc's function.
    let r = unsafe { (real().dup3)(old, new, flags) };
    if old != new {
        duplicated(old, r);
    }
    r
}

/// `fcntl()` and `fcntl64()`: `F_DUPFD` and `F_DUPFD_CLOEXEC` of a timerfd
/// name its timer; every command goes to glibc with its argument as given
/// (an integer or a pointer, one machine word, as the variadic call passed
/// it).
///
/// # Safety
/// As glibc's.
pub(crate) unsafe fn fcntl(
    fd: c_int,
    cmd: c_int,
    arg: usize,
    real_fn: unsafe extern "C" fn(c_int, c_int, usize) -> c_int,
) -> c_int {
    // SAFETY: glibc's function, the caller's arguments.
    let r = unsafe { real_fn(fd, cmd, arg) };
    if cmd == libc::F_DUPFD || cmd == libc::F_DUPFD_CLOEXEC {
        duplicated(fd, r);
    }
    r
}

/// `write()`: a timerfd cannot be written (`EINVAL`, as the kernel's);
/// every other descriptor goes to glibc.
///
/// # Safety
/// As glibc's.
pub(crate) unsafe fn write(fd: c_int, buf: *const libc::c_void, n: libc::size_t) -> libc::ssize_t {
    if capi::timerfd_clock(fd).is_some() {
        fail(libc::EINVAL);
        return -1;
    }
    // SAFETY: glibc's function, the caller's arguments.
    unsafe { (real().write)(fd, buf, n) }
}
