//! The `async` group: utimer-async's [`Sleep`](utimer_async::Sleep) against
//! the sleeps of the other async timer crates, in the same run:
//!
//! * **utimer-async** `Sleep`: an intrusive hrtimer sleeper (inside the
//!   future) of the process-wide default utimer runtime (one worker
//!   thread), executor-agnostic;
//! * **tokio** `tokio::time::Sleep`: the time driver of a current-thread
//!   runtime, whose context is entered while sleeps are made;
//! * **tokio alt timer**: the same `Sleep` on a 1-worker multi-thread
//!   runtime with tokio's alternative timer (a wheel per worker, deferred
//!   cancellation; `enable_alt_timer`, which needs `--cfg tokio_unstable`).
//!   It runs in a helper process ([`tokio_alt`]):
//!   futures are made and polled inside a task on the worker, every timed
//!   part ends with one yield (the worker parks once and does the deferred
//!   registering and dropping), and `bytes_per_future` is counted by the
//!   helper's allocator on all its threads;
//! * **futures-timer** `Delay`: a heap on its own helper thread;
//! * **async-io** `Timer`: the reactor's `BTreeMap`, driven by `block_on` or
//!   the crate's `async-io` thread.
//!
//! Futures are polled by hand with a no-op waker ([`Waker::noop`]) where the
//! case is about a single poll, and run by each crate's own executor where
//! they must complete: `futures::executor::block_on` for utimer-async and
//! futures-timer (neither has one), tokio's current-thread `block_on`,
//! `async_io::block_on`. The cases:
//!
//! 1. `create_poll_drop` (ns/op): make a 1 h sleep (pinned on the stack),
//!    poll it once (Pending, so its timer is queued), drop it (dequeued).
//!    Interleaved batches, as the other groups' timings.
//! 2. `reset` (ns/op): one pending sleep, moved to a far deadline that
//!    alternates between 1 h and 1 h + 1 ms, then polled. Half the moves are
//!    later (tokio only records those, lazily), half earlier. futures-timer's
//!    `Delay::reset` takes a duration from now, async-io's is
//!    `Timer::set_at`, tokio's and utimer-async's `Sleep::reset`.
//! 3. `pending_1M` (quick: 100K): N sleeps due 1–2 h away, each boxed and
//!    polled once, kept in a vector reserved beforehand:
//!    * `/create_poll`: ns per future to box, make and poll them;
//!    * `/bytes_per_future`: heap bytes per future counted by [`alloc`] on
//!      the measuring thread, the box (the future's `size_of`) included;
//!      memory that another thread allocates (futures-timer's helper heap,
//!      async-io's `BTreeMap` when its thread drains the queue of
//!      insertions) is not seen there, hence
//!    * `/rss_per_future`: the process's resident-set growth per future
//!      (all threads; freed memory trimmed back to the kernel first, then a
//!      short pause so helper threads catch up), a coarser second view.
//! 4. `expire_1M` (quick: 100K): N sleeps, each due 1–10 ms after it is
//!    made, joined with `futures::future::join_all` inside the crate's
//!    `block_on`; ns per future of the wall time from the first creation to
//!    the last completion (creating, queueing, firing, waking, polling).
//!    tokio's `block_on` runs the join under `tokio::task::unconstrained`:
//!    with its cooperative budget a `Sleep` polled after 128 others in one
//!    task poll returns Pending and wakes itself, so `join_all` polls all N
//!    futures for every 128 that complete (quadratic: 38 µs per future at
//!    100K measured here), which says more about `join_all` than the timer.
//! 5. `timeout_ready`, `timeout_one_pending`, `timeout_drop_pending`
//!    (ns/op, and allocations per op): utimer-async's `Timeout` against
//!    tokio's and a `select` of the future and the timer for futures-timer
//!    and async-io, hand-polled: see [`timeouts`].
//! 6. `lateness` (µs): 200 (quick: 30) sequential 1 ms sleeps, each
//!    `sleep_until(now + 1 ms)` awaited in `block_on`; p50, p99 and max of
//!    completion − deadline. `lateness/early` counts completions before the
//!    deadline (must be 0). futures-timer has no `sleep_until`: its `Delay`
//!    gets the remaining duration, so its own deadline is at or after ours.
//! 7. `lateness_200ms`, `lateness_10s` (µs; the 10 s one in full mode
//!    only): 64 sleeps, then 64 timeouts, due that far away, joined at
//!    once, utimer-async beside tokio (`far.rs`).
//!
//! `pending` and `expire` run one crate at a time (bounded memory) with
//! fewer repetitions than the runner's default (each sample is a full fill).

