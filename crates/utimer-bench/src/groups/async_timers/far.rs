//! The `async` group's lateness at a distance: how late a `sleep` and a
//! `timeout` complete when their deadline is 200 ms or 10 s away, for
//! utimer-async and tokio::time side by side.
//!
//! The 1 ms `lateness` case measures the wake-up path; these measure what
//! a timer's distance does to it. A timer wheel that files a far deadline
//! in a coarse bucket fires it at that bucket's end (tokio's wheel keeps
//! millisecond ticks, whose driver fires at the tick after the deadline);
//! an hrtimer fires at the deadline itself at any distance.
//!
//! Each case starts [`FUTURES`] futures at once, with deadlines `d` from
//! now spread over 10 ms (so they do not all share one instant), and joins
//! them in the library's own executor (`futures`' `block_on` for
//! utimer-async, a current-thread runtime for tokio). Each future records
//! the moment it completed: lateness is completion minus deadline, in µs,
//! p50 / p99 / max over the futures; `CASE/early` counts completions
//! before their deadline (must be 0). The
//! two libraries run at the same time, on two threads, so a case takes
//! `d` of wall time once. The 10 s case runs in full mode only.

use super::GROUP;
use crate::harness::plot::Chart;
use crate::harness::report::Record;
use crate::Runner;
use std::future::{pending, Future};
use std::pin::Pin;
use std::time::{Duration, Instant};

/// Futures per library and distance.
const FUTURES: usize = 64;

/// The cases: distance in ms, and whether quick mode runs it.
const DISTANCES: [(u64, bool); 2] = [(200, true), (10_000, false)];

/// The case of a distance.
fn case(ms: u64) -> String {
    if ms >= 1000 {
        format!("lateness_{}s", ms / 1000)
    } else {
        format!("lateness_{ms}ms")
    }
}

/// Whether a case of this file is wanted.
pub(super) fn wanted(r: &Runner) -> bool {
    DISTANCES
        .iter()
        .any(|&(ms, quick)| (quick || !r.quick) && wants_distance(r, &case(ms)))
}

/// Whether the lateness `case` of a distance or its count of early waits
/// (`case/early`) is wanted.
fn wants_distance(r: &Runner, case: &str) -> bool {
    r.wants(GROUP, case) || r.wants(GROUP, &format!("{case}/early"))
}

/// One future's wait: a sleep, or a timeout around a future that never
/// completes.
#[derive(Clone, Copy)]
enum Kind {
    Sleep,
    Timeout,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::Sleep => "sleep",
            Kind::Timeout => "timeout",
        }
    }
}

/// Lateness in µs (sorted) and early completions of [`FUTURES`] waits
/// `d` away, each made by `wait` and joined by `block_on`.
fn measure<W, F>(
    d: Duration,
    wait: W,
    block_on: impl FnOnce(Pin<Box<dyn Future<Output = Vec<f64>>>>) -> Vec<f64>,
) -> (Vec<f64>, usize)
where
    W: Fn(Instant) -> F,
    F: Future<Output = ()> + 'static,
{
    let start = Instant::now() + d;
    let spread = Duration::from_millis(10) / FUTURES as u32;
    let waits: Vec<_> = (0..FUTURES)
        .map(|i| {
            let at = start + spread * i as u32;
            let w = wait(at);
            async move {
                w.await;
                let now = Instant::now();
                if now < at {
                    -1.0
                } else {
                    (now - at).as_secs_f64() * 1e6
                }
            }
        })
        .collect();
    let mut v = block_on(Box::pin(futures::future::join_all(waits)));
    let early = v.iter().filter(|&&x| x < 0.0).count();
    v.retain(|&x| x >= 0.0);
    v.sort_by(f64::total_cmp);
    (v, early)
}

/// utimer-async's waits.
fn utimer(d: Duration, kind: Kind) -> (Vec<f64>, usize) {
    measure(
        d,
        move |at| {
            let at = utimer_async::Instant::from_std(at);
            async move {
                match kind {
                    Kind::Sleep => utimer_async::sleep_until(at).await,
                    Kind::Timeout => {
                        let _ = utimer_async::timeout_at(at, pending::<()>()).await;
                    }
                }
            }
        },
        futures::executor::block_on,
    )
}

/// tokio::time's waits, in a current-thread runtime.
fn tokio(d: Duration, kind: Kind) -> Result<(Vec<f64>, usize), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| e.to_string())?;
    let _in = rt.enter();
    Ok(measure(
        d,
        move |at| {
            let at = tokio::time::Instant::from_std(at);
            async move {
                match kind {
                    Kind::Sleep => tokio::time::sleep_until(at).await,
                    Kind::Timeout => {
                        let _ = tokio::time::timeout_at(at, pending::<()>()).await;
                    }
                }
            }
        },
        |f| rt.block_on(f),
    ))
}

/// The rows of one library's measurement.
fn rows(
    name: &str,
    mode: &str,
    case: &str,
    m: Result<(Vec<f64>, usize), String>,
    out: &mut Vec<Record>,
    early_out: &mut Vec<Record>,
) {
    let early_case = format!("{case}/early");
    let ops = FUTURES as u64;
    match m {
        Ok((lat, early)) if !lat.is_empty() => {
            let q = |f: f64| lat[((lat.len() - 1) as f64 * f).round() as usize];
            for (label, v) in [("p50", q(0.5)), ("p99", q(0.99)), ("max", q(1.0))] {
                let row = format!("{name} {label}");
                out.push(Record::value(GROUP, case, &row, mode, v, "µs").with_ops(ops));
            }
            let e = Record::value(GROUP, &early_case, name, mode, early as f64, "early");
            early_out.push(e.with_ops(ops));
        }
        Ok(_) => {
            let why = "every wait was early";
            out.push(Record::skipped(GROUP, case, name, mode, why));
        }
        Err(why) => out.push(Record::skipped(GROUP, case, name, mode, &why)),
    }
}

/// Runs the wanted distances, both kinds, both libraries at once.
pub(super) fn run(r: &mut Runner) {
    for (ms, in_quick) in DISTANCES {
        let case = case(ms);
        if (r.quick && !in_quick) || !wants_distance(r, &case) {
            continue;
        }
        let d = Duration::from_millis(ms);
        let mode = r.mode();
        let (mut out, mut early) = (Vec::new(), Vec::new());
        for kind in [Kind::Sleep, Kind::Timeout] {
            let theirs = std::thread::spawn(move || tokio(d, kind));
            let ours = utimer(d, kind);
            let theirs = theirs
                .join()
                .unwrap_or_else(|_| Err("the tokio thread panicked".into()));
            let label = kind.label();
            let ours_name = format!("utimer-async {label}");
            rows(&ours_name, mode, &case, Ok(ours), &mut out, &mut early);
            let theirs_name = format!("tokio {label}");
            rows(&theirs_name, mode, &case, theirs, &mut out, &mut early);
        }
        r.values(GROUP, &case, Chart::Percentiles, out);
        r.values(GROUP, &format!("{case}/early"), Chart::Bars, early);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_libraries_complete_every_wait_never_early() {
        let d = Duration::from_millis(20);
        for kind in [Kind::Sleep, Kind::Timeout] {
            let (lat, early) = utimer(d, kind);
            assert_eq!((lat.len(), early), (FUTURES, 0));
            let (lat, early) = tokio(d, kind).unwrap();
            assert_eq!((lat.len(), early), (FUTURES, 0));
        }
    }

    #[test]
    fn case_names() {
        assert_eq!(case(200), "lateness_200ms");
        assert_eq!(case(10_000), "lateness_10s");
    }
}
