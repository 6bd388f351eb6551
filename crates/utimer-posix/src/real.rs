//! glibc's own functions, for what the library passes through: found with
//! `dlvsym(RTLD_NEXT, …)` at the version a program would have bound, once,
//! before `main` (the library's constructor, so that no signal handler is
//! the first to ask), and read with one atomic load afterwards.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

/// glibc's `timer_t`.
pub(crate) type timer_t = *mut c_void;

/// The functions passed through.
type TimerCreateFn =
    unsafe extern "C" fn(libc::clockid_t, *mut libc::sigevent, *mut timer_t) -> c_int;
type TimerSettimeFn =
    unsafe extern "C" fn(timer_t, c_int, *const libc::itimerspec, *mut libc::itimerspec) -> c_int;
type TimerGettimeFn = unsafe extern "C" fn(timer_t, *mut libc::itimerspec) -> c_int;
type TimerGetoverrunFn = unsafe extern "C" fn(timer_t) -> c_int;
type TimerDeleteFn = unsafe extern "C" fn(timer_t) -> c_int;
type TimerfdCreateFn = unsafe extern "C" fn(libc::clockid_t, c_int) -> c_int;
type TimerfdSettimeFn =
    unsafe extern "C" fn(c_int, c_int, *const libc::itimerspec, *mut libc::itimerspec) -> c_int;
type TimerfdGettimeFn = unsafe extern "C" fn(c_int, *mut libc::itimerspec) -> c_int;
type SigactionFn =
    unsafe extern "C" fn(c_int, *const libc::sigaction, *mut libc::sigaction) -> c_int;
type SigwaitinfoFn = unsafe extern "C" fn(*const libc::sigset_t, *mut libc::siginfo_t) -> c_int;
type SigtimedwaitFn = unsafe extern "C" fn(
    *const libc::sigset_t,
    *mut libc::siginfo_t,
    *const libc::timespec,
) -> c_int;
type SignalfdFn = unsafe extern "C" fn(c_int, *const libc::sigset_t, c_int) -> c_int;
type CloseFn = unsafe extern "C" fn(c_int) -> c_int;
type WriteFn = unsafe extern "C" fn(c_int, *const c_void, libc::size_t) -> libc::ssize_t;
type ReadFn = unsafe extern "C" fn(c_int, *mut c_void, libc::size_t) -> libc::ssize_t;
type ReadChkFn =
    unsafe extern "C" fn(c_int, *mut c_void, libc::size_t, libc::size_t) -> libc::ssize_t;
type DupFn = unsafe extern "C" fn(c_int) -> c_int;
type Dup2Fn = unsafe extern "C" fn(c_int, c_int) -> c_int;
type FcntlFn = unsafe extern "C" fn(c_int, c_int, usize) -> c_int;
type Fcntl64Fn = unsafe extern "C" fn(c_int, c_int, usize) -> c_int;
type Dup3Fn = unsafe extern "C" fn(c_int, c_int, c_int) -> c_int;
type CloseRangeFn = unsafe extern "C" fn(libc::c_uint, libc::c_uint, c_int) -> c_int;
type ClosefromFn = unsafe extern "C" fn(c_int);
type SchedSetschedulerFn =
    unsafe extern "C" fn(libc::pid_t, c_int, *const libc::sched_param) -> c_int;
type SchedSetparamFn = unsafe extern "C" fn(libc::pid_t, *const libc::sched_param) -> c_int;
type PthreadSetschedparamFn =
    unsafe extern "C" fn(libc::pthread_t, c_int, *const libc::sched_param) -> c_int;
type PthreadSetschedprioFn = unsafe extern "C" fn(libc::pthread_t, c_int) -> c_int;
type NanosleepFn = unsafe extern "C" fn(*const libc::timespec, *mut libc::timespec) -> c_int;
type ClockNanosleepFn = unsafe extern "C" fn(
    libc::clockid_t,
    c_int,
    *const libc::timespec,
    *mut libc::timespec,
) -> c_int;
type SleepFn = unsafe extern "C" fn(libc::c_uint) -> libc::c_uint;
type UsleepFn = unsafe extern "C" fn(libc::useconds_t) -> c_int;
type Argv = *const *const c_char;
type ExecveFn = unsafe extern "C" fn(*const c_char, Argv, Argv) -> c_int;
type ExecvFn = unsafe extern "C" fn(*const c_char, Argv) -> c_int;
type FexecveFn = unsafe extern "C" fn(c_int, Argv, Argv) -> c_int;
type ExecveatFn = unsafe extern "C" fn(c_int, *const c_char, Argv, Argv, c_int) -> c_int;

