//! Random operation sequences on a TimerSystem against a reference model.
//!
//! The model keeps, for every pending timer, the interval of ticks in which
//! it may fire, derived from the specification alone: never before its
//! expiry, never more than one granule of its level late (level `L` is the
//! first with `delta < 63 * 8^L`, granularity `8^L`). Every return value
//! must match the model; every firing must fall in its interval; nothing
//! may fire twice or go missing; the statistics must balance.

#![cfg(not(loom))]

use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use utimer::{Clock, Expiry, TimerError, TimerFlags, TimerSystem};

const TIMERS: usize = 8;
/// Operation-sequence length: Miri runs ~1000x slower than native code.
const MAX_OPS: usize = if cfg!(miri) { 30 } else { 250 };
const WORKERS: usize = 3;

fn allowed_lateness(delta: u64) -> u64 {
    let mut lvl = 0u32;
    while lvl < 8 && delta >= 63u64 << (3 * lvl) {
        lvl += 1;
    }
    (1u64 << (3 * lvl)) - 1
}

#[derive(Debug, Clone)]
enum Op {
    Modify(usize, u64),
    ModifyPending(usize, u64),
    Reduce(usize, u64),
    Add(usize, u64),
    Delete(usize),
    Enter(usize),
    Advance(u64),
}

fn delta() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..80, 0u64..700, 0u64..6000]
}

fn op() -> impl Strategy<Value = Op> {
    let id = 0..TIMERS;
    prop_oneof![
        4 => (id.clone(), delta()).prop_map(|(i, d)| Op::Modify(i, d)),
        1 => (id.clone(), delta()).prop_map(|(i, d)| Op::ModifyPending(i, d)),
        2 => (id.clone(), delta()).prop_map(|(i, d)| Op::Reduce(i, d)),
        1 => (id.clone(), delta()).prop_map(|(i, d)| Op::Add(i, d)),
        2 => id.prop_map(Op::Delete),
        1 => (0..WORKERS + 1).prop_map(Op::Enter),
        3 => prop_oneof![1u64..3, 1u64..100, 1u64..if cfg!(miri) { 100 } else { 800 }].prop_map(Op::Advance),
    ]
}

/// Ticks in which a pending timer may fire.
#[derive(Debug, Clone, Copy)]
struct Window {
    lo: u64,
    hi: u64,
}

/// A pending timer in the model: its window and its expiry of record
/// (`Timer::expires`). Re-arming to the unchanged expiry of record keeps the
/// timer where it is, as `mod_timer()` does: the window stays.
#[derive(Debug, Clone, Copy)]
struct Pending {
    window: Window,
    record: u64,
}

/// The window for arming at `expires` when the base clock is `clk` and the
/// next expiry run is at `now + 1`.
fn window(expires: u64, clk: u64, now: u64) -> Window {
    if expires < clk {
        Window { lo: 0, hi: now + 1 }
    } else {
        Window {
            lo: expires,
            hi: (expires + allowed_lateness(expires - clk)).max(now + 1),
        }
    }
}

