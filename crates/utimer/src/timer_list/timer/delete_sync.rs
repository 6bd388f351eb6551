//! Synchronous deletion: the kernel's `timer_delete_sync()`,
//! `try_to_del_timer_sync()`, `timer_shutdown()` and
//! `timer_shutdown_sync()`.
//!
//! # What "synchronous" promises
//!
//! When `delete_sync` returns `Ok`, the timer is not pending **and its
//! callback is not running on any worker**. Afterwards the caller may free
//! whatever the callback uses. Unless the timer is shut down, it may still be
//! re-armed by someone else afterwards.
//!
//! # O(1) in the number of workers
//!
//! The original `del_timer_sync` scanned every CPU's `running_timer`. The
//! 2004 fix remembered the last base instead, but admitted a race: the timer could be
//! re-armed onto another CPU while its callback still ran, and then run on
//! two CPUs at once. utimer closes that race at the source: `modify` never
//! moves a timer off the base whose expiry run is executing its callback
//! (`timer/modify.rs`). A timer's callback can therefore only run on the base
//! named by its `base` word, and `delete_sync` looks at that one base.
//!
//! # The single-shot fast path
//!
//! Linux added `del_singleshot_timer_sync()` for timers whose callback never
//! re-arms: one `del_timer()`, and only if that found nothing, the full
//! sync path. It later became an alias of `del_timer_sync()` and was removed.
//! utimer needs no separate name. The timer word says in one load whether the
//! timer is *idle*: neither pending nor running its callback (`IDX_NONE`). An
//! idle timer returns at once, without a lock. A pending one costs exactly
//! what `delete` costs (lock, detach, and a look at `running`, which is on a
//! cache line the lock already brought in).
//!
//! # Waiting
//!
//! If the callback is running, the caller registers as a waiter under the
//! base lock, drops the lock, spins briefly, then sleeps on the base's
//! `callback_seq` futex. The expiring thread, re-taking the lock after the
//! callback, sees the waiter count, bumps the sequence and wakes everyone.
//! Both sides touch the count under the base lock, so no wake-up is lost.
//! The expiry path pays for this only with one read of the count under a
//! lock it already holds.
//!
//! A worker's thread must not stop running its own timers while it waits:
//! the callback it waits for may itself wait for one of them. On a thread
//! bound to a worker the wait is therefore cut into slices of at most one
//! tick, and between two slices the worker's due timers run (the base
//! table's `run_blocked` hook), as a kernel CPU keeps taking interrupts
//! while a task sleeps.
//!
//! # Synchronization rules
//!
//! * Never call `delete_sync` while holding a lock that the timer's
//!   callback also takes:
//!
//! ```text
//!   thread A                                worker W (expiry run)
//!   --------                                ---------------------
//!                                           running = T
//!                                           T's callback starts
//!   lock(L)
//!                                             callback: lock(L)    <- waits for A
//!   T.delete_sync()
//!     waits while running == T              <- waits for W: deadlock
//! ```
//!
//! * Calling it from the timer's own callback would wait for itself. It
//!   returns [`TimerError::InOwnCallback`] instead, and changes nothing.
//!   (`try_delete_sync` and `shutdown` are fine there.)
//! * Two callbacks that `delete_sync` each other's timers wait for each
//!   other forever, like any two threads that each wait for the other.
//! * A callback that re-arms its own timer can keep a waiter waiting for as
//!   long as it keeps re-arming. `shutdown_sync` makes those re-arms fail, so
//!   it terminates.

use crate::sync::{futex, spin_hint};
use crate::timer_list::base::{lock_timer_base, running_here, Base};
use crate::timer_list::entry::{TimerRef, SHUTDOWN};
use crate::TimerError;
use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::time::Instant;

/// Spins this many times before sleeping on the futex.
const SPINS_BEFORE_SLEEP: u32 = 200;

/// What [`delete_sync`] does while the callback is running.
#[derive(Copy, Clone, PartialEq, Eq)]
pub(crate) enum Wait {
    /// Wait until it returns (`timer_delete_sync`).
    Block,
    /// Return [`TimerError::Running`] at once (`try_to_del_timer_sync`).
    Try,
}

/// Deletes `t` and, per `wait`, waits for its callback. With `shutdown`,
/// every later arm is refused. Returns whether the timer was pending.
pub(crate) fn delete_sync(t: TimerRef<'_>, wait: Wait, shutdown: bool) -> Result<bool, TimerError> {
    let timer = t.get();
    if !shutdown && timer.state.load(Acquire).is_idle() {
        return Ok(false);
    }
    let mut was_pending = false;
    loop {
        let mut guard = lock_timer_base(timer);
        let running = guard.base.is_running(t);
        // Refusals come first: they change nothing.
        if running {
            match wait {
                Wait::Try => return Err(TimerError::Running),
                Wait::Block if running_here(t) => return Err(TimerError::InOwnCallback),
                Wait::Block => {}
            }
        }
        if shutdown {
            timer.set_flag(SHUTDOWN, &guard.locked());
        }
        was_pending |= guard.cancel_timer(t);
        if !running {
            return Ok(was_pending);
        }
        guard.waiters += 1;
        let seq = guard.base.callback_seq.load(Relaxed);
        let base: &Base = guard.base;
        drop(guard);
        wait_for_callback(base, seq);
    }
}

/// Waits until the callback running on `base` when `seq` was read returns.
fn wait_for_callback(base: &Base, seq: u32) {
    for _ in 0..SPINS_BEFORE_SLEEP {
        if base.callback_seq.load(Acquire) != seq {
            return;
        }
        spin_hint();
    }
    let table = base.table();
    let Some(worker) = table.entered_worker() else {
        while base.callback_seq.load(Acquire) == seq {
            futex::wait(&base.callback_seq, seq);
        }
        return;
    };
    // A worker's thread: keep its own timers running (module docs), waking
    // at the latest a tick later, or when its next timer is due if sooner.
    let ticks = &table.ticks;
    while base.callback_seq.load(Acquire) == seq {
        let next = table.hooks().run_blocked(table, worker);
        let until_next = next.and_then(|tick| ticks.instant_of(tick));
        let slice = until_next.map_or(ticks.tick(), |at| {
            ticks
                .tick()
                .min(at.saturating_duration_since(Instant::now()))
        });
        futex::wait_timeout(&base.callback_seq, seq, Some(slice));
    }
}

/// Deletes `t` and refuses every later arm, without waiting. The kernel's
/// `timer_shutdown()`.
pub(crate) fn shutdown(t: TimerRef<'_>) -> bool {
    let mut guard = lock_timer_base(t.get());
    t.get().set_flag(SHUTDOWN, &guard.locked());
    guard.delete_timer(t)
}

/// The 2004 `del_timer_sync()`, before its fix: delete, then look at the
/// `running` timer of **every** base in the system, and start over if the
/// timer became pending meanwhile. Kept only so that `utimer bench` can show
/// the `delete_sync` tables (its cost grows with the number of bases). It does not
/// refuse to run inside the callback, and spins instead of sleeping.
#[cfg(feature = "bench-internals")]
pub(crate) fn delete_sync_scan_all(t: TimerRef<'_>) -> bool {
    let timer = t.get();
    let mut was_pending = false;
    loop {
        was_pending |= super::modify::delete(t);
        let table = crate::timer_list::base::timer_base(timer).table();
        if let Some(base) = table.all().iter().find(|b| b.is_running(t)) {
            while t.is(base.running.load(Acquire)) {
                spin_hint();
            }
        }
        if !timer.state.load(Acquire).is_pending() {
            return was_pending;
        }
    }
}
