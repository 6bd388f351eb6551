//! The base lock, biased towards its owner: the worker's own thread takes
//! and releases it without an atomic read-modify-write; any other thread
//! takes the spinlock inside it, after revoking the bias if it is on.
//!
//! # Why
//!
//! The pull model queues every timer on the arming thread's own worker,
//! so nearly every lock of a base is taken by the worker that owns it. A
//! spinlock costs that thread two atomic read-modify-writes per critical
//! section (lock and, for a futex mutex, unlock; ours unlocks with a plain
//! store but locks with an exchange), a third of an arm + cancel. The
//! remote side is rare: another thread arming or cancelling one of this
//! worker's timers, the pull model's remote expiry of an idle worker, a
//! stall.
//!
//! # The protocol (an asymmetric Dekker lock)
//!
//! ```text
//!   owner (biased)                      remote (any other thread)
//!   --------------                      -------------------------
//!   owner_in = 1        (plain)         spin.lock()
//!   compiler fence      (light)         if biased:
//!   if biased:          (plain)             biased = 0          (plain)
//!       critical section                    membarrier()        (heavy)
//!       owner_in = 0    (release)           wait while owner_in (acquire)
//!   else:                               critical section
//!       owner_in = 0                    spin.unlock()
//!       spin.lock() ... (as remote)
//! ```
//!
//! The owner's fast path is two plain stores and a load. What makes it
//! sound without a CPU fence on the owner's side is the remote's
//! `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`: it runs a full memory
//! barrier on every CPU that is running a thread of this process (a CPU
//! not running one passes through the scheduler, a barrier too). So
//! either the owner's `owner_in = 1` is visible to the remote's read after
//! the barrier (the remote waits for the owner to leave), or the owner's
//! read of `biased` comes after the barrier and sees 0 (the owner backs
//! off to the spinlock, which the remote holds). Never both in.
//!
//! Revoking costs a system call (11 µs measured on the 2-core development
//! VM, where it interrupts the other CPU), so the bias adapts to the
//! traffic, and revocations get rarer the more often they happen:
//!
//! * A revocation turns the bias off and doubles the owner's *window*
//!   (from 64 up to 2^20 critical sections).
//! * While the bias is off, the owner counts its own critical sections in
//!   a row with no other thread's in between; when the count reaches the
//!   window, it turns the bias on again, under the spinlock.
//!
//! A worker whose timers only it touches (an event loop) runs biased; one
//! that other threads use steadily (a runtime worker that application
//! threads arm timers on, an idle worker whose movable timers the pull
//! model expires remotely) stops re-biasing after a few revocations,
//! and its lock is the spinlock it always was. Between the two, at most
//! one revocation per window of the owner's own work, and the window
//! doubles each time. Without `membarrier` (old kernels, seccomp), no bias
//! is ever set: everybody takes the spinlock, as before. Nor is one set
//! before the process's registration has completed, which no thread waits
//! for (`prepare_bias` says why).
//!
//! # Ownership
//!
//! A base has at most one owner, named by a per-thread token (the address
//! of a thread-local, unique among live threads): the thread that
//! registered as its worker ([`BiasedLock::claim`] succeeds for one thread
//! only; a second registration of the same worker simply gets no fast
//! path). The owner gives it up when it unregisters
//! ([`BiasedLock::release_ownership`]).
//!
//! # Loom
//!
//! Loom has no asymmetric fences; its model treats the owner's compiler
//! fence and the membarrier as `SeqCst` fences on both sides, which is the
//! guarantee the pair gives (`biased/tests.rs`).

use super::{thread_local, AtomicBool, AtomicU32, AtomicUsize, Backoff, SpinLock};
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

/// How a [`BiasedLock`] is held; give it back to [`BiasedLock::unlock`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[must_use]
pub(crate) enum Held {
    /// By its owner, without the spinlock.
    Biased,
    /// Through the spinlock.
    Shared,
}

pub(crate) struct BiasedLock {
    spin: SpinLock,
    /// The owner's token ([`token`], 0 for none), with [`BIASED`] set while
    /// the owner may enter without the spinlock. Written only under the
    /// spinlock; read by the owner without it. One word, so that a lock
    /// with no owner costs one load and a branch over the spinlock.
    word: AtomicUsize,
    /// The owner is inside a biased critical section.
    owner_in: AtomicBool,
    /// Critical sections of other threads on the spinlock, while there is
    /// an owner. Written under the spinlock (a load and a store).
    remote: AtomicU32,
    /// The owner's bookkeeping, touched only by the owner under the
    /// spinlock: `remote` as it last saw it, its own critical sections
    /// since, and how many it needs to turn the bias back on.
    seen: AtomicU32,
    quiet: AtomicU32,
    window: AtomicU32,
}

/// `BiasedLock::word`: the bias is on. Tokens are 8-aligned: the bit is
/// free.
const BIASED: usize = 1;

