//! State bits that the wheel timer (`timer_list/`) and the hrtimer
//! (`hrtimer/`) share, defined once here, below both.
//!
//! * A base's `closed` byte (`BaseInner::closed`, `HrInner::closed`),
//!   written and read under that base's lock: why the base refuses new
//!   timers. Both bits may be set at once (a system dropped while a worker
//!   is offline); [`DEAD`] wins, as it is never cleared.
//! * A timer's [`SHUTDOWN`] flag, in its flags word (`RawTimer::meta` for a
//!   wheel timer, `HrEntry::flags` for an hrtimer): the kernel's
//!   `timer_shutdown()`, after which every arm is refused.
//!
//! How a timer moving between two bases is tagged differs by the kind of
//! its base link, so those tags stay with the entries: a wheel timer's
//! link is the base's address (`timer_list/entry/`, `MIGRATING`: bit 0 of
//! the address), an hrtimer's the worker's number (`hrtimer/entry.rs`,
//! `MIGRATING_WORKER`: the number's top bit).

/// `closed`: the system shut down; the base accepts no timers, ever again.
pub(crate) const DEAD: u8 = 1;
/// `closed`: the base's worker is offline (hot-plug); arms go elsewhere
/// until it is back.
pub(crate) const OFFLINE: u8 = 2;

/// A timer's flag: shut down (the kernel's `timer_shutdown()`); the timer
/// is never queued again. Bit 2, the place the wheel timer's flags give it
/// beside `PINNED` and `DEFERRABLE`.
pub(crate) const SHUTDOWN: u32 = 1 << 2;
