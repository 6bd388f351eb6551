//! glibc's own functions, for what the library passes through: found with
//! `dlvsym(RTLD_NEXT, …)` at the version a program would have bound, once,
//! before `main` (the library's constructor, so that no signal handler is
//! the first to ask), and read with one atomic load afterwards.

use std::ffi::{c_int, c_void, CStr};
use std::sync::OnceLock;

/// glibc's `timer_t`.
pub(crate) type timer_t = *mut c_void;

/// The functions passed through.
pub(crate) struct Real {
    pub(crate) timer_create:
        unsafe extern "C" fn(libc::clockid_t, *mut libc::sigevent, *mut timer_t) -> c_int,
    pub(crate) timer_settime: unsafe extern "C" fn(
        timer_t,
        c_int,
        *const libc::itimerspec,
        *mut libc::itimerspec,
    ) -> c_int,
    pub(crate) timer_gettime: unsafe extern "C" fn(timer_t, *mut libc::itimerspec) -> c_int,
    pub(crate) timer_getoverrun: unsafe extern "C" fn(timer_t) -> c_int,
    pub(crate) timer_delete: unsafe extern "C" fn(timer_t) -> c_int,
    pub(crate) timerfd_create: unsafe extern "C" fn(libc::clockid_t, c_int) -> c_int,
    pub(crate) timerfd_settime:
        unsafe extern "C" fn(c_int, c_int, *const libc::itimerspec, *mut libc::itimerspec) -> c_int,
    pub(crate) timerfd_gettime: unsafe extern "C" fn(c_int, *mut libc::itimerspec) -> c_int,
    pub(crate) sigaction:
        unsafe extern "C" fn(c_int, *const libc::sigaction, *mut libc::sigaction) -> c_int,
    pub(crate) sigwaitinfo: unsafe extern "C" fn(*const libc::sigset_t, *mut libc::siginfo_t) -> c_int,
    pub(crate) sigtimedwait: unsafe extern "C" fn(
        *const libc::sigset_t,
        *mut libc::siginfo_t,
        *const libc::timespec,
    ) -> c_int,
    pub(crate) signalfd: unsafe extern "C" fn(c_int, *const libc::sigset_t, c_int) -> c_int,
    pub(crate) close: unsafe extern "C" fn(c_int) -> c_int,
    pub(crate) write: unsafe extern "C" fn(c_int, *const c_void, libc::size_t) -> libc::ssize_t,
    pub(crate) dup: unsafe extern "C" fn(c_int) -> c_int,
    pub(crate) dup2: unsafe extern "C" fn(c_int, c_int) -> c_int,
    pub(crate) fcntl: unsafe extern "C" fn(c_int, c_int, usize) -> c_int,
    pub(crate) fcntl64: unsafe extern "C" fn(c_int, c_int, usize) -> c_int,
    pub(crate) dup3: unsafe extern "C" fn(c_int, c_int, c_int) -> c_int,
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
    ($name:literal, $($v:literal),*) => {{
        let p = find($name, &[$($v),*]);
        // SAFETY: glibc's function of that name and version has the
        // signature of the field it is stored in (glibc's prototype).
        unsafe { std::mem::transmute::<*mut c_void, _>(p) }
    }};
}

fn resolve() -> Real {
    Real {
        timer_create: sym!(c"timer_create", c"GLIBC_2.34", c"GLIBC_2.3.3"),
        timer_settime: sym!(c"timer_settime", c"GLIBC_2.34", c"GLIBC_2.3.3"),
        timer_gettime: sym!(c"timer_gettime", c"GLIBC_2.34", c"GLIBC_2.3.3"),
        timer_getoverrun: sym!(c"timer_getoverrun", c"GLIBC_2.34", c"GLIBC_2.3.3"),
        timer_delete: sym!(c"timer_delete", c"GLIBC_2.34", c"GLIBC_2.3.3"),
        timerfd_create: sym!(c"timerfd_create", c"GLIBC_2.8"),
        timerfd_settime: sym!(c"timerfd_settime", c"GLIBC_2.8"),
        timerfd_gettime: sym!(c"timerfd_gettime", c"GLIBC_2.8"),
        sigaction: sym!(c"sigaction", c"GLIBC_2.2.5"),
        sigwaitinfo: sym!(c"sigwaitinfo", c"GLIBC_2.2.5"),
        sigtimedwait: sym!(c"sigtimedwait", c"GLIBC_2.2.5"),
        signalfd: sym!(c"signalfd", c"GLIBC_2.7"),
        close: sym!(c"close", c"GLIBC_2.2.5"),
        write: sym!(c"write", c"GLIBC_2.2.5"),
        dup: sym!(c"dup", c"GLIBC_2.2.5"),
        dup2: sym!(c"dup2", c"GLIBC_2.2.5"),
        fcntl: sym!(c"fcntl", c"GLIBC_2.2.5"),
        fcntl64: sym!(c"fcntl64", c"GLIBC_2.28", c"GLIBC_2.2.5"),
        dup3: sym!(c"dup3", c"GLIBC_2.9"),
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
