//! A soak: threads hammering timers on a [`Runtime`] with a random mix of
//! arms, re-arms, `reduce`, `delete`, `delete_sync`, dropped handles,
//! self-re-arming callbacks and (from thread 0, now and then) a worker
//! taken offline and brought back, plus a few hrtimers per thread. It
//! checks, and prints in one line:
//!
//! * no early firing: a callback runs at or after the instant its expiry's
//!   tick begins (hrtimers: the run's clock reading is at or after the
//!   expiry);
//! * no double firing: every callback consumes one arm that was on the
//!   wheel, and callbacks of one timer never overlap;
//! * no lost timer: every arm left on the wheel fires once the threads stop,
//!   `delete_sync` never finds an arm that neither fired nor was pending,
//!   and every hrtimer still fires when started once more at the end;
//! * balanced books: the system's counters (`Metrics::totals`,
//!   `hr_stats`) match what the threads did: armed, fired, deleted (a
//!   dropped handle's pending arm counts as deleted) and nothing pending.
//!
//! Each timer has one owner thread, which keeps what it believes about the
//! timer (the arm it left queued, an arm the expiry took off but whose
//! callback has not run yet) under a mutex that the callback takes too; the
//! value each call returns ("was it pending?") tells the owner which. A
//! violation is any contradiction between those beliefs and what happens.
//!
//! `cargo run --release -p utimer --example soak -- --threads 8 --ops
//! 200000 --seed 1` (ci/soak.sh runs it). Exits 1 on any violation.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};
use utimer::{ClockId, Expiry, HrRestart, HrTimer, Runtime, Timer, TimerFlags, TimerSystem};

const TIMERS_PER_THREAD: usize = 1024;
const HRTIMERS_PER_THREAD: usize = 4;
/// Expiries are up to this many ticks ahead; half of them at most `NEAR`,
/// so that many fire before their owner touches them again.
const SPREAD: u64 = 40;
const NEAR: u64 = 3;
/// How long the end waits for the last arms to fire: far beyond `SPREAD`
/// ticks, for a loaded machine.
const DRAIN: Duration = Duration::from_secs(20);

struct Args {
    threads: usize,
    ops: u64,
    seed: u64,
    workers: usize,
    /// Whether thread 0 takes workers offline and back.
    hotplug: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        threads: 8,
        ops: 200_000,
        seed: 1,
        workers: 4,
        hotplug: true,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let n: u64 = value
            .replace('_', "")
            .parse()
            .map_err(|e| format!("{flag} {value}: {e}"))?;
        match flag.as_str() {
            "--threads" => a.threads = n as usize,
            "--ops" => a.ops = n,
            "--seed" => a.seed = n,
            "--workers" => a.workers = n as usize,
            "--hotplug" => a.hotplug = n != 0,
            _ => return Err(format!("unknown argument {flag}")),
        }
    }
    if a.threads == 0 || a.workers < 2 {
        return Err("--threads must be at least 1 and --workers at least 2".into());
    }
    Ok(a)
}

/// splitmix64: a seed per thread, then xorshift-free 64-bit outputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Counters of what happened and of every violation found.
#[derive(Default)]
struct Books {
    /// Arms of a timer that was not pending (what `BaseStats::armed` counts).
    arms: AtomicU64,
    fires: AtomicU64,
    /// `delete`/`delete_sync` that found the timer pending.
    cancels: AtomicU64,
    drops: AtomicU64,
    hotplugs: AtomicU64,
    moved: AtomicU64,
    hr_starts: AtomicU64,
    hr_fires: AtomicU64,
    early: AtomicU64,
    double: AtomicU64,
    overlap: AtomicU64,
    lost: AtomicU64,
    /// A call's answer contradicts the owner's beliefs (e.g. "was pending"
    /// for a timer nobody armed), or a call failed.
    inconsistent: AtomicU64,
}

/// Counts a violation; the first few are described on stderr.
fn flag(c: &AtomicU64, line: u32) {
    static SHOWN: AtomicU64 = AtomicU64::new(0);
    c.fetch_add(1, Relaxed);
    if SHOWN.fetch_add(1, Relaxed) < 20 {
        eprintln!("soak: violation found at soak.rs:{line}");
    }
}

