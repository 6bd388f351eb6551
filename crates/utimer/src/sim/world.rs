//! The simulated world: virtual workers driving the real idle loop,
//! expiry runs, hierarchy, monitor and hot-plug of one `TimerSystem` on a
//! manual clock, and the checks run after every tick (see `mod.rs`).

use super::{Rng, SimConfig, SimFailure, SimReport, Tally};
use crate::migration::Topology;
use crate::nohz::Nohz;
use crate::time::Clock;
use crate::timer_list::base::Bases;
use crate::{Timer, TimerFlags, TimerSystem};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// `pinned_armed_on` while a hot-unplug moves timers: any worker may be
/// woken for a pinned timer that lands on it.
const ANY_WORKER: u64 = u64::MAX - 1;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Phase {
    Busy,
    /// No tick points until this tick.
    Stalled(u64),
    Idle {
        wake_at: Option<u64>,
        local: Option<u64>,
        last: bool,
    },
}

struct SimTimer {
    timer: Timer,
    fired: Arc<AtomicU64>,
    fired_at: Arc<AtomicU64>,
    pinned: bool,
    owner: usize,
    expires: u64,
    fires_at: u64,
    cancelled: bool,
}

pub(crate) struct Sim {
    sys: TimerSystem,
    clock: Clock,
    rng: Rng,
    cfg: SimConfig,
    phase: Vec<Phase>,
    woken: Vec<Arc<AtomicBool>>,
    /// Pinned timers armed on a worker from outside this tick: its waker
    /// may be called for them.
    pinned_armed_on: Arc<AtomicU64>,
    timers: Vec<SimTimer>,
    report: SimReport,
    entry: (Tally, Tally),
    exit: (Tally, Tally),
    timer_wakeups: u64,
    /// Stall episodes: (worker, its last tick point, tick it ended).
    stalls: Vec<(usize, u64, u64)>,
    monitor_next: Option<u64>,
    monitor_token: u32,
    now: u64,
}

impl Sim {
    pub(crate) fn new(cfg: SimConfig) -> Sim {
        // A simulation that ran before on this thread called its wakers
        // when its system shut down (at its drop): not this one's.
        WRONG_WAKE.with(|c| c.set(None));
        let clock = Clock::manual();
        let sys = TimerSystem::builder()
            .workers(cfg.workers)
            .clock(clock.clone())
            .topology(Topology::uniform(cfg.workers, cfg.nodes))
            .stall_bound(cfg.stall_bound)
            .build_without_threads();
        let n = sys.workers();
        let pinned_armed_on = Arc::new(AtomicU64::new(u64::MAX));
        let mut woken = Vec::new();
        let core = sys.core();
        for w in 0..n {
            let flag = Arc::new(AtomicBool::new(false));
            let (f, pinned, nohz) = (
                flag.clone(),
                pinned_armed_on.clone(),
                Arc::downgrade(&core.nohz),
            );
            core.nohz.swap_waker(
                w,
                Some(Arc::new(move || {
                    // Woken for a pinned timer armed on it, or with nobody
                    // active (the duty of the last idle worker).
                    let armed_on = pinned.load(Relaxed);
                    let legit = armed_on == w as u64
                        || armed_on == ANY_WORKER
                        || nohz.upgrade().is_none_or(|n| !n.hier.top_active());
                    if !legit {
                        if TRACE.with(|t| *t) {
                            eprintln!("{}", std::backtrace::Backtrace::force_capture());
                        }
                        f.store(false, Relaxed);
                        WRONG_WAKE.with(|c| c.set(Some(w)));
                        return;
                    }
                    f.store(true, Relaxed);
                })),
            );
            core.nohz.hier.join(w, 0);
            woken.push(flag);
        }
        let token = core.nohz.monitor.token();
        Sim {
            sys,
            clock,
            rng: Rng(cfg.seed ^ 0x5EED),
            report: SimReport {
                workers: n,
                ..SimReport::default()
            },
            cfg,
            phase: vec![Phase::Busy; n],
            woken,
            pinned_armed_on,
            timers: Vec::new(),
            entry: Default::default(),
            exit: Default::default(),
            timer_wakeups: 0,
            stalls: Vec::new(),
            monitor_next: Some(1),
            monitor_token: token,
            now: 0,
        }
    }

    fn parts(&self) -> (&Bases, &Nohz) {
        let core = self.sys.core();
        (&core.bases, &core.nohz)
    }

