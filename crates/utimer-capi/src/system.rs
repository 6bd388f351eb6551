//! Opening and closing a timer system; its clock in jiffies.

use crate::ffi::{guard, handle, Errno};
use std::os::raw::{c_int, c_uint};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use utimer::{Runtime, TimerSystem};

/// A timer system: its workers, bases, wheel timers and POSIX timers (the
/// kernel's per-process timer state and per-CPU bases). Opaque to C.
#[derive(Debug)]
pub struct utimer_t {
    pub(crate) sys: Arc<TimerSystem>,
    /// The worker threads, for a system from [`utimer_open`]; `None` for
    /// one from [`utimer_open_unthreaded`].
    rt: Mutex<Option<Runtime>>,
    /// Whether the system has worker threads of its own (then no program
    /// thread may register as one of its workers).
    pub(crate) threaded: bool,
    /// Set by `utimer_close`, before the system goes; shared with every
    /// wheel timer of the system, which outlives it until
    /// `utimer_wheel_free` and must then refuse every call with `EINVAL`.
    pub(crate) closed: Arc<AtomicBool>,
}

/// The most workers `utimer_open()` and `utimer_open_unthreaded()`
/// accept: 1,024, the CPUs a `cpu_set_t` holds (`CPU_SETSIZE`), so that
/// one worker per CPU is always within it (Rust: `utimer::MAX_WORKERS`).
/// A larger count fails with `EINVAL` before any thread starts.
pub const UTIMER_MAX_WORKERS: c_uint = 1024;

const _: () = assert!(UTIMER_MAX_WORKERS as usize == utimer::MAX_WORKERS);

fn open(n: c_uint, threads: bool) -> Result<*mut utimer_t, Errno> {
    if n > UTIMER_MAX_WORKERS {
        return Err(libc::EINVAL);
    }
    // 0: one per CPU (the builder's own rule).
    open_with(TimerSystem::builder().workers(n as usize), threads)
}

impl utimer_t {
    /// The drop-in library's system: for `workers` 0, one worker pinned to
    /// each CPU the process may run on, so that a timer armed on a CPU
    /// fires there, as the kernel's do (a thread that is no worker's arms
    /// on the worker of its CPU; `Builder::pin_to_process_cpus`); else
    /// `workers` unpinned workers, as `utimer_open`. In both, a thread that
    /// sleeps in the library's sleep calls may serve the hrtimers
    /// (`utimer::Builder::sleepers_serve`). Dropping the box is
    /// `utimer_close`.
    ///
    /// # Errors
    /// `EINVAL` (more than `UTIMER_MAX_WORKERS`), or the error of starting
    /// the threads.
    pub fn open_serving(workers: c_uint) -> Result<Box<utimer_t>, Errno> {
        if workers > UTIMER_MAX_WORKERS {
            return Err(libc::EINVAL);
        }
        let builder = match workers {
            0 => TimerSystem::builder().pin_to_process_cpus(),
            n => TimerSystem::builder().workers(n as usize),
        };
        build(builder.sleepers_serve(true), true)
    }

    /// The timer system behind this handle (for the drop-in library's
    /// sleep calls, [`TimerSystem::serve`]).
    pub fn system(&self) -> &TimerSystem {
        &self.sys
    }

    /// [`utimer_serve_realtime`]'s body: the priority the workers run at
    /// (0: not raised).
    ///
    /// # Errors
    /// `EINVAL`: no `SCHED_FIFO` priority.
    pub fn serve_realtime(&self, priority: c_int) -> Result<c_int, Errno> {
        self.sys.serve_realtime(priority).map_err(crate::ffi::errno)
    }

    /// The number of workers.
    pub fn workers(&self) -> usize {
        self.sys.workers()
    }
}

/// Closing: `utimer_close`, or the drop of a box from
/// [`utimer_t::open_serving`].
impl Drop for utimer_t {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::Release);
        let rt = self.rt.lock().unwrap_or_else(|e| e.into_inner()).take();
        drop(rt);
    }
}

fn open_with(builder: utimer::Builder, threads: bool) -> Result<*mut utimer_t, Errno> {
    build(builder, threads).map(Box::into_raw)
}

fn build(builder: utimer::Builder, threads: bool) -> Result<Box<utimer_t>, Errno> {
    let (sys, rt) = if threads {
        let rt = Runtime::with_builder(builder).map_err(|e| match e.raw_os_error() {
            Some(errno) => errno,
            // Settings refused before any thread started.
            None if e.kind() == std::io::ErrorKind::InvalidInput => libc::EINVAL,
            None => libc::EAGAIN,
        })?;
        (rt.system_arc(), Some(rt))
    } else {
        let sys = builder
            .try_build_without_threads()
            .map_err(crate::ffi::errno)?;
        (Arc::new(sys), None)
    };
    Ok(Box::new(utimer_t {
        sys,
        threaded: rt.is_some(),
        rt: Mutex::new(rt),
        closed: Arc::new(AtomicBool::new(false)),
    }))
}

