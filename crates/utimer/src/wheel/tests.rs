//! Wheel tests: a reference model (a map of deadlines) driven by random
//! operation sequences, plus the edge cases of the table.

use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

/// The spec, independent of the wheel's own arithmetic: a timer `delta`
/// ticks away from the clock may fire up to `8^L - 1` ticks late, where `L`
/// is the first level with `delta < 63 * 8^L`.
fn allowed_lateness(delta: u64) -> u64 {
    let mut lvl = 0u32;
    while lvl < 8 && delta >= 63u64 << (3 * lvl) {
        lvl += 1;
    }
    (1u64 << (3 * lvl)) - 1
}

#[derive(Debug, Clone)]
enum Op {
    Insert(u64),
    Remove(usize),
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => prop_oneof![0u64..70, 0u64..600, 0u64..5000, 0u64..300_000].prop_map(Op::Insert),
        2 => any::<usize>().prop_map(Op::Remove),
        3 => prop_oneof![0u64..3, 0u64..80, 0u64..if cfg!(miri) { 200 } else { 2000 }].prop_map(Op::Advance),
    ]
}

/// Operation-sequence length: Miri runs ~1000x slower than native code.
const MAX_OPS: usize = if cfg!(miri) { 25 } else { 300 };

struct Live {
    key: Key,
    expires: u64,
    armed_clk: u64,
    /// The first tick at which a poll can see the entry.
    first_poll: u64,
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn matches_reference_model(ops in proptest::collection::vec(op(), 1..MAX_OPS), start in 0u64..10_000) {
        let mut wheel = Wheel::with_clk(start);
        let mut now = start;
        let mut next_id = 0u64;
        let mut live: BTreeMap<u64, Live> = BTreeMap::new();
        let mut fired = Vec::new();
        for op in ops {
            match op {
                Op::Insert(delta) => {
                    // Sometimes in the past.
                    let expires = (now + delta).saturating_sub(20);
                    let key = wheel.insert(expires, next_id);
                    live.insert(next_id, Live { key, expires, armed_clk: wheel.clk(), first_poll: now + 1 });
                    next_id += 1;
                }
                Op::Remove(i) => {
                    if live.is_empty() { continue; }
                    let id = *live.keys().nth(i % live.len()).unwrap();
                    let l = live.remove(&id).unwrap();
                    prop_assert_eq!(wheel.remove(l.key), Some(id));
                    prop_assert_eq!(wheel.remove(l.key), None);
                }
                Op::Advance(dt) => {
                    // Advance one tick at a time so the firing tick is exact.
                    for _ in 0..dt.max(1) {
                        now += 1;
                        fired.clear();
                        wheel.advance(now, |id| fired.push(id));
                        for id in &fired {
                            let l = live.remove(id).expect("fired twice or unknown");
                            prop_assert!(now >= l.expires, "early: {} < {}", now, l.expires);
                            let from = l.first_poll.max(l.expires);
                            let delta = l.expires.saturating_sub(l.armed_clk);
                            prop_assert!(now - from <= allowed_lateness(delta),
                                "late: fired {} expires {} clk {}", now, l.expires, l.armed_clk);
                        }
                        for (id, l) in &live {
                            // Anything whose deadline plus allowed lateness has passed must have fired.
                            let delta = l.expires.saturating_sub(l.armed_clk);
                            prop_assert!(l.expires.max(l.first_poll) + allowed_lateness(delta) >= now,
                                "missed {} expires {}", id, l.expires);
                        }
                    }
                }
            }
            prop_assert_eq!(wheel.len(), live.len());
            // next_expiry is exact: nothing fires before it and something fires at it.
            let next = wheel.next_expiry();
            prop_assert_eq!(next.is_none(), live.is_empty());
        }
    }

