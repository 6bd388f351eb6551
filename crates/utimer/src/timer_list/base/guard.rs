//! Holding a base's lock: finding the base a timer is on
//! ([`lock_timer_base`], the kernel's `lock_timer_base()`), and the
//! [`BaseGuard`] through which everything done under the lock goes:
//! enqueue, requeue, detach, forward, the move between two bases. The
//! rules of who may touch what are in the module above (`base/mod.rs`).

use super::{trace, Base, BaseInner, Bases, TimerPtr, LEVEL0_SPAN, NEXT_NONE};
use crate::sync::{Backoff, Held};
use crate::timer_list::entry::{Locked, RawTimer, TimerRef, Word, MIGRATING};
use crate::wheel::{calc_position, clamp_expiry, Key, Position, Unchecked, DUE};
use std::ops::{Deref, DerefMut};
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

/// The base named by `word`, a value of `timer`'s base link (the
/// `MIGRATING` tag ignored). The borrow of `timer` bounds the result's
/// lifetime: the timer keeps its base's table alive.
#[inline(always)]
pub(crate) fn base_of(_timer: &RawTimer, word: *mut ()) -> &Base {
    // SAFETY: a base link only ever holds the address of a base, tag aside
    // (`RawTimer::new` and `set_base_word` demand it); bases live as long
    // as their table, which the timer keeps alive (entry/ lifetime rules).
    unsafe { &*word.map_addr(|a| a & !MIGRATING).cast::<Base>() }
}

/// The base the timer is on (or, while migrating, was on).
#[inline(always)]
pub(crate) fn timer_base(timer: &RawTimer) -> &Base {
    base_of(timer, timer.base_word(Relaxed))
}

/// Proof that the base lock is held; gives access to the locked part.
pub(crate) struct BaseGuard<'a> {
    pub(crate) base: &'a Base,
    /// [`GUARD_BIASED`]: the lock was taken on the biased path.
    /// [`GUARD_WAKE`]: an enqueue fires at tick `bits >> 2`, before the
    /// idle worker would wake: tell the wake hook once the lock is
    /// released. One word, so that the guard (two words) is returned in
    /// registers rather than copied through the stack.
    pub(super) bits: u64,
}

/// `BaseGuard::bits`: held on the owner's biased path.
const GUARD_BIASED: u64 = 1;
/// `BaseGuard::bits`: the wake hook must be told (tick in the bits above).
const GUARD_WAKE: u64 = 2;

impl Deref for BaseGuard<'_> {
    type Target = BaseInner;
    #[inline(always)]
    fn deref(&self) -> &BaseInner {
        // SAFETY: the guard exists only while `lock` is held.
        self.base.inner.with(|p| unsafe { &*p })
    }
}

impl DerefMut for BaseGuard<'_> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut BaseInner {
        self.inner_mut()
    }
}

impl Drop for BaseGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        let held = if self.bits & GUARD_BIASED != 0 {
            Held::Biased
        } else {
            Held::Shared
        };
        self.base.lock.unlock(held);
        if self.bits & GUARD_WAKE != 0 {
            call_wake_hook(self.base, self.bits >> 2);
        }
    }
}

/// An enqueue on `base` fires at `expiry`, before its idle worker would
/// wake: the hook decides whom to wake. Called after the lock.
#[cold]
#[inline(never)]
fn call_wake_hook(base: &Base, expiry: u64) {
    let (worker, kind) = (base.worker(), base.kind());
    base.table().hooks().timer_on_idle(worker, kind, expiry);
}

impl<'a> BaseGuard<'a> {
    #[inline(always)]
    pub(super) fn inner_mut(&mut self) -> &mut BaseInner {
        // SAFETY: the guard exists only while `lock` is held, and `&mut self`
        // makes this the only reference derived from it.
        self.base.inner.with_mut(|p| unsafe { &mut *p })
    }

