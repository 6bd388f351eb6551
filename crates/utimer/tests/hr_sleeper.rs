//! `HrSleeper` through the public API: fires at its expiry (never
//! before) and wakes its latest waker once, restarts move it, cancel and
//! drop take it out without waiting, an expiry the base already passed
//! fires at once, hot-plug moves queued sleepers, edge expiries, and drops
//! racing the expiry run on real threads. Runs under Miri too
//! (`ci/miri.sh`).

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;
use utimer::{Clock, ClockId, HrSleeper, Ktime, TimerSystem};

/// `n` ns of an hrtimer's clock.
fn ns(n: u64) -> Ktime {
    Ktime::from_nanos(n)
}

/// A manual clock with 100 µs ticks: hrtimers read `tick × 100_000` ns.
fn manual(workers: usize) -> (Arc<TimerSystem>, Clock) {
    let clock = Clock::manual();
    let sys = TimerSystem::builder()
        .workers(workers)
        .tick(Duration::from_micros(100))
        .clock(clock.clone())
        .build_without_threads();
    (Arc::new(sys), clock)
}

const TICK: u64 = 100_000;

/// A waker that counts its wakes.
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

fn counter() -> (Arc<Count>, Waker) {
    let c = Arc::new(Count(AtomicUsize::new(0)));
    (c.clone(), Waker::from(c))
}

type Sl = Pin<Box<HrSleeper<Arc<TimerSystem>>>>;

fn sleeper(sys: &Arc<TimerSystem>, at: u64) -> Sl {
    Box::pin(HrSleeper::new(sys.clone(), ClockId::Monotonic, ns(at)))
}

fn pending(sys: &TimerSystem, w: usize) -> usize {
    sys.metrics().hr_stats(w).unwrap().pending
}

#[test]
fn fires_at_its_expiry_never_before_and_wakes_once() {
    let (sys, clock) = manual(1);
    let (count, waker) = counter();
    let mut s = sleeper(&sys, 5 * TICK + 1);
    assert_eq!(std::mem::size_of::<HrSleeper<Arc<TimerSystem>>>(), 72);
    assert!(!s.is_queued() && !s.is_expired());
    s.as_mut().start(ns(5 * TICK + 1), Some(&waker)).unwrap();
    assert!(s.is_queued());
    assert_eq!(pending(&sys, 0), 1);
    assert_eq!(
        sys.next_expiry(0).unwrap(),
        Some(6),
        "rounded up to its tick"
    );
    let mut cx = Context::from_waker(&waker);
    for tick in 0..=5 {
        clock.set(tick);
        sys.run_expired(0, tick).unwrap();
        assert_eq!(
            count.0.load(SeqCst),
            0,
            "woken before its expiry at tick {tick}"
        );
        assert!(s.as_mut().poll_expired(&mut cx).is_pending());
    }
    clock.set(6);
    assert_eq!(sys.run_expired(0, 6).unwrap(), 1);
    assert_eq!(count.0.load(SeqCst), 1);
    assert!(s.is_expired() && !s.is_queued());
    assert_eq!(s.as_mut().poll_expired(&mut cx), Poll::Ready(Ok(())));
    assert_eq!(pending(&sys, 0), 0);
    assert_eq!(sys.metrics().hr_stats(0).unwrap().fired, 1);
    // Nothing left to fire.
    clock.set(100);
    sys.run_expired(0, 100).unwrap();
    assert_eq!(count.0.load(SeqCst), 1);
}

#[test]
fn the_latest_waker_is_the_one_woken() {
    let (sys, clock) = manual(1);
    let (first, w1) = counter();
    let (second, w2) = counter();
    let mut s = sleeper(&sys, TICK);
    s.as_mut().start(ns(TICK), Some(&w1)).unwrap();
    assert!(s
        .as_mut()
        .poll_expired(&mut Context::from_waker(&w2))
        .is_pending());
    clock.set(1);
    sys.run_expired(0, 1).unwrap();
    assert_eq!((first.0.load(SeqCst), second.0.load(SeqCst)), (0, 1));
    // The replaced waker was dropped, not leaked: only our handle is left.
    assert_eq!(Arc::strong_count(&first), 2, "w1 itself, and `first`");
}

