//! `Metrics::timer_list` (`sys.metrics().timer_list()`): the `/proc/timer_list` snapshot says what is
//! queued where.

use std::time::Duration;
use utimer::{BaseKind, Clock, ClockId, Expiry, HrRestart, Ktime, TimerFlags, TimerSystem};

/// `n` ns of an hrtimer's clock.
fn ns(n: u64) -> Ktime {
    Ktime::from_nanos(n)
}

#[test]
fn the_snapshot_shows_each_base() {
    let clock = Clock::manual();
    let sys = TimerSystem::builder()
        .workers(2)
        .clock(clock.clone())
        .build_without_threads();
    let _in = sys.enter(0).unwrap();
    let pinned = sys.timer_with_flags(TimerFlags::PINNED, |_| {});
    pinned.modify(Expiry::Tick(10)).unwrap();
    let movable = sys.timer(|_| {});
    movable.modify(Expiry::Tick(20)).unwrap();
    let hr = sys.hrtimer(ClockId::Boottime, |_| HrRestart::NoRestart);
    hr.start(ns(7_000_000)).unwrap();

    let list = sys.metrics().timer_list();
    assert_eq!(list.workers.len(), 2);
    assert_eq!(list.tick, Duration::from_millis(1));
    let w0 = &list.workers[0];
    assert!(w0.online);
    let local = w0.wheel.iter().find(|b| b.kind == BaseKind::Local).unwrap();
    assert_eq!((local.stats.pending, local.next_expiry), (1, Some(10)));
    let global = w0
        .wheel
        .iter()
        .find(|b| b.kind == BaseKind::Global)
        .unwrap();
    assert_eq!(global.stats.pending, 1);
    assert!(global.next_expiry.is_some_and(|t| t >= 20));
    let boot = w0.hr.iter().find(|h| h.clock == ClockId::Boottime).unwrap();
    assert_eq!((boot.pending, boot.next_expiry_ns), (1, Some(7_000_000)));
    assert!(list.workers[1].wheel.iter().all(|b| b.stats.pending == 0));
    assert!(list.workers[1]
        .hr
        .iter()
        .all(|h| h.pending == 0 && h.next_expiry_ns.is_none()));

    let text = list.to_string();
    assert!(
        text.contains("worker: 0") && text.contains("worker: 1"),
        "{text}"
    );
    assert!(
        text.contains("wheel base Local: pending 1, next expiry 10"),
        "{text}"
    );
    assert!(
        text.contains("clock Boottime: pending 1, next expiry 7000000 nsecs"),
        "{text}"
    );

    assert!(pinned.delete());
    clock.advance(8);
    sys.run_expired(0, sys.now()).unwrap();
    let list = sys.metrics().timer_list();
    let w0 = &list.workers[0];
    let boot = w0.hr.iter().find(|h| h.clock == ClockId::Boottime).unwrap();
    assert_eq!((boot.pending, boot.fired), (0, 1));
    let local = w0.wheel.iter().find(|b| b.kind == BaseKind::Local).unwrap();
    assert_eq!((local.stats.pending, local.stats.deleted), (0, 1));
}
