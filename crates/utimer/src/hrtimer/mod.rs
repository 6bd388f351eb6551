//! High-resolution timers: the kernel's `hrtimer`, for deadlines that must
//! be met to the microsecond rather than to the tick.
//!
//! # Why two kinds of timer
//!
//! The wheel (`wheel/`) is built for timeouts, which are mostly cancelled
//! before they fire: arming and cancelling are O(1) and cheap, and in
//! exchange a timer fires at its level's bucket boundary, up to 12.5% of
//! its distance late (a one-second timer about 43–64 ms late). Sleeps,
//! POSIX timers and periodic timers are the opposite case: they nearly
//! always fire, and firing late is the defect. The kernel has used the same
//! split since 2.6.16 (Thomas Gleixner's hrtimers): `nanosleep`, POSIX
//! timers, `timerfd` and `itimers` are hrtimers; `timer_list` is kept for
//! timeouts. utimer does the same:
//!
//! | | wheel [`Timer`](crate::Timer) | [`HrTimer`] |
//! |---|---|---|
//! | resolution | one tick (1 ms), coarser levels for far timers | 1 ns |
//! | fires | at its bucket's boundary: never early, up to 12.5% late | at its expiry (plus the wake-up's latency), or within its slack |
//! | arm / cancel | O(1) | O(log n) |
//! | built for | timeouts (mostly cancelled) | sleeps, periodic and POSIX timers (mostly fire) |
//! | clocks | the system's tick clock | `CLOCK_MONOTONIC`, `CLOCK_BOOTTIME`, `CLOCK_REALTIME` |
//!
//! # Structure
//!
//! Every worker has one base per clock (`base.rs`), each an ordered queue
//! (`queue.rs`: an indexed 4-ary heap, the kernel's rbtree `timerqueue`)
//! under its own lock. A timer is created on a worker (the creating
//! thread's, as wheel timers are armed locally) and stays on that worker's
//! base of its clock — it is pinned: it is expired by its worker, as the
//! kernel's hrtimers are by their CPU (they are no part of the pull
//! model), or by a program thread that serves every base while it sleeps
//! (`system/serve.rs`, the way a sleeping CPU's own interrupt fires its
//! hrtimers). Only hot-plug moves it (`offline`), and a POSIX timer's
//! clock switch.
//!
//! A base has a second queue beside it, for *sleepers* (`sleeper.rs`, the
//! kernel's `hrtimer_sleeper`): hrtimers whose only callback is to wake a
//! task, embedded in the pinned future that waits
//! ([`HrSleeper`](crate::HrSleeper), under utimer-async's `Sleep`), linked
//! in an intrusive pairing heap (`sleeper/pairing.rs`). They allocate
//! nothing, cost 72 bytes each, and their fire is a waker taken under the
//! lock and woken after it, so their drop never waits. The two queues share
//! the base's lock, mirrors, idle computation and hot-plug; an expiry run
//! wakes due sleepers first, then runs due timers.
//!
//! # Slack
//!
//! A timer has a soft expiry (the earliest it may fire) and a hard one (the
//! latest it should): `start_range` is the kernel's
//! `hrtimer_start_range_ns()`. The queue is ordered by hard expiry, a
//! worker sleeps until the first hard expiry, and its expiry run fires
//! every timer whose soft expiry has passed, in hard order, until the first
//! that is not yet due: timers with overlapping ranges share one wake-up.
//!
//! # Waking precisely
//!
//! The idle computation (`nohz/`) asks the hrtimer bases for their first
//! hard expiry beside the wheel's next tick, and a worker sleeps until the
//! earlier one, converted to a `CLOCK_MONOTONIC` deadline (a `BOOTTIME` or
//! `REALTIME` expiry minus that clock's current offset from `MONOTONIC`).
//! The sleep is a futex wait, whose timeout the kernel extends by the
//! thread's *timer slack* (`PR_SET_TIMERSLACK`, 50 µs by default) so that
//! wake-ups coalesce. That would add up to 50 µs to every hrtimer of the
//! worker, so the [`Runtime`](crate::Runtime)'s worker threads set their
//! slack to 1 ns and express slack per timer instead, through
//! `start_range`: precision is the default, coalescing is asked for. A
//! worker that wakes before the expiry (a job, a spurious wake-up) runs
//! nothing early: the expiry run compares each soft expiry with the clock
//! it reads.
//!
//! # Clocks and clock changes
//!
//! Each clock has its own queue, in its own nanoseconds: a `BOOTTIME`
//! timer counts time in suspend, a `MONOTONIC` one does not. An absolute
//! `REALTIME` timer waits for a wall-clock time: when the wall clock is set
//! (`settimeofday`, NTP steps), the worker's sleep, computed with the old
//! offset, is wrong. The kernel reprograms its bases (`clock_was_set()`);
//! user space learns of it through a `timerfd` armed with
//! `TFD_TIMER_CANCEL_ON_SET`, whose read fails with `ECANCELED` when the
//! clock is set. The runtime's `utimer-clockwatch` thread (started with the
//! first `REALTIME` timer) waits on one and wakes every worker that has
//! `REALTIME` timers, which recompute their sleep from the new offset: the
//! timers fire at the new wall time. A relative `REALTIME` timer is the
//! POSIX layer's business: it runs on the monotonic clock, as in the
//! kernel.
//!
//! # One callback at a time, and cancel-and-wait
//!
//! As for wheel timers: one expiry run per base at a time, and a timer's
//! callback only runs on its base, so `cancel` (the kernel's
//! `hrtimer_cancel()`) waits for a running callback by watching one base's
//! `running`, and refuses ([`TimerError::InOwnCallback`]) to wait for
//! itself. A worker's thread waiting there keeps running its own timers.
//! The loom models in `tests.rs` check it against the expiry run.
//!
//! [`TimerError::InOwnCallback`]: crate::TimerError::InOwnCallback

