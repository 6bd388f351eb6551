//! The timer object in memory, and the only `unsafe` code that touches it.
//!
//! A timer is one heap allocation, `TimerCell<F>`: the type-erased header
//! [`RawTimer`] followed by the user's callback `F`. Bases hold thin
//! `NonNull<RawTimer>` pointers; the header's `vtable` knows how to call and
//! free the concrete `F` (the kernel gets the same effect with
//! `container_of()` in each callback).
//!
//! # Lifetime rules
//!
//! * The allocation is owned by exactly one [`Timer`](crate::Timer) handle.
//! * A base holds a pointer to it only while it is queued (in a wheel
//!   bucket or the due list) or while its callback runs (`running`).
//! * Dropping the handle detaches the timer under its base lock and waits
//!   until no callback runs, so after that no base can reach the memory and
//!   it is freed. A handle dropped *inside its own callback* cannot wait for
//!   itself: it marks the timer and the expiring thread frees it once the
//!   callback returns.

use super::state::{pack, IDX_NONE};
use crate::sync::{AtomicU32, AtomicU64};
use crate::system::Shared;
use std::cell::UnsafeCell;
use std::ptr::NonNull;
use std::sync::Arc;

/// The type-erased timer header. 32 bytes on 64-bit targets.
#[repr(C)]
pub(crate) struct RawTimer {
    /// `(expires << 10) | bucket`; see `state.rs`. Written under the base
    /// lock, read anywhere.
    pub(crate) expires_idx: AtomicU64,
    /// Base index and flags; see `state.rs`. Written under the base lock.
    pub(crate) state: AtomicU32,
    /// The timer's key in its base's wheel. Protected by the base lock;
    /// meaningful only while pending.
    key: UnsafeCell<u32>,
    vtable: &'static VTable,
    /// The system the timer belongs to (keeps its bases alive).
    pub(crate) system: Arc<Shared>,
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
    // SAFETY: `raw` points to the header of a live TimerCell<F> (vtable of F).
    let cell = unsafe { raw.cast::<TimerCell<F>>().as_ref() };
    (cell.f)(timer)
}

unsafe fn free_cell<F>(raw: NonNull<RawTimer>) {
    // SAFETY: `raw` came from Box::into_raw of a TimerCell<F>, and the caller
    // guarantees no other reference to it remains.
    drop(unsafe { Box::from_raw(raw.cast::<TimerCell<F>>().as_ptr()) });
}

impl RawTimer {
    /// Allocates a timer with callback `f`, not pending, homed on `base`.
    pub(crate) fn alloc<F>(system: Arc<Shared>, state: u32, f: F) -> NonNull<RawTimer>
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
        let cell = Box::new(TimerCell {
            raw: RawTimer {
                expires_idx: AtomicU64::new(pack(0, IDX_NONE)),
                state: AtomicU32::new(state),
                key: UnsafeCell::new(0),
                vtable: &<F as HasVTable>::VTABLE,
                system,
            },
            f,
        });
        NonNull::from(Box::leak(cell)).cast()
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

    /// Frees the allocation.
    ///
    /// # Safety
    /// `raw` must be live, detached from every base, not running, and never
    /// used again.
    pub(crate) unsafe fn free(raw: NonNull<RawTimer>) {
        // SAFETY: forwarded from the caller.
        unsafe { (raw.as_ref().vtable.free)(raw) }
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
