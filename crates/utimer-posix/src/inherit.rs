//! Timerfds that outlive the process image or the process that made them:
//! a `fork` child's, and an `exec`'s without `TFD_CLOEXEC`.
//!
//! # The problem
//!
//! A utimer timerfd is an eventfd that the program reads and a worker
//! thread writes. The descriptor is inherited by a `fork` child and kept
//! across an `exec`, but the timer behind it is not: a child has none of
//! the parent's threads (the parent's system is forgotten there,
//! `global.rs`), and an `exec` ends every thread and all of the library's
//! memory. The kernel's timerfd lives in the file itself, so its child
//! and its new image can read it, re-arm it and ask its setting, and it
//! keeps counting. Left alone, utimer's would read only the parent's
//! expirations in the child (the eventfd is shared), refuse
//! `timerfd_settime` and `timerfd_gettime` there, and stop counting after
//! an `exec`.
//!
//! # What is done: the kernel's timerfd in place
//!
//! As for `TFD_TIMER_CANCEL_ON_SET` (`timerfd.rs`), such a descriptor is
//! handed to the kernel: a kernel timerfd is made on the same clock
//! (non-blocking if the descriptor's status flags say so), armed with the
//! utimer timer's setting, and `dup3` puts it on the program's number,
//! keeping that number's `FD_CLOEXEC`. Every number that names the timer
//! (a `dup` of it) gets the same kernel timerfd, so they stay one timer.
//! The setting is carried as an absolute expiry on the timer's clock (the
//! time left, read with `timerfd_gettime`, plus the clock read right
//! after) and the interval: the kernel's timer fires when utimer's would
//! have, and one whose expiry passed during the handover fires at once
//! with the periods it missed, never early.
//!
//! * **`fork`**: in the child (`fork_child`, the `pthread_atfork` child
//!   handler), before its first call. The child cannot ask the parent's
//!   system anything: a lock that one of the parent's vanished threads
//!   held at the instant of `fork` would never be let go. So the settings
//!   are read in the prepare handler (`fork_prepare`), in the parent, while
//!   its system is alive, and the child uses that snapshot. The count of
//!   names is held locked across the `fork` (`utimer_capi`'s fork hooks),
//!   so the child inherits it consistent; then the child's table is
//!   cleared, and the numbers are the kernel's from then on. The parent's
//!   descriptors stay utimer's: replacing the file under a number there
//!   (`dup3`) would silently drop it from the parent's `epoll` sets.
//! * **`exec`**: the library interposes `execve`, `execv`, `execvp`,
//!   `execvpe`, `fexecve`, `execveat` and (x86-64) the variadic `execl`,
//!   `execle`, `execlp`, and hands over every timer with a number that
//!   lacks `FD_CLOEXEC`, in the live process, just before the real call.
//!   The numbers with `FD_CLOEXEC` are left alone: the `exec` closes them.
//!   If the `exec` fails, the handed-over numbers stay kernel timerfds
//!   (with the same setting, and working) and utimer's timers behind them
//!   are deleted, as `TFD_TIMER_CANCEL_ON_SET` leaves them. In a `vfork`
//!   child (its memory is the parent's: the process ID differs from the
//!   system's owner) the table is the parent's, so nothing of it is
//!   touched: the child's numbers are kernel timerfds, the parent's stay
//!   utimer's.
//!
//! glibc's `execl`, `execle` and `execlp` build the argument vector and
//! call glibc's `execve` inside glibc, past any interposed one. They take
//! a variable argument list, which stable Rust cannot define; on x86-64 a
//! few instructions (`global_asm!` in `exports.rs`) store the five register
//! arguments beside a pointer to the caller's stack arguments and call
//! Rust, which reads them as `va_arg` would (every argument is a pointer:
//! the next register, then the next stack slot), then calls glibc's
//! `execv`, `execve` or `execvp`.
//!
//! # What still differs from the kernel
//!
//! * After `fork`, parent and child no longer share one timer: each has a
//!   copy with the setting it had at the `fork`. A re-arm in one is not
//!   seen by the other, and each counts every expiration (on the kernel,
//!   whichever reads first takes them).
//! * Expirations that were counted but not read at the `fork` or `exec`
//!   stay in the eventfd (the parent's, or gone with the image): the
//!   kernel's timerfd starts at zero and counts from the handover.
//! * A timerfd created, re-armed or duplicated by another thread while a
//!   `fork` runs may reach the child with the setting from just before
//!   (disarmed, for one created then).
//! * An `epoll` set that the child inherited is the parent's too, and
//!   watches the file that the number named at the `fork` (the parent's
//!   eventfd), not the child's kernel timerfd.
//! * Only the numbers the library knows are handed over (see
//!   `utimer_capi`'s timerfd docs: a raw `dup` system call, or a number
//!   received over a socket, is not), and only where the library sees the
//!   `fork` or the `exec`. A child made by `posix_spawn` (so by `system`
//!   and `popen`: glibc runs no `fork` handler there, and calls its own
//!   `execve`) or by a raw `clone` or `fork` system call holds the
//!   parent's eventfd: it reads the parent's expirations while the
//!   parent's timer lives, and `timerfd_settime` and `timerfd_gettime`
//!   refuse it (`EINVAL`); after a raw `execve` system call the eventfd no
//!   longer counts. `vfork` followed by `execve` is served (see above).
//!
//! The handover costs a `timerfd_gettime` per timer in the parent, and a
//! few system calls per number in the child, at every `fork` of a process
//! that has timerfds; an `exec` of one that has none costs a look at the
//! table.

