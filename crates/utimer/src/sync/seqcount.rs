//! A sequence count: readers take a consistent copy of a few words that
//! one writer at a time (serialized by a lock of its own) changes, without
//! writing anything themselves: the kernel's `seqcount_t`
//! (`include/linux/seqlock.h`), as `timer_gettime` would read a timer's
//! setting without `it_lock`.
//!
//! # Protocol
//!
//! ```text
//!   writer (holds its lock)               reader (no lock)
//!   -----------------------               ----------------
//!   seq = s + 1          (odd: writing)   s1 = seq              (Acquire)
//!   fence(Release)                        s1 odd? give up (or retry)
//!   data words           (Relaxed)        data words            (Relaxed)
//!   seq = s + 2          (Release)        fence(Acquire)
//!                                         s2 = seq              (Relaxed)
//!                                         s1 == s2: the copy is one state
//! ```
//!
//! Why the copy is consistent (Boehm, "Can seqlocks get along with
//! programming language memory models?", 2012): if a data load read a
//! value of a write section, the acquire fence after the loads
//! synchronizes with that section's release fence, so the reader's `s2`
//! sees at least the section's odd count and differs from an even `s1`
//! that came before it; and `s1`, an acquire load, sees the end of every
//! section whose data it may not miss. The data words must be atomics
//! (`Relaxed`): a torn or racing read is then merely discarded, never
//! undefined.
//!
//! # Ground rules
//!
//! * Writers are serialized by the caller (a mutex held across
//!   [`write_begin`](SeqCount::write_begin) ..
//!   [`write_end`](SeqCount::write_end)); the count has no lock of its own.
//! * A reader that finds a write in progress does not spin: it takes the
//!   writers' lock instead (the writer may be a thread that the reader's
//!   own signal handler interrupted).

use super::AtomicU32;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

#[cfg(loom)]
use loom::sync::atomic::fence;
#[cfg(not(loom))]
use std::sync::atomic::fence;

/// A sequence count (module docs).
#[derive(Debug, Default)]
pub(crate) struct SeqCount {
    seq: AtomicU32,
}

impl SeqCount {
    pub(crate) fn new() -> SeqCount {
        SeqCount {
            seq: AtomicU32::new(0),
        }
    }

    /// Starts a write section (the writers' lock held): the kernel's
    /// `write_seqcount_begin()`.
    #[inline]
    pub(crate) fn write_begin(&self) {
        let s = self.seq.load(Relaxed);
        self.seq.store(s.wrapping_add(1), Relaxed);
        fence(Release);
    }

    /// Ends the write section: the kernel's `write_seqcount_end()`.
    #[inline]
    pub(crate) fn write_end(&self) {
        let s = self.seq.load(Relaxed);
        self.seq.store(s.wrapping_add(1), Release);
    }

    /// Starts a read: `None` while a write is in progress. The kernel's
    /// `raw_read_seqcount()` (which does not wait).
    #[inline]
    pub(crate) fn read_begin(&self) -> Option<u32> {
        let s = self.seq.load(Acquire);
        (s & 1 == 0).then_some(s)
    }

    /// Whether the words read since `read_begin` returned `start` may mix
    /// two states (then discard them): the kernel's
    /// `read_seqcount_retry()`.
    #[inline]
    pub(crate) fn read_retry(&self, start: u32) -> bool {
        fence(Acquire);
        self.seq.load(Relaxed) != start
    }
}

#[cfg(all(test, loom))]
mod tests {
    use super::*;
    use crate::sync::{model, AtomicU64, Mutex};
    use loom::sync::Arc;
    use loom::thread;

    /// Two words that every write section keeps equal; a writer lock.
    struct Pair {
        count: SeqCount,
        a: AtomicU64,
        b: AtomicU64,
        lock: Mutex<()>,
    }

    fn write(p: &Pair, v: u64) {
        let _g = p.lock.lock().unwrap();
        p.count.write_begin();
        p.a.store(v, Relaxed);
        p.b.store(v, Relaxed);
        p.count.write_end();
    }

    /// A validated read never sees the two words from different writes,
    /// with two writers racing one reader.
    #[test]
    fn a_validated_read_is_one_state() {
        model(|| {
            let p = Arc::new(Pair {
                count: SeqCount::new(),
                a: AtomicU64::new(0),
                b: AtomicU64::new(0),
                lock: Mutex::new(()),
            });
            let w1 = {
                let p = p.clone();
                thread::spawn(move || write(&p, 1))
            };
            let w2 = {
                let p = p.clone();
                thread::spawn(move || write(&p, 2))
            };
            if let Some(s) = p.count.read_begin() {
                let a = p.a.load(Relaxed);
                let b = p.b.load(Relaxed);
                if !p.count.read_retry(s) {
                    assert_eq!(a, b, "a validated copy mixes two writes");
                }
            }
            w1.join().unwrap();
            w2.join().unwrap();
            // After both writers, a read validates and sees the last one.
            let s = p.count.read_begin().expect("no write in progress");
            let (a, b) = (p.a.load(Relaxed), p.b.load(Relaxed));
            assert!(!p.count.read_retry(s));
            assert_eq!(a, b);
            assert!(a == 1 || a == 2);
        });
    }
}
