//! Real-time workers: a system's worker threads run at the real-time
//! priority of the threads their timers notify, and wake a little ahead of
//! an expiry to fire it on time.
//!
//! # Why
//!
//! The kernel fires an hrtimer from its interrupt, ahead of every task: a
//! `SCHED_FIFO` thread that waits for a POSIX timer's signal (cyclictest, a
//! control loop) is woken on time whatever else the CPUs run. A utimer
//! worker is a thread. Left at `SCHED_OTHER`, it waits behind every
//! real-time thread on its CPU, so the real-time thread that waits for the
//! timer waits for a worker that its own kind keeps off the CPU: a priority
//! inversion, and starvation under a busy `SCHED_RR` program. A worker's
//! wake-up is also a second one on the way to the program (the worker's,
//! then the signal's), where the kernel has one.
//!
//! # What
//!
//! * When a timer that fires (not `SIGEV_NONE`) is made for a thread that
//!   runs under `SCHED_FIFO` or `SCHED_RR` at priority *p* (the thread a
//!   `SIGEV_THREAD_ID` signal names, else the creating thread), every
//!   worker of the system runs `SCHED_FIFO` at *p*: no thread below the
//!   highest real-time priority it serves keeps it off a CPU. Not above
//!   *p*: a worker's expiry costs a context switch where the kernel's
//!   interrupt costs none, and one priority above, every expiry preempted
//!   a busy real-time program's threads (stress-ng's `SCHED_RR` hrtimers
//!   stressor ran at half the rate than at *p*). A thread of priority *p*
//!   that keeps its CPU delays the worker there until it blocks or its
//!   round-robin slice ends, as a `PREEMPT_RT` kernel's timer thread
//!   (`ktimers`, `SCHED_FIFO`) waits behind higher real-time threads.
//!   Workers never go down again (a worker serves every timer armed on it,
//!   and the system keeps the highest priority asked). Without the privilege (`CAP_SYS_NICE` or
//!   `RLIMIT_RTPRIO`) nothing changes: a thread that got real-time
//!   priority had it, so its process usually has it too.
//! * A real-time worker wakes ahead of its next expiry by about its own
//!   measured wake-up latency (a running average of how late its sleeps
//!   end, doubled, between [`MIN_AHEAD`] and [`MAX_AHEAD`]; 50 µs until
//!   it has measured) and waits the rest on the CPU, so the expiry runs on
//!   time and the program sees one wake-up, as from the kernel. It does so
//!   only in processes that run real-time threads, for at most
//!   [`MAX_AHEAD`] per wake-up and at most a tenth of the worker's time (a
//!   worker whose expiries come closer together than ten margins sleeps to
//!   each: it is busy anyway), and only while the machine has a CPU that
//!   no other thread wants (fewer runnable threads than CPUs, as
//!   `/proc/loadavg` counts them): the wait never takes a CPU from the
//!   program or anybody else.
//!
//! # Ground rules
//!
//! `tids` (under its lock) lists the threads of the registered workers;
//! `priority` only grows, and is written under the same lock after the
//! threads were raised, so a worker that registers later takes it from
//! there. A worker's own thread keeps its [`Ahead`] estimate.

