//! utimer's pure wheel, `utimer::wheel::Wheel`, as a benchmark peer: no
//! locks, no atomics, no callbacks, the same position as a `BinaryHeap` or
//! a `BTreeMap` inside a single-threaded event loop. Values are `u64`; the
//! handle is the `Key` returned by `insert`.

use utimer::wheel::{Key, Wheel};

use super::START_TICK;

#[derive(Debug)]
pub struct WheelPeer {
    pub w: Wheel<u64>,
}

impl super::TimerPeer for WheelPeer {
    type Handle = Option<Key>;
    const NAME: &'static str = "utimer wheel";

    fn new() -> Result<Self, String> {
        Ok(WheelPeer {
            w: Wheel::with_clk(START_TICK),
        })
    }

    fn now(&mut self) -> u64 {
        self.w.clk()
    }

    fn handle(&mut self) -> Result<Self::Handle, String> {
        Ok(None)
    }

    #[inline]
    fn arm(&mut self, h: &mut Self::Handle, expires: u64) {
        *h = Some(self.w.insert(expires, 0));
    }

    #[inline]
    fn rearm(&mut self, h: &mut Self::Handle, expires: u64) {
        if let Some(k) = h.take() {
            self.w.remove(k);
        }
        *h = Some(self.w.insert(expires, 0));
    }

    #[inline]
    fn cancel(&mut self, h: &mut Self::Handle) {
        if let Some(k) = h.take() {
            self.w.remove(k);
        }
    }

    fn next_expiry(&mut self) -> Result<Option<u64>, &'static str> {
        Ok(self.w.next_expiry())
    }

    fn wait_until(&mut self, _until: u64) {}

    fn fire(&mut self, until: u64) -> Result<Option<usize>, &'static str> {
        Ok(Some(self.w.advance(until, |v| {
            std::hint::black_box(v);
        })))
    }
}
