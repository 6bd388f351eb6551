//! Queue tests: the order and slack rules case by case, then random
//! operation sequences against a sorted-map model with the invariant
//! checker run after every step.

use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

/// Pops everything due at `now`, checking the invariants after each pop.
fn pop_all(q: &mut Queue<u32>, now: u64) -> Vec<u32> {
    let mut out = Vec::new();
    while let Some((_, v)) = q.pop_due(now) {
        q.check();
        out.push(v);
    }
    out
}

#[test]
fn empty() {
    let mut q: Queue<u32> = Queue::new();
    assert!(q.is_empty());
    assert_eq!(q.len(), 0);
    assert_eq!(q.first(), None);
    assert!(q.pop_due(u64::MAX).is_none());
    assert!(q.drain().is_empty());
    q.check();
}

#[test]
fn orders_by_hard_expiry() {
    let mut q = Queue::with_capacity(16);
    for (i, hard) in [50u64, 10, 40, 20, 30, 0, 60].into_iter().enumerate() {
        q.insert(hard, hard, i as u32);
        q.check();
    }
    assert_eq!(q.first(), Some((0, 0)));
    assert_eq!(pop_all(&mut q, 35), [5, 1, 3, 4]);
    assert_eq!(q.first(), Some((40, 40)));
    assert_eq!(pop_all(&mut q, u64::MAX), [2, 0, 6]);
    assert!(q.is_empty());
}

#[test]
fn ties_are_fifo() {
    let mut q = Queue::new();
    for i in 0..20 {
        // Soft expiries differ but do not affect the order.
        q.insert(i as u64 % 3, 100, i);
    }
    q.check();
    assert_eq!(pop_all(&mut q, 100), (0..20).collect::<Vec<_>>());
}

#[test]
fn update_counts_as_a_fresh_insertion() {
    let mut q = Queue::new();
    let a = q.insert(10, 10, 0);
    q.insert(10, 10, 1);
    q.insert(10, 10, 2);
    // Re-armed to the same expiry: behind the others, like the kernel's
    // remove + enqueue.
    q.update(a, 10, 10);
    q.check();
    assert_eq!(pop_all(&mut q, 10), [1, 2, 0]);
}

/// The kernel's `__hrtimer_run_queues`: only the first entry in hard order
/// is looked at; it runs if its soft expiry has passed, and otherwise the
/// run stops, even though an entry behind it (later hard expiry) has a soft
/// expiry that has passed.
#[test]
fn slack_stops_at_first_entry_not_yet_soft_due() {
    let mut q = Queue::new();
    let a = q.insert(0, 100, 0); // soft 0, hard 100
    let b = q.insert(40, 50, 1); // soft 40, hard 50: first in hard order
    assert_eq!(q.first(), Some((40, 50)));
    // At 20, `a` is soft-due but `b` comes first and is not: nothing runs.
    assert!(q.pop_due(20).is_none());
    assert_eq!(q.len(), 2);
    // At 40, `b` is soft-due; `a` follows in the same run.
    assert_eq!(q.pop_due(40), Some((b, 1)));
    assert_eq!(q.pop_due(40), Some((a, 0)));
    assert!(q.is_empty());
}

#[test]
fn slack_shares_a_wakeup() {
    // Hard order 0 (150), 1 (160), 2 (170): one wake-up at 150 runs 0 and
    // then 1, whose window [120, 160] contains 150; 2 (soft 160) stops it.
    let mut q = Queue::new();
    q.insert(100, 150, 0);
    q.insert(120, 160, 1);
    q.insert(160, 170, 2);
    assert_eq!(q.first(), Some((100, 150)));
    assert_eq!(pop_all(&mut q, 150), [0, 1]);
    assert_eq!(q.first(), Some((160, 170)));
    // With a wider window, 1 sorts behind 2 and so waits for 2's soft
    // expiry although its own has passed.
    let mut q = Queue::new();
    q.insert(100, 150, 0);
    q.insert(120, 200, 1);
    q.insert(160, 170, 2);
    assert_eq!(pop_all(&mut q, 150), [0]);
    assert_eq!(pop_all(&mut q, 160), [2, 1]);
}

