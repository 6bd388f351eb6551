//! The exported functions, with glibc's names, signatures and symbol
//! versions (the `.symver` lines below; the version nodes are in
//! `utimer-posix.map`). Each is a line or two: the work is in `timer.rs`,
//! `timerfd.rs`, `trampoline.rs`, `accept.rs`, `sleep.rs` and `inherit.rs`.
//!
//! | glibc function | versions |
//! |---|---|
//! | `timer_create`, `timer_settime`, `timer_gettime`, `timer_getoverrun`, `timer_delete` | `GLIBC_2.34` (default), `GLIBC_2.3.3`; `GLIBC_2.2.5` with `int` IDs |
//! | `timerfd_create`, `timerfd_settime`, `timerfd_gettime` | `GLIBC_2.8` |
//! | `sigaction`, `signal`, `bsd_signal`, `sysv_signal`, `sigwaitinfo`, `sigtimedwait`, `sigwait`, `close`, `dup`, `dup2`, `fcntl`, `write` | `GLIBC_2.2.5` |
//! | `fcntl64` | `GLIBC_2.28` |
//! | `signalfd` | `GLIBC_2.7` |
//! | `read` | `GLIBC_2.2.5` |
//! | `__read_chk` (`read` under `_FORTIFY_SOURCE`) | `GLIBC_2.4` |
//! | `dup3` | `GLIBC_2.9` |
//! | `sched_setscheduler`, `sched_setparam`, `pthread_setschedparam` | `GLIBC_2.2.5` |
//! | `pthread_setschedprio` | `GLIBC_2.34` (default), `GLIBC_2.3.4` |
//! | `close_range`, `closefrom` | `GLIBC_2.34` |
//! | `execve`, `execv`, `execvp`, `fexecve`; on x86-64 `execl`, `execle`, `execlp` | `GLIBC_2.2.5` |
//! | `execvpe` | `GLIBC_2.11` |
//! | `execveat` | `GLIBC_2.34` |
//! | `nanosleep`, `sleep`, `usleep` | `GLIBC_2.2.5` |
//! | `clock_nanosleep` | `GLIBC_2.17` (default), `GLIBC_2.2.5` (librt's) |
//!
//! None of them unwinds: the C library's functions they call catch panics,
//! and the rest cannot panic.

use crate::real::timer_t;
use crate::{accept, inherit, sched, sleep, timer, timerfd, trampoline};
use std::ffi::c_char;
use std::ffi::c_int;
use timer::Out;

/// Runs before `main`: glibc's functions are looked up now, not first in a
/// signal handler.
extern "C" fn init() {
    let _ = crate::real::real();
    accept::init();
}

#[used]
#[link_section = ".init_array"]
static INIT: extern "C" fn() = init;

