//! Loom models of the hierarchy's protocols (run by `ci/loom.sh`): the
//! state word under racing activation and deactivation (the sequence
//! counter's race from the module essay), the last idle worker's wake-up,
//! and a new timer racing the last worker going idle. Each model runs the
//! real walks on a small hierarchy; loom explores every interleaving of
//! their atomics and locks.

use super::ops::{Deactivated, NewTimer};
use super::{Hierarchy, Topology};
use crate::sync::model;
use loom::sync::Arc;
use loom::thread;

/// Workers 0 and 1 share a level-0 group, worker 2 has its own; a top
/// group above both.
fn three_workers() -> Arc<Hierarchy> {
    Arc::new(Hierarchy::new(&Topology::from_nodes(vec![0, 0, 1])))
}

/// The essay's race: worker 0 goes idle (its group with it) while worker
/// 1 of the same group wakes; worker 2 stays active elsewhere. Whatever the
/// interleaving, every group's mask and migrator end up agreeing with its
/// children.
#[test]
fn sequence_counter_race() {
    model(|| {
        let h = three_workers();
        for w in 0..3 {
            h.join(w, 0);
        }
        assert!(matches!(h.deactivate(1, None), Deactivated::Idle(_)));
        let h2 = h.clone();
        let idle = thread::spawn(move || {
            h2.deactivate(0, Some(10));
        });
        h.activate(1, 0);
        idle.join().unwrap();
        h.check().unwrap();
        assert!(h.top_active());
    });
}

/// Two workers in different groups go idle at once, with movable timers at
/// 10 and 20: whoever is last arms the system's wake-up for 10 (no timer
/// is missed when everybody sleeps), and only the last one arms.
#[test]
fn last_idle_worker_arms_the_first_expiry() {
    model(|| {
        let h = Arc::new(Hierarchy::new(&Topology::from_nodes(vec![0, 1])));
        h.join(0, 0);
        h.join(1, 0);
        let h2 = h.clone();
        let a = thread::spawn(move || match h2.deactivate(0, Some(10)) {
            Deactivated::Idle(top) => top.arm,
            Deactivated::NotMember => unreachable!(),
        });
        let b = match h.deactivate(1, Some(20)) {
            Deactivated::Idle(top) => top.arm,
            Deactivated::NotMember => unreachable!(),
        };
        let a = a.join().unwrap();
        let armed: Vec<u64> = [a, b].into_iter().flatten().collect();
        assert_eq!(armed, vec![10], "exactly one arms, for the first expiry");
        h.check().unwrap();
        assert!(!h.top_active());
    });
}

/// A timer armed onto idle worker 1 (at 5) while worker 0, the last active
/// one, goes idle: either worker 0 arms its wake-up for 5 or earlier, or
/// the new timer's walk asks to wake someone. Never neither.
#[test]
fn new_timer_vs_last_worker_going_idle() {
    model(|| {
        let h = Arc::new(Hierarchy::new(&Topology::from_nodes(vec![0, 1])));
        h.join(0, 0);
        h.join(1, 0);
        assert!(matches!(h.deactivate(1, None), Deactivated::Idle(_)));
        let h2 = h.clone();
        let arm = thread::spawn(move || match h2.new_timer(1, 5) {
            NewTimer::Recorded(top) => top.wake.is_some(),
            NewTimer::NotMember => unreachable!(),
        });
        let armed = match h.deactivate(0, Some(50)) {
            Deactivated::Idle(top) => top.arm,
            Deactivated::NotMember => unreachable!(),
        };
        let woke = arm.join().unwrap();
        assert!(
            woke || armed.is_some_and(|t| t <= 5),
            "timer at 5 lost: armed {armed:?}, woke {woke}"
        );
    });
}