#[test]
fn max_expiries() {
    let mut q = Queue::new();
    q.insert(u64::MAX, u64::MAX, 0);
    q.insert(0, u64::MAX, 1);
    q.insert(u64::MAX - 1, u64::MAX - 1, 2);
    q.check();
    assert_eq!(q.first(), Some((u64::MAX - 1, u64::MAX - 1)));
    assert_eq!(pop_all(&mut q, u64::MAX - 1), [2]);
    // FIFO among the u64::MAX ties: 0 is first and not soft-due, so 1 waits.
    assert_eq!(q.first(), Some((u64::MAX, u64::MAX)));
    assert!(q.pop_due(u64::MAX - 1).is_none());
    assert_eq!(pop_all(&mut q, u64::MAX), [0, 1]);
}

#[test]
fn remove_first_last_middle() {
    let mut q = Queue::new();
    let hs: Vec<Handle> = (0..30u32)
        .map(|i| q.insert(u64::from(i * 7 % 30), u64::from(i * 7 % 30), i))
        .collect();
    q.check();
    // First in order: expiry 0 is i = 0.
    assert_eq!(q.remove(hs[0]), Some(0));
    q.check();
    // The most recently inserted, and the last in order (expiry 29: i = 17).
    assert_eq!(q.remove(hs[29]), Some(29));
    q.check();
    assert_eq!(q.remove(hs[17]), Some(17));
    q.check();
    // Middle.
    for i in [5, 11, 23] {
        assert_eq!(q.remove(hs[i]), Some(i as u32));
        q.check();
    }
    assert_eq!(q.len(), 24);
    let mut want: Vec<u32> = (0..30)
        .filter(|i| ![0, 29, 17, 5, 11, 23].contains(i))
        .collect();
    want.sort_by_key(|i| i * 7 % 30);
    assert_eq!(pop_all(&mut q, u64::MAX), want);
}

#[test]
fn update_up_and_down() {
    let mut q = Queue::new();
    let hs: Vec<Handle> = (0..20u32)
        .map(|i| q.insert(u64::from(i) * 10, u64::from(i) * 10, i))
        .collect();
    // Later: the first entry moves to the end.
    q.update(hs[0], 500, 505);
    q.check();
    assert_eq!(q.expiries(hs[0]), Some((500, 505)));
    assert_eq!(q.first(), Some((10, 10)));
    // Earlier: a late entry moves to the front.
    q.update(hs[15], 1, 5);
    q.check();
    assert_eq!(q.first(), Some((1, 5)));
    // Same hard, new soft.
    q.update(hs[3], 25, 30);
    q.check();
    assert_eq!(q.expiries(hs[3]), Some((25, 30)));
    let mut want: Vec<u32> = vec![15];
    want.extend((1..20).filter(|&i| i != 15));
    want.push(0);
    assert_eq!(pop_all(&mut q, u64::MAX), want);
}

#[test]
fn handles_are_reused() {
    let mut q = Queue::new();
    let a = q.insert(1, 1, 10);
    let b = q.insert(2, 2, 20);
    assert_ne!(a, b);
    assert_eq!(q.remove(a), Some(10));
    assert_eq!(q.get(a), None);
    assert_eq!(q.expiries(a), None);
    let c = q.insert(3, 3, 30);
    assert_eq!(c, a, "vacant slot reused");
    assert_eq!(q.get(c), Some(&30));
    assert_eq!(q.expiries(c), Some((3, 3)));
    assert_eq!(q.pop_due(2), Some((b, 20)));
    assert_eq!(Handle::from_index(c.index()), c);
    q.check();
}

#[test]
fn no_allocation_after_high_water_mark() {
    let mut q = Queue::new();
    let mut hs: Vec<Handle> = (0..64u64).map(|i| q.insert(i, i, i)).collect();
    let caps = (q.heap.capacity(), q.pos.capacity(), q.slab.capacity());
    for round in 0..1000u64 {
        let h = hs.swap_remove((round * 31 % 64) as usize);
        q.remove(h);
        hs.push(q.insert(round % 50, round % 50 + 3, round));
        q.update(hs[(round % 64) as usize], round, round * 2);
    }
    q.check();
    assert_eq!(
        (q.heap.capacity(), q.pos.capacity(), q.slab.capacity()),
        caps
    );
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "stale handle")]
fn remove_of_a_vacant_slot_panics_in_debug() {
    let mut q = Queue::new();
    let a = q.insert(1, 1, 0);
    q.remove(a);
    q.remove(a);
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "stale handle")]
fn update_of_an_unknown_slot_panics_in_debug() {
    let mut q: Queue<u32> = Queue::new();
    q.update(Handle(7), 1, 1);
}

