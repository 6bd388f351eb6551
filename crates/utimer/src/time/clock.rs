//! Clocks: the tick counter that timer expiries are expressed in.
//!
//! The kernel's timers count in jiffies, a global tick counter that is cheap
//! to read. utimer's equivalent is [`TimerSystem::now`](crate::TimerSystem::now),
//! which reads a [`Clock`]:
//!
//! * [`Clock::monotonic`] (the default) reads `CLOCK_MONOTONIC_COARSE`
//!   through the vDSO: no system call, but only as fine as the kernel's own
//!   tick (1–4 ms). Like jiffies it may lag real time by up to that
//!   resolution: a timer armed at `now() + n` can fire up to one coarse
//!   period before `n` ticks of real time have passed. Relative expiries
//!   ([`Expiry::After`](crate::Expiry::After) and
//!   [`Expiry::AfterTicks`](crate::Expiry::AfterTicks)) read the precise clock
//!   instead and round up, so they are never early.
//! * [`Clock::manual`] is set and advanced by the program: for tests,
//!   simulations and benchmarks that must be deterministic. It saturates at
//!   `u64::MAX` and never goes backwards.

use super::divide::Divider;
use super::Expiry;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A time source for a [`TimerSystem`](crate::TimerSystem).
#[derive(Clone, Debug)]
pub struct Clock {
    kind: Kind,
}

/// The clocks an hrtimer or a POSIX timer counts in (`clockid_t`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ClockId {
    /// `CLOCK_MONOTONIC`: does not count time in suspend; never set.
    Monotonic = 0,
    /// `CLOCK_BOOTTIME`: like `Monotonic`, but counts time in suspend.
    Boottime = 1,
    /// `CLOCK_REALTIME`: wall time; may be set (an absolute timer then fires
    /// at the new wall time, see `hrtimer/`).
    Realtime = 2,
}

impl ClockId {
    /// All clocks, in queue order.
    pub const ALL: [ClockId; 3] = [ClockId::Monotonic, ClockId::Boottime, ClockId::Realtime];

    /// The `clockid_t`.
    pub fn raw(self) -> libc::clockid_t {
        match self {
            ClockId::Monotonic => libc::CLOCK_MONOTONIC,
            ClockId::Boottime => libc::CLOCK_BOOTTIME,
            ClockId::Realtime => libc::CLOCK_REALTIME,
        }
    }

