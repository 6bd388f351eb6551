//! The keeper: the thread that auto-advances a paused clock when its
//! owner thread has nothing left to run.
//!
//! # When the owner counts as idle
//!
//! An executor with no task to run parks its thread: `thread::park` and
//! condition variables wait in `futex`, event loops in `epoll_wait`,
//! `poll` or `select`. The keeper reads three files of the owner's
//! `/proc/self/task/TID/`: `stat` (its state: `S`, asleep and
//! interruptible), `syscall` (the call it sleeps in, with its arguments,
//! stack and instruction pointers) and `schedstat` (how often it was put
//! on a CPU). A reading is *parked* when the owner sleeps in one of those
//! calls. The clock moves when two parked readings, taken a few
//! microseconds apart, are identical (the owner did not run in between)
//! and the owner touched no clock state meanwhile (`State::activity`).
//!
//! # The race, step by step
//!
//! 1. The keeper reads the owner parked, twice, identically.
//! 2. Another thread wakes one of the owner's tasks (a channel send): the
//!    owner's executor is unparked and starts running.
//! 3. The keeper takes the clock's lock, sees `activity` unchanged (the
//!    owner has not reached a clock call yet) and advances.
//!
//! The owner then reads a clock that moved while it had a task to run.
//! The window is the time between the keeper's second reading and its
//! advance (microseconds); tokio's own auto-advance has the same window
//! for wakes from other threads, which is why it inhibits auto-advance
//! around `spawn_blocking`. Tests that wake the runtime from other
//! threads while relying on the paused clock should `advance` by hand.
//!
//! # Without `/proc`
//!
//! Where the files cannot be read, the owner counts as idle when it
//! touched no clock state for [`QUIET`], a looser rule: a task that runs
//! longer than that without a clock call can see the clock move.

use super::TestClock;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Without `/proc`: how long the owner must leave the clock alone.
const QUIET: Duration = Duration::from_millis(2);

/// The longest pause between two looks at a busy owner.
const MAX_BACKOFF: Duration = Duration::from_millis(2);

/// The calls an idle executor sleeps in.
#[cfg(target_arch = "x86_64")]
const PARKING_CALLS: &[libc::c_long] = &[
    libc::SYS_futex,
    libc::SYS_epoll_wait,
    libc::SYS_epoll_pwait,
    libc::SYS_epoll_pwait2,
    libc::SYS_poll,
    libc::SYS_ppoll,
    libc::SYS_select,
    libc::SYS_pselect6,
];
#[cfg(not(target_arch = "x86_64"))]
const PARKING_CALLS: &[libc::c_long] = &[
    libc::SYS_futex,
    libc::SYS_epoll_pwait,
    libc::SYS_epoll_pwait2,
    libc::SYS_ppoll,
    libc::SYS_pselect6,
];

/// The calling thread's kernel ID, from `/proc/thread-self`
/// (`PID/task/TID`); 0 if it cannot be read.
pub(super) fn gettid() -> libc::pid_t {
    std::fs::read_link("/proc/thread-self")
        .ok()
        .and_then(|p| p.file_name()?.to_str()?.parse().ok())
        .unwrap_or(0)
}

/// One look at the owner thread.
#[derive(PartialEq, Eq, Debug)]
struct Reading {
    syscall: String,
    schedstat: String,
}

/// The owner's reading if it is parked now, `None` if it runs, sleeps in
/// another call, or cannot be read.
fn parked(tid: libc::pid_t) -> Option<Reading> {
    let dir = format!("/proc/self/task/{tid}");
    let stat = std::fs::read_to_string(format!("{dir}/stat")).ok()?;
    // "tid (comm) S ...": the name may hold spaces and parentheses.
    let state = stat.rsplit_once(')')?.1.trim_start().chars().next()?;
    if state != 'S' {
        return None;
    }
    let syscall = std::fs::read_to_string(format!("{dir}/syscall")).ok()?;
    let nr: libc::c_long = syscall.split_whitespace().next()?.parse().ok()?;
    if !PARKING_CALLS.contains(&nr) {
        return None;
    }
    let schedstat = std::fs::read_to_string(format!("{dir}/schedstat")).unwrap_or_default();
    Some(Reading { syscall, schedstat })
}

