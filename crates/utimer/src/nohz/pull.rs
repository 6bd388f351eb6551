//! The pull model's actions: remote expiry of idle (or stalled) workers'
//! global bases, and the stall monitor.
//!
//! # Remote expiry
//!
//! On each tick point a worker asks the hierarchy which idle workers'
//! movable timers are due in the groups where it is the migrator, and for
//! each one runs that worker's global base with `base::run_expired`, the
//! same run its owner would do: under the base's lock, `running` set for
//! each callback, and refused (left to the run under way) if another
//! thread is already expiring the base. Then, under the base's lock again,
//! it reads the base's next expiry and walks it up (`remote_update`), and
//! republishes the base's idle threshold. It repeats while the hierarchy
//! reports due workers, a bounded number of rounds per tick.
//!
//! # The stall monitor
//!
//! [`Monitor`] is the part of the idle state that watches workers stuck in
//! long jobs (see the `migration` module essay). Each round, at tick `now`,
//! it deactivates every active member whose heartbeat is older than
//! `now - bound` (under that worker's global base lock, as going idle
//! does); if nobody is active it expires the due events of the top group
//! itself. It then says when to run next: in one tick while somebody is
//! active, at the first movable expiry if it armed the system's wake-up as
//! the last "idle" party, or never (until a worker becomes active, or a
//! movable timer armed on a worker it stalled reaches the hierarchy: either
//! unparks it).
//!
//! A stall may land at any moment of the worker's own life, its return to
//! work included: its heartbeat is the precise tick of its tick point (the
//! coarse clock lags by a few ticks and would make a worker that has just
//! woken look stalled), and it becomes active and clears its global base's
//! idle threshold in one step under that base's lock, the lock the stall
//! takes to publish the threshold. Otherwise a stall in between would have
//! its threshold wiped while the worker counts as idle: the worker's next
//! movable timer would reach nobody, and the monitor would park for good
//! (the loom model `stall_vs_idle_exit_and_arm`).

use super::Nohz;
use crate::migration::TopIdle;
use crate::sync::parker::Parker;
use crate::sync::AtomicBool;
use crate::timer_list::base::{run_expired, BaseKind, Bases};
use std::sync::atomic::Ordering::SeqCst;

/// Rounds of remote expiry per tick point, so that a timer re-armed to
/// "now" again and again cannot keep a migrator from its own work.
const MAX_ROUNDS: usize = 8;

/// The stall monitor's state.
pub(crate) struct Monitor {
    parker: Parker,
    /// The monitor parks without a timeout, or past the next tick: a
    /// worker that makes the top active unparks it.
    parked: AtomicBool,
    /// Stop the monitor loop.
    stop: AtomicBool,
    /// Ticks without a tick point after which an active worker counts as
    /// stalled.
    pub(crate) bound: u64,
}

impl Monitor {
    pub(crate) fn new(bound: u64) -> Monitor {
        Monitor {
            parker: Parker::default(),
            parked: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            bound,
        }
    }

    /// Bumped by every unpark: the simulator's way to see that the monitor
    /// was woken.
    #[cfg(any(feature = "bench-internals", loom))]
    pub(crate) fn token(&self) -> u32 {
        self.parker.token()
    }

    /// Wakes the monitor.
    pub(crate) fn unpark(&self) {
        self.parker.unpark();
    }

    /// A worker made the top group active: a parked monitor must start
    /// watching for stalls again.
    pub(crate) fn someone_active(&self) {
        if self.parked.swap(false, SeqCst) {
            self.parker.unpark();
        }
    }

    /// Ends [`Nohz::monitor_loop`].
    pub(crate) fn stop(&self) {
        self.stop.store(true, SeqCst);
        self.parker.unpark();
    }
}

impl Nohz {
    /// Expires the due movable timers of idle workers in the groups where
    /// `me` is the migrator (`None`: the monitor, for the top group while
    /// nobody is active). Returns how many callbacks ran.
    pub(crate) fn run_remote(&self, bases: &Bases, me: Option<usize>, now: u64) -> usize {
        if !self.pull {
            return 0;
        }
        let mut due = Vec::new();
        let mut ran = 0;
        for _ in 0..MAX_ROUNDS {
            due.clear();
            match me {
                Some(me) => self.hier.due(me, now, &mut due),
                None => self.hier.due_at_top(now, &mut due),
            }
            due.retain(|&w| Some(w) != me);
            if due.is_empty() {
                break;
            }
            for &w in &due {
                ran += self.expire_remote(bases, me, w, now);
            }
        }
        ran
    }

