//! utimer's `TimerSystem` as a benchmark peer: one worker, the calling
//! thread entered on it (so every timer goes to that worker's own bases),
//! or, for `utimer (owner)`, registered as it (so it owns the bases, as a
//! runtime's worker thread does), timers created once (`sys.timer`) and then armed
//! with `add`, re-armed with `modify`, cancelled with `delete`, as kernel
//! code does with `timer_setup` / `mod_timer` / `timer_delete`.
//!
//! The system runs on a manual clock set to the same virtual "now" as the
//! heap and B-tree peers, so every run places timers at the same levels.
//! Arming above wheel level 0 reads the clock (a base brings a stale clock
//! forward first): with the manual clock that is one load. With the default
//! monotonic clock it is a coarse vDSO read, which these rows do not
//! include (see the README).

use std::sync::Arc;

use super::START_TICK;
use utimer::{Clock, Expiry, Timer, TimerFlags, TimerSystem};

/// The peer; `PINNED` creates `TimerFlags::PINNED` timers, which live in
/// the worker's *local* base (the kernel's `BASE_LOCAL`) instead of its
/// global base. Both are the calling worker's own bases. `OWNER`: the
/// calling thread registers as the worker (`register_worker`) instead of
/// entering it, so it owns the bases and its locks take the biased path
/// (no atomic read-modify-write).
#[derive(Debug)]
pub struct UtimerPeerT<const PINNED: bool, const OWNER: bool = false> {
    pub sys: Arc<TimerSystem>,
    pub clock: Clock,
}

/// The default: timers with no flags (the worker's global base).
pub type UtimerPeer = UtimerPeerT<false>;
/// Pinned timers (the worker's local base).
pub type PinnedUtimerPeer = UtimerPeerT<true>;
/// Default timers, armed by the thread that owns the worker.
pub type OwnerUtimerPeer = UtimerPeerT<false, true>;

impl<const PINNED: bool, const OWNER: bool> UtimerPeerT<PINNED, OWNER> {
    /// A system with `workers` workers on a manual clock at [`START_TICK`],
    /// counting lock-free re-arms if `stats`.
    pub fn with(workers: usize, stats: bool) -> Self {
        let clock = Clock::manual();
        clock.set(START_TICK);
        let sys = TimerSystem::builder()
            .workers(workers)
            .clock(clock.clone())
            .stats(stats)
            .build_without_threads();
        UtimerPeerT {
            sys: Arc::new(sys),
            clock,
        }
    }
}

/// A timer with an empty callback.
pub fn empty_timer(sys: &TimerSystem) -> Timer {
    sys.timer(|_t: &Timer| {})
}

impl<const PINNED: bool, const OWNER: bool> super::TimerPeer for UtimerPeerT<PINNED, OWNER> {
    type Handle = Timer;
    const NAME: &'static str = match (PINNED, OWNER) {
        (true, _) => "utimer (pinned)",
        (false, true) => "utimer (owner)",
        (false, false) => "utimer",
    };

    fn new() -> Result<Self, String> {
        Ok(Self::with(1, false))
    }

    fn with_ctx<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let sys = self.sys.clone();
        if OWNER {
            let _worker = sys.register_worker(0, || {}).expect("worker 0 exists");
            f(self)
        } else {
            let _worker = sys.enter(0).expect("worker 0 exists");
            f(self)
        }
    }

    fn now(&mut self) -> u64 {
        self.sys.now()
    }

    fn handle(&mut self) -> Result<Timer, String> {
        if PINNED {
            Ok(self
                .sys
                .timer_with_flags(TimerFlags::PINNED, |_t: &Timer| {}))
        } else {
            Ok(empty_timer(&self.sys))
        }
    }

    #[inline]
    fn arm(&mut self, h: &mut Timer, expires: u64) {
        let r = h.add(Expiry::Tick(expires));
        debug_assert!(r.is_ok(), "{r:?}");
    }

    #[inline]
    fn rearm(&mut self, h: &mut Timer, expires: u64) {
        let r = h.modify(Expiry::Tick(expires));
        debug_assert!(r.is_ok(), "{r:?}");
    }

    #[inline]
    fn cancel(&mut self, h: &mut Timer) {
        std::hint::black_box(h.delete());
    }

    fn next_expiry(&mut self) -> Result<Option<u64>, &'static str> {
        Ok(self.sys.next_expiry(0).expect("worker 0 exists"))
    }

    fn is_pending(&self, h: &Timer) -> Option<bool> {
        Some(h.is_pending())
    }

    fn wait_until(&mut self, until: u64) {
        self.clock.set(until);
    }

    fn fire(&mut self, until: u64) -> Result<Option<usize>, &'static str> {
        Ok(Some(
            self.sys.run_expired(0, until).expect("worker 0 exists"),
        ))
    }
}
