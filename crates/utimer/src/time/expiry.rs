//! [`Expiry`]: when a timer is due, in whichever unit the caller has.

use std::time::{Duration, Instant};

/// When a timer is due: the argument of every arming call
/// ([`Timer::add`](crate::Timer::add), [`modify`](crate::Timer::modify),
/// [`modify_pending`](crate::Timer::modify_pending),
/// [`reduce`](crate::Timer::reduce), [`add_on`](crate::Timer::add_on)).
///
/// Every arming call takes `impl Into<Expiry>`, so a `Duration` or an
/// `Instant` can be passed as is; an absolute tick is spelled out, as
/// [`Expiry::Tick`] (a bare integer does not convert: is `250` a tick or
/// milliseconds?):
///
/// ```
/// use std::time::{Duration, Instant};
/// use utimer::{Expiry, TimerSystem};
///
/// let sys = TimerSystem::without_threads(1);
/// let t = sys.timer(|_| {});
/// t.modify(Duration::from_millis(10)).unwrap();       // 10 ms from now, never early
/// t.modify(Instant::now() + Duration::from_secs(1)).unwrap(); // at or after an instant
/// t.modify(Expiry::AfterTicks(10)).unwrap();          // 10 ticks from now, never early
/// t.modify(Expiry::Tick(sys.now() + 10)).unwrap();    // absolute tick (jiffies + 10)
/// ```
///
/// ```compile_fail
/// # let sys = utimer::TimerSystem::without_threads(1);
/// # let t = sys.timer(|_| {});
/// t.modify(250u64).unwrap(); // a bare integer is no expiry
/// ```
///
/// The relative forms read the precise clock and round up, so the timer is
/// never early whatever the coarse clock behind
/// [`TimerSystem::now`](crate::TimerSystem::now) does. An absolute tick is
/// taken literally: `Tick(now() + 10)` is relative to a clock that may lag real
/// time by up to its coarse resolution (see [`Clock`](crate::Clock)), as
/// `jiffies + 10` is in the kernel.
///
/// Every value is valid: expiries in the past fire at the next expiry run,
/// and expiries beyond the wheel's range (12.2 days at 1 ms ticks) are
/// clamped to it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Expiry {
    /// At this tick of the system's clock (the kernel's `expires` in
    /// jiffies).
    Tick(u64),
    /// This many ticks from now, measured on the precise clock and rounded
    /// up: never early.
    AfterTicks(u64),
    /// This long from now, rounded up to whole ticks: never early.
    After(Duration),
    /// At or after this instant (for a manual clock: this long from now, as
    /// measured on the monotonic clock).
    At(Instant),
}

impl From<Duration> for Expiry {
    #[inline(always)]
    fn from(d: Duration) -> Expiry {
        Expiry::After(d)
    }
}

impl From<Instant> for Expiry {
    #[inline(always)]
    fn from(instant: Instant) -> Expiry {
        Expiry::At(instant)
    }
}