    /// The proof, for the timer's setters, that this base's lock is held.
    #[inline(always)]
    pub(crate) fn locked(&self) -> Locked<'a> {
        // SAFETY: the guard holds the lock of `self.base`; callers use the
        // proof only on timers whose base link names this base.
        unsafe { Locked::assume() }
    }

    /// Queues `t` at `pos` (computed against this base's current clock)
    /// with expiry of record `expires`. The kernel's `enqueue_timer()`.
    #[inline(always)]
    pub(crate) fn enqueue(&mut self, t: TimerRef<'_>, pos: Position, expires: u64) {
        // A timer cancelled here last and re-armed into the same bucket
        // takes its entry back (`wheel/ghost.rs`).
        let key = self.wheel.insert_or_revive(pos, TimerPtr(t.ptr()));
        self.enqueued(t, key, pos, expires);
    }

    /// Moves the pending `t` on this base to `pos` (computed against this
    /// base's current clock) with expiry of record `expires`: the
    /// kernel's `detach_if_pending(timer, base, false)` and
    /// `enqueue_timer()`. The timer reads as pending throughout; the
    /// wheel may swap it with its ghost (`wheel/ghost.rs`).
    /// `word` is the timer's state word as the caller read it under this
    /// lock.
    #[inline(always)]
    pub(crate) fn requeue(&mut self, t: TimerRef<'_>, word: Word, pos: Position, expires: u64) {
        let timer = t.get();
        debug_assert!(word.is_pending() && word == timer.state.load(Relaxed));
        let locked = self.locked();
        let old = Key::unchecked(timer.key(&locked));
        let key = self.wheel.requeue(old, word.idx(), TimerPtr(t.ptr()), pos);
        trace::timer_cancel(t.ptr().addr().get(), self.base.worker());
        self.enqueued(t, key, pos, expires);
    }

    /// The bookkeeping of an enqueue once the wheel holds `t` at `key`.
    #[inline(always)]
    fn enqueued(&mut self, t: TimerRef<'_>, key: Key<Unchecked>, pos: Position, expires: u64) {
        trace::timer_start(
            t.ptr().addr().get(),
            self.base.worker(),
            expires,
            pos.expiry,
        );
        let locked = self.locked();
        t.get().set_key(key.slot(), &locked);
        t.get().state.queue(expires, pos.idx, &locked);
        self.mirror_changed();
        if pos.expiry < self.base.idle_until.load(Relaxed) {
            // Tell the hook once; a later enqueue must beat this one to
            // call it again.
            self.base.idle_until.store(pos.expiry.max(1), Relaxed);
            // (Bucket expiries are below 2^54: the shift loses nothing.)
            self.bits = (self.bits & GUARD_BIASED) | GUARD_WAKE | (pos.expiry << 2);
        }
    }

    /// Queues `t` to expire at `expires` (clamped to the wheel's range),
    /// first bringing a stale clock forward if the timer would land above
    /// level 0. The kernel's `internal_add_timer()` after
    /// `forward_timer_base()`.
    #[inline(always)]
    pub(crate) fn add_timer(&mut self, t: TimerRef<'_>, expires: u64, now: Option<u64>) {
        let (pos, expires) = self.place(expires, now);
        self.enqueue(t, pos, expires);
    }

    /// Where a timer expiring at `expires` goes now, and its expiry of
    /// record (clamped to the wheel's range): first, if it would land
    /// above level 0, the clock is brought forward to the system clock
    /// (`now`, or read here), so that the level is the one its timeout
    /// selects. Level 0 is exact whatever the clock.
    #[inline(always)]
    pub(crate) fn place(&mut self, expires: u64, now: Option<u64>) -> (Position, u64) {
        // (The clock never exceeds MAX_TICK + 1: no overflow.)
        if expires >= self.wheel.clk() + LEVEL0_SPAN {
            let now = now.unwrap_or_else(|| self.base.jiffies());
            self.forward(now);
        }
        let clk = self.wheel.clk();
        let expires = clamp_expiry(expires, clk);
        (calc_position(expires, clk), expires)
    }

    /// Brings the wheel clock forward to `now` and publishes it, if it is
    /// behind. The kernel's `forward_timer_base()`, except that
    /// a bucket due meanwhile does not stop it: the wheel takes such
    /// buckets out for the next run (see [`Wheel::forward`]), and their
    /// timers are marked due (the wheel's ghost rule needs a pending
    /// timer's word to name the list it sits on, and "due" is what
    /// they are).
    #[inline]
    pub(crate) fn forward(&mut self, now: u64) {
        if now > self.wheel.clk() {
            let base = self.base;
            let locked = self.locked();
            forward_base(base, self.inner_mut(), now, locked);
        }
    }

    /// Removes `t` from the wheel if it is queued; returns whether it was.
    /// The kernel's `detach_if_pending()`.
    #[inline(always)]
    pub(crate) fn detach_if_pending(&mut self, t: TimerRef<'_>) -> bool {
        self.detach::<false>(t)
    }

    /// [`detach_if_pending`](Self::detach_if_pending) where the wheel may
    /// leave the entry in place as its ghost (`wheel/ghost.rs`), for the
    /// next arm of the same timer into the same bucket to take back.
    #[inline(always)]
    fn detach<const DEFER: bool>(&mut self, t: TimerRef<'_>) -> bool {
        let Some(word) = self.unlink::<DEFER>(t) else {
            return false;
        };
        let running = self.base.is_running(t);
        t.get().state.detach_from(word, running, &self.locked());
        true
    }

    /// Takes `t` off the wheel if it is queued, **leaving its state word
    /// pending**, for a move to another base (`migrate`, or a hot-unplug):
    /// until it lands (the enqueue there rewrites the word) lock-free
    /// readers still see it pending, and go through `lock_timer_base()`,
    /// which waits while it is `MIGRATING`. The caller tags it `MIGRATING`
    /// under this same lock. Returns whether it was queued.
    #[inline]
    pub(crate) fn unlink_for_move(&mut self, t: TimerRef<'_>) -> bool {
        debug_assert!(!self.base.is_running(t));
        self.unlink::<false>(t).is_some()
    }

    /// Takes `t` off the wheel if its word says it is queued, leaving the
    /// word as it is; returns the word if it was queued. With `DEFER` the
    /// wheel may keep the entry as its ghost.
    #[inline(always)]
    fn unlink<const DEFER: bool>(&mut self, t: TimerRef<'_>) -> Option<Word> {
        let timer = t.get();
        let word = timer.state.load(Relaxed);
        if !word.is_pending() {
            return None;
        }
        let locked = self.locked();
        let key = Key::unchecked(timer.key(&locked));
        if DEFER {
            // Outside a run a pending timer's word names the bucket it
            // sits in (only a run moves buckets, and the wheel defers
            // nothing during one).
            self.wheel
                .remove_deferred(key, word.idx(), TimerPtr(t.ptr()));
        } else {
            let removed = self.wheel.remove(key);
            debug_assert_eq!(removed, Some(TimerPtr(t.ptr())));
        }
        self.mirror_changed();
        trace::timer_cancel(t.ptr().addr().get(), self.base.worker());
        Some(word)
    }

    /// [`detach_if_pending`](Self::detach_if_pending), counted as a delete:
    /// what every cancelling call does.
    #[inline(always)]
    pub(crate) fn delete_timer(&mut self, t: TimerRef<'_>) -> bool {
        if !self.detach_if_pending(t) {
            return false;
        }
        self.stats.deleted += 1;
        true
    }

    /// [`delete_timer`](Self::delete_timer) for a timer that lives on (a
    /// `delete`, not a drop): the wheel may keep its entry as a ghost
    /// (`wheel/ghost.rs`), so that re-arming it into the same bucket, the
    /// commonest next step of a timeout, writes nothing in the wheel.
    #[inline(always)]
    pub(crate) fn cancel_timer(&mut self, t: TimerRef<'_>) -> bool {
        if !self.detach::<true>(t) {
            return false;
        }
        self.stats.deleted += 1;
        true
    }

    /// Moves `t` (off the wheel, on this base; see
    /// [`unlink_for_move`](Self::unlink_for_move)) to `to`, without holding two
    /// locks: marks it `MIGRATING`, releases this lock, takes `to`'s, and
    /// lands it there. Returns the guard of `to`.
    pub(crate) fn migrate(self, t: TimerRef<'_>, to: &'a Base) -> BaseGuard<'a> {
        let locked = self.locked();
        let tagged = self.base.erased().map_addr(|a| a | MIGRATING);
        // SAFETY: the word is this base's pointer, tagged.
        unsafe { t.get().set_base_word(tagged, &locked) };
        drop(self);
        let mut guard = to.lock();
        let locked = guard.locked();
        // SAFETY: the word is `to`'s pointer; between the two locks the
        // timer was on no base, and MIGRATING kept everyone else away.
        unsafe { t.get().set_base_word(to.erased(), &locked) };
        guard.stats.migrated += 1;
        guard
    }

    /// Publishes the wheel clock for lock-free readers.
    #[inline]
    pub(crate) fn publish_clk(&self) {
        self.base.clk.store(self.wheel.clk(), Release);
    }
}

