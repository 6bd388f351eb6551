//! An ordered-map timer queue: `BTreeMap<(deadline, id), ()>`.
//!
//! The other obvious design next to the heap: exact removal in O(log n), the
//! earliest timer is the first key. The handle remembers its key so it can
//! cancel or move itself.

use std::collections::BTreeMap;

/// The queue.
#[derive(Debug, Default)]
pub struct BTreeTimers {
    map: BTreeMap<(u64, u64), ()>,
    next_id: u64,
}

/// The handle the user holds: its id and, while armed, its deadline.
#[derive(Debug)]
pub struct BTreeTimer {
    id: u64,
    deadline: Option<u64>,
}

impl BTreeTimers {
    pub fn new() -> Self {
        Self::default()
    }

    /// A new, unarmed timer.
    pub fn timer(&mut self) -> BTreeTimer {
        self.next_id += 1;
        BTreeTimer {
            id: self.next_id,
            deadline: None,
        }
    }

    /// Arms (or moves) `t` to `deadline`; returns whether it was pending.
    pub fn arm(&mut self, t: &mut BTreeTimer, deadline: u64) -> bool {
        let was = match t.deadline {
            Some(d) => self.map.remove(&(d, t.id)).is_some(),
            None => false,
        };
        self.map.insert((deadline, t.id), ());
        t.deadline = Some(deadline);
        was
    }

    /// Cancels `t`; returns whether it was pending.
    pub fn cancel(&mut self, t: &mut BTreeTimer) -> bool {
        match t.deadline.take() {
            Some(d) => self.map.remove(&(d, t.id)).is_some(),
            None => false,
        }
    }

    /// Whether `t` is still in the map (not cancelled, not fired).
    pub fn is_pending(&self, t: &BTreeTimer) -> bool {
        t.deadline
            .is_some_and(|d| self.map.contains_key(&(d, t.id)))
    }

    /// The earliest pending deadline.
    pub fn next_expiry(&self) -> Option<u64> {
        self.map.first_key_value().map(|(&(d, _), _)| d)
    }

    /// Removes every timer due at `now`, calling `f(id)` for each.
    ///
    /// The handles of fired timers still remember their old key; cancelling
    /// one later finds nothing and returns `false`.
    pub fn expire(&mut self, now: u64, mut f: impl FnMut(u64)) -> usize {
        let mut fired = 0;
        while let Some(entry) = self.map.first_entry() {
            let (d, id) = *entry.key();
            if d > now {
                break;
            }
            entry.remove();
            fired += 1;
            f(id);
        }
        fired
    }
}

/// [`BTreeTimers`] as a benchmark peer, with a virtual clock.
pub type BTreePeer = super::virtual_clock::VirtualPeer<BTreeTimers>;

impl super::virtual_clock::VirtualQueue for BTreeTimers {
    type Handle = BTreeTimer;
    const NAME: &'static str = "BTreeMap";

    fn new() -> Self {
        BTreeTimers::new()
    }

    fn timer(&mut self) -> BTreeTimer {
        BTreeTimers::timer(self)
    }

    #[inline]
    fn arm(&mut self, h: &mut BTreeTimer, expires: u64) {
        BTreeTimers::arm(self, h, expires);
    }

    #[inline]
    fn cancel(&mut self, h: &mut BTreeTimer) {
        BTreeTimers::cancel(self, h);
    }

    fn next_expiry(&mut self) -> Option<u64> {
        BTreeTimers::next_expiry(self)
    }

    fn is_pending(&self, h: &BTreeTimer) -> bool {
        BTreeTimers::is_pending(self, h)
    }

    fn expire(&mut self, until: u64) -> usize {
        BTreeTimers::expire(self, until, |id| {
            std::hint::black_box(id);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arm_move_cancel_expire() {
        let mut q = BTreeTimers::new();
        let mut a = q.timer();
        let mut b = q.timer();
        q.arm(&mut a, 10);
        q.arm(&mut b, 5);
        assert_eq!(q.next_expiry(), Some(5));
        assert!(q.arm(&mut b, 20));
        assert_eq!(q.next_expiry(), Some(10));
        assert_eq!(q.expire(10, |_| {}), 1);
        assert!(!q.cancel(&mut a));
        assert!(q.cancel(&mut b));
        assert!(q.map.is_empty());
    }
}
