//! A counting global allocator: measures how many heap bytes a piece of code
//! leaves allocated.
//!
//! [`Counting`] forwards every call to [`System`]. While counting is switched
//! on (only inside [`measure`]) it also adds the sizes of allocations and
//! deallocations to two global counters; the difference over a window is the
//! number of bytes that window left live on the heap. That is how the
//! `memory` group gets "bytes per timer": allocate 1M armed timers (and the
//! handles the user holds) inside the window, divide the net bytes by 1M.
//!
//! When counting is off the only cost is one relaxed load of a flag that is
//! never written while benchmarks run, so the timing cases are not skewed by
//! counter traffic (two threads bumping one shared counter on every
//! allocation would be a contended cache line).
//!
//! Limits: bytes are the sizes asked for (`Layout::size`), not what the
//! allocator rounds them up to; memory the kernel keeps (POSIX timers,
//! timerfd) is invisible here; allocations made by other threads during the
//! window are counted too, so `measure` is only used single-threaded.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

/// The global allocator wrapper installed in `main.rs`.
pub struct Counting;

static ENABLED: AtomicBool = AtomicBool::new(false);
static ALLOCATED: AtomicU64 = AtomicU64::new(0);
static FREED: AtomicU64 = AtomicU64::new(0);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

#[inline]
fn on_alloc(size: usize) {
    if ENABLED.load(Relaxed) {
        ALLOCATED.fetch_add(size as u64, Relaxed);
        ALLOCATIONS.fetch_add(1, Relaxed);
    }
}

#[inline]
fn on_free(size: usize) {
    if ENABLED.load(Relaxed) {
        FREED.fetch_add(size as u64, Relaxed);
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged; the bookkeeping around it does not touch the memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            on_alloc(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            on_alloc(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        on_free(layout.size());
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            on_free(layout.size());
            on_alloc(new_size);
        }
        p
    }
}

/// What a [`measure`] window allocated.
#[derive(Clone, Copy, Debug, Default)]
pub struct AllocStats {
    /// Bytes allocated during the window (gross).
    pub allocated: u64,
    /// Bytes freed during the window (including memory allocated before it).
    pub freed: u64,
    /// Number of allocations (a realloc counts as one).
    pub allocations: u64,
}

impl AllocStats {
    /// Net bytes the window left live on the heap.
    pub fn net(&self) -> i64 {
        self.allocated as i64 - self.freed as i64
    }
}

/// Runs `f` with counting switched on and returns its result and the bytes it
/// allocated. Not reentrant; call it from one thread at a time.
pub fn measure<R>(f: impl FnOnce() -> R) -> (R, AllocStats) {
    let a0 = ALLOCATED.load(Relaxed);
    let f0 = FREED.load(Relaxed);
    let n0 = ALLOCATIONS.load(Relaxed);
    ENABLED.store(true, Relaxed);
    let r = f();
    ENABLED.store(false, Relaxed);
    let stats = AllocStats {
        allocated: ALLOCATED.load(Relaxed) - a0,
        freed: FREED.load(Relaxed) - f0,
        allocations: ALLOCATIONS.load(Relaxed) - n0,
    };
    (r, stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_a_vec() {
        let (v, s) = measure(|| Vec::<u64>::with_capacity(1000));
        assert!(s.net() >= 8000, "{s:?}");
        assert!(s.allocations >= 1);
        drop(v);
    }
}