/// Whether the keeper can watch the owner through `/proc`.
fn can_watch(tid: libc::pid_t) -> bool {
    tid > 0 && std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall")).is_ok()
}

/// Waits about `d` on the CPU (the owner is asleep: the CPU is free).
fn spin(d: Duration) {
    let start = Instant::now();
    while start.elapsed() < d {
        std::hint::spin_loop();
    }
}

/// Starts `clock`'s keeper thread. It lives until the owner thread exits.
pub(super) fn start(clock: Arc<TestClock>) {
    let spawned = std::thread::Builder::new()
        .name("utimer-async-clock".into())
        .spawn(move || run(&clock));
    if let Err(e) = spawned {
        panic!("utimer-async: cannot start the paused clock's keeper thread: {e}");
    }
}

/// The keeper's loop.
fn run(clock: &TestClock) {
    let watch = can_watch(clock.owner_tid);
    let mut backoff = Duration::ZERO;
    loop {
        // Sleep until the clock is paused with a timer to advance to.
        let activity = {
            let mut st = clock.lock();
            loop {
                if st.owner_gone {
                    return;
                }
                if st.unfrozen.is_none() && st.timers.first().is_some() {
                    break;
                }
                backoff = Duration::ZERO;
                st = clock.cv.wait(st).unwrap_or_else(|e| e.into_inner());
            }
            st.activity
        };
        let idle = if watch {
            owner_stays_parked(clock.owner_tid)
        } else {
            std::thread::sleep(QUIET);
            true
        };
        if idle {
            let st = clock.lock();
            let unchanged = st.activity == activity && st.unfrozen.is_none();
            if let (true, Some(first)) = (unchanged, st.timers.first()) {
                clock.advance_to(st, first);
                backoff = Duration::ZERO;
                continue;
            }
        }
        // The owner is running: look again later, less often the longer
        // it runs.
        if backoff.is_zero() {
            backoff = Duration::from_micros(5);
            spin(backoff);
        } else {
            backoff = (backoff * 2).min(MAX_BACKOFF);
            std::thread::sleep(backoff);
        }
    }
}

/// Two readings a few microseconds apart: the owner parked in both, and
/// did not run in between.
fn owner_stays_parked(tid: libc::pid_t) -> bool {
    let Some(first) = parked(tid) else {
        return false;
    };
    spin(Duration::from_micros(10));
    parked(tid).is_some_and(|second| second == first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gettid_names_this_thread() {
        let tid = gettid();
        assert!(tid > 0);
        assert!(std::path::Path::new(&format!("/proc/self/task/{tid}")).exists());
        let other = std::thread::spawn(gettid).join().unwrap();
        assert!(other > 0);
        assert_ne!(tid, other, "two threads, one ID");
    }

    #[test]
    fn a_parked_thread_reads_parked_and_a_running_one_does_not() {
        let (tx, rx) = std::sync::mpsc::channel();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        // Parked: waits on a channel (a futex).
        let parked_thread = std::thread::spawn(move || {
            tx.send(gettid()).unwrap();
            std::thread::park();
        });
        let tid = rx.recv().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !owner_stays_parked(tid) {
            assert!(
                Instant::now() < deadline,
                "a parked thread never read as parked"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        parked_thread.thread().unpark();
        parked_thread.join().unwrap();
        // Sleeping in nanosleep is not parking.
        let (tx, rx) = std::sync::mpsc::channel();
        let s = stop.clone();
        let sleeper = std::thread::spawn(move || {
            tx.send(gettid()).unwrap();
            while !s.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        let tid = rx.recv().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        for _ in 0..20 {
            assert!(
                parked(tid).is_none(),
                "a thread in nanosleep read as parked"
            );
            std::thread::sleep(Duration::from_millis(3));
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        sleeper.join().unwrap();
    }
}