#[test]
#[cfg(not(debug_assertions))]
fn stale_handles_are_ignored_in_release() {
    let mut q = Queue::new();
    let a = q.insert(1, 1, 0);
    let b = q.insert(2, 2, 1);
    assert_eq!(q.remove(a), Some(0));
    assert_eq!(q.remove(a), None);
    assert_eq!(q.remove(Handle(99)), None);
    q.update(a, 0, 0);
    q.update(Handle(99), 0, 0);
    q.check();
    assert_eq!(q.len(), 1);
    assert_eq!(q.first(), Some((2, 2)));
    assert_eq!(q.remove(b), Some(1));
}

#[test]
fn drain_empties_and_queue_stays_usable() {
    let mut q = Queue::new();
    let a = q.insert(5, 9, 1);
    for i in 2..10 {
        q.insert(i, i + 1, i as u32);
    }
    q.remove(a);
    let mut all = q.drain();
    q.check();
    assert!(q.is_empty());
    assert_eq!(q.first(), None);
    assert_eq!(q.get(a), None);
    all.sort_by_key(|e| e.2);
    assert_eq!(
        all,
        (2..10).map(|i| (i, i + 1, i as u32)).collect::<Vec<_>>()
    );
    // Move them back in: the queue works as new.
    for (soft, hard, v) in all {
        q.insert(soft, hard, v);
    }
    q.check();
    assert_eq!(pop_all(&mut q, 5), [2, 3, 4, 5]);
}

#[test]
fn sequence_wrap_keeps_fifo() {
    let mut q = Queue::new();
    q.set_seq(u32::MAX - 3);
    let hs: Vec<Handle> = (0..10).map(|i| q.insert(7, 7, i)).collect();
    q.check();
    q.insert(3, 3, 100);
    q.set_seq(u32::MAX);
    q.update(hs[2], 7, 7); // renumbers, then goes behind the other ties
    q.check();
    q.insert(7, 7, 10);
    q.check();
    assert_eq!(pop_all(&mut q, 7), [100, 0, 1, 3, 4, 5, 6, 7, 8, 9, 2, 10]);
}

#[derive(Debug, Clone)]
enum Op {
    Insert(u64, u64),
    Remove(usize),
    Update(usize, u64, u64),
    PopDue(u64),
    Drain,
}

/// Expiries clustered so that ties and slack overlaps are common, plus the
/// top of the range.
fn time() -> impl Strategy<Value = u64> {
    prop_oneof![6 => 0u64..40, 2 => 0u64..2000, 1 => (u64::MAX - 40)..=u64::MAX]
}

fn slack() -> impl Strategy<Value = u64> {
    prop_oneof![3 => Just(0u64), 4 => 0u64..30, 1 => any::<u64>()]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (time(), slack()).prop_map(|(s, d)| Op::Insert(s, d)),
        2 => any::<usize>().prop_map(Op::Remove),
        3 => (any::<usize>(), time(), slack()).prop_map(|(i, s, d)| Op::Update(i, s, d)),
        3 => time().prop_map(Op::PopDue),
        1 => Just(Op::Drain),
    ]
}

/// The model: entries by `(hard, seq)` with `(soft, id)`, and each live id's
/// handle and key.
#[derive(Default)]
struct Model {
    order: BTreeMap<(u64, u64), (u64, u32)>,
    live: BTreeMap<u32, (Handle, (u64, u64))>,
    seq: u64,
}

impl Model {
    fn insert(
        &mut self,
        q: &mut Queue<u32>,
        soft: u64,
        hard: u64,
        id: u32,
    ) -> Result<(), TestCaseError> {
        let h = q.insert(soft, hard, id);
        prop_assert!(
            self.live.values().all(|(o, _)| *o != h),
            "handle {:?} given twice",
            h
        );
        let key = (hard, self.seq);
        self.seq += 1;
        self.order.insert(key, (soft, id));
        self.live.insert(id, (h, key));
        Ok(())
    }

