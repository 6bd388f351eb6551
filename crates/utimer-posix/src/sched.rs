//! Scheduling: a thread of the program that becomes real-time has the
//! timer workers run at its priority (`utimer::TimerSystem::serve_realtime`),
//! so that no real-time thread below it keeps a timer from firing (the
//! kernel fires timers from its interrupt, above every thread).
//!
//! The library interposes `sched_setscheduler`, `sched_setparam`,
//! `pthread_setschedparam` and `pthread_setschedprio`: each calls glibc's,
//! and when that succeeded and left a thread of this process under
//! `SCHED_FIFO` or `SCHED_RR`, the workers follow its priority. Before the
//! timer system starts, the highest such priority is kept and applied when
//! it does. A thread made real-time otherwise (a raw system call, a
//! `pthread_create` attribute, `chrt` from outside) is seen when it makes a
//! timer that fires, which the core checks by itself.

use crate::global;
use crate::real::real;
use std::ffi::c_int;
use std::sync::atomic::{AtomicI32, Ordering::Relaxed};

/// The highest real-time priority seen before the system started.
static EARLY: AtomicI32 = AtomicI32::new(0);

/// A real-time policy's priority, else 0.
fn rt_priority(policy: c_int, param: *const libc::sched_param) -> c_int {
    let policy = policy & !libc::SCHED_RESET_ON_FORK;
    if policy != libc::SCHED_FIFO && policy != libc::SCHED_RR {
        return 0;
    }
    // SAFETY: glibc's call just read it successfully, so it is readable.
    unsafe { param.as_ref() }.map_or(0, |p| p.sched_priority)
}

/// Whether `pid` (0: the caller) names a thread of this process.
fn ours(pid: libc::pid_t) -> bool {
    if pid == 0 {
        return true;
    }
    // SAFETY: signal 0 only checks that the thread exists in the group.
    unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), pid, 0) == 0 }
}

/// The workers serve priority `p` (now, or once the system starts).
/// Every successful scheduling call of the program's passes here: a
/// thread's cached priority (`sleep.rs`) is read again after it.
fn serve(p: c_int) {
    crate::sleep::scheduling_changed();
    if p < 1 {
        return;
    }
    match global::started() {
        Some(u) => {
            let _ = utimer_capi::guard(0, || u.serve_realtime(p));
        }
        None => {
            EARLY.fetch_max(p, Relaxed);
        }
    }
}

/// The priority to apply to a system that starts now (0: none).
pub(crate) fn early_priority() -> c_int {
    EARLY.load(Relaxed)
}

/// `sched_setscheduler()`.
///
/// # Safety
/// As glibc's.
pub(crate) unsafe fn setscheduler(
    pid: libc::pid_t,
    policy: c_int,
    param: *const libc::sched_param,
) -> c_int {
    // SAFETY: glibc's function with the caller's arguments.
    let r = unsafe { (real().sched_setscheduler)(pid, policy, param) };
    if r == 0 && ours(pid) {
        serve(rt_priority(policy, param));
    }
    r
}

/// `sched_setparam()`: the thread keeps its policy.
///
/// # Safety
/// As glibc's.
pub(crate) unsafe fn setparam(pid: libc::pid_t, param: *const libc::sched_param) -> c_int {
    // SAFETY: as above.
    let r = unsafe { (real().sched_setparam)(pid, param) };
    if r == 0 && ours(pid) {
        // SAFETY: takes a thread ID.
        let policy = unsafe { libc::sched_getscheduler(pid) };
        serve(rt_priority(policy, param));
    }
    r
}

/// `pthread_setschedparam()`.
///
/// # Safety
/// As glibc's.
pub(crate) unsafe fn pthread_setschedparam(
    thread: libc::pthread_t,
    policy: c_int,
    param: *const libc::sched_param,
) -> c_int {
    // SAFETY: as above.
    let r = unsafe { (real().pthread_setschedparam)(thread, policy, param) };
    if r == 0 {
        serve(rt_priority(policy, param));
    }
    r
}

/// `pthread_setschedprio()`: the thread keeps its policy.
///
/// # Safety
/// As glibc's.
pub(crate) unsafe fn pthread_setschedprio(thread: libc::pthread_t, prio: c_int) -> c_int {
    // SAFETY: as above.
    let r = unsafe { (real().pthread_setschedprio)(thread, prio) };
    if r == 0 {
        let mut policy = 0;
        // SAFETY: zeroed sched_param is valid; glibc writes both outputs.
        let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
        // SAFETY: a live thread (the call above just succeeded on it).
        if unsafe { libc::pthread_getschedparam(thread, &mut policy, &mut param) } == 0 {
            serve(rt_priority(policy, &param));
        }
    }
    r
}
