//! Kernel-style wheel timers for timeouts (`struct timer_list`): set up
//! once, armed with `utimer_wheel_mod` at an expiry in jiffies, cancelled
//! with `utimer_wheel_delete` or `utimer_wheel_delete_sync`, freed with
//! `utimer_wheel_free`. O(1) to arm and cancel; they fire at their wheel
//! level's granularity (never early, up to 12.5% late): for precise
//! deadlines use POSIX timers.

use crate::ffi::{errno, guard, handle, int, Errno};
use crate::system::utimer_t;
use std::mem::MaybeUninit;
use std::os::raw::{c_int, c_uint, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use utimer::{Expiry, Timer, TimerError, TimerFlags};

/// `flags` of `utimer_wheel_setup()`: the timer stays on the worker that
/// armed it (the kernel's `TIMER_PINNED`).
pub const UTIMER_PINNED: c_uint = 1;
/// `flags` of `utimer_wheel_setup()`: the timer never wakes an idle worker
/// (the kernel's `TIMER_DEFERRABLE`).
pub const UTIMER_DEFERRABLE: c_uint = 2;

/// A wheel timer (the kernel's `struct timer_list`). Opaque to C.
#[derive(Debug)]
pub struct utimer_timer_list {
    timer: Timer,
    /// Its system's `utimer_t::closed`.
    closed: Arc<AtomicBool>,
}

/// A wheel timer's callback: the timer and the `arg` given at setup.
pub type utimer_timer_fn = Option<unsafe extern "C" fn(*mut utimer_timer_list, *mut c_void)>;

fn flags_of(flags: c_uint) -> Result<TimerFlags, Errno> {
    if flags & !(UTIMER_PINNED | UTIMER_DEFERRABLE) != 0 {
        return Err(libc::EINVAL);
    }
    let mut f = TimerFlags::NONE;
    if flags & UTIMER_PINNED != 0 {
        f = f | TimerFlags::PINNED;
    }
    if flags & UTIMER_DEFERRABLE != 0 {
        f = f | TimerFlags::DEFERRABLE;
    }
    Ok(f)
}

/// Allocates a wheel timer of `u` that calls `fn(timer, arg)` on a worker
/// when it fires: the kernel's `timer_setup()`. It is not armed. `flags`:
/// 0, `UTIMER_PINNED`, `UTIMER_DEFERRABLE` or both. Free it with
/// `utimer_wheel_free()`.
///
/// Returns NULL with `errno = EINVAL` for a NULL `u` or `fn`, or unknown
/// flags.
///
/// # Safety
/// `u` is NULL or live; `fn` may be called with `arg` from any utimer
/// worker thread until the timer is freed.
#[no_mangle]
pub unsafe extern "C" fn utimer_wheel_setup(
    u: *mut utimer_t,
    r#fn: utimer_timer_fn,
    arg: *mut c_void,
    flags: c_uint,
) -> *mut utimer_timer_list {
    guard(std::ptr::null_mut(), || {
        // SAFETY: the caller's promise.
        let u = unsafe { handle(u) }?;
        let f = r#fn.ok_or(libc::EINVAL)?;
        let flags = flags_of(flags)?;
        // The callback needs the handle's address, so the allocation comes
        // first and the timer is written into it before anyone can arm it.
        let p = Box::into_raw(Box::<MaybeUninit<utimer_timer_list>>::new_uninit())
            .cast::<utimer_timer_list>();
        let (addr, arg) = (p as usize, arg as usize);
        let timer = u.sys.timer_with_flags(flags, move |_| {
            // SAFETY: the handle is initialized before it is returned (so
            // before any arm), and freed only after the callback can no
            // longer run (`utimer_wheel_free`); `f` and `arg` are the C
            // caller's, promised callable from a worker.
            unsafe { f(addr as *mut utimer_timer_list, arg as *mut c_void) }
        });
        let closed = u.closed.clone();
        // SAFETY: `p` is a fresh, unaliased allocation for this type.
        unsafe { p.write(utimer_timer_list { timer, closed }) };
        Ok(p)
    })
}

/// Runs `f` on the timer behind `t`, mapping its answer to 1 / 0 and its
/// error to `errno`; once its system is closed, `ESHUTDOWN` without
/// calling `f`, unless `after_close` gives the answer then.
fn with_timer(
    t: *const utimer_timer_list,
    after_close: Option<bool>,
    f: impl FnOnce(&Timer) -> Result<bool, TimerError>,
) -> c_int {
    guard(-1, || {
        // SAFETY: every export that calls this documents that `t` is NULL
        // or a live handle from `utimer_wheel_setup`.
        let t = unsafe { handle(t) }?;
        if t.closed.load(Ordering::Acquire) {
            return after_close.map(int).ok_or(libc::ESHUTDOWN);
        }
        f(&t.timer).map(int).map_err(errno)
    })
}

/// Arms or re-arms `t` to fire at tick `expires` (see `utimer_jiffies()`):
/// the kernel's `mod_timer()`. Re-arming within the same wheel bucket takes
/// no lock. Returns 1 if it was pending, 0 if not, -1 with `errno`:
/// `EINVAL` for NULL, `ESHUTDOWN` once its system is closed
/// (`utimer_close()`: nothing would ever fire it).
///
/// # Safety
/// `t` is NULL or a live handle from `utimer_wheel_setup`.
#[no_mangle]
pub unsafe extern "C" fn utimer_wheel_mod(t: *mut utimer_timer_list, expires: u64) -> c_int {
    with_timer(t, None, |t| t.modify(Expiry::Tick(expires)))
}

/// Re-arms `t` to `expires` only if it is pending: the kernel's
/// `mod_timer_pending()`. Returns 1 if it was (and is re-armed), 0 if not,
/// -1 with `errno`: `EINVAL` for NULL, `ESHUTDOWN` once its system is
/// closed.
///
/// # Safety
/// `t` is NULL or a live handle from `utimer_wheel_setup`.
#[no_mangle]
pub unsafe extern "C" fn utimer_wheel_mod_pending(
    t: *mut utimer_timer_list,
    expires: u64,
) -> c_int {
    with_timer(t, None, |t| t.modify_pending(Expiry::Tick(expires)))
}

/// Arms `t` at `expires`, or moves it earlier if it is pending later: the
/// kernel's `timer_reduce()`. Returns 1 if it was pending, 0 if not, -1
/// with `errno`: `EINVAL` for NULL, `ESHUTDOWN` once its system is
/// closed.
///
/// # Safety
/// `t` is NULL or a live handle from `utimer_wheel_setup`.
#[no_mangle]
pub unsafe extern "C" fn utimer_wheel_reduce(t: *mut utimer_timer_list, expires: u64) -> c_int {
    with_timer(t, None, |t| t.reduce(Expiry::Tick(expires)))
}

/// Cancels `t` without waiting for a running callback: the kernel's
/// `timer_delete()` / `del_timer()`. Returns 1 if it was pending, 0 if not
/// (also once its system is closed), -1 with `errno = EINVAL` for NULL.
///
/// # Safety
/// `t` is NULL or a live handle from `utimer_wheel_setup`.
#[no_mangle]
pub unsafe extern "C" fn utimer_wheel_delete(t: *mut utimer_timer_list) -> c_int {
    with_timer(t, Some(false), |t| Ok(t.delete()))
}

/// Cancels `t` and waits until its callback is not running anywhere: the
/// kernel's `timer_delete_sync()` / `del_timer_sync()`. Returns 1 if it
/// was pending, 0 if not, -1 with `errno`: `EDEADLK` when called from
/// `t`'s own callback (nothing changes), `EINVAL` for NULL, `ESHUTDOWN`
/// once its system is closed.
///
/// # Safety
/// `t` is NULL or a live handle from `utimer_wheel_setup`.
#[no_mangle]
pub unsafe extern "C" fn utimer_wheel_delete_sync(t: *mut utimer_timer_list) -> c_int {
    with_timer(t, None, |t| t.delete_sync())
}

/// Cancels `t` for good (later arms are ignored, also from its own
/// callback) and waits for a running callback: the kernel's
/// `timer_shutdown_sync()`. Returns 1 if it was pending, 0 if not, -1
/// with `errno`: `EDEADLK` from its own callback, `EINVAL` for NULL,
/// `ESHUTDOWN` once its system is closed.
///
/// # Safety
/// `t` is NULL or a live handle from `utimer_wheel_setup`.
#[no_mangle]
pub unsafe extern "C" fn utimer_wheel_shutdown_sync(t: *mut utimer_timer_list) -> c_int {
    with_timer(t, None, |t| t.shutdown_sync())
}

/// Whether `t` is armed: the kernel's `timer_pending()`. 1 or 0 (0 once
/// its system is closed); -1 with `errno = EINVAL` for NULL.
///
/// # Safety
/// `t` is NULL or a live handle from `utimer_wheel_setup`.
#[no_mangle]
pub unsafe extern "C" fn utimer_wheel_pending(t: *const utimer_timer_list) -> c_int {
    with_timer(t, Some(false), |t| Ok(t.is_pending()))
}

/// Cancels `t`, waits for its running callback unless called from that
/// callback, and frees it. NULL is ignored. After it returns, `t` is gone:
/// a callback that frees its own timer must not touch `t` afterwards.
///
/// # Safety
/// `t` is NULL or a live handle from `utimer_wheel_setup`, not used
/// afterwards.
#[no_mangle]
pub unsafe extern "C" fn utimer_wheel_free(t: *mut utimer_timer_list) {
    if t.is_null() {
        return;
    }
    guard((), || {
        // SAFETY: the caller hands over a live handle made by
        // `Box::into_raw` in `utimer_wheel_setup`.
        let t = unsafe { Box::from_raw(t) };
        // From its own callback this refuses to wait (InOwnCallback) and
        // the drop below defers the free of the timer itself until the
        // callback returns; elsewhere it waits, so no callback can still
        // see the handle once it is freed.
        let _ = t.timer.shutdown_sync();
        drop(t);
        Ok(())
    });
}

// The wheel family's names before it took the one prefix `utimer_wheel_`
// (the kernel's verbs after `utimer_`), kept for one release so that
// programs written against them still build; the header marks them
// deprecated.

/// Deprecated name of `utimer_wheel_setup()` (the kernel's `timer_setup()`).
///
/// # Safety
/// As `utimer_wheel_setup()`.
#[no_mangle]
#[deprecated(note = "use utimer_wheel_setup")]
pub unsafe extern "C" fn utimer_timer_setup(
    u: *mut utimer_t,
    r#fn: utimer_timer_fn,
    arg: *mut c_void,
    flags: c_uint,
) -> *mut utimer_timer_list {
    // SAFETY: the caller's promise, passed on.
    unsafe { utimer_wheel_setup(u, r#fn, arg, flags) }
}

/// Deprecated name of `utimer_wheel_mod()` (the kernel's `mod_timer()`).
///
/// # Safety
/// As `utimer_wheel_mod()`.
#[no_mangle]
#[deprecated(note = "use utimer_wheel_mod")]
pub unsafe extern "C" fn utimer_mod_timer(t: *mut utimer_timer_list, expires: u64) -> c_int {
    // SAFETY: the caller's promise, passed on.
    unsafe { utimer_wheel_mod(t, expires) }
}

/// Deprecated name of `utimer_wheel_mod_pending()` (the kernel's
/// `mod_timer_pending()`).
///
/// # Safety
/// As `utimer_wheel_mod_pending()`.
#[no_mangle]
#[deprecated(note = "use utimer_wheel_mod_pending")]
pub unsafe extern "C" fn utimer_mod_timer_pending(
    t: *mut utimer_timer_list,
    expires: u64,
) -> c_int {
    // SAFETY: the caller's promise, passed on.
    unsafe { utimer_wheel_mod_pending(t, expires) }
}

/// Deprecated name of `utimer_wheel_reduce()` (the kernel's
/// `timer_reduce()`).
///
/// # Safety
/// As `utimer_wheel_reduce()`.
#[no_mangle]
#[deprecated(note = "use utimer_wheel_reduce")]
pub unsafe extern "C" fn utimer_timer_reduce(t: *mut utimer_timer_list, expires: u64) -> c_int {
    // SAFETY: the caller's promise, passed on.
    unsafe { utimer_wheel_reduce(t, expires) }
}

/// Deprecated name of `utimer_wheel_delete()` (the kernel's `del_timer()`).
///
/// # Safety
/// As `utimer_wheel_delete()`.
#[no_mangle]
#[deprecated(note = "use utimer_wheel_delete")]
pub unsafe extern "C" fn utimer_del_timer(t: *mut utimer_timer_list) -> c_int {
    // SAFETY: the caller's promise, passed on.
    unsafe { utimer_wheel_delete(t) }
}

/// Deprecated name of `utimer_wheel_delete_sync()` (the kernel's
/// `del_timer_sync()`).
///
/// # Safety
/// As `utimer_wheel_delete_sync()`.
#[no_mangle]
#[deprecated(note = "use utimer_wheel_delete_sync")]
pub unsafe extern "C" fn utimer_del_timer_sync(t: *mut utimer_timer_list) -> c_int {
    // SAFETY: the caller's promise, passed on.
    unsafe { utimer_wheel_delete_sync(t) }
}

/// Deprecated name of `utimer_wheel_shutdown_sync()` (the kernel's
/// `timer_shutdown_sync()`).
///
/// # Safety
/// As `utimer_wheel_shutdown_sync()`.
#[no_mangle]
#[deprecated(note = "use utimer_wheel_shutdown_sync")]
pub unsafe extern "C" fn utimer_timer_shutdown_sync(t: *mut utimer_timer_list) -> c_int {
    // SAFETY: the caller's promise, passed on.
    unsafe { utimer_wheel_shutdown_sync(t) }
}

/// Deprecated name of `utimer_wheel_pending()` (the kernel's
/// `timer_pending()`).
///
/// # Safety
/// As `utimer_wheel_pending()`.
#[no_mangle]
#[deprecated(note = "use utimer_wheel_pending")]
pub unsafe extern "C" fn utimer_timer_pending(t: *const utimer_timer_list) -> c_int {
    // SAFETY: the caller's promise, passed on.
    unsafe { utimer_wheel_pending(t) }
}

/// Deprecated name of `utimer_wheel_free()`.
///
/// # Safety
/// As `utimer_wheel_free()`.
#[no_mangle]
#[deprecated(note = "use utimer_wheel_free")]
pub unsafe extern "C" fn utimer_timer_free(t: *mut utimer_timer_list) {
    // SAFETY: the caller's promise, passed on.
    unsafe { utimer_wheel_free(t) }
}