    fn fail(&self, what: String) -> SimFailure {
        SimFailure {
            seed: self.cfg.seed,
            tick: self.now,
            what,
        }
    }

    /// Arms a timer on worker `w`'s base (as its thread or from outside).
    fn arm(&mut self, w: usize, pinned: bool) -> Result<(), SimFailure> {
        let fired = Arc::new(AtomicU64::new(0));
        let fired_at = Arc::new(AtomicU64::new(0));
        let (f, at, clock) = (fired.clone(), fired_at.clone(), self.clock.clone());
        let flags = if pinned {
            TimerFlags::PINNED
        } else {
            TimerFlags::NONE
        };
        let delta = match self.rng.below(10) {
            0..=5 => 1 + self.rng.below(64),
            6..=8 => 64 + self.rng.below(1_000),
            _ => 1_000 + self.rng.below(5_000),
        };
        let expires = self.now + delta;
        let expires_for_trace = expires;
        let _enter = self.sys.enter(w).map_err(|e| self.fail(e.to_string()))?;
        let timer = self.sys.timer_with_flags(flags, move |_| {
            f.fetch_add(1, Relaxed);
            at.store(clock.advance(0), Relaxed);
            if TRACE.with(|t| *t) {
                eprintln!("  fired (armed for {expires_for_trace})");
            }
        });
        if TRACE.with(|t| *t) {
            eprintln!(
                "t={} arm on {w} pinned={pinned} expires={expires}",
                self.now
            );
        }
        // An offline worker's arms land on the next online one.
        let lands_on = (0..self.phase.len())
            .map(|d| (w + d) % self.phase.len())
            .find(|&o| self.sys.is_online(o))
            .unwrap_or(w);
        self.pinned_armed_on
            .store(if pinned { lands_on as u64 } else { u64::MAX }, Relaxed);
        let armed = timer.modify(crate::Expiry::Tick(expires));
        self.pinned_armed_on.store(u64::MAX, Relaxed);
        armed.map_err(|e| self.fail(format!("arm: {e}")))?;
        let fires_at = timer
            .fires_at()
            .ok_or_else(|| self.fail("armed timer not pending".into()))?;
        self.timers.push(SimTimer {
            timer,
            fired,
            fired_at,
            pinned,
            owner: w,
            expires,
            fires_at,
            cancelled: false,
        });
        self.report.timers_armed += 1;
        Ok(())
    }

    fn go_idle(&mut self, w: usize) {
        let (bases, nohz) = self.parts();
        let before = nohz.hier.stats(w);
        let next = nohz.idle_enter(bases, w);
        let after = nohz.hier.stats(w);
        self.entry.0.add(after.cas - before.cas);
        self.entry.1.add(after.locks - before.locks);
        self.report.idle_entries += 1;
        self.phase[w] = Phase::Idle {
            wake_at: next.earliest(),
            local: next.local,
            last: next.global.is_some(),
        };
    }

    fn wake(&mut self, w: usize) {
        let (bases, nohz) = self.parts();
        let before = nohz.hier.stats(w);
        nohz.idle_exit(bases, w);
        let after = nohz.hier.stats(w);
        self.exit.0.add(after.cas - before.cas);
        self.exit.1.add(after.locks - before.locks);
        self.woken[w].store(false, Relaxed);
        self.phase[w] = Phase::Busy;
    }

    fn tick_point(&mut self, w: usize) {
        let (bases, nohz) = self.parts();
        nohz.run_expired(bases, w, self.now);
    }

    /// One tick: every worker acts, the monitor runs, then the checks.
    pub(crate) fn step(&mut self, arming: bool) -> Result<(), SimFailure> {
        self.now += 1;
        self.clock.set(self.now);
        let n = self.phase.len();
        let start = self.rng.below(n as u64) as usize;
        // A stride coprime with n visits every worker once.
        let mut stride = [1, 3, 5, 7, 11, 13][self.rng.below(6) as usize];
        while gcd(stride, n) != 1 {
            stride -= 2;
        }
        for i in 0..n {
            let w = (start + i * stride) % n;
            self.act(w, arming)?;
        }
        // Arms from outside onto idle workers' bases.
        if arming {
            for _ in 0..1 + n / 64 {
                let w = self.rng.below(n as u64) as usize;
                let pinned = self.rng.chance(100);
                self.arm(w, pinned)?;
            }
        }
        if arming && self.rng.chance(3) {
            self.hotplug()?;
        }
        self.run_monitor();
        if let Some(w) = WRONG_WAKE.with(|c| c.take()) {
            return Err(self.fail(format!(
                "worker {w}'s waker was called with workers active and no pinned timer armed on it"
            )));
        }
        self.sys
            .metrics()
            .check_hierarchy()
            .map_err(|e| self.fail(e))?;
        self.check_timers(false)
    }

