//! Reporting the signals the program accepts, so that utimer's timer
//! signals follow the kernel's acceptance (`posixtimer_deliver_signal()`):
//! each one's overrun latched when it is taken, a stale one (its timer
//! re-armed or deleted since it was queued) dropped, the next one of a
//! standard signal queued once the pending one is gone.
//!
//! A signal is accepted by a handler of the program's (behind the
//! trampoline, `trampoline.rs`), by the `sigwait` family, by a read of one
//! of the program's signalfds, or by a default action; utimer is told,
//! per signal number, whether every acceptance is seen
//! ([`update_reporting`]): a `SIGEV_THREAD_ID` timer of a signal whose
//! acceptance is not seen cannot wait for it.
//!
//! The sets of signal numbers below are process-wide and lock-free
//! (`utimer::posix::SignalSet`): a handler reads them.

use crate::critical;
use crate::real::{fail, real};
use crate::trampoline::{discards, NSIG};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use utimer::posix::SignalSet;

/// Signals with a handler of the program's.
static HANDLED: SignalSet = SignalSet::new();
/// Signals the program has waited for with the `sigwait` family.
static WAITED: SignalSet = SignalSet::new();
/// Signals the program reads from a `signalfd`, whose reads the library
/// sees (`read` below).
static READ_FROM_FD: SignalSet = SignalSet::new();

/// Signals whose action is `SIG_DFL`.
static DEFAULT: SignalSet = SignalSet::new();

/// Whether the kernel's default action for `signo` takes a pending
/// instance without running anything the library sees: ignore, or stop.
/// (A default action that ends the process needs no report.)
fn default_unseen(signo: c_int) -> bool {
    matches!(
        signo,
        libc::SIGCHLD
            | libc::SIGURG
            | libc::SIGWINCH
            | libc::SIGCONT
            | libc::SIGTSTP
            | libc::SIGTTIN
            | libc::SIGTTOU
    )
}

/// Tells utimer whether the acceptance of `signo` is now reported: a
/// handler, a wait or a signalfd read of the program's sees it, and so
/// does every acceptance of a signal whose default action is not one
/// that the kernel takes unseen.
fn update_reporting(signo: c_int) {
    let seen = HANDLED.contains(signo)
        || WAITED.contains(signo)
        || READ_FROM_FD.contains(signo)
        || !(default_unseen(signo) && DEFAULT.contains(signo));
    utimer::posix::report_acceptance(signo, seen);
}

/// The program's action for `signo` is now `handler` (`SIG_DFL`, `SIG_IGN`
/// or a handler behind the trampoline): what it reports and whether it
/// ignores the signal follow.
pub(crate) fn action_set(signo: c_int, handler: usize) {
    DEFAULT.set(signo, handler == libc::SIG_DFL);
    HANDLED.set(signo, handler != libc::SIG_DFL && handler != libc::SIG_IGN);
    update_reporting(signo);
    utimer::posix::signal_ignored(signo, discards(handler));
}

/// Reads the actions the process started with (`SIG_DFL`, or `SIG_IGN`
/// inherited across `exec`) and tells utimer what it reports and what
/// the program ignores. Runs before `main`.
pub(crate) fn init() {
    for signo in 1..NSIG as c_int {
        if signo == libc::SIGKILL || signo == libc::SIGSTOP {
            continue;
        }
        // SAFETY: a zeroed sigaction is a valid value to fill.
        let mut was: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: a NULL new action only reads the current one into `was`.
        if unsafe { (real().sigaction)(signo, std::ptr::null(), &mut was) } != 0 {
            continue;
        }
        if was.sa_sigaction == libc::SIG_DFL {
            DEFAULT.set(signo, true);
        }
        if discards(was.sa_sigaction) {
            utimer::posix::signal_ignored(signo, true);
        }
        update_reporting(signo);
    }
}

/// Marks every signal of `set` in `which`, and updates the reporting.
///
/// # Safety
/// `set` is NULL or a valid `sigset_t`.
unsafe fn mark_all(which: &SignalSet, set: *const libc::sigset_t) {
    if set.is_null() {
        return;
    }
    for signo in 1..NSIG as c_int {
        // SAFETY: the caller's promise; sigismember only reads.
        if unsafe { libc::sigismember(set, signo) } == 1 {
            which.set(signo, true);
            update_reporting(signo);
        }
    }
}

