//! What a timer's callback shares with its future.
//!
//! # Protocol
//!
//! * The callback (on a utimer worker's thread) records what fired in
//!   `fired` (Release), then wakes the registered waker
//!   ([`AtomicWaker::wake`]).
//! * A poll reads `fired` (Acquire); if it has not fired, it registers its
//!   waker ([`AtomicWaker::register`]) and reads `fired` again. Either the
//!   second read sees the fire, or the wake came after the registration and
//!   wakes the new waker: `AtomicWaker` orders a `register` and a `wake`
//!   that race (one of them sees the other), so no fire is missed, and a
//!   waker changed between polls replaces the old one.
//!
//! `fired` holds the highest expiry fired so far (hrtimers: ns of the
//! timer's clock; the wheel: 1). Since a timer fires only once its clock
//! read its expiry, `fired >= at` proves the clock read `at`; a callback
//! that ran for an older, earlier expiry (a reset raced with it) records a
//! value below the new one and completes nothing early.

use atomic_waker::AtomicWaker;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{AcqRel, Acquire};
use std::task::{Context, Poll};

pub(crate) struct Shared {
    pub(crate) fired: AtomicU64,
    pub(crate) waker: AtomicWaker,
}

impl Shared {
    pub(crate) fn new() -> Shared {
        Shared {
            fired: AtomicU64::new(0),
            waker: AtomicWaker::new(),
        }
    }

    /// A first poll's shared state, with `cx`'s waker registered before
    /// the timer exists (so its first fire finds it), unless `deadline`
    /// has passed already (`None`: complete at once, allocating nothing).
    pub(crate) fn for_first_poll(
        deadline: std::time::Instant,
        cx: &mut Context<'_>,
    ) -> Option<std::sync::Arc<Shared>> {
        if std::time::Instant::now() >= deadline {
            return None;
        }
        let shared = std::sync::Arc::new(Shared::new());
        shared.waker.register(cx.waker());
        Some(shared)
    }

    /// The callback: `expiry` fired.
    #[inline]
    pub(crate) fn fire(&self, expiry: u64) {
        self.fired.fetch_max(expiry, AcqRel);
        self.waker.wake();
    }

    /// A poll: ready once an expiry at or after `at` fired.
    #[inline]
    pub(crate) fn poll_reached(&self, at: u64, cx: &mut Context<'_>) -> Poll<()> {
        if self.fired.load(Acquire) >= at {
            return Poll::Ready(());
        }
        self.waker.register(cx.waker());
        if self.fired.load(Acquire) >= at {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}
