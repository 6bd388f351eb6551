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
//! unit test `seed002_lockless_write_race` below replays the interleaving
//! above step by step against both forms.
//!
//! # Results (`utimer bench`, seed 002's table reproduced)
//!
//! One timer re-armed to now + 1000..1031 ticks: Match 3.1% before, 83.3%
//! after (the patch reported 5.5% and 86.6%). A thousand connections whose
//! timers are pushed out on every packet: Match 88.3% before, 98.5% after
//! (97.8% and 99.7%). A lock-free match costs 4-7 ns here, a requeue
//! 15-25 ns (README, Results).
//!
//! The price of writing nothing: a timer re-armed again and again to the
//! *same* new expiry does the bucket arithmetic each time instead of
//! hitting the cheaper expiry-unchanged check, because its expiry of record
//! stays the old one. In the networking replay that makes an average
//! `modify` slower after than before (28-30 ns against 17-20 ns with
//! statistics on), although it takes the lock far less often. A
//! compare-and-swap of the record on a match would be correct (the word
//! names the bucket, so it can only succeed while the timer is still in
//! it) and would restore the cheap check, at the cost of one atomic
//! read-modify-write on every match; not done yet.
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
use super::state::{expires_of, idx_of, is_pending, MIGRATING, SHUTDOWN};
use crate::base::{lock_timer_base, Base, BaseGuard};
use crate::wheel::{bucket_expiry, calc_position, clamp_expiry, Position, DUE};
use crate::TimerError;
use std::ptr::NonNull;
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
/// `ptr` is the handle's pointer (see `BaseGuard::enqueue_timer`).
///
/// Only the lock-free checks are inlined into the caller; every path that
/// takes a lock is a call, so the fast path carries no large prologue.
#[inline]
pub(crate) fn modify(ptr: NonNull<RawTimer>, expires: u64, mode: Mode) -> Result<bool, TimerError> {
    // SAFETY: the caller's handle keeps the timer alive.
    let timer = unsafe { ptr.as_ref() };
    let word = timer.expires_idx.load(Acquire);
    let mut hint = None;
    if is_pending(word) {
        let old = expires_of(word);
        let base = timer.base();
        match mode {
            Mode::Add(_) => return Err(TimerError::AlreadyPending),
            Mode::Modify | Mode::PendingOnly if old == expires => {
                count_match(base);
                return Ok(true);
            }
            _ => {}
        }
        if base.same_bucket || mode == Mode::Reduce {
            let clk = base.clk.load(Acquire);
            let expires = clamp_expiry(expires, clk);
            let pos = calc_position(expires, clk);
            let fires = fires_at(word);
            let done = match mode {
                // Reduce: nothing to do unless the new expiry fires earlier.
                Mode::Reduce => fires.is_none_or(|t| pos.idx != DUE && t <= pos.expiry),
                _ => match fires {
                    Some(t) => pos.idx != DUE && pos.expiry == t,
                    None => pos.idx == DUE,
                },
            };
            if done {
                count_match(base);
                return Ok(true);
            }
            hint = Some(Hint {
                base: base.index,
                clk,
                pos,
                expires,
            });
        }
        if mode != Mode::Reduce {
            return requeue(ptr, expires, mode, hint);
        }
    } else if mode == Mode::PendingOnly {
        return Ok(false);
    } else {
        return arm(ptr, expires, mode);
    }
    modify_locked(ptr, expires, mode, hint)
}

/// Counts a re-arm answered without the lock (when statistics are on).
#[inline]
fn count_match(base: &Base) {
    if base.count_matches {
        base.matched.0.fetch_add(1, Relaxed);
    }
}

