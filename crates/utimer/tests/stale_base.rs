//! The lateness promise on a stale base: a base whose clock fell behind
//! (its worker stalled, idled, or simply had nothing due) with a bucket
//! still waiting at a tick long past. Every arm there must be placed as
//! if the base were fresh: never early, at most one granule of the level
//! that the timeout (expiry minus the clock at the arm) selects, and an
//! expiry in the past fires at the next expiry run. A re-arm that fires
//! at the tick the timer already fires at keeps its expiry of record.

#![cfg(not(loom))]

use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex};
use utimer::{BaseKind, Clock, Expiry, Timer, TimerFlags, TimerSystem};

mod common;

use common::{counter, manual};

const KINDS: [(TimerFlags, BaseKind); 3] = [
    (TimerFlags::NONE, BaseKind::Global),
    (TimerFlags::PINNED, BaseKind::Local),
    (TimerFlags::DEFERRABLE, BaseKind::Deferrable),
];

/// The granule of the level a timeout of `delta` ticks selects.
fn granule(delta: u64) -> u64 {
    utimer::wheel::level_granularity(utimer::wheel::level_for_delta(delta))
}

/// The latest tick a timer armed at clock `now` for `expires` may fire at.
fn deadline(expires: u64, now: u64) -> u64 {
    if expires <= now {
        now
    } else {
        expires + granule(expires - now) - 1
    }
}

/// Worker 0's base of `kind` is left with a bucket due at 30,208 (30,208
/// ticks from 0 is level 3, 512-tick buckets, on a bucket boundary), and
/// the clock jumps to 300,000 with no expiry run: the stale base of the
/// issue's report.
fn stale_base(flags: TimerFlags) -> (Arc<TimerSystem>, Clock, Timer, Arc<AtomicU64>) {
    let (sys, clock) = manual(1);
    let (overdue_n, cb) = counter();
    let overdue = sys.timer_with_flags(flags, cb);
    {
        let _w = sys.enter(0).unwrap();
        overdue.modify(Expiry::Tick(30_208u64)).unwrap();
    }
    assert_eq!(overdue.fires_at(), Some(30_208));
    clock.set(300_000);
    (sys, clock, overdue, overdue_n)
}

#[test]
fn a_stale_base_places_a_timer_by_its_timeout() {
    for (flags, _) in KINDS {
        let (sys, clock, _overdue, overdue_n) = stale_base(flags);
        let _w = sys.enter(0).unwrap();
        let (n, cb) = counter();
        let t = sys.timer_with_flags(flags, cb);
        t.modify(Expiry::Tick(500_000u64)).unwrap();
        // 200,000 ticks: level 4, 4,096-tick buckets; 500,000 rounds up to
        // 503,808. Against the stale clock it was level 5: 524,288.
        assert_eq!(t.fires_at(), Some(503_808), "{flags:?}");
        t.modify(Expiry::Tick(500_100u64)).unwrap();
        assert_eq!(t.fires_at(), Some(503_808), "{flags:?}");
        assert_eq!(
            t.expires(),
            500_000,
            "{flags:?}: a re-arm into the same bucket keeps the expiry of record"
        );

        // The overdue timer fires at the next run, before anything else.
        sys.run_expired(0, 300_000).unwrap();
        assert_eq!(overdue_n.load(SeqCst), 1, "{flags:?}");
        // Never early...
        clock.set(500_099);
        sys.run_expired(0, 500_099).unwrap();
        assert_eq!(n.load(SeqCst), 0, "{flags:?}");
        // ...and at most one granule late.
        clock.set(deadline(500_100, 300_000));
        assert!(deadline(500_100, 300_000) >= 503_808);
        sys.run_expired(0, clock.advance(0)).unwrap();
        assert_eq!(n.load(SeqCst), 1, "{flags:?}");
    }
}

