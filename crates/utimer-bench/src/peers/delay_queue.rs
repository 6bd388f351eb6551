//! `tokio_util::time::DelayQueue`: a hashed timer wheel of its own (slab of
//! entries, 6 levels of 64 slots) that hands expired values back through
//! `poll_expired`, driven by one tokio `Sleep` for its earliest deadline.
//!
//! Arm is `insert_at`, re-arm `reset_at`, cancel `remove`; all run inside
//! the runtime context because the queue (re)creates its `Sleep` whenever
//! its earliest deadline changes. Firing is draining `poll_expired` after
//! the deadlines have passed and the driver has turned once (untimed); the
//! drain includes the `Sleep` the queue re-creates after each expired slot.

use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::task::noop_waker_ref;
use tokio::runtime::{Handle, Runtime};
use tokio::time::Instant;
use tokio_util::time::delay_queue::{DelayQueue, Key};

use super::tokio_sleep::current_thread_runtime;

#[derive(Debug)]
pub struct DelayQueuePeer {
    rt: Runtime,
    handle: Handle,
    base: Instant,
    // Dropped before `rt` (field order): its `Sleep` belongs to the runtime.
    q: DelayQueue<u32>,
}

impl DelayQueuePeer {
    #[inline]
    fn deadline(&self, tick: u64) -> Instant {
        self.base + Duration::from_millis(tick)
    }

    fn tick(&self, at: Instant) -> u64 {
        (at - self.base).as_millis() as u64
    }
}

impl super::TimerPeer for DelayQueuePeer {
    type Handle = Option<Key>;
    const NAME: &'static str = "tokio DelayQueue";

    fn new() -> Result<Self, String> {
        let rt = current_thread_runtime()?;
        let handle = rt.handle().clone();
        let q = {
            let _ctx = handle.enter();
            DelayQueue::new()
        };
        Ok(DelayQueuePeer {
            rt,
            handle,
            base: Instant::now(),
            q,
        })
    }

    fn with_ctx<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let h = self.handle.clone();
        let _ctx = h.enter();
        f(self)
    }

    fn now(&mut self) -> u64 {
        self.tick(Instant::now())
    }

    fn handle(&mut self) -> Result<Self::Handle, String> {
        Ok(None)
    }

    #[inline]
    fn arm(&mut self, h: &mut Self::Handle, expires: u64) {
        let d = self.deadline(expires);
        *h = Some(self.q.insert_at(0, d));
    }

    #[inline]
    fn rearm(&mut self, h: &mut Self::Handle, expires: u64) {
        let d = self.deadline(expires);
        match h {
            Some(k) => self.q.reset_at(k, d),
            None => *h = Some(self.q.insert_at(0, d)),
        }
    }

    #[inline]
    fn cancel(&mut self, h: &mut Self::Handle) {
        if let Some(k) = h.take() {
            self.q.remove(&k);
        }
    }

    fn next_expiry(&mut self) -> Result<Option<u64>, &'static str> {
        Ok(self.q.peek().map(|k| self.tick(self.q.deadline(&k))))
    }

    fn wait_until(&mut self, until: u64) {
        let now = self.now();
        if until > now {
            std::thread::sleep(Duration::from_millis(until - now + 1));
        }
        // Turn the driver so that registering the queue's `Sleep` finds its
        // deadline already elapsed.
        self.rt.block_on(tokio::task::yield_now());
    }

    fn fire(&mut self, _until: u64) -> Result<Option<usize>, &'static str> {
        let mut cx = Context::from_waker(noop_waker_ref());
        let mut n = 0;
        while let Poll::Ready(Some(e)) = self.q.poll_expired(&mut cx) {
            std::hint::black_box(e);
            n += 1;
        }
        Ok(Some(n))
    }
}

#[cfg(test)]
mod tests {
    use super::super::TimerPeer;
    use super::*;

    #[test]
    fn drains_after_deadlines() {
        let mut p = DelayQueuePeer::new().unwrap();
        p.with_ctx(|p| {
            let now = p.now();
            let mut hs: Vec<_> = (0..100).map(|_| p.handle().unwrap()).collect();
            for (i, h) in hs.iter_mut().enumerate() {
                p.arm(h, now + 1 + (i as u64 % 4));
            }
            assert_eq!(p.next_expiry().unwrap(), Some(now + 1));
            p.wait_until(now + 6);
            assert_eq!(p.fire(now + 6).unwrap(), Some(100));
            let mut h = p.handle().unwrap();
            p.arm(&mut h, now + 1000);
            p.rearm(&mut h, now + 1001);
            p.cancel(&mut h);
        });
    }
}
