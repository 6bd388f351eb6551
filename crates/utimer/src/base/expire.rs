//! Running expired timers: the kernel's `__run_timers()` and
//! `expire_timers()`.
//!
//! The wheel hands out due timers one at a time. For each, under the base
//! lock, the timer is marked not pending and `running` is set to it; the lock
//! is dropped, the callback runs, the lock is taken again and `running`
//! cleared. Between two callbacks the lock is free, so other threads can
//! arm, modify and delete timers of this base — including ones that are due
//! but not yet run, which a `delete` then cancels as the kernel's does.
//!
//! A callback may re-arm its own timer: it stays on this base while its
//! callback runs (see `modify`), and if its new expiry is already reached it
//! fires again within this same run. A panicking callback is caught,
//! counted (`BaseStats::panicked`) and reported to the hook set with
//! [`Builder::on_callback_panic`](crate::Builder::on_callback_panic); the
//! base is never left locked, the worker goes on, and the timer counts as
//! fired.

use super::{Base, TimerPtr};
use crate::sync::{futex, prefetch};
use crate::timer::raw::RawTimer;
use crate::timer::state::{expires_of, idx_of, pack, IDX_NONE, IDX_RUNNING};
use std::any::Any;
use std::cell::Cell;
use std::mem::ManuallyDrop;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};
use std::sync::atomic::Ordering::{Relaxed, Release};

/// What this thread is doing in a callback: the timer whose callback it is
/// running (null: none), and whether that timer's handle was dropped inside
/// it (free it when the callback returns).
type Running = (*const RawTimer, bool);

#[cfg(not(loom))]
std::thread_local! {
    static RUNNING: Cell<Running> = const { Cell::new((ptr::null(), false)) };
}
#[cfg(loom)]
loom::thread_local! {
    static RUNNING: Cell<Running> = Cell::new((ptr::null(), false));
}

/// Whether this thread is running `timer`'s callback right now.
#[inline]
pub(crate) fn running_here(timer: *const RawTimer) -> bool {
    RUNNING.with(|r| r.get().0 == timer)
}

/// Asks the expiring thread to free the running timer once its callback
/// returns (the handle was dropped inside it).
pub(crate) fn free_after_callback() {
    RUNNING.with(|r| r.set((r.get().0, true)));
}

/// Expires every timer of `base` due at or before `now`; returns how many
/// callbacks ran.
pub(crate) fn run_expired(base: &Base, now: u64) -> usize {
    let mut guard = base.lock();
    let mut n = 0;
    let mut published = guard.wheel.clk();
    while let Some(TimerPtr(ptr)) = guard.wheel.poll(now) {
        // Start the cache misses of the next due timer while this one runs.
        if let Some((next, after)) = guard.wheel.peek_due() {
            prefetch(next.0.as_ptr());
            if let Some(after) = after {
                prefetch(after);
            }
        }
        // SAFETY: a timer the wheel holds is live (timer/raw.rs lifetime rules).
        let timer = unsafe { ptr.as_ref() };
        // `running` first, then the word: whoever sees IDX_RUNNING in the
        // word also sees `running` naming the timer.
        base.running.store(ptr.as_ptr(), Release);
        let word = timer.expires_idx.load(Relaxed);
        timer
            .expires_idx
            .store(pack(expires_of(word), IDX_RUNNING), Release);
        guard.stats.fired += 1;
        if guard.wheel.clk() != published {
            published = guard.wheel.clk();
            guard.publish_clk();
        }
        drop(guard);

        let (panic, free) = call_timer(ptr);
        let panicked = panic.is_some();
        if let Some(payload) = panic {
            report_panic(base, &*payload);
        }
        n += 1;

        guard = base.lock();
        base.running.store(ptr::null_mut(), Release);
        // Idle again, unless the callback re-armed it. (The owner may free
        // the timer as soon as the lock is released: this is the last touch.)
        let word = timer.expires_idx.load(Relaxed);
        if idx_of(word) == IDX_RUNNING {
            timer
                .expires_idx
                .store(pack(expires_of(word), IDX_NONE), Release);
        }
        if panicked {
            guard.stats.panicked += 1;
        }
        let wake = guard.waiters != 0;
        if wake {
            guard.waiters = 0;
            base.callback_seq.fetch_add(1, Release);
        }
        if wake || free {
            drop(guard);
            if wake {
                futex::wake_all(&base.callback_seq);
            }
            if free {
                // The handle was dropped inside the callback, which may have
                // re-armed the timer afterwards: detach it again, then free it.
                crate::timer::detach_and_wait(ptr);
                // SAFETY: the owning handle is gone, the timer is detached and
                // no callback of it runs: nothing can reach it any more.
                unsafe { RawTimer::free(ptr) };
            }
            guard = base.lock();
        }
    }
    guard.publish_clk();
    n
}

/// Tells the system's panic hook, if any, about a callback's panic (outside
/// every lock; a panicking hook is caught and ignored).
#[cold]
fn report_panic(base: &Base, payload: &(dyn Any + Send)) {
    if let Some(hook) = &base.system().panic_hook {
        let _ = catch_unwind(AssertUnwindSafe(|| hook(payload)));
    }
}

/// Calls the callback outside any lock. Returns (the panic payload if it
/// panicked, free the timer now).
fn call_timer(ptr: NonNull<RawTimer>) -> (Option<Box<dyn Any + Send>>, bool) {
    let outer = RUNNING.with(|r| r.replace((ptr.as_ptr(), false)));
    // A borrowed handle: the callback may use it but must not drop it.
    let handle = ManuallyDrop::new(crate::Timer::from_raw(ptr));
    // SAFETY: the timer is live while its callback runs (its owner's Drop
    // waits for `running` to clear, or defers the free to us).
    let result = catch_unwind(AssertUnwindSafe(|| unsafe { RawTimer::call(ptr, &handle) }));
    let (_, free) = RUNNING.with(|r| r.replace(outer));
    (result.err(), free)
}