#[test]
fn an_expiry_in_the_past_fires_at_the_next_run_on_a_stale_base() {
    for (flags, _) in KINDS {
        for past in [299_999u64, 250_000, 100_000, 30_208, 30_000, 1] {
            let (sys, _clock, _overdue, overdue_n) = stale_base(flags);
            let _w = sys.enter(0).unwrap();
            let (n, cb) = counter();
            let t = sys.timer_with_flags(flags, cb);
            t.modify(Expiry::Tick(past)).unwrap();
            let at = t.fires_at().unwrap();
            assert!(at <= 300_000, "{flags:?} {past}: parked at {at}");
            assert_eq!(sys.next_expiry(0).unwrap().map(|n| n <= 300_000), {
                // Deferrable timers never count for the next expiry.
                (flags != TimerFlags::DEFERRABLE).then_some(true)
            });
            sys.run_expired(0, 300_000).unwrap();
            assert_eq!(n.load(SeqCst), 1, "{flags:?} {past}");
            assert_eq!(overdue_n.load(SeqCst), 1, "{flags:?} {past}");
            assert_eq!(sys.metrics().totals().pending, 0);
        }
    }
}

/// A stale base whose overdue buckets a forward took out still fires them
/// in bucket order, the earliest first, before the later buckets.
#[test]
fn overdue_buckets_keep_their_order() {
    let (sys, clock) = manual(1);
    let _w = sys.enter(0).unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let timers: Vec<Timer> = [5u64, 700, 70, 9_000, 64, 20_000]
        .iter()
        .map(|&e| {
            let order = order.clone();
            let t = sys.timer(move |_| order.lock().unwrap().push(e));
            t.modify(Expiry::Tick(e)).unwrap();
            t
        })
        .collect();
    clock.set(10_000);
    // A level-1+ arm on the stale base forwards it past 5, 64, 70, 704
    // and 9,216.
    let (n, cb) = counter();
    let late = sys.timer(cb);
    late.modify(Expiry::Tick(10_500u64)).unwrap();
    assert!(late.fires_at().unwrap() <= deadline(10_500, 10_000));
    // One of them is cancelled after the forward took it out.
    assert!(timers[2].delete());
    sys.run_expired(0, 10_000).unwrap();
    assert_eq!(*order.lock().unwrap(), vec![5, 64, 700, 9_000]);
    assert_eq!(n.load(SeqCst), 0);
    clock.set(20_480);
    sys.run_expired(0, 20_480).unwrap();
    assert_eq!(*order.lock().unwrap(), vec![5, 64, 700, 9_000, 20_000]);
    assert_eq!(n.load(SeqCst), 1);
}

/// A timer taken out of an overdue bucket by a forward, then cancelled and
/// re-armed into a bucket whose slot is the one it left: it must not come
/// back in the overdue list (it would fire at once, early).
#[test]
fn a_timer_taken_out_by_a_forward_is_not_revived_early() {
    let (sys, clock) = manual(1);
    let _w = sys.enter(0).unwrap();
    let (n, cb) = counter();
    let t = sys.timer(cb);
    // 100 ticks from 0: level 1, bucket 104 (slot 13 of level 1).
    t.modify(Expiry::Tick(100)).unwrap();
    assert_eq!(t.fires_at(), Some(104));
    clock.set(200);
    let other = sys.timer(|_| {});
    other.modify(Expiry::Tick(300)).unwrap(); // forwards past 104
    assert!(t.delete());
    // 616 from a clock of 201: level 1 again, 616 rounds to 616 = slot 13
    // of level 1 (616 / 8 = 77 = 64 + 13).
    t.modify(Expiry::Tick(616)).unwrap();
    assert_eq!(t.fires_at(), Some(616));
    sys.run_expired(0, 200).unwrap();
    assert_eq!(n.load(SeqCst), 0, "fired early");
    clock.set(616);
    sys.run_expired(0, 616).unwrap();
    assert_eq!(n.load(SeqCst), 1);
}

