//! The program's signal handlers, behind the library's trampoline:
//! `sigaction`, `signal`, `bsd_signal` and `sysv_signal` as glibc's, except
//! that a handler the program installs is reached through [`trampoline`],
//! which holds a signal that interrupts one of the library's calls until
//! the call returns (`critical.rs`).
//!
//! What the program sees is what it set: `sigaction`'s old action reports
//! the program's handler, flags and mask, never the trampoline. `SIG_DFL`
//! and `SIG_IGN` go to the kernel as they are. A handler asked for with
//! `SA_RESETHAND` is installed without it, and the trampoline restores
//! `SIG_DFL` itself just before calling the handler (so a held signal is
//! not turned into its default action on the way).
//!
//! # Locking
//!
//! `TABLE` (the program's actions) is written under `WRITE`, inside a
//! critical section, so a handler that calls `sigaction` on the same
//! thread is held until the writer is done; the trampoline reads the
//! handler and flags with atomic loads, and is never held up by a writer.

use crate::critical;
use crate::real::{fail, real};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Signals 1..=64.
const NSIG: usize = 65;

/// The program's action for one signal.
struct Action {
    /// `sa_sigaction` (a handler; `SIG_DFL`/`SIG_IGN` are not stored).
    handler: AtomicUsize,
    /// The program's `sa_flags`.
    flags: AtomicI32,
}

/// Whether the kernel discards `signo` under `action` whatever the mask:
/// `SIG_IGN`. (`SIG_DFL` of a signal whose default is to ignore it is
/// discarded only while unblocked: a blocked one is queued and taken when
/// unblocked, overrun latched then, so such a timer keeps queueing.)
fn discards(action: usize) -> bool {
    action == libc::SIG_IGN
}

/// The program's actions, and their masks (read only by `sigaction`'s old
/// action, under `WRITE`).
static TABLE: [Action; NSIG] = [const {
    Action {
        handler: AtomicUsize::new(0),
        flags: AtomicI32::new(0),
    }
}; NSIG];

/// Serializes writers of `TABLE`; holds the masks.
static WRITE: Mutex<[Option<libc::sigset_t>; NSIG]> = Mutex::new([None; NSIG]);

type SigInfoFn = extern "C" fn(c_int, *mut libc::siginfo_t, *mut c_void);
type PlainFn = extern "C" fn(c_int);

/// Faults the kernel raises for the instruction that caused them: never
/// held (returning would fault again).
fn is_fault(signo: c_int, info: *const libc::siginfo_t) -> bool {
    let fault = matches!(
        signo,
        libc::SIGSEGV | libc::SIGBUS | libc::SIGILL | libc::SIGFPE | libc::SIGTRAP | libc::SIGSYS
    );
    // SAFETY: the kernel hands the trampoline a live siginfo_t.
    fault && (info.is_null() || unsafe { (*info).si_code } > 0)
}

/// The handler the library installs for every handler of the program's.
extern "C" fn trampoline(signo: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    let saved = crate::real::errno();
    if critical::inside() && !is_fault(signo, info) {
        // SAFETY: `info` is the kernel's live siginfo_t.
        if !unsafe { critical::hold(signo, info) } {
            // SAFETY: as above.
            unsafe { critical::requeue(signo, info) };
        }
        crate::real::set_errno(saved);
        return;
    }
    let Some(action) = usize::try_from(signo).ok().and_then(|s| TABLE.get(s)) else {
        return;
    };
    let handler = action.handler.load(Ordering::Acquire);
    let flags = action.flags.load(Ordering::Acquire);
    if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        // The program changed its action after this signal was delivered:
        // give it the action it has now.
        // SAFETY: `info` is live; the signal comes back to the new action.
        unsafe { critical::requeue(signo, info) };
        return;
    }
    // The program's handler and the acceptance run as a handler's code: the
    // timer calls in them take the allocation-free lookup.
    utimer::posix::in_signal_handler(|| {
        // SAFETY: the kernel's live siginfo_t.
        if !unsafe { accepted(info) } {
            // A stale timer signal: the kernel would have dropped it.
            crate::real::set_errno(saved);
            return;
        }
        if flags & libc::SA_RESETHAND != 0 {
            reset_to_default(signo);
        }
        crate::sleep::handler_ran();
        crate::real::set_errno(saved);
        if flags & libc::SA_SIGINFO != 0 {
            // SAFETY: the program installed this value as an `sa_sigaction`.
            let f: SigInfoFn = unsafe { std::mem::transmute::<usize, SigInfoFn>(handler) };
            f(signo, info, ctx);
        } else {
            // SAFETY: the program installed this value as an `sa_handler`.
            let f: PlainFn = unsafe { std::mem::transmute::<usize, PlainFn>(handler) };
            f(signo);
        }
    });
}

