//! The cost of a synchronous delete: the kernel's `del_timer_sync()` that
//! looks at one CPU instead of all of them (2004), and
//! `del_singleshot_timer_sync()` (2004), replayed on utimer.
//!
//! In 2004 `del_timer_sync()` deleted the timer, then scanned the
//! `running_timer` of **every** CPU's base to wait for a callback that might
//! be running. On a 32-way NUMA machine that cost tens of thousands of
//! cycles. The fix looked only at the base the timer last ran on (it
//! admitted a race; utimer closes it, see `timer/delete_sync.rs`); a second
//! patch added a single-shot shortcut. Their table, in CPU cycles per call
//! averaged over 1000 calls:
//!
//! | | 32p before | 4p before | 32p after | 4p after |
//! |---|---|---|---|---|
//! | warm cache | 29,000 | 505 | 95 | 88 |
//! | cold cache | 37,800 | 1220 | 1,800 | 140 |
//!
//! Here a `TimerSystem` with 4, 32 and 64 workers (three bases each; bases
//! exist without threads) holds one armed timer on worker 0. Each call is
//! timed alone with the TSC (`rdtsc`): re-arm (untimed), then one
//! `delete_sync`. The rows: utimer's `delete_sync` (the timer's own base),
//! the 2004 scan of every base (kept in the library as the hidden
//! `delete_sync_scan_all`), and a plain `delete` for the single-shot goal
//! (`delete_sync` within 1.2x of `delete`). "Cold" walks a buffer larger
//! than the last-level cache between calls, so the bases' cache lines are
//! gone. Medians of the per-repetition averages are reported.

use std::hint::black_box;

use utimer::{Clock, Expiry, Timer, TimerSystem};

use crate::harness::plot::Chart;
use crate::{GroupDoc, Record, Runner};

const GROUP: &str = "delete_sync";

/// The group's section of the results page (`--markdown`).
const DOC: GroupDoc = GroupDoc {
    title: "Synchronous delete that looks at one base",
    about: "The kernel's 2004 `del_timer_sync()`, which looks at the CPU the timer last ran \
         on instead of scanning every CPU, and the single-shot `del_singleshot_timer_sync()`, \
         replayed: a `TimerSystem` with 4, 32 and 64 workers (three bases each) holds one \
         armed timer on worker 0, and each synchronous delete is timed alone with the TSC \
         (`rdtsc`), in CPU cycles, averaged over many calls, median over repetitions. The \
         rows: utimer's `delete_sync` (the timer's own base), the 2004 scan of every base (the \
         hidden `delete_sync_scan_all`) and a plain `delete`. `cold` walks a buffer larger \
         than the last-level cache between calls. x86-64 only.",
    look_for: "`delete_sync` should stay flat as workers are added and cost about what a \
         plain `delete` costs (the single-shot patch's goal, without a second function), while \
         the scan grows with the number of bases. The scan variant compiles differently from \
         build to build (its loop over every base), so read its ratio to `delete_sync` as an \
         order of magnitude. The patch's own cycle counts are in the note.",
};

/// Timestamp counter.
#[cfg(target_arch = "x86_64")]
fn cycles() -> u64 {
    // SAFETY: RDTSC reads the time-stamp counter; it has no memory effects.
    unsafe { std::arch::x86_64::_rdtsc() }
}

/// One way to delete synchronously.
#[derive(Copy, Clone)]
enum Variant {
    LastBase,
    ScanAll,
    Delete,
}

impl Variant {
    fn name(self) -> &'static str {
        match self {
            Variant::LastBase => "delete_sync (utimer: its own base)",
            Variant::ScanAll => "delete_sync, scan all bases (2004)",
            Variant::Delete => "delete (not synchronous)",
        }
    }

    fn call(self, t: &Timer) {
        match self {
            Variant::LastBase => drop(black_box(t.delete_sync())),
            Variant::ScanAll => drop(black_box(t.delete_sync_scan_all())),
            Variant::Delete => drop(black_box(t.delete())),
        }
    }
}

/// Touches every cache line of `buf`, evicting whatever was cached.
fn evict(buf: &mut [u8]) {
    for i in (0..buf.len()).step_by(64) {
        buf[i] = buf[i].wrapping_add(1);
    }
    black_box(&buf);
}

/// Average cycles of one call, over `calls` calls.
fn average(
    sys: &TimerSystem,
    t: &Timer,
    v: Variant,
    calls: u32,
    cold: Option<&mut Vec<u8>>,
) -> f64 {
    let mut total = 0u64;
    let mut cold = cold;
    for i in 0..calls {
        t.modify(Expiry::Tick(sys.now() + 1000 + u64::from(i % 7)))
            .expect("arm");
        if let Some(buf) = cold.as_deref_mut() {
            evict(buf);
        }
        let start = cycles();
        v.call(t);
        total += cycles() - start;
    }
    total as f64 / f64::from(calls)
}

pub(crate) fn run(r: &mut Runner) {
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = r;
        return;
    }
    let cases: Vec<(bool, usize)> = [false, true]
        .iter()
        .flat_map(|&cold| [4usize, 32, 64].map(|w| (cold, w)))
        .collect();
    let name =
        |cold: bool, w: usize| format!("{}/{}_workers", if cold { "cold" } else { "warm" }, w);
    if !cases.iter().any(|&(c, w)| r.wants(GROUP, &name(c, w))) {
        return;
    }
    r.enter_group(
        GROUP,
        DOC,
        "the kernel's del_timer_sync looking at one CPU (2004): CPU cycles (rdtsc) per\n\
         synchronous delete, average of N calls, median over repetitions; workers x 3 bases,\n\
         timer on worker 0, callback idle; cold = a buffer larger than the LLC walked\n\
         between calls",
    );
    let calls = r.pick(200u32, 1000);
    let reps = r.pick(3, 7);
    let mut buf = vec![0u8; r.pick(16usize, 64) << 20];
    for (cold, workers) in cases {
        let case = name(cold, workers);
        if !r.wants(GROUP, &case) {
            continue;
        }
        let sys = TimerSystem::builder()
            .workers(workers)
            .clock(Clock::manual())
            .build_without_threads();
        let _g = sys.enter(0).expect("worker 0");
        let t = sys.timer(|_| {});
        let calls_here = if cold { calls / 4 } else { calls };
        let mut records = Vec::new();
        for v in [Variant::LastBase, Variant::ScanAll, Variant::Delete] {
            average(&sys, &t, v, calls_here, None); // warm-up, untimed
            let mut runs: Vec<f64> = (0..reps)
                .map(|_| average(&sys, &t, v, calls_here, cold.then_some(&mut buf)))
                .collect();
            runs.sort_by(f64::total_cmp);
            let median = runs[runs.len() / 2];
            records.push(
                Record::value(GROUP, &case, v.name(), r.mode(), median, "cycles")
                    .with_ops(u64::from(calls_here)),
            );
        }
        // Bars per case, and a line per row against the worker count.
        r.values(GROUP, &case, Chart::Scaling, records);
    }
    r.note(
        GROUP,
        "the 2004 patch's table (cycles): scan of every CPU 505 (4p) / 29,000 (32p) warm, \
         1220 / 37,800 cold; last base only 88 / 95 warm, 140 / 1,800 cold",
    );
}