/// [`flag`], with the timer's belief and last events.
fn flag_b(c: &AtomicU64, line: u32, b: &Belief) {
    flag(c, line);
    let hist: Vec<_> = (0..12).map(|k| b.hist[(b.at + k) % 12]).collect();
    eprintln!(
        "  queued {:?} dequeued {:?} maybe {:?} running {} dropped {}; last events (op, result, expiry, tick): {hist:?}",
        b.queued, b.dequeued, b.maybe, b.running, b.dropped
    );
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Relaxed);
}

/// The tick-to-instant map of the system's monotonic clock, for callbacks
/// (which must not own the system).
#[derive(Copy, Clone)]
struct Ticks {
    origin: Instant,
    tick: Duration,
}

impl Ticks {
    fn instant(&self, tick: u64) -> Instant {
        self.origin + Duration::from_nanos(self.tick.as_nanos() as u64 * tick)
    }

    fn now(&self) -> u64 {
        (self.origin.elapsed().as_nanos() / self.tick.as_nanos()) as u64
    }
}

/// What a timer's owner believes about it. The owner changes it only
/// while holding the lock across the call (except around `delete_sync`,
/// which waits for the callback, which takes the lock); the callback
/// changes it under the lock too.
#[derive(Default, Debug)]
struct Belief {
    /// The last events: (what, result, expiry, tick then).
    hist: [(char, i8, u64, u64); 12],
    at: usize,
    /// The expiry tick of the arm left on the wheel.
    queued: Option<u64>,
    /// An arm the expiry took off the wheel whose callback has not run yet
    /// (the owner learned of it when a call found the timer not pending).
    dequeued: Option<u64>,
    /// The handle was dropped while `queued`: the drop cancelled it, or its
    /// callback runs once more.
    maybe: Option<u64>,
    /// A callback is running.
    running: bool,
    /// The next callback re-arms the timer once from inside.
    rearm: bool,
    /// The handle was dropped.
    dropped: bool,
    /// The owner is inside `delete_sync` (called without the lock): the
    /// callback may run meanwhile, and `queued` may already be cancelled.
    syncing: bool,
    /// Arms that the `delete_sync` in progress cancelled before the
    /// callback's re-arm replaced them (see `on_fire`).
    sync_cancelled: u64,
}

impl Belief {
    fn note(&mut self, what: char, result: i8, e: u64, now: u64) {
        self.hist[self.at % 12] = (what, result, e, now);
        self.at += 1;
    }
}

struct Shared {
    books: Books,
    ticks: Ticks,
}

/// A timer's belief, and whether its callback runs (outside the lock, so
/// that two callbacks at once show even while one waits for the lock).
#[derive(Default)]
struct Track {
    belief: Mutex<Belief>,
    in_callback: AtomicBool,
}

fn lock(t: &Track) -> MutexGuard<'_, Belief> {
    t.belief.lock().unwrap_or_else(|e| e.into_inner())
}

/// The callback: consumes the oldest arm outstanding and checks it.
fn on_fire(shared: &Shared, track: &Track, t: &Timer) {
    let books = &shared.books;
    if track.in_callback.swap(true, Relaxed) {
        bump(&books.overlap);
    }
    let mut b = lock(track);
    if b.running {
        bump(&books.overlap);
    }
    b.running = true;
    bump(&books.fires);
    let consumed = b
        .dequeued
        .take()
        .or_else(|| b.queued.take())
        .or_else(|| b.maybe.take());
    let now = shared.ticks.now();
    b.note('F', consumed.is_some() as i8, consumed.unwrap_or(0), now);
    match consumed {
        None => flag_b(&books.double, line!(), &b),
        Some(e) => {
            if Instant::now() < shared.ticks.instant(e) {
                flag_b(&books.early, line!(), &b);
            }
        }
    }
    if std::mem::take(&mut b.rearm) && !b.dropped {
        let e = shared.ticks.now() + 1 + (e_hash(t) % SPREAD);
        let r = t.modify(Expiry::Tick(e));
        b.note('R', r.map_or(-1, |w| w as i8), e, now);
        match r {
            Ok(was) => {
                // Pending only if the owner re-armed it since the expiry
                // took it off (then `queued` holds that arm, replaced now).
                // Except while the owner is inside `delete_sync`, which
                // runs without the lock: it may have cancelled that arm
                // already (the expiry cannot have taken it: this run is
                // busy with this very callback), and it will cancel this
                // re-arm too unless it fires first. The library promises
                // only that when `delete_sync` returns the timer is neither
                // pending nor running; the owner settles the count then.
                if !was && b.queued.is_some() && b.syncing {
                    b.queued = None;
                    b.sync_cancelled += 1;
                } else if was != b.queued.is_some() {
                    flag_b(&books.inconsistent, line!(), &b);
                }
                if !was {
                    bump(&books.arms);
                }
                b.queued = Some(e);
            }
            Err(_) => flag_b(&books.inconsistent, line!(), &b),
        }
    }
    b.running = false;
    drop(b);
    track.in_callback.store(false, Relaxed);
}