/// `SA_RESETHAND` done by hand: the default action, for the kernel and in
/// the table.
fn reset_to_default(signo: c_int) {
    // SAFETY: a zeroed sigaction is SIG_DFL with an empty mask.
    let mut dfl: libc::sigaction = unsafe { std::mem::zeroed() };
    dfl.sa_sigaction = libc::SIG_DFL;
    // SAFETY: a live action for a valid signal.
    unsafe { (real().sigaction)(signo, &dfl, std::ptr::null_mut()) };
    if let Some(a) = usize::try_from(signo).ok().and_then(|s| TABLE.get(s)) {
        a.handler.store(libc::SIG_DFL, Ordering::Release);
    }
    DEFAULT.fetch_or(1u64 << (signo - 1), Ordering::AcqRel);
    mark(&HANDLED, signo, false);
}

/// `sigaction()`, with the program's handlers behind the trampoline.
///
/// # Safety
/// As `sigaction(2)`: `act` and `oldact` are NULL or valid.
pub(crate) unsafe fn sigaction(
    signo: c_int,
    act: *const libc::sigaction,
    oldact: *mut libc::sigaction,
) -> c_int {
    let idx = match usize::try_from(signo) {
        Ok(i) if (1..NSIG).contains(&i) && signo != libc::SIGKILL && signo != libc::SIGSTOP => i,
        // The kernel's answer (EINVAL), from the kernel.
        // SAFETY: the caller's pointers, passed on.
        _ => return unsafe { (real().sigaction)(signo, act, oldact) },
    };
    let _section = critical::enter();
    let mut masks = WRITE.lock().unwrap_or_else(|e| e.into_inner());
    let prev = (
        TABLE[idx].handler.load(Ordering::Acquire),
        TABLE[idx].flags.load(Ordering::Acquire),
        masks[idx],
    );
    // SAFETY: a zeroed sigaction is a valid value to be overwritten.
    let mut was: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: the caller's promise for `act`, read once.
    let new = unsafe { act.as_ref() }.copied();
    let r = match new {
        Some(a) if a.sa_sigaction != libc::SIG_DFL && a.sa_sigaction != libc::SIG_IGN => {
            let mut ours = a;
            ours.sa_sigaction = trampoline as *const () as usize;
            ours.sa_flags = (a.sa_flags | libc::SA_SIGINFO) & !libc::SA_RESETHAND;
            // The table first: a signal delivered as soon as the kernel has
            // the trampoline must find the handler.
            TABLE[idx].handler.store(a.sa_sigaction, Ordering::Release);
            TABLE[idx].flags.store(a.sa_flags, Ordering::Release);
            // SAFETY: live actions for a valid signal.
            let r = unsafe { (real().sigaction)(signo, &ours, &mut was) };
            if r == 0 {
                masks[idx] = Some(a.sa_mask);
                DEFAULT.fetch_and(!(1u64 << (signo - 1)), Ordering::AcqRel);
                mark(&HANDLED, signo, true);
                utimer::posix::signal_ignored(signo, false);
            } else {
                TABLE[idx].handler.store(prev.0, Ordering::Release);
                TABLE[idx].flags.store(prev.1, Ordering::Release);
            }
            r
        }
        Some(a) => {
            // SAFETY: as above.
            let r = unsafe { (real().sigaction)(signo, &a, &mut was) };
            if r == 0 {
                TABLE[idx].handler.store(a.sa_sigaction, Ordering::Release);
                TABLE[idx].flags.store(a.sa_flags, Ordering::Release);
                masks[idx] = None;
                let bit = 1u64 << (signo - 1);
                if a.sa_sigaction == libc::SIG_DFL {
                    DEFAULT.fetch_or(bit, Ordering::AcqRel);
                } else {
                    DEFAULT.fetch_and(!bit, Ordering::AcqRel);
                }
                mark(&HANDLED, signo, false);
                utimer::posix::signal_ignored(signo, discards(a.sa_sigaction));
            }
            r
        }
        // SAFETY: a live action to fill.
        None => unsafe { (real().sigaction)(signo, std::ptr::null(), &mut was) },
    };
    drop(masks);
    if r != 0 {
        return r;
    }
    if !oldact.is_null() {
        let mut old = was;
        if was.sa_sigaction == trampoline as *const () as usize {
            // The program's action, as it set it.
            old.sa_sigaction = prev.0;
            old.sa_flags = prev.1;
            if let Some(m) = prev.2 {
                old.sa_mask = m;
            }
        }
        // SAFETY: non-null, and the caller promised it writable.
        unsafe { oldact.write(old) };
    }
    0
}