/// Locks the timer's base if it is where the timer belongs now (the base of
/// `worker`, by default the caller's) and its system is alive. `None`, with
/// nothing locked, sends the caller to the general path.
#[inline(always)]
fn lock_if_home(timer: &RawTimer, worker: Option<u32>) -> Option<BaseGuard<'_>> {
    let guard = lock_timer_base(timer);
    let sys = guard.base.system();
    let worker = worker.map_or_else(|| sys.current_worker(), |w| w as usize);
    let flags = timer.flags.load(Relaxed);
    let target = sys.base_index(worker, flags);
    (!guard.dead && flags & SHUTDOWN == 0 && target == guard.base.index).then_some(guard)
}

/// Re-arms a pending timer to another bucket: the common case (it stays on
/// its base) as one straight path; anything else goes to [`modify_locked`].
#[inline(never)]
fn requeue(
    ptr: NonNull<RawTimer>,
    expires: u64,
    mode: Mode,
    hint: Option<Hint>,
) -> Result<bool, TimerError> {
    // SAFETY: the caller's handle keeps the timer alive.
    let timer = unsafe { ptr.as_ref() };
    let guard = lock_if_home(timer, None).filter(|_| is_pending(timer.expires_idx.load(Relaxed)));
    let Some(mut guard) = guard else {
        return modify_locked(ptr, expires, mode, hint);
    };
    guard.detach_if_pending(timer);
    enqueue_hinted(&mut guard, ptr, expires, hint, true);
    Ok(true)
}

/// Queues the timer at the bucket computed before locking if that is still
/// valid (same base, clock unmoved), else recomputes it: the patch's
/// `idx != UINT_MAX && clk == base->clk` test. Counts the outcome: armed
/// (it was not pending), or a re-arm that was requeued or recalculated.
#[inline(always)]
fn enqueue_hinted(
    guard: &mut BaseGuard<'_>,
    ptr: NonNull<RawTimer>,
    expires: u64,
    hint: Option<Hint>,
    was_pending: bool,
) {
    let recalc = match hint {
        Some(h) if h.base == guard.base.index && h.clk == guard.wheel.clk() => {
            guard.enqueue_timer(ptr, h.pos, h.expires);
            false
        }
        _ => {
            guard.internal_add_timer(ptr, expires);
            hint.is_some()
        }
    };
    let stats = &mut guard.stats;
    match (was_pending, recalc) {
        (false, _) => stats.armed += 1,
        (true, true) => stats.recalced += 1,
        (true, false) => stats.requeued += 1,
    }
}

/// Arms a timer that was not pending: the common case (a timeout armed on
/// the base it is already on) as one straight path; anything else (it
/// became pending meanwhile, it must move, the system is gone) goes to
/// [`modify_locked`].
#[inline(never)]
fn arm(ptr: NonNull<RawTimer>, expires: u64, mode: Mode) -> Result<bool, TimerError> {
    // SAFETY: the caller's handle keeps the timer alive.
    let timer = unsafe { ptr.as_ref() };
    let on = match mode {
        Mode::Add(on) => on,
        _ => None,
    };
    let guard = lock_if_home(timer, on).filter(|_| !is_pending(timer.expires_idx.load(Relaxed)));
    let Some(mut guard) = guard else {
        return modify_locked(ptr, expires, mode, None);
    };
    enqueue_hinted(&mut guard, ptr, expires, None, false);
    Ok(false)
}

