//! Single-threaded timer queues (the heap, the B-tree) as benchmark peers,
//! driven on a virtual clock: one wrapper for both.

/// What a single-threaded timer queue offers the benchmarks.
pub trait VirtualQueue {
    type Handle;
    const NAME: &'static str;
    fn new() -> Self;
    fn timer(&mut self) -> Self::Handle;
    fn arm(&mut self, h: &mut Self::Handle, expires: u64);
    fn cancel(&mut self, h: &mut Self::Handle);
    fn next_expiry(&mut self) -> Option<u64>;
    fn is_pending(&self, h: &Self::Handle) -> bool;
    /// Expires everything due at `until`; returns how many fired.
    fn expire(&mut self, until: u64) -> usize;
}

/// A [`VirtualQueue`] as a benchmark peer, with a virtual clock.
#[derive(Debug)]
pub struct VirtualPeer<Q> {
    pub q: Q,
    now: u64,
}

impl<Q: VirtualQueue> super::TimerPeer for VirtualPeer<Q> {
    type Handle = Q::Handle;
    const NAME: &'static str = Q::NAME;

    fn new() -> Result<Self, String> {
        Ok(VirtualPeer {
            q: Q::new(),
            now: super::START_TICK,
        })
    }

    fn now(&mut self) -> u64 {
        self.now
    }

    fn handle(&mut self) -> Result<Q::Handle, String> {
        Ok(self.q.timer())
    }

    #[inline]
    fn arm(&mut self, h: &mut Q::Handle, expires: u64) {
        self.q.arm(h, expires);
    }

    #[inline]
    fn rearm(&mut self, h: &mut Q::Handle, expires: u64) {
        self.q.arm(h, expires);
    }

    #[inline]
    fn cancel(&mut self, h: &mut Q::Handle) {
        self.q.cancel(h);
    }

    fn next_expiry(&mut self) -> Result<Option<u64>, &'static str> {
        Ok(self.q.next_expiry())
    }

    fn is_pending(&self, h: &Self::Handle) -> Option<bool> {
        Some(self.q.is_pending(h))
    }

    fn wait_until(&mut self, until: u64) {
        self.now = self.now.max(until);
    }

    fn fire(&mut self, until: u64) -> Result<Option<usize>, &'static str> {
        Ok(Some(self.q.expire(until)))
    }
}