/// Some spread for the callback's re-arm, without an RNG in the callback.
fn e_hash(t: &Timer) -> u64 {
    t.expires().wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40
}

struct Slot {
    belief: Arc<Track>,
    timer: Timer,
}

fn new_slot(sys: &TimerSystem, shared: &Arc<Shared>, pinned: bool) -> Slot {
    let belief = Arc::new(Track::default());
    let (s, b) = (shared.clone(), belief.clone());
    let flags = if pinned {
        TimerFlags::PINNED
    } else {
        TimerFlags::NONE
    };
    let timer = sys.timer_with_flags(flags, move |t| on_fire(&s, &b, t));
    Slot { belief, timer }
}

struct Hr {
    timer: HrTimer,
    fires: Arc<AtomicU64>,
}

fn new_hr(sys: &TimerSystem, shared: &Arc<Shared>, worker: usize) -> Hr {
    let fires = Arc::new(AtomicU64::new(0));
    let running = Arc::new(AtomicBool::new(false));
    let (s, f) = (shared.clone(), fires.clone());
    let timer = sys
        .hrtimer_on(worker, ClockId::Monotonic, move |fire| {
            if running.swap(true, Relaxed) {
                bump(&s.books.overlap);
            }
            if fire.now() < fire.expires() {
                bump(&s.books.early);
            }
            f.fetch_add(1, Relaxed);
            bump(&s.books.hr_fires);
            running.store(false, Relaxed);
            HrRestart::NoRestart
        })
        .expect("worker in range");
    Hr { timer, fires }
}

/// An owner's call found the timer not pending: the arm it believed queued
/// was taken off by the expiry, and its callback runs (or ran) for it.
fn taken_off(b: &mut Belief, books: &Books) {
    if let Some(q) = b.queued.take() {
        // The expiry cannot take a timer off while its previous callback
        // has yet to run (callbacks of one timer never overlap).
        if b.dequeued.replace(q).is_some() {
            flag_b(&books.inconsistent, line!(), b);
        }
    }
}

/// What one thread hands back: its live timers, the beliefs of the timers
/// it dropped, its hrtimers.
struct Owned {
    slots: Vec<Slot>,
    dropped: Vec<Arc<Track>>,
    hrs: Vec<Hr>,
}