    #[test]
    fn next_expiry_is_exact(deltas in proptest::collection::vec(0u64..2_000_000, 1..50), start in 0u64..1_000_000) {
        let mut wheel = Wheel::with_clk(start);
        for (i, d) in deltas.iter().enumerate() {
            wheel.insert(start + d, i);
        }
        let next = wheel.next_expiry().unwrap();
        prop_assert_eq!(wheel.poll(next - 1), None);
        prop_assert!(wheel.poll(next).is_some());
    }
}

#[test]
fn past_expiry_fires_at_next_poll_whatever_now() {
    let mut w = Wheel::with_clk(100);
    w.advance(200, |_: u32| {});
    w.insert(150, 1u32);
    // The same `now` again: the past timer is still returned.
    assert_eq!(w.poll(200), Some(1));
    assert_eq!(w.poll(200), None);
}

#[test]
fn range_clamp_and_extreme_values() {
    let mut w = Wheel::new();
    let k = w.insert(u64::MAX, 'x');
    assert_eq!(w.next_expiry(), Some(round_up(MAX_DELTA, LEVELS - 1)));
    assert_eq!(w.poll(MAX_DELTA - 1), None);
    assert_eq!(w.poll(u64::MAX), Some('x'));
    assert_eq!(w.poll(u64::MAX), None, "the run ends");
    assert_eq!(w.remove(k), None);
    // Clock saturates instead of overflowing.
    w.forward(u64::MAX);
    assert_eq!(w.clk(), MAX_TICK + 1);
    w.insert(u64::MAX, 'y');
    assert_eq!(w.poll(u64::MAX), Some('y'));
}

#[test]
fn many_levels_at_one_tick() {
    // Tick 512 is a multiple of levels 0..=3: each level's bucket is collected.
    let mut w = Wheel::new();
    w.insert(512, 0); // level 3 (delta 512 >= 504)
    w.advance(1, |_| {});
    w.insert(512, 1); // level 3 still
    w.advance(500, |_| {});
    w.insert(512, 2); // level 0
    w.insert(510, 3); // level 0
    let mut got = Vec::new();
    w.advance(511, |v| got.push(v));
    assert_eq!(got, vec![3]);
    w.advance(512, |v| got.push(v));
    got.sort();
    assert_eq!(got, vec![0, 1, 2, 3]);
    assert!(w.is_empty());
    assert_eq!(w.next_expiry(), None);
}

#[test]
fn past_insert_during_a_run_waits_for_the_next_run() {
    // A callback that always re-arms into the past must not keep one run
    // going forever.
    let mut w = Wheel::with_clk(10);
    w.insert(3, 0u32);
    let mut runs = Vec::new();
    for _ in 0..3 {
        let mut n = 0;
        while let Some(v) = w.poll(20) {
            n += 1;
            w.insert(0, v + 1);
        }
        runs.push(n);
    }
    assert_eq!(runs, vec![1, 1, 1]);
}

#[test]
fn insert_during_poll_is_seen() {
    let mut w = Wheel::new();
    w.insert(5, 0u32);
    let mut n = 0;
    while let Some(v) = w.poll(10) {
        n += 1;
        if v < 3 {
            // Re-arm to a time already reached: fires in this same run.
            w.insert(w.clk(), v + 1);
        }
    }
    assert_eq!(n, 4);
}

#[test]
fn forward_takes_due_buckets_out_and_never_goes_back() {
    let mut w = Wheel::new();
    w.insert(50, 'a');
    w.insert(64, 'b');
    w.insert(700, 'c'); // level 2: 704
    w.insert(900, 'd'); // level 2: 960
    w.forward(800);
    assert_eq!(w.clk(), 801, "past the due buckets");
    assert_eq!(w.len(), 4);
    assert_eq!(w.next_expiry(), Some(800), "the taken-out entries are due");
    w.forward(40);
    assert_eq!(w.clk(), 801, "never backwards");
    // The next run hands them out in bucket order, whatever its `now`.
    assert_eq!(w.poll(100), Some('a'));
    assert_eq!(w.poll(100), Some('b'));
    assert_eq!(w.poll(100), Some('c'));
    assert_eq!(w.poll(100), None);
    assert_eq!(w.next_expiry(), Some(960));
    assert_eq!(w.poll(960), Some('d'));
    w.forward(1000);
    assert_eq!(w.clk(), 1001);
    // A timer queued after forwarding is placed relative to the present:
    // 50 ticks from 1000 is exact (level 0), not on a 4096-tick level.
    w.insert(1050, 'e');
    assert_eq!(w.next_expiry(), Some(1050));
}

