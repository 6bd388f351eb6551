//! Loom models of the cross-thread timer protocols.
//!
//! Run with `ci/loom.sh` (`RUSTFLAGS="--cfg loom" cargo test --release
//! --test loom`). Under `cfg(loom)` every atomic, the base spinlock, the
//! lock-protected fields (`UnsafeCell`) and the thread-locals come from loom
//! (see `src/sync`), so these models explore the interleavings of the real
//! `modify`, `delete`, `lock_timer_base`, migration, expiry and `Drop` code,
//! not of a copy, and report a lock-protected field touched without its
//! lock as a data race.
//!
//! **Writing a model: put both sides of a race on spawned threads.** Loom
//! never ran a freshly spawned thread before the main thread's next
//! operation (whatever the preemption bound), so a race whose window is
//! that operation (the first, lock-free load of a `delete`, say) went
//! unexplored when the main thread was one side of it. An audit that
//! planted a bug for each model found four such misses; the models below
//! that race a lock-free first step run it on a thread of its own. And
//! check a new model by planting the bug it is meant to catch.

#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, AtomicUsize};
use loom::thread;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use utimer::loom_model::model_bounded;
use utimer::{Clock, ClockId, Expiry, HrRestart, TimerFlags, TimerSystem};

/// The models here run with 4 preemptions, one above the crate's own
/// (`utimer::loom_model::PREEMPTIONS`); the hot-unplug's, whose long
/// operation would make that too slow, with 2 through [`model_bounded`].
fn model(f: impl Fn() + Sync + Send + 'static) {
    model_bounded(4, f);
}

fn system(workers: usize) -> (Arc<TimerSystem>, Clock) {
    let clock = Clock::manual();
    (
        Arc::new(
            TimerSystem::builder()
                .workers(workers)
                .clock(clock.clone())
                .build_without_threads(),
        ),
        clock,
    )
}

/// Runs worker 0's expiry at `now`, `runs` times, on a new thread.
fn spawn_expirer(sys: &Arc<TimerSystem>, now: u64, runs: usize) -> thread::JoinHandle<usize> {
    let sys = sys.clone();
    thread::spawn(move || (0..runs).map(|_| sys.run_expired(0, now).unwrap()).sum())
}

/// A lock-free same-bucket re-arm racing with the expiry of that bucket:
/// the timer fires exactly once per arming, and the books balance.
#[test]
fn modify_vs_expire() {
    model(|| {
        let (sys, clock) = system(1);
        let fired = Arc::new(AtomicUsize::new(0));
        let f = fired.clone();
        let t = Arc::new(sys.timer(move |_| {
            f.fetch_add(1, SeqCst);
        }));
        t.modify(Expiry::Tick(100)).unwrap(); // level 1: fires at 104
        clock.set(104);
        let expirer = spawn_expirer(&sys, 104, 1);
        let was_pending = t.modify(Expiry::Tick(101)).unwrap(); // same bucket, or re-arm after firing
        expirer.join().unwrap();
        let fired = fired.load(SeqCst);
        let pending = t.is_pending() as usize;
        // Each arming ends in exactly one firing or is still pending. Armed
        // again after its expiry began, 101 is in the past: it may fire a
        // second time within the same run.
        assert_eq!(
            fired + pending,
            1 + !was_pending as usize,
            "{fired} {pending}"
        );
        assert!(fired >= 1 || was_pending);
        let s = sys.metrics().totals();
        assert_eq!(s.armed, s.fired + s.deleted + s.pending);
    });
}

/// A timer migrating to another worker's base while another thread deletes
/// it: lock_timer_base() follows it (MIGRATING), nothing is lost or
/// double-queued, and the delete always finds it pending (it was pending
/// before the move and after it; a moving timer reads as pending).
///
/// The delete and the move run on two spawned threads, not the delete on
/// the main thread: loom never ran a freshly spawned thread before the
/// main thread's next operation, so with the delete on the main thread its
/// first, lock-free load never fell inside a move (a moving timer read as
/// idle went unseen).
#[test]
fn migrate_vs_delete() {
    model(|| {
        let (sys, _clock) = system(2);
        let t = {
            let _g = sys.enter(0).unwrap();
            let t = Arc::new(sys.timer(|_| {}));
            t.modify(Expiry::Tick(50)).unwrap();
            t
        };
        let mover = {
            let (sys, t) = (sys.clone(), t.clone());
            thread::spawn(move || {
                let _g = sys.enter(1).unwrap();
                t.modify(Expiry::Tick(60)).unwrap()
            })
        };
        let deleter = {
            let t = t.clone();
            thread::spawn(move || t.delete())
        };
        let moved_was_pending = mover.join().unwrap();
        let deleted = deleter.join().unwrap();
        // Either delete came first (the move re-armed it), or the move did;
        // either way the delete found it pending.
        assert!(deleted, "delete took a moving timer for idle");
        assert_eq!(t.is_pending(), !deleted || !moved_was_pending);
        let s = sys.metrics().totals();
        assert_eq!(s.pending, t.is_pending() as u64);
        assert_eq!(s.armed, s.fired + s.deleted + s.pending);
    });
}

