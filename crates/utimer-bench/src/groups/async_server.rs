//! The `async-server` group: two server workloads on a multi-thread tokio
//! runtime, each run in the same process with `tokio::time` and with
//! `utimer_async` as its timer library, and once with no timer calls at
//! all, so the tables show what the timers cost inside a real workload and
//! what share of it they are.
//!
//! The workloads are generic over [`Timers`]: the three variants run the
//! same code, and only the timer calls (a request timeout, an idle timer
//! moved as a connection reads, a timeout around a receive) differ.
//!
//! 1. **HTTP** ([`http`]): a hyper HTTP/1.1 server on 127.0.0.1 in a
//!    runtime of T workers (2, and the CPU count when it is larger), loaded
//!    by an in-process hyper client on a runtime of its own (T workers,
//!    16 keep-alive connections per server worker, each issuing requests
//!    one after the other). Per request the server arms and cancels a 5 s
//!    request timeout around its handler, which awaits once (as one
//!    waiting on a cache or a database would: a handler ready at once
//!    queues no timer in either library), and moves its connection's 60 s
//!    idle timer (a read-inactivity deadline on the socket, moved when a
//!    read waits after data arrived: Go's read deadlines, tokio-io-timeout's
//!    `TimeoutReader`). Requests per second, and p50 / p99 of the latency
//!    the client measures per request (send to body received).
//! 2. **Tasks** ([`tasks`]): 100K tasks, each looping on a timeout of
//!    5-15 s (fixed per task) around the receive of its own bounded mpsc
//!    channel, fed round-robin by one driver task per worker. A receive
//!    that finds its channel empty arms the timeout's timer, which the
//!    message's arrival cancels: operations (receives) per second, the
//!    share of them that waited (armed a timer), and the timeouts that
//!    fired (should be 0).
//!
//! A sample builds the workload, lets it run for a warm-up, counts over a
//! fixed wall time, then tears it down. The three variants alternate
//! sample by sample (the one to go first rotates), in the same runtimes;
//! each table shows the median over the repetitions. The ratios
//! utimer-async / tokio and each library's timer share (1 - its throughput
//! / the no-timers throughput, the share of the per-request cost that its
//! timer calls add) are medians of per-repetition values: the samples of a
//! repetition run back to back, so machine noise hits them alike.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use futures_util::FutureExt;

use crate::harness::plot::Chart;
use crate::{Better, GroupDoc, Record, Runner};

mod http;
mod tasks;

const GROUP: &str = "async-server";

/// The group's section of the results page (`--markdown`).
const DOC: GroupDoc = GroupDoc {
    title: "Async timers inside server workloads",
    about: "Two workloads on a multi-thread tokio runtime of T workers (2, and the CPU count \
         when it is larger), each run with `tokio::time`, with `utimer_async` and with no \
         timer calls at all: the same code but for the timer calls. `http_T_threads`: a hyper \
         HTTP/1.1 server on 127.0.0.1, loaded by an in-process hyper client (its own runtime \
         of T workers, 16 keep-alive connections per server worker, requests issued one after \
         the other per connection); per request the server arms and cancels a 5 s request \
         timeout around a handler that awaits once, and moves its connection's 60 s idle \
         timer (a read-inactivity deadline on the socket, moved when a read waits after data \
         arrived). Thousand requests per second, and `/latency`: p50 and p99 in µs of the \
         per-request latency the client measures. `tasks_100K_T_threads`: 100K tasks, each \
         looping on a 5-15 s timeout around the receive of its own mpsc channel, fed \
         round-robin by one driver task per worker; million receives per second, and \
         `/waited`: the % of receives that found the channel empty and so armed (and then \
         cancelled) the timeout's timer. Samples alternate between the variants; medians \
         over the repetitions. The ratio column compares throughput in the throughput \
         tables: higher is faster. `utimer_over_tokio`: medians of the per-repetition \
         ratios utimer-async / tokio (throughput: higher is better; p99: lower is better). \
         `timer_share`: medians of 1 - throughput with the library / throughput without \
         timers, in %: the share of the cost per operation that the timer calls add. \
         `timeouts_fired`: request timeouts (HTTP 503s) and receive timeouts that fired over \
         all samples, which should be 0. `timer_moves_per_request`: idle-timer moves per \
         HTTP request.",
    look_for: "How far each library's throughput falls below the no-timers row: that gap is \
         where the timer shows up, and the rest of the cost (sockets, HTTP parsing, task \
         switches, channels) is where it does not. On a machine with few CPUs the client, \
         the server and utimer-async's workers share them, so the HTTP numbers are a whole \
         system's and noisy; the tasks workload is the purer test of arm + cancel.",
};

/// A timeout's deadline passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TimedOut;

