//! The single-threaded cases: what each measures and why.
//!
//! Every case is written once, generically over [`TimerPeer`], and
//! instantiated for each peer, so all rows of a table do the same thing in
//! their own API. Deadlines are in 1 ms ticks (see [`crate::peers`]).
//!
//! * **arm_cancel / empty** — arm one timer to now+100 ticks and cancel it,
//!   on an otherwise empty queue. The dominant pattern for timeouts (most
//!   are cancelled long before they fire); 100 ticks lands on wheel level 1.
//!   utimer runs on the calling thread's own worker: default timers go to
//!   its global base, `utimer (pinned)` timers to its local base.
//! * **rearm / same_bucket** — a pending timer at ~now+3000 ticks (level 2,
//!   64-tick buckets) re-armed alternately to `e + 1` and `e`, both in its
//!   current bucket: the case the kernel's lock-free same-bucket
//!   `mod_timer()` check (2016) exists for (think of a TCP retransmit timer
//!   pushed out on every ACK).
//! * **rearm / new_bucket** — the same timer alternately moved between
//!   `e` (level 2) and `e + 4096` (level 3): every re-arm must requeue.
//!   (utimer's wheel keeps the entry a timer just left as a ghost and
//!   takes it back when the timer returns, so this case costs it little.)
//! * **rearm / three_buckets** — the same timer moved round `e + 4096`,
//!   `e + 8192` and `e`: never back to the bucket it just left, so every
//!   re-arm removes and inserts for real.
//! * **expiry / N due** — N timers (1M; 100K in quick mode) due over the
//!   next 64 ticks, all with empty callbacks; time moves past them and the
//!   timed part is the expiry run that fires them all. Reported per timer.
//!   Arming is untimed. The real-clock peers (tokio) really wait ~65 ms.
//! * **next_expiry / 1M pending** — "when must I wake up?" with 1M timers
//!   pending at random deadlines between 1 s and 2.8 h: what an event loop
//!   asks before every sleep.
//! * **arm_cancel_pending / 1K, 10M** — the arm_cancel pattern with 1K and
//!   10M (quick: 1M) random background timers pending, to show how the cost
//!   grows with the queue: O(1) for wheels, O(log n) plus cache misses for
//!   heaps and trees. The big fill runs one implementation at a time to
//!   bound memory; kernel timers are not filled beyond 10K.
//! * **memory** — bytes (and allocations) per armed timer, from the counting
//!   allocator, with 1M timers armed; includes the handle the user holds
//!   (the `Vec` of handles is allocated inside the measured window).
//! * **tokio alt timer** rows (tokio's per-worker timer, in a helper
//!   process: [`tokio_alt`]) run the same cases inside a task on a 1-worker
//!   multi-thread runtime; their timed parts end with one worker park, so
//!   the work that tokio defers to it (registering, dropping cancelled
//!   entries) is counted. Its memory rows come from the helper's allocator.
//! * **wheel / arm_cancel_1K** — the pure `utimer::wheel::Wheel` (no locks,
//!   no atomics) against `BinaryHeap` and `BTreeMap`, the structures it
//!   replaces in a single-threaded event loop, with 1K timers pending.

use std::hint::black_box;
use std::time::Instant;

use crate::harness::alloc;
use crate::harness::out::errln;
use crate::harness::plot::Chart;
use crate::peers::btree::BTreePeer;
use crate::peers::delay_queue::DelayQueuePeer;
use crate::peers::heap::HeapPeer;
use crate::peers::posix::PosixPeer;
use crate::peers::timerfd::TimerFdPeer;
use crate::peers::tokio_alt;
use crate::peers::tokio_sleep::TokioSleepPeer;
use crate::peers::utimer::{OwnerUtimerPeer, PinnedUtimerPeer, UtimerPeer};
use crate::peers::wheel::WheelPeer;
use crate::peers::TimerPeer;
use crate::{time, Contender, GroupDoc, Record, Runner, Sample, Schedule, XorShift};