    /// Runs idle worker `w`'s global base on behalf of `me`, then reports
    /// its next expiry (the kernel's `tmigr_handle_remote_cpu()`).
    fn expire_remote(&self, bases: &Bases, me: Option<usize>, w: usize, now: u64) -> usize {
        let base = bases.base(w, BaseKind::Global);
        self.hier.count_remote(me, w);
        let done = run_expired(base, now);
        let top = base.with_next_expiry(|next| match self.hier.remote_update(w, next) {
            Some(top) => (top, Some(next.unwrap_or(u64::MAX))),
            None => (TopIdle::default(), None),
        });
        self.act(top);
        done.ran
    }

    /// One round of the stall monitor at tick `now`; returns the tick of the
    /// next round, or `None` to park until a worker becomes active.
    pub(crate) fn monitor_round(&self, bases: &Bases, now: u64) -> Option<u64> {
        if !self.pull {
            return None;
        }
        let bound = self.monitor.bound;
        let mut stalled = Vec::new();
        self.hier.stalled_candidates(now, bound, &mut stalled);
        let mut arm = None::<u64>;
        for w in stalled {
            let base = bases.base(w, BaseKind::Global);
            let top = base.with_next_expiry(|next| match self.hier.stall(w, next, now, bound) {
                Some(top) => (Some(top), Some(next.unwrap_or(u64::MAX))),
                None => (None, None),
            });
            if let Some(top) = top {
                arm = match (arm, top.arm) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                self.act(top);
            }
        }
        if self.hier.top_active() {
            return Some(now + 1);
        }
        self.run_remote(bases, None, now);
        if self.hier.top_active() {
            return Some(now + 1);
        }
        // Nobody active: wake for the first movable event only if the
        // monitor armed the system's wake-up (a stalled worker was the last
        // active one); otherwise the last idle worker has.
        self.hier.monitor_wakeup().or(arm)
    }

    /// The monitor is about to sleep past the next tick: from now on a
    /// worker making the top active unparks it. Returns `false` if one
    /// already did (run another round instead). Both sides are `SeqCst`:
    /// either the worker sees `parked`, or this sees the top active.
    pub(crate) fn monitor_may_park(&self) -> bool {
        self.monitor.parked.store(true, SeqCst);
        if self.hier.top_active() {
            self.monitor.parked.store(false, SeqCst);
            return false;
        }
        true
    }