std::arch::global_asm!(
    ".symver utimer_posix_timer_create, timer_create@@GLIBC_2.34",
    ".symver utimer_posix_timer_create, timer_create@GLIBC_2.3.3",
    ".symver utimer_posix_timer_create_old, timer_create@GLIBC_2.2.5",
    ".symver utimer_posix_timer_settime, timer_settime@@GLIBC_2.34",
    ".symver utimer_posix_timer_settime, timer_settime@GLIBC_2.3.3",
    ".symver utimer_posix_timer_settime_old, timer_settime@GLIBC_2.2.5",
    ".symver utimer_posix_timer_gettime, timer_gettime@@GLIBC_2.34",
    ".symver utimer_posix_timer_gettime, timer_gettime@GLIBC_2.3.3",
    ".symver utimer_posix_timer_gettime_old, timer_gettime@GLIBC_2.2.5",
    ".symver utimer_posix_timer_getoverrun, timer_getoverrun@@GLIBC_2.34",
    ".symver utimer_posix_timer_getoverrun, timer_getoverrun@GLIBC_2.3.3",
    ".symver utimer_posix_timer_getoverrun_old, timer_getoverrun@GLIBC_2.2.5",
    ".symver utimer_posix_timer_delete, timer_delete@@GLIBC_2.34",
    ".symver utimer_posix_timer_delete, timer_delete@GLIBC_2.3.3",
    ".symver utimer_posix_timer_delete_old, timer_delete@GLIBC_2.2.5",
    ".symver utimer_posix_timerfd_create, timerfd_create@@GLIBC_2.8",
    ".symver utimer_posix_timerfd_settime, timerfd_settime@@GLIBC_2.8",
    ".symver utimer_posix_timerfd_gettime, timerfd_gettime@@GLIBC_2.8",
    ".symver utimer_posix_sigaction, sigaction@@GLIBC_2.2.5",
    ".symver utimer_posix_signal, signal@@GLIBC_2.2.5",
    ".symver utimer_posix_bsd_signal, bsd_signal@@GLIBC_2.2.5",
    ".symver utimer_posix_sysv_signal, sysv_signal@@GLIBC_2.2.5",
    ".symver utimer_posix_sigwaitinfo, sigwaitinfo@@GLIBC_2.2.5",
    ".symver utimer_posix_sigtimedwait, sigtimedwait@@GLIBC_2.2.5",
    ".symver utimer_posix_sigwait, sigwait@@GLIBC_2.2.5",
    ".symver utimer_posix_nanosleep, nanosleep@@GLIBC_2.2.5",
    ".symver utimer_posix_clock_nanosleep, clock_nanosleep@@GLIBC_2.17",
    ".symver utimer_posix_clock_nanosleep, clock_nanosleep@GLIBC_2.2.5",
    ".symver utimer_posix_sleep, sleep@@GLIBC_2.2.5",
    ".symver utimer_posix_usleep, usleep@@GLIBC_2.2.5",
    ".symver utimer_posix_signalfd, signalfd@@GLIBC_2.7",
    ".symver utimer_posix_close, close@@GLIBC_2.2.5",
    ".symver utimer_posix_write, write@@GLIBC_2.2.5",
    ".symver utimer_posix_read, read@@GLIBC_2.2.5",
    ".symver utimer_posix_read_chk, __read_chk@@GLIBC_2.4",
    ".symver utimer_posix_dup, dup@@GLIBC_2.2.5",
    ".symver utimer_posix_dup2, dup2@@GLIBC_2.2.5",
    ".symver utimer_posix_fcntl, fcntl@@GLIBC_2.2.5",
    ".symver utimer_posix_fcntl64, fcntl64@@GLIBC_2.28",
    ".symver utimer_posix_dup3, dup3@@GLIBC_2.9",
    ".symver utimer_posix_close_range, close_range@@GLIBC_2.34",
    ".symver utimer_posix_closefrom, closefrom@@GLIBC_2.34",
    ".symver utimer_posix_sched_setscheduler, sched_setscheduler@@GLIBC_2.2.5",
    ".symver utimer_posix_sched_setparam, sched_setparam@@GLIBC_2.2.5",
    ".symver utimer_posix_pthread_setschedparam, pthread_setschedparam@@GLIBC_2.2.5",
    ".symver utimer_posix_pthread_setschedprio, pthread_setschedprio@@GLIBC_2.34",
    ".symver utimer_posix_pthread_setschedprio, pthread_setschedprio@GLIBC_2.3.4",
    ".symver utimer_posix_execve, execve@@GLIBC_2.2.5",
    ".symver utimer_posix_execv, execv@@GLIBC_2.2.5",
    ".symver utimer_posix_execvp, execvp@@GLIBC_2.2.5",
    ".symver utimer_posix_execvpe, execvpe@@GLIBC_2.11",
    ".symver utimer_posix_fexecve, fexecve@@GLIBC_2.2.5",
    ".symver utimer_posix_execveat, execveat@@GLIBC_2.34",
);

// `execl`, `execle` and `execlp` take a variable argument list, which
// stable Rust cannot define: each is a stub that stores the five register
// arguments after the first (rsi, rdx, rcx, r8, r9, in the x86-64 System V
// convention) below its return address (40 bytes, which leaves the stack
// 16-byte aligned for the call) and calls `inherit::execl_family` with
// the first argument, those five, the caller's stack arguments (above the
// return address) and which of the three it is.
#[cfg(target_arch = "x86_64")]
macro_rules! execl_stub {
    ($name:literal, $symver:literal, $kind:path) => {
        std::arch::global_asm!(
            concat!(".globl ", $name),
            concat!(".type ", $name, ", @function"),
            ".p2align 4",
            concat!($name, ":"),
            ".cfi_startproc",
            "endbr64",
            "sub rsp, 40",
            ".cfi_adjust_cfa_offset 40",
            "mov [rsp], rsi",
            "mov [rsp + 8], rdx",
            "mov [rsp + 16], rcx",
            "mov [rsp + 24], r8",
            "mov [rsp + 32], r9",
            "mov rsi, rsp",
            "lea rdx, [rsp + 48]",
            "mov ecx, {kind}",
            "call {f}",
            "add rsp, 40",
            ".cfi_adjust_cfa_offset -40",
            "ret",
            ".cfi_endproc",
            concat!(".size ", $name, ", . - ", $name),
            concat!(".symver ", $name, ", ", $symver),
            kind = const $kind,
            f = sym crate::inherit::execl_family,
        );
    };
}
#[cfg(target_arch = "x86_64")]
execl_stub!(
    "utimer_posix_execl",
    "execl@@GLIBC_2.2.5",
    crate::inherit::EXECL
);
#[cfg(target_arch = "x86_64")]
execl_stub!(
    "utimer_posix_execle",
    "execle@@GLIBC_2.2.5",
    crate::inherit::EXECLE
);
#[cfg(target_arch = "x86_64")]
execl_stub!(
    "utimer_posix_execlp",
    "execlp@@GLIBC_2.2.5",
    crate::inherit::EXECLP
);