#[cold]
#[inline(never)]
fn modify_locked(
    ptr: NonNull<RawTimer>,
    expires: u64,
    mode: Mode,
    hint: Option<Hint>,
) -> Result<bool, TimerError> {
    // SAFETY: the caller's handle keeps the timer alive.
    let timer = unsafe { ptr.as_ref() };
    let mut guard = lock_timer_base(timer);
    let sys = guard.base.system();
    if guard.dead {
        return Err(TimerError::Shutdown);
    }
    if timer.flags.load(Relaxed) & SHUTDOWN != 0 {
        // timer_shutdown(): later arms are silently refused.
        return Ok(false);
    }
    let word = timer.expires_idx.load(Relaxed);
    let was_pending = is_pending(word);
    match mode {
        Mode::PendingOnly if !was_pending => return Ok(false),
        Mode::Add(_) if was_pending => return Err(TimerError::AlreadyPending),
        Mode::Reduce if was_pending => {
            let clk = guard.wheel.clk();
            let pos = calc_position(clamp_expiry(expires, clk), clk);
            if fires_at(word).is_none_or(|t| pos.idx != DUE && t <= pos.expiry) {
                return Ok(true);
            }
        }
        _ => {}
    }
    guard.detach_if_pending(timer);

    let flags = timer.flags.load(Relaxed);
    let worker = match mode {
        Mode::Add(Some(worker)) => worker as usize,
        _ => sys.current_worker(),
    };
    let target = &sys.bases[sys.base_index(worker, flags) as usize];
    let me = ptr.as_ptr();
    if !std::ptr::eq(target, guard.base) && guard.base.running.load(Relaxed) != me {
        // Move to the target base. Between the two locks the timer is on no
        // base; MIGRATING makes lock_timer_base() wait for it to arrive.
        let from = guard.base as *const Base as *mut Base;
        timer.base.store(from.map_addr(|a| a | MIGRATING), Release);
        drop(guard);
        guard = target.lock();
        timer
            .base
            .store(target as *const Base as *mut Base, Release);
        guard.stats.migrated += 1;
        if guard.dead {
            // The system shut down meanwhile; the detached timer stays
            // cancelled, as every timer is at shutdown.
            if was_pending {
                guard.stats.deleted += 1;
            }
            return Err(TimerError::Shutdown);
        }
    }
    debug_assert!(std::ptr::eq(timer.base(), guard.base));

    enqueue_hinted(&mut guard, ptr, expires, hint, was_pending);
    Ok(was_pending)
}

/// The tick a pending timer's bucket fires at (`None`: already due).
#[inline]
fn fires_at(word: u64) -> Option<u64> {
    bucket_expiry(expires_of(word), idx_of(word))
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::timer::state::pack;
    use crate::{Clock, TimerFlags, TimerSystem};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// Replays the interleaving in the module docs, deterministically:
    /// A makes the lock-free same-bucket check, B re-arms the timer far away
    /// under the lock, then A finishes. With seed 002's form A stores its
    /// expiry without the lock; with utimer's form A stores nothing. Then the
    /// owner asks for the timer to fire by tick 2000 (`reduce`).
    fn replay(seed002_form: bool) -> bool {
        let clock = Clock::manual();
        let sys = TimerSystem::builder()
            .workers(1)
            .clock(clock.clone())
            .build();
        let fired = Arc::new(AtomicBool::new(false));
        let f = fired.clone();
        let t = sys.timer(TimerFlags::empty(), move |_| {
            f.store(true, Ordering::Relaxed)
        });
        t.modify(1000).unwrap(); // level 2: fires at 1024
        let raw = t.raw();

        // A: lock-free reads; 1010 lands in the same bucket.
        let word = raw.expires_idx.load(Acquire);
        let clk = raw.base().clk.load(Acquire);
        let pos = calc_position(1010, clk);
        assert_eq!(Some(pos.expiry), fires_at(word), "A sees a match");

        // B: re-arms far away, under the lock.
        assert!(t.modify(20_000).unwrap());

        // A: seed 002 stores the new expiry without the lock.
        if seed002_form {
            let now = raw.expires_idx.load(Relaxed);
            raw.expires_idx.store(pack(1010, idx_of(now)), Relaxed);
        }

        // Owner: fire no later than tick 2000.
        assert!(t.reduce(2000).unwrap());
        clock.set(2000 + 64);
        sys.run_expired(0, sys.now()).unwrap();
        fired.load(Ordering::Relaxed)
    }

    #[test]
    fn seed002_lockless_write_race() {
        // utimer's form: reduce() moves the timer to 2000's bucket; it fires.
        assert!(replay(false));
        // Seed 002's form: the stale record (1010) makes reduce() believe the
        // timer already fires before 2000, so it stays in 20,000's bucket
        // and fires ~18,000 ticks late.
        assert!(!replay(true));
    }
}
