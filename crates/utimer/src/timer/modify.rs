//! Arming and re-arming: the kernel's `__mod_timer()`, with seed 002's
//! same-bucket optimization.
//!
//! # The fast paths (no lock)
//!
//! 1. *Expiry unchanged*: the timer is pending and its expiry of record
//!    equals the new one. This is the check the kernel had before 2016
//!    (`timer->expires == expires`); it is a pure read and always correct.
//! 2. *Same bucket* (seed 002): compute the bucket the new expiry would get
//!    against the base clock; if it **fires at the same tick** as the bucket
//!    the timer is in, nothing needs to change.
//!
//! # Why utimer's same-bucket check writes nothing
//!
//! The 2016 patch, on a match, stored the new expiry into `timer->expires`
//! without the lock "so a subsequent call will exit in the expires check".
//! That store races with any thread that holds the base lock:
//!
//! ```text
//!   CPU A: mod_timer(t, e)                 CPU B (base lock held)
//!   ----------------------                 ----------------------
//!   timer_pending(t)        -> true
//!   idx = calc_wheel_index(e, clk)
//!   idx == timer_get_idx(t) -> true
//!                                          run_timers: t fires, or
//!                                          mod_timer(t, x): t moves to x's bucket
//!   t->expires = e          <- stale write: t sits in x's bucket (or is not
//!                              pending at all) but claims expiry e
//! ```
//!
//! After that, `expires()` lies, `reduce()` compares against the wrong value
//! and a later requeue computed from `expires` can place the timer early.
//! The kernel later moved the whole check under the base lock. utimer keeps
//! it lock-free and makes it exact instead:
//!
//! * `expires_idx` packs the expiry of record and the bucket into **one**
//!   atomic word, so one load gives a consistent pair;
//! * the bucket's firing tick is a function of that pair
//!   ([`bucket_expiry`]), so the check compares *firing ticks*, not indices;
//! * on a match nothing is written. The timer fires at the tick it would
//!   have fired at with the new expiry, so the re-arm is done; only
//!   `expires()` keeps the earlier expiry of the same bucket.
//!
//! Why a match is correct even while other threads act: if the timer is
//! pending in a bucket firing at tick `T`, then `T >= clk` for any clock value
//! read after that load, and the new expiry's bucket time `T'` is computed
//! from such a clock. `T' == T` means the new expiry, queued at any moment
//! in between, would fire at exactly the tick the timer fires at now. If the
//! timer fires or moves after the load, the re-arm is ordered before that.
//! A clock read from a stale base only makes the computed level coarser: the
//! timer is never early, and at most one granule of that level late. The
//! test `same_bucket_match_survives_concurrent_rearm` in `tests/` and the
//! loom model `modify_vs_expire` exercise these interleavings.
//!
//! # The slow path (base lock)
//!
//! Lock the timer's base, detach it if pending, move it to the caller's base
//! unless its callback is running there (so a callback never runs on two
//! workers at once), and enqueue it. If the bucket computed before locking
//! was against the same base and its clock has not moved, it is used as is
//! (*Requeue*); otherwise it is computed again (*Recalc*) — the patch's
//! `clk == base->clk` test.

use super::raw::RawTimer;
use super::state::{base_of, expires_of, idx_of, is_pending, BASE_MASK, MIGRATING};
use crate::base::lock_timer_base;
use crate::system::ModifyCheck;
use crate::wheel::{bucket_expiry, calc_position, clamp_expiry, Position, DUE};
use crate::TimerError;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

/// What kind of arm this is (the kernel's `MOD_TIMER_*` options).
#[derive(Copy, Clone, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `mod_timer`: arm or re-arm.
    Modify,
    /// `mod_timer_pending`: re-arm only if pending.
    PendingOnly,
    /// `timer_reduce`: re-arm only to an earlier expiry.
    Reduce,
    /// `add_timer` / `add_timer_on`: arm a timer that is not pending, on
    /// the caller's base or on the given one.
    Add(Option<u32>),
}

/// The bucket computed before taking the lock.
struct Hint {
    base: u32,
    clk: u64,
    pos: Position,
    expires: u64,
}

