use super::*;

use crate::wheel::key::Unchecked;
use proptest::prelude::*;
use std::collections::HashMap;

#[test]
fn block_size() {
    type P = std::ptr::NonNull<u8>;
    // 16 pointers and a 16-byte header: 9 bytes an entry.
    assert_eq!(std::mem::size_of::<Block<P, Unchecked>>(), 144);
    assert_eq!(std::mem::size_of::<Block<P, u32>>(), 208);
}

#[test]
fn link_unlink_in_any_order() {
    let mut l = Lists::<char, u32>::new(3, 0, 2);
    let a = l.push(0, 'a');
    let b = l.push(0, 'b');
    let c = l.push(0, 'c');
    assert_eq!(l.remove(b.0, b.1).unwrap(), ('b', None));
    assert_eq!(l.remove(c.0, c.1).unwrap(), ('c', None));
    assert_eq!(l.remove(a.0, a.1).unwrap(), ('a', Some(0)));
    assert!(l.remove(a.0, a.1).is_none());
    assert!(l.is_bucket_empty(0));
    // The bucket kept its block: the position is reused, in a new
    // generation, and old keys miss.
    assert!(l.is_bucket_empty(0));
    let d = l.push(0, 'd');
    assert_eq!(d.0, a.0);
    assert_ne!(d.1, a.1);
    for old in [a, b, c] {
        assert!(l.get(old.0, old.1).is_none());
        assert!(l.remove(old.0, old.1).is_none());
    }
    assert_eq!(l.get(d.0, d.1), Some(&'d'));
    l.move_bucket(0, 2);
    assert!(l.is_bucket_empty(0));
    l.check();
    assert_eq!(l.pop_front(2), Some('d'));
    assert_eq!(l.len(), 0);
    l.check();
}

#[test]
fn holes_are_filled_before_a_block_is_allocated() {
    let mut l = Lists::<u32, u32>::new(2, 0, 1);
    let keys: Vec<_> = (0..160).map(|i| l.push(0, i)).collect();
    l.check();
    let blocks = l.blocks.len();
    assert_eq!(blocks, 10);
    // One hole in each block, anywhere in the list.
    for k in keys.iter().step_by(BLOCK + 3).take(8) {
        l.remove(k.0, k.1).unwrap();
        l.check();
    }
    for i in 0..8 {
        l.push(0, 1000 + i);
        l.check();
    }
    assert_eq!(l.blocks.len(), blocks, "the holes took the new entries");
    l.push(0, 2000);
    assert_eq!(l.blocks.len(), blocks + 1, "all full: a new block");
    l.check();
}

#[test]
fn emptied_blocks_serve_other_buckets() {
    let mut l = Lists::<u32, Unchecked>::new(5, 0, 4);
    let keys: Vec<_> = (0..64).map(|i| l.push(0, i)).collect();
    for k in &keys {
        l.remove(k.0, k.1).unwrap();
    }
    assert!(l.is_bucket_empty(0));
    for i in 0..64 {
        l.push(1 + i as usize % 3, i);
    }
    // Bucket 0 keeps its last block; its other three serve the three
    // buckets of 22, 21 and 21 entries, which need two blocks each.
    assert_eq!(l.blocks.len(), 4 + 3);
    l.check();
}

#[test]
fn lookahead_names_the_next_block_once() {
    let mut l = Lists::<u32, Unchecked>::new(2, 0, 1);
    for i in 0..40 {
        l.push(0, i);
    }
    let mut seen = NIL;
    let (ahead, after) = l.lookahead(0, &mut seen).expect("three blocks");
    let ahead: Vec<u32> = ahead.copied().collect();
    assert_eq!(ahead.len(), BLOCK);
    assert!(after.is_some());
    assert!(l.lookahead(0, &mut seen).is_none(), "once per first block");
    // The entries it named are the ones handed out after the first block
    // (the one with room: 40 = 16 + 16 + 8).
    let mut order = Vec::new();
    while let Some(v) = l.pop_front(0) {
        order.push(v);
    }
    assert_eq!(order[8..8 + BLOCK], ahead[..]);
}

#[test]
fn a_splice_keeps_keys_and_order() {
    let mut l = Lists::<u32, u32>::new(4, 0, 3);
    let a: Vec<_> = (0..20).map(|i| l.push(0, i)).collect();
    let b: Vec<_> = (100..140).map(|i| l.push(1, i)).collect();
    let c: Vec<_> = (200..203).map(|i| l.push(2, i)).collect();
    // Holes in full blocks: spliced blocks keep their places anyway.
    l.remove(b[3].0, b[3].1).unwrap();
    l.remove(b[37].0, b[37].1).unwrap();
    let mut seen = Vec::new();
    l.splice(1, 3, false, Some(&mut |v: &u32| seen.push(*v)));
    l.splice(2, 3, false, None);
    l.splice(0, 3, true, None);
    assert_eq!(seen.len(), 38);
    assert!(l.is_bucket_empty(0) && l.is_bucket_empty(1) && l.is_bucket_empty(2));
    l.check();
    for k in a.iter().chain(&c) {
        assert!(l.get(k.0, k.1).is_some());
    }
    // A removal from a full block in the middle moves nothing.
    l.remove(b[20].0, b[20].1).unwrap();
    l.check();
    let mut out = Vec::new();
    while let Some(v) = l.pop_front(3) {
        out.push(v);
    }
    let group = |v: u32| v / 100;
    assert!(
        out.windows(2).all(|w| group(w[0]) <= group(w[1])),
        "{out:?}"
    );
    assert_eq!(out.len(), 20 + 37 + 3);
    l.check();
    // The run list's kept empty block does not hide what comes next.
    l.push(0, 7);
    l.splice(0, 3, false, None);
    assert_eq!(l.pop_front(3), Some(7));
    l.check();
}

