//! The kernel's hierarchical pull model (Anna-Maria Behnsen, 2022; Linux
//! 6.9), measured: timers always queued locally, idle workers' timers
//! expired by a busy one.
//!
//! Three tables:
//!
//! * **enqueue+dequeue**: the patch series' micro-benchmark. A timer is
//!   armed and cancelled in a loop on an idle worker while a quarter of the
//!   other workers are busy. Before the pull model, the kernel chose at
//!   enqueue a busy CPU to queue on (`get_nohz_timer_target()`, kept here as
//!   the hidden `TimerSystem::push_target`); after, it always queues
//!   locally. The series reported 145 ns -> 109 ns (-25%).
//! * **idle wake-ups**: a `Runtime` of N workers (at most 8 on a 2-core
//!   machine) with worker 0 busy (a chain of 200 us jobs) and movable
//!   timers armed onto the idle workers' bases every few milliseconds, due
//!   5-20 ms later. Idle wake-ups per second (the idle workers get no jobs,
//!   so each wake-up is for a timer) and lateness past each timer's bucket
//!   expiry, for the pull model, no migration (`Builder::pull_model(false)`:
//!   each idle worker wakes for its own), and the push heuristic (armed on
//!   the busy worker at enqueue).
//! * **stall**: worker 0 stuck in a 100 ms job with movable timers of its
//!   own due during it: lateness past the bucket expiry with the pull model
//!   (the stall monitor has them pulled) and without.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use utimer::{Clock, Expiry, Runtime, TimerSystem};

use crate::harness::plot::Chart;
use crate::{time, Contender, GroupDoc, Record, Runner, Schedule};

const GROUP: &str = "pull_model";

/// The group's section of the results page (`--markdown`).
const DOC: GroupDoc = GroupDoc {
    title: "The hierarchical pull model",
    about: "The kernel's pull model (Linux 6.9): timers always queued on the local CPU, idle \
         CPUs' movable timers expired by a busy one through a hierarchy of groups. \
         `enqueue_dequeue_N_workers`: the series' micro-benchmark, arm + cancel on an idle \
         worker while a quarter of the other workers are busy, for the old push heuristic \
         (queue on a busy worker: the kernel's `get_nohz_timer_target()`, kept as the hidden \
         `TimerSystem::push_target`) against always-local. `idle_*`: a `Runtime` with worker 0 \
         busy (a chain of 200 µs jobs) and movable timers armed onto the idle workers every 4 \
         ms, due 5-20 ms later: idle workers' wake-ups per second and lateness past each \
         timer's bucket (ticks), for the pull model, no migration \
         (`Builder::pull_model(false)`) and the push heuristic. `stall_*`: worker 0 stuck in a \
         100 ms job with its own movable timers due during it, lateness with the stall monitor \
         and without.",
    look_for: "Always-local should be cheaper than the push heuristic (the series reported \
         145 ns before and 109 ns after, -25%): the heuristic queues the timer on a busy \
         worker's base, whose lock and cache line that worker is using. The pull model should \
         leave idle workers asleep (without migration each wakes for its own timers) and keep \
         lateness within a tick plus the wheel's granularity; a stalled worker's timers should \
         be pulled within a couple of ticks instead of waiting for the stall to end. The \
         targets are in the note; `utimer sim` checks the hierarchy itself on up to 1,024 \
         virtual workers.",
};

