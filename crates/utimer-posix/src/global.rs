//! The process's timer system: started by the first call that needs it,
//! forgotten in a `fork` child.
//!
//! # Lifetime
//!
//! ```text
//!   first timer call ──► utimer_open(workers) ──► SYSTEM (never closed:
//!                                                 it lives until exit or exec)
//!   fork ──► child: SYSTEM = none, the parent's left as it was (its
//!            threads do not exist in the child, so it cannot be closed);
//!            inherited timerfds become the kernel's (inherit.rs);
//!            the child's first call starts its own.
//!   start fails (no threads) ──► FAILED: every call goes to glibc.
//! ```
//!
//! `UTIMER_WORKERS=n` sets the number of workers, unpinned (1 to
//! `UTIMER_MAX_WORKERS`; 0 or unset: one per CPU the process may run on,
//! each pinned to its CPU, a program thread's timers on the worker of the
//! CPU it first armed one from, as the kernel's); `UTIMER_POSIX=off` sends
//! every call to glibc, for comparing a program on the kernel and on
//! utimer without rebuilding it (`on`, the default, is accepted too). A
//! value the library cannot use is reported on stderr, one line starting
//! `utimer:`, once per process, and ignored (the default applies), as is
//! a system that cannot start (then every call goes to glibc).
//! `UTIMER_POSIX=verbose` prints one line on stderr when the system starts
//! (`verbose.rs`).

use std::ffi::c_uint;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, Ordering};
use utimer_capi::utimer_t;

/// The system, once started.
static SYSTEM: AtomicPtr<utimer_t> = AtomicPtr::new(std::ptr::null_mut());
/// `STATE`: not started.
const IDLE: u8 = 0;
/// `STATE`: a thread is starting it.
const STARTING: u8 = 1;
/// `STATE`: started (`SYSTEM` is set).
const UP: u8 = 2;
/// `STATE`: could not start, or turned off: pass everything through.
const OFF: u8 = 3;
static STATE: AtomicU8 = AtomicU8::new(IDLE);
/// `pthread_atfork` registered.
static ATFORK: AtomicBool = AtomicBool::new(false);

/// The system, starting it if need be; `None`: pass through to glibc.
#[inline]
pub(crate) fn system() -> Option<&'static utimer_t> {
    started().or_else(start)
}

/// The system if it has started (a signal's acceptance needs no new one).
#[inline]
pub(crate) fn started() -> Option<&'static utimer_t> {
    // SAFETY: `SYSTEM` is NULL or a leaked box that is never freed (the
    // system lives until exit or exec).
    unsafe { SYSTEM.load(Ordering::Acquire).as_ref() }
}

#[cold]
fn start() -> Option<&'static utimer_t> {
    loop {
        match STATE.compare_exchange(IDLE, STARTING, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => break,
            Err(UP) => return started(),
            Err(OFF) => return None,
            // Another thread is starting it: wait (a few milliseconds once
            // per process).
            Err(_) => std::thread::yield_now(),
        }
    }
    if !ATFORK.swap(true, Ordering::AcqRel) {
        // SAFETY: registers plain functions with no arguments around fork.
        unsafe {
            libc::pthread_atfork(Some(fork_prepare), Some(fork_parent), Some(forget_in_child))
        };
    }
    if turned_off() {
        STATE.store(OFF, Ordering::Release);
        return None;
    }
    let workers = workers();
    // 0: one worker on each CPU, as the kernel's timer bases. Threads
    // that sleep in the library's sleep calls serve the hrtimers
    // (`sleep.rs`).
    let opened = utimer_capi::guard(None, || utimer_t::open_serving(workers).map(Some));
    let Some(u) = opened else {
        let err = std::io::Error::last_os_error();
        warn(
            &START_FAILED,
            format_args!("the timer system did not start ({err}): timers go to the kernel"),
        );
        STATE.store(OFF, Ordering::Release);
        return None;
    };
    // Never freed: the system lives until exit or exec.
    let u: &'static utimer_t = Box::leak(u);
    let early = crate::sched::early_priority();
    if early > 0 {
        // A priority a thread took is always a valid one.
        let _ = utimer_capi::guard(0, || u.serve_realtime(early));
    }
    crate::inherit::note_owner();
    SYSTEM.store(std::ptr::from_ref(u).cast_mut(), Ordering::Release);
    STATE.store(UP, Ordering::Release);
    crate::verbose::started(u, workers == 0);
    Some(u)
}