    /// The clock a `clockid_t` names, if utimer supports it (`None`:
    /// `EINVAL` in the C API).
    pub fn from_raw(id: libc::clockid_t) -> Option<ClockId> {
        match id {
            libc::CLOCK_MONOTONIC => Some(ClockId::Monotonic),
            libc::CLOCK_BOOTTIME => Some(ClockId::Boottime),
            libc::CLOCK_REALTIME => Some(ClockId::Realtime),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
enum Kind {
    Monotonic,
    Manual(Arc<AtomicU64>),
}

impl Default for Clock {
    fn default() -> Self {
        Clock::monotonic()
    }
}

impl Clock {
    /// The system's monotonic clock (coarse reads for `now`).
    pub fn monotonic() -> Clock {
        Clock {
            kind: Kind::Monotonic,
        }
    }

    /// A clock that only moves when told to, starting at tick 0. Clones share
    /// the same time.
    pub fn manual() -> Clock {
        Clock {
            kind: Kind::Manual(Arc::new(AtomicU64::new(0))),
        }
    }

    /// Whether this is a manual clock.
    pub fn is_manual(&self) -> bool {
        matches!(self.kind, Kind::Manual(_))
    }

    /// Sets a manual clock to `tick`. Time never goes backwards: an earlier
    /// tick is ignored. No effect on the monotonic clock.
    pub fn set(&self, tick: u64) {
        if let Kind::Manual(t) = &self.kind {
            t.fetch_max(tick, Ordering::Release);
        }
    }

    /// Advances a manual clock by `ticks` (saturating at `u64::MAX`) and
    /// returns the new tick. Returns 0 for the monotonic clock.
    pub fn advance(&self, ticks: u64) -> u64 {
        match &self.kind {
            Kind::Manual(t) => {
                let old = t
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
                        Some(v.saturating_add(ticks))
                    })
                    .unwrap_or_else(|v| v);
                old.saturating_add(ticks)
            }
            Kind::Monotonic => 0,
        }
    }
}

/// A clock bound to an epoch and a tick length: converts between ticks,
/// durations and instants.
#[derive(Debug)]
pub(crate) struct TickSource {
    clock: Clock,
    tick_ns: u64,
    /// Divides by `tick_ns` without a `div` (`divide.rs`).
    per_tick: Divider,
    epoch: Instant,
    epoch_ns: u64,
}

fn monotonic_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes it.
    let rc = unsafe { libc::clock_gettime(id, &mut ts) };
    debug_assert_eq!(rc, 0);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl TickSource {
    pub(crate) fn new(clock: Clock, tick: Duration) -> Self {
        let tick_ns = tick.as_nanos().clamp(1, u64::MAX as u128) as u64;
        let epoch = Instant::now();
        let epoch_ns = monotonic_ns(libc::CLOCK_MONOTONIC);
        TickSource {
            clock,
            tick_ns,
            per_tick: Divider::new(tick_ns),
            epoch,
            epoch_ns,
        }
    }

    pub(crate) fn clock(&self) -> &Clock {
        &self.clock
    }

    pub(crate) fn tick(&self) -> Duration {
        Duration::from_nanos(self.tick_ns)
    }

    /// The current tick, cheaply (coarse for the monotonic clock).
    #[inline]
    pub(crate) fn now(&self) -> u64 {
        match &self.clock.kind {
            Kind::Monotonic => self
                .per_tick
                .div(monotonic_ns(libc::CLOCK_MONOTONIC_COARSE).saturating_sub(self.epoch_ns)),
            Kind::Manual(t) => t.load(Ordering::Acquire),
        }
    }

    /// The current time of `id` in nanoseconds (`clock_gettime`): what
    /// hrtimers count in. A manual clock answers `tick × tick length` for
    /// every id, so that hrtimer tests are as deterministic as wheel ones.
    #[inline]
    pub(crate) fn now_ns(&self, id: ClockId) -> u64 {
        match &self.clock.kind {
            Kind::Monotonic => monotonic_ns(id.raw()),
            Kind::Manual(t) => t.load(Ordering::Acquire).saturating_mul(self.tick_ns),
        }
    }

    /// [`now_ns`](Self::now_ns) from the kernel's coarse clock where it
    /// has one (`CLOCK_MONOTONIC_COARSE`, `CLOCK_REALTIME_COARSE`: no
    /// hardware read, the time of the last tick), so never ahead of
    /// `now_ns` and at most a tick behind it; `CLOCK_BOOTTIME` has no
    /// coarse form and reads precisely. A manual clock answers as
    /// `now_ns`.
    #[inline]
    pub(crate) fn now_ns_coarse(&self, id: ClockId) -> u64 {
        match &self.clock.kind {
            Kind::Monotonic => monotonic_ns(match id {
                ClockId::Monotonic => libc::CLOCK_MONOTONIC_COARSE,
                ClockId::Realtime => libc::CLOCK_REALTIME_COARSE,
                ClockId::Boottime => libc::CLOCK_BOOTTIME,
            }),
            Kind::Manual(_) => self.now_ns(id),
        }
    }

    /// The instant at which the monotonic clock reads `ns` (`None` for a
    /// manual clock, or beyond `Instant`'s range).
    pub(crate) fn instant_of_ns(&self, ns: u64) -> Option<Instant> {
        match &self.clock.kind {
            Kind::Monotonic => match ns.checked_sub(self.epoch_ns) {
                Some(after) => self.epoch.checked_add(Duration::from_nanos(after)),
                None => self
                    .epoch
                    .checked_sub(Duration::from_nanos(self.epoch_ns - ns)),
            },
            Kind::Manual(_) => None,
        }
    }

    /// The monotonic ns at which `tick` begins (for a manual clock, `tick
    /// × tick length`). Saturates.
    pub(crate) fn ns_of_tick(&self, tick: u64) -> u64 {
        let ns = tick.saturating_mul(self.tick_ns);
        match &self.clock.kind {
            Kind::Monotonic => ns.saturating_add(self.epoch_ns),
            Kind::Manual(_) => ns,
        }
    }

    /// The monotonic ns of `instant` (for a manual clock: now plus the
    /// distance to it).
    pub(crate) fn ns_of_instant(&self, instant: Instant) -> u64 {
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        if let Kind::Monotonic = self.clock.kind {
            return match instant.checked_duration_since(self.epoch) {
                Some(after) => self.epoch_ns.saturating_add(ns(after)),
                None => self.epoch_ns.saturating_sub(ns(self.epoch - instant)),
            };
        }
        let now = Instant::now();
        let base = self.now_ns(ClockId::Monotonic);
        match instant.checked_duration_since(now) {
            Some(after) => base.saturating_add(u64::try_from(after.as_nanos()).unwrap_or(u64::MAX)),
            None => base.saturating_sub(
                u64::try_from(now.duration_since(instant).as_nanos()).unwrap_or(u64::MAX),
            ),
        }
    }

    /// The first tick at or after the monotonic clock reads `ns`.
    pub(crate) fn tick_of_ns(&self, ns: u64) -> u64 {
        match &self.clock.kind {
            Kind::Monotonic => self.per_tick.div_ceil(ns.saturating_sub(self.epoch_ns)),
            Kind::Manual(_) => self.per_tick.div_ceil(ns),
        }
    }

    /// The word a manual clock keeps its tick in (`None` for the monotonic
    /// clock): what a base caches to read "now" in one load.
    pub(crate) fn manual_word(&self) -> Option<&AtomicU64> {
        match &self.clock.kind {
            Kind::Manual(t) => Some(t),
            Kind::Monotonic => None,
        }
    }

    /// The current tick from the precise clock, rounded down: every timer
    /// due at or before it is really due.
    pub(crate) fn now_precise(&self) -> u64 {
        match &self.clock.kind {
            Kind::Monotonic => self.ticks_floor(self.epoch.elapsed()),
            Kind::Manual(t) => t.load(Ordering::Acquire),
        }
    }

    /// `d` in whole ticks, rounded down. Durations under 584 years (all
    /// but `Duration::MAX`-like ones) divide in 64 bits without a `div`.
    #[inline]
    fn ticks_floor(&self, d: Duration) -> u64 {
        match u64::try_from(d.as_nanos()) {
            Ok(ns) => self.per_tick.div(ns),
            Err(_) => (d.as_nanos() / self.tick_ns as u128).min(u64::MAX as u128) as u64,
        }
    }

    /// `d` in ticks, rounded up (as [`ticks_floor`](Self::ticks_floor)).
    #[inline]
    fn ticks_ceil(&self, d: Duration) -> u64 {
        match u64::try_from(d.as_nanos()) {
            Ok(ns) => self.per_tick.div_ceil(ns),
            Err(_) => d
                .as_nanos()
                .div_ceil(self.tick_ns as u128)
                .min(u64::MAX as u128) as u64,
        }
    }

    /// The first tick at or after `now + d`: a timer armed for it is never
    /// early. Saturates instead of overflowing.
    pub(crate) fn deadline_after(&self, d: Duration) -> u64 {
        match &self.clock.kind {
            Kind::Monotonic => {
                let since = self.epoch.elapsed().saturating_add(d);
                self.ticks_ceil(since)
            }
            Kind::Manual(t) => t.load(Ordering::Acquire).saturating_add(self.ticks_ceil(d)),
        }
    }

    /// The first tick at or after `ticks` ticks of the precise clock from
    /// now: never early. Saturates.
    pub(crate) fn deadline_after_ticks(&self, ticks: u64) -> u64 {
        match &self.clock.kind {
            Kind::Monotonic => {
                let ns = u128::from(ticks) * u128::from(self.tick_ns);
                let d = Duration::from_nanos(u64::try_from(ns).unwrap_or(u64::MAX));
                self.deadline_after(d)
            }
            Kind::Manual(t) => t.load(Ordering::Acquire).saturating_add(ticks),
        }
    }

    /// Resolves an [`Expiry`] to an absolute tick.
    #[inline(always)]
    pub(crate) fn resolve(&self, expiry: Expiry) -> u64 {
        match expiry {
            Expiry::Tick(tick) => tick,
            Expiry::AfterTicks(n) => self.deadline_after_ticks(n),
            Expiry::After(d) => self.deadline_after(d),
            Expiry::At(instant) => self.deadline_at(instant),
        }
    }

    /// The first tick at or after `instant`.
    pub(crate) fn deadline_at(&self, instant: Instant) -> u64 {
        match &self.clock.kind {
            Kind::Monotonic => self.ticks_ceil(instant.saturating_duration_since(self.epoch)),
            Kind::Manual(_) => {
                self.deadline_after(instant.saturating_duration_since(Instant::now()))
            }
        }
    }

    /// The instant at which `tick` begins (for the monotonic clock), or
    /// `None` for a manual clock or a tick beyond `Instant`'s range.
    pub(crate) fn instant_of(&self, tick: u64) -> Option<Instant> {
        match &self.clock.kind {
            Kind::Monotonic => {
                let ns = (tick as u128).checked_mul(self.tick_ns as u128)?;
                let d = Duration::from_nanos(u64::try_from(ns).ok()?);
                self.epoch.checked_add(d)
            }
            Kind::Manual(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_is_shared_and_monotonic() {
        let c = Clock::manual();
        let src = TickSource::new(c.clone(), Duration::from_millis(1));
        c.set(10);
        assert_eq!(src.now(), 10);
        c.set(5);
        assert_eq!(src.now(), 10);
        assert_eq!(c.advance(3), 13);
        assert_eq!(src.deadline_after(Duration::from_micros(1500)), 15);
        assert_eq!(src.deadline_after(Duration::MAX), u64::MAX);
        assert_eq!(src.deadline_after_ticks(7), 20);
    }

    #[test]
    fn advance_saturates() {
        let c = Clock::manual();
        let src = TickSource::new(c.clone(), Duration::from_millis(1));
        c.set(10);
        assert_eq!(c.advance(u64::MAX), u64::MAX);
        assert_eq!(src.now(), u64::MAX, "time never goes backwards");
        assert_eq!(c.advance(5), u64::MAX);
        assert_eq!(src.deadline_after_ticks(5), u64::MAX);
    }

    #[test]
    fn monotonic_deadlines_are_never_early() {
        let src = TickSource::new(Clock::monotonic(), Duration::from_micros(100));
        let d = Duration::from_millis(3);
        let start = Instant::now();
        let deadline = src.deadline_after(d);
        let at = src.instant_of(deadline).unwrap();
        assert!(at >= start + d);
        assert!(src.now() <= src.now_precise() + 1);
        assert_eq!(src.deadline_after(Duration::MAX), u64::MAX);
        let start = Instant::now();
        let t = src.deadline_after_ticks(30);
        let at = src.instant_of(t).unwrap();
        assert!(at >= start + src.tick() * 30, "AfterTicks is never early");
    }
}
