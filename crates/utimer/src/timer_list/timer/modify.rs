//! Arming and re-arming: the kernel's `__mod_timer()`, with its 2016
//! same-bucket optimization.
//!
//! # The fast paths (no lock)
//!
//! 1. *Expiry unchanged*: the timer is pending and its expiry of record
//!    equals the new one. This is the check the kernel had before 2016
//!    (`timer->expires == expires`); it is a pure read and always correct.
//! 2. *Same bucket* (the kernel since 2016): compute the bucket the new
//!    expiry would get against the base clock; if it **fires at the same
//!    tick** as the bucket the timer is in, nothing needs to change.
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
//! timer fires or moves after the load (an expiry run, or a forward that
//! takes its bucket out for the next run: `T <= now` then, and the run
//! comes after `now`), the re-arm is ordered before that. The unit test
//! `lockless_expires_write_race` below replays the interleaving above step
//! by step against both forms.
//!
//! The price of writing nothing: a timer re-armed again and again to the
//! *same* new expiry does the bucket arithmetic each time instead of
//! hitting the cheaper expiry-unchanged check, because its expiry of record
//! stays the old one. A compare-and-swap of the record on a match would be
//! correct (the word names the bucket, so it can only succeed while the
//! timer is still in it) and would restore the cheap check, at the cost of
//! one atomic read-modify-write on every match; not done.
//!
//! # A stale base clock
//!
//! Level 0 is exact whatever the base clock says. For a coarser level the
//! locked path first brings a base clock that is behind the system clock
//! `now` forward to `now` (`BaseGuard::place`): the buckets due before
//! then leave the wheel for the next run, marked due, so nothing holds the
//! clock back (`wheel/mod.rs`, "Expiry"). The lock-free check computes the
//! bucket against the later of the base clock and `now`, which is what
//! that forward gives, so both paths place a timer alike. A worker whose
//! expiry has not run for a while, or a callback whose run has not reached
//! the present, never makes an arm land on a coarser level than its
//! timeout (expiry minus `now`) selects. A base clock equal to `now` (the
//! run of tick `now` has not happened yet) is fresh: the timer is placed
//! against `now`, and tick `now`'s buckets stay for that run. Against a
//! base clock already past `now` (the run at `now` is done) the distance,
//! and so the level, is at most the timeout's.
//!
//! # A re-arm that does not move the timer
//!
//! A re-arm of a pending timer to its expiry of record, or to an expiry
//! whose bucket fires at the tick the timer's bucket fires at, changes
//! nothing: the timer keeps its place, its expiry of record and the bound
//! it was placed with (the expiry of record again: the kernel's
//! `mod_timer()` returns at once, even if the shorter timeout would now
//! select a finer level). That holds on every path: the lock-free checks,
//! and the locked one, which compares the bucket it computes under the
//! lock with the timer's (`rearm_here`). Only the bench's pre-2016 form,
//! kept for the benchmark, always requeues and records the new expiry, as
//! the kernel did before 2016. A timer already due (on the due list, or
//! taken out of its bucket by a forward) counts as in the same bucket as
//! any expiry in the past.
//!
//! # The slow path (base lock)
//!
//! Lock the timer's base, detach it if pending, move it to the caller's base
//! unless its callback is running there (so a callback never runs on two
//! workers at once), and enqueue it. If the bucket computed before locking
//! was against the same base and its clock has not moved, it is used as is
//! (*Requeue*); otherwise it is computed again (*Recalc*) — the patch's
//! `clk == base->clk` test. A requeue on the same base hands the wheel the
//! old and the new place at once (`BaseGuard::requeue`): the wheel keeps
//! the old entry as its ghost, and a timer moved back to the bucket it
//! left last takes that entry back (`wheel/ghost.rs`).
//!
//! # Delete
//!
//! `delete` leaves the timer's entry to the wheel as its ghost: if the
//! next arm of the timer lands in the same bucket, the arm writes nothing
//! in the wheel. The timer reads as not pending from the moment `delete`
//! returns, and no reader of the base sees the ghost. A timer's `Drop`
//! and `shutdown` remove it for real, since no re-arm follows.
//!
//! # Reduce
//!
//! `reduce` never moves a timer later. A pending timer stays on its base
//! (it is never migrated by a reduce), and its new bucket is compared with
//! its current one on that base's clock: only an earlier bucket is taken.
//! Comparing bucket times computed against two different bases' clocks
//! could otherwise move it later.