/// The functions passed through.
pub(crate) struct Real {
    pub(crate) nanosleep: NanosleepFn,
    pub(crate) clock_nanosleep: ClockNanosleepFn,
    pub(crate) sleep: SleepFn,
    pub(crate) usleep: UsleepFn,
    pub(crate) timer_create: TimerCreateFn,
    pub(crate) timer_settime: TimerSettimeFn,
    pub(crate) timer_gettime: TimerGettimeFn,
    pub(crate) timer_getoverrun: TimerGetoverrunFn,
    pub(crate) timer_delete: TimerDeleteFn,
    pub(crate) timerfd_create: TimerfdCreateFn,
    pub(crate) timerfd_settime: TimerfdSettimeFn,
    pub(crate) timerfd_gettime: TimerfdGettimeFn,
    pub(crate) sigaction: SigactionFn,
    pub(crate) sigwaitinfo: SigwaitinfoFn,
    pub(crate) sigtimedwait: SigtimedwaitFn,
    pub(crate) signalfd: SignalfdFn,
    pub(crate) close: CloseFn,
    pub(crate) write: WriteFn,
    pub(crate) read: ReadFn,
    pub(crate) read_chk: ReadChkFn,
    pub(crate) dup: DupFn,
    pub(crate) dup2: Dup2Fn,
    pub(crate) fcntl: FcntlFn,
    pub(crate) fcntl64: Fcntl64Fn,
    pub(crate) dup3: Dup3Fn,
    /// glibc 2.34 and later; absent before.
    pub(crate) close_range: Option<CloseRangeFn>,
    /// glibc 2.34 and later; absent before.
    pub(crate) closefrom: Option<ClosefromFn>,
    pub(crate) sched_setscheduler: SchedSetschedulerFn,
    pub(crate) sched_setparam: SchedSetparamFn,
    pub(crate) pthread_setschedparam: PthreadSetschedparamFn,
    pub(crate) pthread_setschedprio: PthreadSetschedprioFn,
    pub(crate) execve: ExecveFn,
    pub(crate) execv: ExecvFn,
    pub(crate) execvp: ExecvFn,
    pub(crate) execvpe: ExecveFn,
    pub(crate) fexecve: FexecveFn,
    /// glibc 2.34 and later; absent before.
    pub(crate) execveat: Option<ExecveatFn>,
}

static REAL: OnceLock<Real> = OnceLock::new();

/// glibc's functions.
pub(crate) fn real() -> &'static Real {
    REAL.get_or_init(resolve)
}

/// The next definition of `name` after this library, at the first of
/// `versions` that glibc has, else at its default version.
fn find(name: &CStr, versions: &[&CStr]) -> *mut c_void {
    for v in versions {
        // SAFETY: both strings are NUL-terminated; dlvsym only reads them.
        let p = unsafe { libc::dlvsym(libc::RTLD_NEXT, name.as_ptr(), v.as_ptr()) };
        if !p.is_null() {
            return p;
        }
    }
    // SAFETY: as above.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    if p.is_null() {
        die(name);
    }
    p
}

/// The next definition of `name` at `version`, if glibc has one.
fn find_optional(name: &CStr, version: &CStr) -> Option<*mut c_void> {
    // SAFETY: both strings are NUL-terminated; dlvsym only reads them.
    let p = unsafe { libc::dlvsym(libc::RTLD_NEXT, name.as_ptr(), version.as_ptr()) };
    (!p.is_null()).then_some(p)
}

/// No glibc function to fall back on: nothing sensible is left to do.
fn die(name: &CStr) -> ! {
    let msg = b"utimer-posix: glibc lacks a function it must pass through: ";
    // SAFETY: writes live buffers to stderr, then exits without running
    // anything of the program's.
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
        let n = name.to_bytes();
        libc::write(2, n.as_ptr().cast(), n.len());
        libc::write(2, b"\n".as_ptr().cast(), 1);
        libc::_exit(127)
    }
}

macro_rules! sym {
    ($ty:ty: $name:literal, $($v:literal),*) => {{
        let p = find($name, &[$($v),*]);
        // SAFETY: glibc's function of that name and version has the
        // signature of the field it is stored in (glibc's prototype).
        unsafe { std::mem::transmute::<*mut c_void, $ty>(p) }
    }};
}