/// Opens a timer system with `workers` worker threads (0: one per CPU the
/// process may run on), which run the timers' callbacks and sleep tickless
/// when idle.
///
/// Returns NULL with `errno` set on failure: `EINVAL` for more than
/// `UTIMER_MAX_WORKERS` workers (before any thread starts), `EAGAIN` (or
/// the system's error) if a thread cannot start.
#[no_mangle]
pub extern "C" fn utimer_open(workers: c_uint) -> *mut utimer_t {
    guard(std::ptr::null_mut(), || open(workers, true))
}

/// Opens a timer system with `workers` workers and no threads: the
/// program's own threads become its workers with `utimer_worker_register()`
/// and run its timers from their event loops. 0: one worker per CPU.
///
/// Returns NULL with `errno` set on failure: `EINVAL` for more than
/// `UTIMER_MAX_WORKERS` workers.
#[no_mangle]
pub extern "C" fn utimer_open_unthreaded(workers: c_uint) -> *mut utimer_t {
    guard(std::ptr::null_mut(), || open(workers, false))
}

/// Closes `u`: stops its worker threads (a callback already running
/// finishes first), cancels every pending timer and deletes its POSIX
/// timers. Wheel timers still allocated stay valid memory whose arming
/// and waiting calls fail with `ESHUTDOWN` until `utimer_wheel_free()`.
/// NULL is ignored. Must not be called from one of `u`'s callbacks.
///
/// # Safety
/// `u` is NULL or a live handle from `utimer_open*`, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn utimer_close(u: *mut utimer_t) {
    if u.is_null() {
        return;
    }
    guard((), || {
        // SAFETY: the caller hands over a live handle made by `Box::into_raw`;
        // its drop closes it.
        drop(unsafe { Box::from_raw(u) });
        Ok(())
    });
}

/// Serves a thread of real-time priority `priority` (its `SCHED_FIFO` or
/// `SCHED_RR` priority, 1..=99): `u`'s worker threads run `SCHED_FIFO` at
/// that priority, so that no real-time thread below it keeps a timer from
/// firing, and wake ahead of their expiries to fire them on time (the
/// kernel fires hrtimers from its interrupt). Never lowers; best effort
/// without the privilege. A timer that fires, made for a real-time thread,
/// does this by itself. Returns the priority the workers run at (0: not
/// raised), or -1 with `errno = EINVAL` for NULL or a priority that is no
/// `SCHED_FIFO` one (outside `sched_get_priority_min(SCHED_FIFO)` ..=
/// `sched_get_priority_max(SCHED_FIFO)`, 1..=99 on Linux, as
/// `sched_setscheduler()` refuses it); nothing changes then.
///
/// # Safety
/// `u` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn utimer_serve_realtime(u: *const utimer_t, priority: c_int) -> c_int {
    guard(-1, || {
        // SAFETY: the caller's promise.
        unsafe { handle(u) }?.serve_realtime(priority)
    })
}

/// The number of workers of `u` (0 with `errno = EINVAL` for NULL).
///
/// # Safety
/// `u` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn utimer_workers(u: *const utimer_t) -> c_uint {
    // SAFETY: the caller's promise.
    guard(0, || Ok(unsafe { handle(u) }?.sys.workers() as c_uint))
}

/// The current tick of `u`'s clock (the kernel's `jiffies`; 1 ms ticks),
/// the unit of the wheel timers' expiries: the precise monotonic clock,
/// rounded down, so that a timer armed at `utimer_jiffies(u) + n` fires
/// after at least `n - 1` whole ticks, as in the kernel (never before its
/// expiry tick begins). 0 with `errno = EINVAL` for NULL.
///
/// # Safety
/// `u` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn utimer_jiffies(u: *const utimer_t) -> u64 {
    // SAFETY: the caller's promise.
    guard(0, || Ok(unsafe { handle(u) }?.sys.now_precise()))
}

/// `ms` milliseconds as ticks, rounded up (the kernel's
/// `msecs_to_jiffies()`). 0 with `errno = EINVAL` for NULL.
///
/// # Safety
/// `u` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn utimer_msecs_to_jiffies(u: *const utimer_t, ms: c_uint) -> u64 {
    guard(0, || {
        // SAFETY: the caller's promise.
        let tick = unsafe { handle(u) }?.sys.tick().as_nanos().max(1);
        let ns = Duration::from_millis(u64::from(ms)).as_nanos();
        Ok(ns.div_ceil(tick) as u64)
    })
}

/// The crate's version as a C string constant, e.g. for logs.
#[no_mangle]
pub extern "C" fn utimer_version() -> *const std::os::raw::c_char {
    c"0.1.0".as_ptr()
}
