//! What a system can tell about itself, apart from arming timers:
//! [`Metrics`], from [`TimerSystem::metrics`], with the counters of each
//! base, the pull model's hierarchy, and a snapshot of every worker's
//! timers, the kernel's `/proc/timer_list`, as data ([`TimerList`]) and as
//! text (its `Display`). tokio's `Handle::metrics()` is the same idea.

use super::TimerSystem;
use crate::hrtimer::{HrBaseInfo, HrStats};
use crate::migration::GroupInfo;
use crate::migration::MigrationStats;
use crate::time::ClockId;
use crate::timer_list::base::{BaseKind, BaseStats, Bases};
use crate::TimerError;
use std::fmt;
use std::time::Duration;

/// Every worker's bases at one moment (each base read under its own lock,
/// so the snapshot is consistent per base, not across bases). Made by
/// [`Metrics::timer_list`].
#[derive(Clone, Debug)]
pub struct TimerList {
    /// The wheel clock: the current tick (`jiffies`).
    pub now: u64,
    /// The tick length.
    pub tick: Duration,
    /// `CLOCK_MONOTONIC` in nanoseconds, as hrtimers read it.
    pub now_ns: u64,
    /// One entry per worker.
    pub workers: Vec<WorkerTimers>,
}

/// One worker's part of a [`TimerList`].
#[derive(Clone, Debug)]
pub struct WorkerTimers {
    /// The worker's index.
    pub worker: usize,
    /// Whether it is online (hot-plug).
    pub online: bool,
    /// Its wheel bases: kind, next expiry (tick), counters.
    pub wheel: Vec<WheelBaseInfo>,
    /// Its hrtimer bases, one per clock.
    pub hr: Vec<HrBaseInfo>,
    /// Its pull-model counters.
    pub migration: MigrationStats,
}

/// One wheel base in a [`TimerList`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct WheelBaseInfo {
    /// Which base.
    pub kind: BaseKind,
    /// The tick its first timer is due at.
    pub next_expiry: Option<u64>,
    /// Its counters (`pending` is the number queued).
    pub stats: BaseStats,
}

impl TimerSystem {
    /// The system's counters and introspection ([`Metrics`]): a borrow that
    /// costs nothing to get. Nothing there arms or changes a timer.
    #[inline]
    pub fn metrics(&self) -> Metrics<'_> {
        Metrics { sys: self }
    }
}

/// Counters and introspection of one [`TimerSystem`], from
/// [`TimerSystem::metrics`]: per-base statistics, the pull model's
/// hierarchy, and [`timer_list`](Self::timer_list) (the kernel's
/// `/proc/timer_list`).
#[derive(Copy, Clone, Debug)]
pub struct Metrics<'a> {
    sys: &'a TimerSystem,
}