/// Sets its flag when dropped: tells when the timer's memory was freed.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, SeqCst);
    }
}

/// Dropping a timer while its callback runs on another thread and re-arms
/// it: the drop never waits, the timer is never freed while its callback
/// runs, it is freed exactly once when nothing can reach it any more, and
/// the re-arm made after the drop is cancelled.
#[test]
fn drop_vs_running_callback_and_rearm() {
    model(|| {
        let (sys, clock) = system(1);
        let freed = Arc::new(AtomicBool::new(false));
        let flag = DropFlag(freed.clone());
        let f = freed.clone();
        let t = sys.timer(move |me| {
            let _keep = &flag;
            assert!(!f.load(SeqCst), "freed while its callback runs");
            let _ = me.modify(Expiry::Tick(0)); // due again at once: fires in the next run
            assert!(!f.load(SeqCst), "freed while its callback runs");
        });
        t.modify(Expiry::Tick(1)).unwrap();
        clock.set(1);
        let expirer = spawn_expirer(&sys, 1, 2);
        drop(t);
        expirer.join().unwrap();
        assert!(freed.load(SeqCst), "freed once nothing can reach it");
        let s = sys.metrics().totals();
        assert_eq!(s.pending, 0, "the re-arm after the drop was cancelled");
        assert_eq!(s.armed, s.fired + s.deleted + s.pending);
    });
}

/// Callback bookkeeping for the delete_sync models: counts callbacks
/// running at once (never above one) and fails if one starts after the
/// synchronous delete returned.
#[derive(Clone, Default)]
struct Watch {
    running: Arc<AtomicUsize>,
    returned: Arc<AtomicBool>,
}

impl Watch {
    fn enter(&self) {
        assert!(
            !self.returned.load(SeqCst),
            "callback started after delete_sync returned"
        );
        assert_eq!(
            self.running.fetch_add(1, SeqCst),
            0,
            "callback on two threads at once"
        );
    }
    fn exit(&self) {
        self.running.fetch_sub(1, SeqCst);
    }
    fn returned(&self) {
        assert_eq!(
            self.running.load(SeqCst),
            0,
            "delete_sync returned while the callback ran"
        );
        self.returned.store(true, SeqCst);
    }
}

/// delete_sync racing with the expiry of the timer.
#[test]
fn delete_sync_vs_expire() {
    model(|| {
        let (sys, clock) = system(1);
        let w = Watch::default();
        let cb = w.clone();
        let t = sys.timer(move |_| {
            cb.enter();
            cb.exit();
        });
        t.modify(Expiry::Tick(1)).unwrap();
        clock.set(1);
        let expirer = spawn_expirer(&sys, 1, 1);
        t.delete_sync().unwrap();
        w.returned();
        assert!(!t.is_pending());
        expirer.join().unwrap();
    });
}

/// shutdown_sync against a callback that re-arms its own timer: it
/// terminates, and nothing runs afterwards.
#[test]
fn shutdown_sync_vs_rearming_callback() {
    model(|| {
        let (sys, clock) = system(1);
        let w = Watch::default();
        let cb = w.clone();
        let t = sys.timer(move |me| {
            cb.enter();
            let _ = me.modify(Expiry::Tick(0));
            cb.exit();
        });
        t.modify(Expiry::Tick(1)).unwrap();
        clock.set(1);
        let expirer = spawn_expirer(&sys, 1, 2);
        t.shutdown_sync().unwrap();
        w.returned();
        assert!(!t.is_pending());
        expirer.join().unwrap();
        assert!(!t.is_pending(), "re-arms after shutdown are refused");
    });
}

/// A third thread re-arms the timer from another worker while its callback
/// may be running: the timer must not move there and run twice at once;
/// delete_sync still waits for the one running callback.
#[test]
fn modify_from_third_thread_vs_running_callback() {
    model(|| {
        let (sys, clock) = system(2);
        let w = Watch::default();
        let cb = w.clone();
        let t = {
            let _g = sys.enter(0).unwrap();
            let t = Arc::new(sys.timer(move |_| {
                cb.enter();
                cb.exit();
            }));
            t.modify(Expiry::Tick(1)).unwrap();
            t
        };
        clock.set(1);
        let expirer = spawn_expirer(&sys, 1, 1);
        let third = {
            let (sys, t) = (sys.clone(), t.clone());
            thread::spawn(move || {
                let _g = sys.enter(1).unwrap();
                t.modify(Expiry::Tick(0)).unwrap();
                sys.run_expired(1, 1).unwrap();
            })
        };
        third.join().unwrap();
        t.delete_sync().unwrap();
        w.returned();
        expirer.join().unwrap();
    });
}

