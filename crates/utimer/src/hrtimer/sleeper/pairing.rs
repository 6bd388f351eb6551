//! An intrusive pairing heap of [`SleeperNode`]s, ordered by expiry: the
//! sleepers' counterpart of the kernel's `timerqueue` (an rbtree), with the
//! links inside the node so that queueing allocates nothing.
//!
//! A pairing heap (Fredman, Sedgewick, Sleator, Tarjan 1986) is a tree in
//! which every parent expires no later than its children; each node keeps
//! its first child, its next sibling and a back link (the parent for a
//! first child, else the previous sibling). Insertion links the new node
//! and the root: O(1). Removing the root pairs its children left to right
//! and melds the pairs right to left ("two-pass"): O(log n) amortized.
//! Removing any other node cuts it out of its sibling list and melds its
//! children's two-pass result with the root. Nodes with equal expiries
//! come out in no particular order: sleepers need none.
//!
//! All functions are `unsafe`: the caller holds the lock of the base that
//! owns the heap, and every node passed in or linked is live and pinned
//! (the sleeper module's lifetime rules).

use super::{Links, SleeperNode};
use std::ptr::{self, NonNull};
use std::sync::atomic::Ordering::Relaxed;

/// One base's sleepers. Base lock.
pub(crate) struct Pairing {
    root: *mut SleeperNode,
    len: usize,
}

// SAFETY: the heap is only touched under its base's lock, and the nodes it
// names are `Sync` (their non-atomic fields follow the base lock).
unsafe impl Send for Pairing {}

/// The links of `n`.
///
/// # Safety
/// `n` is live, and the caller has the heap's lock (exclusive access to
/// every linked node's links).
#[inline(always)]
unsafe fn links<'a>(n: *mut SleeperNode) -> &'a mut Links {
    // SAFETY: the caller's contract; loom checks the access.
    unsafe { (*n).links.with_mut(|l| &mut *l) }
}

/// The expiry of `n` (live).
#[inline(always)]
unsafe fn key(n: *mut SleeperNode) -> u64 {
    // SAFETY: live by the caller's contract.
    unsafe { (*n).expires.load(Relaxed) }
}

/// Melds two roots (no siblings, no back link): the later becomes the
/// earlier's first child. Returns the new root.
#[inline]
unsafe fn meld(a: *mut SleeperNode, b: *mut SleeperNode) -> *mut SleeperNode {
    // SAFETY: both are live roots of trees the caller owns.
    let (top, sub) = if unsafe { key(b) < key(a) } {
        (b, a)
    } else {
        (a, b)
    };
    // SAFETY: as above; the caller holds the lock, so the links of both
    // trees' nodes are ours to change.
    unsafe {
        let first = links(top).child;
        let l = links(sub);
        l.next = first;
        l.prev = top;
        if !first.is_null() {
            links(first).prev = sub;
        }
        links(top).child = sub;
    }
    top
}

/// The two-pass merge of the sibling list starting at `first`: one root.
unsafe fn merge_pairs(mut cur: *mut SleeperNode) -> *mut SleeperNode {
    // First pass: meld pairs left to right, stacking the results through
    // `next` (each result is a root, so its `next` is free).
    let mut stack: *mut SleeperNode = ptr::null_mut();
    // SAFETY: every node reached is a live child of the node
    // being removed, and the caller holds the lock.
    unsafe {
        while !cur.is_null() {
            let a = cur;
            let b = links(a).next;
            let pair = if b.is_null() {
                cur = ptr::null_mut();
                detach(a);
                a
            } else {
                cur = links(b).next;
                detach(a);
                detach(b);
                meld(a, b)
            };
            links(pair).next = stack;
            stack = pair;
        }
        // Second pass: meld right to left.
        let mut acc: *mut SleeperNode = ptr::null_mut();
        while !stack.is_null() {
            let t = stack;
            stack = links(t).next;
            links(t).next = ptr::null_mut();
            acc = if acc.is_null() { t } else { meld(acc, t) };
        }
        acc
    }
}

/// Clears `n`'s sibling and back links (it becomes a root).
#[inline(always)]
unsafe fn detach(n: *mut SleeperNode) {
    // SAFETY: the caller's contract.
    let l = unsafe { links(n) };
    l.prev = ptr::null_mut();
    l.next = ptr::null_mut();
}

impl Pairing {
    /// An empty heap.
    pub(crate) const fn new() -> Pairing {
        Pairing {
            root: ptr::null_mut(),
            len: 0,
        }
    }

    /// Nodes queued.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The earliest expiry, if any.
    #[inline]
    pub(crate) fn first(&self) -> Option<u64> {
        // SAFETY: a linked root is live; `&self` means the lock is held.
        (!self.root.is_null()).then(|| unsafe { key(self.root) })
    }