/// Arm+cancel distance: now + 100 ticks (wheel level 1).
const ARM_DELTA: u64 = 100;
/// Background timers: now + FILL_MIN + uniform(0..FILL_SPAN) ticks.
const FILL_MIN: u64 = 1_000;
const FILL_SPAN: u64 = 10_000_000;
/// The expiry case spreads deadlines over this many ticks.
const EXPIRY_SPREAD: u64 = 64;
/// Re-arm cases: the timer sits about this far out (wheel level 2).
const REARM_DELTA: u64 = 3_000;
/// Re-arm to a new bucket: this much later (wheel level 3).
const REARM_JUMP: u64 = 4_096;

/// The usual row set: utimer first, then the peers.
macro_rules! all_peers {
    ($case:ident ( $($arg:expr),* )) => {
        vec![
            $case::<UtimerPeer>($($arg),*),
            $case::<TokioSleepPeer>($($arg),*),
            $case::<DelayQueuePeer>($($arg),*),
            $case::<HeapPeer>($($arg),*),
            $case::<BTreePeer>($($arg),*),
            $case::<PosixPeer<false>>($($arg),*),
            $case::<PosixPeer<true>>($($arg),*),
            $case::<TimerFdPeer>($($arg),*),
        ]
    };
}

/// Puts `alt` (a "tokio alt timer" row) right after the tokio `Sleep` row.
fn with_alt<'a>(mut rows: Vec<Contender<'a>>, alt: Contender<'a>) -> Vec<Contender<'a>> {
    let at = rows
        .iter()
        .position(|c| c.name == TokioSleepPeer::NAME)
        .map_or(rows.len(), |i| i + 1);
    rows.insert(at, alt);
    rows
}

/// The "tokio alt timer" row of an arm+cancel case with `pending` timers.
fn alt_arm_cancel<'a>(pending: usize) -> Contender<'a> {
    tokio_alt::batched(&["arm_cancel", &pending.to_string()])
}

/// The "tokio alt timer" row of the expiry case; warns like [`expiry`].
fn alt_expiry<'a>(n: usize) -> Contender<'a> {
    tokio_alt::fixed(&["expiry", &n.to_string()], move |r| {
        if r.missed.unwrap_or(0) > 0 {
            crate::harness::progress::clear();
            errln!(
                "warning: {}: expiry run fired {} of {n} timers",
                tokio_alt::NAME,
                n as u64 - r.missed.unwrap_or(0)
            );
        }
    })
}

/// A peer plus the timers it holds. Field order matters: handles are
/// dropped before the peer (and its runtime or system) goes away.
struct State<P: TimerPeer> {
    handles: Vec<P::Handle>,
    one: P::Handle,
    p: P,
}

/// Creates a peer, `n` background timers at random far deadlines, and one
/// spare handle.
fn setup<P: TimerPeer>(n: usize, seed: u64) -> Result<State<P>, String> {
    let mut p = P::new()?;
    let (handles, one) = p.with_ctx(|p| -> Result<_, String> {
        let mut rng = XorShift::new(seed);
        let now = p.now();
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            let mut h = p.handle()?;
            p.arm(&mut h, now + FILL_MIN + rng.below(FILL_SPAN));
            v.push(h);
        }
        Ok((v, p.handle()?))
    })?;
    Ok(State { handles, one, p })
}

pub(crate) fn human(n: usize) -> String {
    match n {
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
        n if n >= 1_000 && n % 1_000 == 0 => format!("{}K", n / 1_000),
        n => n.to_string(),
    }
}

/// Arm to now+100, cancel; `pending` background timers.
fn arm_cancel<'a, P: TimerPeer + 'a>(pending: usize) -> Contender<'a> {
    let (max, why) = P::MAX_PENDING;
    if pending > max {
        return Contender::skip(P::NAME, why);
    }
    Contender::batched(P::NAME, move || {
        let mut s = setup::<P>(pending, 0x5eed_0001)?;
        Ok(move |n: u64| {
            let State { p, one, .. } = &mut s;
            p.with_ctx(|p| {
                let at = p.now() + ARM_DELTA;
                time(|| {
                    for _ in 0..n {
                        p.arm_cancel(black_box(&mut *one), black_box(at));
                    }
                })
            })
        })
    })
}