#[test]
fn restart_moves_it_and_cancel_takes_it_out() {
    let (sys, clock) = manual(1);
    let (count, waker) = counter();
    let mut a = sleeper(&sys, 0);
    let mut b = sleeper(&sys, 0);
    a.as_mut().start(ns(3 * TICK), Some(&waker)).unwrap();
    b.as_mut().start(ns(8 * TICK), Some(&waker)).unwrap();
    // Later (it keeps its place: the run at tick 3 re-keys it), then
    // earlier than b.
    a.as_mut().start(ns(10 * TICK), None).unwrap();
    assert_eq!(a.expires(), ns(10 * TICK));
    assert_eq!(sys.next_expiry(0).unwrap(), Some(3));
    clock.set(3);
    assert_eq!(
        sys.run_expired(0, 3).unwrap(),
        0,
        "fired before its new expiry"
    );
    assert_eq!(sys.next_expiry(0).unwrap(), Some(8));
    a.as_mut().set_expires(ns(5 * TICK)).unwrap();
    assert_eq!(sys.next_expiry(0).unwrap(), Some(5));
    assert!(b.as_mut().cancel());
    assert!(!b.as_mut().cancel(), "cancel of an idle sleeper");
    assert_eq!(pending(&sys, 0), 1);
    assert_eq!(count.0.load(SeqCst), 0);
    clock.set(8);
    assert_eq!(sys.run_expired(0, 8).unwrap(), 1);
    assert_eq!(count.0.load(SeqCst), 1);
    assert!(a.is_expired() && !b.is_expired());
    // A fired sleeper: cancel changes nothing, set_expires keeps it fired.
    assert!(!a.as_mut().cancel());
    a.as_mut().set_expires(ns(TICK)).unwrap();
    assert!(a.is_expired());
}

/// A queued sleeper moved later keeps its place in the queue (no lock);
/// the run that reaches its old expiry queues it again for the new one,
/// and a later earlier move (which must take the lock) still counts.
#[test]
fn a_later_restart_never_fires_at_the_old_expiry() {
    let (sys, clock) = manual(1);
    let (count, waker) = counter();
    let mut cx = Context::from_waker(&waker);
    let mut s = sleeper(&sys, 0);
    s.as_mut().start(ns(3 * TICK), Some(&waker)).unwrap();
    s.as_mut().start(ns(10 * TICK), None).unwrap();
    s.as_mut().start(ns(12 * TICK), Some(&waker)).unwrap();
    assert_eq!(s.expires(), ns(12 * TICK));
    for tick in [3, 5, 11] {
        clock.set(tick);
        assert_eq!(sys.run_expired(0, tick).unwrap(), 0, "fired at tick {tick}");
        assert!(s.is_queued() && !s.is_expired());
        assert!(s.as_mut().poll_expired(&mut cx).is_pending());
    }
    assert_eq!(
        sys.next_expiry(0).unwrap(),
        Some(12),
        "re-keyed to its expiry"
    );
    // Earlier than its key now, then later again.
    s.as_mut().start(ns(11 * TICK + 1), None).unwrap();
    assert_eq!(sys.next_expiry(0).unwrap(), Some(12));
    s.as_mut().start(ns(20 * TICK), None).unwrap();
    s.as_mut().start(ns(15 * TICK), None).unwrap();
    for tick in [12, 14] {
        clock.set(tick);
        assert_eq!(sys.run_expired(0, tick).unwrap(), 0, "fired at tick {tick}");
    }
    assert_eq!(count.0.load(SeqCst), 0);
    clock.set(15);
    assert_eq!(sys.run_expired(0, 15).unwrap(), 1);
    assert_eq!(count.0.load(SeqCst), 1);
    assert_eq!(s.as_mut().poll_expired(&mut cx), Poll::Ready(Ok(())));
    assert_eq!(pending(&sys, 0), 0);
}

/// Hundreds of sleepers moved later, all reached at their old expiry in
/// one run: none fires, every one is queued again (the run re-keys them a
/// bounded number at a time), and all fire at the new expiry.
#[test]
fn a_run_re_keys_many_moved_sleepers() {
    let (sys, clock) = manual(1);
    let (count, waker) = counter();
    let mut many: Vec<Sl> = (0..300).map(|_| sleeper(&sys, 0)).collect();
    for s in many.iter_mut() {
        s.as_mut().start(ns(TICK), Some(&waker)).unwrap();
        s.as_mut().start(ns(5 * TICK), None).unwrap();
    }
    clock.set(1);
    assert_eq!(sys.run_expired(0, 1).unwrap(), 0);
    assert_eq!(pending(&sys, 0), 300);
    assert_eq!(sys.next_expiry(0).unwrap(), Some(5));
    clock.set(5);
    assert_eq!(sys.run_expired(0, 5).unwrap(), 300);
    assert_eq!(count.0.load(SeqCst), 300);
    assert!(many.iter().all(|s| s.is_expired()));
}

