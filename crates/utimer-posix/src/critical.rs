//! Critical sections: a signal that lands on a thread while it is inside
//! one of the library's calls is handed to the program's handler when the
//! call returns, not in the middle of it.
//!
//! # Why
//!
//! POSIX makes `timer_settime`, `timer_gettime` and `timer_getoverrun`
//! async-signal-safe, and programs rely on it (stress-ng's timer stressor
//! calls two of them from its handler). The kernel gets this for free: a
//! signal is delivered on the way back from a system call, never while the
//! call holds a timer's lock. In user space a handler can interrupt a call
//! between taking a timer's lock and releasing it; if it then calls into
//! the same timer it waits for a lock that its own thread holds, forever.
//!
//! # How
//!
//! Each exported call runs inside a [`Section`]: a per-thread depth counter
//! (static TLS, no system call). The library installs its own trampoline
//! for every handler the program sets (`trampoline.rs`). When the trampoline
//! runs while the depth is non-zero, it does not call the program's
//! handler: it saves the `siginfo_t` in a per-thread slot and returns, and
//! the interrupted call goes on and releases its locks. When the outermost
//! section ends and a signal was saved, the thread blocks every signal,
//! queues each saved one again to itself (`rt_tgsigqueueinfo` with the
//! same `siginfo_t`: a process may queue any code to itself), and restores
//! its mask: the kernel then delivers them on that very return, with a
//! fresh context, to the trampoline, which now calls the program's handler.
//! The program sees its signal at the end of the call that it interrupted,
//! as it would from the kernel.
//!
//! # Ground rules
//!
//! * Only the owning thread touches its counter and slots; a signal handler
//!   on that thread is the only interleaving. The trampoline writes a slot
//!   and then raises the count; the delivery reads them with every signal
//!   blocked, so the two never overlap.
//! * Faults (`SIGSEGV`, `SIGBUS`, `SIGILL`, `SIGFPE`, `SIGTRAP`, `SIGSYS`
//!   raised by the kernel for the instruction that caused them) are never
//!   held: returning would run the instruction again.
//! * A standard signal already held is not held twice: the kernel keeps
//!   one pending instance of a standard signal, and merges the rest. With
//!   every slot taken by real-time signals, a further one is queued again
//!   at once and comes back after the trampoline returns.

use std::cell::{Cell, UnsafeCell};
use std::mem::MaybeUninit;
use std::sync::atomic::{compiler_fence, Ordering::SeqCst};

/// Signals held per thread before they are queued again at once.
const SLOTS: usize = 32;

/// One thread's held signals.
struct Held {
    count: Cell<usize>,
    signo: [Cell<i32>; SLOTS],
    info: UnsafeCell<[MaybeUninit<libc::siginfo_t>; SLOTS]>,
}

thread_local! {
    /// How many of the library's calls the thread is inside.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    static HELD: Held = const {
        Held {
            count: Cell::new(0),
            signo: [const { Cell::new(0) }; SLOTS],
            info: UnsafeCell::new([const { MaybeUninit::uninit() }; SLOTS]),
        }
    };
}

/// The thread is inside one of the library's calls while this lives.
#[must_use]
pub(crate) struct Section(());

/// Enters a section.
pub(crate) fn enter() -> Section {
    DEPTH.with(|d| d.set(d.get() + 1));
    // The handler that interrupts what follows must see the new depth.
    compiler_fence(SeqCst);
    Section(())
}

impl Drop for Section {
    fn drop(&mut self) {
        compiler_fence(SeqCst);
        let depth = DEPTH.with(|d| {
            let v = d.get() - 1;
            d.set(v);
            v
        });
        compiler_fence(SeqCst);
        if depth == 0 && HELD.with(|h| h.count.get()) > 0 {
            deliver_held();
        }
    }
}

/// Whether the thread is inside one of the library's calls (the
/// trampoline asks).
pub(crate) fn inside() -> bool {
    DEPTH.with(Cell::get) > 0
}

/// Whether a signal is held on this thread (a section ends soon and
/// delivers it).
pub(crate) fn holds() -> bool {
    HELD.with(|h| h.count.get()) > 0
}

/// Holds signal `signo` with `info` until the section ends. Returns false
/// when every slot is taken (then queue it again at once).
///
/// # Safety
/// `info` points to a live `siginfo_t` (the trampoline's).
pub(crate) unsafe fn hold(signo: i32, info: *const libc::siginfo_t) -> bool {
    HELD.with(|h| {
        let n = h.count.get();
        if signo < libc::SIGRTMIN() && h.signo[..n].iter().any(|s| s.get() == signo) {
            // Merged, as the kernel merges a pending standard signal.
            return true;
        }
        if n == SLOTS {
            return false;
        }
        h.signo[n].set(signo);
        // SAFETY: slot `n` is not counted yet, so no reader looks at it;
        // only this thread writes it; `info` is live (the caller's promise).
        unsafe { (*h.info.get())[n].write(info.read()) };
        compiler_fence(SeqCst);
        h.count.set(n + 1);
        true
    })
}

/// Queues signal `signo` with `info` to the calling thread.
///
/// # Safety
/// `info` points to a live `siginfo_t`.
pub(crate) unsafe fn requeue(signo: i32, info: *const libc::siginfo_t) {
    // SAFETY: getpid and gettid take nothing; rt_tgsigqueueinfo reads a
    // 128-byte siginfo_t from a live pointer (the caller's promise). A
    // process may queue any si_code to itself.
    unsafe {
        libc::syscall(
            libc::SYS_rt_tgsigqueueinfo,
            libc::getpid(),
            libc::gettid(),
            signo,
            info,
        );
    }
}

/// Queues the held signals again, with every signal blocked meanwhile; the
/// kernel delivers them when the old mask comes back.
fn deliver_held() {
    // SAFETY: zeroed sigset_t values are valid; the mask calls write only
    // the sets given; the slots below the count were written by `hold`
    // and nothing else runs on this thread while every signal is blocked.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        HELD.with(|h| {
            let n = h.count.get();
            let info = &*h.info.get();
            for (i, slot) in info.iter().enumerate().take(n) {
                requeue(h.signo[i].get(), slot.as_ptr());
            }
            h.count.set(0);
        });
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    }
}
