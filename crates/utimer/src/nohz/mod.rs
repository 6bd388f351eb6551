//! Tickless idle (the kernel's `NO_HZ`): when may a worker sleep, and who
//! wakes it.
//!
//! A worker going idle asks both of its *event sources* for their next
//! event and sleeps until the earliest: its wheel bases (`WheelSource`, in
//! ticks, with the pull model's hierarchy beside them) and its hrtimer
//! bases ([`Nohz::hr`], in nanoseconds, always pinned), and the sleep ends at the earlier, to the
//! nanosecond ([`Nohz::idle`]). Each source answers with its next *local* event
//! (pinned: only this worker may run it) and its next *global* one
//! (movable: the pull model will let a busy worker run it instead, so only
//! the local one will keep an idle worker's own wake-up). Deferrable timers
//! are no event: they never wake a worker.
//!
//! # The idle protocol
//!
//! [`Nohz::idle_enter`] publishes, in each source, the tick the worker plans
//! to wake at; from then until [`Nohz::idle_exit`], an enqueue that fires
//! earlier reaches [`Nohz::timer_on_idle`](crate::timer_list::base::Hooks::timer_on_idle),
//! the one policy point that decides whom to wake (today: that worker,
//! through its registered waker, as the kernel's `trigger_dyntick_cpu()`
//! sends an IPI). Publishing happens in two passes: the first reads the
//! earliest pinned wheel event, the second stores it in each base (local,
//! global, then the hrtimer bases) under the base's lock together with a
//! fresh look at its own next event. An arm that slips in before a base's
//! store is seen by that look; one after it sees the published tick and
//! wakes the worker. A published tick may be later than the final one (a
//! later base lowered it): that only costs a spurious wake-up, never a
//! missed one.
//!
//! # The pull model
//!
//! A member of the pull model (`migration/`) that goes idle does not wake
//! for its movable timers: its global base's first expiry goes into the
//! hierarchy, and a busy worker expires it (`pull.rs`). The idle
//! computation's *global* answer is then the wake-up the worker must arm
//! for movable events: none, unless it is the last worker to go idle (then
//! the first movable expiry of the whole system). A worker that is no
//! member (a thread that entered a worker without registering) wakes for
//! its own movable timers, as the kernel did before 6.9.
//!
//! # Wakers
//!
//! Each worker has at most one waker, a closure that interrupts its sleep,
//! kept under a small mutex that is never taken under a base lock. A thread
//! that blocks inside utimer on a worker (a sleep) swaps in its own waker
//! for the time it blocks ([`Nohz::swap_waker`]).

mod pull;

pub(crate) use pull::Monitor;

use crate::hrtimer::HrTable;
use crate::migration::{Deactivated, Hierarchy, NewTimer, TopIdle, Wake};
use crate::sync::Mutex;
use crate::time::{ClockId, TickSource};
use crate::timer_list::base::{BaseKind, Bases, Hooks, Summaries};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Wakes one worker's thread. Must not block; called with no utimer lock
/// held.
pub(crate) type Waker = Arc<dyn Fn() + Send + Sync>;

/// A worker's next events: wheel events as ticks, hrtimer events as
/// `CLOCK_MONOTONIC` nanoseconds (`None`: none).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct NextEvents {
    /// Pinned events: only this worker may run them.
    pub(crate) local: Option<u64>,
    /// Movable events: another worker may run them (pull model). From the
    /// idle computation: the wake-up to arm for them (see the module docs).
    pub(crate) global: Option<u64>,
    /// The first hrtimer event (pinned: hrtimers are always expired by
    /// their worker), in monotonic ns.
    pub(crate) precise: Option<u64>,
}

/// What an idle worker does next.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Idle {
    /// Something is due already: run it instead of sleeping.
    Run,
    /// Sleep for at most this long (`None`: until woken).
    Sleep(Option<Duration>),
}

