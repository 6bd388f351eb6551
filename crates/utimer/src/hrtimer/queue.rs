//! The hrtimer's ordered queue: an indexed 4-ary min-heap over a slab.
//!
//! The kernel keeps each clock base's pending hrtimers in a "timerqueue", an
//! rbtree ordered by expiry with a cached leftmost node. utimer keeps the
//! same contract (O(1) first entry, O(log n) insert and removal of any
//! entry) with a flat, index-based structure that needs no `unsafe`:
//!
//! * the **slab** holds the payloads and soft expiries; an entry's slot index
//!   is its [`Handle`], stable for as long as the entry is queued. Vacant
//!   slots form a free list, so once the arrays have grown to the largest
//!   number of entries queued at once, nothing allocates;
//! * the **heap** is a dense array of 16-byte [`Node`]s `(hard, seq, slot)`,
//!   four to a cache line: a sift step compares one node with its (up to
//!   four) children, all on one line;
//! * **`pos`** maps slot -> heap position (`NONE` for a vacant slot, which is
//!   also the "live" marker). Sifting touches only the heap and the `pos`
//!   words of the nodes it moves, never the slab.
//!
//! # Order and slack
//!
//! Entries are ordered by hard expiry; ties break FIFO by insertion order
//! (`seq`; [`Queue::update`] counts as a fresh insertion, like the kernel's
//! remove + enqueue, which puts a node to the right of equal keys).
//!
//! Each entry has a soft expiry `soft <= hard` (the kernel's
//! `hrtimer_start_range_ns`: `hard = soft + slack`). The owner programs its
//! wake-up for [`Queue::first`]'s hard expiry; when it runs at `now`, it
//! takes entries with [`Queue::pop_due`], which follows the kernel's
//! `__hrtimer_run_queues` exactly: look only at the first entry in **hard**
//! order, run it if its **soft** expiry is `<= now`, and otherwise stop, even
//! if some entry further on (a later hard expiry) has an earlier soft expiry
//! that has passed. That entry waits for the next wake-up, which its own hard
//! expiry bounds. This is what lets nearby deadlines share one wake-up.
//!
//! # Sequence numbers
//!
//! `seq` is 32 bits to keep a node at 16 bytes. When the counter would wrap,
//! the heap is sorted by `(hard, seq)` (a sorted array is a valid heap) and
//! renumbered `0..len` in that order, which keeps every tie's order; that
//! costs O(n log n) once per ~4 billion insertions.

use std::mem;

/// "No heap position": marks a vacant slot, and ends the free list.
const NONE: u32 = u32::MAX;
/// Children per heap node.
const ARITY: usize = 4;
/// The most entries one queue can hold (slot indices stay below [`NONE`]).
const MAX_ENTRIES: usize = NONE as usize;

/// Names a queued entry: its slab slot.
///
/// Valid from [`Queue::insert`] until the entry leaves the queue
/// ([`Queue::remove`], [`Queue::pop_due`], [`Queue::drain`]). After that the
/// slot may be reused by a later insertion, so the caller must not use a
/// handle once its entry has left: a vacant slot is detected (debug panic,
/// `None` in release), but a reused one names the newer entry.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Handle(u32);

impl Handle {
    /// The slot index, e.g. to store the handle in an atomic word.
    #[inline]
    pub(crate) fn index(self) -> u32 {
        self.0
    }

    /// The handle with slot index `index` (the inverse of [`Handle::index`]).
    #[inline]
    pub(crate) fn from_index(index: u32) -> Self {
        Handle(index)
    }
}

/// One heap element: the sort key and the slot it belongs to.
#[derive(Copy, Clone, Debug)]
struct Node {
    hard: u64,
    seq: u32,
    slot: u32,
}

impl Node {
    /// Whether `self` comes before `other`: earlier hard expiry, then FIFO.
    #[inline]
    fn before(&self, other: &Node) -> bool {
        (self.hard, self.seq) < (other.hard, other.seq)
    }
}

/// A slab slot: a queued entry, or a link in the free list.
enum Slot<T> {
    Live { soft: u64, value: T },
    Free { next: u32 },
}