/// The busy workers' own timer traffic: a thread that arms and cancels a
/// timer on each busy worker's base in turn, about once a microsecond each,
/// as the busy CPUs of the patch series' machine ran their own timers (a push
/// target's base is a base in use). Stopped and joined on drop.
struct BusyTraffic {
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

impl BusyTraffic {
    fn start(sys: &Arc<TimerSystem>, busy: Vec<usize>) -> BusyTraffic {
        let stop = Arc::new(AtomicBool::new(false));
        let (s, sys) = (stop.clone(), sys.clone());
        let thread = thread::spawn(move || {
            let timers: Vec<_> = busy
                .iter()
                .map(|&w| {
                    let _on = sys.enter(w).expect("worker");
                    (w, sys.timer(|_| {}))
                })
                .collect();
            let mut k = 0u64;
            while !s.load(SeqCst) {
                for (w, t) in &timers {
                    let _on = sys.enter(*w).expect("worker");
                    k += 1;
                    let _ = t.modify(Expiry::Tick(sys.now() + 500 + k % 64));
                    t.delete();
                    // About one arm+cancel per microsecond per busy worker.
                    let until = Instant::now() + Duration::from_micros(1);
                    while Instant::now() < until {
                        std::hint::spin_loop();
                    }
                }
            }
        });
        BusyTraffic {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for BusyTraffic {
    fn drop(&mut self) {
        self.stop.store(true, SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn enqueue_dequeue(r: &mut Runner, workers: usize) {
    let case = format!("enqueue_dequeue_{workers}_workers");
    if !r.wants(GROUP, &case) {
        return;
    }
    // A quarter of the others busy: workers 2, 6, 10, ... (not ours),
    // members of the hierarchy, with their own timer traffic.
    let system = move || {
        let sys = Arc::new(
            TimerSystem::builder()
                .workers(workers)
                .clock(Clock::manual())
                .build_without_threads(),
        );
        let busy: Vec<usize> = (1..workers).filter(|w| w % 4 == 2).collect();
        for &w in &busy {
            sys.bench_activate(w);
        }
        let traffic = BusyTraffic::start(&sys, busy);
        (sys, traffic)
    };
    // One system and one traffic thread for both rows, interleaved.
    // Bars, and a line per row against the worker count.
    r.case(GROUP, &case, Chart::Scaling, Schedule::Interleaved, || {
        let (sys, traffic) = system();
        let shared = Arc::new((sys, traffic));
        let row = |push: bool| {
            let shared = shared.clone();
            move || {
                Ok(move |n: u64| {
                    let sys = &shared.0;
                    let _me = sys.enter(0).expect("worker 0");
                    let t = sys.timer(|_| {});
                    let at = sys.now() + 1_000;
                    time(|| {
                        for _ in 0..n {
                            if push {
                                let target = sys.push_target();
                                t.add_on(black_box(target), Expiry::Tick(black_box(at)))
                                    .expect("add_on");
                            } else {
                                t.add(Expiry::Tick(black_box(at))).expect("add");
                            }
                            black_box(t.delete());
                        }
                    })
                })
            }
        };
        vec![
            Contender::batched("utimer: always local (pull model)", row(false)),
            Contender::batched("push heuristic (before the pull model)", row(true)),
        ]
    });
}

/// Keeps worker `w` busy with 200 us jobs, each queueing the next, until
/// `stop`.
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

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum Mode {
    Pull,
    NoMigration,
    Push,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Pull => "utimer: pull model",
            Mode::NoMigration => "no migration (each wakes for its own)",
            Mode::Push => "push heuristic at enqueue",
        }
    }
}

/// Arms a movable timer due at `tick` that reports, when it fires, how many
/// ticks past its bucket's expiry it ran (fractional, from the monotonic
/// clock).
fn late_timer(
    sys: &TimerSystem,
    tx: &mpsc::Sender<f64>,
    arm: impl FnOnce(&utimer::Timer),
) -> utimer::Timer {
    let bucket = Arc::new(std::sync::OnceLock::<Instant>::new());
    let (b, tx, tick) = (bucket.clone(), tx.clone(), sys.tick());
    let t = sys.timer(move |_| {
        let now = Instant::now();
        if let Some(at) = b.get() {
            let late = now.saturating_duration_since(*at);
            let _ = tx.send(late.as_secs_f64() / tick.as_secs_f64());
        }
    });
    arm(&t);
    if let Some(at) = t.fires_at().and_then(|b| sys.instant_of(b)) {
        let _ = bucket.set(at);
    }
    t
}

/// Median and maximum.
fn spread(mut v: Vec<f64>) -> (f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    v.sort_by(f64::total_cmp);
    (v[v.len() / 2], v[v.len() - 1])
}

/// One idle run: idle workers' wake-ups per second and each timer's
/// lateness in ticks.
fn idle_run(workers: usize, mode: Mode, run_for: Duration) -> (f64, Vec<f64>) {
    let rt = Arc::new(
        Runtime::with_builder(
            TimerSystem::builder()
                .workers(workers)
                .pull_model(mode != Mode::NoMigration),
        )
        .expect("runtime"),
    );
    let stop = Arc::new(AtomicBool::new(false));
    keep_busy(&rt, 0, &stop);
    thread::sleep(Duration::from_millis(30)); // the others go idle
    let sys = rt.system_arc();
    let (tx, rx) = mpsc::channel();
    let mut timers = Vec::new();
    let mut rng = crate::XorShift::new(4);
    let before: u64 = (1..workers).map(|w| rt.wakeups(w)).sum();
    let started = Instant::now();
    while started.elapsed() < run_for {
        for w in 1..workers {
            let _on = sys.enter(w).expect("worker");
            let due = sys.deadline(Duration::from_millis(5 + rng.below(16)));
            timers.push(late_timer(&sys, &tx, |t| match mode {
                Mode::Push => t.add_on(sys.push_target(), Expiry::Tick(due)).expect("arm"),
                _ => t.modify(Expiry::Tick(due)).map(drop).expect("arm"),
            }));
        }
        thread::sleep(Duration::from_millis(4));
    }
    let elapsed = started.elapsed();
    let woke = (1..workers).map(|w| rt.wakeups(w)).sum::<u64>() - before;
    thread::sleep(Duration::from_millis(40)); // the last ones fire
    stop.store(true, SeqCst);
    drop(tx);
    let late = rx.try_iter().collect();
    drop(timers);
    (woke as f64 / elapsed.as_secs_f64(), late)
}

/// Worker 0 stuck in a 100 ms job with its own movable timers due at 10,
/// 20, ..., 90 ms: their lateness in ticks.
fn stall_run(pull: bool) -> Vec<f64> {
    let rt =
        Runtime::with_builder(TimerSystem::builder().workers(2).pull_model(pull)).expect("runtime");
    let sys = rt.system_arc();
    let (tx, rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel();
    rt.spawn_on(0, move || {
        let timers: Vec<_> = (1..10)
            .map(|i| {
                let due = sys.deadline(Duration::from_millis(10 * i));
                late_timer(&sys, &tx, |t| {
                    t.modify(Expiry::Tick(due)).expect("arm");
                })
            })
            .collect();
        thread::sleep(Duration::from_millis(100)); // stuck: no tick point
        let _ = done_tx.send(timers);
    });
    let timers = done_rx.recv().expect("job ran");
    thread::sleep(Duration::from_millis(20));
    drop(timers);
    rx.try_iter().collect()
}

fn idle_tables(r: &mut Runner, workers: usize) {
    let cases = [
        format!("idle_wakeups_{workers}_workers"),
        format!("idle_late_median_{workers}_workers"),
        format!("idle_late_max_{workers}_workers"),
    ];
    if !cases.iter().any(|c| r.wants(GROUP, c)) {
        return;
    }
    let run_for = Duration::from_millis(r.pick(400, 2_000));
    let mut rows = [Vec::new(), Vec::new(), Vec::new()];
    for mode in [Mode::Pull, Mode::NoMigration, Mode::Push] {
        let (wakeups, late) = idle_run(workers, mode, run_for);
        let n = late.len() as u64;
        let (median, max) = spread(late);
        for (row, (v, unit)) in
            rows.iter_mut()
                .zip([(wakeups, "wakeups/s"), (median, "ticks"), (max, "ticks")])
        {
            row.push(Record::value(GROUP, "", mode.name(), r.mode(), v, unit).with_ops(n));
        }
    }
    for (case, mut row) in cases.iter().zip(rows) {
        for rec in &mut row {
            rec.case = case.clone();
        }
        r.values(GROUP, case, Chart::Bars, row);
    }
}

fn stall_tables(r: &mut Runner) {
    let cases = ["stall_late_median", "stall_late_max"];
    if !cases.iter().any(|c| r.wants(GROUP, c)) {
        return;
    }
    let mut rows = [Vec::new(), Vec::new()];
    for pull in [true, false] {
        let name = if pull {
            "utimer: pull model + stall monitor"
        } else {
            "no migration (wait for the worker)"
        };
        let late = stall_run(pull);
        let n = late.len() as u64;
        let (median, max) = spread(late);
        rows[0].push(Record::value(GROUP, cases[0], name, r.mode(), median, "ticks").with_ops(n));
        rows[1].push(Record::value(GROUP, cases[1], name, r.mode(), max, "ticks").with_ops(n));
    }
    for (case, row) in cases.iter().zip(rows) {
        r.values(GROUP, case, Chart::Bars, row);
    }
}

pub(crate) fn run(r: &mut Runner) {
    let cpus = thread::available_parallelism().map_or(1, |n| n.get());
    // Multi-worker runtimes: up to 8 threads on a small machine.
    let rt_workers = if cpus < 16 { 8 } else { 16 };
    let sizes = [8usize, 64];
    let mut cases: Vec<String> = sizes
        .iter()
        .map(|w| format!("enqueue_dequeue_{w}_workers"))
        .collect();
    for c in ["idle_wakeups", "idle_late_median", "idle_late_max"] {
        cases.push(format!("{c}_{rt_workers}_workers"));
    }
    cases.extend(["stall_late_median".into(), "stall_late_max".into()]);
    if !cases.iter().any(|c| r.wants(GROUP, c)) {
        return;
    }
    r.enter_group(
        GROUP,
        DOC,
        "the kernel's hierarchical pull model (2022). enqueue_dequeue: arm+cancel on an idle\n\
         worker, a quarter of the others busy, ns/op (Linux: push 145 ns -> always local\n\
         109 ns, -25%).\n\
         idle_*: a Runtime, worker 0 busy, movable timers armed onto the idle workers every\n\
         4 ms, due 5-20 ms later: idle workers' wake-ups/s, lateness past the bucket (ticks).\n\
         stall_*: worker 0 stuck in a 100 ms job, its movable timers due at 10..90 ms",
    );
    for w in sizes {
        enqueue_dequeue(r, w);
    }
    idle_tables(r, rt_workers);
    stall_tables(r);
    r.note(
        GROUP,
        &format!(
            "runtimes of {rt_workers} worker threads on {cpus} CPUs; targets: always-local >= 25% \
             cheaper than push, pull >= 90% fewer idle wake-ups than no migration, lateness \
             within 1 tick + granularity, stalled timers within 2 ticks"
        ),
    );
}