use crate::critical;
use crate::global::started;
use crate::real::{errno, real, set_errno};
use std::cell::RefCell;
use std::ffi::{c_char, c_int};
use std::sync::atomic::{AtomicI32, Ordering};
use utimer_capi as capi;

/// A timer's setting, ready for a kernel timerfd.
#[derive(Clone, Copy)]
struct Setting {
    /// The utimer timer's ID.
    timer: c_int,
    clock: libc::clockid_t,
    /// The next expiry on `clock`, absolute; `None`: disarmed.
    next: Option<libc::timespec>,
    interval: libc::timespec,
}

/// The process that owns the system (its ID when the system started): a
/// `vfork` child, which shares the memory, has another.
static OWNER: AtomicI32 = AtomicI32::new(0);

/// Records the process that started the system (`global.rs`).
pub(crate) fn note_owner() {
    // SAFETY: getpid takes nothing and always succeeds.
    OWNER.store(unsafe { libc::getpid() }, Ordering::Release);
}

/// `a + b`, both normalized.
fn add(a: libc::timespec, b: libc::timespec) -> libc::timespec {
    let mut sec = a.tv_sec.saturating_add(b.tv_sec);
    let mut nsec = a.tv_nsec + b.tv_nsec;
    if nsec >= 1_000_000_000 {
        nsec -= 1_000_000_000;
        sec = sec.saturating_add(1);
    }
    libc::timespec {
        tv_sec: sec,
        tv_nsec: nsec,
    }
}

fn is_zero(t: &libc::timespec) -> bool {
    t.tv_sec == 0 && t.tv_nsec == 0
}

/// The setting of the utimer timerfd `fd` (timer `timer` on `clock`), read
/// from the live system `u`.
fn setting_of(
    u: &capi::utimer_t,
    fd: c_int,
    timer: c_int,
    clock: libc::clockid_t,
) -> Option<Setting> {
    // A fork handler's: nothing may unwind out of it.
    let cur = capi::guard(None, || u.timerfd_gettime(fd).map(Some))?;
    let next = if is_zero(&cur.it_value) {
        None
    } else {
        // Read after the time left: the sum is never early.
        // SAFETY: a zeroed timespec is a valid value to fill.
        let mut now: libc::timespec = unsafe { std::mem::zeroed() };
        // SAFETY: one of the clocks utimer serves, a live out value.
        if unsafe { libc::clock_gettime(clock, &mut now) } != 0 {
            return None;
        }
        Some(add(now, cur.it_value))
    };
    Some(Setting {
        timer,
        clock,
        next,
        interval: cur.it_interval,
    })
}

