//! Running expired hrtimers: the kernel's `__hrtimer_run_queues()` and
//! `__run_hrtimer()`.
//!
//! Under the base lock, the first timer in hard-expiry order is taken if
//! its soft expiry has passed (so timers started with slack that lie close
//! together fire in one wake-up), `running` is set to it, and the lock is
//! dropped for the callback. Afterwards, under the lock again, `running`
//! is cleared, waiters in `cancel` are woken, and if the callback returned
//! [`HrRestart::Restart`] the timer is queued again at the expiry it set —
//! unless someone started it meanwhile (their start wins, as in the
//! kernel), cancelled it by dropping its handle, or the system shut down.
//!
//! Sleepers (`sleeper.rs`) due at `now` go first, before the timers: the
//! run takes up to 32 of them out of their heap under one lock hold, marks
//! them fired, and wakes their wakers after the lock.
//!
//! The same rules as for wheel timers hold (`timer_list/base/expire.rs`): one run per
//! base at a time, so a timer's callback never runs twice at once and
//! `cancel` knows which base to watch; callbacks run outside every lock; a
//! panic is caught, counted and reported, and the run goes on. The clock is
//! read once per run, as the kernel does: a timer restarted by its callback
//! for a time that has already passed runs again in the same run, but at
//! most `RESTART_BUDGET` extra callbacks run beyond the timers that were
//! due when it began, so a callback that always restarts in the past
//! cannot hold the worker forever.

use super::base::{place, wake_for, HrBase};
use super::entry::{HrEntry, HrFire, HrRestart, NOT_QUEUED};
use super::sleeper;
use crate::sync::state::{DEAD, OFFLINE, SHUTDOWN};
use crate::sync::{futex, thread_local};
use std::any::Any;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering::{Relaxed, Release};
use std::task::Waker;

/// Restarts for an already passed time that one run serves beyond the
/// timers due when it began.
const RESTART_BUDGET: usize = 64;

/// Sleepers whose wakers one lock hold takes before waking them.
const SLEEPER_BATCH: usize = 32;

thread_local! {
    /// The hrtimer whose callback this thread runs (null: none).
    static CURRENT: Cell<*const ()> = Cell::new(std::ptr::null());
}

/// Whether this thread runs `e`'s callback right now.
pub(crate) fn running_here(e: &HrEntry) -> bool {
    CURRENT.with(|c| std::ptr::eq(c.get(), e.addr()))
}

/// Whether this thread runs some hrtimer's callback right now.
pub(crate) fn in_callback() -> bool {
    CURRENT.with(|c| !c.get().is_null())
}

/// Runs every timer of `base` whose soft expiry is at or before `now` (ns
/// of the base's clock). Returns how many callbacks ran and the first hard
/// expiry afterwards.
pub(crate) fn run_expired(
    base: &HrBase,
    now: u64,
    on_panic: &dyn Fn(&(dyn Any + Send)),
    wake: &dyn Fn(usize),
) -> (usize, Option<u64>) {
    let mut g = base.lock();
    if g.expiring || g.closed != 0 {
        return (0, g.first_hard());
    }
    g.expiring = true;
    g.last_now = g.last_now.max(now);
    let mut ran = 0;
    // Sleepers first (they only wake a task): their wakers are taken in
    // batches under the lock and woken after it.
    loop {
        let mut batch: [Option<Waker>; SLEEPER_BATCH] = [const { None }; SLEEPER_BATCH];
        let (n, more) = sleeper::take_due(&mut g, base.worker(), now, &mut batch);
        if n == 0 && !more {
            break;
        }
        g.fired += n as u64;
        drop(g);
        let mut panicked = 0;
        for w in batch.iter_mut().take(n).filter_map(Option::take) {
            if let Err(payload) = catch_unwind(AssertUnwindSafe(|| w.wake())) {
                panicked += 1;
                let _ = catch_unwind(AssertUnwindSafe(|| on_panic(&*payload)));
            }
        }
        ran += n;
        g = base.lock();
        g.panicked += panicked;
        if (n < SLEEPER_BATCH && !more) || g.closed & OFFLINE != 0 {
            break;
        }
    }
    let mut budget = g.queue.len() + RESTART_BUDGET;
    while budget > 0 && g.closed & OFFLINE == 0 {
        let Some((_, entry)) = g.queue.pop_due(now) else {
            break;
        };
        budget -= 1;
        entry.handle.store(NOT_QUEUED, Relaxed);
        base.running.store(entry.addr(), Release);
        g.fired += 1;
        let mut fire = HrFire {
            now,
            soft: entry.soft.load(Relaxed),
            hard: entry.hard.load(Relaxed),
        };
        drop(g);

        let outer = CURRENT.with(|c| c.replace(entry.addr()));
        super::trace::hrtimer_expire_entry(entry.addr().addr(), base.worker(), now);
        let result = catch_unwind(AssertUnwindSafe(|| (entry.callback)(&mut fire)));
        super::trace::hrtimer_expire_exit(entry.addr().addr(), base.worker());
        CURRENT.with(|c| c.set(outer));
        ran += 1;
        let (restart, panicked) = match result {
            Ok(r) => (r, false),
            Err(payload) => {
                let _ = catch_unwind(AssertUnwindSafe(|| on_panic(&*payload)));
                (HrRestart::NoRestart, true)
            }
        };

        g = base.lock();
        g.panicked += panicked as u64;
        base.running.store(std::ptr::null_mut(), Release);
        let woke = g.waiters != 0;
        if woke {
            g.waiters = 0;
            base.callback_seq.fetch_add(1, Release);
        }
        let restartable = restart == HrRestart::Restart
            && !entry.is_queued()
            && entry.flags.load(Relaxed) & SHUTDOWN == 0
            && g.closed & DEAD == 0;
        let (leftover, wake_worker) = if restartable {
            place(&mut g, entry, fire.soft, fire.hard);
            (None, wake_for(base, fire.hard))
        } else {
            (Some(entry), None)
        };
        if woke || leftover.is_some() || wake_worker.is_some() {
            drop(g);
            if woke {
                futex::wake_all(&base.callback_seq);
            }
            // The last reference may go here: the callback's captures are
            // dropped outside the lock.
            drop(leftover);
            if let Some(w) = wake_worker {
                wake(w);
            }
            g = base.lock();
        }
    }
    g.expiring = false;
    (ran, g.first_hard())
}
