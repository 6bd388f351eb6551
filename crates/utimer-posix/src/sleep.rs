//! `nanosleep`, `clock_nanosleep`, `sleep`, `usleep`: a program thread
//! that sleeps serves the timers while it does.
//!
//! # Why
//!
//! A program that lives on timer signals sleeps between them. On the
//! kernel, each signal costs one wake-up: the timer interrupt on the
//! sleeping thread's CPU. With workers, it costs two: the worker's wake-up
//! to fire the timer, then the signal's wake-up of the program's thread.
//! So a thread that sleeps in one of these calls takes the serving role
//! (`utimer::Serving`, `system/serve.rs` in the core: one thread at a time,
//! the workers sleep past the hrtimers meanwhile): it sleeps until the
//! earlier of its own deadline and the first timer expiry, fires what is
//! due inside a critical section (a callback is never interrupted, and a
//! handler never runs in the middle of an expiry run) holding back the
//! timer signals the run queues (`utimer::posix::hold_signals`), and then
//! queues them. A signal queued to its own process is then delivered to it
//! as the kernel would: on the way out of that system call, to a thread
//! that does not block it, with no signal mask set and restored around
//! the run.
//!
//! # Semantics kept
//!
//! * A sleep ends when its time has passed, never before (the clock is
//!   read after the wake-up), or with `EINTR` when a handler ran on the
//!   thread meanwhile (a handler of the program's, or glibc's own, such as
//!   the one of a `pthread_cancel`), with the time left in `rem` for a
//!   relative sleep, as the kernel's. A stop and continue does not end it.
//! * Cancellation: each call is a cancellation point, as glibc's. A
//!   cancellation acts at entry, or when it interrupts the sleep, after the
//!   serving role is handed back (the library holds nothing then).
//! * What is not served goes to glibc untouched: a call before the timer
//!   system started (no timer was ever made), while another thread
//!   serves, on a utimer worker's own thread, on a thread below the
//!   workers' real-time priority (they wake ahead of each expiry at the
//!   priority of the program's highest real-time thread, which a lower
//!   thread would not match; a thread's priority is read again after each
//!   scheduling call the library sees), on any clock but
//!   `CLOCK_REALTIME` and `CLOCK_MONOTONIC` (relative) or
//!   `CLOCK_MONOTONIC` (absolute: an absolute `CLOCK_REALTIME` sleep
//!   follows clock changes, which only the kernel sees), and a `req`
//!   where no memory can be (`EFAULT` is the kernel's answer).
//! * Invalid times answer as the kernel: `EINVAL` for a `tv_nsec` outside
//!   `0..1e9` or a negative `tv_sec`.
//! * A served sleep is not stretched by the thread's timer slack (the
//!   kernel adds up to 50 µs to a normal thread's): it ends as close to its
//!   time as a timerfd's expiry, never earlier.

use crate::critical;
use crate::global::started;
use crate::real::{errno, fail, real, set_errno};
use std::cell::RefCell;
use std::ffi::{c_int, c_uint};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use utimer::{Ktime, Server, Woke};

const NS: u64 = 1_000_000_000;

extern "C" {
    /// glibc's: acts on a pending cancellation (the thread unwinds and
    /// ends), else returns.
    fn pthread_testcancel();
}

/// Bumped in every `fork` child: a server made before it shares its
/// timerfd with the parent's, so the child makes its own.
static FORKS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's server, made at its first served sleep, with the
    /// `FORKS` it was made under.
    static SERVER: RefCell<Option<(u64, Arc<Server>)>> = const { RefCell::new(None) };
    /// Handlers the trampoline ran on this thread (`trampoline.rs`): a served
    /// sleep that sees it move was interrupted.
    static HANDLED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Bumped by every scheduling call of the program's that the library sees
/// (`sched.rs`): a thread's cached priority is read again after it.
static SCHEDULING: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's real-time priority, with the `SCHEDULING` it was read
    /// under.
    static PRIORITY: std::cell::Cell<(u64, c_int)> = const { std::cell::Cell::new((u64::MAX, 0)) };
}

/// A thread's scheduling may have changed.
pub(crate) fn scheduling_changed() {
    SCHEDULING.fetch_add(1, Ordering::AcqRel);
}

/// The calling thread's `SCHED_FIFO` or `SCHED_RR` priority (0 for any
/// other policy), read once per scheduling change the library sees.
fn own_priority() -> c_int {
    let now = SCHEDULING.load(Ordering::Acquire);
    // (A thread past its thread-locals' end reads afresh.)
    let (seen, p) = PRIORITY
        .try_with(std::cell::Cell::get)
        .unwrap_or((u64::MAX, 0));
    if seen == now {
        return p;
    }
    // SAFETY: 0 is the calling thread; sched_getparam writes one
    // sched_param on this stack.
    let p = unsafe {
        let policy = libc::sched_getscheduler(0) & !libc::SCHED_RESET_ON_FORK;
        let mut param: libc::sched_param = std::mem::zeroed();
        if (policy == libc::SCHED_FIFO || policy == libc::SCHED_RR)
            && libc::sched_getparam(0, &mut param) == 0
        {
            param.sched_priority
        } else {
            0
        }
    };
    let _ = PRIORITY.try_with(|c| c.set((now, p)));
    p
}