/// The re-arm base expiry: ~REARM_DELTA ahead, 10 ticks into a 64-tick
/// bucket, so `e` and `e + 1` share the bucket.
fn rearm_base(now: u64) -> u64 {
    ((now + REARM_DELTA) & !63) + 10
}

/// A peer with one timer armed at [`rearm_base`], for the re-arm cases.
fn rearm_setup<P: TimerPeer>() -> Result<State<P>, String> {
    let mut s = setup::<P>(0, 1)?;
    let State { p, one, .. } = &mut s;
    p.with_ctx(|p| {
        let e = rearm_base(p.now());
        p.arm(one, e);
    });
    Ok(s)
}

/// Re-arm a pending timer alternately to `e + jump` and `e`.
fn rearm<'a, P: TimerPeer + 'a>(jump: u64) -> Contender<'a> {
    Contender::batched(P::NAME, move || {
        let mut s = rearm_setup::<P>()?;
        let mut flip = false;
        Ok(move |n: u64| {
            let State { p, one, .. } = &mut s;
            p.with_ctx(|p| {
                let e = rearm_base(p.now());
                time(|| {
                    for _ in 0..n {
                        flip = !flip;
                        let x = if flip { e + jump } else { e };
                        p.rearm(black_box(&mut *one), black_box(x));
                    }
                })
            })
        })
    })
}

/// Re-arm a pending timer round three buckets: `e + jump`, `e + 2 * jump`,
/// `e`, so that no re-arm goes back to the bucket the one before left.
/// (The same shape as [`rearm`], written out: with the step passed in as
/// a closure, `rearm`'s own rows measured 0.3 ns slower.)
fn rearm_round<'a, P: TimerPeer + 'a>(jump: u64) -> Contender<'a> {
    Contender::batched(P::NAME, move || {
        let mut s = rearm_setup::<P>()?;
        let mut k = 0u64;
        Ok(move |n: u64| {
            let State { p, one, .. } = &mut s;
            p.with_ctx(|p| {
                let e = rearm_base(p.now());
                time(|| {
                    for _ in 0..n {
                        k = if k == 2 { 0 } else { k + 1 };
                        p.rearm(black_box(&mut *one), black_box(e + k * jump));
                    }
                })
            })
        })
    })
}

/// Arm `n` timers due within EXPIRY_SPREAD ticks, let time pass, time the
/// expiry run.
fn expiry<'a, P: TimerPeer + 'a>(n: usize) -> Contender<'a> {
    Contender::fixed(P::NAME, move || {
        let mut s = setup::<P>(0, 1)?;
        s.p.with_ctx(|p| -> Result<(), String> {
            s.handles = (0..n).map(|_| p.handle()).collect::<Result<_, _>>()?;
            Ok(())
        })?;
        Ok(move || {
            let State { p, handles, .. } = &mut s;
            p.with_ctx(|p| {
                let now = p.now();
                for (i, h) in handles.iter_mut().enumerate() {
                    p.arm(h, now + 1 + (i as u64 % EXPIRY_SPREAD));
                }
                // Past the last deadline by more than one level-1 granule (8
                // ticks): wheels round an expiry up to its bucket, never down.
                let until = now + EXPIRY_SPREAD + 16;
                p.wait_until(until);
                let t0 = Instant::now();
                let fired = p.fire(until).expect("this peer can fire");
                let elapsed = t0.elapsed();
                let fired = fired.unwrap_or_else(|| {
                    handles
                        .iter()
                        .filter(|h| p.is_pending(h) == Some(false))
                        .count()
                });
                if fired != handles.len() {
                    crate::harness::progress::clear();
                    errln!(
                        "warning: {}: expiry run fired {fired} of {} timers",
                        P::NAME,
                        handles.len()
                    );
                }
                Sample {
                    elapsed,
                    ops: handles.len() as u64,
                }
            })
        })
    })
}

/// Ask for the next expiry with `pending` timers queued.
fn next_expiry<'a, P: TimerPeer + 'a>(pending: usize) -> Contender<'a> {
    let (max, why) = P::MAX_PENDING;
    if pending > max {
        return Contender::skip(P::NAME, why);
    }
    Contender::batched(P::NAME, move || {
        // Find out whether the peer can answer at all before filling it.
        let mut probe = P::new()?;
        probe.with_ctx(|p| p.next_expiry().map(|_| ()))?;
        drop(probe);
        let mut s = setup::<P>(pending, 0x5eed_0002)?;
        Ok(move |n: u64| {
            let State { p, .. } = &mut s;
            p.with_ctx(|p| {
                time(|| {
                    for _ in 0..n {
                        let _ = black_box(p.next_expiry());
                    }
                })
            })
        })
    })
}