/// `modify`, or with the `bench-internals` feature and `same_bucket` off,
/// the kernel's pre-2016 form (`modify_without_bucket_check`): both must meet the same specification.
fn modify(t: &utimer::Timer, e: u64, same_bucket: bool) -> Result<bool, TimerError> {
    #[cfg(feature = "bench-internals")]
    if !same_bucket {
        return t.modify_without_bucket_check(Expiry::Tick(e));
    }
    let _ = same_bucket;
    t.modify(Expiry::Tick(e))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn timers_match_model(ops in proptest::collection::vec(op(), 1..MAX_OPS), same_bucket in any::<bool>()) {
        let clock = Clock::manual();
        let sys = TimerSystem::builder().workers(WORKERS).clock(clock.clone()).stats(true).build_without_threads();
        let fired: Arc<Mutex<Vec<usize>>> = Arc::default();
        let timers: Vec<_> = (0..TIMERS).map(|i| {
            let fired = fired.clone();
            let flags = if i % 3 == 0 { TimerFlags::PINNED } else { TimerFlags::NONE };
            sys.timer_with_flags(flags, move |_| fired.lock().unwrap().push(i))
        }).collect();
        let mut model: BTreeMap<usize, Pending> = BTreeMap::new();
        let mut now = 0u64;
        let mut guard = None;
        let mut total_fired = 0u64;
        for op in ops {
            // Every base's clock is now + 1 after each run (0 at the start).
            let clk = if now == 0 { 0 } else { now + 1 };
            let at = |d: u64| (now + d).saturating_sub(30);
            match op {
                Op::Modify(i, d) => {
                    let e = at(d);
                    let was = model.get(&i).copied();
                    prop_assert_eq!(modify(&timers[i], e, same_bucket).unwrap(), was.is_some());
                    let window = match was {
                        Some(p) if p.record == e => p.window,
                        _ => window(e, clk, now),
                    };
                    model.insert(i, Pending { window, record: timers[i].expires() });
                }
                Op::ModifyPending(i, d) => {
                    let e = at(d);
                    let was = model.get(&i).copied();
                    prop_assert_eq!(timers[i].modify_pending(Expiry::Tick(e)).unwrap(), was.is_some());
                    if let Some(p) = was {
                        let window = if p.record == e { p.window } else { window(e, clk, now) };
                        model.insert(i, Pending { window, record: timers[i].expires() });
                    }
                }
                Op::Reduce(i, d) => {
                    let e = at(d);
                    let w = window(e, clk, now);
                    let was = model.get(&i).copied();
                    prop_assert_eq!(timers[i].reduce(Expiry::Tick(e)).unwrap(), was.is_some());
                    let window = match was {
                        Some(p) => Window { lo: p.window.lo.min(w.lo), hi: p.window.hi.min(w.hi) },
                        None => w,
                    };
                    model.insert(i, Pending { window, record: timers[i].expires() });
                }
                Op::Add(i, d) => {
                    let e = at(d);
                    match model.entry(i) {
                        std::collections::btree_map::Entry::Occupied(_) => {
                            prop_assert_eq!(timers[i].add(Expiry::Tick(e)), Err(TimerError::AlreadyPending));
                        }
                        std::collections::btree_map::Entry::Vacant(v) => {
                            prop_assert_eq!(timers[i].add(Expiry::Tick(e)), Ok(()));
                            v.insert(Pending { window: window(e, clk, now), record: e });
                        }
                    }
                }
                Op::Delete(i) => {
                    prop_assert_eq!(timers[i].delete(), model.remove(&i).is_some());
                }
                Op::Enter(w) => {
                    guard = None;
                    if w < WORKERS {
                        guard = Some(sys.enter(w).unwrap());
                    }
                }
                Op::Advance(dt) => {
                    for _ in 0..dt {
                        now += 1;
                        clock.set(now);
                        for w in 0..WORKERS {
                            sys.run_expired(w, now).unwrap();
                        }
                        let got: Vec<usize> = std::mem::take(&mut *fired.lock().unwrap());
                        for i in got {
                            total_fired += 1;
                            let w = model.remove(&i);
                            prop_assert!(w.is_some(), "timer {} fired while not pending", i);
                            let w = w.unwrap().window;
                            prop_assert!(now >= w.lo, "timer {} early: {} < {}", i, now, w.lo);
                            prop_assert!(now <= w.hi, "timer {} late: {} > {}", i, now, w.hi);
                        }
                        for (i, p) in &model {
                            let w = p.window;
                            prop_assert!(w.hi > now, "timer {} missed its window {:?} at {}", i, w, now);
                        }
                    }
                }
            }
            for (i, t) in timers.iter().enumerate() {
                prop_assert_eq!(t.is_pending(), model.contains_key(&i));
            }
        }
        drop(guard);
        let s = sys.metrics().totals();
        prop_assert_eq!(s.fired, total_fired);
        prop_assert_eq!(s.pending, model.len() as u64);
        prop_assert_eq!(s.armed, s.fired + s.deleted + s.pending);
    }
}
