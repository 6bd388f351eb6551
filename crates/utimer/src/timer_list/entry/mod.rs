//! The timer entry: what a base queues, and the only state of a timer that
//! other threads read without a lock.
//!
//! This is the leaf of the timer layers: it imports `sync/` and the wheel's
//! constants, and nothing that uses it. A timer is one heap allocation whose
//! head is a [`RawTimer`]: the state word ([`TimerState`]), the link to its
//! base, its wheel key, and one word holding its flags and the number of
//! its vtable (`vtables.rs`): 24 bytes. The callback follows the header;
//! only the layer that created the timer (`timer/`) knows its type, and
//! reaches it through the vtable (the kernel gets the same effect with
//! `container_of()` in each callback).
//!
//! # Lifetime rules
//!
//! * The allocation is owned by exactly one [`Timer`](crate::Timer) handle,
//!   and keeps its base table alive (one strong count, taken at creation
//!   and given back when it is freed; see `base/table.rs`).
//! * A base *dereferences* a pointer to the timer only while it is queued
//!   (in a wheel bucket or the due list) or while its callback runs
//!   (`running`). A wheel may also keep the pointer of a cancelled timer
//!   as its ghost (`wheel/ghost.rs`), which may outlive the timer: a ghost
//!   is only ever compared with another timer's pointer (equal means that
//!   timer may take the entry back, whatever timer the memory held
//!   before) and dropped, never dereferenced.
//! * Pointers to a timer are always the allocation's own (from `Box::leak`),
//!   never re-derived from a `&RawTimer`, so casting one back to the whole
//!   allocation is sound. [`TimerRef`] carries such a pointer together with
//!   the proof that it is live.
//! * The memory is freed by whoever is last: the handle's `Drop` when no
//!   callback of the timer runs, or else the thread running the callback,
//!   once it returns ([`DROPPED`]). Dropping never waits.
//!
//! # Who may touch what
//!
//! * `state`, `base` and `key` are written only by a thread holding the
//!   lock of the base named in `base`; writes take a [`Locked`] proof.
//!   `MIGRATING` is set and cleared only while moving between two bases,
//!   holding the old, then the new base's lock. A pending timer's `state`
//!   stays pending while it moves (it is off both wheels, and `key` means
//!   nothing then); the enqueue on the new base rewrites it. Lock-free
//!   readers thus never take a moving timer for idle.
//! * `state` and `base` may be read by anyone at any time; `key` only
//!   under the lock.
//! * `meta` may be read by anyone at any time. It holds the vtable's
//!   number (fixed) and, in its top four bits, the flags: [`PINNED`] and
//!   [`DEFERRABLE`], fixed at creation, and [`SHUTDOWN`] and [`DROPPED`],
//!   set once, under the base lock. (Not in the base link's free low bits:
//!   every lock of the timer's base would then mask them off first, one
//!   more step before the lock's address is known.)

mod state;
mod vtables;

pub(crate) use state::{TimerState, Word};
pub(crate) use vtables::VTableId;

use crate::sync::{AtomicPtr, AtomicU32, UnsafeCell};
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

/// Expire on the worker it was armed on (`TIMER_PINNED`).
pub(crate) const PINNED: u32 = 1 << 0;
/// Never wake an idle worker (`TIMER_DEFERRABLE`).
pub(crate) const DEFERRABLE: u32 = 1 << 1;
/// Set by `shutdown`: every later arm is refused (shared with the
/// hrtimer: `sync/state.rs`).
pub(crate) use crate::sync::state::SHUTDOWN;
/// Set by the handle's `Drop` while the callback runs: the thread running
/// it frees the timer when it returns.
pub(crate) const DROPPED: u32 = 1 << 3;

/// Tag bit of the `base` word: the timer is between two bases; wait for it
/// to arrive. Bases are 128-byte aligned, so the bit is free.
pub(crate) const MIGRATING: usize = 1;
/// Where the flags sit in `meta` (its top four bits; the vtable's number
/// below them, `VTableId::BITS` wide).
const FLAGS_SHIFT: u32 = VTableId::BITS;
const _: () = assert!((PINNED | DEFERRABLE | SHUTDOWN | DROPPED) == 0xf && FLAGS_SHIFT == 28);

/// Proof that the caller holds the lock of the base that the timers it
/// touches are on. Only the base layer's guard makes one
/// (`BaseGuard::locked`), and it lives no longer than the guard.
pub(crate) struct Locked<'g>(PhantomData<&'g ()>);

impl Locked<'_> {
    /// # Safety
    /// The caller holds the lock of the base of every timer whose
    /// lock-protected fields it touches with this proof, for as long as the
    /// proof lives.
    #[inline(always)]
    pub(crate) unsafe fn assume() -> Self {
        Locked(PhantomData)
    }
}

/// How the layer that created a timer calls and frees it.
pub(crate) struct VTable {
    /// Runs the callback of the live timer `raw`.
    pub(crate) call: unsafe fn(NonNull<RawTimer>),
    /// Drops the allocation `raw`, which nothing references any more.
    pub(crate) free: unsafe fn(NonNull<RawTimer>),
}

/// The type-erased timer header. 24 bytes on 64-bit targets.
#[repr(C)]
pub(crate) struct RawTimer {
    /// See `state.rs`.
    pub(crate) state: TimerState,
    /// The timer's base, type-erased, with `MIGRATING` in bit 0 of the
    /// address. The base layer turns it into a reference (`base::base_of`).
    base: AtomicPtr<()>,
    /// The timer's slot in its base's wheel. Protected by the base lock;
    /// meaningful only while pending.
    key: UnsafeCell<u32>,
    /// The vtable's number (`vtables.rs`, fixed) in the low 28 bits; the
    /// flags (`PINNED`, `DEFERRABLE`, `SHUTDOWN`, `DROPPED`) above.
    meta: AtomicU32,
}