/// The body of [`BaseGuard::forward`], out of line and off the arm path
/// (it takes the base and its locked part apart, so that the guard of the
/// caller stays in registers).
#[cold]
#[inline(never)]
fn forward_base(base: &Base, inner: &mut BaseInner, now: u64, locked: Locked<'_>) {
    let mut mark_due = |&TimerPtr(ptr): &TimerPtr| {
        // SAFETY: a queued timer is live (entry/ lifetime rules), and we
        // hold the lock of the base it is queued on (`locked`).
        let t = unsafe { TimerRef::new(ptr) };
        let word = t.get().state.load(Relaxed);
        t.get().state.queue(word.expires(), DUE, &locked);
    };
    inner.wheel.forward_to(now, Some(&mut mark_due));
    base.clk.store(inner.wheel.clk(), Release);
    // Due timers report `clk - 1`: the clock moved.
    if base.next.load(Relaxed) != NEXT_NONE {
        base.mirror_changed();
    }
}

/// Locks the base `timer` is on, following it if it moves meanwhile. The
/// kernel's `lock_timer_base()`.
#[inline(always)]
pub(crate) fn lock_timer_base(timer: &RawTimer) -> BaseGuard<'_> {
    let mut word = timer.base_word(Acquire);
    let mut backoff = Backoff::new();
    loop {
        if word.addr() & MIGRATING == 0 {
            let guard = base_of(timer, word).lock();
            // Still on that base? The link only changes under the base lock
            // (or between the two locks of a migration, with MIGRATING set).
            if timer.base_word(Relaxed) == word {
                return guard;
            }
        }
        backoff.snooze();
        word = timer.base_word_for_spin();
    }
}

/// Frees a timer and gives back its count of its table.
///
/// # Safety
/// As [`TimerRef::free`]: nothing references the timer any more.
pub(crate) unsafe fn free_timer(t: TimerRef<'_>) {
    let table: *const Bases = timer_base(t.get()).table;
    // SAFETY: forwarded from the caller.
    unsafe { t.free() };
    // SAFETY: the timer held one strong count of its table (taken by
    // `Bases::retain_for_timer`), and nothing of it remains.
    unsafe { Bases::release_for_timer(table) };
}
