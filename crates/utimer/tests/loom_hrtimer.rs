//! Loom models of the hrtimer protocols (`src/hrtimer/`), run by
//! `ci/loom.sh` like `tests/loom.rs`: cancel-and-wait against a running
//! callback, a restarting callback against `cancel`, a start from another
//! thread while the callback runs (one callback at a time), and the handle
//! dropped while its callback runs. Under `cfg(loom)` the base spinlock, the
//! atomics and the thread-locals are loom's, so every interleaving of the
//! real code is explored.

#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, AtomicUsize};
use loom::thread;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use utimer::loom_model::model;
use utimer::{Clock, ClockId, HrRestart, Ktime, TimerSystem};

fn system() -> Arc<TimerSystem> {
    Arc::new(
        TimerSystem::builder()
            .workers(1)
            .clock(Clock::manual())
            .build_without_threads(),
    )
}

fn spawn_expirer(sys: &Arc<TimerSystem>) -> thread::JoinHandle<usize> {
    let sys = sys.clone();
    thread::spawn(move || sys.run_expired(0, 0).unwrap())
}

/// `cancel` racing the expiry run: when it returns, the callback is not
/// running and has either finished or never started; the timer is idle.
#[test]
fn cancel_waits_for_the_running_callback() {
    model(|| {
        let sys = system();
        let inside = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicUsize::new(0));
        let (i, d) = (inside.clone(), done.clone());
        let t = sys
            .hrtimer_on(0, ClockId::Monotonic, move |_| {
                i.store(true, SeqCst);
                i.store(false, SeqCst);
                d.fetch_add(1, SeqCst);
                HrRestart::NoRestart
            })
            .unwrap();
        t.start(Ktime::ZERO).unwrap();
        let expirer = spawn_expirer(&sys);
        let was_queued = t.cancel().unwrap();
        assert!(
            !inside.load(SeqCst),
            "cancel returned while the callback ran"
        );
        assert!(!t.is_active());
        // Either it was cancelled before firing, or it fired completely.
        assert_eq!(done.load(SeqCst), !was_queued as usize);
        expirer.join().unwrap();
        assert_eq!(done.load(SeqCst), !was_queued as usize);
    });
}

/// A callback that restarts its timer, against `cancel`: `cancel` returns
/// only when the timer is neither queued nor running.
#[test]
fn cancel_vs_restarting_callback() {
    model(|| {
        let sys = system();
        let t = sys
            .hrtimer_on(0, ClockId::Monotonic, |fire| {
                fire.set_expires(Ktime::from_nanos(1_000_000_000));
                HrRestart::Restart
            })
            .unwrap();
        t.start(Ktime::ZERO).unwrap();
        let expirer = spawn_expirer(&sys);
        t.cancel().unwrap();
        assert!(!t.is_active());
        expirer.join().unwrap();
        assert!(!t.is_queued(), "a restart after cancel returned");
    });
}

/// Another thread restarts the timer for a time already passed while its
/// callback runs: the callback never runs twice at once, and the restart
/// is not lost (it fires again, in this run or a later one). A start made
/// once the callback had begun always fires a second time: with only the
/// count of 1 or 2 firings checked, a restart dropped while the callback
/// ran went unseen.
#[test]
fn start_while_running_is_one_callback_at_a_time() {
    model(|| {
        let sys = system();
        let inside = Arc::new(AtomicUsize::new(0));
        let fired = Arc::new(AtomicUsize::new(0));
        let began = Arc::new(AtomicBool::new(false));
        let (i, f, b) = (inside.clone(), fired.clone(), began.clone());
        let t = Arc::new(
            sys.hrtimer_on(0, ClockId::Monotonic, move |_| {
                b.store(true, SeqCst);
                assert_eq!(i.fetch_add(1, SeqCst), 0, "two callbacks at once");
                i.fetch_sub(1, SeqCst);
                f.fetch_add(1, SeqCst);
                HrRestart::NoRestart
            })
            .unwrap(),
        );
        t.start(Ktime::ZERO).unwrap();
        let expirer = spawn_expirer(&sys);
        let starter = {
            let t = t.clone();
            thread::spawn(move || {
                let after_it_began = began.load(SeqCst);
                t.start(Ktime::ZERO).unwrap();
                after_it_began
            })
        };
        let after_it_began = starter.join().unwrap();
        let ran = expirer.join().unwrap();
        let later = sys.run_expired(0, 0).unwrap();
        assert_eq!(fired.load(SeqCst), ran + later);
        assert!((1..=2).contains(&(ran + later)));
        if after_it_began {
            assert_eq!(ran + later, 2, "a restart made while it ran was lost");
        }
        assert!(!t.is_queued(), "the restart fired");
    });
}

/// Sets its flag when dropped: tells when the callback's captures went.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, SeqCst);
    }
}

/// The handle dropped while the callback runs and asks to restart: the
/// drop never waits, the callback's captures live until it returns, and
/// the timer is not queued again.
#[test]
fn drop_while_running_callback_restarts() {
    model(|| {
        let sys = system();
        let freed = Arc::new(AtomicBool::new(false));
        let flag = DropFlag(freed.clone());
        let f2 = freed.clone();
        let t = sys
            .hrtimer_on(0, ClockId::Monotonic, move |fire| {
                let _keep = &flag;
                assert!(!f2.load(SeqCst), "captures freed while the callback ran");
                fire.set_expires(Ktime::from_nanos(1_000_000_000));
                HrRestart::Restart
            })
            .unwrap();
        t.start(Ktime::ZERO).unwrap();
        let expirer = spawn_expirer(&sys);
        drop(t);
        expirer.join().unwrap();
        assert!(freed.load(SeqCst), "the timer was freed");
        assert_eq!(sys.metrics().hr_stats(0).unwrap().pending, 0);
    });
}