/// delete_sync against a callback that re-arms its own timer (once): when
/// delete_sync returns, the callback is not running and the timer is not
/// pending, whichever re-arm it raced with.
#[test]
fn delete_sync_vs_rearm_from_callback() {
    model(|| {
        let (sys, clock) = system(1);
        let w = Watch::default();
        let cb = w.clone();
        let rearmed = Arc::new(AtomicBool::new(false));
        let t = sys.timer(move |me| {
            cb.enter();
            if !rearmed.swap(true, SeqCst) {
                let _ = me.modify(Expiry::Tick(0));
            }
            cb.exit();
        });
        t.modify(Expiry::Tick(1)).unwrap();
        clock.set(1);
        let expirer = spawn_expirer(&sys, 1, 2);
        t.delete_sync().unwrap();
        w.returned();
        assert!(!t.is_pending());
        expirer.join().unwrap();
    });
}

/// A worker taken offline while another thread arms a timer on it: the
/// timer ends up on the online worker exactly once (moved, or routed
/// there), and fires there once.
#[test]
fn offline_vs_concurrent_arm() {
    model(|| {
        let (sys, clock) = system(2);
        let fired = Arc::new(AtomicUsize::new(0));
        let f = fired.clone();
        // Bound to a worker: a home worker would be picked from a global
        // counter, which differs between loom's iterations.
        let me = sys.enter(0).unwrap();
        let t = Arc::new(sys.timer(move |_| {
            f.fetch_add(1, SeqCst);
        }));
        drop(me);
        let (s2, t2) = (sys.clone(), t.clone());
        let armer = thread::spawn(move || {
            let _on = s2.enter(1).unwrap();
            t2.modify(Expiry::Tick(5)).unwrap();
        });
        assert_eq!(sys.offline(1).map(|n| n <= 1), Ok(true));
        armer.join().unwrap();
        assert!(t.is_pending());
        clock.set(5);
        assert_eq!(sys.run_expired(1, 5).unwrap(), 0);
        assert_eq!(sys.run_expired(0, 5).unwrap(), 1);
        assert_eq!(fired.load(SeqCst), 1);
    });
}

/// A worker taken offline while another thread deletes its pending timer:
/// the delete never takes the moving timer for idle (it answers "pending"
/// and cancels it, before or after the move), and nothing fires.
///
/// The delete and the hot-unplug run on two spawned threads (see
/// [`migrate_vs_delete`]: with the delete on the main thread, its lock-free
/// load never fell inside the move).
#[test]
fn offline_vs_delete() {
    model_bounded(2, || {
        let (sys, clock) = system(2);
        let fired = Arc::new(AtomicUsize::new(0));
        let f = fired.clone();
        let me = sys.enter(1).unwrap();
        let t = Arc::new(sys.timer(move |_| {
            f.fetch_add(1, SeqCst);
        }));
        t.modify(Expiry::Tick(5)).unwrap();
        drop(me);
        let (s2, t2) = (sys.clone(), t.clone());
        let unplug = thread::spawn(move || s2.offline(1).unwrap());
        let deleter = thread::spawn(move || t2.delete());
        assert!(unplug.join().unwrap() <= 1);
        assert!(
            deleter.join().unwrap(),
            "delete took a moving timer for idle"
        );
        assert!(!t.is_pending());
        clock.set(5);
        assert_eq!(sys.run_expired(0, 5).unwrap(), 0);
        assert_eq!(fired.load(SeqCst), 0);
        let s = sys.metrics().totals();
        assert_eq!((s.armed, s.deleted, s.pending), (1, 1, 0));
    });
}

