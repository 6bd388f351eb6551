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
//! # O(1) in the number of workers (seed 000)
//!
//! The 2004 `del_timer_sync` scanned every CPU's `running_timer`. Seed 000
//! remembered the last base instead, but admitted a race: the timer could be
//! re-armed onto another CPU while its callback still ran, and then run on
//! two CPUs at once. utimer closes that race at the source: `modify` never
//! moves a timer off the base whose expiry run is executing its callback
//! (`timer/modify.rs`). A timer's callback can therefore only run on the base
//! named by its `base` word, and `delete_sync` looks at that one base.
//!
//! # The single-shot fast path (seed 001)
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
//! * A callback that re-arms its own timer can keep a waiter waiting for as
//!   long as it keeps re-arming. `shutdown_sync` makes those re-arms fail, so
//!   it terminates.

use super::raw::RawTimer;
use super::state::{is_idle, SHUTDOWN};
use crate::base::{lock_timer_base, running_here, Base};
use crate::sync::{futex, spin_hint};
use crate::TimerError;
use std::ptr::NonNull;
use std::sync::atomic::Ordering::{Acquire, Relaxed};

/// Spins this many times before sleeping on the futex.
const SPINS_BEFORE_SLEEP: u32 = 200;

/// How [`delete_sync`] behaves while the callback is running.
#[derive(Copy, Clone, PartialEq, Eq)]
pub(crate) enum Sync {
    /// Wait until it returns (`timer_delete_sync`).
    Wait,
    /// Return [`TimerError::Running`] at once (`try_to_del_timer_sync`).
    Try,
    /// Wait, but do not refuse to run inside the callback: the caller (the
    /// timer's `Drop`) handles that case itself.
    WaitUnchecked,
}

/// Deletes `timer` and, per `sync`, waits for its callback. With `shutdown`,
/// every later arm is refused. Returns whether the timer was pending.
pub(crate) fn delete_sync(
    ptr: NonNull<RawTimer>,
    sync: Sync,
    shutdown: bool,
) -> Result<bool, TimerError> {
    // SAFETY: the caller's handle keeps the timer alive.
    let timer = unsafe { ptr.as_ref() };
    let me = ptr.as_ptr();
    if !shutdown && is_idle(timer.expires_idx.load(Acquire)) {
        return Ok(false);
    }
    let mut was_pending = false;
    loop {
        let mut guard = lock_timer_base(timer);
        let running = guard.base.running.load(Relaxed) == me;
        // Refusals come first: they change nothing.
        if running {
            match sync {
                Sync::Try => return Err(TimerError::Running),
                Sync::Wait if running_here(me) => return Err(TimerError::InOwnCallback),
                _ => {}
            }
        }
        if shutdown {
            timer.flags.fetch_or(SHUTDOWN, Relaxed);
        }
        if guard.detach_if_pending(timer) {
            guard.stats.deleted += 1;
            was_pending = true;
        }
        if !running || running_here(me) {
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
    while base.callback_seq.load(Acquire) == seq {
        futex::wait(&base.callback_seq, seq);
    }
}

/// Deletes `timer` and refuses every later arm, without waiting. The kernel's
/// `timer_shutdown()`.
pub(crate) fn shutdown(ptr: NonNull<RawTimer>) -> bool {
    // SAFETY: the caller's handle keeps the timer alive.
    let timer = unsafe { ptr.as_ref() };
    let mut guard = lock_timer_base(timer);
    timer.flags.fetch_or(SHUTDOWN, Relaxed);
    let was_pending = guard.detach_if_pending(timer);
    if was_pending {
        guard.stats.deleted += 1;
    }
    was_pending
}

/// The 2004 `del_timer_sync()`, before seed 000: delete, then look at the
/// `running` timer of **every** base in the system, and start over if the
/// timer became pending meanwhile. Kept only so that `utimer bench` can show
/// seed 000's table (its cost grows with the number of bases). It does not
/// refuse to run inside the callback, and spins instead of sleeping.
pub(crate) fn delete_sync_scan_all(ptr: NonNull<RawTimer>) -> bool {
    // SAFETY: the caller's handle keeps the timer alive.
    let timer = unsafe { ptr.as_ref() };
    let me = ptr.as_ptr();
    let mut was_pending = false;
    loop {
        was_pending |= super::modify::delete(timer);
        for base in timer.system().bases.iter() {
            if base.running.load(Acquire) == me {
                while base.running.load(Acquire) == me {
                    spin_hint();
                }
                break;
            }
        }
        if !super::state::is_pending(timer.expires_idx.load(Acquire)) {
            return was_pending;
        }
    }
}