use crate::timer_list::base::{lock_timer_base, timer_base, Base, BaseGuard, Bases};
use crate::timer_list::entry::{TimerRef, Word, SHUTDOWN};
use crate::wheel::{calc_position, clamp_expiry, level_limit, Position, DUE};
use crate::TimerError;
use std::sync::atomic::Ordering::{Acquire, Relaxed};

/// What kind of arm this is (the kernel's `MOD_TIMER_*` options).
#[derive(Copy, Clone, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `mod_timer`: arm or re-arm.
    Modify,
    /// `mod_timer_pending`: re-arm only if pending.
    PendingOnly,
    /// `timer_reduce`: re-arm only to an earlier bucket.
    Reduce,
    /// `add_timer` / `add_timer_on`: arm a timer that is not pending, on
    /// the caller's base or on the given one.
    Add(Option<u32>),
}

/// The bucket computed before taking the lock. Kept small (32 bytes) so
/// that it travels to the locked path cheaply; the expiry it was computed
/// for is clamped again there (against the same clock, if the hint is
/// used).
#[derive(Copy, Clone)]
struct Hint {
    /// The base it was computed for.
    base: u32,
    /// The clock it was computed against.
    clk: u64,
    pos: Position,
}

/// Where `expires` would be queued on `base` now: against the base clock,
/// or, above level 0, against the system clock if the base clock is
/// behind it, as the locked path places it after bringing the base clock
/// forward (see "A stale base clock").
#[inline(always)]
fn hint(base: &Base, expires: u64) -> Hint {
    let mut clk = base.clk.load(Acquire);
    if expires >= clk + level_limit(0) {
        clk = clk.max(base.jiffies());
    }
    Hint {
        base: base.index,
        clk,
        pos: calc_position(clamp_expiry(expires, clk), clk),
    }
}

/// A timer in state `word` fires at the same tick as one queued at `pos`.
#[inline(always)]
fn same_tick(word: Word, pos: Position) -> bool {
    match word.bucket_time() {
        Some(t) => pos.idx != DUE && pos.expiry == t,
        None => pos.idx == DUE,
    }
}

/// A timer in state `word` fires no later than one queued at `pos`.
#[inline(always)]
fn no_later_than(word: Word, pos: Position) -> bool {
    match word.bucket_time() {
        Some(t) => pos.idx != DUE && t <= pos.expiry,
        None => true,
    }
}