mod base;
mod entry;
mod expire;
pub(crate) mod queue;
pub(crate) mod sleeper;
mod timer;
mod trace;

pub(crate) use entry::forward_expiry;
pub use entry::{HrFire, HrRestart};
pub(crate) use expire::in_callback;
pub(crate) use timer::HrEnv;
pub use timer::HrTimer;

use crate::sync::state::{DEAD, OFFLINE};
use crate::sync::summary::Summaries;
use crate::sync::{AtomicBool, AtomicU64};
use crate::time::{ClockId, TickSource};
use base::{HrBase, ONLINE};
use std::any::Any;
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::Arc;

/// Clocks per worker.
pub(crate) const CLOCKS: usize = 3;

/// Counters of one worker's hrtimer bases.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct HrStats {
    /// Timers queued now.
    pub pending: usize,
    /// Callbacks run so far.
    pub fired: u64,
    /// Callbacks that panicked (caught).
    pub panicked: u64,
}

/// One hrtimer base in a [`TimerList`](crate::TimerList) snapshot (the
/// kernel's `/proc/timer_list` "clock" section).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HrBaseInfo {
    /// The base's clock.
    pub clock: ClockId,
    /// Timers queued.
    pub pending: usize,
    /// The first hard expiry, nanoseconds of `clock`.
    pub next_expiry_ns: Option<u64>,
    /// Callbacks run so far.
    pub fired: u64,
    /// Callbacks that panicked (caught).
    pub panicked: u64,
}

