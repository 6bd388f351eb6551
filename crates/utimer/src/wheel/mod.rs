//! The timer wheel: a pure data structure (no locks, no threads, no clock reads).
//!
//! This is the non-cascading wheel that Linux adopted in 2016 (Thomas
//! Gleixner's rework of `kernel/time/timer.c`), rebuilt for user space. It is
//! usable on its own by programs that drive their own event loop — insert,
//! remove, ask for the next expiry, advance to a time and collect what expired
//! — and it is the storage inside every utimer timer base.
//!
//! # Levels, granularity and range
//!
//! The wheel has nine levels of 64 buckets. Each level is eight times coarser
//! than the one below it. A timer is queued once, on the finest level whose
//! range covers its distance from the wheel clock, and **never moves** until
//! it fires or is removed: unlike the classic cascading wheel there is no
//! re-sorting of timers from coarse levels into fine ones as time passes.
//!
//! With the default tick of 1 ms:
//!
//! | level | granularity | distance from `clk` covered |
//! |------:|------------:|-----------------------------|
//! | 0 |       1 ms |        0 ms –    62 ms |
//! | 1 |       8 ms |       63 ms –   503 ms |
//! | 2 |      64 ms |      504 ms –  4.03 s  |
//! | 3 |     512 ms |     4.03 s  –  32.3 s  |
//! | 4 |     4.10 s |     32.3 s  –  4.30 min |
//! | 5 |     32.8 s |     4.30 min – 34.4 min |
//! | 6 |     4.37 min |   34.4 min – 4.59 h   |
//! | 7 |     35.0 min |   4.59 h  – 36.7 h    |
//! | 8 |     4.66 h |     36.7 h  – 12.2 days |
//!
//! In ticks, level `L` has granularity `8^L` and covers distances below
//! `63 * 8^L`. Later expiries are clamped to the end of level 8
//! ([`MAX_DELTA`] ticks, 12.2 days at 1 ms), as the kernel clamps to
//! `WHEEL_TIMEOUT_MAX`. With another tick the table scales linearly.
//!
//! # Why this shape
//!
//! Most timers are timeouts that are cancelled long before they fire. The
//! design therefore makes arming and cancelling O(1) with no sorting, and
//! pays for it with precision: a timer fires at its expiry rounded **up** to
//! its level's granularity. It is never early, and at most one granule of its
//! level late — since level `L` is only used for distances of at least
//! `63 * 8^(L-1)` ticks, that is at most about 12.5% of the timeout. A
//! 10-minute keepalive may fire half a minute late; nobody minds, and nothing
//! ever cascades. A 5 ms timeout is exact to the tick.
//!
//! # Finding the next expiry
//!
//! Each level keeps a 64-bit bitmap of non-empty buckets. The next expiry is
//! found with one rotate and one trailing-zero count per non-empty level
//! ([`Wheel::next_expiry`]), and cached between changes, like the kernel's
//! `base->next_expiry`.
//!
//! # Expiry
//!
//! The wheel clock `clk` is the next tick not yet processed. A *run* is a
//! sequence of [`Wheel::poll`] calls up to the one that returns `None`. It
//! takes the buckets of each due tick (at most `now`) to a run list and
//! hands those out one at a time, so the caller may insert and remove
//! entries between two of them — a timer callback may re-arm itself.
//!
//! The rules, in full:
//!
//! * **Where an entry goes.** An expiry at or after `clk` goes to the
//!   bucket of the first level whose range covers its distance from `clk`,
//!   and fires at its bucket time (the table above). Level 0 is exact: the
//!   bucket time is the expiry itself, whatever `clk` is. An expiry before
//!   `clk` (in the past) goes to the *due list*.
//! * **What a run hands out, in order.** First the due list (in no
//!   particular order), then whatever a forward took out of its buckets
//!   (below), then the buckets due by `now`, tick by tick, and nothing
//!   more: as the kernel's `__run_timers()` ends at the `jiffies` it
//!   began with, a run ends at its `now`. Several buckets
//!   due at one tick (one per level whose granularity divides it) are
//!   taken together, the finest level first; within a bucket, no
//!   particular order.
//! * **The clock during a run.** Taking a tick's buckets moves `clk` past
//!   that tick (the kernel's `base->clk++` before `expire_timers()`), so an
//!   entry inserted meanwhile at that tick or earlier is in the past: it
//!   waits on the due list for the next run. Were it handed out in the
//!   same run, a callback that always re-arms its timer into the past
//!   would keep the run going forever. An entry inserted at a later tick
//!   up to `now` is handed out by the same run when it gets there.
//! * **A stale clock.** A clock left behind (nothing polled for a while)
//!   places an entry on a coarser level than its distance from the present
//!   needs. [`Wheel::forward`] brings it to the present first: every bucket
//!   due by then leaves for the run list, in the order a run would take
//!   them, and `clk` becomes `now + 1`. Nothing is due earlier or later
//!   than it was, and entries inserted afterwards are placed against the
//!   present.
//! * **A forward during a run** (a callback re-arming a timer while the
//!   present runs ahead of the run's `now`) hands the buckets due by the
//!   run's `now` to the run, and takes the later ones out to a list of the
//!   next run's, which hands them out after the due list and before what
//!   later forwards take out. Were the run under way to hand
//!   them out, a run whose callbacks take longer than the time they cover,
//!   and re-arm timers, would be fed for ever, and its worker would never
//!   get back to anything else (a job, a shutdown). So a run hands out
//!   what was due at its start and the buckets due by its `now`: a finite
//!   set, since an entry inserted during it at a tick it has passed waits
//!   on the due list, and one inserted at a later tick up to `now` can be
//!   re-armed only to later ticks still. The timer bases forward before every insert above level 0
//!   whose base clock is behind the system clock `now`, to `now` itself
//!   (the buckets of tick `now` stay): the level is then the one that the
//!   timeout `expires - now` selects.
//!
//! # Storage
//!
//! Each bucket is a list of 16-entry blocks (see `blocks.rs`): entries sit
//! side by side, so an expiry run knows the next 16 entries at once and can
//! prefetch what they point to ([`Wheel::lookahead`]) instead of chasing one
//! link per entry. An entry costs 9 bytes for a pointer-sized value. No
//! `unsafe`, and no allocation per insert once the wheel has grown to the
//! largest number of entries queued at once. A [`Key`] carries its
//! position's generation, so a key kept after its entry left the wheel
//! names nothing (see `key.rs`).
//!
//! # Cancelled, then re-armed
//!
//! Inside utimer's bases a cancelled timer's entry may stay in its bucket,
//! invisible, until the same timer is re-armed into that bucket, which then
//! costs no write to the wheel at all; anything that reads or moves buckets
//! removes it first (see `ghost.rs`). The public methods never defer.
//!
//! This layer imports nothing of the crate: it is usable alone.

