//! Event loops that own their threads (libuv-, epoll- or DPDK-style): a
//! thread registers as a worker of a system from `utimer_open_unthreaded`,
//! runs its expired timers, asks how long it may sleep, and says when it is
//! busy again (the kernel's tick-less idle entry and exit).
//!
//! ```c
//! utimer_worker_t *w = utimer_worker_register(u, 0, wake_loop, loop);
//! for (;;) {
//!     utimer_worker_run(w);                     /* expired callbacks */
//!     int64_t ns = utimer_worker_idle_enter(w);  /* -1: no timer */
//!     epoll_wait(ep, evs, n, ns < 0 ? -1 : (int)((ns + 999999) / 1000000));
//!     utimer_worker_idle_exit(w);
//!     ...
//! }
//! ```

use crate::ffi::{errno, guard, handle, Errno};
use crate::system::utimer_t;
use std::os::raw::{c_int, c_uint, c_void};
use std::thread::ThreadId;
use std::time::Instant;
use utimer::Worker;

/// A thread registered as a worker. Opaque to C; used only on the thread
/// that registered it.
#[derive(Debug)]
pub struct utimer_worker_t {
    worker: Worker,
    thread: ThreadId,
}

/// Called when a timer armed while the worker is idle must fire before it
/// planned to wake: wake the loop (write to an eventfd, say). It must not
/// block, and may run on any thread.
pub type utimer_wake_fn = Option<unsafe extern "C" fn(*mut c_void)>;

/// The worker behind `w`, if this is its thread.
///
/// # Safety
/// `w` is NULL or a live handle from `utimer_worker_register`.
unsafe fn mine<'a>(w: *const utimer_worker_t) -> Result<&'a utimer_worker_t, Errno> {
    // SAFETY: the caller's promise.
    let w = unsafe { handle(w) }?;
    if w.thread != std::thread::current().id() {
        return Err(libc::EPERM);
    }
    Ok(w)
}

/// Makes the calling thread worker `index` of `u` (a system from
/// `utimer_open_unthreaded()`): timers it creates and arms live on this
/// worker's bases, and its loop runs them. `wake(arg)` is called, from any
/// thread and never under a utimer lock, when the idle worker must wake
/// early. The kernel's CPU coming online.
///
/// Returns NULL with `errno = EINVAL` (NULL `u` or `wake`, `index` out of
/// range, or `u` from `utimer_open()`, whose workers are its own threads).
///
/// # Safety
/// `u` is NULL or live and outlives the worker; `wake` may be called with
/// `arg` from any thread until the worker is unregistered.
#[no_mangle]
pub unsafe extern "C" fn utimer_worker_register(
    u: *mut utimer_t,
    index: c_uint,
    wake: utimer_wake_fn,
    arg: *mut c_void,
) -> *mut utimer_worker_t {
    guard(std::ptr::null_mut(), || {
        // SAFETY: the caller's promise.
        let u = unsafe { handle(u) }?;
        if u.threaded {
            return Err(libc::EINVAL);
        }
        let wake = wake.ok_or(libc::EINVAL)?;
        let arg = arg as usize;
        let worker = u
            .sys
            .register_worker(index as usize, move || {
                // SAFETY: the caller promised `wake(arg)` callable from any
                // thread while registered.
                unsafe { wake(arg as *mut c_void) }
            })
            .map_err(errno)?;
        Ok(Box::into_raw(Box::new(utimer_worker_t {
            worker,
            thread: std::thread::current().id(),
        })))
    })
}

/// Runs the callbacks of this worker's timers that are due now; returns
/// how many ran, or -1 with `errno`: `EINVAL` (NULL), `EPERM` (not the
/// registering thread). The kernel's timer softirq.
///
/// # Safety
/// `w` is NULL or a live handle from `utimer_worker_register`.
#[no_mangle]
pub unsafe extern "C" fn utimer_worker_run(w: *mut utimer_worker_t) -> c_int {
    guard(-1, || {
        // SAFETY: the caller's promise.
        let w = unsafe { mine(w) }?;
        Ok(c_int::try_from(w.worker.run_expired()).unwrap_or(c_int::MAX))
    })
}

/// "I am going idle": returns how many nanoseconds the loop may sleep (0:
/// run `utimer_worker_run()` now instead), or -1 for "until woken" (no
/// timer needs this worker). From now until `utimer_worker_idle_exit()`,
/// an earlier timer wakes the loop through its `wake` function. Deadlines
/// are precise to the nanosecond (hrtimers); set the thread's timer slack
/// low (`prctl(PR_SET_TIMERSLACK, 1)`) if the sleep is an `epoll` or futex
/// timeout. The kernel's `tick_nohz_idle_enter()`.
///
/// On error -2 with `errno`: `EINVAL` (NULL), `EPERM` (not the registering
/// thread).
///
/// # Safety
/// `w` is NULL or a live handle from `utimer_worker_register`.
#[no_mangle]
pub unsafe extern "C" fn utimer_worker_idle_enter(w: *mut utimer_worker_t) -> i64 {
    guard(-2, || {
        // SAFETY: the caller's promise.
        let w = unsafe { mine(w) }?;
        Ok(match w.worker.idle_enter_until() {
            None => -1,
            Some(at) => {
                let left = at.saturating_duration_since(Instant::now());
                i64::try_from(left.as_nanos()).unwrap_or(i64::MAX)
            }
        })
    })
}

/// "I am busy again": arms on this worker stop waking it. The kernel's
/// `tick_nohz_idle_exit()`. Returns 0, or -1 with `errno` (`EINVAL`,
/// `EPERM`).
///
/// # Safety
/// `w` is NULL or a live handle from `utimer_worker_register`.
#[no_mangle]
pub unsafe extern "C" fn utimer_worker_idle_exit(w: *mut utimer_worker_t) -> c_int {
    guard(-1, || {
        // SAFETY: the caller's promise.
        unsafe { mine(w) }?.worker.idle_exit();
        Ok(0)
    })
}

/// Unregisters and frees the worker (its timers stay on its bases and are
/// pulled by busy workers or fire when it registers again). Returns 0, or
/// -1 with `errno`: `EINVAL` (NULL), `EPERM` (not the registering thread:
/// nothing is freed).
///
/// # Safety
/// `w` is NULL or a live handle from `utimer_worker_register`, not used
/// after success.
#[no_mangle]
pub unsafe extern "C" fn utimer_worker_unregister(w: *mut utimer_worker_t) -> c_int {
    guard(-1, || {
        // SAFETY: the caller's promise.
        unsafe { mine(w) }?;
        // SAFETY: live, made by `Box::into_raw`, and on its own thread.
        drop(unsafe { Box::from_raw(w) });
        Ok(0)
    })
}