use std::cell::RefCell;
use std::future::Future;
use std::hint::black_box;
use std::pin::{pin, Pin};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use futures::future::join_all;

use crate::groups::cases::human;
use crate::harness::alloc;
use crate::harness::plot::Chart;
use crate::peers::tokio_alt;
use crate::{time, Contender, GroupDoc, Record, Runner, Sample, Schedule, XorShift};

mod far;
mod timeouts;

const GROUP: &str = "async";

/// The group's section of the results page (`--markdown`).
const DOC: GroupDoc = GroupDoc {
    title: "Async sleeps and timeouts",
    about: "utimer-async's `Sleep` (an hrtimer sleeper inside the future, on the process-wide \
         default runtime) against tokio's `Sleep` (a current-thread runtime), the tokio alt \
         timer (a 1-worker multi-thread runtime, in its helper), futures-timer's `Delay` (a \
         heap on its own thread) and async-io's `Timer` (the reactor's `BTreeMap`). \
         `create_poll_drop`: make a 1 h sleep, poll it once, drop it. `reset`: move one \
         pending sleep between two far deadlines and poll it. `pending_N`: N sleeps 1-2 h \
         away, boxed and polled once: ns per future, heap bytes per future counted on the \
         measuring thread, and resident-set growth per future (all threads). `expire_N`: N \
         sleeps due 1-10 ms ahead, joined in the crate's `block_on`: ns per future from the \
         first creation to the last completion. `timeout_*`: utimer-async's and tokio's \
         `Timeout`, and for futures-timer and async-io a `select` of the future and a timer, \
         5 s, hand-polled: `ready` (a ready future: make, poll, drop), `one_pending` (a \
         future pending once: make, poll, poll, drop), `drop_pending` (a future that never \
         completes: make, poll, drop), and the allocations per op of each, counted on the \
         measuring thread. `lateness`: sequential 1 ms `sleep_until`s, \
         p50 / p99 / max of completion minus deadline in µs; `lateness/early` counts early \
         completions.",
    look_for: "What a future costs to make, re-arm and hold, and what a crowd of them costs \
         to expire. A utimer-async wake-up takes two hand-offs (the worker woken by the \
         deadline, then the executor's thread woken by the worker), while async-io's timers \
         fire on the thread that polls them. `bytes_per_future` misses memory that other \
         threads allocate (futures-timer's helper heap, async-io's `BTreeMap`): \
         `rss_per_future` sees it. Timeouts are mostly cancelled: `one_pending` and \
         `drop_pending` are the price of one that is. No implementation should ever wake \
         early.",
};

const FAR: Duration = Duration::from_secs(3600);

/// One async timer crate, as the cases use it.
trait Peer: Sized {
    const NAME: &'static str;
    type Fut: Future;
    fn make() -> Result<Self, String>;
    /// Runs `f` where the crate's futures can be made (tokio: its context).
    fn enter<R>(&self, f: impl FnOnce() -> R) -> R {
        f()
    }
    fn block_on<F: Future>(&self, f: F) -> F::Output {
        futures::executor::block_on(f)
    }
    fn sleep(&self, d: Duration) -> Self::Fut;
    fn sleep_until(&self, at: Instant) -> Self::Fut;
    /// Moves a sleep to `at`, which is about `d` from now.
    fn reset(f: Pin<&mut Self::Fut>, at: Instant, d: Duration);
}

/// A crate's state, its threads started by one 1 ms sleep, outside the
/// measurements.
fn ready<P: Peer>() -> Result<P, String> {
    let p = P::make()?;
    p.block_on(async { p.sleep(Duration::from_millis(1)).await });
    Ok(p)
}

struct UtimerAsync;

