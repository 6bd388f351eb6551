//! Where a timer goes: the level, bucket and bucket time for an expiry.
//!
//! This is the arithmetic of the wheel and nothing else: pure functions of
//! `(expires, clk)`. The kernel's equivalents are `calc_wheel_index()` and
//! `calc_index()` in `kernel/time/timer.c`; the rules below are utimer's own
//! (see the table in [`crate::wheel`]).
//!
//! * Level `L` has granularity `8^L` ticks and holds timers whose distance
//!   `delta = expires - clk` is below `63 * 8^L`.
//! * A timer's *bucket time* is its expiry rounded **up** to a multiple of its
//!   level's granularity, so it never fires early and at most one granule late.
//! * Because `bucket time - clk < 64 * granularity`, the bucket time is the only
//!   multiple of the granularity in the level's 64-slot window that maps to its
//!   slot: the slot number identifies the bucket time without ambiguity.

/// log2 of the number of buckets per level.
pub const LVL_BITS: u32 = 6;
/// Buckets per level.
pub const LVL_SIZE: usize = 1 << LVL_BITS;
/// log2 of the granularity step from one level to the next (x8).
pub const LVL_CLK_SHIFT: u32 = 3;
/// Number of levels: enough for 12 days at a 1 ms tick.
pub const LEVELS: usize = 9;
/// Number of real buckets (levels x buckets per level).
pub const BUCKETS: usize = LEVELS * LVL_SIZE;
/// Index of the pseudo-bucket holding timers that are already due.
pub const DUE: u16 = BUCKETS as u16;
/// The largest tick the wheel handles; later clocks and expiries saturate
/// here. 2^53 ticks is 285 years of 1 µs ticks. It is a multiple of every
/// level's granularity, so rounding an expiry up to its bucket never passes
/// it: once the clock reaches `MAX_TICK`, every queued entry is due.
pub const MAX_TICK: u64 = 1 << 53;

const _: () = assert!(MAX_TICK.is_multiple_of(level_granularity(LEVELS - 1)));
/// The largest distance from `clk` a timer can be queued at; later expiries
/// are clamped to `clk + MAX_DELTA`, as the kernel clamps to
/// `WHEEL_TIMEOUT_MAX`.
pub const MAX_DELTA: u64 = level_limit(LEVELS - 1) - 1;

/// The shift of level `lvl`'s granularity.
#[inline]
pub const fn level_shift(lvl: usize) -> u32 {
    lvl as u32 * LVL_CLK_SHIFT
}

/// The granularity of level `lvl` in ticks.
#[inline]
pub const fn level_granularity(lvl: usize) -> u64 {
    1 << level_shift(lvl)
}

/// The first distance from `clk` that no longer fits level `lvl`.
#[inline]
pub const fn level_limit(lvl: usize) -> u64 {
    ((LVL_SIZE as u64) - 1) << level_shift(lvl)
}

/// A place in the wheel: the bucket index and the tick at which that bucket
/// expires. Computed by [`calc_position`] from an expiry and the wheel clock.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Position {
    /// Bucket index: `level * 64 + slot`, or [`DUE`].
    pub idx: u16,
    /// The tick at which the bucket fires (for [`DUE`]: already reached).
    pub expiry: u64,
}

/// The level a timer `delta` ticks away from `clk` is queued on: the first
/// `L` with `delta < 63 * 8^L`, capped at the last level.
#[inline]
pub fn level_for_delta(delta: u64) -> usize {
    // A compare chain: the short distances of typical timeouts resolve in
    // one or two predictable branches (fewer instructions than a branch-free
    // division and bit scan).
    let mut lvl = 0;
    while lvl < LEVELS - 1 && delta >= level_limit(lvl) {
        lvl += 1;
    }
    lvl
}

/// Rounds `expires` up to a multiple of level `lvl`'s granularity.
#[inline]
pub fn round_up(expires: u64, lvl: usize) -> u64 {
    let shift = level_shift(lvl);
    let mask = (1u64 << shift) - 1;
    (expires.saturating_add(mask) >> shift) << shift
}

/// Clamps an expiry to the wheel's range from `clk`, the way the kernel
/// clamps timeouts beyond `WHEEL_TIMEOUT_MAX`.
#[inline]
pub fn clamp_expiry(expires: u64, clk: u64) -> u64 {
    // Time saturates at MAX_TICK: an expiry there is due once the clock is.
    // `min(MAX_TICK, clk + MAX_DELTA)`, without overflow for any clock.
    expires.min(clk.min(MAX_TICK - MAX_DELTA) + MAX_DELTA)
}