/// Every worker's hrtimer bases.
pub(crate) struct HrTable {
    bases: Box<[HrBase]>,
    /// Whether sleeping program threads may serve these bases
    /// (`system/serve.rs`); fixed at build.
    pub(crate) serve_mode: bool,
    /// A thread serves every base now (`system/serve.rs`): it sleeps until
    /// their first expiry, and a worker that goes idle leaves them to it.
    /// Written with `SeqCst` before the server looks at any base or
    /// worker.
    pub(crate) served: AtomicBool,
    /// Claims of the serving role so far: a worker that saw one since it
    /// last parked sleeps on its alarm (`system/serve.rs`).
    pub(crate) claims: AtomicU64,
    /// Steps of the serving thread so far (each look at the bases): a
    /// worker that sees none between two of its sleeps fires the hrtimers
    /// itself (`system/serve.rs`).
    pub(crate) beats: AtomicU64,
    /// The workers' next-event summaries, which the bases invalidate
    /// (`sync/summary.rs`); kept here so that they outlive the bases.
    _summaries: Arc<Summaries>,
}

impl HrTable {
    pub(crate) fn new(workers: usize, summaries: Arc<Summaries>, serve_mode: bool) -> HrTable {
        HrTable {
            serve_mode,
            served: AtomicBool::new(false),
            claims: AtomicU64::new(0),
            beats: AtomicU64::new(0),
            bases: (0..workers * CLOCKS)
                .map(|i| {
                    let summary = summaries.of(i / CLOCKS) as *const _;
                    HrBase::new(i as u32, ClockId::ALL[i % CLOCKS], summary)
                })
                .collect(),
            _summaries: summaries,
        }
    }

    /// The index of `worker`'s base of `clock`.
    #[inline]
    pub(crate) fn index(&self, worker: usize, clock: ClockId) -> usize {
        worker * CLOCKS + clock as usize
    }

    #[inline]
    pub(crate) fn base_at(&self, index: usize) -> &HrBase {
        &self.bases[index]
    }

    fn worker_bases(&self, worker: usize) -> &[HrBase] {
        &self.bases[worker * CLOCKS..(worker + 1) * CLOCKS]
    }

    /// `worker`'s first hard expiry over its clocks, as a
    /// `CLOCK_MONOTONIC` time in ns (see the module docs), each base read
    /// under its lock (one at a time), for the worker's summary
    /// (`sync/summary.rs`); and
    /// whether the answer may be cached: not while a `BOOTTIME` or
    /// `REALTIME` timer is queued on a real clock (its conversion depends
    /// on the clocks' current offset).
    pub(crate) fn next_event_locked(
        &self,
        worker: usize,
        ticks: &TickSource,
    ) -> (Option<u64>, bool) {
        let mut next: Option<u64> = None;
        let mut cacheable = true;
        for b in self.worker_bases(worker) {
            if let Some(ns) = b.next_expiry_locked() {
                cacheable &= b.clock == ClockId::Monotonic || ticks.clock().is_manual();
                let mono = to_monotonic(ticks, b.clock, ns);
                next = Some(next.map_or(mono, |n| n.min(mono)));
            }
        }
        (next, cacheable)
    }

    /// `worker` goes idle: each base publishes its first expiry (a start
    /// before it wakes the worker). Returns the first, as
    /// [`next_event_locked`](Self::next_event_locked) does.
    pub(crate) fn idle_enter(&self, worker: usize, ticks: &TickSource) -> Option<u64> {
        self.worker_bases(worker)
            .iter()
            .filter_map(|b| b.idle_enter().map(|ns| to_monotonic(ticks, b.clock, ns)))
            .min()
    }

    /// The first hard expiry over every worker's bases, as a
    /// `CLOCK_MONOTONIC` time, each base publishing its own as
    /// [`idle_enter`](Self::idle_enter) does: a thread that serves them all
    /// goes to sleep (`system/serve.rs`).
    pub(crate) fn idle_enter_all(&self, ticks: &TickSource) -> Option<u64> {
        (0..self.bases.len() / CLOCKS)
            .filter_map(|w| self.idle_enter(w, ticks))
            .min()
    }

    /// Runs every worker's due hrtimers, on the calling thread (a thread
    /// that serves them, `system/serve.rs`); returns how many ran.
    pub(crate) fn run_expired_all(
        &self,
        ticks: &TickSource,
        on_panic: &dyn Fn(&(dyn Any + Send)),
        wake: &dyn Fn(usize),
    ) -> usize {
        (0..self.bases.len() / CLOCKS)
            .map(|w| self.run_expired(w, ticks, on_panic, wake).0)
            .sum()
    }