impl Peer for UtimerAsync {
    const NAME: &'static str = "utimer-async";
    type Fut = utimer_async::Sleep;
    fn make() -> Result<Self, String> {
        Ok(UtimerAsync)
    }
    fn sleep(&self, d: Duration) -> Self::Fut {
        utimer_async::sleep(d)
    }
    fn sleep_until(&self, at: Instant) -> Self::Fut {
        utimer_async::sleep_until(at.into())
    }
    fn reset(f: Pin<&mut Self::Fut>, at: Instant, _: Duration) {
        f.reset(at.into());
    }
}

struct Tokio(tokio::runtime::Runtime);

impl Peer for Tokio {
    const NAME: &'static str = "tokio Sleep";
    type Fut = tokio::time::Sleep;
    fn make() -> Result<Self, String> {
        crate::peers::tokio_sleep::current_thread_runtime().map(Tokio)
    }
    fn enter<R>(&self, f: impl FnOnce() -> R) -> R {
        let _ctx = self.0.enter();
        f()
    }
    fn block_on<F: Future>(&self, f: F) -> F::Output {
        // Outside tokio's cooperative budget: see the module's docs.
        self.0.block_on(tokio::task::unconstrained(f))
    }
    fn sleep(&self, d: Duration) -> Self::Fut {
        tokio::time::sleep(d)
    }
    fn sleep_until(&self, at: Instant) -> Self::Fut {
        tokio::time::sleep_until(at.into())
    }
    fn reset(f: Pin<&mut Self::Fut>, at: Instant, _: Duration) {
        f.reset(at.into());
    }
}

struct FuturesTimer;

impl Peer for FuturesTimer {
    const NAME: &'static str = "futures-timer Delay";
    type Fut = futures_timer::Delay;
    fn make() -> Result<Self, String> {
        Ok(FuturesTimer)
    }
    fn sleep(&self, d: Duration) -> Self::Fut {
        futures_timer::Delay::new(d)
    }
    fn sleep_until(&self, at: Instant) -> Self::Fut {
        futures_timer::Delay::new(at.saturating_duration_since(Instant::now()))
    }
    fn reset(f: Pin<&mut Self::Fut>, _: Instant, d: Duration) {
        f.get_mut().reset(d);
    }
}

struct AsyncIo;

impl Peer for AsyncIo {
    const NAME: &'static str = "async-io Timer";
    type Fut = async_io::Timer;
    fn make() -> Result<Self, String> {
        Ok(AsyncIo)
    }
    fn block_on<F: Future>(&self, f: F) -> F::Output {
        async_io::block_on(f)
    }
    fn sleep(&self, d: Duration) -> Self::Fut {
        async_io::Timer::after(d)
    }
    fn sleep_until(&self, at: Instant) -> Self::Fut {
        async_io::Timer::at(at)
    }
    fn reset(f: Pin<&mut Self::Fut>, at: Instant, _: Duration) {
        f.get_mut().set_at(at);
    }
}

fn sample(elapsed: Duration, n: usize) -> Sample {
    let ops = n as u64;
    Sample { elapsed, ops }
}

/// Polls once with a no-op waker; true if pending.
#[inline]
fn poll_once<F: Future>(f: Pin<&mut F>) -> bool {
    let mut cx = Context::from_waker(Waker::noop());
    matches!(f.poll(&mut cx), Poll::Pending)
}

fn create_poll_drop<'a, P: Peer + 'a>() -> Contender<'a> {
    Contender::batched(P::NAME, || {
        let p = ready::<P>()?;
        Ok(move |n: u64| {
            p.enter(|| {
                time(|| {
                    for i in 0..n {
                        let s = pin!(p.sleep(FAR + Duration::from_nanos(i & 1023)));
                        black_box(poll_once(s));
                    }
                })
            })
        })
    })
}

fn reset<'a, P: Peer + 'a>() -> Contender<'a> {
    Contender::batched(P::NAME, || {
        let p = ready::<P>()?;
        let mut s = p.enter(|| Box::pin(p.sleep(FAR)));
        if !poll_once(s.as_mut()) {
            return Err("a 1 h sleep completed at once".to_string());
        }
        let base = Instant::now() + FAR;
        Ok(move |n: u64| {
            p.enter(|| {
                time(|| {
                    for i in 0..n {
                        let later = Duration::from_millis(i & 1);
                        P::reset(s.as_mut(), base + later, FAR + later);
                        black_box(poll_once(s.as_mut()));
                    }
                })
            })
        })
    })
}