/// Arms `t` to expire at tick `expires`. Returns whether it was pending.
/// `SAME_BUCKET` is utimer's check; `false` is the kernel's before 2016 (only an
/// unchanged expiry skips the lock), kept for the benchmark.
///
/// Only the lock-free checks are inlined into the caller; every path that
/// takes a lock is a call, so the fast path carries no large prologue.
#[inline]
pub(crate) fn modify<const SAME_BUCKET: bool>(
    t: TimerRef<'_>,
    expires: u64,
    mode: Mode,
) -> Result<bool, TimerError> {
    let word = t.get().state.load(Acquire);
    if !word.is_pending() {
        return match mode {
            Mode::PendingOnly => Ok(false),
            _ => arm(t, expires, mode),
        };
    }
    let base = timer_base(t.get());
    match mode {
        Mode::Add(_) => return Err(TimerError::AlreadyPending),
        Mode::Modify | Mode::PendingOnly if word.expires() == expires => {
            count_match(base);
            return Ok(true);
        }
        _ => {}
    }
    let mut h = None;
    if SAME_BUCKET || mode == Mode::Reduce {
        let hint = hint(base, expires);
        let done = match mode {
            Mode::Reduce => no_later_than(word, hint.pos),
            _ => same_tick(word, hint.pos),
        };
        if done {
            count_match(base);
            return Ok(true);
        }
        h = Some(hint);
    }
    match mode {
        Mode::Reduce => modify_locked::<SAME_BUCKET>(t, expires, mode, None),
        _ => requeue::<SAME_BUCKET>(t, expires, mode, h),
    }
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
fn lock_if_home(t: TimerRef<'_>, worker: Option<u32>) -> Option<BaseGuard<'_>> {
    let timer = t.get();
    let guard = lock_timer_base(timer);
    let table = guard.base.table();
    let worker = worker.map_or_else(|| table.current_worker(), |w| w as usize);
    // A timer's base is always of the kind its flags name (`base_for`), so
    // the worker alone says whether it is home.
    debug_assert_eq!(
        Bases::base_index(guard.base.worker(), timer.flags()),
        guard.base.index as usize
    );
    let home = guard.base.worker() == worker;
    (guard.closed == 0 && timer.flags() & SHUTDOWN == 0 && home).then_some(guard)
}

/// Re-arms a pending timer to another bucket: the common case (it stays on
/// its base) as one straight path; anything else goes to [`modify_locked`].
/// `KEEP`: a re-arm that fires at the tick the timer already fires at
/// leaves it as it is (see "A re-arm that does not move the timer").
///
/// With the hint still valid (same base, clock unmoved: so no forward
/// marked the timer due meanwhile) the lock-free check's answer stands:
/// the timer was in another bucket. If a concurrent re-arm has put it
/// into the hint's bucket since, the two calls overlap, and requeueing it
/// there is the order "this re-arm first, then that one", after which
/// that one would have changed nothing: the outcome is one that the
/// same-bucket rule allows, so it is not checked again.
#[inline(always)]
fn requeue<const KEEP: bool>(
    t: TimerRef<'_>,
    expires: u64,
    mode: Mode,
    hint: Option<Hint>,
) -> Result<bool, TimerError> {
    let pending = || t.get().state.load(Relaxed).is_pending();
    let Some(mut guard) = lock_if_home(t, None).filter(|_| pending()) else {
        return modify_locked::<KEEP>(t, expires, mode, hint);
    };
    match hint {
        Some(h) if h.base == guard.base.index && h.clk == guard.wheel.clk() => {
            let word = t.get().state.load(Relaxed);
            guard.requeue(t, word, h.pos, clamp_expiry(expires, h.clk));
            guard.stats.requeued += 1;
        }
        _ => {
            let (pos, expires, recalc) = placement(&mut guard, expires, hint);
            rearm_here::<KEEP>(&mut guard, t, pos, expires);
            count_rearm(&mut guard, recalc);
        }
    }
    Ok(true)
}

/// Where `expires` goes on the locked base, and its expiry of record: the
/// bucket computed before locking if that is still valid (same base,
/// clock unmoved), else computed again (bringing a stale clock forward
/// first: [`BaseGuard::place`]); the patch's `idx != UINT_MAX && clk ==
/// base->clk` test. Also says whether it was computed again although a
/// bucket had been computed before locking (a recalculation).
#[inline(always)]
fn placement(guard: &mut BaseGuard<'_>, expires: u64, hint: Option<Hint>) -> (Position, u64, bool) {
    match hint {
        Some(h) if h.base == guard.base.index && h.clk == guard.wheel.clk() => {
            (h.pos, clamp_expiry(expires, h.clk), false)
        }
        _ => {
            let (pos, expires) = guard.place(expires, None);
            (pos, expires, hint.is_some())
        }
    }
}

/// Re-arms `t`, pending on the locked base, to `pos` with expiry of
/// record `expires`, unless (with `KEEP`) `pos` fires at the very tick its
/// bucket fires at: then it stays where it is, expiry of record included,
/// as the lock-free same-bucket check leaves it.
#[inline(always)]
fn rearm_here<const KEEP: bool>(
    guard: &mut BaseGuard<'_>,
    t: TimerRef<'_>,
    pos: Position,
    expires: u64,
) {
    // Read after `placement`: a forward there may have marked it due.
    let word = t.get().state.load(Relaxed);
    if KEEP && same_tick(word, pos) {
        return;
    }
    guard.requeue(t, word, pos, expires);
}

/// Counts a re-arm of a pending timer under the lock.
#[inline(always)]
fn count_rearm(guard: &mut BaseGuard<'_>, recalc: bool) {
    match recalc {
        true => guard.stats.recalced += 1,
        false => guard.stats.requeued += 1,
    }
}

/// Queues `t`, not pending, on the locked base: at the bucket computed
/// before locking if that is still valid, else computed again. Counts
/// the outcome: armed (it was not pending), or a re-arm that was
/// requeued or recalculated (it was pending on another base, and moved).
#[inline(always)]
fn enqueue_hinted(
    guard: &mut BaseGuard<'_>,
    t: TimerRef<'_>,
    expires: u64,
    hint: Option<Hint>,
    was_pending: bool,
) {
    let (pos, expires, recalc) = placement(guard, expires, hint);
    guard.enqueue(t, pos, expires);
    match was_pending {
        false => guard.stats.armed += 1,
        true => count_rearm(guard, recalc),
    }
}

/// Arms a timer that was not pending: the common case (a timeout armed on
/// the base it is already on) as one straight path; anything else (it
/// became pending meanwhile, it must move, the system is gone) goes to
/// [`modify_locked`].
#[inline(never)]
fn arm(t: TimerRef<'_>, expires: u64, mode: Mode) -> Result<bool, TimerError> {
    arm_inline(t, expires, mode)
}

/// `add_timer()` / `add_timer_on()`: [`modify`] in `Mode::Add`, with the
/// arm path inlined (an `add` always takes the lock, so it gains nothing
/// from keeping the lock-free checks small, unlike `modify`).
#[inline]
pub(crate) fn add(t: TimerRef<'_>, expires: u64, on: Option<u32>) -> Result<(), TimerError> {
    // No lock-free "already pending" check first: the arm checks under the
    // lock anyway, and a pending timer (an error) takes the slow path.
    arm_inline(t, expires, Mode::Add(on)).map(drop)
}

/// The body of [`arm`].
#[inline(always)]
fn arm_inline(t: TimerRef<'_>, expires: u64, mode: Mode) -> Result<bool, TimerError> {
    let on = match mode {
        Mode::Add(on) => on,
        _ => None,
    };
    let idle = || !t.get().state.load(Relaxed).is_pending();
    let Some(mut guard) = lock_if_home(t, on).filter(|_| idle()) else {
        return modify_locked::<true>(t, expires, mode, None);
    };
    enqueue_hinted(&mut guard, t, expires, None, false);
    Ok(false)
}

/// The general path, under the lock of wherever the timer is: every check
/// again, a move to the caller's base if the timer must move, then the
/// arm. `KEEP` as in [`requeue`].
#[cold]
#[inline(never)]
fn modify_locked<const KEEP: bool>(
    t: TimerRef<'_>,
    expires: u64,
    mode: Mode,
    hint: Option<Hint>,
) -> Result<bool, TimerError> {
    let timer = t.get();
    let mut guard = lock_timer_base(timer);
    if guard.is_dead() {
        return Err(TimerError::Shutdown);
    }
    if timer.flags() & SHUTDOWN != 0 {
        // timer_shutdown(): later arms are silently refused.
        return Ok(false);
    }
    let word = timer.state.load(Relaxed);
    let was_pending = word.is_pending();
    match mode {
        Mode::PendingOnly if !was_pending => return Ok(false),
        Mode::Add(_) if was_pending => return Err(TimerError::AlreadyPending),
        Mode::Reduce if was_pending => {
            reduce_here(&mut guard, t, expires);
            return Ok(true);
        }
        _ => {}
    }

    let table = guard.base.table();
    let worker = table.route(match mode {
        Mode::Add(Some(worker)) => worker as usize,
        _ => table.current_worker(),
    });
    let target = table.base_for(worker, timer.flags());
    if !std::ptr::eq(target, guard.base) && !guard.base.is_running(t) {
        // Between the two locks the timer is on no base; MIGRATING makes
        // lock_timer_base() wait for it to arrive. A pending timer keeps
        // reading as pending meanwhile (the kernel's
        // `detach_if_pending(timer, base, false)`): a lock-free `delete`,
        // `delete_sync` or `modify_pending` on another thread must not
        // answer "not pending" for a timer that lands pending.
        guard.unlink_for_move(t);
        guard = guard.migrate(t, target);
        while guard.is_offline() {
            // Its worker went offline between the route and the lock: the
            // hot-unplug has drained this base (or will not see this
            // timer), so go on to where it routes now. One worker always
            // stays online.
            let to = table.base_for(table.route(worker), timer.flags());
            guard = guard.migrate(t, to);
        }
        if guard.is_dead() {
            // The system shut down meanwhile; the detached timer stays
            // cancelled, as every timer is at shutdown.
            guard.stats.deleted += was_pending as u64;
            t.get().state.detach(false, &guard.locked());
            return Err(TimerError::Shutdown);
        }
    } else if was_pending {
        // It stays on this base.
        let (pos, expires, recalc) = placement(&mut guard, expires, hint);
        rearm_here::<KEEP>(&mut guard, t, pos, expires);
        count_rearm(&mut guard, recalc);
        return Ok(true);
    }
    enqueue_hinted(&mut guard, t, expires, hint, was_pending);
    Ok(was_pending)
}

/// `timer_reduce()` of a pending timer, on the base it is on: requeues it
/// only if `expires` lands in an earlier bucket (see "Reduce").
fn reduce_here(guard: &mut BaseGuard<'_>, t: TimerRef<'_>, expires: u64) {
    let (pos, expires) = guard.place(expires, None);
    // Read after the placement: a forward there may have marked it due.
    let word = t.get().state.load(Relaxed);
    if no_later_than(word, pos) {
        return;
    }
    guard.detach_if_pending(t);
    guard.enqueue(t, pos, expires);
    guard.stats.recalced += 1;
}

/// Removes `t` from its base if pending. The kernel's `timer_delete()`.
#[inline]
pub(crate) fn delete(t: TimerRef<'_>) -> bool {
    if !t.get().state.load(Acquire).is_pending() {
        return false;
    }
    lock_timer_base(t.get()).cancel_timer(t)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::{Clock, TimerSystem};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// Replays the interleaving in the module docs, deterministically:
    /// A makes the lock-free same-bucket check, B re-arms the timer far away
    /// under the lock, then A finishes. With the kernel's 2016 form A stores its
    /// expiry without the lock; with utimer's form A stores nothing. Then the
    /// owner asks for the timer to fire by tick 2000 (`reduce`).
    fn replay(kernel_form: bool) -> bool {
        let clock = Clock::manual();
        let sys = TimerSystem::builder()
            .workers(1)
            .clock(clock.clone())
            .build_without_threads();
        let fired = Arc::new(AtomicBool::new(false));
        let f = fired.clone();
        let t = sys.timer(move |_| f.store(true, Ordering::Relaxed));
        t.modify(crate::Expiry::Tick(1000)).unwrap(); // level 2: fires at 1024
        let raw = t.r().get();

        // A: lock-free reads; 1010 lands in the same bucket.
        let word = raw.state.load(Acquire);
        let h = hint(timer_base(raw), 1010);
        assert!(same_tick(word, h.pos), "A sees a match");

        // B: re-arms far away, under the lock.
        assert!(t.modify(crate::Expiry::Tick(20_000)).unwrap());

        // A: the kernel's form stores the new expiry without the lock.
        if kernel_form {
            raw.state.unlocked_expires_store(1010);
        }

        // Owner: fire no later than tick 2000.
        assert!(t.reduce(crate::Expiry::Tick(2000)).unwrap());
        clock.set(2000 + 64);
        sys.run_expired(0, sys.now()).unwrap();
        fired.load(Ordering::Relaxed)
    }

    /// A timer that `modify` moves to another worker's base must read as
    /// pending between the two locks, as the kernel's does
    /// (`detach_if_pending(timer, base, false)`): a `delete` from another
    /// thread in that window must not answer "not pending" without a lock
    /// while the timer lands pending. The test holds the target base's
    /// lock to keep the move between its two halves.
    #[test]
    fn a_timer_moved_by_modify_stays_pending() {
        let (_, moved) = crate::timer_list::base::testing::delete_during_a_held_move(|sys, t| {
            std::thread::spawn(move || {
                let _w1 = sys.enter(1).unwrap();
                t.modify(crate::Expiry::Tick(60)).unwrap()
            })
        });
        assert!(moved, "it was pending when moved");
    }

    #[test]
    fn lockless_expires_write_race() {
        // utimer's form: reduce() moves the timer to 2000's bucket; it fires.
        assert!(replay(false));
        // The kernel's form: the stale record (1010) makes reduce() believe the
        // timer already fires before 2000, so it stays in 20,000's bucket
        // and fires ~18,000 ticks late.
        assert!(!replay(true));
    }
}
