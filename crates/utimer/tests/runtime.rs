//! The Runtime: worker threads, tickless idle, jobs, orderly shutdown.
//! Timing is checked as "never early" plus loose upper bounds that hold on a
//! loaded machine.

#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use utimer::{Expiry, Runtime, TimerFlags};

const LOOSE: Duration = Duration::from_secs(5);

#[test]
fn timers_armed_from_outside_fire_never_early() {
    let rt = Runtime::new(2).unwrap();
    let (tx, rx) = mpsc::channel();
    let mut timers = Vec::new();
    for ms in [1u64, 5, 20, 60, 150] {
        let tx = tx.clone();
        let t = rt
            .system()
            .timer(move |_| tx.send((ms, Instant::now())).unwrap());
        let armed = Instant::now();
        t.modify(Duration::from_millis(ms)).unwrap();
        timers.push((ms, armed, t));
    }
    for _ in 0..timers.len() {
        let (ms, at) = rx.recv_timeout(LOOSE).expect("every timer fires");
        let armed = timers.iter().find(|t| t.0 == ms).unwrap().1;
        assert!(
            at >= armed + Duration::from_millis(ms),
            "{ms} ms timer early by {:?}",
            armed + Duration::from_millis(ms) - at
        );
    }
}

#[test]
fn an_idle_worker_wakes_for_a_newly_armed_earlier_timer() {
    let rt = Runtime::new(1).unwrap();
    let far = rt.system().timer(|_| {});
    far.modify(Duration::from_secs(60)).unwrap();
    thread::sleep(Duration::from_millis(30)); // the worker sleeps for a minute
    let (tx, rx) = mpsc::channel();
    let near = rt.system().timer(move |_| tx.send(Instant::now()).unwrap());
    let armed = Instant::now();
    near.modify(Duration::from_millis(20)).unwrap();
    let at = rx
        .recv_timeout(LOOSE)
        .expect("woken in time, not after a minute");
    assert!(at >= armed + Duration::from_millis(20));
    assert!(far.delete_sync().unwrap());
}

