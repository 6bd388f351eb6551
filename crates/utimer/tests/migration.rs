//! The pull model on a real `Runtime`: idle workers' movable
//! timers fire on a busy worker without waking them, a stalled worker's
//! movable timers fire while it is stuck, pinned timers still wake their
//! worker, and bad topology overrides are refused.

use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};
use utimer::{Expiry, Runtime, TimerError, TimerFlags, TimerSystem, Topology};

/// Generous: a loaded CI machine may be slow, but never this slow.
const LOOSE: Duration = Duration::from_secs(10);

/// Keeps worker `w` busy with 200 µs jobs, each queueing the next before it
/// ends (so the worker never idles, and reaches a tick point between two),
/// until `stop` is set.
fn keep_busy(rt: &Arc<Runtime>, w: usize, stop: &Arc<AtomicBool>) {
    let (rt2, stop) = (rt.clone(), stop.clone());
    rt.spawn_on(w, move || {
        let until = Instant::now() + Duration::from_micros(200);
        while Instant::now() < until {
            std::hint::spin_loop();
        }
        if !stop.load(SeqCst) {
            keep_busy(&rt2, w, &stop);
        }
    });
}

fn thread_name() -> String {
    thread::current().name().unwrap_or("?").to_string()
}

#[test]
fn an_idle_workers_movable_timer_fires_on_the_busy_worker() {
    let rt = Arc::new(Runtime::new(2).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    keep_busy(&rt, 0, &stop);
    thread::sleep(Duration::from_millis(50)); // worker 1 idles, worker 0 spins
    let sys = rt.system();
    let (tx, rx) = mpsc::channel();
    let timer = sys.timer(move |_| tx.send((Instant::now(), thread_name())).unwrap());
    let before = rt.wakeups(1);
    let armed = Instant::now();
    {
        let _on = sys.enter(1).unwrap(); // armed onto idle worker 1's base
        timer.modify(Duration::from_millis(30)).unwrap();
    }
    let (at, by) = rx.recv_timeout(LOOSE).expect("the timer fired");
    assert!(at >= armed + Duration::from_millis(30), "never early");
    // By the busy worker; or, if a loaded machine kept worker 0 off the CPU
    // past the stall bound, by the stall monitor on its behalf.
    assert!(
        by == "utimer-worker-0" || by == "utimer-monitor",
        "expired remotely, not by the idle worker: {by}"
    );
    assert_eq!(rt.wakeups(1), before, "the idle worker slept through it");
    assert!(sys.metrics().migration_stats(1).unwrap().pulled_from >= 1);
    stop.store(true, SeqCst);
    sys.metrics().check_hierarchy().ok(); // may be mid-walk: only must not panic
}

#[test]
fn a_pinned_timer_still_wakes_its_idle_worker() {
    let rt = Arc::new(Runtime::new(2).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    keep_busy(&rt, 0, &stop);
    thread::sleep(Duration::from_millis(50));
    let sys = rt.system();
    let (tx, rx) = mpsc::channel();
    let timer = sys.timer_with_flags(TimerFlags::PINNED, move |_| tx.send(thread_name()).unwrap());
    let before = rt.wakeups(1);
    timer
        .add_on(1, Expiry::Tick(sys.deadline(Duration::from_millis(20))))
        .unwrap();
    let by = rx.recv_timeout(LOOSE).expect("the pinned timer fired");
    assert_eq!(by, "utimer-worker-1", "pinned: only its worker runs it");
    assert!(rt.wakeups(1) > before);
    stop.store(true, SeqCst);
}

#[test]
fn a_stalled_workers_movable_timers_fire_while_it_is_stuck() {
    let rt = Runtime::new(2).unwrap();
    let (tx, rx) = mpsc::channel();
    let sys = rt.system_arc();
    let job_done = Arc::new(AtomicBool::new(false));
    let done = job_done.clone();
    let fired = Arc::new(AtomicBool::new(false));
    let f = fired.clone();
    rt.spawn_on(0, move || {
        // Armed from worker 0's own thread: its global base. The callback
        // records whether the job was still stuck when it ran.
        let stuck_job = done.clone();
        let timer = sys.timer(move |_| {
            let still_stuck = !stuck_job.load(SeqCst);
            f.store(true, SeqCst);
            tx.send((still_stuck, thread_name())).unwrap();
        });
        timer.modify(Duration::from_millis(20)).unwrap();
        // Stuck, with no tick point, until the timer has fired elsewhere
        // (bounded: a loaded machine may take a while to run the monitor).
        let stuck = Instant::now();
        while !fired.load(SeqCst) && stuck.elapsed() < LOOSE {
            thread::sleep(Duration::from_millis(5));
        }
        done.store(true, SeqCst);
        drop(timer);
    });
    let (still_stuck, by) = rx.recv_timeout(LOOSE).expect("the timer fired");
    assert!(
        still_stuck,
        "fired only after its worker's job ended ({by})"
    );
    assert_ne!(by, "utimer-worker-0");
    let stats = rt.system().metrics().migration_stats(0).unwrap();
    assert!(stats.stalls >= 1 && stats.pulled_from >= 1, "{stats:?}");
}

#[test]
fn the_last_idle_worker_wakes_for_the_first_movable_timer() {
    let rt = Runtime::new(3).unwrap();
    thread::sleep(Duration::from_millis(50)); // everybody idle
    let sys = rt.system();
    let (tx, rx) = mpsc::channel();
    let mut timers = Vec::new();
    for w in 0..3 {
        let _on = sys.enter(w).unwrap();
        let tx = tx.clone();
        let t = sys.timer(move |_| tx.send(Instant::now()).unwrap());
        t.modify(Duration::from_millis(20 + 10 * w as u64)).unwrap();
        timers.push((
            t,
            Instant::now() + Duration::from_millis(20 + 10 * w as u64),
        ));
    }
    for _ in 0..3 {
        rx.recv_timeout(LOOSE)
            .expect("every movable timer fires with everybody idle");
    }
    let woke: u64 = (0..3).map(|w| rt.wakeups(w)).sum();
    assert!(woke >= 1);
}

#[test]
fn the_hierarchy_follows_the_topology() {
    let sys = TimerSystem::builder()
        .workers(20)
        .topology(Topology::from_nodes([vec![0; 16], vec![1; 4]].concat()))
        .build_without_threads();
    assert_eq!(sys.metrics().hierarchy_levels(), 3);
    let groups = sys.metrics().hierarchy();
    for g in groups.iter().filter(|g| g.level == 0) {
        assert!(g.children.len() <= 8);
        assert!(g.node.is_some());
    }
    assert_eq!(groups.iter().filter(|g| g.parent.is_none()).count(), 1);
    sys.metrics().check_hierarchy().unwrap();
}

#[test]
fn a_topology_that_does_not_fit_is_refused() {
    let e = TimerSystem::builder()
        .workers(4)
        .topology(Topology::uniform(3, 1))
        .try_build_without_threads()
        .unwrap_err();
    assert_eq!(e, TimerError::BadTopology { described: 3 });
    assert!(e.to_string().contains("3 workers"));
    let e = Runtime::with_builder(
        TimerSystem::builder()
            .workers(2)
            .topology(Topology::flat(5)),
    )
    .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
}

#[test]
fn pinned_workers_run_on_their_cpus_node() {
    let rt = Runtime::with_builder(TimerSystem::builder().workers(2).pin_workers(vec![0])).unwrap();
    let (tx, rx) = mpsc::channel();
    rt.spawn_on(1, move || {
        let cpu = current_cpu();
        tx.send(cpu).unwrap();
    });
    let cpu = rx.recv_timeout(LOOSE).unwrap();
    assert_eq!(cpu, Some(0), "worker 1 pinned to CPU 0 (the list wraps)");
}

/// The CPU this thread runs on, from /proc.
fn current_cpu() -> Option<u32> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    after.split(' ').nth(36)?.parse().ok()
}