/// A fire takes the waker: a sleeper started again without one has none,
/// so a poll with the waker it had before must install it again (not take
/// it for the one installed), or the next fire would wake nobody.
#[test]
fn a_poll_after_a_fire_installs_its_waker_again() {
    let (sys, clock) = manual(1);
    let (count, waker) = counter();
    let mut cx = Context::from_waker(&waker);
    let mut s = sleeper(&sys, 0);
    s.as_mut().start(ns(TICK), Some(&waker)).unwrap();
    clock.set(1);
    assert_eq!(sys.run_expired(0, 1).unwrap(), 1);
    assert_eq!(count.0.load(SeqCst), 1);
    s.as_mut().start(ns(3 * TICK), None).unwrap();
    assert!(s.as_mut().poll_expired(&mut cx).is_pending());
    clock.set(3);
    assert_eq!(sys.run_expired(0, 3).unwrap(), 1);
    assert_eq!(
        count.0.load(SeqCst),
        2,
        "the poll's waker was not installed"
    );
}

#[test]
fn complete_marks_an_idle_sleeper_fired_and_leaves_a_queued_one() {
    let (sys, clock) = manual(1);
    let (count, waker) = counter();
    let mut cx = Context::from_waker(&waker);
    // Idle: fired at once, nothing queued, nobody woken.
    let mut s = sleeper(&sys, TICK);
    s.as_mut().complete();
    assert!(s.is_expired() && !s.is_queued());
    assert_eq!(s.as_mut().poll_expired(&mut cx), Poll::Ready(Ok(())));
    assert_eq!((pending(&sys, 0), count.0.load(SeqCst)), (0, 0));
    // Started again later: pending again, fires at its new expiry.
    s.as_mut().start(ns(3 * TICK), Some(&waker)).unwrap();
    assert!(s.is_queued() && !s.is_expired());
    // Queued: `complete` leaves it queued, to fire at its expiry.
    s.as_mut().complete();
    assert!(s.is_queued() && !s.is_expired());
    clock.set(2);
    sys.run_expired(0, 2).unwrap();
    assert_eq!(count.0.load(SeqCst), 0, "completed early");
    clock.set(3);
    assert_eq!(sys.run_expired(0, 3).unwrap(), 1);
    assert_eq!(count.0.load(SeqCst), 1);
    assert!(s.is_expired());
}

#[test]
fn an_expiry_the_base_already_passed_fires_at_once() {
    let (sys, clock) = manual(1);
    let (count, waker) = counter();
    let mut other = sleeper(&sys, 0);
    other
        .as_mut()
        .start(ns(10 * TICK), Some(Waker::noop()))
        .unwrap();
    clock.set(10);
    sys.run_expired(0, 10).unwrap(); // the base's run read tick 10
    assert!(other.is_expired());
    let mut s = sleeper(&sys, 0);
    s.as_mut().start(ns(10 * TICK), Some(&waker)).unwrap();
    assert!(s.is_expired() && !s.is_queued());
    assert_eq!(count.0.load(SeqCst), 1, "woken by the start itself");
    assert_eq!(pending(&sys, 0), 0);
    // Passed, but after the latest run: queued, fires at the next run.
    s.as_mut().start(ns(10 * TICK + 1), None).unwrap();
    assert!(s.is_queued());
    clock.set(11);
    assert_eq!(sys.run_expired(0, 11).unwrap(), 1);
    assert!(s.is_expired());
}

#[test]
fn drop_takes_it_out_and_never_waits() {
    let (sys, clock) = manual(1);
    let (count, waker) = counter();
    let mut many: Vec<Sl> = (0..100).map(|i| sleeper(&sys, i)).collect();
    for (i, s) in many.iter_mut().enumerate() {
        s.as_mut()
            .start(ns(TICK + (i as u64 * 7_919) % 1_000), Some(&waker))
            .unwrap();
    }
    assert_eq!(pending(&sys, 0), 100);
    // Drop every other one (roots, inner nodes and leaves of the heap).
    let kept: Vec<Sl> = many
        .into_iter()
        .enumerate()
        .filter_map(|(i, s)| (i % 2 == 0).then_some(s))
        .collect();
    assert_eq!(pending(&sys, 0), 50);
    clock.set(2);
    assert_eq!(sys.run_expired(0, 2).unwrap(), 50);
    assert_eq!(count.0.load(SeqCst), 50);
    assert!(kept.iter().all(|s| s.is_expired()));
    drop(kept);
    // Wakers: `count` and the waker itself are all that is left.
    assert_eq!(Arc::strong_count(&count), 2);
}