use std::sync::atomic::{AtomicI32, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The least a real-time worker wakes ahead of an expiry.
pub const MIN_AHEAD: Duration = Duration::from_micros(5);
/// The most a real-time worker wakes ahead of an expiry (and so the most
/// CPU it spends waiting per wake-up).
pub const MAX_AHEAD: Duration = Duration::from_micros(100);

/// The real-time state of one system's workers.
#[derive(Default)]
pub(crate) struct Realtime {
    /// The registered workers' threads.
    tids: Mutex<Vec<libc::pid_t>>,
    /// The `SCHED_FIFO` priority they run at (0: not raised).
    priority: AtomicI32,
}

impl Realtime {
    /// The calling thread becomes a worker's: it takes the priority the
    /// workers run at. Returns its thread ID for [`leave`](Self::leave).
    pub(crate) fn join(&self) -> libc::pid_t {
        let tid = gettid();
        let mut tids = self.tids.lock().unwrap_or_else(|e| e.into_inner());
        tids.push(tid);
        let p = self.priority.load(Relaxed);
        if p > 0 {
            set_fifo(tid, p);
        }
        // Opens the load file now, not right before the worker's first
        // expiry that it would wait for on the CPU.
        let _ = cpu_to_spare();
        tid
    }

    /// Thread `tid` is no longer a worker's (it keeps its priority).
    pub(crate) fn leave(&self, tid: libc::pid_t) {
        let mut tids = self.tids.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = tids.iter().position(|&t| t == tid) {
            tids.swap_remove(i);
        }
    }

    /// The priority the workers run at (0: not raised).
    #[inline]
    pub(crate) fn priority(&self) -> i32 {
        self.priority.load(Relaxed)
    }

    /// Serves a thread of real-time priority `p`: raises every worker to
    /// `SCHED_FIFO` `p` (at most the maximum), unless they run at `p` or
    /// above. Returns the priority the workers run at afterwards.
    pub(crate) fn serve(&self, p: i32) -> i32 {
        let tids = self.tids.lock().unwrap_or_else(|e| e.into_inner());
        let now = self.priority.load(Relaxed);
        let want = p.min(max_fifo());
        if want < 1 || want <= now {
            return now;
        }
        // Worker threads that exited already are skipped (ESRCH).
        if tids.iter().all(|&t| set_fifo(t, want) || !alive(t)) {
            self.priority.store(want, Relaxed);
            return want;
        }
        now
    }
}

/// The real-time priority of thread `tid` (0: the caller): its
/// `SCHED_FIFO` or `SCHED_RR` priority, 0 for any other policy or an
/// error.
pub(crate) fn thread_priority(tid: libc::pid_t) -> i32 {
    if cfg!(miri) {
        return 0;
    }
    // SAFETY: sched_getscheduler takes a thread ID; sched_getparam writes
    // one sched_param, which lives on this stack.
    unsafe {
        let policy = libc::sched_getscheduler(tid);
        if policy & !libc::SCHED_RESET_ON_FORK != libc::SCHED_FIFO
            && policy & !libc::SCHED_RESET_ON_FORK != libc::SCHED_RR
        {
            return 0;
        }
        let mut param: libc::sched_param = std::mem::zeroed();
        if libc::sched_getparam(tid, &mut param) != 0 {
            return 0;
        }
        param.sched_priority
    }
}

#[cfg(not(miri))]
fn gettid() -> libc::pid_t {
    // SAFETY: gettid takes nothing and cannot fail.
    unsafe { libc::gettid() }
}

/// Miri has no thread IDs or scheduling policies: nothing is raised.
#[cfg(miri)]
fn gettid() -> libc::pid_t {
    0
}

fn max_fifo() -> i32 {
    if cfg!(miri) {
        return 99;
    }
    // SAFETY: takes a policy number.
    unsafe { libc::sched_get_priority_max(libc::SCHED_FIFO) }.max(1)
}

/// The `SCHED_FIFO` priorities: `sched_get_priority_min(SCHED_FIFO)
/// ..= sched_get_priority_max(SCHED_FIFO)` (1..=99 on Linux).
pub(crate) fn fifo_priorities() -> std::ops::RangeInclusive<i32> {
    let min = if cfg!(miri) {
        1
    } else {
        // SAFETY: takes a policy number.
        unsafe { libc::sched_get_priority_min(libc::SCHED_FIFO) }.max(1)
    };
    min..=max_fifo()
}

/// Sets thread `tid` to `SCHED_FIFO` priority `p`; whether it took. The
/// system call itself: a library that interposes glibc's
/// `sched_setscheduler` (utimer's drop-in does) must not see utimer's own
/// threads change.
fn set_fifo(tid: libc::pid_t, p: i32) -> bool {
    if cfg!(miri) {
        return false;
    }
    let param = libc::sched_param { sched_priority: p };
    // SAFETY: the system call reads one sched_param from this stack.
    unsafe {
        libc::syscall(
            libc::SYS_sched_setscheduler,
            tid,
            libc::SCHED_FIFO,
            &param as *const libc::sched_param,
        ) == 0
    }
}

/// Whether thread `tid` still exists.
fn alive(tid: libc::pid_t) -> bool {
    if cfg!(miri) {
        return false;
    }
    // SAFETY: as in `thread_priority`.
    unsafe { libc::sched_getscheduler(tid) >= 0 }
}

/// A real-time worker waits on the CPU at most one part in this many of
/// its time: one that wakes more often than every `SHARE * margin` sleeps
/// to the expiry instead (its timers come so close together that it is
/// busy anyway, and its CPU is better left to the program).
const SHARE: u32 = 10;

/// How far ahead of an expiry a real-time worker wakes: twice the running
/// average of how late its timed sleeps end, within
/// [`MIN_AHEAD`]..=[`MAX_AHEAD`]; and whether it may wait on the CPU now.
/// One per worker thread.
#[derive(Debug)]
pub(crate) struct Ahead {
    /// Average lateness in ns (an exponential average, weight 1/8).
    late_ns: u64,
    /// When its last wait on the CPU ended.
    last: Option<Instant>,
}

/// The lateness a worker assumes before it has measured its own: a
/// wake-up on a virtual machine (on bare metal it is a few µs, and the
/// average comes down within a few dozen sleeps).
const INITIAL_LATE: Duration = Duration::from_micros(25);

impl Default for Ahead {
    fn default() -> Self {
        Ahead {
            late_ns: INITIAL_LATE.as_nanos() as u64,
            last: None,
        }
    }
}

impl Ahead {
    /// How long before an expiry to wake.
    pub(crate) fn margin(&self) -> Duration {
        Duration::from_nanos(self.late_ns.saturating_mul(2)).clamp(MIN_AHEAD, MAX_AHEAD)
    }

    /// Whether a wait on the CPU that starts at `now` keeps the worker
    /// within its share ([`SHARE`]): the last one ended at least `SHARE`
    /// margins before. It also needs [`cpu_to_spare`].
    pub(crate) fn within_share(&self, now: Instant) -> bool {
        self.last
            .is_none_or(|t| now.saturating_duration_since(t) >= self.margin() * SHARE)
    }

    /// A wait on the CPU ended at `now`.
    pub(crate) fn spun(&mut self, now: Instant) {
        self.last = Some(now);
    }

    /// A timed sleep ended `late` after it was due.
    pub(crate) fn woke_late(&mut self, late: Duration) {
        let late = u64::try_from(late.as_nanos())
            .unwrap_or(u64::MAX)
            .min(MAX_AHEAD.as_nanos() as u64);
        self.late_ns = self.late_ns - self.late_ns / 8 + late / 8;
    }
}

/// Whether the machine has a CPU to spare: fewer runnable threads than
/// CPUs besides the caller (the kernel's instantaneous count, the fourth
/// field of `/proc/loadavg`: "runnable/total"). Waiting on the CPU would
/// otherwise take it from a thread that wants it. No count (no `/proc`):
/// no.
pub(crate) fn cpu_to_spare() -> bool {
    if cfg!(miri) {
        return false;
    }
    use std::os::unix::fs::FileExt;
    static LOADAVG: std::sync::OnceLock<Option<std::fs::File>> = std::sync::OnceLock::new();
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let Some(f) = LOADAVG
        .get_or_init(|| std::fs::File::open("/proc/loadavg").ok())
        .as_ref()
    else {
        return false;
    };
    let cpus = *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let mut buf = [0u8; 128];
    let Ok(n) = f.read_at(&mut buf, 0) else {
        return false;
    };
    runnable(&buf[..n]).is_some_and(|r| r <= cpus)
}

/// The runnable count of a `/proc/loadavg` line ("0.81 0.82 1.20 3/250
/// 12345" → 3).
fn runnable(line: &[u8]) -> Option<usize> {
    let s = std::str::from_utf8(line).ok()?;
    let field = s.split_ascii_whitespace().nth(3)?;
    field.split('/').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn margin_follows_the_lateness_within_its_bounds() {
        let mut a = Ahead::default();
        assert_eq!(a.margin(), INITIAL_LATE * 2);
        for _ in 0..200 {
            a.woke_late(Duration::from_micros(20));
        }
        let m = a.margin();
        assert!(
            m > Duration::from_micros(35) && m < Duration::from_micros(41),
            "{m:?}"
        );
        for _ in 0..200 {
            a.woke_late(Duration::from_secs(1));
        }
        assert_eq!(a.margin(), MAX_AHEAD);
        for _ in 0..400 {
            a.woke_late(Duration::ZERO);
        }
        assert_eq!(a.margin(), MIN_AHEAD);
    }

    #[test]
    fn spinning_keeps_to_its_share_of_the_cpu() {
        let mut a = Ahead::default();
        let t0 = Instant::now();
        assert!(a.within_share(t0), "the first wait is within it");
        a.spun(t0);
        let gap = a.margin() * SHARE;
        assert!(!a.within_share(t0 + gap / 2), "too soon after the last one");
        assert!(a.within_share(t0 + gap));
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri has no /proc")]
    fn the_runnable_count_is_read_from_loadavg() {
        assert_eq!(runnable(b"0.81 0.82 1.20 3/250 12345\n"), Some(3));
        assert_eq!(runnable(b"0.00 0.00 0.00 17/1024 1"), Some(17));
        assert_eq!(runnable(b"garbage"), None);
        assert_eq!(runnable(b""), None);
        // The live file parses.
        let live = std::fs::read("/proc/loadavg").unwrap();
        assert!(runnable(&live).is_some_and(|r| r >= 1), "{live:?}");
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri has no scheduling policies")]
    fn an_ordinary_thread_has_no_realtime_priority() {
        // Test threads run under SCHED_OTHER unless the harness was started
        // under chrt; then they report that priority, never a negative one.
        assert!(thread_priority(0) >= 0);
        assert_eq!(thread_priority(-1), 0, "a bad thread ID is no priority");
    }

    #[test]
    fn serve_ignores_non_realtime_priorities_and_never_lowers() {
        let r = Realtime::default();
        assert_eq!(r.serve(0), 0);
        assert_eq!(r.serve(-3), 0);
        assert_eq!(r.priority(), 0);
        // With no worker threads every raise takes.
        assert_eq!(r.serve(10), 10);
        assert_eq!(r.serve(10), 10);
        assert_eq!(r.serve(5), 10, "never lowered");
        assert_eq!(r.serve(1000), 99, "capped at the maximum");
    }
}
