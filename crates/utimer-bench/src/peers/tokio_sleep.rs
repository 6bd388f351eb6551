//! tokio's timer: `tokio::time::Sleep` in a current-thread runtime with the
//! time driver enabled.
//!
//! A `Sleep` only enters the driver's timer wheel when it is first polled,
//! so "arm" is create + poll once (with a no-op waker; nothing waits on it).
//! "Cancel" is dropping it, which takes it out of the wheel under the
//! driver's lock. "Re-arm" is `Sleep::reset`: a later deadline is recorded
//! lazily without touching the wheel (the wheel entry fires early and is
//! re-queued then), an earlier one re-registers at once.
//!
//! Arm+cancel uses a stack-pinned `Sleep` (`std::pin::pin!`), as an `async`
//! block would; where timers must outlive a stack frame (fills, re-arm) the
//! handle is a `Pin<Box<Sleep>>`, as in tokio's own `DelayQueue` and most
//! hand-written timer lists.
//!
//! Firing: tokio's driver fires timers when the runtime parks. The expiry
//! case times one `block_on(yield_now())`, which parks the driver with a
//! zero timeout after the deadlines have passed: that processes every due
//! entry and calls its waker (here a no-op), the driver's whole cost.

use std::future::Future;
use std::pin::{pin, Pin};
use std::task::Context;
use std::time::Duration;

use futures_util::task::noop_waker_ref;
use tokio::runtime::{Builder, Handle, Runtime};
use tokio::time::{sleep_until, Instant, Sleep};

/// A current-thread tokio runtime with only the time driver.
#[derive(Debug)]
pub struct TokioSleepPeer {
    rt: Runtime,
    handle: Handle,
    base: Instant,
}

impl TokioSleepPeer {
    #[inline]
    fn deadline(&self, tick: u64) -> Instant {
        self.base + Duration::from_millis(tick)
    }
}

/// Polls a future once with a no-op waker.
#[inline]
pub fn poll_once<F: Future>(f: Pin<&mut F>) -> bool {
    let mut cx = Context::from_waker(noop_waker_ref());
    f.poll(&mut cx).is_ready()
}

/// Builds a current-thread runtime with the time driver enabled.
pub fn current_thread_runtime() -> Result<Runtime, String> {
    Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(|e| format!("cannot build a tokio runtime: {e}"))
}

impl super::TimerPeer for TokioSleepPeer {
    type Handle = Option<Pin<Box<Sleep>>>;
    const NAME: &'static str = "tokio Sleep";

    fn new() -> Result<Self, String> {
        let rt = current_thread_runtime()?;
        let handle = rt.handle().clone();
        Ok(TokioSleepPeer {
            rt,
            handle,
            base: Instant::now(),
        })
    }

    fn with_ctx<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let h = self.handle.clone();
        let _ctx = h.enter();
        f(self)
    }

    fn now(&mut self) -> u64 {
        (Instant::now() - self.base).as_millis() as u64
    }

    fn handle(&mut self) -> Result<Self::Handle, String> {
        Ok(None)
    }

    #[inline]
    fn arm(&mut self, h: &mut Self::Handle, expires: u64) {
        let mut s = Box::pin(sleep_until(self.deadline(expires)));
        poll_once(s.as_mut());
        *h = Some(s);
    }

    #[inline]
    fn rearm(&mut self, h: &mut Self::Handle, expires: u64) {
        let d = self.deadline(expires);
        match h {
            Some(s) => s.as_mut().reset(d),
            None => self.arm(h, expires),
        }
    }

    #[inline]
    fn cancel(&mut self, h: &mut Self::Handle) {
        *h = None;
    }

    #[inline]
    fn arm_cancel(&mut self, _h: &mut Self::Handle, expires: u64) {
        let s = pin!(sleep_until(self.deadline(expires)));
        poll_once(s);
    }

    fn is_pending(&self, h: &Self::Handle) -> Option<bool> {
        Some(h.as_ref().is_some_and(|s| !s.is_elapsed()))
    }

    fn fire(&mut self, _until: u64) -> Result<Option<usize>, &'static str> {
        self.rt.block_on(tokio::task::yield_now());
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::super::TimerPeer;
    use super::*;

    #[test]
    fn fires_after_a_driver_turn() {
        let mut p = TokioSleepPeer::new().unwrap();
        p.with_ctx(|p| {
            let now = p.now();
            let mut hs: Vec<_> = (0..100).map(|_| p.handle().unwrap()).collect();
            for (i, h) in hs.iter_mut().enumerate() {
                p.arm(h, now + 1 + (i as u64 % 4));
            }
            assert!(hs.iter().all(|h| p.is_pending(h) == Some(true)));
            p.wait_until(now + 6);
            p.fire(now + 6).unwrap();
            assert!(hs.iter().all(|h| p.is_pending(h) == Some(false)));
            let mut h = p.handle().unwrap();
            p.arm(&mut h, now + 1000);
            p.rearm(&mut h, now + 1001);
            p.cancel(&mut h);
            p.arm_cancel(&mut h, now + 100);
        });
    }
}