mod blocks;
mod ghost;
mod index;
mod key;

pub use index::{
    bucket_expiry, calc_position, clamp_expiry, level_for_delta, level_granularity, level_limit,
    level_shift, round_up, Position, BUCKETS, DUE, LEVELS, LVL_BITS, LVL_CLK_SHIFT, LVL_SIZE,
    MAX_DELTA, MAX_TICK,
};

use blocks::Lists;
pub(crate) use blocks::BLOCK;
pub(crate) use key::Unchecked;
pub use key::{Generation, Key};

/// The run list: entries of the current run, handed out by `poll`.
const RUN: usize = BUCKETS + 1;
/// What a forward during a run took out of its buckets, in bucket order:
/// the next run's, after the due list.
const NEXT: usize = BUCKETS + 2;

/// A hierarchical, non-cascading timer wheel holding values of type `T`.
///
/// `G` is the [`Generation`] its keys carry (`u32`: stale keys name
/// nothing). Mirrors the wheel part of the kernel's `struct timer_base`: the buckets
/// (`vectors`), the pending bitmaps (`pending_map`), the clock (`clk`) and the
/// cached next expiry (`next_expiry`, `next_expiry_recalc`).
///
/// ```
/// use utimer::wheel::Wheel;
///
/// let mut wheel = Wheel::new();
/// let a = wheel.insert(10, "a");
/// wheel.insert(700, "b");
/// assert_eq!(wheel.next_expiry(), Some(10));
/// assert_eq!(wheel.remove(a), Some("a"));
/// // "b" is 700 ticks away: level 2 (64-tick granularity), fires at 704.
/// assert_eq!(wheel.next_expiry(), Some(704));
/// assert_eq!(wheel.poll(703), None);
/// assert_eq!(wheel.poll(704), Some("b"));
/// ```
pub struct Wheel<T, G: Generation = u32> {
    /// Next tick to process: every tick before `clk` has been expired.
    clk: u64,
    /// One bit per non-empty bucket, per level.
    pending: [u64; LEVELS],
    /// Buckets `0..BUCKETS`, the due list at [`DUE`], the run list at
    /// `RUN` and the next run's at `NEXT`.
    lists: Lists<T, G>,
    /// A run is under way (`poll` has not returned `None` since it began).
    in_run: bool,
    /// The `now` of the run under way (of its latest `poll`).
    run_now: u64,
    /// A forward during a run took buckets out to `NEXT` (the next run
    /// takes them and clears it): `next_expiry` looks at this flag, not at
    /// the list, so that the common case costs it nothing more. Left set
    /// if those entries are removed meanwhile: the next expiry then reads
    /// as due, and a run that finds nothing clears it.
    next_run: bool,
    /// The first block of the run list that [`Wheel::lookahead`] last saw.
    ahead: u32,
    /// Cached earliest bucket time (`u64::MAX`: none), valid unless `recalc`.
    next: u64,
    recalc: bool,
    /// An entry whose removal was deferred (`ghost.rs`): still in its
    /// bucket, invisible to everything but a re-insert of its value there.
    ghost: Option<ghost::Ghost<T, G>>,
}

