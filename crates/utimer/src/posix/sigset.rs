//! [`SignalSet`]: a set of signal numbers that any thread, a signal
//! handler included, updates and reads without a lock.

use std::sync::atomic::{AtomicU64, Ordering::AcqRel, Ordering::Acquire};

/// Signals 1..=64 as one atomic word (bit `signo - 1`): the kernel's
/// `sigset_t` with `sigaddset()`, `sigdelset()` and `sigismember()`, for
/// process-wide bookkeeping that a signal handler may read (no lock, no
/// allocation). A number outside `1..=64` is in no set and joins none.
#[doc(alias = "sigset_t")]
#[derive(Debug, Default)]
pub struct SignalSet(AtomicU64);

/// `signo`'s bit, if it is a signal number.
fn bit(signo: i32) -> Option<u64> {
    u32::try_from(signo)
        .ok()
        .filter(|s| (1..=64).contains(s))
        .map(|s| 1u64 << (s - 1))
}

impl SignalSet {
    /// The empty set: the kernel's `sigemptyset()`.
    #[doc(alias = "sigemptyset")]
    pub const fn new() -> SignalSet {
        SignalSet(AtomicU64::new(0))
    }

    /// Adds `signo` (`member`) or removes it: the kernel's `sigaddset()`
    /// and `sigdelset()`. Returns whether it was in the set before.
    #[doc(alias = "sigaddset")]
    #[doc(alias = "sigdelset")]
    pub fn set(&self, signo: i32, member: bool) -> bool {
        let Some(b) = bit(signo) else { return false };
        let was = if member {
            self.0.fetch_or(b, AcqRel)
        } else {
            self.0.fetch_and(!b, AcqRel)
        };
        was & b != 0
    }

    /// Empties the set: the kernel's `sigemptyset()` of a set in use.
    pub fn clear(&self) {
        self.0.store(0, std::sync::atomic::Ordering::Release);
    }

    /// Whether `signo` is in the set: the kernel's `sigismember()`.
    #[doc(alias = "sigismember")]
    pub fn contains(&self, signo: i32) -> bool {
        bit(signo).is_some_and(|b| self.0.load(Acquire) & b != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::SignalSet;

    #[test]
    fn members_come_and_go_and_bad_numbers_never_join() {
        let s = SignalSet::new();
        assert!(!s.set(10, true), "10 was not in the empty set");
        assert!(s.set(10, true), "10 is in it now");
        assert!(s.contains(10) && !s.contains(11));
        assert!(!s.set(64, true) && s.contains(64));
        assert!(!s.set(1, true) && s.contains(1));
        for bad in [0, -1, 65, i32::MIN, i32::MAX] {
            assert!(!s.set(bad, true), "{bad} joined");
            assert!(!s.contains(bad), "{bad} is a member");
        }
        assert!(s.set(10, false), "10 was in it");
        assert!(!s.contains(10) && s.contains(64) && s.contains(1));
        s.clear();
        assert!(!s.contains(64) && !s.contains(1));
    }
}