/// A callback re-arms its own timer during a run that started on a stale
/// base: it is placed against the present, not against the tick the run
/// has reached.
#[test]
fn a_callback_rearm_during_a_run_meets_the_bound() {
    for (flags, _) in KINDS {
        let (sys, clock) = manual(1);
        let _w = sys.enter(0).unwrap();
        clock.set(18_990);
        sys.run_expired(0, 18_990).unwrap();
        let placed = Arc::new(Mutex::new(Vec::new()));
        let p = placed.clone();
        let c = clock.clone();
        let t = sys.timer_with_flags(flags, move |t| {
            let now = c.advance(0);
            if p.lock().unwrap().len() < 3 {
                t.modify(Expiry::Tick(now + 250)).unwrap();
                p.lock().unwrap().push((now, t.fires_at().unwrap()));
            }
        });
        // Buckets due later in the run keep the run's clock behind.
        let later: Vec<Timer> = (0..4)
            .map(|i| {
                let t = sys.timer_with_flags(flags, |_| {});
                t.modify(Expiry::Tick(19_020u64 + 64 * i)).unwrap();
                t
            })
            .collect();
        t.modify(Expiry::Tick(19_010u64)).unwrap();
        for now in [19_296u64, 40_000, 41_000] {
            clock.set(now);
            sys.run_expired(0, now).unwrap();
        }
        let placed = placed.lock().unwrap();
        assert_eq!(placed.len(), 3, "{flags:?}");
        for &(now, at) in placed.iter() {
            let e = now + 250;
            assert!(
                at >= e && at <= deadline(e, now),
                "{flags:?}: {e} at {now} fires at {at}"
            );
        }
        drop(later);
    }
}

/// A callback that re-arms its timer to the tick its run is at (the past,
/// once that tick is processed) fires again at the next run, not in the
/// same one: a run always ends.
#[test]
fn a_callback_rearming_into_its_own_tick_waits_for_the_next_run() {
    let (sys, clock) = manual(1);
    let _w = sys.enter(0).unwrap();
    let n = Arc::new(AtomicUsize::new(0));
    let m = n.clone();
    let t = sys.timer(move |t| {
        // Bounded, so that a livelock shows as a count, not a hang.
        if m.fetch_add(1, SeqCst) < 1000 {
            t.modify(Expiry::Tick(t.expires())).unwrap();
        }
    });
    t.modify(Expiry::Tick(40)).unwrap();
    clock.set(100);
    assert_eq!(sys.run_expired(0, 100).unwrap(), 1);
    assert_eq!(n.load(SeqCst), 1);
    assert!(t.is_pending());
    assert!(t.fires_at().unwrap() <= 100);
    assert_eq!(sys.run_expired(0, 100).unwrap(), 1);
    assert_eq!(n.load(SeqCst), 2);
}

/// The same on a worker other than the caller's, and with an arm from
/// another thread while the base is stale.
#[test]
fn an_arm_from_another_thread_on_a_stale_base_meets_the_bound() {
    let (sys, clock) = manual(2);
    let (_n0, cb) = counter();
    let overdue = sys.timer(cb);
    {
        let _w = sys.enter(1).unwrap();
        overdue.modify(Expiry::Tick(1_000u64)).unwrap();
    }
    clock.set(1_000_000);
    let s = sys.clone();
    let (n, cb) = counter();
    let t = Arc::new(sys.timer(cb));
    let t2 = t.clone();
    std::thread::spawn(move || {
        let _w = s.enter(1).unwrap();
        t2.modify(Expiry::Tick(1_000_100u64)).unwrap();
    })
    .join()
    .unwrap();
    // 100 ticks: level 1, 8-tick buckets.
    let at = t.fires_at().unwrap();
    assert!(
        (1_000_100..=deadline(1_000_100, 1_000_000)).contains(&at),
        "{at}"
    );
    clock.set(at);
    sys.run_expired(1, at).unwrap();
    assert_eq!(n.load(SeqCst), 1);
}

/// A manual clock at the far end of `u64`: the wheel's time saturates at
/// `MAX_TICK`, everything armed is due, nothing overflows.
#[test]
fn a_clock_past_the_wheels_range_makes_every_arm_due() {
    for now in [utimer::wheel::MAX_TICK + 1, u64::MAX - 5, u64::MAX] {
        let (sys, clock) = manual(1);
        let _w = sys.enter(0).unwrap();
        let (n, cb) = counter();
        let t = sys.timer(cb);
        t.modify(Expiry::Tick(100)).unwrap();
        clock.set(now);
        for e in [u64::MAX, now, 5, utimer::wheel::MAX_TICK] {
            t.modify(Expiry::Tick(e)).unwrap();
            assert!(t.fires_at().unwrap() <= utimer::wheel::MAX_TICK);
            assert!(t.reduce(Expiry::Tick(e)).unwrap());
        }
        assert_eq!(sys.run_expired(0, now).unwrap(), 1);
        assert_eq!(n.load(SeqCst), 1);
    }
}
