//! Synchronization primitives, with a loom shim.
//!
//! Every atomic the timer protocols use comes from here, so that building
//! with `RUSTFLAGS="--cfg loom"` swaps in [loom]'s model-checked versions and
//! the models in `tests/loom.rs` explore every interleaving of the real code.
//! (crossbeam-epoch and tokio keep their shims the same way.)
//!
//! [loom]: https://docs.rs/loom

pub(crate) mod futex;
pub(crate) mod parker;
mod spinlock;

pub(crate) use spinlock::SpinLock;

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64};
#[cfg(not(loom))]
pub(crate) use std::thread::yield_now;

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64};
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
/// A plain acquire load; under loom a read-modify-write, which always sees
/// the latest value (see `SpinLock::lock_contended`).
#[inline]
pub(crate) fn load_for_spin<T>(a: &AtomicPtr<T>) -> *mut T {
    use std::sync::atomic::Ordering::Acquire;
    #[cfg(not(loom))]
    return a.load(Acquire);
    #[cfg(loom)]
    return a.fetch_update(Acquire, Acquire, Some).unwrap();
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
