//! The lateness bound as a property: random arms, re-arms, cancels and
//! callback re-arms on bases left stale in every way a system leaves them
//! (the clock jumps with no expiry run, one worker runs while the others
//! do not, a run is under way), for every kind of timer.
//!
//! The model places nothing itself; it holds each pending timer to what
//! the docs promise about where an arm puts it:
//!
//! * an arm at clock `now` for `expires > now` fires at its bucket's tick
//!   `T` with `expires <= T < expires + granule`, the granule of the level
//!   that the timeout `expires - now` selects (`Timer::fires_at` says `T`
//!   at once);
//! * an arm for `expires <= now` is due: it fires at the next expiry run
//!   of its worker (a callback's arm into the past during a run: at the
//!   latest in the run after);
//! * a re-arm to the expiry of record changes nothing (`mod_timer()`);
//!   a `reduce` never moves a timer later;
//! * no run fires a timer before its expiry, or one that is not pending;
//!   a run of every worker at `now` fires every timer whose bound has
//!   passed.

#![cfg(not(loom))]

use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use utimer::wheel::{level_for_delta, level_granularity};
use utimer::{Clock, Expiry, Timer, TimerError, TimerFlags, TimerSystem};

const TIMERS: usize = 9;
const WORKERS: usize = 2;
const MAX_OPS: usize = if cfg!(miri) { 30 } else { 200 };

/// The latest tick at which a timer armed at clock `now` for `expires`
/// may fire, if it is in the future.
fn deadline(expires: u64, now: u64) -> u64 {
    expires + level_granularity(level_for_delta(expires - now)) - 1
}

#[derive(Debug, Clone)]
enum Op {
    Modify(usize, u64),
    ModifyPending(usize, u64),
    Reduce(usize, u64),
    Add(usize, u64),
    Delete(usize),
    Enter(usize),
    /// The clock moves on; no worker runs.
    Jump(u64),
    /// One worker runs at the present.
    RunOne(usize),
    /// Every worker runs at the present.
    RunAll,
}

fn delta() -> impl Strategy<Value = u64> {
    prop_oneof![0u64..100, 0u64..800, 0u64..40_000, 0u64..3_000_000]
}

fn op() -> impl Strategy<Value = Op> {
    let id = 0..TIMERS;
    prop_oneof![
        5 => (id.clone(), delta()).prop_map(|(i, d)| Op::Modify(i, d)),
        1 => (id.clone(), delta()).prop_map(|(i, d)| Op::ModifyPending(i, d)),
        2 => (id.clone(), delta()).prop_map(|(i, d)| Op::Reduce(i, d)),
        1 => (id.clone(), delta()).prop_map(|(i, d)| Op::Add(i, d)),
        2 => id.prop_map(Op::Delete),
        1 => (0..WORKERS).prop_map(Op::Enter),
        3 => prop_oneof![1u64..10, 1u64..600, 1u64..50_000, 1u64..2_000_000].prop_map(Op::Jump),
        2 => (0..WORKERS).prop_map(Op::RunOne),
        2 => Just(Op::RunAll),
    ]
}

/// What happened inside callbacks, in order.
#[derive(Debug, Clone, Copy)]
enum Event {
    Fired {
        id: usize,
        at: u64,
    },
    /// The callback re-armed its timer at clock `now` for `expires`; the
    /// timer then said it fires at `fires_at`.
    Rearmed {
        id: usize,
        now: u64,
        expires: u64,
        fires_at: Option<u64>,
        record: u64,
    },
}

/// A pending timer in the model.
#[derive(Debug, Clone, Copy)]
struct Pending {
    /// Never fires before this tick.
    lo: u64,
    /// A run of every worker at this tick or later fires it...
    hi: u64,
    /// ...and so does the run of every worker numbered this (armed into
    /// the past), whatever its tick.
    by_run: Option<u64>,
    /// `Timer::expires` after the arm.
    record: u64,
}