/// The process's resident set in bytes, after handing freed memory back to
/// the kernel (glibc), or `None` if `/proc` is not readable.
fn rss_trimmed() -> Option<u64> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of the allocator.
    unsafe {
        libc::malloc_trim(0);
    }
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

/// Per crate: net bytes per future counted on this thread (last sample)
/// and the resident-set growth per future of each sample.
type Mem = RefCell<Vec<(&'static str, f64, Vec<f64>)>>;

fn pending<'a, P: Peer + 'a>(n: usize, out: &'a Mem) -> Contender<'a> {
    Contender::fixed(P::NAME, move || {
        let p = ready::<P>()?;
        out.borrow_mut().push((P::NAME, 0.0, Vec::new()));
        let pause = Duration::from_millis(if n > 200_000 { 100 } else { 20 });
        Ok(move || {
            let mut rng = XorShift::new(0xa5_9c);
            let mut v: Vec<Pin<Box<P::Fut>>> = Vec::with_capacity(n);
            let rss0 = rss_trimmed();
            let (elapsed, stats) = p.enter(|| {
                alloc::measure(|| {
                    time(|| {
                        for _ in 0..n {
                            let d = FAR + Duration::from_micros(rng.below(3_600_000_000));
                            let mut s = Box::pin(p.sleep(d));
                            poll_once(s.as_mut());
                            v.push(s);
                        }
                    })
                })
            });
            std::thread::sleep(pause);
            let rss1 = rss_trimmed();
            if let Some((_, bytes, rss)) = out.borrow_mut().last_mut() {
                *bytes = stats.net() as f64 / n as f64;
                if let (Some(a), Some(b)) = (rss0, rss1) {
                    rss.push(b.saturating_sub(a) as f64 / n as f64);
                }
            }
            p.enter(|| drop(v));
            sample(elapsed, n)
        })
    })
}

fn expire<'a, P: Peer + 'a>(n: usize) -> Contender<'a> {
    Contender::fixed(P::NAME, move || {
        let p = ready::<P>()?;
        Ok(move || {
            let t0 = Instant::now();
            let done = p.block_on(async {
                let all = (0..n).map(|i| {
                    let spread = (i as u64).wrapping_mul(7919) % 9000;
                    p.sleep(Duration::from_micros(1000 + spread))
                });
                join_all(all).await.len()
            });
            let elapsed = t0.elapsed();
            assert_eq!(done, n);
            sample(elapsed, n)
        })
    })
}

/// Lateness of `n` sequential 1 ms sleeps in µs, sorted, and how many
/// completed before their deadline.
fn lateness<P: Peer>(n: usize) -> Result<(Vec<f64>, usize), String> {
    let p = ready::<P>()?;
    let mut early = 0;
    let mut late = p.block_on(async {
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            let at = Instant::now() + Duration::from_millis(1);
            p.sleep_until(at).await;
            let now = Instant::now();
            if now < at {
                early += 1;
            }
            v.push(now.saturating_duration_since(at).as_secs_f64() * 1e6);
        }
        v
    });
    late.sort_by(f64::total_cmp);
    Ok((late, early))
}

fn lateness_rows<P: Peer>(r: &Runner, n: usize, rows: &mut Vec<Record>, early: &mut Vec<Record>) {
    lateness_rows_of(P::NAME, lateness::<P>(n), r, n, rows, early);
}

/// The lateness rows of `name` from its measurement `m`.
fn lateness_rows_of(
    name: &str,
    m: Result<(Vec<f64>, usize), String>,
    r: &Runner,
    n: usize,
    rows: &mut Vec<Record>,
    early: &mut Vec<Record>,
) {
    let (case, mode) = ("lateness", r.mode());
    match m {
        Ok((lat, e)) => {
            let q = |f: f64| lat[((lat.len() - 1) as f64 * f).round() as usize];
            for (label, v) in [("p50", q(0.5)), ("p99", q(0.99)), ("max", q(1.0))] {
                let name = format!("{name} {label}");
                rows.push(Record::value(GROUP, case, &name, mode, v, "µs").with_ops(n as u64));
            }
            early.push(
                Record::value(GROUP, "lateness/early", name, mode, e as f64, "early")
                    .with_ops(n as u64),
            );
        }
        Err(why) => {
            let skip = |case| Record::skipped(GROUP, case, name, mode, &why);
            rows.push(skip(case));
            early.push(skip("lateness/early"));
        }
    }
}

