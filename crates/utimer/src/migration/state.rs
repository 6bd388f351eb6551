//! A group's state in one atomic word: which children are active, which of
//! them is the migrator, and a sequence counter. The kernel's
//! `union tmigr_state`.
//!
//! ```text
//!  31            16 15        8 7          0
//! +----------------+-----------+------------+
//! |      seq       | migrator  |   active   |
//! +----------------+-----------+------------+
//! ```
//!
//! `active` has one bit per child (a group has at most 8). `migrator` is the
//! child that checks the group's events on its tick, or [`NO_MIGRATOR`]. A
//! group is *active* while it has a migrator, which it has exactly while
//! some child is active. Every change goes through
//! [`GroupState::reconcile`] and a compare-and-swap of the whole word, and
//! bumps `seq`, even when the bits stay the same: see the race walked
//! through in the module essay (`migration/mod.rs`).

/// `migrator` when no child is active.
pub(crate) const NO_MIGRATOR: u8 = 0xFF;

/// One group's state word, unpacked.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct GroupState(u32);

impl GroupState {
    /// No child active, no migrator, sequence 0.
    pub(crate) const IDLE: GroupState = GroupState((NO_MIGRATOR as u32) << 8);

    fn pack(active: u8, migrator: u8, seq: u16) -> GroupState {
        GroupState(active as u32 | (migrator as u32) << 8 | (seq as u32) << 16)
    }

    /// From the atomic word.
    #[inline]
    pub(crate) fn from_word(word: u32) -> GroupState {
        GroupState(word)
    }

    /// The atomic word.
    #[inline]
    pub(crate) fn word(self) -> u32 {
        self.0
    }

    /// One bit per active child.
    #[inline]
    pub(crate) fn active(self) -> u8 {
        self.0 as u8
    }

    /// The child that handles the group's events, if any is active.
    #[inline]
    pub(crate) fn migrator(self) -> Option<u8> {
        let m = (self.0 >> 8) as u8;
        (m != NO_MIGRATOR).then_some(m)
    }

    /// The sequence counter (wraps).
    #[inline]
    pub(crate) fn seq(self) -> u16 {
        (self.0 >> 16) as u16
    }

    /// Whether the group has an active child (and so a migrator).
    #[inline]
    pub(crate) fn is_active(self) -> bool {
        self.migrator().is_some()
    }

    /// The state after child `child` is found `child_active`: its bit set or
    /// cleared; the migrator kept, taken by the child if there was none, or
    /// handed to the lowest other active child (or to nobody) if the child
    /// was the migrator and went idle; the counter bumped.
    pub(crate) fn reconcile(self, child: u8, child_active: bool) -> GroupState {
        debug_assert!(child < 8);
        let bit = 1u8 << child;
        let active = if child_active {
            self.active() | bit
        } else {
            self.active() & !bit
        };
        let migrator = match self.migrator() {
            None if child_active => child,
            Some(m) if m == child && !child_active => {
                if active == 0 {
                    NO_MIGRATOR
                } else {
                    active.trailing_zeros() as u8
                }
            }
            Some(m) => m,
            None => NO_MIGRATOR,
        };
        GroupState::pack(active, migrator, self.seq().wrapping_add(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_active_child_becomes_migrator() {
        let s = GroupState::IDLE.reconcile(3, true);
        assert_eq!(s.active(), 0b1000);
        assert_eq!(s.migrator(), Some(3));
        assert_eq!(s.seq(), 1);
        let s = s.reconcile(1, true);
        assert_eq!(s.active(), 0b1010);
        assert_eq!(s.migrator(), Some(3), "an active migrator keeps its role");
    }

    #[test]
    fn migrator_hands_off_to_lowest_active_child() {
        let s = GroupState::IDLE
            .reconcile(5, true)
            .reconcile(2, true)
            .reconcile(7, true);
        let s = s.reconcile(5, false);
        assert_eq!(s.migrator(), Some(2));
        assert_eq!(s.active(), 0b1000_0100);
        let s = s.reconcile(2, false).reconcile(7, false);
        assert_eq!(s.migrator(), None);
        assert_eq!(s.active(), 0);
        assert!(!s.is_active());
    }

    #[test]
    fn no_change_still_bumps_the_counter() {
        let s = GroupState::IDLE.reconcile(0, true);
        let t = s.reconcile(0, true);
        assert_eq!((t.active(), t.migrator()), (s.active(), s.migrator()));
        assert_ne!(t.word(), s.word(), "seq must change");
        let mut u = t;
        for _ in 0..70_000 {
            u = u.reconcile(0, true);
        }
        assert_eq!(
            u.migrator(),
            Some(0),
            "the counter wraps without touching the rest"
        );
    }
}
