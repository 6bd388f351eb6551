//! The shares of same-bucket re-arms: Linux's 2016 same-bucket
//! `mod_timer()` optimization, replayed on utimer.
//!
//! The kernel patch ("timers: Implement optimization for same expiry time
//! in mod_timer()", part of the 4.8 timer wheel rework) counted, for every
//! re-arm of a *pending* timer, one of three outcomes:
//!
//! * **Match**: no lock needed, the timer already fires at the right time;
//! * **Requeue**: lock the base and move the timer;
//! * **Recalc**: lock, and recompute the bucket under the lock because the
//!   base clock moved since the lock-free computation.
//!
//! Before the patch the lock-free check was "expiry unchanged"; after it,
//! "the new expiry lands in the timer's current bucket". Its changelog
//! reported (simple test / networking):
//!
//! | | simple before | simple after | networking before | networking after |
//! |---|---|---|---|---|
//! | Match   | 5.5%  | 86.6%  | 97.8% | 99.7%   |
//! | Requeue | 94.5% | 13.4%  | 2.2%  | 0.3%    |
//! | Recalc  | -     | <0.01% | -     | <0.001% |
//!
//! Here the real `TimerSystem` is built twice, with
//! `Timer::modify_without_bucket_check` (before) and `Timer::modify`
//! (after), on a manual clock that advances one tick at a time; after each
//! tick `run_expired` fires whatever became due, so the base clock moves as
//! in a live system. Both runs replay the same deterministic workload
//! (xorshift, fixed seed):
//!
//! * **simple**: one timer re-armed to now + 1000..1031 ticks (random),
//!   4 re-arms per tick. 1000 ticks is wheel level 2 (64-tick buckets).
//! * **networking**: many connections, each with one timer re-armed to
//!   now + timeout on every packet: 3 in 4 connections use a 200-tick
//!   retransmit timeout (level 1, 8-tick buckets), 1 in 4 a 7200-tick
//!   keepalive (level 3, 512-tick buckets). Packets pick connections with a
//!   skewed distribution (a few busy flows, many quiet ones; the product of
//!   three uniform draws) and a random
//!   number of packets (0.5x..1.5x the mean) arrives per tick; quiet
//!   connections' timers expire and are armed afresh later.
//!
//! Counting: the harness counts the re-arms of pending timers (`R`); the
//! library counts `requeued` and `recalced` under the base lock; Match is
//! `R - requeued - recalced`. (The library's own `matched` counter covers
//! only the same-bucket path, not the exact-expiry shortcut both variants
//! share; it is printed as a cross-check.) Percentages are of `R`.
//!
//! The ns/modify figure printed (and written as `<workload>/ns_per_modify`)
//! includes the harness loop and the statistics counting (an atomic add per
//! lock-free match), so it is only a rough companion to the shares.

use std::time::Instant;

use utimer::{BaseStats, Expiry, Timer};

use crate::harness::out::outln;
use crate::harness::plot::{Chart, Shares};
use crate::peers::utimer::{empty_timer, UtimerPeer};
use crate::{GroupDoc, Record, Runner, XorShift};

const GROUP: &str = "rearm_shares";

/// The group's section of the results page (`--markdown`).
const DOC: GroupDoc = GroupDoc {
    title: "The same-bucket re-arm",
    about: "The kernel's 2016 same-bucket `mod_timer()`, replayed on a real `TimerSystem` \
         built twice: *before* with `Timer::modify_without_bucket_check` (lock-free only if \
         the expiry is unchanged), *after* with `Timer::modify` (lock-free when the new expiry \
         lands in the timer's current bucket), on a manual clock advanced one tick at a time \
         with an expiry run after each. Every re-arm of a pending timer counts as Match (no \
         lock), Requeue (lock and move) or Recalc (recomputed under the lock because the base \
         clock moved). Two deterministic workloads: `simple`, one timer re-armed to now + \
         1000..1031 ticks, the patch's simple test; `networking`, many connections (fewer with \
         `--quick`) whose retransmit and keepalive timers are pushed out on every packet, with \
         skewed traffic. The reference column gives the patch's published share for the same \
         cell. `ns_per_modify` includes the harness loop and the counting: a rough companion \
         to the shares.",
    look_for: "Match should jump from before to after as it did in the patch; the shares are \
         a property of the workload and the wheel, not of the machine's speed, so they should \
         not move between runs. Recalc needs an expiry run to move the base clock between the \
         lock-free check and the lock; this replay is single-threaded, so it is 0 here.",
};

/// The chart of a workload's shares: before and after, beside the patch's.
pub(crate) const SHARES: Chart = Chart::Shares(Shares {
    of: "re-arms of pending timers",
    axis: "% of re-arms",
    reference: "Linux patch",
});

