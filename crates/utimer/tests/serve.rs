//! A sleeping thread that serves the hrtimers (`TimerSystem::serve`): it
//! fires them on time while it sleeps, the workers sleep past them, and
//! when it stops the workers take them back with no timer lost or late
//! beyond a loaded machine's wake-up.
#![cfg(not(miri))] // threads and timerfds

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use utimer::{ClockId, HrRestart, Ktime, Runtime, Server, TimerSystem, Woke};

/// `n` ns of an hrtimer's clock.
fn ns(n: u64) -> Ktime {
    Ktime::from_nanos(n)
}

const PERIOD: Duration = Duration::from_millis(1);

struct Fires {
    count: AtomicU64,
    /// (expiry, fired at) of each fire, ns of CLOCK_MONOTONIC.
    times: Mutex<Vec<(u64, u64)>>,
    /// The thread that ran each fire.
    threads: Mutex<Vec<std::thread::ThreadId>>,
}

fn runtime() -> Runtime {
    TimerSystem::builder()
        .workers(2)
        .sleepers_serve(true)
        .start()
        .expect("runtime")
}

fn periodic(rt: &Runtime, fires: &Arc<Fires>) -> utimer::HrTimer {
    let f = fires.clone();
    let t = rt
        .system()
        .hrtimer_on(0, ClockId::Monotonic, move |fire| {
            f.count.fetch_add(1, SeqCst);
            f.times
                .lock()
                .unwrap()
                .push((fire.expires().as_nanos(), fire.now().as_nanos()));
            f.threads.lock().unwrap().push(std::thread::current().id());
            fire.forward(PERIOD);
            HrRestart::Restart
        })
        .unwrap();
    t.start(t.now() + PERIOD).unwrap();
    t
}

fn new_fires() -> Arc<Fires> {
    Arc::new(Fires {
        count: AtomicU64::new(0),
        times: Mutex::new(Vec::new()),
        threads: Mutex::new(Vec::new()),
    })
}

/// Serves until `deadline` ns of the monotonic clock.
fn serve_until(sys: &TimerSystem, server: &Arc<Server>, deadline: u64) -> usize {
    let serving = sys.serve(server).expect("no other thread serves");
    let mut ran = 0;
    loop {
        match serving.wait(ns(deadline), &|| false) {
            Woke::Due => ran += serving.run_expired(),
            Woke::Deadline => return ran,
            Woke::Interrupted => panic!("no signal was sent"),
        }
    }
}

fn mono(sys: &TimerSystem) -> u64 {
    sys.clock_ns(ClockId::Monotonic).as_nanos()
}

#[test]
fn a_sleeping_thread_fires_the_timers_on_time_and_the_workers_sleep() {
    let rt = runtime();
    let sys = rt.system();
    let fires = new_fires();
    let t = periodic(&rt, &fires);
    let server = Arc::new(Server::new().unwrap());
    // Let the worker park first, then serve for 200 ms.
    std::thread::sleep(Duration::from_millis(20));
    let woke_before = rt.wakeups(0);
    let start = mono(sys);
    let ran = serve_until(sys, &server, start + 200_000_000);
    let woke = rt.wakeups(0) - woke_before;
    t.cancel().unwrap();
    // Most of the 200 expiries fired here (the worker may fire one when it
    // wakes to look, below).
    assert!(
        ran >= 150,
        "the server fired {ran} times in 200 ms of a 1 ms period"
    );
    let me = std::thread::current().id();
    let served = fires
        .threads
        .lock()
        .unwrap()
        .iter()
        .filter(|&&id| id == me)
        .count();
    assert!(
        served as u64 + 5 >= ran as u64,
        "{served} of {ran} on this thread"
    );
    // The worker slept past the hrtimers it left to the server: it wakes
    // about once per grace to look (40 times in 200 ms), not once per
    // period (200).
    let most = 100;
    assert!(
        woke < most,
        "worker 0 woke {woke} times while a thread served (at most {most})"
    );
    for &(expiry, at) in fires.times.lock().unwrap().iter() {
        assert!(at >= expiry, "fired {} ns early", expiry - at);
    }
}