#[test]
fn jobs_run_and_a_panicking_job_does_not_stop_the_worker() {
    let rt = Runtime::new(2).unwrap();
    let done = Arc::new(AtomicU64::new(0));
    rt.spawn_on(0, || panic!("job failure (expected by this test)"));
    for _ in 0..100 {
        let d = done.clone();
        rt.spawn(move || {
            d.fetch_add(1, SeqCst);
        });
    }
    let give_up = Instant::now() + LOOSE;
    while done.load(SeqCst) < 100 && Instant::now() < give_up {
        thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(done.load(SeqCst), 100);
    assert_eq!(rt.job_panics(), 1);
}

#[test]
fn an_idle_runtime_does_not_poll() {
    let rt = Runtime::new(2).unwrap();
    thread::sleep(Duration::from_millis(50)); // let both workers go idle
    let before = (rt.wakeups(0), rt.wakeups(1));
    thread::sleep(Duration::from_millis(300));
    assert_eq!(
        (rt.wakeups(0), rt.wakeups(1)),
        before,
        "no timer, no job: no wake-up"
    );
    // One far timer per worker: still no wake-up within the window.
    let timers: Vec<_> = (0..2)
        .map(|w| {
            let t = rt.system().timer(|_| {});
            t.add_on(
                w,
                Expiry::Tick(rt.system().deadline(Duration::from_secs(3600))),
            )
            .unwrap();
            t
        })
        .collect();
    thread::sleep(Duration::from_millis(50));
    let before = (rt.wakeups(0), rt.wakeups(1));
    thread::sleep(Duration::from_millis(300));
    assert_eq!((rt.wakeups(0), rt.wakeups(1)), before);
    drop(timers);
}

#[test]
fn shutdown_lets_a_running_callback_finish() {
    let rt = Runtime::new(1).unwrap();
    let (started, finished) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (s, f) = (started.clone(), finished.clone());
    let t = rt.system().timer(move |_| {
        s.store(true, SeqCst);
        thread::sleep(Duration::from_millis(100));
        f.store(true, SeqCst);
    });
    t.modify(Duration::from_millis(1)).unwrap();
    let give_up = Instant::now() + LOOSE;
    while !started.load(SeqCst) && Instant::now() < give_up {
        thread::yield_now();
    }
    assert!(started.load(SeqCst));
    let pending = rt
        .system()
        .timer(|_| unreachable!("pending timers never run after shutdown"));
    pending.modify(Duration::from_millis(200)).unwrap();
    rt.shutdown();
    assert!(
        finished.load(SeqCst),
        "shutdown returned while a callback ran"
    );
    assert!(
        !pending.is_pending(),
        "pending timers are cancelled at shutdown"
    );
    assert_eq!(
        pending.modify(Duration::from_millis(1)),
        Err(utimer::TimerError::Shutdown)
    );
}

#[test]
fn sleep_never_returns_early() {
    let rt = Runtime::new(2).unwrap();
    for ms in [1u64, 3, 10, 25] {
        let d = Duration::from_millis(ms);
        let start = Instant::now();
        rt.system().sleep(d).unwrap();
        assert!(
            start.elapsed() >= d,
            "{ms} ms sleep returned after {:?}",
            start.elapsed()
        );
    }
}

#[test]
fn sleep_can_be_cut_short_by_another_thread() {
    let rt = Runtime::new(1).unwrap();
    let sleeper = rt.system().sleeper();
    let interrupter = sleeper.interrupter();
    let start = Instant::now();
    let cutter = thread::spawn(move || {
        thread::sleep(Duration::from_millis(20));
        interrupter.interrupt();
    });
    let outcome = sleeper.sleep(Duration::from_secs(3600)).unwrap();
    assert_eq!(outcome, utimer::SleepOutcome::Interrupted);
    assert!(start.elapsed() < LOOSE);
    cutter.join().unwrap();
    // The sleeper is reusable, and its timer is gone.
    assert_eq!(
        sleeper.sleep(Duration::from_millis(2)).unwrap(),
        utimer::SleepOutcome::Elapsed
    );
}

#[test]
fn sleeping_inside_a_job() {
    // Two workers, each sleeping in a job at once: each sleep's timer is on
    // its own worker, which keeps running its timers while it waits.
    let rt = Runtime::new(2).unwrap();
    let (tx, rx) = mpsc::channel();
    for w in 0..2 {
        let (sys, tx) = (rt.system_arc(), tx.clone());
        rt.spawn_on(w, move || {
            let start = Instant::now();
            let r = sys.sleep(Duration::from_millis(15));
            tx.send((r, start.elapsed())).unwrap();
        });
    }
    for _ in 0..2 {
        let (r, took) = rx.recv_timeout(LOOSE).expect("no sleep may deadlock");
        assert_eq!(r, Ok(()));
        assert!(took >= Duration::from_millis(15), "early: {took:?}");
    }

    // One worker: it runs its own sleep's timer.
    let rt = Runtime::new(1).unwrap();
    let (tx, rx) = mpsc::channel();
    let sys = rt.system_arc();
    rt.spawn(move || {
        let start = Instant::now();
        let r = sys.sleep(Duration::from_millis(3));
        tx.send((r, start.elapsed())).unwrap()
    });
    let (r, took) = rx.recv_timeout(LOOSE).unwrap();
    assert_eq!(r, Ok(()));
    assert!(took >= Duration::from_millis(3));
}

#[test]
fn a_sleeping_worker_keeps_running_its_timers() {
    let rt = Runtime::new(1).unwrap();
    let (started_tx, started_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel();
    let sys = rt.system_arc();
    rt.spawn(move || {
        started_tx.send(()).unwrap();
        done_tx.send(sys.sleep(Duration::from_millis(400))).unwrap();
    });
    started_rx.recv_timeout(LOOSE).unwrap();
    // Armed from outside onto the only worker, which is asleep in a job:
    // the arm wakes its sleep loop, and the timer fires long before the
    // job's sleep ends.
    let (fired_tx, fired_rx) = mpsc::channel();
    let t = rt.system().timer_with_flags(TimerFlags::PINNED, move |_| {
        fired_tx.send(Instant::now()).unwrap()
    });
    let armed = Instant::now();
    t.add_on(0, Duration::from_millis(5)).unwrap();
    let at = fired_rx.recv_timeout(LOOSE).expect("the timer fired");
    assert!(at >= armed + Duration::from_millis(5), "early");
    assert!(
        done_rx.try_recv().is_err(),
        "fired while the job still sleeps"
    );
    assert_eq!(done_rx.recv_timeout(LOOSE).unwrap(), Ok(()));
}

#[test]
fn sleeping_in_a_timer_callback_is_refused() {
    let rt = Runtime::new(1).unwrap();
    let (tx, rx) = mpsc::channel();
    let sys = rt.system_arc();
    let t = rt.system().timer(move |_| {
        tx.send(sys.sleep(Duration::from_millis(1))).unwrap();
    });
    t.modify(Duration::from_millis(1)).unwrap();
    assert_eq!(
        rx.recv_timeout(LOOSE).unwrap(),
        Err(utimer::TimerError::InCallback)
    );
}

#[test]
fn shutdown_never_hangs_racing_a_worker_that_just_finished_a_job() {
    // Defect: the worker looked at the shutdown flag before taking its
    // parker token, so a shutdown between the two was missed and the worker
    // slept forever while shutdown joined it.
    let (tx, rx) = mpsc::channel();
    let racer = std::thread::spawn(move || {
        for i in 0..2000 {
            let rt = Runtime::new(2).unwrap();
            let (jtx, jrx) = mpsc::channel();
            rt.spawn_on(i % 2, move || jtx.send(()).unwrap());
            jrx.recv().unwrap();
            rt.shutdown();
        }
        tx.send(()).unwrap();
    });
    rx.recv_timeout(Duration::from_secs(120))
        .expect("Runtime::shutdown hung");
    racer.join().unwrap();
}

#[test]
fn a_runtime_dropped_inside_its_own_job() {
    let rt = Runtime::new(2).unwrap();
    let (tx, rx) = mpsc::channel();
    let slot = Arc::new(std::sync::Mutex::new(None::<Runtime>));
    let s = slot.clone();
    rt.spawn_on(0, move || {
        // Take the runtime out of its slot and drop it here, in its own job.
        let rt = loop {
            if let Some(rt) = s.lock().unwrap().take() {
                break rt;
            }
            std::thread::yield_now();
        };
        drop(rt);
        tx.send(()).unwrap();
    });
    *slot.lock().unwrap() = Some(rt);
    rx.recv_timeout(LOOSE)
        .expect("dropping a runtime in its own job returns");
}

#[test]
fn a_panicking_timer_callback_leaves_the_worker_running() {
    let hook_calls = Arc::new(AtomicU64::new(0));
    let h = hook_calls.clone();
    let rt = Runtime::with_builder(utimer::TimerSystem::builder().workers(1).on_callback_panic(
        move |_| {
            h.fetch_add(1, SeqCst);
        },
    ))
    .unwrap();
    let bad = rt
        .system()
        .timer(|_| panic!("callback failure (expected by this test)"));
    bad.modify(Duration::from_millis(1)).unwrap();
    let (tx, rx) = mpsc::channel();
    let good = rt.system().timer(move |_| tx.send(()).unwrap());
    good.modify(Duration::from_millis(20)).unwrap();
    rx.recv_timeout(LOOSE)
        .expect("the worker goes on after a panic");
    assert_eq!(hook_calls.load(SeqCst), 1);
    assert_eq!(rt.system().metrics().totals().panicked, 1);
}

/// xorshift64: the expiries of [`rearming_load`], from a printed seed.
fn xorshift(state: &AtomicU64) -> u64 {
    let mut x = state.load(SeqCst);
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    state.store(x, SeqCst);
    x
}

/// Worker 0 of `rt` loaded as a user found it hang on drop: 1,000 timers
/// on its own bases armed 0–20 ms ahead, whose callbacks re-arm every
/// tenth timer 0–2 ms ahead and sleep 1 ms in every `sleepy`-th (with
/// `sleepy` 10, 100 ms of callbacks for each 1 ms they cover: a run lags
/// the present by more than level 0's 63 ticks, so the re-arms forward
/// the base), then a 30 ms job with 100 jobs queued behind it. Returns
/// the timers, once the 30 ms job runs, the count of queued jobs run and
/// the count of callbacks that slept.
fn rearming_load(
    rt: &Runtime,
    seed: u64,
    sleepy: u64,
) -> (Vec<utimer::Timer>, Arc<AtomicU64>, Arc<AtomicU64>) {
    println!("seed {seed}, a 1 ms sleep in every {sleepy}th callback");
    let sys = rt.system_arc();
    let slept = Arc::new(AtomicU64::new(0));
    let slept_in = slept.clone();
    let (armed_tx, armed_rx) = mpsc::channel();
    rt.spawn_on(0, move || {
        let rng = Arc::new(AtomicU64::new(seed.max(1)));
        let timers: Vec<_> = (0..1000u64)
            .map(|i| {
                let r = rng.clone();
                let slept = slept_in.clone();
                let t = sys.timer(move |t| {
                    if i % sleepy == 0 {
                        thread::sleep(Duration::from_millis(1));
                        slept.fetch_add(1, SeqCst);
                    }
                    if i % 10 == 0 {
                        let _ = t.modify(Duration::from_micros(xorshift(&r) % 2_000));
                    }
                });
                t.modify(Duration::from_micros(xorshift(&rng) % 20_000))
                    .unwrap();
                t
            })
            .collect();
        armed_tx.send(timers).unwrap();
    });
    let timers = armed_rx.recv_timeout(LOOSE).expect("the timers are armed");
    let (busy_tx, busy_rx) = mpsc::channel();
    rt.spawn_on(0, move || {
        busy_tx.send(()).unwrap();
        thread::sleep(Duration::from_millis(30));
    });
    let ran = Arc::new(AtomicU64::new(0));
    for _ in 0..100 {
        let r = ran.clone();
        rt.spawn_on(0, move || {
            r.fetch_add(1, SeqCst);
        });
    }
    busy_rx.recv_timeout(LOOSE).expect("the 30 ms job starts");
    (timers, ran, slept)
}

#[test]
fn dropping_a_runtime_whose_callbacks_rearm_returns_promptly() {
    // Defect: an expiry run took in the buckets that its callbacks' re-arms
    // forwarded out of the wheel, so with more callback time than the time
    // it covered it never ended, and the worker never saw the shutdown.
    for (seed, sleepy) in (1..=6).zip([100, 10].into_iter().cycle()) {
        let rt = Runtime::new(2).unwrap();
        let (timers, _, _) = rearming_load(&rt, seed, sleepy);
        let (tx, rx) = mpsc::channel();
        let dropper = thread::spawn(move || {
            drop(rt);
            tx.send(()).unwrap();
        });
        rx.recv_timeout(LOOSE)
            .unwrap_or_else(|_| panic!("seed {seed}: drop(Runtime) did not return"));
        dropper.join().unwrap();
        drop(timers);
    }
}

#[test]
fn jobs_queued_behind_rearming_callbacks_run() {
    // One worker and two: with one, no other worker shares the load.
    for (seed, sleepy) in (1..=4).zip([100, 10].into_iter().cycle()) {
        let rt = Runtime::new(1 + (seed as usize / 3)).unwrap();
        let (timers, ran, slept) = rearming_load(&rt, seed, sleepy);
        let give_up = Instant::now() + LOOSE;
        while ran.load(SeqCst) < 100 && Instant::now() < give_up {
            thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(ran.load(SeqCst), 100, "seed {seed}: queued jobs ran");
        // A job queued once the callbacks have taken longer than the time
        // they cover (more than a level-0 wheel's 63 ticks of sleeping)
        // runs too: the worker gets back to its jobs between expiry runs.
        while slept.load(SeqCst) < 150 && Instant::now() < give_up {
            thread::sleep(Duration::from_millis(1));
        }
        assert!(slept.load(SeqCst) >= 150, "seed {seed}: the callbacks ran");
        let (tx, rx) = mpsc::channel();
        rt.spawn_on(0, move || tx.send(()).unwrap());
        rx.recv_timeout(LOOSE)
            .unwrap_or_else(|_| panic!("seed {seed}: a job queued behind the callbacks ran"));
        drop(timers);
        rt.shutdown();
    }
}
