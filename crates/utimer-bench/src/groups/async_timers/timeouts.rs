//! The `async` group's timeout cases: utimer-async's
//! [`Timeout`](utimer_async::Timeout) against tokio's, hand-polled on the
//! measuring thread with a no-op waker, as the sleep cases are (tokio's
//! runtime context entered while the timeouts are made).
//!
//! futures-timer and async-io have no timeout of their own: their users
//! race the future against a timer, `futures::future::select(f, timer)`
//! (futures-lite's `f.or(timer)`, async-std's `future::timeout`), which
//! polls the future first, as tokio's and utimer-async's `Timeout` do. The
//! timer is made with the timeout: futures-timer's `Delay::new` allocates
//! its node and hands it to the helper thread there and then (and its drop
//! hands it back), async-io's `Timer::after` only reads the clock and
//! registers with the reactor at its first poll.
//!
//! Every timeout is 5 s (plus up to 1 µs, so deadlines differ), far from
//! firing: a request's. The cases, in ns per operation:
//!
//! * `timeout_ready`: make a timeout around a future that is ready, poll
//!   it once (Ready), drop it;
//! * `timeout_one_pending`: make a timeout around a future that is pending
//!   at its first poll and ready at its second, poll it (Pending: the
//!   timer is armed), poll it again (Ready), drop it (the timer is
//!   cancelled): a request that completes after one wait, the common case;
//! * `timeout_drop_pending`: make a timeout around a future that never
//!   completes, poll it once (Pending), drop it: a request abandoned
//!   before it completes.
//!
//! and, for each, `/allocs_per_op`: heap allocations per operation counted
//! by [`alloc`] on the measuring thread over 1000 operations (after 1000
//! more as a warm-up); what another thread allocates (futures-timer's
//! helper, utimer's worker) is not seen.
//!
//! No "tokio alt timer" rows: its helper process has no timeout case.

use std::future::{self, Future};
use std::hint::black_box;
use std::pin::{pin, Pin};
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::{select, Select};

use super::{poll_once, ready, AsyncIo, FuturesTimer, Peer, Tokio, UtimerAsync, GROUP};
use crate::harness::alloc;
use crate::harness::plot::Chart;
use crate::{time, Contender, Record, Runner, Schedule};

/// The timing cases, in run order; each has an `/allocs_per_op` table.
pub(super) const CASES: [&str; 3] = [
    "timeout_ready",
    "timeout_one_pending",
    "timeout_drop_pending",
];

/// Operations counted per allocation row.
const ALLOC_OPS: u64 = 1000;

/// A crate's timeout, as its users write it.
trait TimeoutPeer: Peer {
    /// The row's name.
    const TIMEOUT: &'static str;
    type Timeout<F: Future + Unpin>: Future;
    fn timeout<F: Future + Unpin>(&self, d: Duration, f: F) -> Self::Timeout<F>;
}

impl TimeoutPeer for UtimerAsync {
    const TIMEOUT: &'static str = "utimer-async Timeout";
    type Timeout<F: Future + Unpin> = utimer_async::Timeout<F>;
    fn timeout<F: Future + Unpin>(&self, d: Duration, f: F) -> Self::Timeout<F> {
        utimer_async::timeout(d, f)
    }
}

impl TimeoutPeer for Tokio {
    const TIMEOUT: &'static str = "tokio Timeout";
    type Timeout<F: Future + Unpin> = tokio::time::Timeout<F>;
    fn timeout<F: Future + Unpin>(&self, d: Duration, f: F) -> Self::Timeout<F> {
        tokio::time::timeout(d, f)
    }
}

impl TimeoutPeer for FuturesTimer {
    const TIMEOUT: &'static str = "futures-timer select(f, Delay)";
    type Timeout<F: Future + Unpin> = Select<F, futures_timer::Delay>;
    fn timeout<F: Future + Unpin>(&self, d: Duration, f: F) -> Self::Timeout<F> {
        select(f, futures_timer::Delay::new(d))
    }
}

impl TimeoutPeer for AsyncIo {
    const TIMEOUT: &'static str = "async-io select(f, Timer)";
    type Timeout<F: Future + Unpin> = Select<F, async_io::Timer>;
    fn timeout<F: Future + Unpin>(&self, d: Duration, f: F) -> Self::Timeout<F> {
        select(f, async_io::Timer::after(d))
    }
}

/// Pending at its first poll, ready at its second. It arranges no wake-up:
/// the cases poll it by hand.
struct PendingOnce(bool);

impl Future for PendingOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if std::mem::replace(&mut self.0, true) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// The timeout of the `i`th operation.
#[inline]
fn limit(i: u64) -> Duration {
    Duration::from_secs(5) + Duration::from_nanos(i & 1023)
}

// One operation of each case; true if it went as the case says.

#[inline]
fn op_ready<P: TimeoutPeer>(p: &P, i: u64) -> bool {
    let t = pin!(p.timeout(limit(i), future::ready(i)));
    !poll_once(t)
}

#[inline]
fn op_one_pending<P: TimeoutPeer>(p: &P, i: u64) -> bool {
    let mut t = pin!(p.timeout(limit(i), PendingOnce(false)));
    poll_once(t.as_mut()) && !poll_once(t)
}

#[inline]
fn op_drop_pending<P: TimeoutPeer>(p: &P, i: u64) -> bool {
    let t = pin!(p.timeout(limit(i), future::pending::<()>()));
    poll_once(t)
}