/// The ordered queue of one hrtimer clock base. See the module docs.
pub(crate) struct Queue<T> {
    heap: Vec<Node>,
    /// Slot -> heap position, `NONE` for a vacant slot.
    pos: Vec<u32>,
    slab: Vec<Slot<T>>,
    /// First vacant slot, or `NONE`.
    free: u32,
    /// The next sequence number to hand out.
    seq: u32,
    /// Entries promised room ([`promise`](Self::promise)).
    promised: usize,
}

/// Grows `v`'s capacity to at least `total`.
fn reserve_total<V>(v: &mut Vec<V>, total: usize) {
    if v.capacity() < total {
        v.reserve(total - v.len());
    }
}

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Queue<T> {
    /// An empty queue; allocates nothing until the first insertion.
    pub(crate) fn new() -> Self {
        Queue {
            heap: Vec::new(),
            pos: Vec::new(),
            slab: Vec::new(),
            free: NONE,
            seq: 0,
            promised: 0,
        }
    }

    /// Promises room for one more entry, inserted later: the arrays grow
    /// now, so that inserting up to the promised number of entries
    /// allocates nothing. An hrtimer promises itself to its base when it is
    /// made and when it moves there, because its start may run in a signal
    /// handler (`timer_settime` is async-signal-safe), which must not call
    /// an allocator that it may have interrupted.
    pub(crate) fn promise(&mut self) {
        self.promised += 1;
        let total = self.promised;
        reserve_total(&mut self.heap, total);
        reserve_total(&mut self.pos, total);
        reserve_total(&mut self.slab, total);
    }

    /// Takes back a [`promise`](Self::promise) (the capacity stays).
    pub(crate) fn unpromise(&mut self) {
        self.promised = self.promised.saturating_sub(1);
    }

    /// An empty queue with room for `n` entries before it allocates.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn with_capacity(n: usize) -> Self {
        Queue {
            heap: Vec::with_capacity(n),
            pos: Vec::with_capacity(n),
            slab: Vec::with_capacity(n),
            free: NONE,
            seq: 0,
            promised: 0,
        }
    }

    /// Number of queued entries.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether nothing is queued.
    #[inline]
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Queues `value` with expiries `soft <= hard` (debug-asserted; callers
    /// guarantee it) and returns its handle. Among entries with the same
    /// hard expiry it comes last. O(log n); allocates only when the queue
    /// holds more entries than ever before.
    ///
    /// Panics if the queue already holds `u32::MAX` entries.
    pub(crate) fn insert(&mut self, soft: u64, hard: u64, value: T) -> Handle {
        debug_assert!(soft <= hard, "soft expiry {soft} after hard expiry {hard}");
        let seq = self.next_seq();
        let slot = if self.free != NONE {
            let slot = self.free;
            match mem::replace(&mut self.slab[slot as usize], Slot::Live { soft, value }) {
                Slot::Free { next } => self.free = next,
                Slot::Live { .. } => unreachable!("free list names a live slot"),
            }
            slot
        } else {
            assert!(self.slab.len() < MAX_ENTRIES, "hrtimer queue full");
            self.slab.push(Slot::Live { soft, value });
            self.pos.push(NONE);
            (self.slab.len() - 1) as u32
        };
        let i = self.heap.len();
        self.heap.push(Node { hard, seq, slot });
        self.sift_up(i);
        Handle(slot)
    }

    /// Removes a queued entry and returns its value. O(log n).
    ///
    /// `h` must name a queued entry (see [`Handle`]): a vacant or
    /// out-of-range slot panics in debug builds and returns `None` in
    /// release builds.
    pub(crate) fn remove(&mut self, h: Handle) -> Option<T> {
        let Some(i) = self.position(h) else {
            stale(h);
            return None;
        };
        Some(self.remove_at(i).1)
    }

    /// `(soft, hard)` expiries of the entry with the earliest hard expiry
    /// (the first to program a wake-up for). O(1).
    #[inline]
    pub(crate) fn first(&self) -> Option<(u64, u64)> {
        let top = self.heap.first()?;
        Some((self.soft(top.slot), top.hard))
    }

    /// Takes the first entry in hard order if its soft expiry is `<= now`;
    /// `None` if the queue is empty or the first entry's soft expiry is
    /// later, whatever the entries behind it hold (the kernel's rule; see
    /// the module docs). Call it in a loop to run everything due.
    ///
    /// The returned handle is already vacant (it may be reused by the next
    /// insertion); it is given only to identify the entry.
    pub(crate) fn pop_due(&mut self, now: u64) -> Option<(Handle, T)> {
        let top = self.heap.first()?;
        if self.soft(top.slot) > now {
            return None;
        }
        let (_, value, slot) = self.remove_at(0);
        Some((Handle(slot), value))
    }

    /// Moves a queued entry to new expiries `soft <= hard` in place, keeping
    /// its handle and value; among entries with the same hard expiry it
    /// comes last, as if just inserted. O(log n); never allocates.
    ///
    /// `h` must name a queued entry: otherwise this panics in debug builds
    /// and does nothing in release builds.
    pub(crate) fn update(&mut self, h: Handle, soft: u64, hard: u64) {
        debug_assert!(soft <= hard, "soft expiry {soft} after hard expiry {hard}");
        if self.position(h).is_none() {
            stale(h);
            return;
        }
        // May renumber (and so reorder) the heap: read the position after.
        let seq = self.next_seq();
        let i = self.pos[h.0 as usize] as usize;
        if let Slot::Live { soft: s, .. } = &mut self.slab[h.0 as usize] {
            *s = soft;
        }
        let old = self.heap[i];
        self.heap[i] = Node {
            hard,
            seq,
            slot: h.0,
        };
        // The new key is strictly later than the old one when `hard` did not
        // decrease (the new seq is the largest), so it can only sink.
        if hard < old.hard {
            self.sift_up(i);
        } else {
            self.sift_down(i);
        }
    }

    /// `(soft, hard)` expiries of a queued entry; `None` for a vacant slot.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn expiries(&self, h: Handle) -> Option<(u64, u64)> {
        let i = self.position(h)?;
        Some((self.soft(h.0), self.heap[i].hard))
    }

    /// The value of a queued entry; `None` for a vacant slot.
    pub(crate) fn get(&self, h: Handle) -> Option<&T> {
        match self.slab.get(h.0 as usize)? {
            Slot::Live { value, .. } => Some(value),
            Slot::Free { .. } => None,
        }
    }

    /// Removes and returns every entry as `(soft, hard, value)`, in no
    /// particular order (to move them to another queue). All handles become
    /// vacant; the arrays keep their capacity.
    pub(crate) fn drain(&mut self) -> Vec<(u64, u64, T)> {
        let mut out = Vec::with_capacity(self.heap.len());
        for node in self.heap.drain(..) {
            let slot = mem::replace(
                &mut self.slab[node.slot as usize],
                Slot::Free { next: NONE },
            );
            if let Slot::Live { soft, value } = slot {
                out.push((soft, node.hard, value));
            }
        }
        self.slab.clear();
        self.pos.clear();
        self.free = NONE;
        self.seq = 0;
        out
    }

    /// Heap position of a queued entry, `None` for a vacant or unknown slot.
    #[inline]
    fn position(&self, h: Handle) -> Option<usize> {
        match self.pos.get(h.0 as usize) {
            Some(&p) if p != NONE => Some(p as usize),
            _ => None,
        }
    }

    /// Soft expiry of a live slot.
    #[inline]
    fn soft(&self, slot: u32) -> u64 {
        match &self.slab[slot as usize] {
            Slot::Live { soft, .. } => *soft,
            Slot::Free { .. } => unreachable!("heap names a vacant slot"),
        }
    }

    /// A fresh sequence number, renumbering first if the counter is spent.
    #[inline]
    fn next_seq(&mut self) -> u32 {
        if self.seq == u32::MAX {
            self.renumber();
        }
        let s = self.seq;
        self.seq += 1;
        s
    }

    /// Sorts the heap by key and renumbers it `0..len`, keeping the order.
    #[cold]
    fn renumber(&mut self) {
        self.heap.sort_unstable_by_key(|n| (n.hard, n.seq));
        for (i, node) in self.heap.iter_mut().enumerate() {
            node.seq = i as u32;
            self.pos[node.slot as usize] = i as u32;
        }
        self.seq = self.heap.len() as u32;
    }

    /// Takes the entry at heap position `i` out: `(soft, value, slot)`; its
    /// slot goes on the free list.
    fn remove_at(&mut self, i: usize) -> (u64, T, u32) {
        let slot = self.heap[i].slot;
        let last = self.heap.pop().expect("remove_at on an empty heap");
        if i < self.heap.len() {
            // Fill the hole with the last node and restore the order around it.
            self.heap[i] = last;
            if i > 0 && last.before(&self.heap[(i - 1) / ARITY]) {
                self.sift_up(i);
            } else {
                self.sift_down(i);
            }
        }
        self.pos[slot as usize] = NONE;
        match mem::replace(
            &mut self.slab[slot as usize],
            Slot::Free { next: self.free },
        ) {
            Slot::Live { soft, value } => {
                self.free = slot;
                (soft, value, slot)
            }
            Slot::Free { .. } => unreachable!("heap names a vacant slot"),
        }
    }

    /// Moves the node at `i` towards the root until its parent comes first,
    /// shifting the parents it passes down one level (a hole, not swaps).
    fn sift_up(&mut self, mut i: usize) {
        let node = self.heap[i];
        while i > 0 {
            let parent = (i - 1) / ARITY;
            let p = self.heap[parent];
            if !node.before(&p) {
                break;
            }
            self.heap[i] = p;
            self.pos[p.slot as usize] = i as u32;
            i = parent;
        }
        self.heap[i] = node;
        self.pos[node.slot as usize] = i as u32;
    }

    /// Moves the node at `i` towards the leaves until it comes before all
    /// its children, shifting the earliest child up at each level.
    fn sift_down(&mut self, mut i: usize) {
        let node = self.heap[i];
        let len = self.heap.len();
        loop {
            let first = i * ARITY + 1;
            if first >= len {
                break;
            }
            let end = (first + ARITY).min(len);
            let mut best = first;
            for c in first + 1..end {
                if self.heap[c].before(&self.heap[best]) {
                    best = c;
                }
            }
            let b = self.heap[best];
            if !b.before(&node) {
                break;
            }
            self.heap[i] = b;
            self.pos[b.slot as usize] = i as u32;
            i = best;
        }
        self.heap[i] = node;
        self.pos[node.slot as usize] = i as u32;
    }
}