fn owner(sys: Arc<TimerSystem>, shared: Arc<Shared>, id: usize, args: &Args) -> Owned {
    let books = &shared.books;
    let mut rng = Rng(args.seed ^ (id as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03));
    // Half the threads arm on a worker they are bound to; the others on
    // their home worker, as any outside thread does.
    let _bound = id
        .is_multiple_of(2)
        .then(|| sys.enter(id / 2 % sys.workers()).unwrap());
    let mut slots: Vec<Slot> = (0..TIMERS_PER_THREAD)
        .map(|i| new_slot(&sys, &shared, i % 8 == 0))
        .collect();
    let mut dropped = Vec::new();
    let hrs: Vec<Hr> = (0..HRTIMERS_PER_THREAD)
        .map(|i| new_hr(&sys, &shared, (id + i) % sys.workers()))
        .collect();
    let mut offline: Option<usize> = None;
    let hotplug_every = (args.ops / 40).max(1000);
    for op in 0..args.ops {
        if id == 0 && args.hotplug && op % hotplug_every == hotplug_every / 2 {
            hotplug(&sys, books, &mut offline, &mut rng);
        }
        let r = rng.next();
        let i = (r % TIMERS_PER_THREAD as u64) as usize;
        let ahead = if r & 1 << 21 != 0 { NEAR } else { SPREAD };
        let e = if r & 1 << 20 != 0 {
            sys.now() + (r >> 32) % ahead
        } else {
            sys.deadline(Duration::from_micros((r >> 32) % (ahead * 1000)))
        };
        let slot = &mut slots[i];
        match (r >> 8) % 100 {
            0..=29 => {
                let mut b = lock(&slot.belief);
                let res = slot.timer.modify(Expiry::Tick(e));
                b.note('M', res.map_or(-1, |w| w as i8), e, sys.now());
                match res {
                    Ok(true) if b.queued.is_none() => flag_b(&books.inconsistent, line!(), &b),
                    Ok(true) => {}
                    Ok(false) => {
                        taken_off(&mut b, books);
                        bump(&books.arms);
                    }
                    Err(_) => flag_b(&books.inconsistent, line!(), &b),
                }
                b.queued = Some(e);
                // Now and then the callback re-arms it once from inside.
                b.rearm = (r >> 40).is_multiple_of(16);
            }
            30..=44 => {
                let mut b = lock(&slot.belief);
                let res = slot.timer.modify_pending(Expiry::Tick(e));
                b.note('P', res.map_or(-1, |w| w as i8), e, sys.now());
                match res {
                    Ok(true) if b.queued.is_none() => flag_b(&books.inconsistent, line!(), &b),
                    Ok(true) => b.queued = Some(e),
                    Ok(false) => taken_off(&mut b, books),
                    Err(_) => flag_b(&books.inconsistent, line!(), &b),
                }
            }
            45..=59 => {
                let mut b = lock(&slot.belief);
                let res = slot.timer.reduce(Expiry::Tick(e));
                b.note('U', res.map_or(-1, |w| w as i8), e, sys.now());
                match res {
                    // Fires at the earlier of the two, never later: the
                    // smaller expiry is the bound for "never early".
                    Ok(true) => match b.queued {
                        Some(q) => b.queued = Some(q.min(e)),
                        None => flag_b(&books.inconsistent, line!(), &b),
                    },
                    Ok(false) => {
                        taken_off(&mut b, books);
                        bump(&books.arms);
                        b.queued = Some(e);
                    }
                    Err(_) => flag_b(&books.inconsistent, line!(), &b),
                }
            }
            60..=79 => {
                let mut b = lock(&slot.belief);
                let res = slot.timer.delete();
                b.note('D', res as i8, 0, sys.now());
                if res {
                    if b.queued.take().is_none() {
                        flag_b(&books.inconsistent, line!(), &b);
                    }
                    bump(&books.cancels);
                } else {
                    taken_off(&mut b, books);
                }
            }
            80..=91 => {
                // Not under the lock: it waits for the callback, which
                // takes it. Meanwhile the callback may consume arms and
                // re-arm the timer, and `delete_sync` (which loops until
                // the callback is done) cancels such a re-arm too: it may
                // cancel more than one arm, and "was pending" says whether
                // it cancelled any.
                lock(&slot.belief).syncing = true;
                let was = slot.timer.delete_sync();
                let mut b = lock(&slot.belief);
                b.syncing = false;
                b.note('S', was.map_or(-1, |w| w as i8), 0, sys.now());
                // Neither pending nor running now: what is still queued was
                // cancelled, as were the arms the callback's re-arm found
                // cancelled.
                let cancelled = std::mem::take(&mut b.sync_cancelled) + b.queued.is_some() as u64;
                b.queued = None;
                match was {
                    Ok(true) if cancelled == 0 => flag_b(&books.inconsistent, line!(), &b),
                    // Not pending: whatever was queued has fired by now.
                    Ok(false) if cancelled > 0 => flag_b(&books.lost, line!(), &b),
                    Ok(_) => {}
                    Err(_) => flag_b(&books.inconsistent, line!(), &b),
                }
                books.cancels.fetch_add(cancelled, Relaxed);
                // No callback is running or owed now.
                if b.dequeued.take().is_some() {
                    flag_b(&books.lost, line!(), &b);
                }
                if b.running {
                    bump(&books.overlap);
                }
            }
            92..=95 => {
                // Drop the handle (cancels without waiting) and replace it.
                let fresh = new_slot(&sys, &shared, i.is_multiple_of(8));
                let old = std::mem::replace(slot, fresh);
                let mut b = lock(&old.belief);
                drop(old.timer);
                b.maybe = b.queued.take();
                b.dropped = true;
                drop(b);
                bump(&books.drops);
                dropped.push(old.belief);
            }
            _ => {
                let h = &hrs[(r >> 40) as usize % HRTIMERS_PER_THREAD];
                match (r >> 48) % 4 {
                    0 | 1 => {
                        let d = Duration::from_micros((r >> 52) % (NEAR * 1000));
                        if h.timer.start_after(d).is_err() {
                            flag(&books.inconsistent, line!());
                        }
                        bump(&books.hr_starts);
                    }
                    2 => drop(h.timer.try_cancel()),
                    _ => {
                        if h.timer.cancel().is_err() {
                            flag(&books.inconsistent, line!());
                        }
                    }
                }
            }
        }
    }
    if let Some(w) = offline {
        if sys.online(w).is_err() {
            flag(&books.inconsistent, line!());
        }
    }
    Owned {
        slots,
        dropped,
        hrs,
    }
}