/// Defines an export (the `.symver` lines give it its names).
macro_rules! timer_fns {
    ($(#[$doc:meta])* fn $name:ident ($($arg:ident: $ty:ty),*) -> c_int $body:block) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// As glibc's function of that name.
        #[no_mangle]
        pub(crate) unsafe extern "C" fn $name($($arg: $ty),*) -> c_int $body
    };
}

timer_fns! {
    /// `timer_create()`, glibc's `GLIBC_2.34` and `GLIBC_2.3.3`.
    fn utimer_posix_timer_create(clock: libc::clockid_t, sevp: *mut libc::sigevent, timerid: *mut timer_t) -> c_int {
        // SAFETY: the caller's promise (glibc's prototype).
        unsafe { timer::create(clock, sevp, Out::New(timerid)) }
    }
}

timer_fns! {
    /// `timer_settime()`, glibc's `GLIBC_2.34` and `GLIBC_2.3.3`.
    fn utimer_posix_timer_settime(t: timer_t, flags: c_int, new: *const libc::itimerspec, old: *mut libc::itimerspec) -> c_int {
        // SAFETY: the caller's promise.
        unsafe { timer::settime(timer::decode(t), flags, new, old) }
    }
}

timer_fns! {
    /// `timer_gettime()`, glibc's `GLIBC_2.34` and `GLIBC_2.3.3`.
    fn utimer_posix_timer_gettime(t: timer_t, cur: *mut libc::itimerspec) -> c_int {
        // SAFETY: the caller's promise.
        unsafe { timer::gettime(timer::decode(t), cur) }
    }
}

timer_fns! {
    /// `timer_getoverrun()`, glibc's `GLIBC_2.34` and `GLIBC_2.3.3`.
    fn utimer_posix_timer_getoverrun(t: timer_t) -> c_int {
        timer::getoverrun(timer::decode(t))
    }
}

timer_fns! {
    /// `timer_delete()`, glibc's `GLIBC_2.34` and `GLIBC_2.3.3`.
    fn utimer_posix_timer_delete(t: timer_t) -> c_int {
        timer::delete(timer::decode(t))
    }
}

timer_fns! {
    /// `timer_create()` of glibc's old ABI (`GLIBC_2.2.5`: `int` IDs).
    fn utimer_posix_timer_create_old(clock: libc::clockid_t, sevp: *mut libc::sigevent, timerid: *mut c_int) -> c_int {
        // SAFETY: the caller's promise.
        unsafe { timer::create(clock, sevp, Out::Old(timerid)) }
    }
}

timer_fns! {
    /// `timer_settime()` of glibc's old ABI.
    fn utimer_posix_timer_settime_old(t: c_int, flags: c_int, new: *const libc::itimerspec, old: *mut libc::itimerspec) -> c_int {
        // SAFETY: the caller's promise.
        unsafe { timer::settime(timer::decode_old(t), flags, new, old) }
    }
}

timer_fns! {
    /// `timer_gettime()` of glibc's old ABI.
    fn utimer_posix_timer_gettime_old(t: c_int, cur: *mut libc::itimerspec) -> c_int {
        // SAFETY: the caller's promise.
        unsafe { timer::gettime(timer::decode_old(t), cur) }
    }
}

timer_fns! {
    /// `timer_getoverrun()` of glibc's old ABI.
    fn utimer_posix_timer_getoverrun_old(t: c_int) -> c_int {
        timer::getoverrun(timer::decode_old(t))
    }
}

timer_fns! {
    /// `timer_delete()` of glibc's old ABI.
    fn utimer_posix_timer_delete_old(t: c_int) -> c_int {
        timer::delete(timer::decode_old(t))
    }
}

timer_fns! {
    /// `timerfd_create()`.
    fn utimer_posix_timerfd_create(clock: libc::clockid_t, flags: c_int) -> c_int {
        timerfd::create(clock, flags)
    }
}

timer_fns! {
    /// `timerfd_settime()`.
    fn utimer_posix_timerfd_settime(fd: c_int, flags: c_int, new: *const libc::itimerspec, old: *mut libc::itimerspec) -> c_int {
        // SAFETY: the caller's promise.
        unsafe { timerfd::settime(fd, flags, new, old) }
    }
}

timer_fns! {
    /// `timerfd_gettime()`.
    fn utimer_posix_timerfd_gettime(fd: c_int, cur: *mut libc::itimerspec) -> c_int {
        // SAFETY: the caller's promise.
        unsafe { timerfd::gettime(fd, cur) }
    }
}

timer_fns! {
    /// `sigaction()`: the program's handlers behind the library's
    /// trampoline (`trampoline.rs`).
    fn utimer_posix_sigaction(signo: c_int, act: *const libc::sigaction, oldact: *mut libc::sigaction) -> c_int {
        // SAFETY: the caller's promise.
        unsafe { trampoline::sigaction(signo, act, oldact) }
    }
}

timer_fns! {
    /// `sigwaitinfo()`: reports the timer signals it accepts, and waits on
    /// past a stale one.
    fn utimer_posix_sigwaitinfo(set: *const libc::sigset_t, info: *mut libc::siginfo_t) -> c_int {
        // SAFETY: the caller's promise.
        unsafe { accept::sigtimedwait(set, info, std::ptr::null()) }
    }
}

timer_fns! {
    /// `sigtimedwait()`, as `sigwaitinfo()`.
    fn utimer_posix_sigtimedwait(
        set: *const libc::sigset_t,
        info: *mut libc::siginfo_t,
        timeout: *const libc::timespec
    ) -> c_int {
        // SAFETY: the caller's promise.
        unsafe { accept::sigtimedwait(set, info, timeout) }
    }
}

timer_fns! {
    /// `sigwait()`, as `sigwaitinfo()`.
    fn utimer_posix_sigwait(set: *const libc::sigset_t, sig: *mut c_int) -> c_int {
        // SAFETY: the caller's promise.
        unsafe { accept::sigwait(set, sig) }
    }
}

timer_fns! {
    /// `signalfd()`: its reads report the timer signals they accept.
    fn utimer_posix_signalfd(fd: c_int, mask: *const libc::sigset_t, flags: c_int) -> c_int {
        // SAFETY: the caller's promise.
        unsafe { accept::signalfd(fd, mask, flags) }
    }
}

timer_fns! {
    /// `close()`: a utimer timerfd's timer ends with its descriptor.
    fn utimer_posix_close(fd: c_int) -> c_int {
        timerfd::close(fd)
    }
}

timer_fns! {
    /// `close_range()`: the utimer timerfds it closes end.
    fn utimer_posix_close_range(first: libc::c_uint, last: libc::c_uint, flags: c_int) -> c_int {
        timerfd::close_range(first, last, flags)
    }
}

/// `closefrom()`: the utimer timerfds it closes end.
///
/// # Safety
/// As glibc's function of that name.
#[no_mangle]
pub(crate) unsafe extern "C" fn utimer_posix_closefrom(low: c_int) {
    timerfd::closefrom(low);
}

timer_fns! {
    /// `dup()`: a duplicate of a utimer timerfd names its timer.
    fn utimer_posix_dup(old: c_int) -> c_int {
        timerfd::dup(old)
    }
}

timer_fns! {
    /// `fcntl()`: `F_DUPFD` of a utimer timerfd names its timer. Declared
    /// with one word for the variadic argument: on the Linux C ABIs the
    /// callee reads an integer or pointer argument from the same register
    /// either way.
    fn utimer_posix_fcntl(fd: c_int, cmd: c_int, arg: usize) -> c_int {
        // SAFETY: the caller's promise.
        unsafe { timerfd::fcntl(fd, cmd, arg, crate::real::real().fcntl) }
    }
}

timer_fns! {
    /// `fcntl64()`, as `fcntl()`.
    fn utimer_posix_fcntl64(fd: c_int, cmd: c_int, arg: usize) -> c_int {
        // SAFETY: the caller's promise.
        unsafe { timerfd::fcntl(fd, cmd, arg, crate::real::real().fcntl64) }
    }
}

timer_fns! {
    /// `dup2()`: a utimer timerfd replaced by another file ends.
    fn utimer_posix_dup2(old: c_int, new: c_int) -> c_int {
        timerfd::dup2(old, new)
    }
}

timer_fns! {
    /// `dup3()`, as `dup2()`.
    fn utimer_posix_dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
        timerfd::dup3(old, new, flags)
    }
}