impl<T> Default for Wheel<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Wheel<T> {
    /// An empty wheel whose clock starts at tick 0.
    pub fn new() -> Self {
        Self::with_clk(0)
    }

    /// An empty wheel whose clock starts at `clk`.
    pub fn with_clk(clk: u64) -> Self {
        Self::with_capacity(clk, 0)
    }

    /// An empty wheel at `clk` with room for `capacity` entries.
    pub fn with_capacity(clk: u64, capacity: usize) -> Self {
        Self::build(clk, capacity)
    }
}

impl<T, G: Generation> Wheel<T, G> {
    /// An empty wheel at `clk` with room for `capacity` entries, whose keys
    /// carry `G`.
    pub(crate) fn build(clk: u64, capacity: usize) -> Self {
        Wheel {
            clk: clk.min(MAX_TICK),
            pending: [0; LEVELS],
            lists: Lists::new(BUCKETS + 3, capacity, RUN),
            in_run: false,
            run_now: 0,
            next_run: false,
            ahead: blocks::NIL,
            next: u64::MAX,
            recalc: false,
            ghost: None,
        }
    }

    /// The next tick that has not been processed yet.
    #[inline]
    pub fn clk(&self) -> u64 {
        self.clk
    }

    /// Number of entries queued (including due ones not yet polled).
    #[inline]
    pub fn len(&self) -> usize {
        self.lists.len() - self.ghost.is_some() as usize
    }

    /// Whether no entry is queued.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of heap memory held by the wheel.
    pub fn heap_bytes(&self) -> usize {
        self.lists.heap_bytes()
    }

    /// Reserves room for `additional` more entries, so that inserting them
    /// does not allocate.
    pub fn reserve(&mut self, additional: usize) {
        self.lists.reserve(additional);
    }

    /// Where an entry expiring at `expires` would be queued now (after
    /// clamping to the wheel's range). The kernel's `calc_wheel_index()`.
    #[inline]
    #[doc(alias = "calc_wheel_index")]
    pub fn position(&self, expires: u64) -> Position {
        calc_position(clamp_expiry(expires, self.clk), self.clk)
    }

    /// Queues `value` to expire at tick `expires` and returns its key.
    ///
    /// An expiry before the clock is due at once (the next run hands it
    /// out); one beyond the wheel's range is clamped to [`MAX_DELTA`] ticks
    /// from the clock. The level is chosen against the wheel's clock:
    /// [`forward`](Self::forward) first if it may have fallen behind.
    #[inline(always)]
    pub fn insert(&mut self, expires: u64, value: T) -> Key<G> {
        let pos = self.position(expires);
        self.insert_at(pos, value)
    }

    /// Queues `value` at `pos`, which must have been computed by
    /// [`Wheel::position`] with the clock unchanged since (the kernel's
    /// `enqueue_timer()` after `calc_wheel_index()`).
    #[inline(always)]
    pub(crate) fn insert_at(&mut self, pos: Position, value: T) -> Key<G> {
        let idx = pos.idx as usize;
        debug_assert!(pos.idx == DUE || pos.expiry >= self.clk);
        let (slot, gen) = self.lists.push(idx, value);
        if pos.idx != DUE {
            self.pending[idx / LVL_SIZE] |= 1 << (idx % LVL_SIZE);
            if pos.expiry < self.next {
                self.next = pos.expiry;
            }
        }
        Key { slot, gen }
    }

    /// Removes the entry `key` and returns its value, or `None` if the key
    /// names no entry (any more): a stale key touches nothing. The kernel's
    /// `detach_timer()`.
    #[inline(always)]
    #[doc(alias = "detach_timer")]
    pub fn remove(&mut self, key: Key<G>) -> Option<T> {
        debug_assert!(!self.is_ghost(key), "a ghost is removed by settling it");
        let (value, emptied) = self.lists.remove(key.slot, key.gen)?;
        if let Some(bucket) = emptied {
            if bucket < BUCKETS {
                self.pending[bucket / LVL_SIZE] &= !(1 << (bucket % LVL_SIZE));
                self.recalc = true;
            }
        }
        Some(value)
    }