#[test]
fn hot_plug_moves_queued_sleepers() {
    let (sys, clock) = manual(2);
    let (count, waker) = counter();
    let mut s = sleeper(&sys, 0);
    {
        let _on_1 = sys.enter(1).unwrap();
        s.as_mut().start(ns(5 * TICK), Some(&waker)).unwrap();
    }
    assert_eq!((pending(&sys, 0), pending(&sys, 1)), (0, 1));
    assert_eq!(sys.offline(1).unwrap(), 1);
    assert_eq!((pending(&sys, 0), pending(&sys, 1)), (1, 0));
    assert!(s.is_queued());
    clock.set(5);
    assert_eq!(
        sys.run_expired(1, 5).unwrap(),
        0,
        "offline worker runs nothing"
    );
    assert_eq!(sys.run_expired(0, 5).unwrap(), 1);
    assert_eq!(count.0.load(SeqCst), 1);
    // Restarted while its worker is offline: routed to worker 0.
    s.as_mut().start(ns(7 * TICK), None).unwrap();
    assert_eq!(pending(&sys, 0), 1);
    sys.online(1).unwrap();
    drop(s);
    assert_eq!(pending(&sys, 0), 0);
}

#[test]
fn edge_expiries() {
    let (sys, clock) = manual(1);
    let (count, waker) = counter();
    let mut far = sleeper(&sys, u64::MAX);
    far.as_mut().start(ns(u64::MAX), Some(&waker)).unwrap();
    let mut zero = sleeper(&sys, 0);
    zero.as_mut().start(ns(0), Some(&waker)).unwrap();
    assert!(zero.is_expired(), "every clock has read 0: fired at once");
    clock.set(u64::MAX / TICK);
    sys.run_expired(0, u64::MAX / TICK).unwrap();
    assert!(far.is_queued(), "u64::MAX is never reached by a tick");
    assert_eq!(count.0.load(SeqCst), 1);
    let never = sleeper(&sys, 1);
    assert!(!never.is_queued());
    drop(never); // never started: nothing to take out
    assert!(format!("{:?}", far.as_ref()).contains("queued: true"));
}

#[test]
fn other_clocks() {
    let (sys, clock) = manual(1);
    let (count, waker) = counter();
    let mut s = Box::pin(HrSleeper::new(sys.clone(), ClockId::Boottime, ns(0)));
    assert_eq!(s.clock(), ClockId::Boottime);
    s.as_mut().start(ns(2 * TICK), Some(&waker)).unwrap();
    assert_eq!(s.clock(), ClockId::Boottime);
    clock.set(2);
    sys.run_expired(0, 2).unwrap();
    assert_eq!(count.0.load(SeqCst), 1);
}

/// Real threads: owners start, poll and drop sleepers while another thread
/// runs the expiry; every sleeper either fires once or is dropped queued,
/// and nothing is left behind.
#[test]
fn drops_racing_the_expiry_run() {
    let (sys, clock) = manual(1);
    let stop = Arc::new(AtomicUsize::new(0));
    let expirer = {
        let (sys, clock, stop) = (sys.clone(), clock.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut t = 0;
            while stop.load(SeqCst) == 0 {
                t += 1;
                clock.set(t);
                sys.run_expired(0, t).unwrap();
                std::thread::yield_now();
            }
        })
    };
    let rounds = if cfg!(miri) { 20 } else { 2_000 };
    let owners: Vec<_> = (0..2)
        .map(|k| {
            let sys = sys.clone();
            std::thread::spawn(move || {
                let (count, waker) = counter();
                let mut fired = 0;
                for i in 0..rounds {
                    let mut s = sleeper(&sys, 0);
                    let at = (sys.now() + (i + k) % 3) * TICK;
                    s.as_mut().start(ns(at), Some(&waker)).unwrap();
                    if i % 2 == 0 {
                        std::thread::yield_now();
                    }
                    let r = s.as_mut().poll_expired(&mut Context::from_waker(&waker));
                    fired += r.is_ready() as usize;
                    if s.is_expired() {
                        assert!(sys.now() * TICK >= at, "fired early");
                    }
                }
                (count, fired)
            })
        })
        .collect();
    let counts: Vec<_> = owners.into_iter().map(|o| o.join().unwrap()).collect();
    stop.store(1, SeqCst);
    expirer.join().unwrap();
    // Every fire woke exactly once; a fire may land after the poll and
    // before the drop. Checked once the expiry thread has returned: a run
    // wakes a fired sleeper after it releases the lock, so a poll can see
    // the sleeper fired while its wake is still on the way.
    for (count, fired) in counts {
        assert!(count.0.load(SeqCst) >= fired, "a fire that never woke");
        assert!(count.0.load(SeqCst) <= rounds as usize, "a double wake");
    }
    assert_eq!(pending(&sys, 0), 0);
}
