//! A futex parker: a thread sleeps until another calls `unpark` (or a
//! timeout). The runtime's workers sleep on one.
//!
//! `seq` is bumped by every `unpark`. A sleeper reads it *before* it looks
//! for work and sleeps only while it is unchanged, so work published before
//! the `unpark` is never missed. `sleeping` tells `unpark` whether the
//! system call is needed: the sleeper stores it and then re-reads `seq`; the
//! waker bumps `seq` and then reads `sleeping`. Both are `SeqCst`, so at
//! least one side sees the other's write. Either the sleeper sees the bump
//! and does not sleep, or the waker sees `sleeping` and wakes it (and a
//! futex wait on a changed word returns at once). The loom model below
//! checks that no wake-up is lost.

use super::{futex, AtomicBool, AtomicU32};
use std::sync::atomic::Ordering::SeqCst;
use std::time::Duration;

#[derive(Default)]
#[cfg_attr(loom, allow(dead_code))]
pub(crate) struct Parker {
    seq: AtomicU32,
    sleeping: AtomicBool,
}

#[cfg_attr(loom, allow(dead_code))]
impl Parker {
    /// The token to pass to [`park`](Self::park): read it before looking
    /// for work.
    pub(crate) fn token(&self) -> u32 {
        self.seq.load(SeqCst)
    }

    /// Wakes the thread parked (or about to park) on this parker.
    pub(crate) fn unpark(&self) {
        self.seq.fetch_add(1, SeqCst);
        if self.sleeping.load(SeqCst) {
            futex::wake_all(&self.seq);
        }
    }

    /// Sleeps until `unpark` is called after `token` was read, or for
    /// `timeout`. May return spuriously.
    pub(crate) fn park(&self, token: u32, timeout: Option<Duration>) {
        self.sleeping.store(true, SeqCst);
        if self.seq.load(SeqCst) == token {
            futex::wait_timeout(&self.seq, token, timeout);
        }
        self.sleeping.store(false, SeqCst);
    }
}

#[cfg(all(test, loom))]
mod tests {
    use super::*;
    use loom::sync::Arc;

    /// Work published, then unpark, racing with a sleeper that looks for
    /// the work and parks without a timeout: the sleeper always wakes
    /// (under loom an untimed wait returns only once the word changes, so a
    /// lost wake-up is an endless path).
    #[test]
    fn no_lost_wakeup() {
        loom::model(|| {
            let parker = Arc::new(Parker::default());
            let work = Arc::new(AtomicBool::new(false));
            let (p, w) = (parker.clone(), work.clone());
            let waker = loom::thread::spawn(move || {
                w.store(true, SeqCst);
                p.unpark();
            });
            loop {
                let token = parker.token();
                if work.load(SeqCst) {
                    break;
                }
                parker.park(token, None);
            }
            waker.join().unwrap();
        });
    }
}