/// Bytes and allocations per armed timer, handles included.
fn memory<P: TimerPeer>(r: &Runner, n: usize) -> [Record; 2] {
    let (g, mode) = ("memory", r.mode());
    let (cb, ca) = ("bytes_per_timer", "allocs_per_timer");
    let skip = |why: &str| {
        [
            Record::skipped(g, cb, P::NAME, mode, why),
            Record::skipped(g, ca, P::NAME, mode, why),
        ]
    };
    if n > P::MAX_PENDING.0 {
        return skip("kernel memory is not visible to a user-space allocator");
    }
    if !alloc::is_installed() {
        return skip("the counting allocator is not this program's global allocator");
    }
    let mut p = match P::new() {
        Ok(p) => p,
        Err(e) => return skip(&e),
    };
    let (res, stats) = p.with_ctx(|p| {
        let mut rng = XorShift::new(0x5eed_0003);
        let now = p.now();
        alloc::measure(|| -> Result<Vec<P::Handle>, String> {
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                let mut h = p.handle()?;
                p.arm(&mut h, now + FILL_MIN + rng.below(FILL_SPAN));
                v.push(h);
            }
            Ok(v)
        })
    });
    match res {
        Ok(handles) => {
            drop(handles);
            [
                Record::value(
                    g,
                    cb,
                    P::NAME,
                    mode,
                    stats.net() as f64 / n as f64,
                    "B/timer",
                )
                .with_ops(n as u64),
                Record::value(
                    g,
                    ca,
                    P::NAME,
                    mode,
                    stats.allocations as f64 / n as f64,
                    "allocs/timer",
                )
                .with_ops(n as u64),
            ]
        }
        Err(e) => skip(&e),
    }
}

/// The memory rows of "tokio alt timer", counted by the helper's own
/// allocator (all its threads: the sleeps are made on a runtime worker).
fn alt_memory(r: &Runner, n: usize) -> [Record; 2] {
    let (g, mode, name) = ("memory", r.mode(), tokio_alt::NAME);
    let (cb, ca) = ("bytes_per_timer", "allocs_per_timer");
    let skip = |e: &str| {
        [
            Record::skipped(g, cb, name, mode, e),
            Record::skipped(g, ca, name, mode, e),
        ]
    };
    match tokio_alt::once(&["memory", &n.to_string()]) {
        Ok(tokio_alt::Reply {
            bytes: Some(bytes),
            allocs: Some(allocs),
            ..
        }) => [
            Record::value(g, cb, name, mode, bytes, "B/timer").with_ops(n as u64),
            Record::value(g, ca, name, mode, allocs, "allocs/timer").with_ops(n as u64),
        ],
        Ok(_) => skip("the helper did not count"),
        Err(e) => skip(&e),
    }
}

// What each group measures, for the results page (`--markdown`).

const ARM_CANCEL: GroupDoc = GroupDoc {
    title: "Arm and cancel on an empty base",
    about: "Each operation arms one timer to now + 100 ticks (wheel level 1) and cancels it, \
         with nothing else pending: the life of most timeouts, which are cancelled long before \
         they fire. utimer runs on the calling thread's own worker in three ways: `utimer` on \
         a thread that entered the worker (`sys.enter`) and takes the base's spinlock; `utimer \
         (owner)` on the thread registered as the worker (as a `Runtime`'s threads are), whose \
         base lock is biased towards it; `utimer (pinned)` with the timer on the worker's \
         local base instead of its global one. The kernel peers make one system call to arm \
         and one to cancel.",
    look_for: "utimer against the binary heap, the floor of a lock-free queue without \
         handles, and the B-tree; tokio's `Sleep` and alt timer register an entry per timer, \
         and the kernel rows show what a system call costs on this machine. A cancelled timer \
         keeps its place in the wheel as its bucket's ghost, so the next arm into the same \
         bucket writes nothing else there.",
};

