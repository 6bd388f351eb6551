//! A binary-heap timer queue with lazy deletion: the classic "priority queue
//! of deadlines" people write when they need timers.
//!
//! The heap holds `(deadline, slot, generation)`. A timer is a slot; each
//! slot keeps its current generation and whether it is pending. Cancelling
//! or re-arming bumps the generation, which makes the old heap entry stale
//! without searching for it (a heap cannot remove from the middle cheaply).
//! Stale entries are dropped when they reach the top (every mutation purges
//! the top), and the heap is rebuilt from its live entries when stale ones
//! outnumber live ones, so memory stays bounded under endless re-arming.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    deadline: u64,
    slot: u32,
    gen: u32,
}

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    gen: u32,
    pending: bool,
}

/// The queue.
#[derive(Debug, Default)]
pub struct HeapTimers {
    heap: BinaryHeap<Reverse<Entry>>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    live: usize,
}

/// The handle the user holds: a slot number.
#[derive(Debug)]
pub struct HeapTimer(u32);

impl HeapTimers {
    pub fn new() -> Self {
        Self::default()
    }

    /// A new, unarmed timer.
    pub fn timer(&mut self) -> HeapTimer {
        match self.free.pop() {
            Some(s) => HeapTimer(s),
            None => {
                self.slots.push(Slot::default());
                HeapTimer(self.slots.len() as u32 - 1)
            }
        }
    }

    /// Gives a timer's slot back (cancelling it first).
    pub fn release(&mut self, t: HeapTimer) {
        self.cancel(&t);
        self.free.push(t.0);
    }

    fn is_live(&self, e: &Entry) -> bool {
        let s = self.slots[e.slot as usize];
        s.pending && s.gen == e.gen
    }

    fn purge_top(&mut self) {
        while let Some(Reverse(top)) = self.heap.peek() {
            if self.is_live(top) {
                break;
            }
            self.heap.pop();
        }
    }

    fn maybe_compact(&mut self) {
        if self.heap.len() > 2 * self.live + 1024 {
            let slots = &self.slots;
            self.heap.retain(|Reverse(e)| {
                let s = slots[e.slot as usize];
                s.pending && s.gen == e.gen
            });
        }
    }

    /// Arms (or re-arms) `t` to `deadline`; returns whether it was pending.
    pub fn arm(&mut self, t: &HeapTimer, deadline: u64) -> bool {
        let slot = &mut self.slots[t.0 as usize];
        let was = slot.pending;
        slot.gen = slot.gen.wrapping_add(1);
        slot.pending = true;
        let gen = slot.gen;
        if !was {
            self.live += 1;
        }
        self.heap.push(Reverse(Entry {
            deadline,
            slot: t.0,
            gen,
        }));
        if was {
            self.purge_top();
            self.maybe_compact();
        }
        was
    }

    /// Cancels `t`; returns whether it was pending.
    pub fn cancel(&mut self, t: &HeapTimer) -> bool {
        let slot = &mut self.slots[t.0 as usize];
        if !slot.pending {
            return false;
        }
        slot.pending = false;
        slot.gen = slot.gen.wrapping_add(1);
        self.live -= 1;
        self.purge_top();
        self.maybe_compact();
        true
    }

    pub fn is_pending(&self, t: &HeapTimer) -> bool {
        self.slots[t.0 as usize].pending
    }

    /// Number of pending timers.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.live
    }

    /// The earliest pending deadline.
    pub fn next_expiry(&mut self) -> Option<u64> {
        self.purge_top();
        self.heap.peek().map(|Reverse(e)| e.deadline)
    }

    /// Pops every timer due at `now`, calling `f(slot)` for each; returns
    /// how many fired.
    pub fn expire(&mut self, now: u64, mut f: impl FnMut(u32)) -> usize {
        let mut fired = 0;
        while let Some(Reverse(top)) = self.heap.peek() {
            if top.deadline > now {
                break;
            }
            let e = *top;
            self.heap.pop();
            if self.is_live(&e) {
                let s = &mut self.slots[e.slot as usize];
                s.pending = false;
                s.gen = s.gen.wrapping_add(1);
                self.live -= 1;
                fired += 1;
                f(e.slot);
            }
        }
        fired
    }
}

/// [`HeapTimers`] as a benchmark peer, with a virtual clock.
pub type HeapPeer = super::virtual_clock::VirtualPeer<HeapTimers>;

impl super::virtual_clock::VirtualQueue for HeapTimers {
    type Handle = HeapTimer;
    const NAME: &'static str = "BinaryHeap";

    fn new() -> Self {
        HeapTimers::new()
    }

    fn timer(&mut self) -> HeapTimer {
        HeapTimers::timer(self)
    }

    #[inline]
    fn arm(&mut self, h: &mut HeapTimer, expires: u64) {
        HeapTimers::arm(self, h, expires);
    }

    #[inline]
    fn cancel(&mut self, h: &mut HeapTimer) {
        HeapTimers::cancel(self, h);
    }

    fn next_expiry(&mut self) -> Option<u64> {
        HeapTimers::next_expiry(self)
    }

    fn is_pending(&self, h: &HeapTimer) -> bool {
        HeapTimers::is_pending(self, h)
    }

    fn expire(&mut self, until: u64) -> usize {
        HeapTimers::expire(self, until, |s| {
            std::hint::black_box(s);
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arm_cancel_expire() {
        let mut q = HeapTimers::new();
        let a = q.timer();
        let b = q.timer();
        let c = q.timer();
        q.arm(&a, 10);
        q.arm(&b, 5);
        q.arm(&c, 7);
        assert_eq!(q.next_expiry(), Some(5));
        assert!(q.cancel(&b));
        assert!(!q.cancel(&b));
        assert_eq!(q.next_expiry(), Some(7));
        assert!(q.arm(&c, 20));
        assert_eq!(q.next_expiry(), Some(10));
        let mut fired = Vec::new();
        assert_eq!(q.expire(15, |s| fired.push(s)), 1);
        assert_eq!(fired, vec![a.0]);
        assert_eq!(q.len(), 1);
        assert!(q.is_pending(&c));
    }

    #[test]
    fn rearm_forever_stays_bounded() {
        let mut q = HeapTimers::new();
        let far = q.timer();
        q.arm(&far, 1_000_000);
        let t = q.timer();
        for i in 0..100_000u64 {
            q.arm(&t, 1000 + (i % 2) * 5000);
        }
        assert!(q.heap.len() < 4096, "{}", q.heap.len());
        assert_eq!(q.len(), 2);
    }
}
