//! A snapshot of a running system's timers, per worker and base: the
//! kernel's `/proc/timer_list`, as data ([`TimerList`]) and as text (its
//! `Display`).

use super::TimerSystem;
use crate::hrtimer::HrBaseInfo;
use crate::migration::MigrationStats;
use crate::time::ClockId;
use crate::timer_list::base::{BaseKind, BaseStats, Bases};
use std::fmt;
use std::time::Duration;

/// Every worker's bases at one moment (each base read under its own lock,
/// so the snapshot is consistent per base, not across bases). Made by
/// [`TimerSystem::timer_list`].
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
    /// A snapshot of every worker's timers: pending counts, next expiries
    /// and counters per wheel and hrtimer base, and the pull model's
    /// counters. The kernel's `/proc/timer_list` (print it with `{}`).
    pub fn timer_list(&self) -> TimerList {
        let core = self.core();
        let bases = &core.bases;
        let workers = (0..self.workers())
            .map(|w| WorkerTimers {
                worker: w,
                online: self.is_online(w),
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
            now: self.now(),
            tick: self.tick(),
            now_ns: self.clock_ns(ClockId::Monotonic),
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