/// The program accepted `info`: a utimer timer's signal gets the kernel's
/// overrun, and a stale one is dropped. Returns false to drop it.
///
/// # Safety
/// `info` is NULL or a writable `siginfo_t`.
pub(crate) unsafe fn accepted(info: *mut libc::siginfo_t) -> bool {
    // SAFETY: the caller's promise.
    let Some(i) = (unsafe { info.as_mut() }) else {
        return true;
    };
    // Another source's standard signal frees the pending slot that timer
    // signals may wait behind: utimer is told of it too.
    if i.si_code != libc::SI_TIMER && !utimer::posix::timer_signals_waiting(i.si_signo) {
        return true;
    }
    let Some(u) = crate::global::started() else {
        return true;
    };
    let _section = critical::enter();
    // Not a signal of utimer's timers (or a panic): deliver it as it is.
    utimer_capi::guard(true, || Ok(u.timer_signal_accepted(i).unwrap_or(true)))
}

/// `sigtimedwait()` (`timeout` NULL: `sigwaitinfo()`), reporting what it
/// accepts and waiting on past a stale timer signal.
///
/// # Safety
/// As glibc's.
pub(crate) unsafe fn sigtimedwait(
    set: *const libc::sigset_t,
    info: *mut libc::siginfo_t,
    timeout: *const libc::timespec,
) -> c_int {
    // SAFETY: the caller's promise.
    unsafe { mark_all(&WAITED, set) };
    // SAFETY: a zeroed siginfo_t is valid; the clock calls fill live values.
    let mut own: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let out = if info.is_null() {
        &mut own as *mut _
    } else {
        info
    };
    let deadline = (!timeout.is_null()).then(|| {
        // SAFETY: the caller's promise for `timeout`.
        let t = unsafe { *timeout };
        now_ns().saturating_add(
            u64::try_from(t.tv_sec)
                .unwrap_or(0)
                .saturating_mul(1_000_000_000)
                + u64::try_from(t.tv_nsec).unwrap_or(0),
        )
    });
    let mut left = if timeout.is_null() {
        None
    } else {
        // SAFETY: as above.
        Some(unsafe { *timeout })
    };
    loop {
        let r = match &left {
            // SAFETY: glibc's functions with the caller's set and live values.
            None => unsafe { (real().sigwaitinfo)(set, out) },
            // SAFETY: as above.
            Some(t) => unsafe { (real().sigtimedwait)(set, out, t) },
        };
        // SAFETY: `out` is live.
        if r <= 0 || unsafe { accepted(out) } {
            return r;
        }
        // A stale timer signal: the kernel would never have delivered it.
        if let Some(d) = deadline {
            let rest = d.saturating_sub(now_ns());
            left = Some(libc::timespec {
                tv_sec: (rest / 1_000_000_000) as libc::time_t,
                tv_nsec: (rest % 1_000_000_000) as libc::c_long,
            });
        }
    }
}

/// `sigwait()`: as glibc's, an error number (0 on success), retried on
/// `EINTR`.
///
/// # Safety
/// As glibc's.
pub(crate) unsafe fn sigwait(set: *const libc::sigset_t, sig: *mut c_int) -> c_int {
    loop {
        // SAFETY: the caller's set; a NULL info is allowed.
        let r = unsafe { sigtimedwait(set, std::ptr::null_mut(), std::ptr::null()) };
        if r > 0 {
            if !sig.is_null() {
                // SAFETY: the caller promised it writable.
                unsafe { sig.write(r) };
            }
            return 0;
        }
        let e = crate::real::errno();
        if e != libc::EINTR {
            return e;
        }
    }
}

/// Descriptors below this that are signalfds are known (`SIGNALFDS`);
/// a signalfd numbered above it reads unseen.
const TRACKED_FDS: usize = 1 << 16;

/// The program's signalfds (bit per descriptor number), whose reads are
/// acceptances.
static SIGNALFDS: [AtomicU64; TRACKED_FDS / 64] = [const { AtomicU64::new(0) }; TRACKED_FDS / 64];

fn signalfd_bit(fd: c_int) -> Option<(&'static AtomicU64, u64)> {
    let fd = usize::try_from(fd).ok().filter(|&f| f < TRACKED_FDS)?;
    Some((&SIGNALFDS[fd / 64], 1 << (fd % 64)))
}

/// Whether `fd` is one of the program's signalfds.
#[inline]
pub(crate) fn is_signalfd(fd: c_int) -> bool {
    signalfd_bit(fd).is_some_and(|(w, b)| w.load(Ordering::Acquire) & b != 0)
}

/// `fd` is closed or replaced: no longer a signalfd of the program's.
pub(crate) fn forget_fd(fd: c_int) {
    if let Some((w, b)) = signalfd_bit(fd) {
        w.fetch_and(!b, Ordering::AcqRel);
    }
}