fn min(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl NextEvents {
    /// The earliest wheel event, as a tick.
    pub(crate) fn earliest(self) -> Option<u64> {
        min(self.local, self.global)
    }

    /// The earliest event of all, as a tick (an hrtimer's rounded up: a
    /// loop that sleeps until that tick is late for it by less than a tick,
    /// never early; [`Nohz::idle`] is precise).
    pub(crate) fn earliest_tick(self, ticks: &TickSource) -> Option<u64> {
        min(self.earliest(), self.precise.map(|ns| ticks.tick_of_ns(ns)))
    }

    /// Whether an event is due now (a wheel event at the precise clock's
    /// tick, an hrtimer at the monotonic clock's nanosecond).
    fn due(self, ticks: &TickSource) -> bool {
        self.earliest().is_some_and(|t| t <= ticks.now_precise())
            || self
                .precise
                .is_some_and(|ns| ns <= ticks.now_ns(ClockId::Monotonic))
    }

    /// The earliest event of all as a monotonic instant (`None`: none, or a
    /// manual clock).
    pub(crate) fn deadline(self, ticks: &TickSource) -> Option<Instant> {
        let wheel = self.earliest().and_then(|t| ticks.instant_of(t));
        let hr = self.precise.and_then(|ns| ticks.instant_of_ns(ns));
        match (wheel, hr) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// A worker's wheel bases as an event source, beside the pull model's
/// hierarchy. (The hrtimer bases, the other source, answer in nanoseconds
/// and take part in no hierarchy: [`HrTable`] has its own calls, and
/// [`Nohz`] asks both.)
struct WheelSource<'a> {
    bases: &'a Bases,
    hier: &'a Hierarchy,
    pull: bool,
}

impl WheelSource<'_> {
    /// The worker's next wheel events, each read under its base's lock.
    fn next_events(&self, worker: usize) -> NextEvents {
        NextEvents {
            local: self.bases.base(worker, BaseKind::Local).next_expiry(),
            global: self.bases.base(worker, BaseKind::Global).next_expiry(),
            precise: None,
        }
    }

    /// The worker goes idle until `until` at the latest: publish it, and
    /// return the next events read under the same locks.
    fn publish_idle(&self, worker: usize, until: u64) -> NextEvents {
        let local = self.bases.base(worker, BaseKind::Local).idle_enter(until);
        let until = local.map_or(until, |l| l.min(until));
        let global = self.bases.base(worker, BaseKind::Global);
        // Without the pull model the hierarchy only tracks who is busy.
        let pull = self.pull;
        let global = global.with_next_expiry(|next| {
            match self.hier.deactivate(worker, next.filter(|_| pull)) {
                // The hierarchy has the first event; an earlier arm must
                // reach it (`new_timer`).
                Deactivated::Idle(top) if pull => (top.arm, Some(next.unwrap_or(u64::MAX))),
                // No member, or no pull model: wake for its own movable
                // timers, as the kernel before 6.9.
                _ => (next, Some(next.map_or(until, |n| n.min(until)))),
            }
        });
        NextEvents {
            local,
            global,
            precise: None,
        }
    }

    /// The worker is busy again at tick `now` (its heartbeat): clear what
    /// `publish_idle` published, and make it active in the pull model's
    /// hierarchy. Returns whether that made the hierarchy's top active.
    fn clear_idle(&self, worker: usize, now: u64) -> bool {
        // Active and no longer idle on the global base in one step, under
        // its lock, which a stall and a remote expiry's update take too to
        // mark it idle: neither can land in between, where its threshold
        // would be wiped while the hierarchy counts the worker idle (arms
        // there would then reach nobody).
        let global = self.bases.base(worker, BaseKind::Global);
        let top = global.idle_exit_with(|| self.hier.activate(worker, now));
        self.bases.base(worker, BaseKind::Local).idle_exit();
        top
    }

    /// Runs the worker's wheel timers due at or before `now`; returns how
    /// many ran and its next events afterwards.
    fn run_expired(&self, worker: usize, now: u64) -> (usize, NextEvents) {
        let mut ran = 0;
        let mut next = NextEvents::default();
        for kind in BaseKind::ALL {
            let done = crate::timer_list::base::run_expired(self.bases.base(worker, kind), now);
            ran += done.ran;
            match kind {
                BaseKind::Local => next.local = done.next,
                BaseKind::Global => next.global = done.next,
                BaseKind::Deferrable => {}
            }
        }
        (ran, next)
    }
}

/// The per-worker idle state of a system: wakers, the wake policy, the
/// pull model's hierarchy and its stall monitor.
pub(crate) struct Nohz {
    wakers: Box<[Mutex<Option<Waker>>]>,
    /// The second event source: every worker's hrtimer bases.
    pub(crate) hr: HrTable,
    pub(crate) hier: Hierarchy,
    pub(crate) monitor: Monitor,
    /// The pull model is on (else every worker wakes for its own movable
    /// timers, as the kernel before 6.9; the hierarchy only tracks who is busy).
    pub(crate) pull: bool,
    /// Looks again for the thread that serves the hrtimers, if one does
    /// (`system/serve.rs`; set by the system layer at build): an hrtimer
    /// that an expiry run queues again earlier than published wakes it
    /// too.
    pub(crate) serve_kick: std::sync::OnceLock<Box<dyn Fn() + Send + Sync>>,
}

impl Nohz {
    pub(crate) fn new(
        workers: usize,
        hier: Hierarchy,
        stall_bound: u64,
        pull: bool,
        summaries: Arc<Summaries>,
        serve_mode: bool,
    ) -> Arc<Nohz> {
        Arc::new(Nohz {
            wakers: (0..workers).map(|_| Mutex::new(None)).collect(),
            hr: HrTable::new(workers, summaries, serve_mode),
            hier,
            monitor: Monitor::new(stall_bound),
            pull,
            serve_kick: std::sync::OnceLock::new(),
        })
    }

    /// `bases`' wheels as an event source.
    fn wheels<'a>(&'a self, bases: &'a Bases) -> WheelSource<'a> {
        WheelSource {
            bases,
            hier: &self.hier,
            pull: self.pull,
        }
    }

    /// "Until when may `worker` sleep?": its next events over every source,
    /// published so that an earlier arm wakes it. The kernel's
    /// `tick_nohz_idle_enter()` / `get_next_timer_interrupt()`.
    pub(crate) fn idle_enter(&self, bases: &Bases, worker: usize) -> NextEvents {
        let wheels = self.wheels(bases);
        // Only the local part: whether movable events keep this worker
        // awake is the hierarchy's answer, in `publish_idle`.
        let until = wheels.next_events(worker).local.unwrap_or(u64::MAX);
        let mut next = wheels.publish_idle(worker, until);
        next.precise = self.hr.idle_enter(worker, &bases.ticks);
        next
    }

    /// [`idle_enter`](Self::idle_enter), and what to do about it: run at
    /// once, or sleep until the earliest event (precise for hrtimers; a
    /// manual clock has no instant, so it looks again after a tick).
    pub(crate) fn idle(&self, bases: &Bases, worker: usize) -> Idle {
        let next = self.idle_enter(bases, worker);
        let ticks = &bases.ticks;
        if next.due(ticks) {
            return Idle::Run;
        }
        if next.earliest().is_none() && next.precise.is_none() {
            return Idle::Sleep(None);
        }
        Idle::Sleep(Some(next.deadline(ticks).map_or(ticks.tick(), |at| {
            at.saturating_duration_since(Instant::now())
        })))
    }

    /// [`idle`](Self::idle) for a worker that sleeps on an alarm
    /// (`system/serve.rs`): `None` to run at once, else its deadline
    /// without hrtimers and its first hrtimer expiry, each in monotonic ns
    /// (`u64::MAX`: none). A real clock only.
    pub(crate) fn idle_split(&self, bases: &Bases, worker: usize) -> Option<(u64, u64)> {
        let next = self.idle_enter(bases, worker);
        let ticks = &bases.ticks;
        if next.due(ticks) {
            return None;
        }
        let wheel = next.earliest().map_or(u64::MAX, |t| ticks.ns_of_tick(t));
        Some((wheel, next.precise.unwrap_or(u64::MAX)))
    }

    /// `worker` is busy again. The kernel's `tick_nohz_idle_exit()`.
    pub(crate) fn idle_exit(&self, bases: &Bases, worker: usize) {
        self.idle_exit_at(bases, worker, bases.ticks.now_precise());
    }

    /// [`idle_exit`](Self::idle_exit) at tick `now`, which becomes the
    /// worker's heartbeat: the precise clock's tick, never the coarse one,
    /// which lags it by up to a few ticks and would make a worker that has
    /// just woken look stalled to the monitor at once.
    fn idle_exit_at(&self, bases: &Bases, worker: usize, now: u64) {
        if self.wheels(bases).clear_idle(worker, now) {
            self.monitor.someone_active();
        }
        self.hr.idle_exit(worker);
    }

    /// `worker`'s earliest event as a tick (an hrtimer's rounded up),
    /// without going idle: one load of its summary while no source changed
    /// since the last answer (`sync/summary.rs`).
    #[inline]
    pub(crate) fn next_tick(&self, bases: &Bases, worker: usize) -> Option<u64> {
        match bases.summaries.of(worker).read() {
            Ok(next) => next,
            Err(()) => self.next_tick_locked(bases, worker),
        }
    }

    /// [`next_tick`](Self::next_tick) when the summary does not know:
    /// claims it, reads every source under its lock (one at a time), and
    /// publishes the answer.
    #[cold]
    #[inline(never)]
    fn next_tick_locked(&self, bases: &Bases, worker: usize) -> Option<u64> {
        let summary = bases.summaries.of(worker);
        let claim = match summary.claim() {
            Ok(next) => return next,
            Err(claim) => claim,
        };
        let (precise, cacheable) = self.hr.next_event_locked(worker, &bases.ticks);
        let next = NextEvents {
            local: bases.base(worker, BaseKind::Local).next_expiry_locked(),
            global: bases.base(worker, BaseKind::Global).next_expiry_locked(),
            precise,
        }
        .earliest_tick(&bases.ticks);
        if cacheable {
            summary.publish(claim, next);
        }
        next
    }

    /// Runs everything of `worker` due at or before `now`, over every
    /// source. The kernel's `run_timer_softirq()`.
    pub(crate) fn run_expired(
        &self,
        bases: &Bases,
        worker: usize,
        now: u64,
    ) -> (usize, NextEvents) {
        if self.hier.heartbeat(worker, now) {
            // The monitor found it stalled: back to work (at this tick
            // point's tick, not an older one).
            self.idle_exit_at(bases, worker, now);
        }
        let (mut ran, mut next) = self.wheels(bases).run_expired(worker, now);
        let (n, precise) = self.hr.run_expired(
            worker,
            &bases.ticks,
            &|payload| {
                if let Some(hook) = bases.panic_hook() {
                    hook(payload);
                }
            },
            &|w| self.wake_hr(w),
        );
        ran += n;
        next.precise = precise;
        ran += self.run_remote(bases, Some(worker), now);
        (ran, next)
    }

    /// Installs `waker` for `worker` and returns the one it replaces.
    pub(crate) fn swap_waker(&self, worker: usize, waker: Option<Waker>) -> Option<Waker> {
        let mut slot = self.wakers[worker]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        std::mem::replace(&mut *slot, waker)
    }

    /// Acts on what a hierarchy walk asks: wakes a worker or the monitor.
    pub(crate) fn act(&self, top: TopIdle) {
        match top.wake {
            Some(Wake::Worker(w)) => self.wake(w),
            Some(Wake::Monitor) => self.monitor.unpark(),
            None => {}
        }
    }

    /// An hrtimer of `worker`'s must fire before it planned to wake: wakes
    /// it, and the thread that serves the hrtimers, if one does.
    pub(crate) fn wake_hr(&self, worker: usize) {
        self.wake(worker);
        if self.hr.served.load(std::sync::atomic::Ordering::SeqCst) {
            if let Some(kick) = self.serve_kick.get() {
                kick();
            }
        }
    }

    /// Wakes `worker`'s thread, if it registered a waker.
    pub(crate) fn wake(&self, worker: usize) {
        let waker = self.wakers[worker]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(wake) = waker {
            wake();
        }
    }
}

impl Hooks for Nohz {
    /// The wake policy: an earlier timer on an idle worker's local base
    /// wakes that worker; one on its global base goes into the hierarchy
    /// (which wakes somebody only if everybody sleeps), or wakes the worker
    /// if it is no member. (Deferrable bases never publish an idle tick, so
    /// they never get here.)
    fn timer_on_idle(&self, worker: usize, kind: BaseKind, expiry: u64) {
        if kind == BaseKind::Global && self.pull {
            match self.hier.new_timer(worker, expiry) {
                NewTimer::NotMember => self.wake(worker),
                NewTimer::Recorded(top) => self.act(top),
            }
        } else {
            self.wake(worker);
        }
    }

    fn run_blocked(&self, bases: &Bases, worker: usize) -> Option<u64> {
        let now = bases.ticks.now_precise();
        self.run_expired(bases, worker, now)
            .1
            .earliest_tick(&bases.ticks)
    }
}
