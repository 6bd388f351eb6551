//! Synchronization primitives, with a loom shim.
//!
//! Every atomic, every `UnsafeCell` and every thread-local that the timer
//! protocols use comes from here, so that building with
//! `RUSTFLAGS="--cfg loom"` swaps in [loom]'s model-checked versions and the
//! models in `tests/loom.rs` explore every interleaving of the real code,
//! including the accesses to lock-protected fields (loom's `UnsafeCell`
//! reports two unsynchronized accesses as a data race). crossbeam-epoch and
//! tokio keep their shims the same way.
//!
//! This is the bottom layer with `time/`: it imports nothing else of the
//! crate.
//!
//! [loom]: https://docs.rs/loom

pub(crate) mod alarm;
mod backoff;
mod biased;
pub(crate) mod futex;
pub(crate) mod parker;
pub(crate) mod seqcount;
mod spinlock;
pub(crate) mod state;
pub(crate) mod summary;
#[cfg(not(loom))]
pub(crate) mod thread;

pub(crate) use backoff::Backoff;
pub(crate) use biased::{BiasedLock, Held};
pub(crate) use spinlock::SpinLock;

/// The preemption bound of [`model`]: enough for the races the models
/// are written for, and a run of `ci/loom.sh` that ends in minutes.
#[cfg(loom)]
pub const PREEMPTIONS: usize = 3;

/// The branch limit of every model (`LOOM_MAX_BRANCHES` may raise it): an
/// execution longer than this fails as endless. Above loom's default of
/// 1,000 for the long executions of the expiry run and a hot-unplug.
#[cfg(loom)]
const MAX_BRANCHES: usize = 10_000;

/// Runs the loom model `f` with at most [`PREEMPTIONS`] preemptions per
/// execution. With [`model_bounded`], the one entry point of every model:
/// the crate's own and its integration tests' (through
/// `utimer::loom_model`). `LOOM_MAX_PREEMPTIONS`, if set, wins over the
/// bound; `LOOM_MAX_BRANCHES` may raise the branch limit.
#[cfg(loom)]
pub fn model(f: impl Fn() + Sync + Send + 'static) {
    model_bounded(PREEMPTIONS, f)
}

/// [`model`] with another preemption bound: a lower one for a model whose
/// long operations make the default too slow, a higher one for a short
/// model whose race needs more.
#[cfg(loom)]
pub fn model_bounded(preemptions: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound.get_or_insert(preemptions);
    b.max_branches = b.max_branches.max(MAX_BRANCHES);
    b.check(f);
}

#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

/// `std::cell::UnsafeCell` with loom's closure-based interface, so that
/// the same code compiles under both. Under loom, each access is checked
/// against every other access to the same cell for a data race.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    pub(crate) const fn new(value: T) -> Self {
        UnsafeCell(std::cell::UnsafeCell::new(value))
    }

    /// Calls `f` with a shared pointer to the value.
    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Calls `f` with a mutable pointer to the value.
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// Declares thread-locals through the shim: `std::thread_local!` (with a
/// `const` initializer), or loom's under `cfg(loom)`, whose values are
/// per model thread.
macro_rules! shim_thread_local {
    ($($(#[$attr:meta])* static $name:ident: $t:ty = $init:expr;)+) => {
        #[cfg(not(loom))]
        std::thread_local! { $($(#[$attr])* static $name: $t = const { $init };)+ }
        #[cfg(loom)]
        loom::thread_local! { $($(#[$attr])* static $name: $t = $init;)+ }
    };
}
pub(crate) use shim_thread_local as thread_local;

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize,
};
#[cfg(not(loom))]
pub(crate) use std::thread::yield_now;

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize,
};
#[cfg(loom)]
pub(crate) use loom::thread::yield_now;

/// A busy-wait hint; under loom a yield, so that the model makes progress.
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(not(loom))]
    std::hint::spin_loop();
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// Reads a pointer that another thread is about to change, in a wait loop.
/// The pointer is never null. A plain acquire load; under loom a
/// compare-exchange expecting null, which fails and so only reads: a
/// read-modify-write always sees the latest value (see
/// `SpinLock::lock_contended`), and a failed one writes nothing. (One that
/// wrote the value back, as `fetch_update` does, could land after the
/// other thread's plain store in loom's modification order, which loom
/// keeps partial: the waiter then read its own stale write forever.)
#[inline]
pub(crate) fn load_for_spin<T>(a: &AtomicPtr<T>) -> *mut T {
    use std::sync::atomic::Ordering::Acquire;
    #[cfg(not(loom))]
    return a.load(Acquire);
    #[cfg(loom)]
    return match a.compare_exchange(std::ptr::null_mut(), std::ptr::null_mut(), Acquire, Acquire) {
        Ok(p) | Err(p) => p,
    };
}

/// Asks the CPU to bring `*p` into the cache (a hint: no effect on
/// correctness, never faults, whatever the address).
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: PREFETCHT0 does not access memory architecturally; it cannot
    // fault or change any value, for any address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    };
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let _ = p;
}

/// [`prefetch`]es every cache line of `*r`.
#[inline(always)]
pub(crate) fn prefetch_object<T>(r: &T) {
    let p: *const u8 = (r as *const T).cast();
    for offset in (0..std::mem::size_of::<T>()).step_by(64) {
        prefetch(p.wrapping_add(offset));
    }
}
