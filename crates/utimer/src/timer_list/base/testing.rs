//! Test support: freezing a timer's move between two bases halfway.

use crate::timer_list::base::BaseKind;
use crate::{Clock, Timer, TimerSystem};
use std::sync::Arc;
use std::thread::{self, JoinHandle};

/// A 2-worker system with a timer armed on worker 0 for tick 50; `start`
/// begins a move of it to worker 1 on another thread while this thread
/// holds worker 1's global base lock, so the move stops between its two
/// halves. Checks that the moving timer reads as pending and that a
/// `delete` racing the move finds it pending, then lets the move land and
/// returns the system and what the mover returned.
pub(crate) fn delete_during_a_held_move<R: Send + 'static>(
    start: impl FnOnce(Arc<TimerSystem>, Arc<Timer>) -> JoinHandle<R>,
) -> (Arc<TimerSystem>, R) {
    let sys = Arc::new(
        TimerSystem::builder()
            .workers(2)
            .clock(Clock::manual())
            .build_without_threads(),
    );
    let t = Arc::new(sys.timer(|_| {}));
    {
        let _w0 = sys.enter(0).unwrap();
        t.modify(crate::Expiry::Tick(50)).unwrap();
    }
    let bases = &sys.core().bases;
    let (from, to) = (
        bases.base(0, BaseKind::Global),
        bases.base(1, BaseKind::Global),
    );
    let held = to.lock();
    let mover = start(sys.clone(), t.clone());
    // Taken off worker 0 (and tagged MIGRATING) under one lock; it cannot
    // land while we hold worker 1's.
    while !from.lock().wheel.is_empty() {
        thread::yield_now();
    }
    assert!(t.is_pending(), "a moving timer reads as not pending");
    let deleter = {
        let t = t.clone();
        thread::spawn(move || t.delete())
    };
    drop(held);
    let moved = mover.join().unwrap();
    assert!(deleter.join().unwrap(), "delete found a moving timer idle");
    assert!(!t.is_pending());
    (sys, moved)
}
