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

use crate::accept;
use crate::critical;
use crate::real::{fail, real};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Signals 1..=64.
pub(crate) const NSIG: usize = 65;

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
pub(crate) fn discards(action: usize) -> bool {
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
        if !unsafe { accept::accepted(info) } {
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
    accept::action_set(signo, libc::SIG_DFL);
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
                accept::action_set(signo, a.sa_sigaction);
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
                accept::action_set(signo, a.sa_sigaction);
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