/// The timer library of a workload: the only code that differs between the
/// variants.
pub(crate) trait Timers: Send + Sync + 'static {
    /// A sleep that a connection keeps and moves: its idle timer.
    type Sleep: Future<Output = ()> + Send + Sync + 'static;

    /// A sleep due `d` from now.
    fn sleep(d: Duration) -> Self::Sleep;

    /// Moves `s` to `d` from now.
    fn reset(s: Pin<&mut Self::Sleep>, d: Duration);

    /// `f`, given `d` to complete.
    fn timeout<F: Future + Send>(
        d: Duration,
        f: F,
    ) -> impl Future<Output = Result<F::Output, TimedOut>> + Send;
}

/// `utimer_async`: hrtimers of the process-wide default runtime.
#[derive(Debug)]
pub(crate) struct UtimerAsync;

impl Timers for UtimerAsync {
    type Sleep = utimer_async::Sleep;
    fn sleep(d: Duration) -> Self::Sleep {
        utimer_async::sleep(d)
    }
    fn reset(s: Pin<&mut Self::Sleep>, d: Duration) {
        s.reset(utimer_async::Instant::now() + d);
    }
    fn timeout<F: Future + Send>(
        d: Duration,
        f: F,
    ) -> impl Future<Output = Result<F::Output, TimedOut>> + Send {
        utimer_async::timeout(d, f).map(|r| r.map_err(|_| TimedOut))
    }
}

/// `tokio::time`: the time driver of the runtime the tasks run on.
#[derive(Debug)]
pub(crate) struct TokioTime;

impl Timers for TokioTime {
    type Sleep = tokio::time::Sleep;
    fn sleep(d: Duration) -> Self::Sleep {
        tokio::time::sleep(d)
    }
    fn reset(s: Pin<&mut Self::Sleep>, d: Duration) {
        s.reset(tokio::time::Instant::now() + d);
    }
    fn timeout<F: Future + Send>(
        d: Duration,
        f: F,
    ) -> impl Future<Output = Result<F::Output, TimedOut>> + Send {
        tokio::time::timeout(d, f).map(|r| r.map_err(|_| TimedOut))
    }
}

/// No timer at all: the sleep never completes, moving it does nothing and
/// a timeout is its future.
#[derive(Debug)]
pub(crate) struct NoTimers;

impl Timers for NoTimers {
    type Sleep = std::future::Pending<()>;
    fn sleep(_: Duration) -> Self::Sleep {
        std::future::pending()
    }
    fn reset(_: Pin<&mut Self::Sleep>, _: Duration) {}
    fn timeout<F: Future + Send>(
        _: Duration,
        f: F,
    ) -> impl Future<Output = Result<F::Output, TimedOut>> + Send {
        f.map(Ok)
    }
}

/// The variants, in the tables' order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Variant {
    Utimer,
    Tokio,
    None,
}

impl Variant {
    pub(crate) const ALL: [Variant; 3] = [Variant::Utimer, Variant::Tokio, Variant::None];

    fn name(self) -> &'static str {
        match self {
            Variant::Utimer => "utimer-async",
            Variant::Tokio => "tokio::time",
            Variant::None => "no timers",
        }
    }
}

/// How long a sample runs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Window {
    pub(crate) warm: Duration,
    pub(crate) run: Duration,
}

/// The samples of one workload at one thread count: per repetition, one
/// per variant (in [`Variant::ALL`]'s order) unless that variant failed;
/// the first failure of each variant, which ends its samples.
#[derive(Debug)]
pub(crate) struct Runs<S> {
    pub(crate) reps: Vec<[Option<S>; 3]>,
    pub(crate) errors: [Option<String>; 3],
}

impl<S: Copy> Runs<S> {
    /// `reps` repetitions of `sample` for every variant, the order rotating.
    pub(crate) fn measure(
        reps: usize,
        mut sample: impl FnMut(Variant) -> Result<S, String>,
    ) -> Self {
        let mut runs = Runs {
            reps: Vec::with_capacity(reps),
            errors: [None, None, None],
        };
        for rep in 0..reps {
            let mut row = [None; 3];
            for k in 0..3 {
                let i = (k + rep) % 3;
                if runs.errors[i].is_some() {
                    continue;
                }
                match sample(Variant::ALL[i]) {
                    Ok(s) => row[i] = Some(s),
                    Err(e) => runs.errors[i] = Some(e),
                }
            }
            runs.reps.push(row);
        }
        runs
    }

    /// `f` of each of variant `i`'s samples.
    fn of(&self, i: usize, f: impl Fn(&S) -> f64) -> Vec<f64> {
        self.reps
            .iter()
            .filter_map(|r| r[i].as_ref().map(&f))
            .collect()
    }

