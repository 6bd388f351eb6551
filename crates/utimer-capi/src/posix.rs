//! POSIX timers, drop-in for the system calls: `utimer_timer_create`,
//! `utimer_timer_settime`, `utimer_timer_gettime`,
//! `utimer_timer_getoverrun`, `utimer_timer_delete`, plus
//! `utimer_timer_fd` for `epoll` loops. Semantics are the kernel's (see the
//! Rust crate's `posix` module and README, including the few differences
//! user space imposes on signals).

use crate::ffi::{errno, guard, handle, user_pointer, write_old, write_out, Errno};
use crate::sigev_thread::Spawner;
use crate::system::utimer_t;
use std::os::raw::{c_int, c_void};
use std::sync::Arc;
use utimer::{ClockId, ItimerSpec, Notify, TimerId};

/// `sigev_notify` value of a utimer extension: notify through a file
/// descriptor (see `utimer_timer_fd()`) that becomes readable on expiry and
/// reads as the 8-byte expiration count, like a timerfd.
pub const UTIMER_SIGEV_FD: c_int = 0x100;

/// `flags` of `utimer_timer_settime()`: `value` is an absolute time of the
/// timer's clock (POSIX `TIMER_ABSTIME`, the same value).
pub const UTIMER_TIMER_ABSTIME: c_int = 1;

/// glibc's `struct sigevent`, whose union `libc` does not spell out: the
/// thread ID (`SIGEV_THREAD_ID`) and the function (`SIGEV_THREAD`) share
/// its first bytes.
#[repr(C)]
struct SigEvent {
    value: libc::sigval,
    signo: c_int,
    notify: c_int,
    un: SigEventUnion,
}

#[repr(C)]
union SigEventUnion {
    tid: c_int,
    thread: SigEventThread,
    _pad: [c_int; 12],
}

#[repr(C)]
#[derive(Copy, Clone)]
struct SigEventThread {
    function: Option<unsafe extern "C" fn(libc::sigval)>,
    attributes: *mut c_void,
}

const _: () = assert!(std::mem::size_of::<SigEvent>() == std::mem::size_of::<libc::sigevent>());

/// The notification a `struct sigevent` asks for. `value` fields travel as
/// integers (the pointer is C's, handed back to C unchanged).
fn notify_of(ev: &SigEvent) -> Result<Notify, Errno> {
    let value = ev.value.sival_ptr as usize;
    Ok(match ev.notify {
        libc::SIGEV_NONE => Notify::None,
        libc::SIGEV_SIGNAL => Notify::Signal {
            signo: ev.signo,
            value,
            thread: None,
        },
        libc::SIGEV_THREAD_ID => Notify::Signal {
            signo: ev.signo,
            value,
            // SAFETY: for SIGEV_THREAD_ID the union holds the thread ID
            // (any bit pattern is an int).
            thread: Some(unsafe { ev.un.tid }),
        },
        libc::SIGEV_THREAD => {
            // SAFETY: for SIGEV_THREAD the union holds the function and its
            // attributes (a null function is refused below).
            let thread = unsafe { ev.un.thread };
            let f = thread.function.ok_or(libc::EINVAL)?;
            // SAFETY: the caller of timer_create promised that the
            // attributes, if any, are initialized; they are copied here.
            let spawner = unsafe { Spawner::new(thread.attributes.cast_const().cast()) }?;
            Notify::Callback(Arc::new(move |_| spawner.notify(f, value)))
        }
        UTIMER_SIGEV_FD => Notify::Fd,
        _ => return Err(libc::EINVAL),
    })
}

fn clock_of(clock: libc::clockid_t) -> Result<ClockId, Errno> {
    ClockId::from_raw(clock).ok_or(libc::EINVAL)
}