    /// `worker`'s first soft expiry over its clocks, as a `CLOCK_MONOTONIC`
    /// time, without a lock (`u64::MAX`: none): nothing of it is due
    /// before.
    pub(crate) fn first_soft(&self, worker: usize, ticks: &TickSource) -> u64 {
        self.worker_bases(worker)
            .iter()
            .filter_map(|b| {
                let soft = b.first_soft();
                (soft != u64::MAX).then(|| to_monotonic(ticks, b.clock, soft))
            })
            .min()
            .unwrap_or(u64::MAX)
    }

    /// `worker`'s first hard expiry over its clocks, as a
    /// `CLOCK_MONOTONIC` time, without a lock (`u64::MAX`: none): what a
    /// start just queued, or earlier.
    pub(crate) fn first_hard(&self, worker: usize, ticks: &TickSource) -> u64 {
        self.worker_bases(worker)
            .iter()
            .filter_map(|b| {
                b.next_expiry()
                    .map(|hard| to_monotonic(ticks, b.clock, hard))
            })
            .min()
            .unwrap_or(u64::MAX)
    }

    /// `worker` is busy again.
    pub(crate) fn idle_exit(&self, worker: usize) {
        for b in self.worker_bases(worker) {
            if self.serve_mode {
                // While a thread serves the bases, what is published is its
                // wake-up, which a start before it must still reach; the
                // look at `served` is under the lock that the server
                // publishes under, so the two never cross.
                let g = b.lock();
                if !self.served.load(SeqCst) {
                    b.idle_until.store(0, Relaxed);
                }
                drop(g);
            } else {
                b.idle_until.store(0, Relaxed);
            }
        }
    }

    /// Runs `worker`'s due hrtimers. Returns how many ran and its next
    /// event as [`next_event_locked`](Self::next_event_locked) does.
    pub(crate) fn run_expired(
        &self,
        worker: usize,
        ticks: &TickSource,
        on_panic: &dyn Fn(&(dyn Any + Send)),
        wake: &dyn Fn(usize),
    ) -> (usize, Option<u64>) {
        let mut ran = 0;
        let mut next: Option<u64> = None;
        for b in self.worker_bases(worker) {
            // Nothing queued, or nothing due: no lock, and no clock read
            // for an empty base (module docs of `base.rs`).
            let soft = b.first_soft();
            if soft == u64::MAX {
                continue;
            }
            let now = ticks.now_ns(b.clock);
            let (n, first) = if soft > now {
                (0, b.next_expiry())
            } else {
                expire::run_expired(b, now, on_panic, wake)
            };
            ran += n;
            if let Some(ns) = first {
                let mono = to_monotonic(ticks, b.clock, ns);
                next = Some(next.map_or(mono, |m| m.min(mono)));
            }
        }
        (ran, next)
    }

    /// Whether `worker` has queued `REALTIME` timers and sleeps (a clock
    /// change must wake it).
    pub(crate) fn sleeps_on_realtime(&self, worker: usize) -> bool {
        let b = &self.bases[self.index(worker, ClockId::Realtime)];
        b.idle_until.load(Relaxed) != 0 && b.lock().pending() != 0
    }

    /// Counters of `worker`'s bases.
    pub(crate) fn stats(&self, worker: usize) -> HrStats {
        let mut s = HrStats::default();
        for b in self.worker_bases(worker) {
            let g = b.lock();
            s.pending += g.pending();
            s.fired += g.fired;
            s.panicked += g.panicked;
        }
        s
    }