/// Every number in `first..=last` is closed: none is a signalfd any more.
pub(crate) fn forget_range(first: libc::c_uint, last: libc::c_uint) {
    let (first, end) = (
        first as usize,
        (last as usize).saturating_add(1).min(TRACKED_FDS),
    );
    let mut fd = first;
    while fd < end {
        // The bits of `fd..end` in `fd`'s word.
        let (w, lo) = (fd / 64, fd % 64);
        let hi = (end - w * 64).min(64);
        let bits = if hi - lo == 64 {
            !0
        } else {
            ((1u64 << (hi - lo)) - 1) << lo
        };
        if SIGNALFDS[w].load(Ordering::Relaxed) & bits != 0 {
            SIGNALFDS[w].fetch_and(!bits, Ordering::AcqRel);
        }
        fd = w * 64 + hi;
    }
}

/// `new` was made a duplicate of `old` (or another file replaced it):
/// it is one of the program's signalfds if and only if `old` is.
pub(crate) fn duplicated(old: c_int, new: c_int) {
    if is_signalfd(old) {
        if let Some((w, b)) = signalfd_bit(new) {
            w.fetch_or(b, Ordering::AcqRel);
        }
    } else {
        forget_fd(new);
    }
}

/// `signalfd()`: its reads are acceptances, reported by [`read`].
///
/// # Safety
/// As glibc's.
pub(crate) unsafe fn signalfd(fd: c_int, mask: *const libc::sigset_t, flags: c_int) -> c_int {
    // SAFETY: glibc's function with the caller's arguments.
    let r = unsafe { (real().signalfd)(fd, mask, flags) };
    if r >= 0 {
        if let Some((w, b)) = signalfd_bit(r) {
            w.fetch_or(b, Ordering::AcqRel);
            // SAFETY: the caller's promise; the call succeeded, so `mask`
            // was a readable set.
            unsafe { mark_all(&READ_FROM_FD, mask) };
        }
    }
    r
}

/// Size of one `signalfd` record.
const RECORD: usize = std::mem::size_of::<libc::signalfd_siginfo>();

/// `read()` of a signalfd (the caller checked): each timer signal read is
/// an acceptance, reported to utimer (its overrun latched, the signal of a
/// deleted or re-armed timer dropped from the buffer). A read left with
/// nothing reads again, or answers `EAGAIN` if the descriptor does not
/// block, as a signalfd with nothing pending does.
///
/// # Safety
/// As glibc's `read`: `buf` is writable for `n` bytes.
pub(crate) unsafe fn read_signalfd(
    fd: c_int,
    buf: *mut c_void,
    n: libc::size_t,
    read: impl Fn(c_int, *mut c_void, libc::size_t) -> libc::ssize_t,
) -> libc::ssize_t {
    loop {
        let r = read(fd, buf, n);
        let Ok(got) = usize::try_from(r) else {
            return r;
        };
        if got % RECORD != 0 {
            // Not what a signalfd returns: whatever this is, as it is.
            return r;
        }
        let records = got / RECORD;
        let mut kept = 0;
        for i in 0..records {
            // SAFETY: the kernel wrote `records` whole records at `buf`;
            // the record type has no invalid bit patterns, and unaligned
            // reads and writes are used as the caller's buffer may be
            // unaligned.
            let mut rec = unsafe { buf.cast::<libc::signalfd_siginfo>().add(i).read_unaligned() };
            if !signalfd_record_accepted(&mut rec) {
                continue;
            }
            // SAFETY: as above; `kept <= i`, inside what was read.
            unsafe {
                buf.cast::<libc::signalfd_siginfo>()
                    .add(kept)
                    .write_unaligned(rec)
            };
            kept += 1;
        }
        if kept > 0 || records == 0 {
            return (kept * RECORD) as libc::ssize_t;
        }
        // Only stale timer signals were read: the kernel would not have
        // delivered them.
        // SAFETY: fcntl reads the status flags of the caller's descriptor.
        let flags = unsafe { (real().fcntl)(fd, libc::F_GETFL, 0) };
        if flags >= 0 && flags & libc::O_NONBLOCK != 0 {
            return fail(libc::EAGAIN) as libc::ssize_t;
        }
    }
}

/// Reports one signalfd record's acceptance; false to drop it (stale).
fn signalfd_record_accepted(rec: &mut libc::signalfd_siginfo) -> bool {
    let signo = rec.ssi_signo as c_int;
    if rec.ssi_code != libc::SI_TIMER && !utimer::posix::timer_signals_waiting(signo) {
        return true;
    }
    let Some(u) = crate::global::started() else {
        return true;
    };
    let mut info = utimer::posix::siginfo_of_signalfd(rec);
    let _section = critical::enter();
    let r = utimer_capi::guard(None, || Ok(u.timer_signal_accepted(&mut info)));
    if r == Some(true) {
        utimer::posix::signalfd_update(&info, rec);
    }
    r != Some(false)
}

/// CLOCK_MONOTONIC in ns.
fn now_ns() -> u64 {
    // SAFETY: a zeroed timespec is valid; clock_gettime fills it.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: a live timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64
}