/// The POSIX timer calls in Rust, with typed arguments and the kernel's
/// error numbers: what each `utimer_timer_*` export runs between checking
/// the pointers C passed and writing out what it returns, and what the
/// drop-in library calls directly. No `errno` is set here, and nothing is
/// read through a pointer.
impl utimer_t {
    /// Creates a POSIX timer on `clock` notifying as `ev` says (`None`:
    /// `SIGEV_SIGNAL` with `SIGALRM` and the timer's ID as `sival_int`, as
    /// POSIX says for a NULL `sevp`): the kernel's `timer_create()`. See
    /// [`utimer_timer_create`] for the notifications.
    ///
    /// # Errors
    /// `EINVAL` (unknown notification, bad signal, no `SIGEV_THREAD`
    /// function), `EAGAIN` (no ID left), or the error of opening the fd.
    pub fn timer_create(
        &self,
        clock: ClockId,
        ev: Option<&libc::sigevent>,
    ) -> Result<TimerId, Errno> {
        // SAFETY: `SigEvent` mirrors `struct sigevent`'s layout (same size,
        // asserted above), so a reference to one is a reference to the
        // other.
        let ev = ev.map(|e| unsafe { &*(e as *const libc::sigevent).cast::<SigEvent>() });
        match ev {
            Some(ev) => {
                let notify = notify_of(ev)?;
                self.sys.posix().timer_create(clock, notify)
            }
            None => self
                .sys
                .posix()
                .timer_create_with(clock, |id| Notify::Signal {
                    signo: libc::SIGALRM,
                    value: id.raw() as usize,
                    thread: None,
                }),
        }
        .map_err(errno)
    }

    /// Arms timer `id` with `new` (a zero `it_value` disarms; the interval
    /// counts only with a value; `abstime`: `it_value` is a time of the
    /// timer's clock) and returns the previous setting: the kernel's
    /// `timer_settime()`, and `timerfd_settime()`'s body. Waits for a
    /// running `SIGEV_THREAD` callback, unless called from it.
    ///
    /// # Errors
    /// `EINVAL`: unknown or deleted ID, negative or non-normalized
    /// timespec.
    // Always inlined: the drop-in's `timer_settime` is this and a few
    // checks; a call here measured 5% on it (`ci/ab-bench.sh`).
    #[inline(always)]
    pub fn timer_settime(
        &self,
        id: TimerId,
        abstime: bool,
        new: &libc::itimerspec,
    ) -> Result<libc::itimerspec, Errno> {
        let spec = ItimerSpec::from_c(new).map_err(errno)?;
        let old = self
            .sys
            .posix()
            .timer_settime(id, abstime, spec)
            .map_err(errno)?;
        Ok(old.to_c())
    }

    /// The time to timer `id`'s next expiry and its interval (zero:
    /// disarmed): the kernel's `timer_gettime()`.
    ///
    /// # Errors
    /// `EINVAL`: unknown or deleted ID.
    #[inline]
    pub fn timer_gettime(&self, id: TimerId) -> Result<libc::itimerspec, Errno> {
        let cur = self.sys.posix().timer_gettime(id).map_err(errno)?;
        Ok(cur.to_c())
    }

    /// The overrun count of timer `id`'s last notification (clamped to
    /// `INT_MAX`): the kernel's `timer_getoverrun()`.
    ///
    /// # Errors
    /// `EINVAL`: unknown or deleted ID.
    #[inline]
    pub fn timer_getoverrun(&self, id: TimerId) -> Result<c_int, Errno> {
        self.sys.posix().timer_getoverrun(id).map_err(errno)
    }

    /// Deletes timer `id`: the kernel's `timer_delete()`. Waits for a
    /// running `SIGEV_THREAD` callback (unless called from it) and closes
    /// the timer's fd.
    ///
    /// # Errors
    /// `EINVAL`: unknown ID, second delete.
    #[inline]
    pub fn timer_delete(&self, id: TimerId) -> Result<(), Errno> {
        self.sys.posix().timer_delete(id).map_err(errno)
    }

    /// Reports that the program accepted signal `info` (see
    /// [`utimer_timer_signal_accepted`]): `Some(true)` deliver it (its
    /// `si_overrun` updated), `Some(false)` stale, drop it, `None` not a
    /// signal of this system's timers. The kernel's
    /// `posixtimer_deliver_signal()`.
    #[doc(alias = "posixtimer_deliver_signal")]
    #[inline]
    pub fn timer_signal_accepted(&self, info: &mut libc::siginfo_t) -> Option<bool> {
        self.sys.posix().signal_accepted(info)
    }
}