/// The owner's first window.
#[cfg(not(loom))]
const INITIAL_WINDOW: u32 = 64;
/// (Small under loom, so that models reach the re-bias.)
#[cfg(loom)]
const INITIAL_WINDOW: u32 = 1;
/// The largest window.
const MAX_WINDOW: u32 = 1 << 20;

thread_local! {
    /// Its address is this thread's token (8-aligned).
    static TOKEN: u64 = 0;
}

/// This thread's token: nonzero, 8-aligned, unique among live threads.
#[inline(always)]
pub(crate) fn token() -> usize {
    TOKEN.with(|t| t as *const u64 as usize)
}

impl BiasedLock {
    /// A lock with no owner. Starts the process's `membarrier`
    /// registration if nobody has ([`prepare_bias`]): bases are made when a
    /// system is built, before its workers claim them.
    pub(crate) fn new() -> Self {
        prepare_bias();
        BiasedLock {
            spin: SpinLock::new(),
            word: AtomicUsize::new(0),
            owner_in: AtomicBool::new(false),
            remote: AtomicU32::new(0),
            seen: AtomicU32::new(0),
            quiet: AtomicU32::new(0),
            window: AtomicU32::new(INITIAL_WINDOW),
        }
    }

    /// Takes the lock: without a read-modify-write on the owner's thread
    /// while biased, else through the spinlock.
    #[inline]
    pub(crate) fn lock(&self) -> Held {
        let w = self.word.load(Relaxed);
        if w & BIASED != 0 && w == token() | BIASED {
            self.owner_in.store(true, Relaxed);
            light_barrier();
            if self.word.load(Relaxed) & BIASED != 0 {
                return Held::Biased;
            }
            // Revoked meanwhile: leave, and queue on the spinlock.
            self.owner_in.store(false, Release);
        }
        self.lock_shared()
    }

    /// The spinlock; then, if the lock has an owner, the revocation and
    /// the bookkeeping that decides when the owner turns the bias on again.
    #[inline]
    fn lock_shared(&self) -> Held {
        self.spin.lock();
        let w = self.word.load(Relaxed);
        if w != 0 {
            self.owned_section(w);
        }
        Held::Shared
    }

    /// Under the spinlock, on a lock with an owner (`w`, the word).
    #[inline(never)]
    fn owned_section(&self, w: usize) {
        if w & BIASED != 0 {
            self.revoke(w & !BIASED);
        }
        if w & !BIASED == token() {
            self.owner_section(w & !BIASED);
        } else {
            let r = self.remote.load(Relaxed);
            self.remote.store(r.wrapping_add(1), Relaxed);
        }
    }

    /// Under the spinlock: turns the bias off, doubles the owner's window,
    /// and waits for the owner to leave a critical section it may be in.
    #[cold]
    fn revoke(&self, owner: usize) {
        self.word.store(owner, Relaxed);
        let w = self.window.load(Relaxed);
        self.window.store((w * 2).min(MAX_WINDOW), Relaxed);
        heavy_barrier();
        let mut backoff = Backoff::new();
        while self.owner_in.load(Acquire) {
            backoff.snooze();
        }
    }

    /// The owner, under the spinlock: one more critical section of its
    /// own; the bias goes back on after a window of them with no other
    /// thread's in between.
    #[inline]
    fn owner_section(&self, me: usize) {
        let r = self.remote.load(Relaxed);
        if r != self.seen.load(Relaxed) {
            self.seen.store(r, Relaxed);
            self.quiet.store(0, Relaxed);
            return;
        }
        let q = self.quiet.load(Relaxed) + 1;
        if q < self.window.load(Relaxed) {
            self.quiet.store(q, Relaxed);
            return;
        }
        self.quiet.store(0, Relaxed);
        if membarrier_ready() {
            // Nobody else is inside (we hold the spinlock); whoever takes
            // it next sees the flag and revokes.
            self.word.store(me | BIASED, Relaxed);
        }
    }

    /// Releases the lock as it was taken.
    #[inline]
    pub(crate) fn unlock(&self, held: Held) {
        match held {
            Held::Biased => self.owner_in.store(false, Release),
            Held::Shared => self.spin.unlock(),
        }
    }

    /// Makes this thread the owner if there is none, with the bias on.
    /// Returns whether it is the owner now.
    pub(crate) fn claim(&self) -> bool {
        let me = token();
        self.spin.lock();
        let owner = self.word.load(Relaxed) & !BIASED;
        let ok = owner == 0 || owner == me;
        if ok {
            let bias = if membarrier_ready() { BIASED } else { 0 };
            self.word.store(me | bias, Relaxed);
            self.window.store(INITIAL_WINDOW, Relaxed);
            self.quiet.store(0, Relaxed);
            self.seen.store(self.remote.load(Relaxed), Relaxed);
        }
        self.spin.unlock();
        ok
    }