    /// `f(a, b)` of each repetition that has samples of variants `a` and `b`.
    fn paired(&self, a: usize, b: usize, f: impl Fn(&S, &S) -> f64) -> Vec<f64> {
        let pairs = self
            .reps
            .iter()
            .filter_map(|r| Some((r[a].as_ref()?, r[b].as_ref()?)));
        pairs.map(|(x, y)| f(x, y)).collect()
    }

    /// The first error among variants `idx`.
    fn error(&self, idx: &[usize]) -> Option<&str> {
        idx.iter().find_map(|&i| self.errors[i].as_deref())
    }
}

/// A row of `values` (any order) in `unit`: the median, p10, p90 and min,
/// or the reason there is none.
fn row(
    case: &str,
    name: &str,
    mode: &str,
    values: &[f64],
    unit: &str,
    err: Option<&str>,
) -> Record {
    Record::distribution(GROUP, (case, name, mode), values, unit, err)
}

/// The rows of the throughput table: one per variant.
fn throughput_rows<S: Copy>(
    case: &str,
    mode: &str,
    runs: &Runs<S>,
    unit: &str,
    f: impl Fn(&S) -> f64 + Copy,
) -> Vec<Record> {
    (0..3)
        .map(|i| {
            let name = Variant::ALL[i].name();
            row(
                case,
                name,
                mode,
                &runs.of(i, f),
                unit,
                runs.errors[i].as_deref(),
            )
        })
        .collect()
}

/// The summary rows of one workload at one thread count: utimer / tokio of
/// `f`, and each library's timer share of the cost per operation.
fn summary_rows<S: Copy>(
    label: &str,
    mode: &str,
    runs: &Runs<S>,
    f: impl Fn(&S) -> f64 + Copy,
    out: &mut Summary,
) {
    let ratio = runs.paired(0, 1, |u, t| f(u) / f(t).max(1e-9));
    let err = runs.error(&[0, 1]);
    let name = format!("{label} throughput");
    let higher = Some(Better::Higher);
    out.ratio
        .push(row(RATIO_CASE, &name, mode, &ratio, "x", err).with_better(higher));
    for i in 0..2 {
        let share = runs.paired(i, 2, |x, none| 100.0 * (1.0 - f(x) / f(none).max(1e-9)));
        let name = format!("{label}, {}", Variant::ALL[i].name());
        let err = runs.error(&[i, 2]);
        // The share of the cost the timer calls add: lower is better.
        let lower = Some(Better::Lower);
        out.share
            .push(row(SHARE_CASE, &name, mode, &share, "%", err).with_better(lower));
    }
}

/// The cases across workloads and thread counts.
#[derive(Debug, Default)]
struct Summary {
    ratio: Vec<Record>,
    share: Vec<Record>,
    fired: Vec<Record>,
    moves: Vec<Record>,
}

const RATIO_CASE: &str = "utimer_over_tokio";
const SHARE_CASE: &str = "timer_share";
const FIRED_CASE: &str = "timeouts_fired";
const MOVES_CASE: &str = "timer_moves_per_request";
const SUMMARY_CASES: [&str; 4] = [RATIO_CASE, SHARE_CASE, FIRED_CASE, MOVES_CASE];

/// The server's worker counts: 2, and the CPU count when it is larger.
fn thread_counts() -> Vec<usize> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut v = vec![2];
    if cpus > 2 {
        v.push(cpus);
    }
    v
}