/// `UTIMER_POSIX`: whether it says `off`. `on` (or unset) is the
/// default, `verbose` the default with a line at start (`verbose.rs`);
/// anything else is reported and ignored.
fn turned_off() -> bool {
    match std::env::var_os("UTIMER_POSIX") {
        None => false,
        Some(v) if v == "off" => true,
        Some(v) if v == "on" || v == "verbose" => false,
        Some(v) => {
            warn(
                &BAD_POSIX,
                format_args!(
                    "UTIMER_POSIX={:?} ignored: it takes `off` (every call to the kernel), `on` (the default) or `verbose`",
                    v.to_string_lossy()
                ),
            );
            false
        }
    }
}

/// `UTIMER_WORKERS`: the number of workers (0: one per CPU, pinned).
/// Unset is 0; a value that is no number of workers up to
/// `UTIMER_MAX_WORKERS` is reported and ignored.
fn workers() -> c_uint {
    let Some(v) = std::env::var_os("UTIMER_WORKERS") else {
        return 0;
    };
    match v.to_str().and_then(|s| s.trim().parse::<c_uint>().ok()) {
        Some(n) if n <= utimer_capi::UTIMER_MAX_WORKERS => n,
        _ => {
            warn(
                &BAD_WORKERS,
                format_args!(
                    "UTIMER_WORKERS={:?} ignored: it takes a number of workers from 0 (one per CPU, the default) to {}",
                    v.to_string_lossy(),
                    utimer_capi::UTIMER_MAX_WORKERS
                ),
            );
            0
        }
    }
}

/// Each report is made once per process (a `fork` child inherits the
/// flags, so it does not repeat its parent's).
static BAD_POSIX: AtomicBool = AtomicBool::new(false);
static BAD_WORKERS: AtomicBool = AtomicBool::new(false);
static START_FAILED: AtomicBool = AtomicBool::new(false);

/// Writes `utimer: <message>` as one line to stderr, unless `once` says
/// it was written already. One `write` of the whole line, errors ignored:
/// the program's stderr may be closed, and this must never fail a call.
fn warn(once: &AtomicBool, message: std::fmt::Arguments<'_>) {
    if once.swap(true, Ordering::AcqRel) {
        return;
    }
    crate::verbose::emit(&format!("utimer: {message}\n"));
}

/// The child side of `fork`: the inherited timerfds become the kernel's
/// (`inherit.rs`); the parent's system stays behind (its threads are gone,
/// so it is neither used nor closed), as do its timers; the child's first
/// call starts a system of its own.
extern "C" fn forget_in_child() {
    crate::inherit::fork_child();
    SYSTEM.store(std::ptr::null_mut(), Ordering::Release);
    if STATE.load(Ordering::Acquire) != OFF {
        STATE.store(IDLE, Ordering::Release);
    }
    crate::timer::fork_child();
    crate::sleep::fork_child();
    restore_signals_after_fork();
}

/// The locks held across `fork` are taken in the library's lock order:
/// the timerfd handover reads the settings (a timer's lock) first, the
/// lists of waiting timer signals (taken under a timer's lock elsewhere)
/// last.
extern "C" fn fork_prepare() {
    // No handler may run on this thread while it holds the library's locks
    // across the fork (its acceptance takes them too): every signal is
    // blocked until the parent or the child has let them go.
    block_signals_for_fork();
    crate::inherit::fork_prepare();
    crate::timer::fork_prepare();
}

extern "C" fn fork_parent() {
    crate::timer::fork_parent();
    crate::inherit::fork_parent();
    restore_signals_after_fork();
}

thread_local! {
    /// The forking thread's signal mask, kept from `fork_prepare` to the
    /// parent's or the child's handler (the child's thread is a copy).
    static FORK_MASK: std::cell::Cell<Option<libc::sigset_t>> = const { std::cell::Cell::new(None) };
}

fn block_signals_for_fork() {
    // SAFETY: zeroed sigset_t values are valid; the call writes only `old`.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        if libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old) == 0 {
            let _ = FORK_MASK.try_with(|m| m.set(Some(old)));
        }
    }
}

fn restore_signals_after_fork() {
    if let Some(old) = FORK_MASK.try_with(|m| m.take()).ok().flatten() {
        // SAFETY: a mask read by pthread_sigmask above.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    }
}