impl Metrics<'_> {
    /// Counters of `worker`'s hrtimer bases (all clocks).
    ///
    /// # Errors
    /// [`TimerError::NoSuchWorker`] if `worker` is out of range.
    pub fn hr_stats(&self, worker: usize) -> Result<HrStats, TimerError> {
        self.sys.core.bases.check_worker(worker)?;
        Ok(self.sys.core.nohz.hr.stats(worker))
    }

    /// Statistics of one base.
    ///
    /// # Errors
    /// [`TimerError::NoSuchWorker`] if `worker` is out of range.
    pub fn base_stats(&self, worker: usize, kind: BaseKind) -> Result<BaseStats, TimerError> {
        self.sys.core.bases.check_worker(worker)?;
        Ok(Bases::stats_of(self.sys.core.bases.base(worker, kind)))
    }

    /// Statistics summed over every base.
    pub fn totals(&self) -> BaseStats {
        let mut sum = BaseStats::default();
        for base in self.sys.core.bases.all() {
            sum += Bases::stats_of(base);
        }
        sum
    }

    /// Heap bytes held by the bases' wheels (entry blocks and bucket lists), not
    /// counting the timers themselves.
    pub fn wheel_heap_bytes(&self) -> usize {
        let bases = self.sys.core.bases.all();
        bases.iter().map(|b| b.lock().wheel.heap_bytes()).sum()
    }

    /// Worker `worker`'s pull-model counters: remote expiries it ran, runs
    /// of its base by others, migrator hand-offs, idle entries, wake-ups,
    /// stalls, and the hierarchy operations done on its behalf.
    ///
    /// # Errors
    /// [`TimerError::NoSuchWorker`] if `worker` is out of range.
    pub fn migration_stats(&self, worker: usize) -> Result<MigrationStats, TimerError> {
        self.sys.core.bases.check_worker(worker)?;
        Ok(self.sys.core.nohz.hier.stats(worker))
    }

    /// The pull model's hierarchy, group by group (the kernel's
    /// `tmigr_hierarchy`): levels, nodes, children, active masks,
    /// migrators and first events. A snapshot: each group is read on its
    /// own.
    pub fn hierarchy(&self) -> Vec<GroupInfo> {
        self.sys.core.nohz.hier.info()
    }

    /// Levels of the pull model's hierarchy.
    pub fn hierarchy_levels(&self) -> u8 {
        self.sys.core.nohz.hier.levels()
    }

    /// Checks that every group's active mask and migrator agree with its
    /// children's states. Meaningful only while no worker goes idle or
    /// active (the simulator checks it after every step).
    ///
    /// # Errors
    /// A description of the first group that disagrees.
    pub fn check_hierarchy(&self) -> Result<(), String> {
        self.sys.core.nohz.hier.check()
    }

    /// A snapshot of every worker's timers: pending counts, next expiries
    /// and counters per wheel and hrtimer base, and the pull model's
    /// counters. The kernel's `/proc/timer_list` (print it with `{}`).
    pub fn timer_list(&self) -> TimerList {
        let core = self.sys.core();
        let bases = &core.bases;
        let workers = (0..self.sys.workers())
            .map(|w| WorkerTimers {
                worker: w,
                online: self.sys.is_online(w),
                wheel: BaseKind::ALL
                    .iter()
                    .map(|&kind| {
                        let base = bases.base(w, kind);
                        WheelBaseInfo {
                            kind,
                            next_expiry: base.next_expiry(),
                            stats: Bases::stats_of(base),
                        }
                    })
                    .collect(),
                hr: core.nohz.hr.base_infos(w),
                migration: core.nohz.hier.stats(w),
            })
            .collect();
        TimerList {
            now: self.sys.now(),
            tick: self.sys.tick(),
            now_ns: self.sys.clock_ns(ClockId::Monotonic).as_nanos(),
            workers,
        }
    }
}

fn or_none(v: Option<u64>) -> String {
    v.map_or_else(|| "none".into(), |v| v.to_string())
}

impl fmt::Display for TimerList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Timer List Version: utimer 0.1")?;
        writeln!(
            f,
            "now at {} ticks ({:?} each), {} nsecs",
            self.now, self.tick, self.now_ns
        )?;
        for w in &self.workers {
            writeln!(f)?;
            writeln!(
                f,
                "worker: {}{}",
                w.worker,
                if w.online { "" } else { " (offline)" }
            )?;
            for b in &w.wheel {
                let s = &b.stats;
                writeln!(
                    f,
                    " wheel base {:?}: pending {}, next expiry {}, armed {}, fired {}, deleted {}, requeued {}, recalced {}, migrated {}, panicked {}",
                    b.kind,
                    s.pending,
                    or_none(b.next_expiry),
                    s.armed,
                    s.fired,
                    s.deleted,
                    s.requeued,
                    s.recalced,
                    s.migrated,
                    s.panicked
                )?;
            }
            for h in &w.hr {
                writeln!(
                    f,
                    " clock {:?}: pending {}, next expiry {} nsecs, fired {}, panicked {}",
                    h.clock,
                    h.pending,
                    or_none(h.next_expiry_ns),
                    h.fired,
                    h.panicked
                )?;
            }
            let m = &w.migration;
            writeln!(
                f,
                " pull model: remote expiries {}, pulled from {}, hand-offs {}, idle entries {}, wake-ups {}, stalls {}",
                m.remote_expiries, m.pulled_from, m.handoffs, m.idle_entries, m.wakeups, m.stalls
            )?;
        }
        Ok(())
    }
}