/// A timer just armed at `now` with promise `p` says it fires at `fires_at`.
fn check(id: usize, now: u64, p: Pending, fires_at: Option<u64>) -> Result<(), TestCaseError> {
    prop_assert!(fires_at.is_some(), "timer {} not pending after an arm", id);
    let t = fires_at.unwrap();
    match p.by_run {
        Some(_) => prop_assert!(t <= now, "timer {} due at {}: fires at {}", id, now, t),
        // Due already (a timer that stayed where it was, in a bucket whose
        // tick has passed, says its expiry of record): it fires at the
        // next run, which may not be early.
        None if t <= now => {
            prop_assert!(p.lo <= now, "timer {} due at {} early: {:?}", id, now, p)
        }
        None => prop_assert!(
            t >= p.lo && t <= p.hi,
            "timer {} armed at {}: fires at {}, promised {:?}",
            id,
            now,
            t,
            p
        ),
    }
    Ok(())
}

/// The expiry for `delta` from `now`: up to 30 ticks in the past.
fn at(now: u64, delta: u64) -> u64 {
    (now + delta).saturating_sub(30)
}

struct World {
    now: u64,
    /// Runs of every worker completed.
    full_runs: u64,
    model: BTreeMap<usize, Pending>,
}

impl World {
    /// What the docs promise for an arm at clock `now` for `expires`.
    /// `in_run`: armed by a callback during a run of every worker.
    fn window(&self, now: u64, expires: u64, record: u64, in_run: bool) -> Pending {
        if expires > now {
            Pending {
                lo: expires,
                hi: deadline(expires, now),
                by_run: None,
                record,
            }
        } else {
            let by = self.full_runs + 1 + in_run as u64;
            Pending {
                lo: 0,
                hi: u64::MAX,
                by_run: Some(by),
                record,
            }
        }
    }

    /// Holds a fresh placement to the bound (`fires_at` as the docs say)
    /// and records it.
    fn placed(
        &mut self,
        id: usize,
        now: u64,
        expires: u64,
        fires_at: Option<u64>,
        record: u64,
        in_run: bool,
    ) -> Result<(), TestCaseError> {
        let p = self.window(now, expires, record, in_run);
        check(id, now, p, fires_at)?;
        self.model.insert(id, p);
        Ok(())
    }

