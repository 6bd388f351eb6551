//! Loom models of the sleeper protocol (`src/hrtimer/sleeper.rs`), run by
//! `ci/loom.sh`: the expiry run takes a sleeper's waker under the base lock,
//! marks it fired (Release) and wakes it after the lock, while its owner
//! drops, polls with a new waker, or restarts it. Under `cfg(loom)` the
//! base spinlock, the atomics and the node's cells (links, waker) are loom's,
//! so a node touched by the run after its owner could free it shows up as
//! a race on those cells.

#![cfg(loom)]

use loom::sync::atomic::AtomicUsize;
use loom::thread;
use std::pin::Pin;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use utimer::loom_model::model;
use utimer::{Clock, ClockId, HrSleeper, Ktime, TimerSystem};

/// One worker on a manual clock at tick 0.
fn system() -> (Arc<TimerSystem>, Clock) {
    let clock = Clock::manual();
    let sys = TimerSystem::builder()
        .workers(1)
        .clock(clock.clone())
        .build_without_threads();
    (Arc::new(sys), clock)
}

struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

fn counter() -> (Arc<Count>, Waker) {
    let c = Arc::new(Count(AtomicUsize::new(0)));
    (c.clone(), Waker::from(c))
}

type Sl = Pin<Box<HrSleeper<Arc<TimerSystem>>>>;

/// A sleeper queued for 1 ns with `waker`, and the clock moved past it
/// (tick 1), so that an expiry run fires it.
fn queued(sys: &Arc<TimerSystem>, clock: &Clock, waker: &Waker) -> Sl {
    let mut s = Box::pin(HrSleeper::new(
        sys.clone(),
        ClockId::Monotonic,
        Ktime::from_nanos(1),
    ));
    s.as_mut().start(Ktime::from_nanos(1), Some(waker)).unwrap();
    assert!(s.is_queued());
    clock.set(1);
    s
}

fn spawn_expirer(sys: &Arc<TimerSystem>) -> thread::JoinHandle<usize> {
    let sys = sys.clone();
    thread::spawn(move || sys.run_expired(0, 1).unwrap())
}

/// The owner drops the sleeper while the run fires it: the run never
/// touches it after the drop, the waker is woken at most once, and nothing
/// stays queued.
#[test]
fn drop_races_the_expiry_run() {
    model(|| {
        let (sys, clock) = system();
        let (count, waker) = counter();
        let s = queued(&sys, &clock, &waker);
        let expirer = spawn_expirer(&sys);
        drop(s);
        let ran = expirer.join().unwrap();
        assert_eq!(count.0.load(SeqCst), ran, "woken iff the run fired it");
        assert!(ran <= 1);
        assert_eq!(sys.metrics().hr_stats(0).unwrap().pending, 0);
    });
}

/// The owner polls with a new waker while the run fires: either the poll
/// sees the fire, or the new waker is the one woken. No wake-up is lost.
#[test]
fn poll_with_a_new_waker_races_the_expiry_run() {
    model(|| {
        let (sys, clock) = system();
        let (old, w1) = counter();
        let (new, w2) = counter();
        let mut s = queued(&sys, &clock, &w1);
        let expirer = spawn_expirer(&sys);
        let r = s.as_mut().poll_expired(&mut Context::from_waker(&w2));
        expirer.join().unwrap();
        let (o, n) = (old.0.load(SeqCst), new.0.load(SeqCst));
        assert_eq!(o + n, 1, "exactly one wake");
        match r {
            Poll::Ready(r) => assert_eq!((r, o), (Ok(()), 1), "ready: the run fired first"),
            Poll::Pending => assert_eq!(n, 1, "pending: the new waker is woken"),
        }
        assert!(s.is_expired());
    });
}

/// The owner restarts the sleeper for later while the run fires it: the
/// end state is consistent (queued for the new expiry, or fired and then
/// queued again), and it is queued exactly once.
#[test]
fn restart_races_the_expiry_run() {
    model(|| {
        let (sys, clock) = system();
        let (count, waker) = counter();
        let mut s = queued(&sys, &clock, &waker);
        let expirer = spawn_expirer(&sys);
        s.as_mut()
            .start(Ktime::from_nanos(1_000_000_000), None)
            .unwrap();
        let ran = expirer.join().unwrap();
        assert_eq!(count.0.load(SeqCst), ran);
        assert!(s.is_queued(), "the restart queues it whatever the order");
        assert_eq!(s.expires(), Ktime::from_nanos(1_000_000_000));
        assert_eq!(sys.metrics().hr_stats(0).unwrap().pending, 1);
        // Whichever won, nothing fires before the new expiry (a lost
        // extension would leave it keyed at 1, or fired with no restart).
        clock.set(2);
        assert_eq!(sys.run_expired(0, 2).unwrap(), 0);
        assert!(s.is_queued());
        assert_eq!(count.0.load(SeqCst), ran);
        drop(s);
        assert_eq!(sys.metrics().hr_stats(0).unwrap().pending, 0);
    });
}

/// The owner moves the sleeper later without the lock while the run
/// reaches its old expiry (the Dekker pair of `try_extend` and
/// `take_due`): it never fires for the old expiry once the move returned,
/// whichever order, and it fires for the new one.
#[test]
fn extend_races_the_expiry_run() {
    model(|| {
        let (sys, clock) = system();
        let (count, waker) = counter();
        let mut s = queued(&sys, &clock, &waker);
        let expirer = spawn_expirer(&sys);
        // 5 ms: tick 5 of the default 1 ms tick.
        s.as_mut()
            .start(Ktime::from_nanos(5_000_000), None)
            .unwrap();
        let ran = expirer.join().unwrap();
        assert_eq!(count.0.load(SeqCst), ran);
        assert!(s.is_queued(), "queued for 5 ms whatever the order");
        assert_eq!(s.expires(), Ktime::from_nanos(5_000_000));
        clock.set(4);
        assert_eq!(sys.run_expired(0, 4).unwrap(), 0, "fired before 5 ms");
        clock.set(5);
        assert_eq!(sys.run_expired(0, 5).unwrap(), 1);
        assert!(s.is_expired());
    });
}

/// The owner polls with the waker already installed (no lock) while the
/// run fires: either the poll sees the fire or the run wakes that waker.
#[test]
fn poll_with_the_same_waker_races_the_expiry_run() {
    model(|| {
        let (sys, clock) = system();
        let (count, waker) = counter();
        let mut s = queued(&sys, &clock, &waker);
        let expirer = spawn_expirer(&sys);
        let r = s.as_mut().poll_expired(&mut Context::from_waker(&waker));
        assert_eq!(expirer.join().unwrap(), 1);
        assert_eq!(count.0.load(SeqCst), 1, "woken once, whichever order");
        if r.is_ready() {
            assert!(s.is_expired());
        }
    });
}
