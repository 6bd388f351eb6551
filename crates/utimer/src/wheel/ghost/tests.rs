//! Deferred removal against eager removal: driven by the same random
//! operations, a wheel that defers and revives must be indistinguishable
//! from one that removes at once, through every public method.

use super::super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

#[derive(Debug, Clone)]
enum Op {
    /// Arm a new entry `delta` ticks from now (sometimes in the past).
    Insert(u64),
    /// Cancel a live entry.
    Cancel(usize),
    /// Re-arm a cancelled entry (the case a ghost serves).
    Rearm(usize, u64),
    /// Re-arm a live entry: cancel, then arm.
    Move(usize, u64),
    /// Re-arm a live entry in one step (`Wheel::requeue`).
    Requeue(usize, u64),
    /// Advance tick by tick, polling.
    Advance(u64),
    /// Bring the clock forward without polling.
    Forward(u64),
    /// Ask for the next expiry (settles).
    Next,
}

fn op() -> impl Strategy<Value = Op> {
    let delta = || prop_oneof![0u64..70, 0u64..600, 0u64..5000, 0u64..300_000];
    prop_oneof![
        3 => delta().prop_map(Op::Insert),
        3 => any::<usize>().prop_map(Op::Cancel),
        3 => (any::<usize>(), prop_oneof![Just(100u64), delta()]).prop_map(|(i, d)| Op::Rearm(i, d)),
        1 => (any::<usize>(), delta()).prop_map(|(i, d)| Op::Move(i, d)),
        3 => (any::<usize>(), prop_oneof![Just(100u64), Just(5000u64), delta()]).prop_map(|(i, d)| Op::Requeue(i, d)),
        2 => prop_oneof![0u64..3, 0u64..80, 0u64..600].prop_map(Op::Advance),
        1 => (0u64..3000).prop_map(Op::Forward),
        1 => Just(Op::Next),
    ]
}

const MAX_OPS: usize = if cfg!(miri) { 30 } else { 300 };

/// Both wheels, and what each knows about an entry.
struct Pair {
    eager: Wheel<u64>,
    lazy: Wheel<u64>,
    /// Live entries: id -> (eager key, lazy key, bucket in the lazy wheel).
    live: BTreeMap<u64, (Key, Key, u16)>,
    /// Cancelled entries that may be re-armed.
    cancelled: Vec<u64>,
    now: u64,
}

impl Pair {
    fn arm(&mut self, id: u64, delta: u64) {
        let expires = (self.now + delta).saturating_sub(20);
        let pos = self.lazy.position(expires);
        assert_eq!(pos, self.eager.position(expires), "same clock, same bucket");
        let e = self.eager.insert_at(pos, id);
        let l = self.lazy.insert_or_revive(pos, id);
        self.live.insert(id, (e, l, pos.idx));
    }

    fn pick(map_len: usize, i: usize) -> usize {
        i % map_len
    }

    fn cancel(&mut self, i: usize) -> Option<u64> {
        if self.live.is_empty() {
            return None;
        }
        let id = *self
            .live
            .keys()
            .nth(Self::pick(self.live.len(), i))
            .unwrap();
        let (e, l, bucket) = self.live.remove(&id).unwrap();
        assert_eq!(self.eager.remove(e), Some(id));
        assert_eq!(self.lazy.get(l), Some(&id));
        self.lazy.remove_deferred(l, bucket, id);
        assert_eq!(self.lazy.get(l), None, "a ghost is invisible");
        Some(id)
    }

    fn requeue(&mut self, i: usize, delta: u64) {
        if self.live.is_empty() {
            return;
        }
        let id = *self
            .live
            .keys()
            .nth(Self::pick(self.live.len(), i))
            .unwrap();
        let (e, l, bucket) = self.live[&id];
        let expires = (self.now + delta).saturating_sub(20);
        let pos = self.lazy.position(expires);
        assert_eq!(self.eager.remove(e), Some(id));
        let e = self.eager.insert_at(pos, id);
        let l = self.lazy.requeue(l, bucket, id, pos);
        assert_eq!(self.lazy.get(l), Some(&id));
        self.live.insert(id, (e, l, pos.idx));
    }