    /// Takes a random worker offline (if another stays online), or brings
    /// an offline one back.
    fn hotplug(&mut self) -> Result<(), SimFailure> {
        let n = self.phase.len();
        let w = self.rng.below(n as u64) as usize;
        if TRACE.with(|t| *t) {
            eprintln!(
                "t={} hotplug {w} (online: {})",
                self.now,
                self.sys.is_online(w)
            );
        }
        if self.sys.is_online(w) {
            if (0..n).filter(|&o| self.sys.is_online(o)).count() < 2 {
                return Ok(());
            }
            // Moved pinned timers may wake the worker they land on.
            self.pinned_armed_on.store(ANY_WORKER, Relaxed);
            let moved = self.sys.offline(w);
            self.pinned_armed_on.store(u64::MAX, Relaxed);
            moved.map_err(|e| self.fail(format!("offline({w}): {e}")))?;
        } else {
            // Coming back, it is woken to pass through its idle loop.
            self.pinned_armed_on.store(ANY_WORKER, Relaxed);
            let back = self.sys.online(w);
            self.pinned_armed_on.store(u64::MAX, Relaxed);
            back.map_err(|e| self.fail(format!("online({w}): {e}")))?;
        }
        self.report.hotplugs += 1;
        Ok(())
    }

    fn act(&mut self, w: usize, arming: bool) -> Result<(), SimFailure> {
        if TRACE.with(|t| *t) {
            eprintln!("t={} w={w} {:?}", self.now, self.phase[w]);
        }
        match self.phase[w] {
            Phase::Stalled(until) if self.now < until => Ok(()),
            Phase::Stalled(_) => {
                self.phase[w] = Phase::Busy;
                self.tick_point(w);
                Ok(())
            }
            Phase::Idle {
                wake_at,
                local,
                last,
            } => {
                let woken = self.woken[w].load(Relaxed);
                let due = wake_at.is_some_and(|t| t <= self.now);
                if due && !woken && wake_at != local && !last {
                    return Err(self.fail(format!(
                        "worker {w} armed a wake-up for {wake_at:?} with its first pinned timer at {local:?} and not the last idle worker"
                    )));
                }
                let job = arming && self.rng.chance(5);
                if !(woken || due || job) {
                    return Ok(());
                }
                if woken || due {
                    self.timer_wakeups += 1;
                }
                self.wake(w);
                self.tick_point(w);
                Ok(())
            }
            Phase::Busy => {
                self.tick_point(w);
                if arming {
                    if self.rng.chance(300) {
                        let pinned = self.rng.chance(200);
                        self.arm(w, pinned)?;
                    }
                    if self.rng.chance(150) && !self.timers.is_empty() {
                        let i = self.rng.below(self.timers.len() as u64) as usize;
                        let t = &mut self.timers[i];
                        if !t.cancelled && t.timer.delete() {
                            t.cancelled = true;
                        }
                    }
                    if self.rng.chance(4) {
                        let len = 1 + self.rng.below(4 * self.cfg.stall_bound + 8);
                        self.phase[w] = Phase::Stalled(self.now + len);
                        // Its last tick point was this tick.
                        self.stalls.push((w, self.now, self.now + len));
                        return Ok(());
                    }
                }
                // Busy workers go idle now and then; while draining, rarely.
                let idle = if arming {
                    self.rng.chance(250)
                } else {
                    self.rng.chance(1)
                };
                if idle {
                    self.go_idle(w);
                }
                Ok(())
            }
        }
    }

    fn run_monitor(&mut self) {
        let token = self.sys.core().nohz.monitor.token();
        let woken = token != self.monitor_token;
        if woken || self.monitor_next.is_some_and(|t| t <= self.now) {
            let (bases, nohz) = self.parts();
            let mut next = nohz.monitor_round(bases, self.now);
            if next != Some(self.now + 1) && !nohz.monitor_may_park() {
                next = Some(self.now + 1);
            }
            self.monitor_next = next;
            self.monitor_token = self.sys.core().nohz.monitor.token();
        }
    }