fn resolve() -> Real {
    Real {
        nanosleep: sym!(NanosleepFn: c"nanosleep", c"GLIBC_2.2.5"),
        clock_nanosleep: sym!(ClockNanosleepFn: c"clock_nanosleep", c"GLIBC_2.17"),
        sleep: sym!(SleepFn: c"sleep", c"GLIBC_2.2.5"),
        usleep: sym!(UsleepFn: c"usleep", c"GLIBC_2.2.5"),
        timer_create: sym!(TimerCreateFn: c"timer_create", c"GLIBC_2.34", c"GLIBC_2.3.3"),
        timer_settime: sym!(TimerSettimeFn: c"timer_settime", c"GLIBC_2.34", c"GLIBC_2.3.3"),
        timer_gettime: sym!(TimerGettimeFn: c"timer_gettime", c"GLIBC_2.34", c"GLIBC_2.3.3"),
        timer_getoverrun: sym!(TimerGetoverrunFn: c"timer_getoverrun", c"GLIBC_2.34", c"GLIBC_2.3.3"),
        timer_delete: sym!(TimerDeleteFn: c"timer_delete", c"GLIBC_2.34", c"GLIBC_2.3.3"),
        timerfd_create: sym!(TimerfdCreateFn: c"timerfd_create", c"GLIBC_2.8"),
        timerfd_settime: sym!(TimerfdSettimeFn: c"timerfd_settime", c"GLIBC_2.8"),
        timerfd_gettime: sym!(TimerfdGettimeFn: c"timerfd_gettime", c"GLIBC_2.8"),
        sigaction: sym!(SigactionFn: c"sigaction", c"GLIBC_2.2.5"),
        sigwaitinfo: sym!(SigwaitinfoFn: c"sigwaitinfo", c"GLIBC_2.2.5"),
        sigtimedwait: sym!(SigtimedwaitFn: c"sigtimedwait", c"GLIBC_2.2.5"),
        signalfd: sym!(SignalfdFn: c"signalfd", c"GLIBC_2.7"),
        close: sym!(CloseFn: c"close", c"GLIBC_2.2.5"),
        write: sym!(WriteFn: c"write", c"GLIBC_2.2.5"),
        read: sym!(ReadFn: c"read", c"GLIBC_2.2.5"),
        read_chk: sym!(ReadChkFn: c"__read_chk", c"GLIBC_2.4"),
        dup: sym!(DupFn: c"dup", c"GLIBC_2.2.5"),
        dup2: sym!(Dup2Fn: c"dup2", c"GLIBC_2.2.5"),
        fcntl: sym!(FcntlFn: c"fcntl", c"GLIBC_2.2.5"),
        fcntl64: sym!(Fcntl64Fn: c"fcntl64", c"GLIBC_2.28", c"GLIBC_2.2.5"),
        dup3: sym!(Dup3Fn: c"dup3", c"GLIBC_2.9"),
        close_range: find_optional(c"close_range", c"GLIBC_2.34").map(|p| {
            // SAFETY: glibc's `close_range` has this signature.
            unsafe { std::mem::transmute::<*mut c_void, CloseRangeFn>(p) }
        }),
        closefrom: find_optional(c"closefrom", c"GLIBC_2.34").map(|p| {
            // SAFETY: glibc's `closefrom` has this signature.
            unsafe { std::mem::transmute::<*mut c_void, ClosefromFn>(p) }
        }),
        sched_setscheduler: sym!(SchedSetschedulerFn: c"sched_setscheduler", c"GLIBC_2.2.5"),
        sched_setparam: sym!(SchedSetparamFn: c"sched_setparam", c"GLIBC_2.2.5"),
        pthread_setschedparam: sym!(PthreadSetschedparamFn: c"pthread_setschedparam", c"GLIBC_2.2.5"),
        pthread_setschedprio: sym!(PthreadSetschedprioFn: c"pthread_setschedprio", c"GLIBC_2.34", c"GLIBC_2.3.4"),
        execve: sym!(ExecveFn: c"execve", c"GLIBC_2.2.5"),
        execv: sym!(ExecvFn: c"execv", c"GLIBC_2.2.5"),
        execvp: sym!(ExecvFn: c"execvp", c"GLIBC_2.2.5"),
        execvpe: sym!(ExecveFn: c"execvpe", c"GLIBC_2.11"),
        fexecve: sym!(FexecveFn: c"fexecve", c"GLIBC_2.2.5"),
        execveat: find_optional(c"execveat", c"GLIBC_2.34").map(|p| {
            // SAFETY: glibc's `execveat` has this signature.
            unsafe { std::mem::transmute::<*mut c_void, ExecveatFn>(p) }
        }),
    }
}

/// `errno` of the calling thread.
pub(crate) fn errno() -> c_int {
    // SAFETY: `__errno_location` returns the calling thread's errno slot.
    unsafe { *libc::__errno_location() }
}

/// Sets `errno`.
pub(crate) fn set_errno(e: c_int) {
    // SAFETY: as in `errno`.
    unsafe { *libc::__errno_location() = e };
}

/// `-1` with `errno = e`.
pub(crate) fn fail(e: c_int) -> c_int {
    set_errno(e);
    -1
}