/// `rows` with the "tokio alt timer" row `alt` after tokio's.
fn with_alt<'a>(mut rows: Vec<Contender<'a>>, alt: Contender<'a>) -> Vec<Contender<'a>> {
    rows.insert(2.min(rows.len()), alt);
    rows
}

/// The alt timer's `pending` row: each answer also carries the bytes and
/// resident-set growth per future, kept in `out` like the other rows'.
fn alt_pending<'a>(n: usize, out: &'a Mem) -> Contender<'a> {
    tokio_alt::fixed(&["pending", &n.to_string()], move |r| {
        let mut out = out.borrow_mut();
        if out.last().map(|x| x.0) != Some(tokio_alt::NAME) {
            out.push((tokio_alt::NAME, 0.0, Vec::new()));
        }
        if let Some((_, bytes, rss)) = out.last_mut() {
            *bytes = r.bytes.unwrap_or(0.0);
            rss.extend(r.rss);
        }
    })
}

/// The alt timer's lateness, from its helper.
fn alt_lateness(n: usize) -> Result<(Vec<f64>, usize), String> {
    let r = tokio_alt::once(&["lateness", &n.to_string()])?;
    match r.late {
        Some(late) if !late.is_empty() => Ok((late, r.early.unwrap_or(0) as usize)),
        _ => Err("the helper measured no sleeps".to_string()),
    }
}

/// The four crates' contenders of one case, utimer-async first.
macro_rules! all {
    ($f:ident $(, $arg:expr)*) => {
        vec![
            $f::<UtimerAsync>($($arg),*),
            $f::<Tokio>($($arg),*),
            $f::<FuturesTimer>($($arg),*),
            $f::<AsyncIo>($($arg),*),
        ]
    };
}

