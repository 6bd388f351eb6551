//! [`Instant`]: a point in time as the crate's clock reads it,
//! `tokio::time::Instant`.

use std::fmt;
use std::ops::{Add, AddAssign, Sub, SubAssign};
use std::time::Duration;

/// A measurement of the monotonic clock as this crate's futures read it:
/// `tokio::time::Instant`, with its methods and operators.
///
/// It wraps a [`std::time::Instant`] and converts to and from one
/// ([`from_std`](Instant::from_std), [`into_std`](Instant::into_std),
/// `From` both ways; with the `tokio` feature, to and from
/// `tokio::time::Instant` too). [`Instant::now`] is the real clock, unless
/// the calling thread's clock is paused ([`pause`](crate::pause)): then it
/// is the paused clock's reading, which only [`advance`](crate::advance)
/// and auto-advance move, as tokio's paused clock. With the `tokio`
/// feature, inside a tokio runtime whose clock is paused, it is
/// `tokio::time::Instant::now()`, that clock's reading. A
/// `std::time::Instant` read while the clock is paused still reads real
/// time.
///
/// As tokio's, the differences saturate at zero: `a - b`,
/// [`duration_since`](Instant::duration_since) and
/// [`elapsed`](Instant::elapsed) never panic when `b` is later than `a`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant {
    std: std::time::Instant,
}

impl Instant {
    /// The current reading of the clock (`tokio::time::Instant::now`): the
    /// paused clock's, if the calling thread paused it; with the `tokio`
    /// feature, tokio's (`tokio::time::Instant::now()`, the paused clock's
    /// inside a runtime whose clock is paused); else the real monotonic
    /// clock's.
    #[inline]
    pub fn now() -> Instant {
        Instant {
            std: crate::clock::now(),
        }
    }

    /// The `Instant` of a [`std::time::Instant`]
    /// (`tokio::time::Instant::from_std`).
    #[inline]
    pub fn from_std(std: std::time::Instant) -> Instant {
        Instant { std }
    }

    /// The [`std::time::Instant`] it wraps
    /// (`tokio::time::Instant::into_std`).
    #[inline]
    pub fn into_std(self) -> std::time::Instant {
        self.std
    }

    /// The time from `earlier` to `self`, zero if `earlier` is later
    /// (`tokio::time::Instant::duration_since`).
    #[inline]
    pub fn duration_since(&self, earlier: Instant) -> Duration {
        self.std.saturating_duration_since(earlier.std)
    }

    /// The time from `earlier` to `self`, `None` if `earlier` is later
    /// (`tokio::time::Instant::checked_duration_since`).
    #[inline]
    pub fn checked_duration_since(&self, earlier: Instant) -> Option<Duration> {
        self.std.checked_duration_since(earlier.std)
    }

    /// The time from `earlier` to `self`, zero if `earlier` is later
    /// (`tokio::time::Instant::saturating_duration_since`).
    #[inline]
    pub fn saturating_duration_since(&self, earlier: Instant) -> Duration {
        self.std.saturating_duration_since(earlier.std)
    }

    /// The time since `self` by [`Instant::now`], zero if `self` is later
    /// (`tokio::time::Instant::elapsed`): on a paused clock, the paused
    /// time.
    #[inline]
    pub fn elapsed(&self) -> Duration {
        Instant::now().saturating_duration_since(*self)
    }

    /// `self + duration`, `None` if that overflows
    /// (`tokio::time::Instant::checked_add`).
    #[inline]
    pub fn checked_add(&self, duration: Duration) -> Option<Instant> {
        self.std.checked_add(duration).map(Instant::from_std)
    }

    /// `self - duration`, `None` if that overflows
    /// (`tokio::time::Instant::checked_sub`).
    #[inline]
    pub fn checked_sub(&self, duration: Duration) -> Option<Instant> {
        self.std.checked_sub(duration).map(Instant::from_std)
    }
}

impl From<std::time::Instant> for Instant {
    fn from(std: std::time::Instant) -> Instant {
        Instant::from_std(std)
    }
}

impl From<Instant> for std::time::Instant {
    fn from(i: Instant) -> std::time::Instant {
        i.into_std()
    }
}

#[cfg(feature = "tokio")]
impl From<tokio::time::Instant> for Instant {
    /// The same point in time (both wrap a `std::time::Instant`).
    fn from(i: tokio::time::Instant) -> Instant {
        Instant::from_std(i.into_std())
    }
}

#[cfg(feature = "tokio")]
impl From<Instant> for tokio::time::Instant {
    /// The same point in time (both wrap a `std::time::Instant`).
    fn from(i: Instant) -> tokio::time::Instant {
        tokio::time::Instant::from_std(i.into_std())
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;

    /// # Panics
    /// If the result overflows, as `std::time::Instant`'s.
    #[inline]
    fn add(self, rhs: Duration) -> Instant {
        Instant::from_std(self.std + rhs)
    }
}

impl AddAssign<Duration> for Instant {
    #[inline]
    fn add_assign(&mut self, rhs: Duration) {
        *self = *self + rhs;
    }
}

impl Sub for Instant {
    type Output = Duration;

    /// The time from `rhs` to `self`, zero if `rhs` is later (as tokio's).
    #[inline]
    fn sub(self, rhs: Instant) -> Duration {
        self.std.saturating_duration_since(rhs.std)
    }
}

impl Sub<Duration> for Instant {
    type Output = Instant;

    /// # Panics
    /// If the result overflows, as `std::time::Instant`'s.
    #[inline]
    fn sub(self, rhs: Duration) -> Instant {
        Instant::from_std(self.std - rhs)
    }
}

impl SubAssign<Duration> for Instant {
    #[inline]
    fn sub_assign(&mut self, rhs: Duration) {
        *self = *self - rhs;
    }
}

impl fmt::Debug for Instant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.std.fmt(f)
    }
}
