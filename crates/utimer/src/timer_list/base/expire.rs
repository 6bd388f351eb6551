//! Running expired timers: the kernel's `__run_timers()` and
//! `expire_timers()`.
//!
//! The wheel hands out due timers one at a time. For each, under the base
//! lock, the timer is marked running and `running` is set to it; the lock
//! is dropped, the callback runs, the lock is taken again and `running`
//! cleared. Between two callbacks the lock is free, so other threads can
//! arm, modify and delete timers of this base — including ones that are due
//! but not yet run, which a `delete` then cancels as the kernel's does.
//!
//! One run at a time per base: a second `run_expired` of a base whose run is
//! under way (on another thread, or in an outer frame of this one, through a
//! callback that blocks) returns at once and leaves the due timers to the
//! run in progress. Two runs at once would each set `running`, and
//! `delete_sync` would no longer know which callback to wait for.
//!
//! A callback may re-arm its own timer: it stays on this base while its
//! callback runs (see `timer/modify.rs`), and if its new expiry is already
//! reached it fires again in the next run. A panicking callback is caught,
//! counted (`BaseStats::panicked`) and reported to the panic hook; the base
//! is never left locked, the run goes on, and the timer counts as fired.
//!
//! A timer whose handle was dropped while its callback ran (`DROPPED`, set
//! under this lock by the handle's `Drop`) is freed here once the callback
//! returns: the drop did not wait.

use super::{free_timer, Base, TimerPtr};
use crate::sync::{futex, prefetch, prefetch_object, thread_local};
use crate::timer_list::entry::{RawTimer, TimerRef, DROPPED};
use crate::wheel::BLOCK;
use std::any::Any;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::Ordering::Release;

thread_local! {
    /// The timer whose callback this thread is running (null: none).
    static CURRENT: Cell<*const RawTimer> = Cell::new(ptr::null());
}

/// Whether this thread is running `t`'s callback right now.
#[inline]
pub(crate) fn running_here(t: TimerRef<'_>) -> bool {
    CURRENT.with(|c| t.is(c.get()))
}

/// Whether this thread is running some timer's callback right now.
#[inline]
pub(crate) fn in_callback() -> bool {
    CURRENT.with(|c| !c.get().is_null())
}

/// What an expiry run did.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Expired {
    /// Callbacks run.
    pub(crate) ran: usize,
    /// The base's next expiry afterwards, read under the lock that ended
    /// the run (what the pull model propagates up its hierarchy).
    pub(crate) next: Option<u64>,
}

/// Expires every timer of `base` due at or before `now` (and every timer
/// that was already due before the run began).
pub(crate) fn run_expired(base: &Base, now: u64) -> Expired {
    let mut guard = base.lock();
    if guard.expiring || guard.is_offline() {
        let next = guard.publish_next();
        return Expired { ran: 0, next };
    }
    guard.expiring = true;
    let mut queue = PrefetchQueue::new();
    let mut ran = 0;
    let mut published = guard.wheel.clk();
    // An offline base stops after the callback in progress: its timers
    // move to an online worker (`hotplug.rs`).
    while let Some(TimerPtr(ptr)) = (!guard.is_offline())
        .then(|| guard.wheel.poll(now))
        .flatten()
    {
        // Start the cache misses of the next block's timers, one per
        // timer run here: 16 timers ahead, spread out so that the misses
        // never queue up behind each other.
        if let Some((ahead, after)) = guard.wheel.lookahead() {
            queue.refill(ahead.map(|TimerPtr(t)| t.as_ptr().cast_const()));
            if let Some(after) = after {
                prefetch_object(after);
            }
        }
        queue.prefetch_one();
        // SAFETY: a timer the wheel held is live (entry/ lifetime rules),
        // and stays live until `running` is cleared: its handle's Drop
        // defers the free to us while it is set.
        let t = unsafe { TimerRef::new(ptr) };
        // `running` first, then the word: whoever sees the timer running in
        // its word also sees `running` naming it.
        base.running.store(ptr.as_ptr(), Release);
        t.get().state.mark_running(&guard.locked());
        guard.stats.fired += 1;
        if guard.wheel.clk() != published {
            published = guard.wheel.clk();
            guard.publish_clk();
        }
        drop(guard);

        super::trace::timer_expire_entry(ptr.addr().get(), base.worker(), now);
        let panicked = call(t).map_err(|payload| report_panic(base, &*payload));
        super::trace::timer_expire_exit(ptr.addr().get(), base.worker());
        ran += 1;

        guard = base.lock();
        guard.stats.panicked += panicked.is_err() as u64;
        base.running.store(ptr::null_mut(), Release);
        t.get().state.finish_running(&guard.locked());
        let wake = guard.waiters != 0;
        if wake {
            guard.waiters = 0;
            base.callback_seq.fetch_add(1, Release);
        }
        let free = t.get().flags() & DROPPED != 0;
        if free {
            // The handle is gone; the callback may have re-armed the timer
            // after it went (it stays on this base while running).
            guard.delete_timer(t);
        }
        if wake || free {
            drop(guard);
            if wake {
                futex::wake_all(&base.callback_seq);
            }
            if free {
                // SAFETY: the handle is gone, the timer is detached, its
                // callback has returned and `running` no longer names it:
                // nothing references it.
                unsafe { free_timer(t) };
            }
            guard = base.lock();
        }
    }
    guard.expiring = false;
    guard.publish_clk();
    let next = guard.publish_next();
    Expired { ran, next }
}

/// Timers of the next block, prefetched one per timer run (both ends of
/// the header: a 24-byte allocation may straddle two cache lines).
struct PrefetchQueue {
    timers: [*const RawTimer; BLOCK],
    next: usize,
    len: usize,
}

impl PrefetchQueue {
    fn new() -> Self {
        PrefetchQueue {
            timers: [ptr::null(); BLOCK],
            next: 0,
            len: 0,
        }
    }

    /// Takes the next block's timers (issuing what is left of the last
    /// ones first).
    #[inline]
    fn refill(&mut self, timers: impl Iterator<Item = *const RawTimer>) {
        while self.next < self.len {
            self.prefetch_one();
        }
        self.len = 0;
        self.next = 0;
        for t in timers.take(BLOCK) {
            self.timers[self.len] = t;
            self.len += 1;
        }
    }

    #[inline(always)]
    fn prefetch_one(&mut self) {
        if self.next < self.len {
            let head = self.timers[self.next].cast::<u8>();
            prefetch(head);
            let end = head.wrapping_add(std::mem::size_of::<RawTimer>() - 1);
            if (end as usize ^ head as usize) >= 64 {
                prefetch(end);
            }
            self.next += 1;
        }
    }
}

/// Runs the callback outside any lock, with [`CURRENT`] naming it.
fn call(t: TimerRef<'_>) -> Result<(), Box<dyn Any + Send>> {
    let outer = CURRENT.with(|c| c.replace(t.ptr().as_ptr()));
    let result = catch_unwind(AssertUnwindSafe(|| t.call()));
    CURRENT.with(|c| c.set(outer));
    result
}

/// Tells the panic hook, if any, about a callback's panic (outside every
/// lock; a panicking hook is caught and ignored).
#[cold]
fn report_panic(base: &Base, payload: &(dyn Any + Send)) {
    if let Some(hook) = base.table().panic_hook() {
        let _ = catch_unwind(AssertUnwindSafe(|| hook(payload)));
    }
}