    /// Stall episodes that overlap ticks `from ..= to`: each one can hold a
    /// movable timer up by the stall bound plus two ticks (detection by the
    /// monitor, then a migrator's tick).
    fn stalls_between(&self, from: u64, to: u64) -> u64 {
        self.stalls
            .iter()
            .filter(|&&(_, start, end)| start <= to && end >= from)
            .count() as u64
    }

    fn check_timers(&mut self, end: bool) -> Result<(), SimFailure> {
        let bound = self.cfg.stall_bound;
        let mut fail = None;
        for t in &self.timers {
            let fired = t.fired.load(Relaxed);
            if fired > 1 {
                fail = Some(format!("a timer fired {fired} times"));
            } else if fired == 1 && t.cancelled {
                fail = Some("a cancelled timer fired".into());
            } else if fired == 1 && t.fired_at.load(Relaxed) < t.expires {
                fail = Some(format!(
                    "a timer for tick {} fired early, at {}",
                    t.expires,
                    t.fired_at.load(Relaxed)
                ));
            } else if !t.pinned && !t.cancelled {
                let at = if fired == 1 {
                    t.fired_at.load(Relaxed)
                } else {
                    self.now
                };
                let late = at.saturating_sub(t.fires_at);
                let stalls = self.stalls_between(t.fires_at.saturating_sub(bound + 3), at);
                let allowed = 1 + stalls * (bound + 2);
                if late > allowed && (fired == 1 || at > t.fires_at + allowed) {
                    fail = Some(format!(
                        "worker {}'s movable timer due at {} (bucket {}) fired {late} ticks late (allowed {allowed}){}",
                        t.owner,
                        t.expires,
                        t.fires_at,
                        if fired == 0 { ", not yet" } else { "" }
                    ));
                    if TRACE.with(|t| *t) {
                        eprintln!("phases: {:?}", self.phase);
                        for (i, g) in self.sys.metrics().hierarchy().iter().enumerate() {
                            eprintln!("group {i}: {g:?}");
                        }
                        eprintln!(
                            "owner stats {:?} next {:?}",
                            self.sys.metrics().migration_stats(t.owner),
                            self.sys.next_expiry(t.owner)
                        );
                    }
                }
                if fired == 1 {
                    self.report.max_late_global = self.report.max_late_global.max(late);
                }
            }
            if end && fired == 0 && !t.cancelled {
                fail = Some(format!("a timer due at {} never fired", t.expires));
            }
            if fail.is_some() {
                break;
            }
        }
        match fail {
            Some(f) => Err(self.fail(f)),
            None => {
                if !end {
                    // Done timers need no more checking.
                    self.timers
                        .retain(|t| t.fired.load(Relaxed) == 0 && !t.cancelled);
                }
                Ok(())
            }
        }
    }

    /// Everybody busy until every pending timer has fired.
    pub(crate) fn drain(&mut self) -> Result<(), SimFailure> {
        for w in 0..self.phase.len() {
            if matches!(self.phase[w], Phase::Idle { .. }) {
                self.wake(w);
            } else {
                if let Phase::Stalled(_) = self.phase[w] {
                    // Ends now: its episode's end moves here.
                    if let Some(ep) = self.stalls.iter_mut().rev().find(|e| e.0 == w) {
                        ep.2 = self.now;
                    }
                }
                self.phase[w] = Phase::Busy;
            }
        }
        let last = self.timers.iter().map(|t| t.fires_at).max().unwrap_or(0);
        while self.now <= last + 1 {
            self.step(false)?;
        }
        self.check_timers(true)
    }

    pub(crate) fn finish(mut self) -> SimReport {
        let nohz = &self.sys.core().nohz;
        let mut r = std::mem::take(&mut self.report);
        r.levels = nohz.hier.levels();
        r.idle_entry_cas = self.entry.0.spread();
        r.idle_entry_locks = self.entry.1.spread();
        r.idle_exit_cas = self.exit.0.spread();
        r.idle_exit_locks = self.exit.1.spread();
        for w in 0..r.workers {
            let s = nohz.hier.stats(w);
            r.remote_expiries += s.remote_expiries;
            r.stalls += s.stalls;
        }
        r.timers_fired = r.timers_armed; // every armed timer fired or was cancelled (checked)
        r.timer_wakeups_per_sec = self.timer_wakeups as f64 * 1000.0 / self.now.max(1) as f64;
        r
    }
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

thread_local! {
    static TRACE: bool = std::env::var_os("UTIMER_SIM_TRACE").is_some();
    static WRONG_WAKE: Cell<Option<usize>> = const { Cell::new(None) };
}
