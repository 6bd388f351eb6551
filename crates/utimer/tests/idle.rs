//! Tickless idle: a worker that goes idle is woken for a timer armed on its
//! bases that fires before it would wake, and only then.

#![cfg(not(loom))]

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use utimer::{Clock, Expiry, TimerFlags, TimerSystem};

fn counting_waker() -> (Arc<AtomicU64>, impl Fn() + Send + Sync + 'static) {
    let n = Arc::new(AtomicU64::new(0));
    let m = n.clone();
    (n, move || {
        m.fetch_add(1, SeqCst);
    })
}

#[test]
fn earlier_timer_wakes_an_idle_worker_later_ones_do_not() {
    let clock = Clock::manual();
    let sys = TimerSystem::builder()
        .workers(2)
        .clock(clock.clone())
        .build_without_threads();
    let (wakes, waker) = counting_waker();
    let worker = sys.register_worker(0, waker).unwrap();
    let far = sys.timer(|_| {});
    far.modify(Expiry::Tick(10_000)).unwrap();
    assert_eq!(worker.idle_enter(), Some(far.fires_at().unwrap()));

    thread::scope(|s| {
        s.spawn(|| {
            // Another thread (its own home worker) arms onto worker 0's bases.
            let t = sys.timer(|_| {});
            t.add_on(0, Expiry::Tick(20_000)).unwrap();
            assert_eq!(
                wakes.load(SeqCst),
                0,
                "later than the worker wakes: no wake-up"
            );
            let d = sys.timer_with_flags(TimerFlags::DEFERRABLE, |_| {});
            d.add_on(0, Expiry::Tick(5)).unwrap();
            assert_eq!(wakes.load(SeqCst), 0, "deferrable timers never wake");
            let near = sys.timer(|_| {});
            near.add_on(0, Expiry::Tick(100)).unwrap();
            assert_eq!(wakes.load(SeqCst), 1, "earlier: woken");
            let pinned = sys.timer_with_flags(TimerFlags::PINNED, |_| {});
            pinned.add_on(0, Expiry::Tick(50)).unwrap();
            assert_eq!(wakes.load(SeqCst), 2, "the local base wakes too");
            t.delete();
            d.delete();
            near.delete();
            pinned.delete();
        });
    });
    worker.idle_exit();
    let t = sys.timer(|_| {});
    t.add_on(0, Expiry::Tick(1)).unwrap();
    assert_eq!(wakes.load(SeqCst), 2, "a busy worker is not woken");
    assert_eq!(worker.idle_enter(), Some(1));
}

#[test]
fn idle_with_no_timer_sleeps_indefinitely() {
    let sys = TimerSystem::builder()
        .workers(1)
        .clock(Clock::manual())
        .build_without_threads();
    let (wakes, waker) = counting_waker();
    let worker = sys.register_worker(0, waker).unwrap();
    assert_eq!(worker.idle_enter(), None);
    let t = sys.timer(|_| {});
    t.modify(Expiry::Tick(1 << 40)).unwrap();
    assert_eq!(
        wakes.load(SeqCst),
        1,
        "any timer wakes an indefinitely idle worker"
    );
    drop(worker);
    t.modify(Expiry::Tick(5)).unwrap();
    assert_eq!(wakes.load(SeqCst), 1, "no waker after unregistering");
}

#[test]
fn an_idle_worker_is_woken_in_time_and_never_early() {
    // A real event loop: park until the next timer or a wake-up.
    let sys = Arc::new(
        TimerSystem::builder()
            .workers(1)
            .tick(Duration::from_millis(1))
            .build_without_threads(),
    );
    let fired_at = Arc::new(std::sync::Mutex::new(None::<Instant>));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let loop_thread = {
        let (sys, fired_at) = (sys.clone(), fired_at.clone());
        thread::spawn(move || {
            let me = thread::current();
            let worker = sys.register_worker(0, move || me.unpark()).unwrap();
            ready_tx.send(()).unwrap();
            let give_up = Instant::now() + Duration::from_secs(10);
            while fired_at.lock().unwrap().is_none() && Instant::now() < give_up {
                worker.run_expired();
                match worker.idle_enter_until() {
                    Some(at) => thread::park_timeout(at.saturating_duration_since(Instant::now())),
                    None => thread::park_timeout(Duration::from_secs(1)),
                }
                worker.idle_exit();
            }
        })
    };
    ready_rx.recv().unwrap();
    thread::sleep(Duration::from_millis(20)); // let it go idle with no timer
    let f = fired_at.clone();
    let t = sys.timer(move |_| {
        *f.lock().unwrap() = Some(Instant::now());
    });
    let armed = Instant::now();
    t.add_on(0, Expiry::Tick(sys.deadline(Duration::from_millis(30))))
        .unwrap();
    loop_thread.join().unwrap();
    let at = fired_at.lock().unwrap().expect("the timer fired");
    assert!(
        at >= armed + Duration::from_millis(30),
        "early: {:?}",
        at - armed
    );
}