/// `next_expiry`'s per-worker summary (`sync/summary.rs`) on the real
/// paths, against arms on two other threads, one on each wheel source (the
/// local and the global base, two locks): once both arms returned, the
/// answer is exact, and so is the answer read again from the summary.
///
/// The racing read runs on a spawned thread too: on the main thread it
/// came first in every interleaving loom tried (a spawned thread never ran
/// before the main thread's next operation), so an arm never fell between
/// its claim and its publish, and a stale publish went unseen.
#[test]
fn next_expiry_summary_vs_arms() {
    model(|| {
        let (sys, _clock) = system(1);
        assert_eq!(sys.next_expiry(0).unwrap(), None);
        let arm = |flags: TimerFlags, at: u64| {
            let t = Arc::new(sys.timer_with_flags(flags, |_| {}));
            let (sys, t2) = (sys.clone(), t.clone());
            let h = thread::spawn(move || {
                let _g = sys.enter(0).unwrap();
                t2.modify(Expiry::Tick(at)).unwrap();
            });
            (t, h)
        };
        let (_local, a) = arm(TimerFlags::PINNED, 20);
        let (_global, b) = arm(TimerFlags::NONE, 10);
        let reader = {
            let sys = sys.clone();
            thread::spawn(move || sys.next_expiry(0).unwrap())
        };
        a.join().unwrap();
        b.join().unwrap();
        let seen = reader.join().unwrap();
        assert!(matches!(seen, None | Some(10) | Some(20)), "{seen:?}");
        assert_eq!(sys.next_expiry(0).unwrap(), Some(10));
        assert_eq!(sys.next_expiry(0).unwrap(), Some(10));
    });
}

/// The same with an hrtimer start and a wheel cancel on other threads: an
/// answer cached before them (the wheel timer at 30) is replaced by the
/// hrtimer's tick once both returned. The racing read runs on a spawned
/// thread, as in [`next_expiry_summary_vs_arms`].
#[test]
fn next_expiry_summary_vs_hrtimer_start_and_cancel() {
    model(|| {
        let clock = Clock::manual();
        let sys = Arc::new(
            TimerSystem::builder()
                .workers(1)
                .tick(std::time::Duration::from_micros(100))
                .clock(clock)
                .build_without_threads(),
        );
        let t = Arc::new(sys.timer(|_| {}));
        {
            let _g = sys.enter(0).unwrap();
            t.modify(Expiry::Tick(30)).unwrap();
        }
        assert_eq!(sys.next_expiry(0).unwrap(), Some(30));
        let h = Arc::new(
            sys.hrtimer_on(0, ClockId::Monotonic, |_| HrRestart::NoRestart)
                .unwrap(),
        );
        let starter = {
            let h = h.clone();
            thread::spawn(move || h.start(utimer::Ktime::from_nanos(40 * 100_000)).unwrap())
        };
        let canceller = {
            let t = t.clone();
            thread::spawn(move || assert!(t.delete()))
        };
        let reader = {
            let sys = sys.clone();
            thread::spawn(move || sys.next_expiry(0).unwrap())
        };
        starter.join().unwrap();
        canceller.join().unwrap();
        let seen = reader.join().unwrap();
        assert!(matches!(seen, None | Some(30) | Some(40)), "{seen:?}");
        assert_eq!(sys.next_expiry(0).unwrap(), Some(40));
        assert_eq!(sys.next_expiry(0).unwrap(), Some(40));
    });
}

/// A stale base brought forward by one thread's arm while another thread
/// cancels and re-arms a timer whose bucket that forward takes out: the
/// forward marks the timer due (its state word, which the other thread
/// reads without the lock), so the cancel never leaves an entry that a
/// re-arm into the same bucket slot could take back from the run list
/// and fire at once. Whatever the order, the re-armed timer fires once,
/// at its new bucket and not before.
#[test]
fn forward_vs_cancel_and_rearm() {
    model(|| {
        let (sys, clock) = system(1);
        let _g = sys.enter(0).unwrap();
        let fired = Arc::new(AtomicUsize::new(0));
        let f = fired.clone();
        let x = Arc::new(sys.timer(move |_| {
            f.fetch_add(1, SeqCst);
        }));
        x.modify(Expiry::Tick(100)).unwrap(); // level 1: bucket 104, slot 13 of level 1
        clock.set(200); // the base is stale; 104 is overdue
        let forwarder = {
            let sys = sys.clone();
            thread::spawn(move || {
                let _g = sys.enter(0).unwrap();
                let y = sys.timer(|_| {});
                y.modify(Expiry::Tick(300)).unwrap(); // above level 0: forwards to 201
                y
            })
        };
        let rearmer = {
            let (sys, x) = (sys.clone(), x.clone());
            thread::spawn(move || {
                let _g = sys.enter(0).unwrap();
                x.delete();
                // From 201: level 1, bucket 616, slot 13 of level 1 again.
                x.modify(Expiry::Tick(616)).unwrap();
            })
        };
        let _y = forwarder.join().unwrap();
        rearmer.join().unwrap();
        assert_eq!(x.fires_at(), Some(616));
        sys.run_expired(0, 200).unwrap();
        assert_eq!(fired.load(SeqCst), 0, "fired early");
        clock.set(616);
        sys.run_expired(0, 616).unwrap();
        assert_eq!(fired.load(SeqCst), 1);
    });
}
