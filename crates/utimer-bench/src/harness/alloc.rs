//! A counting global allocator: measures how many heap bytes a piece of code
//! leaves allocated.
//!
//! [`Counting`] forwards every call to [`System`]. While counting is switched
//! on for the calling thread (only inside [`measure`]) it also adds the sizes
//! of that thread's allocations and deallocations to two thread-local
//! counters; the difference over a window is the number of bytes that window
//! left live on the heap. That is how the
//! `memory` group gets "bytes per timer": allocate 1M armed timers (and the
//! handles the user holds) inside the window, divide the net bytes by 1M.
//!
//! When counting is off the only cost is one thread-local load, so the timing
//! cases are not skewed by counter traffic, and threads never share a
//! counter's cache line.
//!
//! Limits: bytes are the sizes asked for (`Layout::size`), not what the
//! allocator rounds them up to; memory the kernel keeps (POSIX timers,
//! timerfd) is invisible here; only the measuring thread's allocations and
//! frees count (other threads, such as parallel tests, cannot disturb it).
//!
//! A library cannot choose its users' allocator, so the program that wants
//! the memory cases declares it at its root (the `utimer` binary does):
//!
//! ```
//! #[global_allocator]
//! static GLOBAL: utimer_bench::alloc::Counting = utimer_bench::alloc::Counting;
//!
//! fn main() {
//!     assert!(utimer_bench::alloc::is_installed());
//! }
//! ```
//!
//! Without it [`measure`] sees nothing; [`is_installed`] tells, and the
//! memory cases skip their rows with the reason instead of reporting zeros.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The global allocator wrapper; install it with `#[global_allocator]`.
#[derive(Debug)]
pub struct Counting;

// Const-initialized, without destructors: usable inside the allocator (no
// lazy registration, no allocation).
thread_local! {
    static ENABLED: Cell<bool> = const { Cell::new(false) };
    static ALLOCATED: Cell<u64> = const { Cell::new(0) };
    static FREED: Cell<u64> = const { Cell::new(0) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn bump(counter: &'static std::thread::LocalKey<Cell<u64>>, by: u64) {
    counter.with(|c| c.set(c.get() + by));
}

#[inline]
fn on_alloc(size: usize) {
    if ENABLED.with(Cell::get) {
        bump(&ALLOCATED, size as u64);
        bump(&ALLOCATIONS, 1);
    }
}

#[inline]
fn on_free(size: usize) {
    if ENABLED.with(Cell::get) {
        bump(&FREED, size as u64);
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged; the bookkeeping around it does not touch the memory.
unsafe impl GlobalAlloc for Counting {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            on_alloc(layout.size());
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded contract.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            on_alloc(layout.size());
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        on_free(layout.size());
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) }
    }

    #[inline]
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

/// Runs `f` with counting switched on for this thread and returns its result
/// and the bytes it allocated. Not reentrant.
pub fn measure<R>(f: impl FnOnce() -> R) -> (R, AllocStats) {
    let a0 = ALLOCATED.with(Cell::get);
    let f0 = FREED.with(Cell::get);
    let n0 = ALLOCATIONS.with(Cell::get);
    ENABLED.with(|e| e.set(true));
    let r = f();
    ENABLED.with(|e| e.set(false));
    let stats = AllocStats {
        allocated: ALLOCATED.with(Cell::get) - a0,
        freed: FREED.with(Cell::get) - f0,
        allocations: ALLOCATIONS.with(Cell::get) - n0,
    };
    (r, stats)
}

/// Whether [`Counting`] is the global allocator of this program, that is,
/// whether [`measure`] sees allocations at all.
pub fn is_installed() -> bool {
    let (b, stats) = measure(|| std::hint::black_box(Box::new(0u64)));
    drop(b);
    stats.allocations > 0
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

    #[test]
    fn installed_in_tests() {
        assert!(is_installed());
    }
}