#[test]
fn the_workers_take_the_timers_back_when_it_stops() {
    let rt = runtime();
    let sys = rt.system();
    let fires = new_fires();
    let t = periodic(&rt, &fires);
    let server = Arc::new(Server::new().unwrap());
    for _ in 0..5 {
        serve_until(sys, &server, mono(sys) + 30_000_000);
        // Awake, not serving, for 60 ms: the worker fires them.
        let before = fires.count.load(SeqCst);
        let until = Instant::now() + Duration::from_millis(60);
        while Instant::now() < until {
            std::hint::spin_loop();
        }
        let during = fires.count.load(SeqCst) - before;
        assert!(
            during >= 10,
            "{during} fires in 60 ms of a 2 ms period after serving"
        );
    }
    t.cancel().unwrap();
    // Never early, and the largest gap between fires stays far below the
    // 60 ms a timer left with nobody would wait.
    let times = fires.times.lock().unwrap();
    let mut worst = 0;
    for w in times.windows(2) {
        assert!(w[1].1 >= w[1].0, "fired early");
        worst = worst.max(w[1].1 - w[0].1);
    }
    assert!(
        worst < 40_000_000,
        "a fire came {} ms after the one before",
        worst / 1_000_000
    );
}

#[test]
fn one_server_at_a_time_and_none_without_the_setting() {
    let rt = runtime();
    let sys = rt.system();
    let a = Arc::new(Server::new().unwrap());
    let b = Arc::new(Server::new().unwrap());
    let held = sys.serve(&a).expect("first claim");
    std::thread::scope(|s| {
        s.spawn(|| assert!(sys.serve(&b).is_none(), "a second server"));
    });
    drop(held);
    std::thread::scope(|s| {
        s.spawn(|| assert!(sys.serve(&b).is_some(), "the role came back"));
    });
    let plain = Runtime::new(1).unwrap();
    assert!(
        plain.system().serve(&a).is_none(),
        "served without the setting"
    );
    let bare = TimerSystem::builder()
        .workers(1)
        .sleepers_serve(true)
        .build_without_threads();
    assert!(bare.serve(&a).is_none(), "served with no runtime");
}

#[test]
fn an_earlier_timer_armed_by_another_thread_wakes_the_server() {
    let rt = runtime();
    let sys = rt.system();
    let fired_at = Arc::new(AtomicU64::new(0));
    let f = fired_at.clone();
    let t = sys
        .hrtimer_on(1, ClockId::Monotonic, move |fire| {
            f.store(fire.now().as_nanos(), SeqCst);
            HrRestart::NoRestart
        })
        .unwrap();
    let server = Arc::new(Server::new().unwrap());
    let start = mono(sys);
    std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(20));
            t.start(t.now() + Duration::from_millis(5)).unwrap();
        });
        // Serves for 2 s unless the timer fires: it sleeps for 2 s with
        // no timer queued, so only the start's kick can wake it in time.
        let serving = sys.serve(&server).unwrap();
        let deadline = start + 2_000_000_000;
        while fired_at.load(SeqCst) == 0 {
            match serving.wait(ns(deadline), &|| false) {
                Woke::Due => {
                    serving.run_expired();
                }
                Woke::Deadline => break,
                Woke::Interrupted => unreachable!(),
            }
        }
    });
    let at = fired_at.load(SeqCst);
    assert!(at != 0, "the timer never fired");
    assert!(
        at - start < 1_000_000_000,
        "fired {} ms after the start: the server slept past it",
        (at - start) / 1_000_000
    );
}

/// A thread that holds the role but stops serving (a handler of the
/// program's that blocks, in the drop-in) delays the timers by the grace
/// at most: the workers then fire them.
#[test]
fn a_server_that_stops_looking_is_replaced_after_the_grace() {
    let rt = runtime();
    let sys = rt.system();
    let fires = new_fires();
    let t = periodic(&rt, &fires);
    let server = Arc::new(Server::new().unwrap());
    let serving = sys.serve(&server).unwrap();
    // Serve a little, then hold the role without looking for 100 ms.
    let deadline = mono(sys) + 20_000_000;
    while serving.wait(ns(deadline), &|| false) == Woke::Due {
        serving.run_expired();
    }
    let before = fires.count.load(SeqCst);
    std::thread::sleep(Duration::from_millis(100));
    let during = fires.count.load(SeqCst) - before;
    drop(serving);
    t.cancel().unwrap();
    assert!(
        during >= 50,
        "{during} fires in 100 ms of a 1 ms period with the server stuck"
    );
    let grace = utimer::SERVE_GRACE.as_nanos() as u64;
    let times = fires.times.lock().unwrap();
    let worst = times.iter().map(|&(e, at)| at - e).max().unwrap();
    assert!(
        worst < grace + 40_000_000,
        "a fire came {} ms late with a {} ms grace",
        worst / 1_000_000,
        grace / 1_000_000
    );
}
