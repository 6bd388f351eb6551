//! The summary protocol with stand-in sources (a value under a lock each,
//! as the wheel and hrtimer bases keep theirs): natively, and under loom,
//! where every interleaving of a reader's claim, locked reads and publish
//! with sources changing on other threads must leave the word unknown or
//! exact.

use super::*;
use crate::sync::Mutex;

/// Sources with their next event (`u64::MAX`: none), each under its lock.
struct Sources {
    summary: NextSummary,
    values: Vec<Mutex<u64>>,
}

impl Sources {
    fn new(values: &[u64]) -> Sources {
        Sources {
            summary: NextSummary::new(),
            values: values.iter().map(|&v| Mutex::new(v)).collect(),
        }
    }

    /// A source changes: under its lock, as an arm or a cancel does.
    fn set(&self, source: usize, value: u64) {
        let mut v = self.values[source].lock().unwrap();
        *v = value;
        self.summary.invalidate();
    }

    /// The truth, every source read under its lock.
    fn truth(&self) -> Option<u64> {
        let min = self.values.iter().map(|v| *v.lock().unwrap()).min();
        min.filter(|&m| m != u64::MAX)
    }

    /// What `Nohz::next_tick` does.
    fn next(&self) -> Option<u64> {
        if let Ok(next) = self.summary.read() {
            return next;
        }
        let claim = match self.summary.claim() {
            Ok(next) => return next,
            Err(claim) => claim,
        };
        let next = self.truth();
        self.summary.publish(claim, next);
        next
    }

    /// At rest, the word is unknown or exact.
    fn check_at_rest(&self) {
        if let Ok(cached) = self.summary.read() {
            assert_eq!(cached, self.truth(), "a stale answer stayed published");
        }
        assert_eq!(self.next(), self.truth());
    }
}

#[cfg(not(loom))]
#[test]
fn answers_exactly_and_caches_until_a_change() {
    let s = Sources::new(&[u64::MAX, u64::MAX]);
    assert_eq!(s.summary.read(), Err(()));
    assert_eq!(s.next(), None);
    assert_eq!(s.summary.read(), Ok(None));
    s.set(1, 40);
    assert_eq!(s.summary.read(), Err(()));
    assert_eq!(s.next(), Some(40));
    assert_eq!(s.summary.read(), Ok(Some(40)));
    s.set(0, 30);
    assert_eq!(s.next(), Some(30));
    s.set(0, u64::MAX);
    assert_eq!(s.next(), Some(40));
    // A tick that does not fit the word is answered, not cached.
    s.set(1, NONE);
    assert_eq!(s.next(), Some(NONE));
    assert_eq!(s.summary.read(), Err(()));
}

#[cfg(not(loom))]
#[test]
fn a_claim_overtaken_by_a_change_does_not_publish() {
    let s = Sources::new(&[50]);
    let claim = s.summary.claim().unwrap_err();
    let stale = s.truth();
    s.set(0, 20);
    s.summary.publish(claim, stale);
    assert_eq!(s.summary.read(), Err(()));
    // Nor one overtaken by another reader's claim and publish.
    let old = s.summary.claim().unwrap_err();
    let newer = s.summary.claim().unwrap_err();
    s.summary.publish(newer, Some(20));
    s.summary.publish(old, Some(50));
    assert_eq!(s.summary.read(), Ok(Some(20)));
    s.check_at_rest();
}

#[cfg(loom)]
mod models {
    use super::*;
    use crate::sync::model;
    use loom::thread;
    use std::sync::Arc;

    /// A reader against two sources changing on two threads (two locks:
    /// the stores of their invalidations are unordered with each other).
    #[test]
    fn reader_vs_two_sources() {
        model(|| {
            let s = Arc::new(Sources::new(&[50, 60]));
            assert_eq!(s.next(), Some(50));
            let writers: Vec<_> = [(0, 40), (1, 30)]
                .into_iter()
                .map(|(source, value)| {
                    let s = s.clone();
                    thread::spawn(move || s.set(source, value))
                })
                .collect();
            let seen = s.next();
            assert!(matches!(seen, Some(30 | 40 | 50)), "{seen:?}");
            for w in writers {
                w.join().unwrap();
            }
            s.check_at_rest();
        });
    }

    /// Two readers (claims overtaking claims) against a source leaving.
    #[test]
    fn two_readers_vs_a_cancel() {
        model(|| {
            let s = Arc::new(Sources::new(&[u64::MAX, 60]));
            let writer = {
                let s = s.clone();
                thread::spawn(move || s.set(1, u64::MAX))
            };
            let reader = {
                let s = s.clone();
                thread::spawn(move || s.next())
            };
            let seen = s.next();
            assert!(matches!(seen, None | Some(60)), "{seen:?}");
            writer.join().unwrap();
            let other = reader.join().unwrap();
            assert!(matches!(other, None | Some(60)), "{other:?}");
            s.check_at_rest();
        });
    }
}