    /// The value of entry `key`, if it is in the wheel.
    #[inline]
    pub fn get(&self, key: Key<G>) -> Option<&T> {
        if self.is_ghost(key) {
            return None;
        }
        self.lists.get(key.slot, key.gen)
    }

    /// Iterates over every queued value, in no particular order.
    pub fn values(&self) -> impl Iterator<Item = &T> {
        let ghost = self
            .ghost
            .as_ref()
            .and_then(|g| self.lists.get(g.key.slot, g.key.gen));
        self.lists
            .values()
            .filter(move |v| !ghost.is_some_and(|g| std::ptr::eq(*v, g)))
    }

    /// The tick at which the next entry fires, or `None` if the wheel is
    /// empty. Due entries (on the due list, or taken out of their buckets
    /// by a forward or a run) report `clk - 1`.
    ///
    /// The kernel's `__next_timer_interrupt()`.
    #[inline]
    #[doc(alias = "__next_timer_interrupt")]
    pub fn next_expiry(&mut self) -> Option<u64> {
        self.settle();
        if !self.lists.is_bucket_empty(DUE as usize)
            || !self.lists.is_bucket_empty(RUN)
            || self.next_run
        {
            return Some(self.clk.saturating_sub(1));
        }
        let next = self.next_bucket_expiry();
        (next != u64::MAX).then_some(next)
    }

    /// Earliest bucket time over the levels, from the bitmaps (cached).
    #[inline]
    fn next_bucket_expiry(&mut self) -> u64 {
        if self.recalc {
            self.next = self.scan_bitmaps();
            self.recalc = false;
        }
        self.next
    }

    fn scan_bitmaps(&self) -> u64 {
        let mut best = u64::MAX;
        for (lvl, &bits) in self.pending.iter().enumerate() {
            if bits == 0 {
                continue;
            }
            let shift = level_shift(lvl);
            // The first tick at or after clk at which this level is processed.
            let start = round_up(self.clk, lvl);
            let slot = (start >> shift) as u32 & (LVL_SIZE as u32 - 1);
            let ahead = bits.rotate_right(slot).trailing_zeros() as u64;
            best = best.min(start + (ahead << shift));
        }
        best
    }

    /// Brings a clock that fell behind up to the present, so that entries
    /// queued afterwards are placed relative to `now` rather than to a stale
    /// clock (on a needlessly coarse level). The kernel's
    /// `forward_timer_base()`, which stops at the first pending bucket;
    /// this one never stops.
    ///
    /// Every bucket due at or before `now` is taken out first, in the
    /// order a run would take it (see "Expiry" in the module docs): the
    /// next run hands its entries out in that order, after what was
    /// already due (during a run too: the run under way ends at its own
    /// `now`). Then the clock is `now + 1`
    /// (tick `now` counts as processed). Nothing happens if the clock is
    /// already past `now`.
    #[doc(alias = "forward_timer_base")]
    pub fn forward(&mut self, now: u64) {
        self.forward_to(now.min(MAX_TICK) + 1, None);
    }