/// `write()`: `EINVAL` for a timerfd, as the kernel's.
///
/// # Safety
/// As glibc's.
#[no_mangle]
pub(crate) unsafe extern "C" fn utimer_posix_write(
    fd: c_int,
    buf: *const libc::c_void,
    n: libc::size_t,
) -> libc::ssize_t {
    // SAFETY: the caller's promise.
    unsafe { timerfd::write(fd, buf, n) }
}

/// `read()`: a read of one of the program's signalfds reports the timer
/// signals it accepts (`accept.rs`); a utimer timerfd's count is brought
/// up to the moment of the read (`timerfd.rs`); every read goes to glibc.
///
/// # Safety
/// As glibc's.
#[no_mangle]
pub(crate) unsafe extern "C" fn utimer_posix_read(
    fd: c_int,
    buf: *mut libc::c_void,
    n: libc::size_t,
) -> libc::ssize_t {
    let read = crate::real::real().read;
    if !accept::is_signalfd(fd) {
        timerfd::before_read(fd);
        // SAFETY: glibc's function, the caller's arguments.
        return unsafe { read(fd, buf, n) };
    }
    // SAFETY: the caller's promise; glibc's function with its arguments.
    unsafe { accept::read_signalfd(fd, buf, n, |fd, b, n| read(fd, b, n)) }
}

