//! [`Ktime`]: a point on an hrtimer's clock, in nanoseconds.

use std::ops::{Add, Sub};
use std::time::Duration;

/// A time of a clock in nanoseconds: the kernel's `ktime_t`, what an
/// hrtimer is started to ([`HrTimer::start`](crate::HrTimer::start)) and
/// what its clock reads ([`HrTimer::now`](crate::HrTimer::now)).
///
/// A wheel timer counts in ticks of the system's coarse clock
/// ([`TimerSystem::now`](crate::TimerSystem::now), the kernel's
/// `jiffies`); an hrtimer counts in nanoseconds of its own clock. The two
/// are different types, so one cannot be passed for the other: a bare
/// integer is neither.
///
/// ```
/// use std::time::Duration;
/// use utimer::{ClockId, HrRestart, Ktime, TimerSystem};
///
/// let sys = TimerSystem::without_threads(1);
/// let t = sys.hrtimer(ClockId::Monotonic, |_| HrRestart::NoRestart);
/// t.start(t.now() + Duration::from_micros(50)).unwrap(); // 50 µs from now
/// t.start(Ktime::from_nanos(1_000_000)).unwrap();        // at 1 ms of the clock
/// ```
///
/// ```compile_fail
/// # use utimer::{ClockId, HrRestart, TimerSystem};
/// # let sys = TimerSystem::without_threads(1);
/// # let t = sys.hrtimer(ClockId::Monotonic, |_| HrRestart::NoRestart);
/// t.start(1_000_000u64).unwrap(); // a bare integer is no time
/// ```
///
/// Arithmetic saturates: adding a `Duration` never wraps past
/// [`Ktime::MAX`], subtracting never goes below zero.
#[doc(alias = "ktime_t")]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ktime(u64);

impl Ktime {
    /// The clock's origin.
    pub const ZERO: Ktime = Ktime(0);
    /// The latest time there is: the kernel's `KTIME_MAX`, a time that
    /// never comes.
    #[doc(alias = "KTIME_MAX")]
    pub const MAX: Ktime = Ktime(u64::MAX);

    /// `ns` nanoseconds of the clock: the kernel's `ns_to_ktime()`.
    #[doc(alias = "ns_to_ktime")]
    pub const fn from_nanos(ns: u64) -> Ktime {
        Ktime(ns)
    }

    /// The time in nanoseconds of the clock: the kernel's
    /// `ktime_to_ns()`.
    #[doc(alias = "ktime_to_ns")]
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// How long after `earlier` this is, zero if it is not later: the
    /// kernel's `ktime_sub()` of two times, clamped at zero.
    #[doc(alias = "ktime_sub")]
    pub fn saturating_duration_since(self, earlier: Ktime) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Add<Duration> for Ktime {
    type Output = Ktime;

    /// The kernel's `ktime_add_safe()`: saturates at [`Ktime::MAX`].
    #[doc(alias = "ktime_add_safe")]
    fn add(self, d: Duration) -> Ktime {
        Ktime(self.0.saturating_add(nanos(d)))
    }
}

impl Sub<Duration> for Ktime {
    type Output = Ktime;

    /// Saturates at [`Ktime::ZERO`].
    fn sub(self, d: Duration) -> Ktime {
        Ktime(self.0.saturating_sub(nanos(d)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_saturates_and_orders() {
        let t = Ktime::from_nanos(1_000);
        assert_eq!((t + Duration::from_nanos(500)).as_nanos(), 1_500);
        assert_eq!(t - Duration::from_secs(1), Ktime::ZERO);
        assert_eq!(Ktime::MAX + Duration::from_nanos(1), Ktime::MAX);
        assert_eq!(Ktime::from_nanos(u64::MAX - 1) + Duration::MAX, Ktime::MAX);
        assert_eq!(
            (t + Duration::from_micros(3)).saturating_duration_since(t),
            Duration::from_micros(3)
        );
        assert_eq!(t.saturating_duration_since(Ktime::MAX), Duration::ZERO);
        assert!(Ktime::ZERO < t && t < Ktime::MAX);
    }
}