fn contender<'a, P, O>(op: O) -> Contender<'a>
where
    P: TimeoutPeer + 'a,
    O: Fn(&P, u64) -> bool + 'a,
{
    Contender::batched(P::TIMEOUT, move || {
        let p = ready::<P>()?;
        if !p.enter(|| op(&p, 0)) {
            return Err("the timeout did not complete as the case needs".to_string());
        }
        Ok(move |n: u64| {
            p.enter(|| {
                time(|| {
                    for i in 0..n {
                        black_box(op(&p, i));
                    }
                })
            })
        })
    })
}

/// Heap allocations per operation on this thread.
fn allocs<P: TimeoutPeer, O: Fn(&P, u64) -> bool>(op: O) -> Result<f64, String> {
    if !alloc::is_installed() {
        return Err("the counting allocator is not this program's global allocator".to_string());
    }
    let p = ready::<P>()?;
    p.enter(|| {
        // Warm-up: whatever a crate makes lazily (thread-locals, threads).
        for i in 0..ALLOC_OPS {
            black_box(op(&p, i));
        }
        let (ok, stats) = alloc::measure(|| (0..ALLOC_OPS).all(|i| op(&p, i)));
        if ok {
            Ok(stats.allocations as f64 / ALLOC_OPS as f64)
        } else {
            Err("the timeout did not complete as the case needs".to_string())
        }
    })
}

/// The case's rows of each crate, utimer-async first.
macro_rules! rows {
    ($f:ident ( $op:ident )) => {
        vec![
            $f::<UtimerAsync, _>($op::<UtimerAsync>),
            $f::<Tokio, _>($op::<Tokio>),
            $f::<FuturesTimer, _>($op::<FuturesTimer>),
            $f::<AsyncIo, _>($op::<AsyncIo>),
        ]
    };
}

/// The allocation table's name of a timing case.
fn allocs_case(case: &str) -> String {
    format!("{case}/allocs_per_op")
}

/// Whether the filter selects any of these cases.
pub(super) fn wanted(r: &Runner) -> bool {
    CASES
        .iter()
        .any(|c| r.wants(GROUP, c) || r.wants(GROUP, &allocs_case(c)))
}

fn alloc_rows(r: &mut Runner, case: &str, rows: Vec<(&'static str, Result<f64, String>)>) {
    let case = allocs_case(case);
    let mode = r.mode();
    let records = rows
        .into_iter()
        .map(|(name, v)| match v {
            Ok(v) => Record::value(GROUP, &case, name, mode, v, "allocs/op").with_ops(ALLOC_OPS),
            Err(why) => Record::skipped(GROUP, &case, name, mode, &why),
        })
        .collect();
    r.values(GROUP, &case, Chart::Bars, records);
}

/// A row of an allocation table.
fn named<P: TimeoutPeer, O: Fn(&P, u64) -> bool>(op: O) -> (&'static str, Result<f64, String>) {
    (P::TIMEOUT, allocs(op))
}

/// Runs the timeout cases the filter selects (the group is entered).
pub(super) fn run(r: &mut Runner) {
    let [ready_case, one_case, drop_case] = CASES;
    let i = Schedule::Interleaved;
    r.case(GROUP, ready_case, Chart::Bars, i, || {
        rows!(contender(op_ready))
    });
    if r.wants(GROUP, &allocs_case(ready_case)) {
        alloc_rows(r, ready_case, rows!(named(op_ready)));
    }
    r.case(GROUP, one_case, Chart::Bars, i, || {
        rows!(contender(op_one_pending))
    });
    if r.wants(GROUP, &allocs_case(one_case)) {
        alloc_rows(r, one_case, rows!(named(op_one_pending)));
    }
    r.case(GROUP, drop_case, Chart::Bars, i, || {
        rows!(contender(op_drop_pending))
    });
    if r.wants(GROUP, &allocs_case(drop_case)) {
        alloc_rows(r, drop_case, rows!(named(op_drop_pending)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Options;

    #[test]
    fn timeout_rows_for_every_crate() {
        let mut r = Runner::new(&Options {
            quick: true,
            filter: Some("async/timeout_one_pending".to_string()),
            ..Options::default()
        });
        super::super::run(&mut r);
        let timed = r.records.iter().filter(|x| x.ns_per_op.is_some());
        assert_eq!(timed.count(), 4, "{:?}", r.records);
        let allocs = |name: &str| {
            r.records
                .iter()
                .find(|x| x.case.ends_with("/allocs_per_op") && x.impl_name == name)
                .and_then(|x| x.value)
        };
        for p in [UtimerAsync::TIMEOUT, AsyncIo::TIMEOUT] {
            assert!(allocs(p).is_some(), "{p}");
        }
        // Counted on this thread: futures-timer's node, and nothing of tokio's.
        assert!(allocs(FuturesTimer::TIMEOUT) >= Some(1.0));
        assert_eq!(allocs(Tokio::TIMEOUT), Some(0.0));
    }

    #[test]
    fn every_case_completes_as_it_says() {
        let p = ready::<Tokio>().unwrap();
        p.enter(|| {
            assert!(op_ready(&p, 1) && op_one_pending(&p, 2) && op_drop_pending(&p, 3));
        });
        let p = UtimerAsync;
        assert!(op_ready(&p, 1) && op_one_pending(&p, 2) && op_drop_pending(&p, 3));
    }
}