const REARM: GroupDoc = GroupDoc {
    title: "Re-arming a pending timer",
    about: "A timer pending at about now + 3000 ticks (wheel level 2, 64-tick buckets) is \
         re-armed again and again. `same_bucket`: alternately to `e + 1` and `e`, both in its \
         current bucket, the case the kernel's 2016 lock-free same-bucket `mod_timer()` check \
         exists for (a retransmit timer pushed out on every ACK). `new_bucket`: alternately \
         between `e` (level 2) and `e + 4096` (level 3), so every re-arm must requeue. \
         `three_buckets`: round `e + 4096`, `e + 8192` and `e`, never back to the bucket just \
         left, so every re-arm removes and inserts for real.",
    look_for: "`same_bucket` is utimer's cheapest path: no lock and no write. In `new_bucket` \
         the wheel keeps the entry a timer just left as a ghost and takes it back when the \
         timer returns, so moving back and forth costs it little. `three_buckets` is the full \
         price of moving a timer in the wheel (the lock, a removal, an insert and their \
         bookkeeping), to set beside the B-tree's remove + insert and tokio's `reset`.",
};

const EXPIRY: GroupDoc = GroupDoc {
    title: "Firing due timers",
    about: "N timers (1M; 100K with `--quick`) due over the next 64 ticks, all with empty \
         callbacks; time moves past them and the timed part is the expiry run that fires them \
         all, reported per timer. Arming is untimed; the real-clock peers (tokio) really wait \
         for the deadlines. The kernel fires its timers itself, so there is no user-space \
         expiry run to time and the kernel rows are skipped.",
    look_for: "The cost per fired timer. utimer's buckets are lists of 16-entry blocks, so an \
         expiry run prefetches the next block's timers while it runs the current block's; a \
         heap pays a sift-down per timer it pops, and the tokio timers wake and poll a task's \
         future per timer.",
};

const NEXT_EXPIRY: GroupDoc = GroupDoc {
    title: "Next expiry with a million timers pending",
    about: "\"When must I wake up?\", what an event loop asks before every sleep, with 1M \
         timers pending at random deadlines between 1 s and 2.8 h. Peers without such a query \
         are skipped.",
    look_for: "utimer keeps a per-worker summary word of its next event, so while nothing \
         changed the answer is one load, as a heap's peek is; a B-tree walks down to its first \
         entry.",
};

const ARM_CANCEL_PENDING: GroupDoc = GroupDoc {
    title: "Arm and cancel with timers pending",
    about: "The `arm_cancel` pattern with 1K and with 10M (1M with `--quick`) random \
         background timers pending, to show how the cost grows with the queue. The large fill \
         runs one implementation at a time to bound memory. Kernel timers (POSIX, timerfd) are \
         filled to 1K only: millions of kernel timers are not sensible, so their rows in the \
         large fill are skipped.",
    look_for: "A wheel arms and cancels in O(1) whatever its fill, so utimer's row should \
         barely move from 1K to the large fill, while a heap or a tree pays O(log n) plus \
         cache misses that grow with the queue.",
};

const MEMORY: GroupDoc = GroupDoc {
    title: "Memory per armed timer",
    about: "Heap bytes and allocations per armed timer with 1M timers armed, counted by the \
         counting global allocator on the measuring thread, the handle the user holds included \
         (the `Vec` of handles is allocated inside the measured window). The tokio alt timer's \
         rows are counted by its helper's allocator. Kernel memory is not visible to a \
         user-space allocator, so the kernel rows are skipped.",
    look_for: "utimer's figure is a timer header, the handle and its share of the wheel's \
         storage (buckets of 16-entry blocks). The heap and the B-tree store a bare entry per \
         timer and give no handle that can cancel or re-arm by itself; tokio's rows include \
         the boxed `Sleep` the user holds.",
};

const WHEEL: GroupDoc = GroupDoc {
    title: "The wheel alone",
    about: "The pure `utimer::wheel::Wheel` (no locks, no atomics) against `BinaryHeap` and \
         `BTreeMap`, the structures it replaces in a single-threaded event loop: arm + cancel \
         at now + 100 ticks with 1K timers pending.",
    look_for: "The data structure's own cost, without the locks and handles of a \
         `TimerSystem`: its difference to utimer's row in `arm_cancel_pending/1K` is what the \
         system around the wheel costs.",
};