/// Computes the bucket for a timer expiring at `expires` (already clamped
/// with [`clamp_expiry`]) on a wheel whose next unprocessed tick is `clk`.
///
/// Mirrors the kernel's `calc_wheel_index()`. An expiry before `clk` goes to
/// the [`DUE`] list and fires at the next expiry run.
#[inline]
#[doc(alias = "calc_wheel_index")]
pub fn calc_position(expires: u64, clk: u64) -> Position {
    if expires < clk {
        return Position {
            idx: DUE,
            expiry: clk,
        };
    }
    let delta = expires - clk;
    if delta < level_limit(0) {
        // Level 0: one-tick granularity, the expiry is its own bucket time.
        let slot = expires as usize & (LVL_SIZE - 1);
        return Position {
            idx: slot as u16,
            expiry: expires,
        };
    }
    let lvl = level_for_delta(delta);
    let shift = level_shift(lvl);
    let expiry = (expires.saturating_add((1 << shift) - 1) >> shift) << shift;
    let slot = (expiry >> shift) as usize & (LVL_SIZE - 1);
    Position {
        idx: (lvl * LVL_SIZE + slot) as u16,
        expiry,
    }
}

/// The bucket time of a timer with (clamped) expiry `expires` sitting in
/// bucket `idx`: what [`calc_position`] returned when it was queued.
/// `None` for the [`DUE`] list, whose timers are due already.
#[inline]
pub fn bucket_expiry(expires: u64, idx: u16) -> Option<u64> {
    if idx >= DUE {
        return None;
    }
    Some(round_up(expires, idx as usize / LVL_SIZE))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_matches_the_design() {
        // Level 0: 1 tick granularity, up to 62 ticks.
        assert_eq!(level_for_delta(0), 0);
        assert_eq!(level_for_delta(62), 0);
        assert_eq!(level_for_delta(63), 1);
        assert_eq!(level_granularity(1), 8);
        assert_eq!(level_for_delta(503), 1);
        assert_eq!(level_for_delta(504), 2);
        assert_eq!(level_for_delta(u64::MAX), LEVELS - 1);
        // Range: at least 12 days of 1 ms ticks.
        const { assert!(MAX_DELTA >= 12 * 24 * 3600 * 1000) };
    }

    #[test]
    fn never_early_and_within_granularity() {
        for clk in [0u64, 1, 7, 63, 64, 1000, 123_456_789] {
            for delta in (0..5000u64).chain([MAX_DELTA - 1, MAX_DELTA]) {
                let e = clk + delta;
                let p = calc_position(e, clk);
                let lvl = p.idx as usize / LVL_SIZE;
                assert!(p.expiry >= e);
                assert!(p.expiry - e < level_granularity(lvl));
                assert!(p.expiry - clk < (LVL_SIZE as u64) << level_shift(lvl));
                assert_eq!(bucket_expiry(e, p.idx), Some(p.expiry));
                if lvl > 0 {
                    // Lateness is at most ~1/8 of the timeout.
                    assert!((p.expiry - e) * 63 <= delta * 8 + 63, "{delta} {lvl}");
                }
            }
        }
    }

    #[test]
    fn buckets_never_pass_the_last_tick() {
        for clk in [MAX_TICK - 100, MAX_TICK - 70_000, MAX_TICK - MAX_DELTA] {
            let step = if cfg!(miri) { 9_999_991 } else { 997 };
            for e in (clk..=MAX_TICK)
                .step_by(step)
                .chain([MAX_TICK - 2, MAX_TICK])
            {
                let p = calc_position(clamp_expiry(e, clk), clk);
                assert!(p.expiry <= MAX_TICK, "{clk} {e} {p:?}");
            }
        }
    }

    #[test]
    fn past_and_clamp() {
        assert_eq!(calc_position(5, 10).idx, DUE);
        assert_eq!(clamp_expiry(u64::MAX, 10), 10 + MAX_DELTA);
        assert_eq!(clamp_expiry(3, 10), 3);
        assert_eq!(round_up(u64::MAX, 8), !((1u64 << 24) - 1));
    }
}
