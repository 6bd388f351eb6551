//! The implementations measured side by side, behind one small trait.
//!
//! Every peer speaks in *ticks* of 1 ms (utimer's default tick and the
//! resolution of tokio's timer): `now()` is the current tick and deadlines
//! are absolute ticks. Each peer maps that onto its own API:
//!
//! | peer | handle the user holds | arm | re-arm | cancel |
//! |---|---|---|---|---|
//! | utimer, utimer (pinned) | `Timer` | `add` | `modify` | `delete` |
//! | utimer wheel | `Option<Key>` | `insert` | `remove` + `insert` | `remove` |
//! | tokio `Sleep` | `Pin<Box<Sleep>>` | create + poll once | `reset` | drop |
//! | tokio alt timer | `Pin<Box<Sleep>>` | create + poll once | `reset` | drop |
//! | `DelayQueue` | `Key` | `insert_at` | `reset_at` | `remove` |
//! | `BinaryHeap` | slot id | push | push + stale old | mark stale |
//! | `BTreeMap` | `(deadline, id)` | insert | remove + insert | remove |
//! | POSIX timer (none / signal) | `timer_t` | `timer_settime` | `timer_settime` | `timer_settime(0)` |
//! | timerfd | fd | `timerfd_settime` | `timerfd_settime` | `timerfd_settime(0)` |
//!
//! The peers written here (heap, B-tree) are deliberately ordinary: what a
//! competent programmer writes in an afternoon, not a tuned competitor.
//! "POSIX timer (none)" is the `SIGEV_NONE` timer asked for; "(signal)"
//! adds a `SIGEV_SIGNAL` timer because Linux does not queue an hrtimer for
//! `SIGEV_NONE` at all (see `posix.rs`).
//!
//! "tokio alt timer" is tokio's `Sleep` on a multi-thread runtime with the
//! alternative (per-worker) timer; it needs tokio built with
//! `--cfg tokio_unstable`, so it runs in a helper process and is not a
//! [`TimerPeer`] (see [`tokio_alt`]).

pub mod btree;
pub mod delay_queue;
pub mod heap;
pub mod posix;
pub mod timerfd;
pub mod tokio_alt;
pub mod tokio_sleep;
pub mod utimer;
pub mod virtual_clock;
pub mod wheel;

use std::time::Duration;

/// The virtual "now" every virtual-clock peer (utimer on a manual clock,
/// the wheel, heap, B-tree and the kernel peers' relative timeouts) starts
/// at; far enough from zero that "past" deadlines are representable.
pub const START_TICK: u64 = 1 << 20;

/// A timer implementation as the benchmark cases see it.
pub trait TimerPeer: Sized {
    /// What the user holds for one timer.
    type Handle;

    /// Row name in the tables.
    const NAME: &'static str;

    /// The most pending timers this peer can sensibly hold, and why not
    /// more (kernel timers: a million file descriptors or POSIX timers is
    /// not something anyone does, and the default limits forbid it).
    const MAX_PENDING: (usize, &'static str) = (usize::MAX, "");

    fn new() -> Result<Self, String>;

    /// Runs `f` inside whatever context the peer needs (the tokio runtime
    /// context, the utimer worker binding). Called once per batch, never per
    /// operation.
    fn with_ctx<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        f(self)
    }

    /// The current tick. Called once per batch.
    fn now(&mut self) -> u64;

    /// A new, unarmed timer.
    fn handle(&mut self) -> Result<Self::Handle, String>;

    /// Arms an unarmed (or fired) timer.
    fn arm(&mut self, h: &mut Self::Handle, expires: u64);

    /// Moves a pending timer to a new expiry.
    fn rearm(&mut self, h: &mut Self::Handle, expires: u64);

    /// Cancels a pending timer.
    fn cancel(&mut self, h: &mut Self::Handle);

    /// Arm then cancel; peers whose natural idiom differs override it
    /// (tokio: a stack-pinned `Sleep`, polled once, then dropped).
    fn arm_cancel(&mut self, h: &mut Self::Handle, expires: u64) {
        self.arm(h, expires);
        self.cancel(h);
    }

    /// The earliest pending expiry, or `Err` if the peer has no such API.
    fn next_expiry(&mut self) -> Result<Option<u64>, &'static str> {
        Err("no next-expiry API")
    }

    /// Whether `h` is still pending, where the peer can tell (used to check,
    /// untimed, that a firing run really fired everything).
    fn is_pending(&self, _h: &Self::Handle) -> Option<bool> {
        None
    }

    /// Untimed preparation before `fire`: make `until` the present (the
    /// manual-clock peers jump; the real-clock peers sleep).
    fn wait_until(&mut self, until: u64) {
        let now = self.now();
        if until > now {
            std::thread::sleep(Duration::from_millis(until - now + 1));
        }
    }

    /// Fires every timer due at `until`, each with an empty callback, and
    /// returns how many fired (`None`: the peer cannot tell cheaply).
    fn fire(&mut self, _until: u64) -> Result<Option<usize>, &'static str> {
        Err("no way to run expired timers from user space")
    }
}