/// The `arm_cancel` group: one timer armed and cancelled, nothing else
/// pending.
pub(crate) fn run_arm_cancel(r: &mut Runner) {
    if r.wants("arm_cancel", "empty") {
        r.enter_group(
            "arm_cancel",
            ARM_CANCEL,
            "arm one timer to now+100 ticks, cancel it; nothing else pending",
        );
    }
    r.case(
        "arm_cancel",
        "empty",
        Chart::Bars,
        Schedule::Interleaved,
        || {
            let mut rows = all_peers!(arm_cancel(0));
            rows.insert(1, arm_cancel::<OwnerUtimerPeer>(0));
            rows.insert(2, arm_cancel::<PinnedUtimerPeer>(0));
            with_alt(rows, alt_arm_cancel(0))
        },
    );
}

/// The `rearm` group: a pending timer re-armed within its bucket, to a new
/// bucket and round three buckets.
pub(crate) fn run_rearm(r: &mut Runner) {
    if r.wants_group("rearm", &["same_bucket", "new_bucket", "three_buckets"]) {
        r.enter_group(
            "rearm",
            REARM,
            "re-arm a pending timer at ~now+3000 ticks (wheel level 2)\n\
             same_bucket:   alternately to e+1 and e (same 64-tick bucket)\n\
             new_bucket:    alternately to e+4096 (level 3) and e\n\
             three_buckets: round e+4096, e+8192 (level 3) and e: never back to the bucket just left",
        );
    }
    r.case(
        "rearm",
        "same_bucket",
        Chart::Bars,
        Schedule::Interleaved,
        || {
            let mut rows = all_peers!(rearm(1));
            rows.insert(1, rearm::<OwnerUtimerPeer>(1));
            with_alt(rows, tokio_alt::batched(&["rearm", "1"]))
        },
    );
    r.case(
        "rearm",
        "new_bucket",
        Chart::Bars,
        Schedule::Interleaved,
        || {
            let mut rows = all_peers!(rearm(REARM_JUMP));
            rows.insert(1, rearm::<OwnerUtimerPeer>(REARM_JUMP));
            let alt = tokio_alt::batched(&["rearm", &REARM_JUMP.to_string()]);
            with_alt(rows, alt)
        },
    );
    r.case(
        "rearm",
        "three_buckets",
        Chart::Bars,
        Schedule::Interleaved,
        || {
            let mut rows = all_peers!(rearm_round(REARM_JUMP));
            rows.insert(1, rearm_round::<OwnerUtimerPeer>(REARM_JUMP));
            let alt = tokio_alt::batched(&["rearm_round", &REARM_JUMP.to_string()]);
            with_alt(rows, alt)
        },
    );
}

/// The `expiry` group: an expiry run firing 100K (quick) or 1M timers.
pub(crate) fn run_expiry(r: &mut Runner) {
    let expiry_n = r.pick(100_000, 1_000_000);
    let case = format!("{} due", human(expiry_n));
    if r.wants("expiry", &case) {
        r.enter_group(
            "expiry",
            EXPIRY,
            &format!(
                "fire {} timers due within 64 ticks, empty callbacks; ns per timer",
                human(expiry_n)
            ),
        );
    }
    r.case("expiry", &case, Chart::Bars, Schedule::Sequential, || {
        let kernel = "the kernel fires these itself; there is no user-space expiry run to time";
        vec![
            expiry::<UtimerPeer>(expiry_n),
            expiry::<OwnerUtimerPeer>(expiry_n),
            expiry::<TokioSleepPeer>(expiry_n),
            alt_expiry(expiry_n),
            expiry::<DelayQueuePeer>(expiry_n),
            expiry::<HeapPeer>(expiry_n),
            expiry::<BTreePeer>(expiry_n),
            Contender::skip(PosixPeer::<false>::NAME, kernel),
            Contender::skip(PosixPeer::<true>::NAME, kernel),
            Contender::skip(TimerFdPeer::NAME, kernel),
        ]
    });
}