/// `__read_chk()`: `read()` as `_FORTIFY_SOURCE` builds call it, with the
/// buffer's size checked by glibc first.
///
/// # Safety
/// As glibc's.
#[no_mangle]
pub(crate) unsafe extern "C" fn utimer_posix_read_chk(
    fd: c_int,
    buf: *mut libc::c_void,
    n: libc::size_t,
    size: libc::size_t,
) -> libc::ssize_t {
    let read_chk = crate::real::real().read_chk;
    if !accept::is_signalfd(fd) {
        timerfd::before_read(fd);
        // SAFETY: glibc's function, the caller's arguments.
        return unsafe { read_chk(fd, buf, n, size) };
    }
    // SAFETY: as above.
    unsafe { accept::read_signalfd(fd, buf, n, |fd, b, n| read_chk(fd, b, n, size)) }
}

/// `signal()` (glibc's BSD semantics: `SA_RESTART`, the signal blocked in
/// its handler).
///
/// # Safety
/// As glibc's: `handler` is `SIG_DFL`, `SIG_IGN` or a handler.
#[no_mangle]
pub(crate) unsafe extern "C" fn utimer_posix_signal(signo: c_int, handler: usize) -> usize {
    // SAFETY: the caller's promise.
    unsafe { trampoline::signal_with(signo, handler, libc::SA_RESTART) }
}

/// `bsd_signal()`, as `signal()`.
///
/// # Safety
/// As glibc's.
#[no_mangle]
pub(crate) unsafe extern "C" fn utimer_posix_bsd_signal(signo: c_int, handler: usize) -> usize {
    // SAFETY: the caller's promise.
    unsafe { trampoline::signal_with(signo, handler, libc::SA_RESTART) }
}

/// `sysv_signal()`: System V's one-shot handler (`SA_RESETHAND |
/// SA_NODEFER`).
///
/// # Safety
/// As glibc's.
#[no_mangle]
pub(crate) unsafe extern "C" fn utimer_posix_sysv_signal(signo: c_int, handler: usize) -> usize {
    // SAFETY: the caller's promise.
    unsafe { trampoline::signal_with(signo, handler, libc::SA_RESETHAND | libc::SA_NODEFER) }
}

timer_fns! {
    /// `sched_setscheduler()`: a thread of the process made real-time has
    /// the workers run above it.
    fn utimer_posix_sched_setscheduler(pid: libc::pid_t, policy: c_int, param: *const libc::sched_param) -> c_int {
        // SAFETY: the caller's arguments, as glibc's.
        unsafe { sched::setscheduler(pid, policy, param) }
    }
}