/// Creates a POSIX timer on `clock` (`CLOCK_MONOTONIC`, `CLOCK_BOOTTIME` or
/// `CLOCK_REALTIME`) notifying as `sevp` says, and stores its ID in
/// `*timerid`: the kernel's `timer_create()`. `sevp`: `SIGEV_NONE`,
/// `SIGEV_SIGNAL`, `SIGEV_THREAD` (as glibc: each expiry's function runs
/// on a new detached thread made with a copy of `sigev_notify_attributes`
/// and every signal blocked, so a slow function never delays another timer
/// and no signal sent to the process lands on it), `SIGEV_THREAD_ID`,
/// `UTIMER_SIGEV_FD`, or NULL for `SIGEV_SIGNAL` with `SIGALRM` and the
/// timer's ID as `sival_int` (POSIX).
///
/// Returns 0, or -1 with `errno`: `EINVAL` (NULL `u`, unknown clock or
/// notification, bad signal, NULL `SIGEV_THREAD` function), `EFAULT`
/// (`sevp` or `timerid` where no memory can be: NULL `timerid`, the zero
/// page, past the top of user space), `EAGAIN` (no ID left), or the error
/// of opening the fd.
///
/// # Safety
/// `u` is NULL or live; `sevp` is NULL, where no memory can be, or points
/// to a `struct sigevent`; `timerid` is where no memory can be or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn utimer_timer_create(
    u: *mut utimer_t,
    clock: libc::clockid_t,
    sevp: *const libc::sigevent,
    timerid: *mut c_int,
) -> c_int {
    guard(-1, || {
        // SAFETY: the caller's promise.
        let u = unsafe { handle(u) }?;
        if !sevp.is_null() {
            user_pointer(sevp)?;
        }
        let clock = clock_of(clock)?;
        user_pointer(timerid)?;
        // SAFETY: NULL, or in range and the caller promised a sigevent.
        let id = u.timer_create(clock, unsafe { sevp.as_ref() })?;
        // SAFETY: checked in range; the caller promised it writable.
        unsafe { timerid.write(id.raw()) };
        Ok(0)
    })
}

/// Arms timer `timerid` with `new_value` (a zero `it_value` disarms; the
/// interval counts only with a value) and stores the previous setting in
/// `*old_value` if not NULL: the kernel's `timer_settime()`. `flags`: 0 or
/// `TIMER_ABSTIME`. Waits for a running `SIGEV_THREAD` callback, unless
/// called from it.
///
/// Returns 0, or -1 with `errno`: `EINVAL` (NULL `u` or `new_value`,
/// unknown or deleted ID, other flags, negative or non-normalized
/// timespec), `EFAULT` (`new_value` or `old_value` where no memory can be:
/// the zero page, past the top of user space; as the kernel, a bad
/// `old_value` is found once the timer is armed).
///
/// # Safety
/// `u` is NULL or live; `new_value` is NULL, where no memory can be, or
/// readable; `old_value` is NULL, where no memory can be, or writable.
#[no_mangle]
pub unsafe extern "C" fn utimer_timer_settime(
    u: *mut utimer_t,
    timerid: c_int,
    flags: c_int,
    new_value: *const libc::itimerspec,
    old_value: *mut libc::itimerspec,
) -> c_int {
    guard(-1, || {
        // SAFETY: the caller's promise.
        let u = unsafe { handle(u) }?;
        if new_value.is_null() {
            return Err(libc::EINVAL);
        }
        user_pointer(new_value)?;
        // SAFETY: non-null and in range: the caller promised it readable.
        let new = unsafe { &*new_value };
        if flags & !UTIMER_TIMER_ABSTIME != 0 {
            return Err(libc::EINVAL);
        }
        let abstime = flags & UTIMER_TIMER_ABSTIME != 0;
        let old = u.timer_settime(TimerId::from_raw(timerid), abstime, new)?;
        // SAFETY: the caller's promise for `old_value`.
        unsafe { write_old(old_value, old) }?;
        Ok(0)
    })
}

/// Stores the time to timer `timerid`'s next expiry and its interval in
/// `*curr_value` (zero: disarmed): the kernel's `timer_gettime()`.
///
/// Returns 0, or -1 with `errno`: `EINVAL` (NULL `u`, unknown or deleted
/// ID), `EFAULT` (`curr_value` where no memory can be: NULL, the zero page,
/// past the top of user space).
///
/// # Safety
/// `u` is NULL or live; `curr_value` is where no memory can be (NULL
/// included) or writable.
#[no_mangle]
pub unsafe extern "C" fn utimer_timer_gettime(
    u: *mut utimer_t,
    timerid: c_int,
    curr_value: *mut libc::itimerspec,
) -> c_int {
    guard(-1, || {
        // SAFETY: the caller's promise.
        let u = unsafe { handle(u) }?;
        let cur = u.timer_gettime(TimerId::from_raw(timerid))?;
        // SAFETY: the caller's promise for `curr_value`.
        unsafe { write_out(curr_value, cur) }?;
        Ok(0)
    })
}