/// The `next_expiry` group: the earliest deadline among 1M pending timers.
pub(crate) fn run_next_expiry(r: &mut Runner) {
    let next_n = 1_000_000;
    let case = format!("{} pending", human(next_n));
    if r.wants("next_expiry", &case) {
        r.enter_group(
            "next_expiry",
            NEXT_EXPIRY,
            "earliest pending expiry with 1M timers at random deadlines (1 s .. 2.8 h)",
        );
    }
    r.case(
        "next_expiry",
        &case,
        Chart::Bars,
        Schedule::Sequential,
        || {
            let alt = Contender::skip(tokio_alt::NAME, "no next-expiry API");
            with_alt(all_peers!(next_expiry(next_n)), alt)
        },
    );
}

/// The `arm_cancel_pending` group: arm and cancel with 1K and 1M (quick)
/// or 10M background timers pending.
pub(crate) fn run_arm_cancel_pending(r: &mut Runner) {
    let big = r.pick(1_000_000, 10_000_000);
    let big_case = human(big);
    if r.wants_group("arm_cancel_pending", &["1K", &big_case]) {
        r.enter_group(
            "arm_cancel_pending",
            ARM_CANCEL_PENDING,
            &format!(
                "arm+cancel (now+100) with 1K and {big_case} random background timers pending"
            ),
        );
        if r.quick {
            r.note(
                "arm_cancel_pending",
                "quick mode: 1M instead of 10M pending timers",
            );
        }
        r.note(
            "arm_cancel_pending",
            "kernel timers (POSIX, timerfd) are only filled to 1K: millions of kernel timers are not sensible",
        );
    }
    r.case(
        "arm_cancel_pending",
        "1K",
        Chart::Bars,
        Schedule::Interleaved,
        || with_alt(all_peers!(arm_cancel(1_000)), alt_arm_cancel(1_000)),
    );
    r.case(
        "arm_cancel_pending",
        &big_case,
        Chart::Bars,
        Schedule::Sequential,
        || with_alt(all_peers!(arm_cancel(big)), alt_arm_cancel(big)),
    );
}

/// The `memory` group: heap bytes and allocations per armed timer.
pub(crate) fn run_memory(r: &mut Runner) {
    let mem_n = 1_000_000;
    if r.wants_group("memory", &["bytes_per_timer", "allocs_per_timer"]) {
        r.enter_group(
            "memory",
            MEMORY,
            "heap bytes and allocations per armed timer (1M armed), handle included; \
             counting allocator",
        );
        let rows: Vec<[Record; 2]> = vec![
            memory::<UtimerPeer>(r, mem_n),
            memory::<TokioSleepPeer>(r, mem_n),
            alt_memory(r, mem_n),
            memory::<DelayQueuePeer>(r, mem_n),
            memory::<HeapPeer>(r, mem_n),
            memory::<BTreePeer>(r, mem_n),
            memory::<PosixPeer<false>>(r, mem_n),
            memory::<PosixPeer<true>>(r, mem_n),
            memory::<TimerFdPeer>(r, mem_n),
        ];
        let (bytes, allocs): (Vec<Record>, Vec<Record>) =
            rows.into_iter().map(|[a, b]| (a, b)).unzip();
        r.values("memory", "bytes_per_timer", Chart::Bars, bytes);
        r.values("memory", "allocs_per_timer", Chart::Bars, allocs);
    }
}

/// The `wheel` group: the bare wheel against the structures it replaces.
pub(crate) fn run_wheel(r: &mut Runner) {
    if r.wants("wheel", "arm_cancel_1K") {
        r.enter_group(
            "wheel",
            WHEEL,
            "the pure utimer::wheel::Wheel (no locks) vs the structures it replaces;\n\
             arm+cancel (now+100) with 1K pending",
        );
    }
    r.case(
        "wheel",
        "arm_cancel_1K",
        Chart::Bars,
        Schedule::Interleaved,
        || {
            vec![
                arm_cancel::<WheelPeer>(1_000),
                arm_cancel::<HeapPeer>(1_000),
                arm_cancel::<BTreePeer>(1_000),
            ]
        },
    );
}
