//! The timer object in memory, and the only `unsafe` code that touches it.
//!
//! A timer is one heap allocation, `TimerCell<F>`: the type-erased header
//! [`RawTimer`] followed by the user's callback `F`. Bases hold thin
//! `NonNull<RawTimer>` pointers; the header's `vtable` knows how to call and
//! free the concrete `F` (the kernel gets the same effect with
//! `container_of()` in each callback). Such pointers are always the
//! allocation's own (from `Box::leak`), never re-derived from a
//! `&RawTimer`, so casting them back to the whole cell is sound.
//!
//! # Lifetime rules
//!
//! * The allocation is owned by exactly one [`Timer`](crate::Timer) handle.
//! * The timer owns one strong count of its system (`Arc<Shared>`), so the
//!   base its `base` word points to outlives it. The count is taken in
//!   [`RawTimer::alloc`] and given back in [`RawTimer::free`].
//! * A base holds a pointer to the timer only while it is queued (in a wheel
//!   bucket or the due list) or while its callback runs (`running`).
//! * Dropping the handle detaches the timer under its base lock and waits
//!   until no callback runs, so after that no base can reach the memory and
//!   it is freed. A handle dropped *inside its own callback* cannot wait for
//!   itself: it marks the timer and the expiring thread frees it once the
//!   callback returns.

use super::state::{pack, IDX_NONE, MIGRATING};
use crate::base::Base;
use crate::sync::{AtomicPtr, AtomicU32, AtomicU64};
use crate::system::Shared;
use std::cell::UnsafeCell;
use std::ptr::NonNull;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// The type-erased timer header. 32 bytes on 64-bit targets.
#[repr(C)]
pub(crate) struct RawTimer {
    /// `(expires << 10) | bucket`; see `state.rs`. Written under the base
    /// lock, read anywhere.
    pub(crate) expires_idx: AtomicU64,
    /// The base, with `MIGRATING` in the address's bit 0; see `state.rs`.
    /// Written under the base lock, read anywhere.
    pub(crate) base: AtomicPtr<Base>,
    /// `PINNED`, `DEFERRABLE`; see `state.rs`.
    pub(crate) flags: AtomicU32,
    /// The timer's key in its base's wheel. Protected by the base lock;
    /// meaningful only while pending.
    key: UnsafeCell<u32>,
    vtable: &'static VTable,
}

struct VTable {
    call: unsafe fn(NonNull<RawTimer>, &crate::Timer),
    free: unsafe fn(NonNull<RawTimer>),
}

#[repr(C)]
struct TimerCell<F> {
    raw: RawTimer,
    f: F,
}

// SAFETY: all shared mutation of a RawTimer goes through atomics, or through
// `key`, which is only accessed under the lock of the base the timer is on.
unsafe impl Sync for RawTimer {}
// SAFETY: the header holds no thread-bound data; the callback is Send + Sync.
unsafe impl Send for RawTimer {}

unsafe fn call_cell<F: Fn(&crate::Timer)>(raw: NonNull<RawTimer>, timer: &crate::Timer) {
    // SAFETY: `raw` is the allocation pointer of a live TimerCell<F> (this
    // vtable belongs to F).
    let cell = unsafe { raw.cast::<TimerCell<F>>().as_ref() };
    (cell.f)(timer)
}

unsafe fn free_cell<F>(raw: NonNull<RawTimer>) {
    // SAFETY: `raw` came from Box::leak of a TimerCell<F>, and the caller
    // guarantees no other reference to it remains.
    drop(unsafe { Box::from_raw(raw.cast::<TimerCell<F>>().as_ptr()) });
}

impl RawTimer {
    /// Allocates a timer with callback `f`, not pending, homed on `base` (a
    /// base of `system`).
    pub(crate) fn alloc<F>(system: &Arc<Shared>, base: &Base, flags: u32, f: F) -> NonNull<RawTimer>
    where
        F: Fn(&crate::Timer) + Send + Sync + 'static,
    {
        trait HasVTable {
            const VTABLE: VTable;
        }
        impl<F: Fn(&crate::Timer)> HasVTable for F {
            const VTABLE: VTable = VTable {
                call: call_cell::<F>,
                free: free_cell::<F>,
            };
        }
        debug_assert!(std::ptr::eq(base.shared, Arc::as_ptr(system)));
        // The timer's strong count, given back in `free`.
        let _ = Arc::into_raw(system.clone());
        let cell = Box::new(TimerCell {
            raw: RawTimer {
                expires_idx: AtomicU64::new(pack(0, IDX_NONE)),
                base: AtomicPtr::new(base as *const Base as *mut Base),
                flags: AtomicU32::new(flags),
                key: UnsafeCell::new(0),
                vtable: &<F as HasVTable>::VTABLE,
            },
            f,
        });
        NonNull::from(Box::leak(cell)).cast()
    }

    /// The base named by a `base` word (the `MIGRATING` tag ignored).
    #[inline]
    pub(crate) fn base_of(&self, word: *mut Base) -> &Base {
        // SAFETY: a `base` word always holds the address of one of the
        // system's bases (tag aside), which live as long as the system, and
        // the timer holds a strong count of its system (lifetime rules above).
        unsafe { &*word.map_addr(|a| a & !MIGRATING) }
    }

    /// The base the timer is on (or, while migrating, was on).
    #[inline]
    pub(crate) fn base(&self) -> &Base {
        self.base_of(self.base.load(Relaxed))
    }

    /// The system the timer belongs to.
    #[inline]
    pub(crate) fn system(&self) -> &Shared {
        // SAFETY: `base.shared` points to the system owning that base, which
        // the timer keeps alive.
        unsafe { &*self.base().shared }
    }

    /// Runs the callback.
    ///
    /// # Safety
    /// `raw` must be live, and `timer` must be a handle for it.
    #[inline]
    pub(crate) unsafe fn call(raw: NonNull<RawTimer>, timer: &crate::Timer) {
        // SAFETY: forwarded from the caller.
        unsafe { (raw.as_ref().vtable.call)(raw, timer) }
    }

    /// Frees the allocation and gives back the timer's count of its system.
    ///
    /// # Safety
    /// `raw` must be live, detached from every base, not running, and never
    /// used again.
    pub(crate) unsafe fn free(raw: NonNull<RawTimer>) {
        // SAFETY: the caller guarantees `raw` is live.
        let system = unsafe { raw.as_ref() }.base().shared;
        // SAFETY: forwarded from the caller.
        unsafe { (raw.as_ref().vtable.free)(raw) };
        // SAFETY: `alloc` leaked one strong count of this Arc for the timer;
        // nothing of the timer refers to the system any more.
        unsafe { Arc::decrement_strong_count(system) };
    }

    /// The wheel key.
    ///
    /// # Safety
    /// The caller holds the lock of the base this timer is on.
    #[inline]
    pub(crate) unsafe fn key(&self) -> u32 {
        // SAFETY: the base lock serializes every access to `key`.
        unsafe { *self.key.get() }
    }

    /// Records the wheel key.
    ///
    /// # Safety
    /// The caller holds the lock of the base this timer is on.
    #[inline]
    pub(crate) unsafe fn set_key(&self, key: u32) {
        // SAFETY: the base lock serializes every access to `key`.
        unsafe { *self.key.get() = key }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    #[test]
    fn header_is_32_bytes() {
        assert_eq!(std::mem::size_of::<super::RawTimer>(), 32);
    }
}