    /// Moves the clock to `clk` (if that is later), first taking every
    /// bucket due before it out to the run list, as [`forward`](Self::forward)
    /// does, and calling `f` on each entry taken out (for the timer bases,
    /// which mark those timers due). The bases move it to the present
    /// tick, not past it: that tick's buckets stay where they are, and an
    /// arm is placed against the present itself.
    pub(crate) fn forward_to<'f>(&mut self, clk: u64, mut f: Option<&mut (dyn FnMut(&T) + 'f)>) {
        let clk = clk.min(MAX_TICK + 1);
        if clk <= self.clk {
            return;
        }
        self.settle();
        if self.in_run {
            // The run under way takes what is due by its `now`; the rest
            // waits for the next run, so that this one ends.
            let upto = self.run_now.min(clk - 1);
            while self.take_due_tick(upto, RUN, f.as_deref_mut()) {}
            while self.take_due_tick(clk - 1, NEXT, f.as_deref_mut()) {
                self.next_run = true;
            }
        } else {
            while self.take_due_tick(clk - 1, RUN, f.as_deref_mut()) {}
        }
        self.clk = clk;
    }

    /// Removes and returns one entry that is due at `now`, or `None` when
    /// nothing more is due; afterwards the clock is `now + 1` (or later).
    /// The `None` ends the run: entries inserted into the past since it
    /// began are handed out by the next run.
    ///
    /// Entries are returned in the order of "Expiry" in the module docs:
    /// what was due before the run began, then bucket by bucket. The
    /// caller may insert and remove entries between two calls; see the
    /// module docs for entries inserted into the past meanwhile. The
    /// kernel's `__run_timers()` loop: `collect_expired_timers()` followed
    /// by `expire_timers()`.
    #[inline]
    #[doc(alias = "__run_timers")]
    pub fn poll(&mut self, now: u64) -> Option<T> {
        let now = now.min(MAX_TICK);
        if !self.in_run {
            // A new run takes over everything that was already due: the
            // due list, then buckets that a forward took out during the
            // last run, then those a forward took out since (waiting on the
            // run list).
            self.settle();
            self.in_run = true;
            self.run_now = now;
            self.next_run = false;
            for list in [NEXT, DUE as usize] {
                if !self.lists.is_bucket_empty(list) {
                    if self.lists.is_bucket_empty(RUN) {
                        self.lists.move_bucket(list, RUN);
                    } else {
                        self.lists.splice(list, RUN, true, None);
                    }
                }
            }
        }
        loop {
            if let Some(value) = self.lists.pop_front(RUN) {
                return Some(value);
            }
            if !self.collect(now) {
                self.in_run = false;
                return None;
            }
        }
    }

    /// For prefetching, once per block of the run list: the entries that
    /// [`poll`](Self::poll) hands out after the current block's (up to 16),
    /// and the storage of the block after those. An expiry loop that calls
    /// this after each `poll` and prefetches what the entries point to has
    /// them in cache when it gets to them; `None` when there is nothing new
    /// to prefetch.
    #[inline]
    pub fn lookahead(&mut self) -> Option<(impl Iterator<Item = &T>, Option<&impl Sized>)> {
        self.lists.lookahead(RUN, &mut self.ahead)
    }

    /// Moves the buckets of the next due tick (at or before `now`) to the
    /// (empty) run list. Returns false (after advancing the clock past
    /// `now`) if no bucket is due.
    fn collect(&mut self, now: u64) -> bool {
        if self.take_due_tick(now, RUN, None) {
            return true;
        }
        if now >= self.clk {
            self.clk = now + 1;
        }
        false
    }

    /// If the earliest pending bucket time `t` is at or before `now`,
    /// moves every bucket that fires at `t` to the end of the ordered list
    /// `to` (`RUN`, or `NEXT`), the finest level first, calling `f` on
    /// their entries; the clock
    /// moves to `t + 1`, as the kernel's `base->clk++` after
    /// `collect_expired_timers()`, so that an entry inserted at `t` or
    /// before from now on is in the past (the due list). Returns whether
    /// it moved anything.
    fn take_due_tick<'f>(
        &mut self,
        now: u64,
        to: usize,
        mut f: Option<&mut (dyn FnMut(&T) + 'f)>,
    ) -> bool {
        let t = self.next_bucket_expiry();
        if t > now {
            return false;
        }
        // Every tick before t is empty. Granularities nest, so the levels
        // processed at tick t are a prefix of the levels.
        let mut moved = false;
        for lvl in 0..LEVELS {
            if t & (level_granularity(lvl) - 1) != 0 {
                break;
            }
            let slot = (t >> level_shift(lvl)) as usize & (LVL_SIZE - 1);
            if self.pending[lvl] & (1 << slot) != 0 {
                self.pending[lvl] &= !(1 << slot);
                let bucket = lvl * LVL_SIZE + slot;
                if f.is_none() && self.lists.is_bucket_empty(to) {
                    self.lists.move_bucket(bucket, to);
                } else {
                    self.lists.splice(bucket, to, false, f.as_deref_mut());
                }
                moved = true;
            }
        }
        assert!(moved, "utimer: next expiry {t} has no bucket");
        self.recalc = true;
        self.clk = self.clk.max(t + 1);
        true
    }

    /// Expires everything due at or before `now`, calling `f` on each value,
    /// and returns how many expired.
    pub fn advance(&mut self, now: u64, mut f: impl FnMut(T)) -> usize {
        let mut n = 0;
        while let Some(value) = self.poll(now) {
            f(value);
            n += 1;
        }
        n
    }

    /// Removes every entry, calling `f` on each; the clock is unchanged.
    pub fn drain(&mut self, f: impl FnMut(T)) {
        self.settle();
        self.lists.drain(f);
        self.pending = [0; LEVELS];
        self.next = u64::MAX;
        self.recalc = false;
        self.in_run = false;
        self.next_run = false;
    }
}

impl<T, G: Generation> std::fmt::Debug for Wheel<T, G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wheel")
            .field("clk", &self.clk)
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