    /// Each of `worker`'s bases (one per clock, in [`ClockId::ALL`] order):
    /// its clock, queued timers, first hard expiry (ns of that clock) and
    /// counters, each base read under its lock.
    pub(crate) fn base_infos(&self, worker: usize) -> Vec<HrBaseInfo> {
        self.worker_bases(worker)
            .iter()
            .map(|b| {
                let g = b.lock();
                HrBaseInfo {
                    clock: b.clock,
                    pending: g.pending(),
                    next_expiry_ns: g.first_hard(),
                    fired: g.fired,
                    panicked: g.panicked,
                }
            })
            .collect()
    }

    /// Hot-plug: closes `worker`'s bases, waits for a run in progress, and
    /// moves every queued timer to `to`'s base of the same clock; returns
    /// how many moved and the workers to wake.
    pub(crate) fn take_offline(&self, worker: usize, to: usize) -> (usize, Vec<usize>) {
        let mut moved = 0;
        let mut wake = Vec::new();
        for b in self.worker_bases(worker) {
            b.route.store(to as u32, Relaxed);
            let mut g = loop {
                let mut g = b.lock();
                g.closed |= OFFLINE;
                if !g.expiring {
                    break g;
                }
                drop(g);
                std::thread::sleep(std::time::Duration::from_micros(50));
            };
            b.idle_until.store(0, Relaxed);
            let target = self.index(to, b.clock);
            let batch = g.queue.drain();
            for (_, _, e) in &batch {
                e.handle.store(entry::NOT_QUEUED, Relaxed);
                e.base.store(
                    target as u32 | entry::MIGRATING_WORKER,
                    std::sync::atomic::Ordering::Release,
                );
            }
            let mut dead = Vec::new();
            let nodes = sleeper::drain(&mut g, Some(target as u32), &mut dead);
            drop(g);
            let tb = &self.bases[target];
            let mut tg = tb.lock();
            moved += nodes.len();
            // SAFETY: `nodes` came from `drain` with this target.
            let mut first =
                unsafe { sleeper::requeue(&mut tg, tb, target as u32, nodes, &mut dead) };
            for (soft, hard, e) in batch {
                e.base
                    .store(target as u32, std::sync::atomic::Ordering::Release);
                if tg.closed & DEAD != 0 {
                    continue; // shut down meanwhile: dropped below
                }
                base::place(&mut tg, e, soft, hard);
                first = first.or(base::wake_for(tb, hard));
                moved += 1;
            }
            drop(tg);
            dead.into_iter().for_each(std::task::Waker::wake);
            wake.extend(first);
        }
        (moved, wake)
    }

    /// Hot-plug: opens `worker`'s bases again.
    pub(crate) fn bring_online(&self, worker: usize) {
        for b in self.worker_bases(worker) {
            let mut g = b.lock();
            g.closed &= !OFFLINE;
            b.route.store(ONLINE, Relaxed);
        }
    }

    /// The system shuts down: every base refuses starts, queued timers
    /// are dropped (their callbacks never run), and queued sleepers are
    /// woken to find out.
    pub(crate) fn shutdown(&self) {
        for b in self.bases.iter() {
            let mut g = b.lock();
            g.closed |= DEAD;
            let batch = g.queue.drain();
            for (_, _, e) in &batch {
                e.handle.store(entry::NOT_QUEUED, Relaxed);
            }
            let mut wakers = Vec::new();
            sleeper::drain(&mut g, None, &mut wakers);
            drop(g);
            drop(batch);
            // Sleepers learn of it when they poll (`TimerError::Shutdown`).
            wakers.into_iter().for_each(std::task::Waker::wake);
        }
    }
}

/// `ns` of `clock` as a `CLOCK_MONOTONIC` time: minus the clock's current
/// offset from the monotonic clock (none for a manual clock).
pub(crate) fn to_monotonic(ticks: &TickSource, clock: ClockId, ns: u64) -> u64 {
    if clock == ClockId::Monotonic || ticks.clock().is_manual() {
        return ns;
    }
    let mono = ticks.now_ns(ClockId::Monotonic);
    let other = ticks.now_ns(clock);
    if other >= mono {
        ns.saturating_sub(other - mono)
    } else {
        ns.saturating_add(mono - other)
    }
}