    fn nth(&self, i: usize) -> Option<u32> {
        (!self.live.is_empty()).then(|| *self.live.keys().nth(i % self.live.len()).unwrap())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 512 }))]

    #[test]
    fn matches_model(
        ops in proptest::collection::vec(op(), 1..if cfg!(miri) { 20 } else { 300 }),
        seq_start in prop_oneof![Just(0u32), (u32::MAX - 200)..=u32::MAX],
    ) {
        let mut q = Queue::new();
        q.set_seq(seq_start);
        let mut m = Model::default();
        let mut next_id = 0u32;
        for op in ops {
            match op {
                Op::Insert(soft, slack) => {
                    m.insert(&mut q, soft, soft.saturating_add(slack), next_id)?;
                    next_id += 1;
                }
                Op::Remove(i) => {
                    let Some(id) = m.nth(i) else { continue };
                    let (h, key) = m.live.remove(&id).unwrap();
                    m.order.remove(&key);
                    prop_assert_eq!(q.remove(h), Some(id));
                    prop_assert_eq!(q.get(h), None);
                }
                Op::Update(i, soft, slack) => {
                    let Some(id) = m.nth(i) else { continue };
                    let hard = soft.saturating_add(slack);
                    let (h, key) = m.live[&id];
                    m.order.remove(&key);
                    let key = (hard, m.seq);
                    m.seq += 1;
                    m.order.insert(key, (soft, id));
                    m.live.insert(id, (h, key));
                    q.update(h, soft, hard);
                }
                Op::PopDue(now) => loop {
                    let got = q.pop_due(now);
                    q.check();
                    let due = m.order.first_key_value().filter(|(_, (soft, _))| *soft <= now);
                    let Some((&key, &(_, id))) = due else {
                        prop_assert!(got.is_none(), "popped {:?} at {}", got, now);
                        break;
                    };
                    m.order.remove(&key);
                    let (h, _) = m.live.remove(&id).unwrap();
                    prop_assert_eq!(got, Some((h, id)));
                },
                Op::Drain => {
                    let all = q.drain();
                    q.check();
                    prop_assert_eq!(all.len(), m.live.len());
                    let mut model = std::mem::take(&mut m);
                    // Move everything back in, in the order drain gave.
                    for (soft, hard, id) in all {
                        let (_, key) = model.live.remove(&id).expect("drained an unknown id");
                        prop_assert_eq!(model.order.remove(&key), Some((soft, id)));
                        prop_assert_eq!(key.0, hard);
                        m.insert(&mut q, soft, hard, id)?;
                    }
                    prop_assert!(model.live.is_empty());
                }
            }
            q.check();
            prop_assert_eq!(q.len(), m.live.len());
            prop_assert_eq!(q.is_empty(), m.live.is_empty());
            let first = m.order.first_key_value().map(|(&(hard, _), &(soft, _))| (soft, hard));
            prop_assert_eq!(q.first(), first);
            for (&id, &(h, (hard, seq))) in &m.live {
                prop_assert_eq!(q.get(h), Some(&id));
                let soft = m.order[&(hard, seq)].0;
                prop_assert_eq!(q.expiries(h), Some((soft, hard)));
            }
        }
        // Everything left comes out in model order.
        let rest: Vec<u32> = m.order.values().map(|&(_, id)| id).collect();
        let mut got = Vec::new();
        while let Some((_, id)) = q.pop_due(u64::MAX) {
            got.push(id);
        }
        prop_assert_eq!(got, rest);
    }
}

/// Inserting up to the promised number of entries allocates nothing: the
/// arrays keep their buffers (an hrtimer started from a signal handler
/// must not call the allocator).
#[test]
fn promised_room_is_there_without_allocating() {
    let mut q: Queue<u32> = Queue::new();
    for _ in 0..100 {
        q.promise();
    }
    let buffers = |q: &Queue<u32>| {
        (
            q.heap.as_ptr() as usize,
            q.pos.as_ptr() as usize,
            q.slab.as_ptr() as usize,
        )
    };
    let before = buffers(&q);
    for i in 0..100u32 {
        q.insert(u64::from(i), u64::from(i), i);
    }
    assert_eq!(
        buffers(&q),
        before,
        "an insertion within the promise reallocated"
    );
    q.check();
    // Taken back, the room stays.
    for _ in 0..100 {
        q.unpromise();
    }
    while q.pop_due(u64::MAX).is_some() {}
    for i in 0..100u32 {
        q.insert(u64::from(i), u64::from(i), i);
    }
    assert_eq!(buffers(&q), before);
}