    fn events(&mut self, log: &Mutex<Vec<Event>>, in_run: bool) -> Result<(), TestCaseError> {
        for e in std::mem::take(&mut *log.lock().unwrap()) {
            match e {
                Event::Fired { id, at } => {
                    let p = self.model.remove(&id);
                    prop_assert!(p.is_some(), "timer {} fired while not pending", id);
                    let p = p.unwrap();
                    prop_assert!(at >= p.lo, "timer {} early: {} < {}", id, at, p.lo);
                }
                Event::Rearmed {
                    id,
                    now,
                    expires,
                    fires_at,
                    record,
                } => {
                    self.placed(id, now, expires, fires_at, record, in_run)?;
                }
            }
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 300 }))]

    #[test]
    fn every_arm_meets_the_bound(
        ops in proptest::collection::vec(op(), 1..MAX_OPS),
        rearms in proptest::collection::vec(prop_oneof![0u64..100, 0u64..800, 0u64..40_000], 0..40),
    ) {
        let clock = Clock::manual();
        let sys = TimerSystem::builder().workers(WORKERS).clock(clock.clone()).build_without_threads();
        let log: Arc<Mutex<Vec<Event>>> = Arc::default();
        let rearms = Arc::new(rearms);
        let next_rearm = Arc::new(AtomicUsize::new(0));
        let timers: Vec<Timer> = (0..TIMERS).map(|id| {
            let flags = [TimerFlags::NONE, TimerFlags::PINNED, TimerFlags::DEFERRABLE][id % 3];
            let (log, clock) = (log.clone(), clock.clone());
            let (rearms, next) = (rearms.clone(), next_rearm.clone());
            sys.timer_with_flags(flags, move |t| {
                let now = clock.advance(0);
                log.lock().unwrap().push(Event::Fired { id, at: now });
                // Timers 0–5 re-arm themselves while the plan lasts.
                if id < 6 {
                    if let Some(&d) = rearms.get(next.fetch_add(1, SeqCst)) {
                        let expires = at(now, d);
                        t.modify(Expiry::Tick(expires)).unwrap();
                        log.lock().unwrap().push(Event::Rearmed {
                            id, now, expires, fires_at: t.fires_at(), record: t.expires(),
                        });
                    }
                }
            })
        }).collect();
        let mut world = World { now: 0, full_runs: 0, model: BTreeMap::new() };
        let mut guard = Some(sys.enter(0).unwrap());
        // The worker the test thread is; the base each timer was last put on.
        let mut worker = 0;
        let mut home = [0usize; TIMERS];
        for op in ops {
            let now = world.now;
            match op {
                Op::Modify(i, d) | Op::ModifyPending(i, d) => {
                    let e = at(now, d);
                    let was = world.model.get(&i).copied();
                    let (before, record) = (timers[i].fires_at(), timers[i].expires());
                    let only_pending = matches!(op, Op::ModifyPending(..));
                    let r = if only_pending { timers[i].modify_pending(Expiry::Tick(e)) } else { timers[i].modify(Expiry::Tick(e)) };
                    prop_assert_eq!(r.unwrap(), was.is_some());
                    let after = timers[i].fires_at();
                    match was {
                        // mod_timer(): the expiry of record again changes nothing.
                        Some(p) if p.record == e => {
                            prop_assert_eq!(timers[i].expires(), e);
                            prop_assert_eq!(after, before);
                        }
                        None if only_pending => prop_assert!(!timers[i].is_pending()),
                        _ => world.placed(i, now, e, after, timers[i].expires(), false)?,
                    }
                    // A re-arm on the timer's own base into the bucket it
                    // is in (fires at the same tick, not due) keeps the
                    // expiry of record, whichever path took it.
                    if was.is_some() && home[i] == worker && after == before && before.unwrap() > now {
                        prop_assert_eq!(timers[i].expires(), record, "timer {} same bucket", i);
                    }
                    if after != before || timers[i].expires() != record {
                        home[i] = worker;
                    }
                }
                Op::Reduce(i, d) => {
                    let e = at(now, d);
                    let was = world.model.remove(&i);
                    prop_assert_eq!(timers[i].reduce(Expiry::Tick(e)).unwrap(), was.is_some());
                    let (t, record) = (timers[i].fires_at(), timers[i].expires());
                    let fresh = world.window(now, e, record, false);
                    // timer_reduce(): never later than before (it stays
                    // if it already fires no later), never earlier than
                    // both asks.
                    let p = match was {
                        None => fresh,
                        Some(b) => Pending {
                            lo: b.lo.min(fresh.lo),
                            hi: b.hi.min(fresh.hi),
                            by_run: match (b.by_run, fresh.by_run) {
                                (Some(x), Some(y)) => Some(x.min(y)),
                                (x, y) => x.or(y),
                            },
                            record,
                        },
                    };
                    check(i, now, p, t)?;
                    world.model.insert(i, p);
                    if was.is_none() {
                        home[i] = worker;
                    }
                }
                Op::Add(i, d) => {
                    let e = at(now, d);
                    if world.model.contains_key(&i) {
                        prop_assert_eq!(timers[i].add(Expiry::Tick(e)), Err(TimerError::AlreadyPending));
                    } else {
                        prop_assert_eq!(timers[i].add(Expiry::Tick(e)), Ok(()));
                        home[i] = worker;
                        world.placed(i, now, e, timers[i].fires_at(), timers[i].expires(), false)?;
                    }
                }
                Op::Delete(i) => {
                    prop_assert_eq!(timers[i].delete(), world.model.remove(&i).is_some());
                }
                Op::Enter(w) => {
                    drop(guard.take());
                    guard = Some(sys.enter(w).unwrap());
                    worker = w;
                }
                Op::Jump(dt) => {
                    world.now += dt;
                    clock.set(world.now);
                }
                Op::RunOne(w) => {
                    sys.run_expired(w, now).unwrap();
                    world.events(&log, false)?;
                }
                Op::RunAll => {
                    for w in 0..WORKERS {
                        sys.run_expired(w, now).unwrap();
                    }
                    world.events(&log, true)?;
                    world.full_runs += 1;
                    for (i, p) in &world.model {
                        let overdue = match p.by_run {
                            Some(n) => world.full_runs >= n,
                            None => now >= p.hi,
                        };
                        prop_assert!(!overdue, "timer {} not fired by {} (run {}): {:?}", i, now, world.full_runs, p);
                    }
                }
            }
            for (i, t) in timers.iter().enumerate() {
                prop_assert_eq!(t.is_pending(), world.model.contains_key(&i), "timer {}", i);
            }
        }
        drop(guard);
    }
}