// SAFETY: all shared mutation of a RawTimer goes through atomics, or through
// `key`, which is only accessed under the lock of the base the timer is on
// (`Locked`).
unsafe impl Sync for RawTimer {}
// SAFETY: the header holds no thread-bound data; the callback behind it is
// Send + Sync (required by `timer/`).
unsafe impl Send for RawTimer {}

impl RawTimer {
    /// A header for a new timer: idle, on the base `base`.
    ///
    /// # Safety
    /// `base` points to a base (`Base::erased`) that outlives the timer: the
    /// base layer turns the link back into a reference.
    pub(crate) unsafe fn new(base: *mut (), flags: u32, vtable: &'static VTable) -> Self {
        debug_assert_eq!(base.addr() & MIGRATING, 0);
        debug_assert_eq!(flags & !(PINNED | DEFERRABLE), 0);
        RawTimer {
            state: TimerState::new(),
            base: AtomicPtr::new(base),
            key: UnsafeCell::new(0),
            meta: AtomicU32::new(VTableId::of(vtable).number() | flags << FLAGS_SHIFT),
        }
    }

    /// The base link: a pointer, with `MIGRATING` in bit 0.
    #[inline(always)]
    pub(crate) fn base_word(&self, order: std::sync::atomic::Ordering) -> *mut () {
        self.base.load(order)
    }

    /// The `base` word, read in a loop waiting for another thread to
    /// change it (see `sync::load_for_spin`).
    #[inline]
    pub(crate) fn base_word_for_spin(&self) -> *mut () {
        crate::sync::load_for_spin(&self.base)
    }

    /// Moves the timer to the base `word` (possibly tagged `MIGRATING`).
    ///
    /// # Safety
    /// `word` points to a base (see [`RawTimer::new`]), tagged or not, and
    /// the caller holds the lock of the base the timer is on.
    #[inline(always)]
    pub(crate) unsafe fn set_base_word(&self, word: *mut (), _: &Locked<'_>) {
        self.base.store(word, Release);
    }

    /// The flags.
    #[inline(always)]
    pub(crate) fn flags(&self) -> u32 {
        self.meta.load(Acquire) >> FLAGS_SHIFT
    }

    /// Sets `flag` (`SHUTDOWN` or `DROPPED`) for good.
    #[inline]
    pub(crate) fn set_flag(&self, flag: u32, _: &Locked<'_>) {
        self.meta.fetch_or(flag << FLAGS_SHIFT, Release);
    }

    /// The vtable.
    #[inline(always)]
    fn vtable(&self) -> &'static VTable {
        VTableId::from_number(self.meta.load(Relaxed) & ((1 << FLAGS_SHIFT) - 1)).get()
    }

    /// The wheel slot.
    #[inline(always)]
    pub(crate) fn key(&self, _: &Locked<'_>) -> u32 {
        // SAFETY: `Locked` proves the base lock is held, which serializes
        // every access to `key`.
        self.key.with(|k| unsafe { *k })
    }

    /// Records the wheel slot.
    #[inline(always)]
    pub(crate) fn set_key(&self, key: u32, _: &Locked<'_>) {
        // SAFETY: as in `key`.
        self.key.with_mut(|k| unsafe { *k = key })
    }
}

/// A timer pointer together with the proof that it is live for `'a`: a
/// borrowed handle. Made safely from a [`Timer`](crate::Timer) (which owns
/// the allocation), and by the base layer for the timers it holds.
#[derive(Copy, Clone)]
pub(crate) struct TimerRef<'a> {
    ptr: NonNull<RawTimer>,
    _life: PhantomData<&'a RawTimer>,
}

impl<'a> TimerRef<'a> {
    /// # Safety
    /// `ptr` is the allocation's own pointer to a live timer, and the
    /// timer stays live (is not freed) for `'a`.
    #[inline(always)]
    pub(crate) unsafe fn new(ptr: NonNull<RawTimer>) -> Self {
        TimerRef {
            ptr,
            _life: PhantomData,
        }
    }

    /// The allocation's pointer, for storing in a base.
    #[inline(always)]
    pub(crate) fn ptr(self) -> NonNull<RawTimer> {
        self.ptr
    }

    /// The header.
    #[inline(always)]
    pub(crate) fn get(self) -> &'a RawTimer {
        // SAFETY: `new`'s contract: live for 'a.
        unsafe { self.ptr.as_ref() }
    }

    /// Runs the timer's callback.
    #[inline]
    pub(crate) fn call(self) {
        // SAFETY: the timer is live (`new`'s contract), and the vtable was
        // made for this allocation's type by the layer that created it.
        unsafe { (self.get().vtable().call)(self.ptr) }
    }

    /// Frees the timer.
    ///
    /// # Safety
    /// Nothing references the timer any more: no handle, no base (it is
    /// detached and its callback does not run), and `self` is not used
    /// again.
    pub(crate) unsafe fn free(self) {
        let free = self.get().vtable().free;
        // SAFETY: forwarded from the caller.
        unsafe { free(self.ptr) }
    }

    /// Whether this is the timer at `p`.
    #[inline(always)]
    pub(crate) fn is(self, p: *const RawTimer) -> bool {
        std::ptr::eq(self.ptr.as_ptr(), p)
    }
}

impl std::fmt::Debug for TimerRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimerRef")
            .field("state", &self.get().state.load(Relaxed))
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    #[test]
    fn header_is_24_bytes() {
        assert_eq!(std::mem::size_of::<super::RawTimer>(), 24);
    }
}