/// One workload's shape.
struct Workload {
    name: &'static str,
    conns: usize,
    /// Mean packets (re-arms) per tick.
    per_tick: u64,
    /// Whether the per-tick count is randomized (0.5x..1.5x the mean).
    jitter: bool,
    ticks: u64,
    describe: String,
    /// The patch's numbers: (before match, requeue, recalc), (after ...).
    reference: [[&'static str; 3]; 2],
}

/// What one run counted.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    /// Re-arms of pending timers (harness count).
    rearms: u64,
    /// ... of which the new expiry equalled the expiry of record.
    exact: u64,
    /// Library counters over the run.
    stats: BaseStats,
    /// Every `modify` call, pending or not.
    modifies: u64,
    elapsed_ns: f64,
}

impl Counts {
    fn matched(&self) -> u64 {
        self.rearms - self.stats.requeued - self.stats.recalced
    }

    fn pct(&self, n: u64) -> f64 {
        if self.rearms == 0 {
            0.0
        } else {
            100.0 * n as f64 / self.rearms as f64
        }
    }

    /// [match, requeue, recalc] in percent.
    fn shares(&self) -> [f64; 3] {
        [
            self.pct(self.matched()),
            self.pct(self.stats.requeued),
            self.pct(self.stats.recalced),
        ]
    }
}

fn diff(a: BaseStats, b: BaseStats) -> BaseStats {
    BaseStats {
        armed: b.armed - a.armed,
        fired: b.fired - a.fired,
        deleted: b.deleted - a.deleted,
        pending: b.pending,
        matched: b.matched - a.matched,
        requeued: b.requeued - a.requeued,
        recalced: b.recalced - a.recalced,
        migrated: b.migrated - a.migrated,
        panicked: b.panicked - a.panicked,
    }
}

/// The timeout of connection `c` for this workload.
fn timeout(w: &Workload, c: usize, rng: &mut XorShift) -> u64 {
    if w.conns == 1 {
        1000 + rng.below(32)
    } else if c.is_multiple_of(4) {
        7200
    } else {
        200
    }
}

/// A connection for the next packet: the product of three uniform draws is
/// skewed towards low indexes (busy flows), with a long quiet tail whose
/// timers expire between packets.
fn pick(conns: usize, rng: &mut XorShift) -> usize {
    if conns == 1 {
        return 0;
    }
    let n = conns as u64;
    ((rng.below(n) * rng.below(n) / n) * rng.below(n) / n) as usize
}

/// Which lock-free check `modify` makes: the patch's "before" (only an
/// unchanged expiry skips the lock; `Timer::modify_without_bucket_check`, a
/// `bench-internals` variant) or utimer's same-bucket check (`modify`).
#[derive(Copy, Clone, PartialEq, Eq)]
enum Check {
    ExpiryUnchanged,
    SameBucket,
}

fn run_workload(w: &Workload, check: Check) -> Counts {
    let peer = UtimerPeer::with(1, true);
    let sys = &*peer.sys;
    let _worker = sys.enter(0).expect("worker 0 exists");
    let timers: Vec<Timer> = (0..w.conns).map(|_| empty_timer(sys)).collect();
    let mut rng = XorShift::new(0x002_5eed);
    let mut c = Counts::default();
    let s0 = sys.metrics().totals();
    let t0 = Instant::now();
    for _ in 0..w.ticks {
        let now = sys.now();
        let packets = if w.jitter {
            w.per_tick / 2 + rng.below(w.per_tick + 1)
        } else {
            w.per_tick
        };
        for _ in 0..packets {
            let i = pick(w.conns, &mut rng);
            let t = &timers[i];
            let e = now + timeout(w, i, &mut rng);
            if t.is_pending() {
                c.rearms += 1;
                c.exact += (t.expires() == e) as u64;
            }
            match check {
                Check::SameBucket => t.modify(Expiry::Tick(e)),
                Check::ExpiryUnchanged => t.modify_without_bucket_check(Expiry::Tick(e)),
            }
            .expect("system alive");
            c.modifies += 1;
        }
        let now = peer.clock.advance(1);
        sys.run_expired(0, now).expect("worker 0 exists");
    }
    c.elapsed_ns = t0.elapsed().as_nanos() as f64;
    c.stats = diff(s0, sys.metrics().totals());
    drop(timers);
    c
}

fn fmt_pct(v: f64) -> String {
    if v == 0.0 {
        "0%".to_string()
    } else if v < 0.01 {
        format!("{v:.4}%")
    } else {
        format!("{v:.1}%")
    }
}

fn print_table(w: &Workload, before: &Counts, after: &Counts) {
    crate::harness::progress::clear();
    outln!("\n  {}: {}", w.name, w.describe);
    outln!(
        "    (shares of re-arms, %: neither lower nor higher is better, compare each with the \
         patch's number; ns/modify: lower is better)"
    );
    outln!(
        "    {:<9} {:>12} {:>10}   {:>12} {:>10}",
        "",
        "before",
        "(patch)",
        "after",
        "(patch)"
    );
    let (b, a) = (before.shares(), after.shares());
    for (k, label) in ["Match", "Requeue", "Recalc"].iter().enumerate() {
        outln!(
            "    {:<9} {:>12} {:>10}   {:>12} {:>10}",
            label,
            fmt_pct(b[k]),
            w.reference[0][k],
            fmt_pct(a[k]),
            w.reference[1][k],
        );
    }
    for (name, c) in [("before", before), ("after", after)] {
        outln!(
            "    {name:>6}: {} re-arms of pending timers ({} exact-expiry), {} modify calls; \
             library: matched {} requeued {} recalced {} armed {} fired {}; \
             {:.1} ns/modify (with harness and stats counting)",
            c.rearms,
            c.exact,
            c.modifies,
            c.stats.matched,
            c.stats.requeued,
            c.stats.recalced,
            c.stats.armed,
            c.stats.fired,
            c.elapsed_ns / c.modifies.max(1) as f64,
        );
    }
}

/// One workload's rows: the shares in % (with the patch's numbers as the
/// references), and the ns per `modify` call.
fn records(
    r: &Runner,
    w: &Workload,
    before: &Counts,
    after: &Counts,
) -> (Vec<Record>, Vec<Record>) {
    let (mut out, mut timings) = (Vec::new(), Vec::new());
    for (side, (name, c)) in [("before", before), ("after", after)].iter().enumerate() {
        let shares = c.shares();
        for (k, what) in ["match", "requeue", "recalc"].iter().enumerate() {
            out.push(
                Record::value(
                    GROUP,
                    &format!("{}/{what}", w.name),
                    name,
                    r.mode(),
                    shares[k],
                    "%",
                )
                .with_ops(c.rearms)
                .with_reference(w.reference[side][k]),
            );
        }
        let mut t = Record::value(
            GROUP,
            &format!("{}/ns_per_modify", w.name),
            name,
            r.mode(),
            c.elapsed_ns / c.modifies.max(1) as f64,
            "ns/op",
        )
        .with_ops(c.modifies);
        t.ns_per_op = t.value;
        timings.push(t);
    }
    (out, timings)
}

pub(crate) fn run(r: &mut Runner) {
    let quick = r.quick;
    let workloads = [
        Workload {
            name: "simple",
            conns: 1,
            per_tick: 4,
            jitter: false,
            ticks: if quick { 50_000 } else { 250_000 },
            describe: String::new(),
            reference: [["5.5%", "94.5%", "-"], ["86.6%", "13.4%", "<0.01%"]],
        },
        Workload {
            name: "networking",
            conns: if quick { 1_000 } else { 4_000 },
            per_tick: if quick { 10_000 } else { 20_000 },
            jitter: true,
            ticks: if quick { 300 } else { 1_500 },
            describe: String::new(),
            reference: [["97.8%", "2.2%", "-"], ["99.7%", "0.3%", "<0.001%"]],
        },
    ];
    let cases =
        |name: &str| ["match", "requeue", "recalc", "ns_per_modify"].map(|k| format!("{name}/{k}"));
    let wanted: Vec<bool> = workloads
        .iter()
        .map(|w| cases(w.name).iter().any(|c| r.wants(GROUP, c)))
        .collect();
    if !wanted.iter().any(|&b| b) {
        return;
    }
    r.enter_group(
        GROUP,
        DOC,
        "Linux 2016 same-bucket mod_timer() patch, replayed on TimerSystem:\n\
         before = Timer::modify_without_bucket_check (lock-free only if the expiry is unchanged),\n\
         after = Timer::modify (the same-bucket check);\n\
         shares of re-arms of pending timers; (patch) = the patch's reported numbers",
    );
    r.note(
        GROUP,
        "Recalc needs the base clock to move between the lock-free check and the lock, \
         i.e. a concurrent expiry run; this replay is single-threaded, so expect 0",
    );
    for (mut w, wanted) in workloads.into_iter().zip(wanted) {
        if !wanted {
            continue;
        }
        w.describe = if w.conns == 1 {
            format!(
                "1 timer re-armed to now + 1000..1031 ticks, {} re-arms per tick, {} ticks",
                w.per_tick, w.ticks
            )
        } else {
            format!(
                "{} connections, ~{} packets per tick (skewed), timeouts 200 / 7200 ticks, {} ticks",
                w.conns, w.per_tick, w.ticks
            )
        };
        let before = run_workload(&w, Check::ExpiryUnchanged);
        let after = run_workload(&w, Check::SameBucket);
        print_table(&w, &before, &after);
        crate::harness::progress::redraw(true);
        let (shares, timings) = records(r, &w, &before, &after);
        // One chart of the workload's shares; bars of the ns per modify.
        r.push_records(SHARES, shares);
        r.push_records(Chart::Bars, timings);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_bucket_matches_more() {
        let w = Workload {
            name: "simple",
            conns: 1,
            per_tick: 4,
            jitter: false,
            ticks: 2_000,
            describe: String::new(),
            reference: [["", "", ""], ["", "", ""]],
        };
        let before = run_workload(&w, Check::ExpiryUnchanged);
        let after = run_workload(&w, Check::SameBucket);
        assert_eq!(before.rearms, after.rearms);
        assert!(after.matched() > before.matched());
        assert_eq!(before.stats.recalced, 0);
        let s = after.shares();
        assert!((s.iter().sum::<f64>() - 100.0).abs() < 1e-9);
    }
}