/// A handle that names no queued entry: a caller bug, loud in debug builds.
#[inline]
#[track_caller]
fn stale(h: Handle) {
    if cfg!(debug_assertions) {
        panic!("hrtimer queue: stale handle {h:?}");
    }
}

#[cfg(test)]
impl<T> Queue<T> {
    /// Checks every invariant: heap order, `pos` and the heap agree, the
    /// slab's live slots are exactly the heap's, the free list covers every
    /// vacant slot once, `soft <= hard`, and sequence numbers are unique and
    /// below the counter.
    pub(crate) fn check(&self) {
        assert_eq!(self.pos.len(), self.slab.len());
        assert!(self.heap.len() <= self.slab.len());
        let mut seqs = std::collections::HashSet::new();
        for (i, node) in self.heap.iter().enumerate() {
            if i > 0 {
                let parent = &self.heap[(i - 1) / ARITY];
                assert!(
                    parent.before(node),
                    "heap order broken at {i}: {parent:?} vs {node:?}"
                );
            }
            assert_eq!(
                self.pos[node.slot as usize] as usize, i,
                "pos of slot {}",
                node.slot
            );
            assert!(
                self.soft(node.slot) <= node.hard,
                "soft after hard in {node:?}"
            );
            assert!(
                node.seq < self.seq,
                "seq {} not below counter {}",
                node.seq,
                self.seq
            );
            assert!(seqs.insert(node.seq), "duplicate seq {}", node.seq);
        }
        let mut free = 0;
        let mut seen = vec![false; self.slab.len()];
        let mut f = self.free;
        while f != NONE {
            assert!(
                !mem::replace(&mut seen[f as usize], true),
                "free list cycle at {f}"
            );
            assert_eq!(self.pos[f as usize], NONE, "free slot {f} has a position");
            f = match self.slab[f as usize] {
                Slot::Free { next } => next,
                Slot::Live { .. } => panic!("free list names live slot {f}"),
            };
            free += 1;
        }
        assert_eq!(free + self.heap.len(), self.slab.len(), "slots lost");
    }

    /// Sets the sequence counter, to exercise renumbering.
    pub(crate) fn set_seq(&mut self, seq: u32) {
        assert!(self.heap.iter().all(|n| n.seq < seq));
        self.seq = seq;
    }
}

#[cfg(test)]
mod tests;
