//! Wake-up latency and idleness of the runtime.
//!
//! **Latency**: from a timer's deadline to the start of its callback, on an
//! idle [`utimer::Runtime`], for timeouts from 1 ms to 1 s. The samples of
//! one timeout run concurrently, with deadlines staggered by 0.1 ms (ten
//! per 1 ms tick). Beside utimer, in the same run and with the same
//! deadlines: `tokio::time::sleep_until` in a current-thread runtime (one
//! task per sample) and the kernel's timerfd (one blocked thread per
//! sample). The wheel's bound is printed too: utimer fires at the deadline
//! rounded up to its wheel level's granularity (1 tick below 63 ticks, 8
//! ticks up to 503, 64 up to 4031), plus up to one tick for the clock read,
//! computed for the farthest deadline armed (lead + timeout + stagger).
//!
//! **Idleness**: wake-ups per second of an idle runtime's workers, with no
//! timer, and with one far (1 h) timer per worker. Tickless: both should be
//! 0 once the workers have settled.

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use utimer::Runtime;

use crate::harness::plot::Chart;
use crate::{GroupDoc, Record, Runner};

const GROUP: &str = "latency";

/// The group's section of the results page (`--markdown`).
const DOC: GroupDoc = GroupDoc {
    title: "Wheel timers: wake-up latency and idleness",
    about: "From a wheel timer's deadline to the start of its callback on an idle 2-worker \
         `Runtime`, for timeouts of 1 ms to 1 s (to 100 ms with `--quick`): concurrent samples \
         with deadlines staggered by 0.1 ms, p50 / p99 / max in µs, beside \
         `tokio::time::sleep_until` on a current-thread runtime and a timerfd per sample, with \
         the same deadlines. `utimer wheel bound` is the latest a wheel timer may fire: the \
         deadline rounded up to its level's granularity, plus one tick, for the farthest \
         deadline armed. `idle/*`: wake-ups per second of an idle runtime's workers with no \
         timer, and with one 1-hour timer per worker.",
    look_for: "The non-cascading wheel fires a timer at its level's bucket boundary (at most \
         one granule, about 12.5% of the timeout, late) instead of re-sorting it toward exact \
         expiry: short timeouts wake within a tick or two, long ones later, always within the \
         bound. Deadlines that must be met use hrtimers (`posix-latency`). Idle wake-ups \
         should be 0: the runtime is tickless.",
};

const STAGGER: Duration = Duration::from_micros(100);
/// Samples are armed this long before their stagger starts.
const LEAD: Duration = Duration::from_millis(5);

fn deadlines(start: Instant, timeout: Duration, n: usize) -> Vec<Instant> {
    (0..n)
        .map(|i| start + timeout + STAGGER * i as u32)
        .collect()
}

fn latencies_us(fired: &[Option<Instant>], deadlines: &[Instant]) -> Vec<f64> {
    let mut v: Vec<f64> = fired
        .iter()
        .zip(deadlines)
        .filter_map(|(f, d)| f.map(|f| f.saturating_duration_since(*d).as_secs_f64() * 1e6))
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

fn utimer_run(rt: &Runtime, deadlines: &[Instant]) -> Vec<Option<Instant>> {
    let fired: Arc<Mutex<Vec<Option<Instant>>>> = Arc::new(Mutex::new(vec![None; deadlines.len()]));
    let timers: Vec<_> = deadlines
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let f = fired.clone();
            let t = rt.system().timer(move |_| {
                let now = Instant::now();
                f.lock().unwrap()[i] = Some(now);
            });
            t.modify(*d).expect("arm");
            t
        })
        .collect();
    let last = *deadlines.last().expect("samples");
    while Instant::now() < last + Duration::from_secs(2) {
        if fired.lock().unwrap().iter().all(Option::is_some) {
            break;
        }
        thread::sleep(Duration::from_millis(5));
    }
    drop(timers);
    let v = fired.lock().unwrap().clone();
    v
}

fn tokio_run(deadlines: &[Instant]) -> Vec<Option<Instant>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("tokio");
    rt.block_on(async {
        let tasks: Vec<_> = deadlines
            .iter()
            .map(|d| {
                let d = tokio::time::Instant::from_std(*d);
                tokio::spawn(async move {
                    tokio::time::sleep_until(d).await;
                    Instant::now()
                })
            })
            .collect();
        let mut out = Vec::with_capacity(tasks.len());
        for t in tasks {
            out.push(t.await.ok());
        }
        out
    })
}