pub(crate) fn run(r: &mut Runner) {
    let n = r.pick(100_000, 1_000_000); // pending and expire
    let n_late = r.pick(30, 200);
    let pending_case = format!("pending_{}", human(n));
    let expire_case = format!("expire_{}", human(n));
    let sub = ["create_poll", "bytes_per_future", "rss_per_future"];
    let pending_cases: Vec<String> = sub.iter().map(|s| format!("{pending_case}/{s}")).collect();
    let wants_pending = pending_cases.iter().any(|c| r.wants(GROUP, c));
    let wants_late = r.wants(GROUP, "lateness") || r.wants(GROUP, "lateness/early");
    let simple = ["create_poll_drop", "reset", expire_case.as_str()];
    let wants_timeouts = timeouts::wanted(r);
    let wants_far = far::wanted(r);
    if !r.wants_group(GROUP, &simple)
        && !wants_pending
        && !wants_late
        && !wants_timeouts
        && !wants_far
    {
        return;
    }
    r.enter_group(
        GROUP,
        DOC,
        "async sleeps and timeouts: utimer-async vs tokio::time (current-thread runtime; alt\n\
         timer: a 1-worker multi-thread runtime), futures-timer, async-io; hand-polled with a\n\
         no-op waker, or joined in each crate's block_on (alt timer: in a task on the worker)",
    );
    r.case(
        GROUP,
        "create_poll_drop",
        Chart::Bars,
        Schedule::Interleaved,
        || {
            with_alt(
                all!(create_poll_drop),
                tokio_alt::batched(&["create_poll_drop"]),
            )
        },
    );
    r.case(GROUP, "reset", Chart::Bars, Schedule::Interleaved, || {
        with_alt(all!(reset), tokio_alt::batched(&["reset"]))
    });
    timeouts::run(r);

    let reps = r.reps;
    r.reps = r.pick(2, 3);
    if wants_pending {
        let mem = RefCell::new(Vec::new());
        let timing = pending_cases[0].clone();
        // The timing runs (and fills `mem`) even when only memory is wanted.
        let filter = (!r.wants(GROUP, &timing)).then(|| r.filter.take());
        r.case(GROUP, &timing, Chart::Bars, Schedule::Sequential, || {
            with_alt(all!(pending, n, &mem), alt_pending(n, &mem))
        });
        if let Some(f) = filter {
            r.filter = f;
        }
        let (mode, installed) = (r.mode(), alloc::is_installed());
        let row = |case: &String, name, v: Option<f64>, why: &str| match v {
            Some(v) => Record::value(GROUP, case, name, mode, v, "B/future").with_ops(n as u64),
            None => Record::skipped(GROUP, case, name, mode, why),
        };
        let (mut counted, mut rss) = (Vec::new(), Vec::new());
        let (c1, c2) = (&pending_cases[1], &pending_cases[2]);
        let unseen = "the counting allocator is not this program's global allocator";
        for (name, bytes, mut grow) in mem.into_inner() {
            counted.push(row(c1, name, installed.then_some(bytes), unseen));
            grow.sort_by(f64::total_cmp);
            let median = grow.get(grow.len() / 2).copied();
            rss.push(row(c2, name, median, "/proc/self/statm unreadable"));
        }
        r.values(GROUP, c1, Chart::Bars, counted);
        r.values(GROUP, c2, Chart::Bars, rss);
        if r.wants(GROUP, c1) {
            let inline = format!(
                "size_of, included in bytes_per_future: utimer-async {} B, tokio {} B, \
                 futures-timer {} B, async-io {} B; bytes_per_future counts this thread only \
                 (futures-timer's heap and, at times, async-io's BTreeMap are built by their \
                 own threads): rss_per_future sees all; tokio alt timer: tokio's Sleep plus an \
                 entry allocated apart, counted on all the helper's threads",
                size_of::<utimer_async::Sleep>(),
                size_of::<tokio::time::Sleep>(),
                size_of::<futures_timer::Delay>(),
                size_of::<async_io::Timer>(),
            );
            r.note(GROUP, &inline);
        }
    }
    r.case(
        GROUP,
        &expire_case,
        Chart::Bars,
        Schedule::Sequential,
        || {
            with_alt(
                all!(expire, n),
                tokio_alt::fixed(&["expire", &n.to_string()], |_| ()),
            )
        },
    );
    r.reps = reps;

    if wants_late {
        let (mut rows, mut early) = (Vec::new(), Vec::new());
        lateness_rows::<UtimerAsync>(r, n_late, &mut rows, &mut early);
        lateness_rows::<Tokio>(r, n_late, &mut rows, &mut early);
        let alt = alt_lateness(n_late);
        lateness_rows_of(tokio_alt::NAME, alt, r, n_late, &mut rows, &mut early);
        lateness_rows::<FuturesTimer>(r, n_late, &mut rows, &mut early);
        lateness_rows::<AsyncIo>(r, n_late, &mut rows, &mut early);
        r.values(GROUP, "lateness", Chart::Percentiles, rows);
        r.values(GROUP, "lateness/early", Chart::Bars, early);
    }
    far::run(r);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Options;

    fn quick(filter: &str) -> Runner {
        Runner::new(&Options {
            quick: true,
            filter: Some(filter.to_string()),
            ..Options::default()
        })
    }

    #[test]
    fn reset_rows_for_every_crate() {
        let mut r = quick("async/reset");
        run(&mut r);
        assert_eq!(r.records.len(), 5);
        for x in &r.records {
            assert!(x.group == GROUP && x.ns_per_op.is_some(), "{x:?}");
        }
    }

    #[test]
    fn sleeps_are_never_early() {
        for (late, early) in [
            lateness::<UtimerAsync>(10).unwrap(),
            lateness::<Tokio>(10).unwrap(),
            lateness::<FuturesTimer>(10).unwrap(),
            lateness::<AsyncIo>(10).unwrap(),
            alt_lateness(10).unwrap(),
        ] {
            assert_eq!(early, 0);
            assert_eq!(late.len(), 10);
        }
    }

    #[test]
    fn memory_only_filter_still_measures() {
        let mut r = quick("async/pending_100K/bytes");
        run(&mut r);
        let bytes = r
            .records
            .iter()
            .filter(|x| x.case.ends_with("bytes_per_future"));
        // At least the future itself, for every crate.
        assert_eq!(bytes.filter(|x| x.value >= Some(8.0)).count(), 5);
    }
}