#[derive(Clone, Debug)]
enum Op {
    Push(usize),
    Remove(usize),
    Pop(usize),
    Move(usize, usize),
    Splice(usize, bool),
    Drain,
}

/// Buckets 0–3 take pushes; bucket 4 is the ordered one.
const ORDERED: usize = 4;

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..4usize).prop_map(Op::Push),
        5 => any::<usize>().prop_map(Op::Remove),
        2 => (0..5usize).prop_map(Op::Pop),
        1 => (0..4usize, 0..5usize).prop_map(|(a, b)| Op::Move(a, b)),
        1 => (0..4usize, any::<bool>()).prop_map(|(a, f)| Op::Splice(a, f)),
        1 => Just(Op::Drain),
    ]
}

proptest! {
    /// Against a model: every entry is where its key says, keys of removed
    /// entries name nothing, emptied buckets are reported, the ordered
    /// list hands out what was spliced in group by group, and the
    /// invariants hold after every step.
    #[test]
    fn matches_a_model(ops in prop::collection::vec(op(), 1..600)) {
        let mut l = Lists::<u64, u32>::new(5, 0, ORDERED);
        let mut live: HashMap<(u32, u32), (u64, usize)> = HashMap::new();
        let mut dead: Vec<(u32, u32)> = Vec::new();
        // The ordered list's entries, by group of one splice or move.
        let mut groups: std::collections::VecDeque<Vec<u64>> = Default::default();
        let mut next = 0u64;
        for op in ops {
            match op {
                Op::Push(bucket) => {
                    let key = l.push(bucket, next);
                    prop_assert!(live.insert(key, (next, bucket)).is_none());
                    next += 1;
                }
                Op::Remove(i) if !live.is_empty() => {
                    let mut keys: Vec<_> = live.keys().copied().collect();
                    keys.sort();
                    let key = keys[i % keys.len()];
                    let (value, bucket) = live.remove(&key).unwrap();
                    let last = !live.values().any(|&(_, b)| b == bucket);
                    prop_assert_eq!(l.remove(key.0, key.1), Some((value, last.then_some(bucket))));
                    dead.push(key);
                    for g in groups.iter_mut() {
                        g.retain(|&v| v != value);
                    }
                }
                Op::Remove(_) => {}
                Op::Pop(bucket) => match l.pop_front(bucket) {
                    Some(v) => {
                        let key = *live.iter().find(|(_, &(x, _))| x == v).unwrap().0;
                        prop_assert_eq!(live.remove(&key).unwrap().1, bucket);
                        dead.push(key);
                        if bucket == ORDERED {
                            while groups.front().is_some_and(|g| g.is_empty()) {
                                groups.pop_front();
                            }
                            let front = groups.front_mut().unwrap();
                            prop_assert!(front.contains(&v), "{} out of order", v);
                            front.retain(|&x| x != v);
                        }
                    }
                    None => prop_assert!(live.values().all(|&(_, b)| b != bucket)),
                },
                Op::Move(from, to) => {
                    if from != to && l.is_bucket_empty(to) {
                        l.move_bucket(from, to);
                        let mut group = Vec::new();
                        for (v, b) in live.values_mut() {
                            if *b == from {
                                *b = to;
                                group.push(*v);
                            }
                        }
                        if to == ORDERED {
                            groups = [group].into();
                        }
                    }
                }
                Op::Splice(from, front) => {
                    let mut moved = Vec::new();
                    l.splice(from, ORDERED, front, Some(&mut |v: &u64| moved.push(*v)));
                    let mut want: Vec<u64> = Vec::new();
                    for (v, b) in live.values_mut() {
                        if *b == from {
                            *b = ORDERED;
                            want.push(*v);
                        }
                    }
                    moved.sort();
                    want.sort();
                    prop_assert_eq!(&moved, &want);
                    if front {
                        groups.push_front(moved);
                    } else {
                        groups.push_back(moved);
                    }
                }
                Op::Drain => {
                    let mut got = Vec::new();
                    l.drain(|v| got.push(v));
                    got.sort();
                    let mut want: Vec<u64> = live.values().map(|&(v, _)| v).collect();
                    want.sort();
                    prop_assert_eq!(got, want);
                    dead.extend(live.drain().map(|(k, _)| k));
                    groups.clear();
                }
            }
            l.check();
            prop_assert_eq!(l.len(), live.len());
            for (key, (value, bucket)) in &live {
                prop_assert_eq!(l.get(key.0, key.1), Some(value));
                prop_assert!(!l.is_bucket_empty(*bucket));
            }
            for key in &dead {
                prop_assert_eq!(l.get(key.0, key.1), None);
            }
        }
    }
}