pub(crate) fn run(r: &mut Runner) {
    let counts = thread_counts();
    let http_cases = |t: usize| [http::case(t), format!("{}/latency", http::case(t))];
    let task_cases = |t: usize| [tasks::case(t), format!("{}/waited", tasks::case(t))];
    let summary = SUMMARY_CASES.iter().any(|c| r.wants(GROUP, c));
    let wants = |r: &Runner, cases: [String; 2]| summary || cases.iter().any(|c| r.wants(GROUP, c));
    let wants_http: Vec<bool> = counts.iter().map(|&t| wants(r, http_cases(t))).collect();
    let wants_tasks: Vec<bool> = counts.iter().map(|&t| wants(r, task_cases(t))).collect();
    if !wants_http.iter().chain(&wants_tasks).any(|&w| w) {
        return;
    }
    // About 5 s quick, 15-20 s full (fewer repetitions with two thread
    // counts); a tasks sample also spends ~0.2 s building and ending its
    // tasks.
    let reps = r.pick(3, if counts.len() > 1 { 3 } else { 5 });
    let http_w = Window {
        warm: Duration::from_millis(r.pick(50, 100)),
        run: Duration::from_millis(r.pick(150, 400)),
    };
    let task_w = Window {
        warm: Duration::from_millis(r.pick(50, 100)),
        run: Duration::from_millis(r.pick(100, 250)),
    };
    let (conns, n_tasks) = (
        http::CONNS_PER_THREAD,
        crate::groups::cases::human(tasks::TASKS),
    );
    r.enter_group(
        GROUP,
        DOC,
        &format!(
            "async timers inside server workloads, tokio::time vs utimer-async vs no timers, \
             on a\nmulti-thread tokio runtime of T workers: an HTTP/1.1 hyper server loaded by \
             a hyper client\n({conns} keep-alive connections per worker; per request a 5 s \
             timeout and a 60 s idle timer moved),\nand {n_tasks} tasks looping on a 5-15 s \
             timeout around an mpsc receive; the ratio column\nis throughput in the \
             throughput tables (higher is faster); HTTP: {} ms per sample, tasks: {} ms,\n\
             after {} ms of warm-up, median of {reps}",
            http_w.run.as_millis(),
            task_w.run.as_millis(),
            http_w.warm.as_millis(),
        ),
    );
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    r.note(
        GROUP,
        &format!(
            "this machine has {cpus} CPU(s), shared by the server's workers, the client's \
             workers, the task drivers and utimer-async's timer workers"
        ),
    );
    // Start utimer-async's default runtime outside the measurements.
    futures::executor::block_on(utimer_async::sleep(Duration::from_millis(1)));
    let mode = r.mode();
    let mut sum = Summary::default();
    for (k, &t) in counts.iter().enumerate() {
        if wants_http[k] {
            let [case, latency] = http_cases(t);
            crate::harness::progress::case(GROUP, &case);
            let runs = http::measure(t, reps, http_w);
            let kreqs = |s: &http::Sample| s.rps / 1e3;
            let rows = throughput_rows(&case, mode, &runs, "kreq/s", kreqs);
            r.values(GROUP, &case, Chart::Scaling, rows);
            r.values(
                GROUP,
                &latency,
                Chart::Percentiles,
                http::latency_rows(&latency, mode, &runs),
            );
            let label = format!("http, {t} threads");
            summary_rows(&label, mode, &runs, kreqs, &mut sum);
            let p99 = runs.paired(0, 1, |u, t| u.p99_us / t.p99_us.max(1e-9));
            let name = format!("{label} p99 latency");
            let err = runs.error(&[0, 1]);
            let lower = Some(Better::Lower);
            sum.ratio
                .push(row(RATIO_CASE, &name, mode, &p99, "x", err).with_better(lower));
            http::summary_rows(&label, mode, &runs, &mut sum);
        }
        if wants_tasks[k] {
            let [case, waited] = task_cases(t);
            crate::harness::progress::case(GROUP, &case);
            let runs = tasks::measure(t, reps, task_w);
            let mops = |s: &tasks::Sample| s.ops_per_s / 1e6;
            let rows = throughput_rows(&case, mode, &runs, "Mops/s", mops);
            r.values(GROUP, &case, Chart::Scaling, rows);
            let pct = |s: &tasks::Sample| 100.0 * s.waited;
            r.values(
                GROUP,
                &waited,
                Chart::Bars,
                throughput_rows(&waited, mode, &runs, "%", pct),
            );
            let label = format!("tasks, {t} threads");
            summary_rows(&label, mode, &runs, mops, &mut sum);
            tasks::summary_rows(&label, mode, &runs, &mut sum);
        }
    }
    r.values(GROUP, RATIO_CASE, Chart::Bars, sum.ratio);
    r.values(GROUP, SHARE_CASE, Chart::Bars, sum.share);
    r.values(GROUP, FIRED_CASE, Chart::Bars, sum.fired);
    r.values(GROUP, MOVES_CASE, Chart::Bars, sum.moves);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Options;

    #[test]
    fn runs_rotate_and_keep_errors() {
        let mut order = Vec::new();
        let runs = Runs::measure(3, |v| {
            order.push(v);
            match v {
                Variant::None => Err("no".to_string()),
                _ => Ok(1.0),
            }
        });
        assert_eq!(
            &order[..3],
            &[Variant::Utimer, Variant::Tokio, Variant::None]
        );
        // After its error, `None` is not sampled again.
        assert_eq!(order.len(), 3 + 2 + 2);
        assert_eq!(runs.of(0, |&x| x).len(), 3);
        assert_eq!(runs.paired(0, 1, |a, b| a / b), vec![1.0; 3]);
        assert_eq!(runs.error(&[1, 2]), Some("no"));
    }

    #[test]
    fn whole_group_quick() {
        let mut r = Runner::new(&Options {
            quick: true,
            ..Options::default()
        });
        run(&mut r);
        for x in &r.records {
            assert!(x.skipped.is_none(), "{x:?}");
        }
        let fired = r.records.iter().filter(|x| x.case == FIRED_CASE);
        assert!(fired.clone().count() > 0);
        for x in fired {
            assert_eq!(x.value, Some(0.0), "{x:?}");
        }
    }
}