/// The trampoline ran a handler of the program's on this thread.
pub(crate) fn handler_ran() {
    let _ = HANDLED.try_with(|h| h.set(h.get().wrapping_add(1)));
}

/// Handlers run on this thread so far (0 past its thread-locals' end, where
/// it serves no more).
fn handled() -> u64 {
    HANDLED.try_with(std::cell::Cell::get).unwrap_or(0)
}

/// In a `fork` child: servers made before are the parent's.
pub(crate) fn fork_child() {
    FORKS.fetch_add(1, Ordering::AcqRel);
}

/// This thread's server. `None`: no descriptor to make one with, a thread
/// past its thread-locals' end, or a handler that interrupted this very
/// lookup (it then sleeps in glibc).
fn server() -> Option<Arc<Server>> {
    let forks = FORKS.load(Ordering::Acquire);
    SERVER
        .try_with(|s| {
            let mut s = s.try_borrow_mut().ok()?;
            if let Some((made, server)) = s.as_ref() {
                if *made == forks {
                    return Some(server.clone());
                }
            }
            let server = Arc::new(Server::new().ok()?);
            *s = Some((forks, server.clone()));
            Some(server)
        })
        .ok()
        .flatten()
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes one live timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * NS + ts.tv_nsec as u64
}

/// How a served sleep ended.
enum Ended {
    /// Its time passed.
    Slept,
    /// A handler ran; the time left until `deadline`.
    Interrupted { deadline: u64 },
}

/// Sleeps until `deadline` (monotonic ns) serving the timers; `None` when
/// this thread cannot serve now (the caller sleeps in glibc instead).
///
/// The library's locks are held only inside critical sections
/// (`critical.rs`): the claim, each look at the timers, the expiry run and
/// the hand-back. A handler that lands in one is held and runs when it
/// ends; between them it runs at once. Either way the sleep then ends with
/// `EINTR`, as the kernel's. A handler runs while the thread still holds
/// the serving role (the role goes back after it, with the timers it
/// re-armed); if it blocks, the workers take the timers over after a
/// grace (`utimer::Serving`'s docs).
fn serve_until(deadline: u64) -> Option<Ended> {
    if critical::inside() {
        return None;
    }
    let sys = started()?.system();
    // Real-time workers wake ahead of each expiry at the priority of the
    // program's highest real-time thread; a thread below it would fire
    // the timers later than they do.
    if sys.realtime_priority() > own_priority() {
        return None;
    }
    let server = server()?;
    let handled_before = handled();
    let interrupted = || critical::holds() || handled() != handled_before;
    let serving = {
        let _section = critical::enter();
        sys.serve(&server)?
    };
    let ended = loop {
        let woke = {
            let _section = critical::enter();
            serving.wait(Ktime::from_nanos(deadline), &interrupted)
        };
        match woke {
            Woke::Deadline => break Ended::Slept,
            Woke::Interrupted => break Ended::Interrupted { deadline },
            Woke::Due => {}
        }
        run_held(&serving);
        // The signals just queued may have run a handler.
        if interrupted() {
            break Ended::Interrupted { deadline };
        }
    };
    {
        let _section = critical::enter();
        drop(serving);
    }
    if let Ended::Interrupted { .. } = ended {
        // A pthread_cancel's handler may have interrupted the sleep: the
        // cancellation acts here, with nothing of the library's held.
        // SAFETY: takes nothing; may not return (the thread ends).
        unsafe { pthread_testcancel() };
    }
    Some(ended)
}

/// Runs the due timers inside a critical section, holding back the timer
/// signals they queue, then queues those (module docs).
fn run_held(serving: &utimer::Serving<'_>) {
    let held = {
        let _section = critical::enter();
        utimer::posix::hold_signals(|| serving.run_expired()).1
    };
    held.queue();
}

/// A valid sleep time in ns (saturating), or the kernel's `EINVAL`.
fn duration_ns(ts: &libc::timespec) -> Result<u64, c_int> {
    if ts.tv_sec < 0 || !(0..NS as libc::c_long).contains(&ts.tv_nsec) {
        return Err(libc::EINVAL);
    }
    Ok((ts.tv_sec as u64)
        .saturating_mul(NS)
        .saturating_add(ts.tv_nsec as u64))
}

