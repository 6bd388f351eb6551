//! Time: the clock a timer system counts in, and the expiry argument that
//! every arming call takes.
//!
//! This is the bottom layer with `sync/`: it imports nothing else of the
//! crate. Ticks are `u64`s of the system's clock (the kernel's jiffies); an
//! [`Expiry`] says when a timer is due as a tick, a `Duration` from now or
//! an `Instant`. An hrtimer counts in nanoseconds of its clock instead, as
//! a [`Ktime`]: a type of its own, so that neither passes for the other.

mod clock;
mod divide;
mod expiry;
mod ktime;

pub(crate) use clock::TickSource;
pub use clock::{Clock, ClockId};
pub use expiry::Expiry;
pub use ktime::Ktime;
