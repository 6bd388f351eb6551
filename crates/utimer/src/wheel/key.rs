//! Keys: how a caller names an entry it queued.
//!
//! A [`Key`] is a slot number (a block and a position in it, see
//! `blocks.rs`) plus the slot's *generation*. Removing an
//! entry, or handing it out from an expiry run, bumps the generation of its
//! slot, so a key kept after its entry left the wheel no longer matches
//! when the slot is reused: [`Wheel::remove`](super::Wheel::remove) with a
//! stale key returns `None` and touches nothing. A slot whose 32-bit
//! generation is used up is retired instead of wrapping around, so a key can
//! never name a later entry.
//!
//! The timer bases inside utimer do not need the check: a timer's key is
//! read and written only under its base's lock, and only while the timer's
//! state word says it is queued (see `timer_list/entry/`). They use the crate-private
//! [`Unchecked`] generation, which takes no space: 8 bytes a slot for a
//! pointer.

mod sealed {
    pub trait Sealed {}
}

/// What a [`Key`] carries besides the slot number to tell a slot's
/// occupants apart. Sealed: `u32` (checked) is the one public choice.
pub trait Generation: Copy + Eq + std::fmt::Debug + sealed::Sealed {
    /// The generation of a new slot.
    const FIRST: Self;
    /// Whether [`next`](Self::next) can return `None` (slots may retire).
    #[doc(hidden)]
    const RUNS_OUT: bool = true;
    /// The generation after this one, or `None` when it is used up and the
    /// slot must be retired.
    fn next(self) -> Option<Self>;
}

impl sealed::Sealed for u32 {}
impl Generation for u32 {
    const FIRST: u32 = 0;
    #[inline(always)]
    fn next(self) -> Option<u32> {
        self.checked_add(1)
    }
}

/// No generation: keys are not checked against reuse. Only for owners that
/// provably never use a key after its entry left the wheel.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Unchecked;

impl sealed::Sealed for Unchecked {}
impl Generation for Unchecked {
    const FIRST: Unchecked = Unchecked;
    const RUNS_OUT: bool = false;
    #[inline(always)]
    fn next(self) -> Option<Unchecked> {
        Some(Unchecked)
    }
}

/// Identifies an entry in a [`Wheel`](super::Wheel). Valid until the entry
/// is removed or returned by [`Wheel::poll`](super::Wheel::poll); after
/// that it names nothing, even when its slot holds another entry.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key<G = u32> {
    pub(crate) slot: u32,
    pub(crate) gen: G,
}

impl Key<Unchecked> {
    /// A key rebuilt from a slot number kept by an owner that never uses
    /// stale keys (the timer bases).
    #[inline(always)]
    pub(crate) fn unchecked(slot: u32) -> Self {
        Key {
            slot,
            gen: Unchecked,
        }
    }
}

impl<G> Key<G> {
    /// The slot number (the same slot may later hold other entries, under
    /// other keys).
    #[inline]
    pub fn slot(&self) -> u32 {
        self.slot
    }
}