    /// Queues `n`.
    ///
    /// # Safety
    /// The lock is held; `n` is live, pinned and in no heap, and leaves
    /// this one before its memory goes.
    pub(crate) unsafe fn insert(&mut self, n: NonNull<SleeperNode>) {
        let n = n.as_ptr();
        // SAFETY: the caller's contract.
        unsafe {
            let l = links(n);
            l.prev = ptr::null_mut();
            l.next = ptr::null_mut();
            l.child = ptr::null_mut();
            self.root = if self.root.is_null() {
                n
            } else {
                meld(self.root, n)
            };
        }
        self.len += 1;
    }

    /// Takes out the earliest node if it expires at or before `now`.
    ///
    /// # Safety
    /// The lock is held.
    pub(crate) unsafe fn pop_due(&mut self, now: u64) -> Option<NonNull<SleeperNode>> {
        let r = self.root;
        // SAFETY: the root is live; the lock is held.
        if r.is_null() || unsafe { key(r) } > now {
            return None;
        }
        // SAFETY: the root is live and its children are in this heap; the
        // lock is held.
        unsafe {
            let child = links(r).child;
            links(r).child = ptr::null_mut();
            self.root = merge_pairs(child);
        }
        self.len -= 1;
        NonNull::new(r)
    }

    /// Takes `n` out.
    ///
    /// # Safety
    /// The lock is held; `n` is in this heap.
    pub(crate) unsafe fn remove(&mut self, n: NonNull<SleeperNode>) {
        let n = n.as_ptr();
        // SAFETY: `n` and every node linked to it are in this heap: live.
        unsafe {
            let child = links(n).child;
            links(n).child = ptr::null_mut();
            let sub = merge_pairs(child);
            if n == self.root {
                self.root = sub;
            } else {
                let (prev, next) = (links(n).prev, links(n).next);
                if links(prev).child == n {
                    links(prev).child = next;
                } else {
                    links(prev).next = next;
                }
                if !next.is_null() {
                    links(next).prev = prev;
                }
                detach(n);
                if !sub.is_null() {
                    self.root = meld(self.root, sub);
                }
            }
        }
        self.len -= 1;
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::time::ClockId;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    /// Drives a heap of `nodes` with `ops` (insert / remove / pop) and
    /// checks every answer against a sorted model.
    fn run(ops: &[(u8, u16, u64)]) {
        let nodes: Vec<Box<SleeperNode>> = (0..64)
            .map(|_| Box::new(SleeperNode::new(ClockId::Monotonic, 0)))
            .collect();
        let mut heap = Pairing::new();
        // node index -> expiry, for queued nodes.
        let mut model: BTreeMap<usize, u64> = BTreeMap::new();
        let ptr_of = |i: usize| NonNull::from(&*nodes[i]);
        for &(op, i, key) in ops {
            let i = i as usize % nodes.len();
            match op % 3 {
                0 if !model.contains_key(&i) => {
                    nodes[i].expires.store(key, Relaxed);
                    // SAFETY: single-threaded (the heap is ours); node `i`
                    // is boxed, outlives the heap's use and is in no heap.
                    unsafe { heap.insert(ptr_of(i)) };
                    model.insert(i, key);
                }
                1 if model.contains_key(&i) => {
                    // SAFETY: node `i` is in the heap (the model says so).
                    unsafe { heap.remove(ptr_of(i)) };
                    model.remove(&i);
                }
                _ => {
                    let now = key;
                    let min = model.values().copied().min();
                    // SAFETY: single-threaded: the heap is ours.
                    let got = unsafe { heap.pop_due(now) };
                    match min {
                        Some(m) if m <= now => {
                            let p = got.expect("a due node was not popped");
                            let idx = nodes
                                .iter()
                                .position(|n| ptr::eq(&**n, p.as_ptr()))
                                .unwrap();
                            assert_eq!(
                                model.remove(&idx),
                                Some(m),
                                "popped a node that is not the earliest"
                            );
                        }
                        _ => assert!(got.is_none(), "popped a node that is not due"),
                    }
                }
            }
            assert_eq!(heap.len(), model.len());
            assert_eq!(heap.first(), model.values().copied().min());
        }
        // SAFETY: single-threaded: the heap is ours.
        while unsafe { heap.pop_due(u64::MAX) }.is_some() {}
        assert_eq!(heap.len(), 0);
    }

    #[test]
    fn pops_in_expiry_order() {
        let mut ops: Vec<(u8, u16, u64)> =
            (0..40).map(|i| (0, i, (i as u64 * 7919) % 101)).collect();
        ops.extend((0..40).map(|_| (2, 0, u64::MAX)));
        run(&ops);
    }

    #[test]
    fn removes_roots_children_and_leaves() {
        let mut ops: Vec<(u8, u16, u64)> = (0..30).map(|i| (0, i, 100 - i as u64)).collect();
        ops.push((2, 0, 80)); // pop one: builds a real tree
        ops.extend((0..30).step_by(3).map(|i| (1, i, 0)));
        ops.extend((0..30).map(|_| (2, 0, u64::MAX)));
        run(&ops);
    }

    proptest! {
        #[test]
        fn matches_a_sorted_model(ops in proptest::collection::vec((0u8..3, 0u16..64, 0u64..50), 0..300)) {
            run(&ops);
        }
    }
}