/// The overrun count of timer `timerid`'s last notification (clamped to
/// `INT_MAX`): the kernel's `timer_getoverrun()`. -1 with `errno = EINVAL`
/// for a NULL `u` or an unknown or deleted ID.
///
/// # Safety
/// `u` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn utimer_timer_getoverrun(u: *mut utimer_t, timerid: c_int) -> c_int {
    guard(-1, || {
        // SAFETY: the caller's promise.
        unsafe { handle(u) }?.timer_getoverrun(TimerId::from_raw(timerid))
    })
}

/// Deletes timer `timerid`: the kernel's `timer_delete()`. Waits for a
/// running `SIGEV_THREAD` callback (unless called from it) and closes the
/// timer's fd. Returns 0, or -1 with `errno = EINVAL` (NULL `u`, unknown
/// ID, second delete).
///
/// # Safety
/// `u` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn utimer_timer_delete(u: *mut utimer_t, timerid: c_int) -> c_int {
    guard(-1, || {
        // SAFETY: the caller's promise.
        unsafe { handle(u) }?.timer_delete(TimerId::from_raw(timerid))?;
        Ok(0)
    })
}

/// The file descriptor of a timer created with `UTIMER_SIGEV_FD`:
/// readable once it expired, it reads as the number of expirations since
/// the last read (a `uint64_t`, as a timerfd); non-blocking. Owned by the
/// timer: closed by `utimer_timer_delete()`. -1 with `errno = EINVAL` for a
/// NULL `u`, an unknown ID, or a timer that notifies otherwise.
///
/// # Safety
/// `u` is NULL or live.
#[no_mangle]
pub unsafe extern "C" fn utimer_timer_fd(u: *mut utimer_t, timerid: c_int) -> c_int {
    guard(-1, || {
        // SAFETY: the caller's promise.
        let u = unsafe { handle(u) }?;
        u.sys
            .posix()
            .timer_fd(TimerId::from_raw(timerid))
            .map_err(errno)
    })
}

/// Reports that the program accepted signal `*info` (a handler got it, or
/// `sigwaitinfo` returned it), so that a signal of one of `u`'s timers
/// follows the kernel (`posixtimer_deliver_signal()`): its `si_overrun`
/// becomes every expiry since the one that queued it, up to now, and the
/// timer runs on; a signal queued before the timer was re-armed or
/// deleted is stale, and the kernel drops it.
///
/// `info` is a `siginfo_t *`, declared `void *` so that the header needs
/// no POSIX type of `<signal.h>` under a strict `-std=c11`.
///
/// Returns 1: deliver `*info` (its `si_overrun` updated); 0: stale, drop
/// it; -1 with `errno = EINVAL`: not a signal of `u`'s timers (NULL `u` or
/// `info` too), deliver it unchanged.
///
/// # Safety
/// `u` is NULL or live; `info` is NULL or a writable `siginfo_t`.
#[no_mangle]
pub unsafe extern "C" fn utimer_timer_signal_accepted(
    u: *mut utimer_t,
    info: *mut c_void,
) -> c_int {
    guard(-1, || {
        // SAFETY: the caller's promise.
        let u = unsafe { handle(u) }?;
        // SAFETY: the caller's promise: NULL or a writable siginfo_t.
        let info = unsafe { info.cast::<libc::siginfo_t>().as_mut() }.ok_or(libc::EINVAL)?;
        match u.timer_signal_accepted(info) {
            Some(deliver) => Ok(c_int::from(deliver)),
            None => Err(libc::EINVAL),
        }
    })
}

/// Says whether the program reports every acceptance of signal `signo`
/// with `utimer_timer_signal_accepted()` (`reported` non-zero): a
/// `SIGEV_THREAD_ID` timer, whose target thread's pending signals cannot
/// be seen from user space, then queues its next signal only once the last
/// one was accepted, as the kernel's does. Process-wide; other signal
/// numbers are ignored.
#[no_mangle]
pub extern "C" fn utimer_report_acceptance(signo: c_int, reported: c_int) {
    utimer::posix::report_acceptance(signo, reported != 0);
}