    fn check(&mut self) -> Result<(), TestCaseError> {
        prop_assert_eq!(self.lazy.len(), self.eager.len());
        prop_assert_eq!(self.lazy.len(), self.live.len());
        prop_assert_eq!(self.lazy.clk(), self.eager.clk());
        let mut a: Vec<u64> = self.lazy.values().copied().collect();
        let mut b: Vec<u64> = self.eager.values().copied().collect();
        a.sort_unstable();
        b.sort_unstable();
        prop_assert_eq!(a, b);
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn deferring_is_invisible(ops in proptest::collection::vec(op(), 1..MAX_OPS), start in 0u64..10_000) {
        let mut p = Pair {
            eager: Wheel::with_clk(start),
            lazy: Wheel::with_clk(start),
            live: BTreeMap::new(),
            cancelled: Vec::new(),
            now: start,
        };
        let mut next_id = 0;
        for op in ops {
            match op {
                Op::Insert(delta) => {
                    p.arm(next_id, delta);
                    next_id += 1;
                }
                Op::Cancel(i) => {
                    if let Some(id) = p.cancel(i) {
                        p.cancelled.push(id);
                    }
                }
                Op::Rearm(i, delta) => {
                    if !p.cancelled.is_empty() {
                        let id = p.cancelled.swap_remove(i % p.cancelled.len());
                        p.arm(id, delta);
                    }
                }
                Op::Move(i, delta) => {
                    if let Some(id) = p.cancel(i) {
                        p.arm(id, delta);
                    }
                }
                Op::Requeue(i, delta) => p.requeue(i, delta),
                Op::Advance(dt) => {
                    for _ in 0..dt.max(1) {
                        p.now += 1;
                        let (mut a, mut b) = (Vec::new(), Vec::new());
                        p.lazy.advance(p.now, |id| a.push(id));
                        p.eager.advance(p.now, |id| b.push(id));
                        a.sort_unstable();
                        b.sort_unstable();
                        prop_assert_eq!(&a, &b, "at {}", p.now);
                        for id in a {
                            prop_assert!(p.live.remove(&id).is_some(), "{} fired but was not live", id);
                            p.cancelled.push(id);
                        }
                    }
                }
                Op::Forward(dt) => {
                    // Entries of buckets due by then leave them for the
                    // run list; their timers are marked due, as the bases
                    // mark theirs.
                    let mut moved = Vec::new();
                    p.lazy.forward_to(p.now + dt + 1, Some(&mut |id: &u64| moved.push(*id)));
                    p.eager.forward(p.now + dt);
                    for id in moved {
                        p.live.get_mut(&id).expect("a live entry moved").2 = DUE;
                    }
                }
                Op::Next => {
                    prop_assert_eq!(p.lazy.next_expiry(), p.eager.next_expiry());
                }
            }
            p.check()?;
        }
        prop_assert_eq!(p.lazy.next_expiry(), p.eager.next_expiry());
    }
}

#[test]
fn a_cancelled_entry_rearmed_into_its_bucket_keeps_its_key() {
    let mut w: Wheel<u64> = Wheel::with_clk(1000);
    let pos = w.position(1100); // level 1
    let k = w.insert_at(pos, 7);
    w.remove_deferred(k, pos.idx, 7);
    assert_eq!(w.len(), 0);
    assert_eq!(w.get(k), None);
    assert_eq!(w.values().count(), 0);
    let again = w.insert_or_revive(w.position(1099), 7);
    assert_eq!(again, k, "revived in place");
    assert_eq!(w.len(), 1);
    assert_eq!(w.next_expiry(), Some(pos.expiry));
    assert_eq!(w.poll(pos.expiry - 1), None);
    assert_eq!(w.poll(pos.expiry), Some(7));
    assert_eq!(w.poll(pos.expiry), None);
}

#[test]
fn a_ghost_never_shows() {
    let mut w: Wheel<u64> = Wheel::with_clk(0);
    let pos = w.position(100);
    let k = w.insert_at(pos, 1);
    w.remove_deferred(k, pos.idx, 1);
    // Another value for the same bucket is a new entry, not the ghost.
    let k2 = w.insert_or_revive(pos, 2);
    assert_ne!(k2, k);
    assert_eq!(w.values().copied().collect::<Vec<_>>(), vec![2]);
    assert_eq!(w.next_expiry(), Some(pos.expiry), "settling keeps 2");
    // The ghost's bucket alone: the next expiry is exact, not the ghost's.
    let mut w: Wheel<u64> = Wheel::with_clk(0);
    let k = w.insert_at(pos, 1);
    w.insert(5000, 3);
    w.remove_deferred(k, pos.idx, 1);
    assert!(w.next_expiry().unwrap() >= 5000);
    // The clock is not held back by it either.
    w.forward(200);
    assert_eq!(w.clk(), 201);
    // Nor does a drain hand it out.
    let k = w.insert(300, 4);
    w.remove_deferred(k, w.position(300).idx, 4);
    let mut drained = Vec::new();
    w.drain(|v| drained.push(v));
    assert_eq!(drained, vec![3]);
    assert!(w.is_empty());
}

#[test]
fn a_second_cancel_settles_the_first() {
    let mut w: Wheel<u64> = Wheel::with_clk(0);
    let pa = w.position(100);
    let pb = w.position(900);
    let a = w.insert_at(pa, 1);
    let b = w.insert_at(pb, 2);
    w.remove_deferred(a, pa.idx, 1);
    w.remove_deferred(b, pb.idx, 2);
    // 1 is gone for good: re-arming it is a fresh insert.
    assert_eq!(w.insert_or_revive(pb, 2), b);
    let a2 = w.insert_or_revive(pa, 1);
    assert_eq!(w.len(), 2);
    assert_eq!(w.remove(a2), Some(1));
    assert_eq!(w.next_expiry(), Some(pb.expiry));
}

#[test]
fn a_timer_moved_back_and_forth_swaps_with_its_ghost() {
    let mut w: Wheel<u64> = Wheel::with_clk(0);
    let a = w.position(1000);
    let b = w.position(9000);
    let ka = w.insert_at(a, 1);
    let kb = w.requeue(ka, a.idx, 1, b);
    let ka2 = w.requeue(kb, b.idx, 1, a);
    assert_eq!(ka2, ka, "back into its old entry");
    assert_eq!(w.requeue(ka2, a.idx, 1, b), kb);
    assert_eq!(w.len(), 1);
    assert_eq!(w.values().copied().collect::<Vec<_>>(), vec![1]);
    assert_eq!(w.next_expiry(), Some(b.expiry), "a's entry is gone");
    assert_eq!(w.poll(b.expiry - 1), None);
    assert_eq!(w.poll(b.expiry), Some(1));
    assert_eq!(w.poll(b.expiry), None);
}

#[test]
fn nothing_is_deferred_during_a_run() {
    // Due entries move to the run list when a run begins, but still name
    // the due list as their bucket. Were a removal there deferred, a
    // re-arm into the past would revive the entry on the run list and
    // hand it out in this run, where a past insert must wait for the next
    // one (the wheel's livelock rule).
    let mut w: Wheel<u64> = Wheel::with_clk(100);
    let keys: Vec<_> = (0..3).map(|i| w.insert(50, i)).collect();
    let due = w.position(50);
    assert_eq!(due.idx, DUE);
    let first = w.poll(100).unwrap();
    let v = (0..3).find(|&v| v != first).unwrap();
    w.remove_deferred(keys[v as usize], DUE, v);
    w.insert_or_revive(w.position(10), v);
    let mut rest = Vec::new();
    while let Some(x) = w.poll(100) {
        rest.push(x);
    }
    assert_eq!(rest.len(), 1);
    assert!(
        !rest.contains(&v),
        "re-armed into the past: waits for the next run"
    );
    assert_eq!(w.poll(100), Some(v));
}