/// Arms `timer` to expire at tick `expires`. Returns whether it was pending.
pub(crate) fn modify(timer: &RawTimer, expires: u64, mode: Mode) -> Result<bool, TimerError> {
    let sys = &*timer.system;
    let word = timer.expires_idx.load(Acquire);
    let mut hint = None;
    if is_pending(word) {
        let old = expires_of(word);
        match mode {
            Mode::Add(_) => return Err(TimerError::AlreadyPending),
            Mode::Reduce if old <= expires => return Ok(true),
            _ if old == expires => return Ok(true),
            _ => {}
        }
        if sys.modify_check == ModifyCheck::SameBucket {
            let base = &sys.bases[base_of(timer.state.load(Relaxed))];
            let clk = base.clk.load(Acquire);
            let expires = clamp_expiry(expires, clk);
            let pos = calc_position(expires, clk);
            let same_tick = match bucket_expiry(old, idx_of(word)) {
                Some(fires) => pos.idx != DUE && pos.expiry == fires,
                None => pos.idx == DUE,
            };
            if same_tick {
                if sys.stats {
                    base.matched.0.fetch_add(1, Relaxed);
                }
                return Ok(true);
            }
            hint = Some(Hint {
                base: base.index,
                clk,
                pos,
                expires,
            });
        }
    } else if mode == Mode::PendingOnly {
        return Ok(false);
    }
    modify_locked(timer, expires, mode, hint)
}

fn modify_locked(
    timer: &RawTimer,
    expires: u64,
    mode: Mode,
    hint: Option<Hint>,
) -> Result<bool, TimerError> {
    let sys = &*timer.system;
    let mut guard = lock_timer_base(timer);
    if guard.dead {
        return Err(TimerError::Shutdown);
    }
    let word = timer.expires_idx.load(Relaxed);
    let was_pending = is_pending(word);
    match mode {
        Mode::PendingOnly if !was_pending => return Ok(false),
        Mode::Add(_) if was_pending => return Err(TimerError::AlreadyPending),
        Mode::Reduce if was_pending && expires_of(word) <= expires => return Ok(true),
        _ => {}
    }
    guard.detach_if_pending(timer);

    let state = timer.state.load(Relaxed);
    let target = match mode {
        Mode::Add(Some(worker)) => sys.base_index(worker as usize, state),
        _ => sys.base_index(sys.current_worker(), state),
    };
    let me = timer as *const RawTimer as *mut RawTimer;
    if target != guard.base.index && guard.base.running.load(Relaxed) != me {
        // Move to the target base. Between the two locks the timer is on no
        // base; MIGRATING makes lock_timer_base() wait for it to arrive.
        timer.state.store(state | MIGRATING, Release);
        drop(guard);
        guard = sys.bases[target as usize].lock();
        timer
            .state
            .store((state & !(BASE_MASK | MIGRATING)) | target, Release);
        guard.stats.migrated += 1;
        if guard.dead {
            return Err(TimerError::Shutdown);
        }
    }
    debug_assert_eq!(
        base_of(timer.state.load(Relaxed)),
        guard.base.index as usize
    );

    let mut recalc = false;
    match hint {
        Some(h) if h.base == guard.base.index && h.clk == guard.wheel.clk() => {
            guard.enqueue_timer(timer, h.pos, h.expires);
        }
        _ => {
            recalc = hint.is_some();
            guard.internal_add_timer(timer, expires);
        }
    }
    if !was_pending {
        guard.stats.armed += 1;
    } else if recalc {
        guard.stats.recalced += 1;
    } else {
        guard.stats.requeued += 1;
    }
    Ok(was_pending)
}

/// Removes `timer` from its base if pending. The kernel's `timer_delete()`.
pub(crate) fn delete(timer: &RawTimer) -> bool {
    if !is_pending(timer.expires_idx.load(Acquire)) {
        return false;
    }
    let mut guard = lock_timer_base(timer);
    let was_pending = guard.detach_if_pending(timer);
    if was_pending {
        guard.stats.deleted += 1;
    }
    was_pending
}