/// Puts one kernel timerfd with `setting` on every number of `fds` (the
/// numbers of one timer), each keeping its `FD_CLOEXEC`. Only glibc's own
/// functions are called: the interposed `dup3` would end the timer.
/// Returns whether it did.
fn to_kernel(fds: &[c_int], setting: Option<&Setting>, clock: libc::clockid_t) -> bool {
    let Some(&first) = fds.first() else {
        return false;
    };
    // SAFETY: fcntl reads the status flags of a descriptor.
    let status = unsafe { libc::fcntl(first, libc::F_GETFL) };
    if status < 0 {
        return false;
    }
    let r = real();
    // SAFETY: glibc's function.
    let k = unsafe { (r.timerfd_create)(clock, libc::TFD_CLOEXEC | (status & libc::O_NONBLOCK)) };
    if k < 0 {
        return false;
    }
    if let Some(s) = setting {
        let (flags, value) = match s.next {
            Some(t) => (libc::TFD_TIMER_ABSTIME, t),
            None => (
                0,
                libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
            ),
        };
        let spec = libc::itimerspec {
            it_interval: s.interval,
            it_value: value,
        };
        // SAFETY: glibc's function, our descriptor and a live value.
        if unsafe { (r.timerfd_settime)(k, flags, &spec, std::ptr::null_mut()) } != 0 {
            // SAFETY: our descriptor.
            unsafe { (r.close)(k) };
            return false;
        }
    }
    let mut done = false;
    for &fd in fds {
        // SAFETY: fcntl reads the descriptor flags of a descriptor.
        let fdflags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
        if fdflags < 0 {
            continue;
        }
        let cloexec = if fdflags & libc::FD_CLOEXEC != 0 {
            libc::O_CLOEXEC
        } else {
            0
        };
        // SAFETY: our descriptor onto the program's number, which names
        // the utimer timerfd being replaced (an atomic replacement: the
        // number never names nothing).
        done |= unsafe { (r.dup3)(k, fd, cloexec) } >= 0;
    }
    // SAFETY: our descriptor.
    unsafe { (r.close)(k) };
    done
}

/// Every utimer timerfd number in the table with its timer and clock,
/// sorted by timer (the numbers of one timer together).
fn numbers() -> Vec<(c_int, c_int, libc::clockid_t)> {
    let mut v = Vec::new();
    capi::for_each_timerfd(0, libc::c_uint::MAX, |fd| {
        if let Some((timer, clock)) = capi::timerfd_timer(fd) {
            v.push((timer, fd, clock));
        }
    });
    v.sort_unstable();
    v
}

/// Calls `f` with each group of `numbers()` that names one timer.
fn by_timer(
    numbers: &[(c_int, c_int, libc::clockid_t)],
    mut f: impl FnMut(c_int, libc::clockid_t, &[c_int]),
) {
    let mut fds = Vec::new();
    for (i, &(timer, fd, clock)) in numbers.iter().enumerate() {
        fds.push(fd);
        if numbers.get(i + 1).is_none_or(|n| n.0 != timer) {
            f(timer, clock, &fds);
            fds.clear();
        }
    }
}

thread_local! {
    /// The settings read before `fork`, for the child (by timer).
    static BEFORE_FORK: RefCell<Vec<Setting>> = const { RefCell::new(Vec::new()) };
}

/// Before `fork`, in the parent, its system alive: the count of names is
/// locked (the child inherits it consistent) and every timerfd's setting
/// is read for the child.
pub(crate) fn fork_prepare() {
    capi::timerfd_fork_prepare();
    let _section = critical::enter();
    let mut settings = Vec::new();
    if let Some(u) = started() {
        let nums = numbers();
        by_timer(&nums, |timer, clock, fds| {
            if let Some(s) = fds.first().and_then(|&fd| setting_of(u, fd, timer, clock)) {
                settings.push(s);
            }
        });
    }
    // Never fails: only these handlers touch it, one at a time (`try_`:
    // nothing here may panic).
    let _ = BEFORE_FORK.try_with(|b| b.try_borrow_mut().map(|mut b| *b = settings));
}