    /// The owner gives the lock up (it unregisters): no bias, no owner.
    pub(crate) fn release_ownership(&self) {
        if self.word.load(Relaxed) & !BIASED != token() {
            return;
        }
        // The owner is not inside: no barrier needed.
        self.spin.lock();
        self.word.store(0, Relaxed);
        self.spin.unlock();
    }

    /// Whether the bias is on (for tests and statistics).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn is_biased(&self) -> bool {
        self.word.load(Relaxed) & BIASED != 0
    }
}

/// The owner's half of the barrier pair: only keeps the compiler from
/// moving the load of `biased` before the store of `owner_in`.
#[inline(always)]
fn light_barrier() {
    #[cfg(not(loom))]
    std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
    #[cfg(loom)]
    loom::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

/// The remote's half: a full barrier on every CPU running this process.
fn heavy_barrier() {
    #[cfg(not(loom))]
    membarrier::private_expedited();
    #[cfg(loom)]
    loom::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

/// Whether the heavy barrier works here: the process's registration has
/// completed ([`prepare_bias`] starts it). One load; never waits.
fn membarrier_ready() -> bool {
    #[cfg(not(loom))]
    return membarrier::ready();
    #[cfg(loom)]
    return true;
}

/// Starts the process's `membarrier` registration, once, without making
/// anyone wait for it: locks run unbiased (on their spinlock) until it has
/// completed, then bias as usual. Called by [`BiasedLock::new`], that is
/// where a system is built, under no lock.
///
/// # Why not register on a worker's first claim
///
/// Registering a process that already has several threads waits for an
/// RCU grace period in the kernel: 12–15 ms measured here, against 1.5 µs
/// while the process has one thread. A worker thread that registered on
/// its first `claim` would spend those milliseconds before its first look
/// at its timers, so every timer armed in the first milliseconds of a
/// process's first system would fire that late. So a single-threaded
/// process registers at once (the fast case), and any other registers on
/// a short-lived thread of its own, while the workers run.
fn prepare_bias() {
    #[cfg(not(loom))]
    membarrier::start();
}

#[cfg(not(loom))]
mod membarrier {
    use std::sync::atomic::AtomicU8;
    use std::sync::atomic::Ordering::{AcqRel, Acquire, Release};

    const MEMBARRIER_CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
    const MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

    /// `STATE`: nobody asked yet.
    const UNKNOWN: u8 = 0;
    /// `STATE`: a registration is under way.
    const REGISTERING: u8 = 1;
    /// `STATE`: registered; private expedited barriers work.
    const READY: u8 = 2;
    /// `STATE`: not available (old kernel, seccomp, Miri): never bias.
    const UNAVAILABLE: u8 = 3;

    /// Moves only forward: `UNKNOWN` → `REGISTERING` → `READY` or
    /// `UNAVAILABLE`. `READY` is stored (release) after the system call
    /// returned, so a thread that loads it (acquire) and then sets a bias
    /// knows the registration is complete before any barrier it causes.
    static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);

    /// Whether the registration has completed.
    #[inline]
    pub(super) fn ready() -> bool {
        STATE.load(Acquire) == READY
    }

    /// Starts the registration if nobody has (see `prepare_bias`).
    pub(super) fn start() {
        if STATE.load(Acquire) != UNKNOWN
            || STATE
                .compare_exchange(UNKNOWN, REGISTERING, AcqRel, Acquire)
                .is_err()
        {
            return;
        }
        // Miri cannot run the system call: no bias there.
        if cfg!(miri) {
            STATE.store(UNAVAILABLE, Release);
            return;
        }
        if single_threaded() {
            register();
            return;
        }
        let spawned = crate::sync::thread::spawn_masked("utimer-membarrier".into(), register);
        if spawned.is_err() {
            register();
        }
    }

    /// Registers and publishes the outcome.
    fn register() {
        // SAFETY: membarrier with a command and flags 0 takes no pointers
        // and changes no memory of ours.
        let r = unsafe {
            libc::syscall(
                libc::SYS_membarrier,
                MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
                0,
            )
        };
        STATE.store(if r == 0 { READY } else { UNAVAILABLE }, Release);
    }

    /// Whether this process has one thread (`Threads:` of
    /// `/proc/self/status`); `false` when that cannot be read.
    fn single_threaded() -> bool {
        std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .is_some_and(|n| n.trim() == "1")
        })
    }

    /// Waits until a started registration has an outcome (tests).
    #[cfg(test)]
    pub(super) fn settle() {
        start();
        while STATE.load(Acquire) == REGISTERING {
            std::thread::yield_now();
        }
    }

    /// A full memory barrier on every CPU running a thread of this process.
    pub(super) fn private_expedited() {
        // Only called with a bias set, which only `ready()` allows.
        debug_assert!(ready());
        // SAFETY: as above.
        let r = unsafe { libc::syscall(libc::SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) };
        // Registered, so it cannot fail; if it ever did, the owner might be
        // inside: there is no safe way on.
        assert_eq!(r, 0, "membarrier failed after registration");
    }
}

#[cfg(test)]
mod tests;
