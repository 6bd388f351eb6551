//! The two words of timer state that are read without a lock.
//!
//! **`expires_idx`** packs the expiry of record and the wheel bucket:
//!
//! ```text
//!  63                                      10 9          0
//! +------------------------------------------+------------+
//! |  expires (54 bits, clamped, in ticks)    | bucket idx |
//! +------------------------------------------+------------+
//!          idx <= DUE: pending (in that bucket, or due)
//!          idx == IDX_RUNNING: not pending, its callback is running
//!          idx == IDX_NONE: not pending, callback not running (idle)
//! ```
//!
//! One load gives a consistent `(pending, expires, bucket)` triple, which is
//! what makes the lock-free same-bucket check of `modify` exact (see
//! `timer/modify.rs`), and tells `delete_sync` in one load that a timer is
//! idle — neither pending nor running — so it may return without a lock.
//! (A timer re-armed by its own callback shows as pending while the
//! callback still runs; only the base's `running` tells then.) The kernel keeps `expires` in `timer_list` and the
//! bucket in `flags`, and reads them with two loads.
//!
//! **`base`** is the address of the base the timer belongs to, like the
//! CPU number in the kernel's `timer->flags`. Bases are 128-byte aligned, so
//! bit 0 is free for [`MIGRATING`]: set while the timer moves between two
//! bases, when it is on neither.
//!
//! **`flags`** holds [`PINNED`] and [`DEFERRABLE`], fixed at creation, and
//! [`SHUTDOWN`], set once under the base lock.
//!
//! `expires_idx` and `base` are written only under the lock of the base
//! named in `base` (and `MIGRATING` is set and cleared only while moving
//! between two bases, holding the old, then the new base's lock).

use crate::wheel::{DUE, MAX_DELTA, MAX_TICK};

pub(crate) const IDX_BITS: u32 = 10;
/// Bucket index meaning "not queued anywhere, callback not running".
pub(crate) const IDX_NONE: u16 = (1 << IDX_BITS) - 1;
/// Bucket index meaning "not queued; its callback is running".
pub(crate) const IDX_RUNNING: u16 = IDX_NONE - 1;
const IDX_MASK: u64 = IDX_NONE as u64;

// Clamped expiries fit the packed field.
const _: () = assert!(MAX_TICK + MAX_DELTA < 1 << (64 - IDX_BITS));

#[inline]
pub(crate) fn pack(expires: u64, idx: u16) -> u64 {
    debug_assert!(expires < 1 << (64 - IDX_BITS));
    (expires << IDX_BITS) | idx as u64
}

#[inline]
pub(crate) fn expires_of(word: u64) -> u64 {
    word >> IDX_BITS
}

#[inline]
pub(crate) fn idx_of(word: u64) -> u16 {
    (word & IDX_MASK) as u16
}

#[inline]
pub(crate) fn is_pending(word: u64) -> bool {
    idx_of(word) <= DUE
}

/// Neither pending nor running its callback.
#[inline]
pub(crate) fn is_idle(word: u64) -> bool {
    word & IDX_MASK == IDX_MASK
}

/// Tag bit of the `base` word: the timer is between two bases; wait for it
/// to arrive.
pub(crate) const MIGRATING: usize = 1;
/// See [`TimerFlags::PINNED`](crate::TimerFlags::PINNED).
pub(crate) const PINNED: u32 = 1 << 0;
/// See [`TimerFlags::DEFERRABLE`](crate::TimerFlags::DEFERRABLE).
pub(crate) const DEFERRABLE: u32 = 1 << 1;
/// Set by `shutdown` under the base lock: every later arm is refused.
pub(crate) const SHUTDOWN: u32 = 1 << 2;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_roundtrip() {
        let big = MAX_TICK + MAX_DELTA;
        for (e, i) in [
            (0, 0),
            (5, 575),
            (big, 576),
            (big, IDX_RUNNING),
            (big, IDX_NONE),
        ] {
            let w = pack(e, i);
            assert_eq!((expires_of(w), idx_of(w)), (e, i));
            assert_eq!(is_pending(w), i <= DUE);
            assert_eq!(is_idle(w), i == IDX_NONE);
        }
    }
}