/// After `fork`, in the parent: nothing changes.
pub(crate) fn fork_parent() {
    let _ = BEFORE_FORK.try_with(|b| b.try_borrow_mut().map(|mut b| *b = Vec::new()));
    capi::timerfd_fork_parent();
}

/// After `fork`, in the child (one thread; the parent's system unusable):
/// every inherited utimer timerfd becomes a kernel timerfd with the
/// setting read before the `fork` (disarmed, for a timer made since), and
/// the table forgets them all.
pub(crate) fn fork_child() {
    let settings = BEFORE_FORK
        .try_with(|b| b.try_borrow_mut().map(|mut b| std::mem::take(&mut *b)))
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let nums = numbers();
    by_timer(&nums, |timer, clock, fds| {
        let s = settings
            .iter()
            .find(|s| s.timer == timer && s.clock == clock);
        to_kernel(fds, s, clock);
    });
    capi::timerfd_fork_child();
}

/// Before an `exec`: every timer with a number that lacks `FD_CLOEXEC` is
/// handed to the kernel on all of its numbers. Returns whether any was (a
/// failed `exec` then ends their utimer timers).
fn before_exec() -> bool {
    let Some(u) = started() else {
        return false;
    };
    let _section = critical::enter();
    let nums = numbers();
    let mut any = false;
    by_timer(&nums, |timer, clock, fds| {
        let kept = fds.iter().any(|&fd| {
            // SAFETY: fcntl reads the descriptor flags of a descriptor.
            let f = unsafe { libc::fcntl(fd, libc::F_GETFD) };
            f >= 0 && f & libc::FD_CLOEXEC == 0
        });
        if !kept {
            return;
        }
        if let Some(s) = fds.first().and_then(|&fd| setting_of(u, fd, timer, clock)) {
            any |= to_kernel(fds, Some(&s), clock);
        }
    });
    any
}

/// After an `exec` that failed: the numbers handed over are kernel
/// timerfds now (glibc's `timerfd_gettime` takes them), so the table
/// forgets them and their utimer timers end. Not in a `vfork` child: the
/// table and the timers are the parent's.
fn after_failed_exec() {
    // SAFETY: getpid takes nothing and always succeeds.
    if unsafe { libc::getpid() } != OWNER.load(Ordering::Acquire) {
        return;
    }
    let Some(u) = started() else {
        return;
    };
    let _section = critical::enter();
    for (_, fd, _) in numbers() {
        // SAFETY: a zeroed itimerspec is a valid value to fill.
        let mut cur: libc::itimerspec = unsafe { std::mem::zeroed() };
        // SAFETY: glibc's function, a live out value.
        if unsafe { (real().timerfd_gettime)(fd, &mut cur) } == 0 {
            let _ = capi::guard(-1, || u.timerfd_release(fd).map(|()| 0));
        }
    }
}

/// Runs `exec` (glibc's, which returns only on failure) with the timerfds
/// handed over first; `errno` is the `exec`'s.
fn exec_with(exec: impl FnOnce() -> c_int) -> c_int {
    let handed = before_exec();
    let r = exec();
    if handed {
        let e = errno();
        after_failed_exec();
        set_errno(e);
    }
    r
}

type Argv = *const *const c_char;

/// `execve()`.
///
/// # Safety
/// As glibc's.
pub(crate) unsafe fn execve(path: *const c_char, argv: Argv, envp: Argv) -> c_int {
    // SAFETY: glibc's function, the caller's arguments.
    exec_with(|| unsafe { (real().execve)(path, argv, envp) })
}

/// `execv()`.
///
/// # Safety
/// As glibc's.
pub(crate) unsafe fn execv(path: *const c_char, argv: Argv) -> c_int {
    // SAFETY: glibc's function, the caller's arguments.
    exec_with(|| unsafe { (real().execv)(path, argv) })
}

/// `execvp()`.
///
/// # Safety
/// As glibc's.
pub(crate) unsafe fn execvp(file: *const c_char, argv: Argv) -> c_int {
    // SAFETY: glibc's function, the caller's arguments.
    exec_with(|| unsafe { (real().execvp)(file, argv) })
}