/// `signal()` and its kin through [`sigaction`]: the handler with `flags`,
/// its own signal added to the mask unless `SA_NODEFER`. Returns the old
/// handler, or `SIG_ERR` with `errno`.
///
/// # Safety
/// `handler` is `SIG_DFL`, `SIG_IGN` or a handler function.
pub(crate) unsafe fn signal_with(signo: c_int, handler: usize, flags: c_int) -> usize {
    if !(1..NSIG as c_int).contains(&signo) {
        fail(libc::EINVAL);
        return libc::SIG_ERR;
    }
    // SAFETY: zeroed sigactions are valid; the set calls write only them.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = handler;
    act.sa_flags = flags;
    // SAFETY: a live set.
    unsafe {
        libc::sigemptyset(&mut act.sa_mask);
        if flags & libc::SA_NODEFER == 0 {
            libc::sigaddset(&mut act.sa_mask, signo);
        }
    }
    // SAFETY: as above.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: live actions.
    if unsafe { sigaction(signo, &act, &mut old) } != 0 {
        return libc::SIG_ERR;
    }
    old.sa_sigaction
}

/// Signals with a handler of the program's (bit `signo - 1`).
static HANDLED: AtomicU64 = AtomicU64::new(0);
/// Signals the program has waited for with the `sigwait` family.
static WAITED: AtomicU64 = AtomicU64::new(0);
/// Signals the program reads from a `signalfd`, whose reads the library
/// sees (`read` below).
static READ_FROM_FD: AtomicU64 = AtomicU64::new(0);

/// Signals whose action is `SIG_DFL` (bit `signo - 1`).
static DEFAULT: AtomicU64 = AtomicU64::new(0);

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
    let bit = 1u64 << (signo - 1);
    let seen = (HANDLED.load(Ordering::Acquire)
        | WAITED.load(Ordering::Acquire)
        | READ_FROM_FD.load(Ordering::Acquire))
        & bit
        != 0
        || !(default_unseen(signo) && DEFAULT.load(Ordering::Acquire) & bit != 0);
    utimer::posix::report_acceptance(signo, seen);
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
        let bit = 1u64 << (signo - 1);
        if was.sa_sigaction == libc::SIG_DFL {
            DEFAULT.fetch_or(bit, Ordering::AcqRel);
        }
        if discards(was.sa_sigaction) {
            utimer::posix::signal_ignored(signo, true);
        }
        update_reporting(signo);
    }
}

/// Marks `signo`'s bit in `set` and updates the reporting.
fn mark(set: &AtomicU64, signo: c_int, on: bool) {
    if !(1..NSIG as c_int).contains(&signo) {
        return;
    }
    let bit = 1u64 << (signo - 1);
    if on {
        set.fetch_or(bit, Ordering::AcqRel);
    } else {
        set.fetch_and(!bit, Ordering::AcqRel);
    }
    update_reporting(signo);
}

/// Marks every signal of `set` in `which`.
///
/// # Safety
/// `set` is NULL or a valid `sigset_t`.
unsafe fn mark_all(which: &AtomicU64, set: *const libc::sigset_t) {
    if set.is_null() {
        return;
    }
    for signo in 1..NSIG as c_int {
        // SAFETY: the caller's promise; sigismember only reads.
        if unsafe { libc::sigismember(set, signo) } == 1 {
            mark(which, signo, true);
        }
    }
}

/// The program accepted `info`: a utimer timer's signal gets the kernel's
/// overrun, and a stale one is dropped. Returns false to drop it.
///
/// # Safety
/// `info` is NULL or a writable `siginfo_t`.
unsafe fn accepted(info: *mut libc::siginfo_t) -> bool {
    // SAFETY: the caller's promise.
    let Some(i) = (unsafe { info.as_ref() }) else {
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
    // SAFETY: a live system and the caller's siginfo_t.
    unsafe { utimer_capi::utimer_timer_signal_accepted(u, info.cast()) != 0 }
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
    // SAFETY: a live system and a live siginfo_t.
    let r = unsafe {
        utimer_capi::utimer_timer_signal_accepted(u, (&mut info as *mut libc::siginfo_t).cast())
    };
    if r == 1 {
        utimer::posix::signalfd_update(&info, rec);
    }
    r != 0
}

/// CLOCK_MONOTONIC in ns.
fn now_ns() -> u64 {
    // SAFETY: a zeroed timespec is valid; clock_gettime fills it.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: a live timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64).saturating_mul(1_000_000_000) + ts.tv_nsec as u64
}