/// Takes a random worker offline, or brings the offline one back.
fn hotplug(sys: &TimerSystem, books: &Books, offline: &mut Option<usize>, rng: &mut Rng) {
    let result = match offline.take() {
        Some(w) => sys.online(w),
        None => {
            let w = rng.below(sys.workers() as u64) as usize;
            *offline = Some(w);
            sys.offline(w).map(|moved| {
                books.moved.fetch_add(moved as u64, Relaxed);
            })
        }
    };
    match result {
        Ok(()) => bump(&books.hotplugs),
        Err(_) => flag(&books.inconsistent, line!()),
    }
}

/// Arms still owed a callback: live timers with an arm queued or taken
/// off, dropped ones with an arm taken off (their `maybe` may have been
/// cancelled by the drop).
fn owed(all: &[Owned]) -> u64 {
    let live = all.iter().flat_map(|o| &o.slots).filter(|s| {
        let b = lock(&s.belief);
        b.queued.is_some() || b.dequeued.is_some()
    });
    let dropped = all
        .iter()
        .flat_map(|o| &o.dropped)
        .filter(|b| lock(b).dequeued.is_some());
    (live.count() + dropped.count()) as u64
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("soak: {e}\nusage: soak [--threads N] [--ops N] [--seed N] [--workers N]");
            return ExitCode::from(2);
        }
    };
    let rt = Runtime::with_builder(TimerSystem::builder().workers(args.workers).stats(true))
        .expect("runtime");
    let sys = rt.system_arc();
    let ticks = Ticks {
        origin: sys.instant_of(0).expect("monotonic clock"),
        tick: sys.tick(),
    };
    let shared = Arc::new(Shared {
        books: Books::default(),
        ticks,
    });
    let start = Instant::now();
    let args = Arc::new(args);
    let threads: Vec<_> = (0..args.threads)
        .map(|id| {
            let (sys, shared, args) = (sys.clone(), shared.clone(), args.clone());
            thread::Builder::new()
                .name(format!("soak-{id}"))
                .spawn(move || owner(sys, shared, id, &args))
                .expect("spawn")
        })
        .collect();
    let all: Vec<Owned> = threads
        .into_iter()
        .map(|t| t.join().expect("soak thread panicked"))
        .collect();
    let ops_time = start.elapsed();
    let books = &shared.books;

    // Every arm left on the wheel fires.
    let give_up = Instant::now() + DRAIN;
    while owed(&all) > 0 && Instant::now() < give_up {
        thread::sleep(Duration::from_millis(5));
    }
    books.lost.fetch_add(owed(&all), Relaxed);

    // Every hrtimer still fires, once, when started again.
    let before: Vec<u64> = all
        .iter()
        .flat_map(|o| &o.hrs)
        .map(|h| {
            let _ = h.timer.cancel();
            let n = h.fires.load(Relaxed);
            if h.timer.start_after(Duration::from_millis(1)).is_err() {
                flag(&books.inconsistent, line!());
            }
            n
        })
        .collect();
    let hrs: Vec<&Hr> = all.iter().flat_map(|o| &o.hrs).collect();
    while hrs.iter().any(|h| h.timer.is_active()) && Instant::now() < give_up + DRAIN {
        thread::sleep(Duration::from_millis(5));
    }
    for (h, n) in hrs.iter().zip(&before) {
        match h.fires.load(Relaxed) - n {
            1 => {}
            0 => flag(&books.lost, line!()),
            _ => flag(&books.double, line!()),
        }
    }

    // The books: what the system counted against what the threads did. A
    // dropped handle whose arm never fired was cancelled by the drop.
    let drop_cancels = all
        .iter()
        .flat_map(|o| &o.dropped)
        .filter(|b| lock(b).maybe.is_some())
        .count() as u64;
    let s = sys.metrics().totals();
    let (mut hr_fired, mut hr_pending) = (0, 0);
    for w in 0..sys.workers() {
        let h = sys.metrics().hr_stats(w).expect("worker");
        hr_fired += h.fired;
        hr_pending += h.pending;
    }
    let (arms, fires, cancels) = (
        books.arms.load(Relaxed),
        books.fires.load(Relaxed),
        books.cancels.load(Relaxed),
    );
    let mut unbalanced = Vec::new();
    if s.armed != arms {
        unbalanced.push(format!("armed {} != {arms} arms", s.armed));
    }
    if s.fired != fires {
        unbalanced.push(format!("fired {} != {fires} callbacks", s.fired));
    }
    if s.deleted != cancels + drop_cancels {
        unbalanced.push(format!(
            "deleted {} != {cancels} cancels + {drop_cancels} dropped",
            s.deleted
        ));
    }
    if s.pending != 0 || s.armed != s.fired + s.deleted + s.pending {
        unbalanced.push(format!("{s:?}"));
    }
    if hr_fired != books.hr_fires.load(Relaxed) || hr_pending != 0 {
        unbalanced.push(format!(
            "hr fired {hr_fired} != {} callbacks, {hr_pending} pending",
            books.hr_fires.load(Relaxed)
        ));
    }
    drop(all);
    drop(sys);
    rt.shutdown();

    let bad = |c: &AtomicU64| c.load(Relaxed);
    let violations = bad(&books.early)
        + bad(&books.double)
        + bad(&books.overlap)
        + bad(&books.lost)
        + bad(&books.inconsistent)
        + unbalanced.len() as u64;
    println!(
        "soak: {} threads x {} ops, seed {}, {} workers, {:.1} s (+{:.1} s drain): \
         arms {arms} fires {fires} cancels {cancels} drop-cancels {drop_cancels} drops {} \
         hotplugs {} (moved {}) hr-starts {} hr-fires {} | early {} double {} overlap {} \
         lost {} inconsistent {} books {}",
        args.threads,
        args.ops,
        args.seed,
        args.workers,
        ops_time.as_secs_f64(),
        (start.elapsed() - ops_time).as_secs_f64(),
        bad(&books.drops),
        bad(&books.hotplugs),
        bad(&books.moved),
        bad(&books.hr_starts),
        bad(&books.hr_fires),
        bad(&books.early),
        bad(&books.double),
        bad(&books.overlap),
        bad(&books.lost),
        bad(&books.inconsistent),
        if unbalanced.is_empty() {
            "balanced".to_string()
        } else {
            format!("UNBALANCED: {}", unbalanced.join("; "))
        },
    );
    if violations > 0 {
        println!("soak: FAILED ({violations} violations)");
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