/// `execvpe()`.
///
/// # Safety
/// As glibc's.
pub(crate) unsafe fn execvpe(file: *const c_char, argv: Argv, envp: Argv) -> c_int {
    // SAFETY: glibc's function, the caller's arguments.
    exec_with(|| unsafe { (real().execvpe)(file, argv, envp) })
}

/// `fexecve()`.
///
/// # Safety
/// As glibc's.
pub(crate) unsafe fn fexecve(fd: c_int, argv: Argv, envp: Argv) -> c_int {
    // SAFETY: glibc's function, the caller's arguments.
    exec_with(|| unsafe { (real().fexecve)(fd, argv, envp) })
}

/// `execveat()`: glibc 2.34 and later (the export exists only where the
/// program could have bound glibc's).
///
/// # Safety
/// As glibc's.
pub(crate) unsafe fn execveat(
    dirfd: c_int,
    path: *const c_char,
    argv: Argv,
    envp: Argv,
    flags: c_int,
) -> c_int {
    match real().execveat {
        // SAFETY: glibc's function, the caller's arguments.
        Some(f) => exec_with(|| unsafe { f(dirfd, path, argv, envp, flags) }),
        // SAFETY: the system call takes these five arguments.
        None => exec_with(|| unsafe {
            libc::syscall(libc::SYS_execveat, dirfd, path, argv, envp, flags) as c_int
        }),
    }
}

/// `execl(path, arg0, ..., NULL)` (`execl_family`'s `kind`).
#[cfg(target_arch = "x86_64")]
pub(crate) const EXECL: c_int = 0;
/// `execle(path, arg0, ..., NULL, envp)`.
#[cfg(target_arch = "x86_64")]
pub(crate) const EXECLE: c_int = 1;
/// `execlp(file, arg0, ..., NULL)`.
#[cfg(target_arch = "x86_64")]
pub(crate) const EXECLP: c_int = 2;

/// Arguments kept on the stack: more go to the heap.
#[cfg(target_arch = "x86_64")]
const ON_STACK: usize = 256;

/// The variadic `exec`s, after their assembly stub (`exports.rs`): argument
/// `i` of the list after `path` is `regs[i]` for the first five, then
/// `stack[i - 5]`, as `va_arg` reads pointers on x86-64.
///
/// # Safety
/// Called by the stubs only, with the C caller's arguments: a list of
/// pointers ended by NULL (and, for `execle`, the environment after it),
/// as glibc's functions require.
#[cfg(target_arch = "x86_64")]
pub(crate) unsafe extern "C" fn execl_family(
    path: *const c_char,
    regs: *const *const c_char,
    stack: *const *const c_char,
    kind: c_int,
) -> c_int {
    // SAFETY: the caller's promise: the arguments up to the NULL (and the
    // one after it, for execle) are there to read.
    let arg = |i: usize| unsafe {
        if i < 5 {
            regs.add(i).read()
        } else {
            stack.add(i - 5).read()
        }
    };
    let mut n = 0;
    while !arg(n).is_null() {
        n += 1;
    }
    let envp = if kind == EXECLE {
        arg(n + 1) as Argv
    } else {
        std::ptr::null()
    };
    // argv with its NULL: on the stack unless it is long (execl and execle
    // are async-signal-safe; a heap allocation is not).
    let mut small = [std::ptr::null::<c_char>(); ON_STACK];
    let mut big = Vec::new();
    let argv: &mut [*const c_char] = if n < ON_STACK {
        &mut small[..=n]
    } else {
        big.resize(n + 1, std::ptr::null());
        &mut big
    };
    for (i, a) in argv.iter_mut().enumerate().take(n) {
        *a = arg(i);
    }
    let argv = argv.as_ptr();
    let r = real();
    // SAFETY: glibc's functions with the caller's path, environment and
    // arguments, as its own execl family passes them.
    exec_with(|| unsafe {
        match kind {
            EXECLE => (r.execve)(path, argv, envp),
            EXECLP => (r.execvp)(path, argv),
            _ => (r.execv)(path, argv),
        }
    })
}