timer_fns! {
    /// `sched_setparam()`: as `sched_setscheduler()`.
    fn utimer_posix_sched_setparam(pid: libc::pid_t, param: *const libc::sched_param) -> c_int {
        // SAFETY: as above.
        unsafe { sched::setparam(pid, param) }
    }
}

timer_fns! {
    /// `pthread_setschedparam()`: as `sched_setscheduler()`.
    fn utimer_posix_pthread_setschedparam(thread: libc::pthread_t, policy: c_int, param: *const libc::sched_param) -> c_int {
        // SAFETY: as above.
        unsafe { sched::pthread_setschedparam(thread, policy, param) }
    }
}

timer_fns! {
    /// `pthread_setschedprio()`: as `sched_setscheduler()`.
    fn utimer_posix_pthread_setschedprio(thread: libc::pthread_t, prio: c_int) -> c_int {
        // SAFETY: as above.
        unsafe { sched::pthread_setschedprio(thread, prio) }
    }
}

timer_fns! {
    /// `execve()`: the utimer timerfds that the new image keeps become the
    /// kernel's first (`inherit.rs`).
    fn utimer_posix_execve(path: *const c_char, argv: *const *const c_char, envp: *const *const c_char) -> c_int {
        // SAFETY: the caller's arguments, as glibc's.
        unsafe { inherit::execve(path, argv, envp) }
    }
}

timer_fns! {
    /// `execv()`: as `execve()`.
    fn utimer_posix_execv(path: *const c_char, argv: *const *const c_char) -> c_int {
        // SAFETY: as above.
        unsafe { inherit::execv(path, argv) }
    }
}

timer_fns! {
    /// `execvp()`: as `execve()`.
    fn utimer_posix_execvp(file: *const c_char, argv: *const *const c_char) -> c_int {
        // SAFETY: as above.
        unsafe { inherit::execvp(file, argv) }
    }
}

timer_fns! {
    /// `execvpe()`: as `execve()`.
    fn utimer_posix_execvpe(file: *const c_char, argv: *const *const c_char, envp: *const *const c_char) -> c_int {
        // SAFETY: as above.
        unsafe { inherit::execvpe(file, argv, envp) }
    }
}

timer_fns! {
    /// `fexecve()`: as `execve()`.
    fn utimer_posix_fexecve(fd: c_int, argv: *const *const c_char, envp: *const *const c_char) -> c_int {
        // SAFETY: as above.
        unsafe { inherit::fexecve(fd, argv, envp) }
    }
}

timer_fns! {
    /// `execveat()`: as `execve()`.
    fn utimer_posix_execveat(dirfd: c_int, path: *const c_char, argv: *const *const c_char, envp: *const *const c_char, flags: c_int) -> c_int {
        // SAFETY: as above.
        unsafe { inherit::execveat(dirfd, path, argv, envp, flags) }
    }
}

timer_fns! {
    /// `nanosleep()`: a sleeping thread serves the timers (`sleep.rs`).
    fn utimer_posix_nanosleep(req: *const libc::timespec, rem: *mut libc::timespec) -> c_int {
        // SAFETY: the caller's promise.
        unsafe { sleep::nanosleep(req, rem) }
    }
}

timer_fns! {
    /// `clock_nanosleep()`, glibc's `GLIBC_2.17` and librt's `GLIBC_2.2.5`:
    /// as `nanosleep()`.
    fn utimer_posix_clock_nanosleep(
        clock: libc::clockid_t,
        flags: c_int,
        req: *const libc::timespec,
        rem: *mut libc::timespec
    ) -> c_int {
        // SAFETY: the caller's promise.
        unsafe { sleep::clock_nanosleep(clock, flags, req, rem) }
    }
}

timer_fns! {
    /// `usleep()`: as `nanosleep()`.
    fn utimer_posix_usleep(usec: libc::useconds_t) -> c_int {
        sleep::usleep(usec)
    }
}

/// `sleep()`: as `nanosleep()`.
///
/// # Safety
/// As glibc's function of that name (none: it takes an integer).
#[no_mangle]
pub(crate) unsafe extern "C" fn utimer_posix_sleep(seconds: libc::c_uint) -> libc::c_uint {
    sleep::sleep(seconds)
}