fn timerfd_run(deadlines: &[Instant]) -> Vec<Option<Instant>> {
    let handles: Vec<_> = deadlines
        .iter()
        .map(|d| {
            let d = *d;
            thread::spawn(move || crate::peers::timerfd::sleep_until(d).then(Instant::now))
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().ok().flatten())
        .collect()
}

/// The wheel's worst-case lateness for a timer armed `distance` ahead at a
/// 1 ms tick, in µs.
fn wheel_bound_us(distance: Duration) -> f64 {
    let ticks = distance.as_millis() as u64 + 1;
    let lvl = utimer::wheel::level_for_delta(ticks);
    (utimer::wheel::level_granularity(lvl) + 1) as f64 * 1000.0
}

pub(crate) fn run(r: &mut Runner) {
    let timeouts: Vec<u64> = r.pick(vec![1, 10, 100], vec![1, 10, 100, 1000]);
    let samples = r.pick(40usize, 100);
    let cases: Vec<String> = timeouts.iter().map(|ms| format!("{ms}ms")).collect();
    let wants_latency = cases.iter().any(|c| r.wants(GROUP, c));
    let wants_idle =
        r.wants(GROUP, "idle/no_timers") || r.wants(GROUP, "idle/one_far_timer_per_worker");
    if !wants_latency && !wants_idle {
        return;
    }
    r.enter_group(
        GROUP,
        DOC,
        "deadline -> callback start on an idle runtime (2 workers), in µs: p50 / p99 / max\n\
         over concurrent samples staggered by 0.1 ms; and wake-ups per second when idle",
    );
    let rt = Runtime::new(2).expect("runtime");
    thread::sleep(Duration::from_millis(50));
    for (ms, case) in timeouts.iter().zip(&cases) {
        if !r.wants(GROUP, case) {
            continue;
        }
        let timeout = Duration::from_millis(*ms);
        let mut records = Vec::new();
        let mut add = |name: &str, lat: Vec<f64>| {
            if lat.is_empty() {
                records.push(Record::skipped(
                    GROUP,
                    case,
                    name,
                    r.mode(),
                    "no sample fired",
                ));
                return;
            }
            let pick = |q: f64| lat[((lat.len() - 1) as f64 * q).round() as usize];
            for (label, v) in [
                ("p50", pick(0.5)),
                ("p99", pick(0.99)),
                ("max", lat[lat.len() - 1]),
            ] {
                records.push(
                    Record::value(GROUP, case, &format!("{name} {label}"), r.mode(), v, "µs")
                        .with_ops(lat.len() as u64),
                );
            }
        };
        let d = deadlines(Instant::now() + LEAD, timeout, samples);
        add("utimer", latencies_us(&utimer_run(&rt, &d), &d));
        let d = deadlines(Instant::now() + LEAD, timeout, samples);
        add("tokio sleep", latencies_us(&tokio_run(&d), &d));
        let d = deadlines(Instant::now() + LEAD, timeout, samples);
        add("timerfd", latencies_us(&timerfd_run(&d), &d));
        let farthest = LEAD + timeout + STAGGER * (samples as u32 - 1);
        records.push(Record::value(
            GROUP,
            case,
            "utimer wheel bound (granule + tick)",
            r.mode(),
            wheel_bound_us(farthest),
            "µs",
        ));
        r.values(GROUP, case, Chart::Percentiles, records);
    }
    let window = r.pick(Duration::from_millis(500), Duration::from_secs(1));
    for (case, far) in [
        ("idle/no_timers", false),
        ("idle/one_far_timer_per_worker", true),
    ] {
        if !r.wants(GROUP, case) {
            continue;
        }
        let rt = Runtime::new(2).expect("runtime");
        let timers: Vec<_> = (0..2)
            .filter(|_| far)
            .map(|w| {
                let t = rt.system().timer(|_| {});
                t.add_on(w, Duration::from_secs(3600)).expect("arm");
                t
            })
            .collect();
        thread::sleep(Duration::from_millis(100));
        let before: u64 = (0..2).map(|w| rt.wakeups(w)).sum();
        thread::sleep(window);
        let after: u64 = (0..2).map(|w| rt.wakeups(w)).sum();
        let per_sec = (after - before) as f64 / window.as_secs_f64();
        drop(timers);
        r.values(
            GROUP,
            case,
            Chart::Bars,
            vec![Record::value(
                GROUP,
                case,
                "utimer Runtime",
                r.mode(),
                per_sec,
                "wakeups/s",
            )],
        );
    }
}
