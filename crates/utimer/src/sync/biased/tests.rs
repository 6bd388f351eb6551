//! The biased lock: mutual exclusion between its owner's fast path and
//! other threads' revocations, natively and under loom (where the
//! membarrier and the owner's compiler fence are `SeqCst` fences).

use super::*;
use crate::sync::UnsafeCell;

/// A counter that only the lock protects: a race on it is a data race
/// (loom reports it; natively, lost increments show).
struct Guarded {
    lock: BiasedLock,
    count: UnsafeCell<u64>,
}

// SAFETY: `count` is only touched with `lock` held.
unsafe impl Sync for Guarded {}

impl Guarded {
    fn new() -> Self {
        Guarded {
            lock: BiasedLock::new(),
            count: UnsafeCell::new(0),
        }
    }

    fn bump(&self) -> Held {
        let held = self.lock.lock();
        // SAFETY: the lock is held.
        self.count.with_mut(|c| unsafe { *c += 1 });
        self.lock.unlock(held);
        held
    }

    /// [`bump`](Self::bump), whatever the path.
    fn inc(&self) {
        let _ = self.bump();
    }

    fn get(&self) -> u64 {
        let held = self.lock.lock();
        // SAFETY: the lock is held.
        let n = self.count.with(|c| unsafe { *c });
        self.lock.unlock(held);
        n
    }
}

#[cfg(loom)]
mod models {
    use super::*;
    use crate::sync::model;
    use loom::thread;
    use std::sync::Arc;

    /// The owner's fast path against a remote that revokes the bias.
    #[test]
    fn owner_fast_path_vs_revocation() {
        model(|| {
            let g = Arc::new(Guarded::new());
            let owner = {
                let g = g.clone();
                thread::spawn(move || {
                    assert!(g.lock.claim());
                    g.inc();
                    g.inc();
                })
            };
            let remote = {
                let g = g.clone();
                thread::spawn(move || {
                    assert_eq!(g.bump(), Held::Shared);
                })
            };
            owner.join().unwrap();
            remote.join().unwrap();
            assert_eq!(g.get(), 3);
        });
    }

    /// After a revocation the owner's next quiet critical section turns
    /// the bias back on (window 1 under loom) while a remote comes and
    /// goes.
    #[test]
    fn rebias_vs_remote() {
        model(|| {
            let g = Arc::new(Guarded::new());
            assert!(g.lock.claim());
            // The first remote revokes before the threads start.
            thread::spawn({
                let g = g.clone();
                move || assert_eq!(g.bump(), Held::Shared)
            })
            .join()
            .unwrap();
            let remote = {
                let g = g.clone();
                thread::spawn(move || {
                    g.inc();
                })
            };
            // This (model) thread is the owner: its sections re-bias and
            // take the fast path while the remote may revoke again.
            for _ in 0..5 {
                g.inc();
            }
            remote.join().unwrap();
            assert_eq!(g.get(), 7);
        });
    }
}

#[cfg(not(loom))]
mod native {
    use super::*;

    #[test]
    fn the_owner_enters_biased_others_revoke_and_the_bias_adapts() {
        let g = Guarded::new();
        super::super::membarrier::settle();
        assert!(g.lock.claim());
        let biased = super::super::membarrier_ready();
        assert_eq!(g.lock.is_biased(), biased);
        let fast = if biased { Held::Biased } else { Held::Shared };
        assert_eq!(g.bump(), fast);
        let mut count = 1;
        // Each revocation doubles the window the owner needs to re-bias.
        for window in [128u64, 256, 512] {
            std::thread::scope(|s| {
                s.spawn(|| {
                    assert!(!g.lock.claim(), "a second owner");
                    assert_eq!(g.bump(), Held::Shared);
                });
            });
            count += 1;
            assert!(!g.lock.is_biased(), "revoked");
            // (The first of them sees the other thread's and restarts.)
            for _ in 0..=window {
                assert_eq!(g.bump(), Held::Shared);
            }
            count += window + 1;
            assert_eq!(g.bump(), fast, "re-biased after {window} quiet sections");
            count += 1;
        }
        // Another thread's sections in between restart the count.
        std::thread::scope(|s| {
            s.spawn(|| g.inc());
        });
        for _ in 0..600 {
            g.inc();
            std::thread::scope(|s| {
                s.spawn(|| g.inc());
            });
        }
        count += 1 + 1200;
        assert!(!g.lock.is_biased(), "never quiet: stays unbiased");
        g.lock.release_ownership();
        assert!(!g.lock.is_biased());
        std::thread::scope(|s| {
            s.spawn(|| assert!(g.lock.claim(), "free again"));
        });
        assert_eq!(g.get(), count);
    }

    /// The owner hammers its fast path (re-biasing whenever the others
    /// pause) while two other threads take the lock: no increment is lost.
    #[test]
    fn no_lost_updates_under_contention() {
        let g = Guarded::new();
        let n = if cfg!(miri) { 200 } else { 200_000 };
        std::thread::scope(|s| {
            s.spawn(|| {
                assert!(g.lock.claim());
                for _ in 0..n {
                    g.inc();
                }
            });
            for _ in 0..2 {
                s.spawn(|| {
                    for _ in 0..n / 16 {
                        g.inc();
                    }
                });
            }
        });
        assert_eq!(g.get(), n + 2 * (n / 16));
    }
}