/// Writes the time left until `deadline` to `rem` (if not NULL).
///
/// # Safety
/// `rem` is NULL or points to writable memory for a timespec.
unsafe fn write_left(rem: *mut libc::timespec, deadline: u64) {
    if rem.is_null() || !utimer_capi::user_pointer_ok(rem) {
        return;
    }
    let left = deadline.saturating_sub(monotonic_ns());
    // SAFETY: the caller's promise.
    unsafe {
        (*rem).tv_sec = (left / NS) as libc::time_t;
        (*rem).tv_nsec = (left % NS) as libc::c_long;
    }
}

/// `clock_nanosleep()`, served when it can be (module docs): 0 or an error
/// number, as glibc's.
///
/// # Safety
/// As glibc's.
pub(crate) unsafe fn clock_nanosleep(
    clock: libc::clockid_t,
    flags: c_int,
    req: *const libc::timespec,
    rem: *mut libc::timespec,
) -> c_int {
    let abs = flags & libc::TIMER_ABSTIME != 0;
    let servable = match clock {
        libc::CLOCK_MONOTONIC => true,
        libc::CLOCK_REALTIME => !abs,
        _ => false,
    };
    if !servable || flags & !libc::TIMER_ABSTIME != 0 || !utimer_capi::user_pointer_ok(req) {
        // SAFETY: glibc's function, the caller's arguments.
        return unsafe { (real().clock_nanosleep)(clock, flags, req, rem) };
    }
    if started().is_none() {
        // SAFETY: as above.
        return unsafe { (real().clock_nanosleep)(clock, flags, req, rem) };
    }
    // SAFETY: checked above to point where memory can be; the caller's
    // promise that it is a timespec.
    let ts = unsafe { req.read() };
    let ns = match duration_ns(&ts) {
        Ok(ns) => ns,
        Err(e) => return e,
    };
    // A cancellation pending at entry acts here, as at glibc's.
    // SAFETY: takes nothing; may not return (the thread ends).
    unsafe { pthread_testcancel() };
    let deadline = if abs {
        ns
    } else {
        monotonic_ns().saturating_add(ns)
    };
    match serve_until(deadline) {
        None => {
            // SAFETY: glibc's function, the caller's arguments.
            unsafe { (real().clock_nanosleep)(clock, flags, req, rem) }
        }
        Some(Ended::Slept) => 0,
        Some(Ended::Interrupted { deadline }) => {
            if !abs {
                // SAFETY: the caller's `rem`, checked inside.
                unsafe { write_left(rem, deadline) };
            }
            libc::EINTR
        }
    }
}

/// `nanosleep()`: `clock_nanosleep(CLOCK_REALTIME, 0, ...)` with the
/// result in `errno`, as the kernel's.
///
/// # Safety
/// As glibc's.
pub(crate) unsafe fn nanosleep(req: *const libc::timespec, rem: *mut libc::timespec) -> c_int {
    if started().is_none() {
        // SAFETY: glibc's function, the caller's arguments.
        return unsafe { (real().nanosleep)(req, rem) };
    }
    // SAFETY: the caller's arguments.
    match unsafe { clock_nanosleep(libc::CLOCK_REALTIME, 0, req, rem) } {
        0 => 0,
        e => fail(e),
    }
}

/// `sleep()`: whole seconds, as glibc's (the seconds not slept when a
/// handler interrupts it; `errno` kept when it does not).
pub(crate) fn sleep(seconds: c_uint) -> c_uint {
    if started().is_none() {
        // SAFETY: glibc's function.
        return unsafe { (real().sleep)(seconds) };
    }
    let saved = errno();
    let req = libc::timespec {
        tv_sec: seconds as libc::time_t,
        tv_nsec: 0,
    };
    let mut rem = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: live timespecs.
    match unsafe { clock_nanosleep(libc::CLOCK_REALTIME, 0, &req, &mut rem) } {
        0 => {
            set_errno(saved);
            0
        }
        e => {
            set_errno(e);
            // glibc answers the whole seconds left, rounded down.
            rem.tv_sec as c_uint
        }
    }
}

/// `usleep()`: microseconds, as glibc's (`-1` with `errno` `EINTR` when a
/// handler interrupts it).
pub(crate) fn usleep(usec: libc::useconds_t) -> c_int {
    if started().is_none() {
        // SAFETY: glibc's function.
        return unsafe { (real().usleep)(usec) };
    }
    let req = libc::timespec {
        tv_sec: (usec / 1_000_000) as libc::time_t,
        tv_nsec: (usec % 1_000_000) as libc::c_long * 1000,
    };
    // SAFETY: a live timespec, no rem.
    match unsafe { clock_nanosleep(libc::CLOCK_REALTIME, 0, &req, std::ptr::null_mut()) } {
        0 => 0,
        e => fail(e),
    }
}