    /// Runs the monitor until [`Monitor::stop`], sleeping between rounds.
    pub(crate) fn monitor_loop(&self, bases: &Bases) {
        let m = &self.monitor;
        loop {
            let token = m.parker.token();
            if m.stop.load(SeqCst) {
                return;
            }
            let now = bases.ticks.now_precise();
            let next = self.monitor_round(bases, now);
            if next == Some(now + 1) {
                let timeout = bases
                    .ticks
                    .instant_of(now + 1)
                    .map_or(bases.ticks.tick(), |at| {
                        at.saturating_duration_since(std::time::Instant::now())
                    });
                m.parker.park(token, Some(timeout));
                continue;
            }
            if !self.monitor_may_park() {
                continue;
            }
            let timeout = next.map(|tick| {
                bases
                    .ticks
                    .instant_of(tick)
                    .map_or(bases.ticks.tick(), |at| {
                        at.saturating_duration_since(std::time::Instant::now())
                    })
            });
            m.parker.park(token, timeout);
            m.parked.store(false, SeqCst);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests_heartbeat {
    use crate::TimerSystem;
    use std::time::Duration;

    /// A worker's heartbeat is the precise tick of its last tick point:
    /// its registration, its wake-up, and its return from a stall (whose
    /// tick point stored the precise tick first and must not lower it).
    /// So a monitor round at that tick plus the bound never finds a worker
    /// stalled that has just reached one. (The coarse clock, which these
    /// once read, lags the precise one by up to a few milliseconds, many
    /// 100 µs ticks: a worker that had just woken looked stalled at once.)
    /// Each round's tick is read before the tick point on this thread, so
    /// this holds however slow the machine.
    #[test]
    fn a_worker_at_a_tick_point_is_not_stalled() {
        const BOUND: u64 = 2;
        let sys = TimerSystem::builder()
            .workers(2)
            .tick(Duration::from_micros(100))
            .stall_bound(BOUND)
            .build_without_threads();
        let core = sys.core();
        let (bases, nohz) = (&core.bases, &core.nohz);
        let stalls = || nohz.hier.stats(0).stalls;
        let before = bases.ticks.now_precise();
        let worker = sys.register_worker(0, || {}).unwrap();
        nohz.monitor_round(bases, before + BOUND);
        assert_eq!(stalls(), 0, "stalled right after registering");
        for round in 0..20 {
            // Idle, then awake again.
            worker.idle();
            let before = bases.ticks.now_precise();
            worker.idle_exit();
            nohz.monitor_round(bases, before + BOUND);
            assert_eq!(stalls(), 2 * round, "stalled right after waking");
            // Stalled for real (a round far ahead), then back at a tick
            // point.
            nohz.monitor_round(bases, bases.ticks.now_precise() + 100 * BOUND);
            assert_eq!(stalls(), 2 * round + 1);
            let before = bases.ticks.now_precise();
            worker.run_expired();
            assert!(nohz.hier.is_active(0), "its tick point ended the stall");
            nohz.monitor_round(bases, before + BOUND);
            assert_eq!(stalls(), 2 * round + 1, "stalled again right after a stall");
            nohz.monitor_round(bases, bases.ticks.now_precise() + 100 * BOUND);
            assert_eq!(stalls(), 2 * round + 2);
            worker.run_expired();
        }
    }
}

/// Loom models of remote expiry (run by `ci/loom.sh`): the real expiry
/// run, hierarchy and monitor, with loom's atomics and locks.
#[cfg(all(test, loom))]
mod tests {
    use crate::sync::model;
    use crate::{Clock, Timer, TimerSystem, Topology};
    use loom::sync::atomic::{AtomicBool, AtomicUsize};
    use loom::sync::Arc;
    use loom::thread;
    use std::sync::atomic::Ordering::SeqCst;

    /// A system of two workers in one flat group, both hierarchy members.
    fn two_members(builder: crate::Builder) -> Arc<TimerSystem> {
        let sys = Arc::new(
            builder
                .workers(2)
                .topology(Topology::flat(2))
                .build_without_threads(),
        );
        sys.core().nohz.hier.join(0, 0);
        sys.core().nohz.hier.join(1, 0);
        sys
    }

    /// Two workers in one group, both members; worker 1 has a movable timer
    /// at tick 5 that asserts it never runs twice at once; at tick 10 the
    /// monitor finds worker 1 stalled, so worker 0 (the migrator) may pull
    /// it.
    fn stalled_setup(rearm: bool) -> (Arc<TimerSystem>, Timer, Arc<AtomicUsize>) {
        let clock = Clock::manual();
        let sys = two_members(TimerSystem::builder().clock(clock.clone()));
        let core = sys.core();
        let fired = Arc::new(AtomicUsize::new(0));
        let running = Arc::new(AtomicBool::new(false));
        let (f, r) = (fired.clone(), running.clone());
        let timer = {
            let _on = sys.enter(1).unwrap();
            let t = sys.timer(move |t| {
                assert!(!r.swap(true, SeqCst), "one callback at a time");
                if f.fetch_add(1, SeqCst) == 0 && rearm {
                    // Due again at once: a second run of this base that
                    // started now would run it beside this call.
                    t.modify(crate::Expiry::Tick(10)).unwrap();
                }
                r.store(false, SeqCst);
            });
            t.modify(crate::Expiry::Tick(5)).unwrap();
            t
        };
        clock.set(10);
        core.nohz.hier.heartbeat(0, 10);
        core.nohz.monitor_round(&core.bases, 10);
        assert_eq!(core.nohz.hier.stats(1).stalls, 1);
        (sys, timer, fired)
    }

    /// Worker 0's tick point at tick 10, on a new thread: as the migrator,
    /// it expires the stalled worker 1's global base.
    fn spawn_migrator(sys: &Arc<TimerSystem>) -> thread::JoinHandle<()> {
        let sys = sys.clone();
        thread::spawn(move || {
            let _me = sys.enter(0).unwrap();
            let core = sys.core();
            core.nohz.run_expired(&core.bases, 0, 10);
        })
    }

    /// The stalled worker returns to its tick point while the migrator
    /// expires its global base, and the callback re-arms itself to "now"
    /// once: it runs exactly twice, never twice at once.
    #[test]
    fn stalled_worker_and_migrator_share_a_base() {
        model(|| {
            let (sys, timer, fired) = stalled_setup(true);
            let migrator = spawn_migrator(&sys);
            let _me = sys.enter(1).unwrap();
            let core = sys.core();
            core.nohz.run_expired(&core.bases, 1, 10);
            migrator.join().unwrap();
            // Whoever lost the race for the base left the timer to the run
            // under way; a last tick point of each settles it.
            core.nohz.run_expired(&core.bases, 1, 10);
            core.nohz.run_expired(&core.bases, 1, 10);
            assert_eq!(fired.load(SeqCst), 2);
            assert!(!timer.is_pending());
            core.nohz.hier.check().unwrap();
        });
    }

    /// `delete_sync` racing a remote expiry: when it returns, the callback
    /// is not running, and it ran exactly when the timer was no longer
    /// pending.
    #[test]
    fn remote_expiry_vs_delete_sync() {
        model(|| {
            let (sys, timer, fired) = stalled_setup(false);
            let migrator = spawn_migrator(&sys);
            let was_pending = timer.delete_sync().unwrap();
            let after = fired.load(SeqCst);
            migrator.join().unwrap();
            assert_eq!(fired.load(SeqCst), after, "no callback after delete_sync");
            assert_eq!(after + was_pending as usize, 1);
        });
    }

    /// A remote expiry racing a re-arm and then the drop of the handle
    /// from the owner's side: the re-arm either beats the expiry (and the
    /// drop cancels it: no callback) or finds the callback started (it runs
    /// once; the drop, maybe during the callback, defers the free to the
    /// migrator).
    #[test]
    fn remote_expiry_vs_modify_and_drop() {
        model(|| {
            let (sys, timer, fired) = stalled_setup(false);
            let migrator = spawn_migrator(&sys);
            let _me = sys.enter(1).unwrap();
            let was_pending = timer.modify(crate::Expiry::Tick(50)).unwrap();
            assert!(timer.is_pending());
            drop(timer);
            migrator.join().unwrap();
            // Not pending when re-armed: its callback had started (remotely)
            // and ran once; pending: the re-arm beat the expiry, and the
            // drop cancelled it.
            assert_eq!(fired.load(SeqCst), usize::from(!was_pending));
        });
    }

    /// A stall racing the stalled worker's own return to work. Worker 1
    /// sleeps; the monitor found worker 0 stalled at tick 10 (no movable
    /// timer yet). Worker 0 reaches its tick point at 10 (so it activates
    /// again) and arms a movable timer for tick 20; meanwhile the monitor's
    /// round at 13 may find its heartbeat (10) old and stall it again, as a
    /// worker kept off the CPU between its tick point and its job would
    /// be. Whatever the interleaving, the timer is not lost: worker 0 is
    /// active (its own tick point runs it), or the monitor knows it must
    /// run by tick 20 (it asked to, or was woken since) and its round there
    /// fires it. (Before the fix, a stall between the activation and the
    /// clearing of the global base's idle threshold had its threshold
    /// wiped: the arm reached nobody and the monitor parked for good.)
    #[test]
    fn stall_vs_idle_exit_and_arm() {
        model(|| {
            let clock = Clock::manual();
            let sys = two_members(TimerSystem::builder().clock(clock.clone()).stall_bound(2));
            let core = sys.core();
            core.nohz.idle_enter(&core.bases, 1);
            clock.set(10);
            core.nohz.monitor_round(&core.bases, 10);
            assert_eq!(core.nohz.hier.stats(0).stalls, 1);
            let token = core.nohz.monitor.token();
            let fired = Arc::new(AtomicUsize::new(0));
            let f = fired.clone();
            let timer = {
                // Created on worker 0 (an unbound thread's home worker
                // comes from a process-wide counter: not deterministic).
                let _on = sys.enter(0).unwrap();
                sys.timer(move |_| {
                    f.fetch_add(1, SeqCst);
                })
            };
            let monitor = {
                let sys = sys.clone();
                thread::spawn(move || {
                    let core = sys.core();
                    core.nohz.monitor_round(&core.bases, 13)
                })
            };
            {
                let _me = sys.enter(0).unwrap();
                core.nohz.run_expired(&core.bases, 0, 10);
                timer.modify(crate::Expiry::Tick(20)).unwrap();
            }
            let next = monitor.join().unwrap();
            if core.nohz.hier.is_active(0) {
                return;
            }
            let woken = core.nohz.monitor.token() != token;
            assert!(
                woken || next.is_some_and(|t| t <= 20),
                "worker 0 is stalled, its timer is due at 20, and the monitor \
                 sleeps past it ({next:?})"
            );
            clock.set(20);
            core.nohz.monitor_round(&core.bases, 20);
            assert_eq!(fired.load(SeqCst), 1, "the stalled worker's timer fired");
        });
    }
}