#[test]
fn a_run_ends_at_its_now_whatever_a_forward_meanwhile_takes_out() {
    let mut w = Wheel::new();
    w.insert(10, 'a');
    w.insert(15, 'b');
    w.insert(30, 'c');
    assert_eq!(w.poll(10), Some('a'));
    // The callback of 'a' re-arms a timer when the present is tick 20:
    // the base forwards first, which would take out the bucket of 'b'.
    w.forward(20);
    assert_eq!(w.clk(), 21, "placed against the present");
    w.insert(25, 'd');
    assert_eq!(w.poll(10), None, "'b' was not due at the run's now");
    // The next run hands it out first, then what came due by its now.
    assert_eq!(w.next_expiry(), Some(20), "'b' is due");
    assert_eq!(w.poll(30), Some('b'));
    assert_eq!(w.poll(30), Some('d'));
    assert_eq!(w.poll(30), Some('c'));
    assert_eq!(w.poll(30), None);
}

#[test]
fn a_run_fed_by_forwards_from_its_own_entries_ends() {
    // Every entry handed out re-arms one a tick after the present, and
    // the present moves on a tick per entry: a run that took in what each
    // forward took out would never end.
    let mut w = Wheel::new();
    w.insert(1, 0u64);
    w.insert(2, 100);
    let mut present = 1;
    let mut run = 0;
    while let Some(v) = w.poll(1) {
        run += 1;
        assert!(run <= 1, "the run went on past its now");
        present += 2;
        w.forward(present);
        w.insert(present + 1, v + 1);
    }
    assert_eq!(
        w.poll(present),
        Some(100),
        "the next run takes what was due"
    );
}

#[test]
fn stale_keys_name_nothing() {
    let mut w = Wheel::new();
    let a = w.insert(10, 'a');
    assert_eq!(w.poll(10), Some('a'));
    assert_eq!(w.poll(10), None);
    let b = w.insert(20, 'b');
    assert_eq!(w.get(a), None);
    assert_eq!(w.remove(a), None, "a stale key removes nothing");
    assert_eq!(w.len(), 1);
    assert_eq!(w.remove(b), Some('b'));
    // A removed entry's slot is reused by the next entry of its bucket.
    let b2 = w.insert(20, 'B');
    assert_eq!(b.slot(), b2.slot(), "the slot is reused");
    assert_eq!(w.get(b), None);
    assert_eq!(w.remove(b), None, "a stale key removes nothing");
    assert_eq!(w.remove(b2), Some('B'));
    let c = w.insert(30, 'c');
    w.drain(|_| {});
    let d = w.insert(40, 'd');
    assert_eq!(w.remove(c), None, "keys from before a drain are stale");
    assert_eq!(w.remove(d), Some('d'));
}

#[test]
fn entries_armed_just_before_the_last_tick_fire() {
    let mut w = Wheel::with_clk(MAX_TICK - 100);
    assert_eq!(w.poll(MAX_TICK - 100), None);
    w.insert(MAX_TICK - 2, 'a');
    w.insert(MAX_TICK - 60, 'b');
    w.insert(u64::MAX, 'c');
    assert!(w.next_expiry().unwrap() <= MAX_TICK);
    let mut got = Vec::new();
    w.advance(u64::MAX, |v| got.push(v));
    got.sort();
    assert_eq!(got, vec!['a', 'b', 'c']);
}
