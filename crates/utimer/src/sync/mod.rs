//! Synchronization primitives, with a loom shim.
//!
//! Every atomic the timer protocols use comes from here, so that building
//! with `RUSTFLAGS="--cfg loom"` swaps in [loom]'s model-checked versions and
//! the models in `tests/loom.rs` explore every interleaving of the real code.
//! (crossbeam-epoch and tokio keep their shims the same way.)
//!
//! [loom]: https://docs.rs/loom

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
