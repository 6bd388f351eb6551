//! Process-directed timer signals, as the kernel queues and counts them,
//! each scenario in a child process whose every thread blocks the signal
//! (a process-directed signal stays pending only then, which a test
//! binary's other threads do not allow; the test runs this binary again,
//! for that test alone, with the mask set between fork and exec):
//!
//! * the periods that pass while a timer's signal is pending are that
//!   signal's overruns, which `timer_getoverrun` reports once the signal is
//!   accepted (the case of LTP's `timer_getoverrun/2-*`); the next signal
//!   starts from zero;
//! * timers that share a real-time signal each queue their own, and a
//!   pending signal of the same number from elsewhere holds none back.

use std::os::unix::process::CommandExt;
use std::process::Command;
use std::time::{Duration, Instant};
use utimer::{ClockId, ItimerSpec, Notify, Runtime};

const CHILD: &str = "UTIMER_POSIX_SIGNALS_CHILD";
const TEST: &str = "overruns_count_until_the_signal_is_accepted";
/// `SIGURG`: ignored by default, so a stray one harms nothing.
const SIGNO: i32 = libc::SIGURG;
const SI_TIMER: i32 = -2;
const PERIOD: Duration = Duration::from_millis(20);

fn set_of(signo: i32) -> libc::sigset_t {
    // SAFETY: a zeroed sigset_t is valid storage; sigemptyset and
    // sigaddset write it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signo);
        set
    }
}

/// What a timer's signal says: the kernel's `_timer` member of
/// `siginfo_t`.
struct Accepted {
    code: i32,
    timerid: i32,
    overrun: i32,
}

/// Accepts a pending `signo`, waiting up to `secs` seconds.
fn accept_within(signo: i32, secs: i64) -> Option<Accepted> {
    let set = set_of(signo);
    // SAFETY: sigtimedwait writes a siginfo_t we own; si_timerid and
    // si_overrun are the two ints after the 16-byte header.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let timeout = libc::timespec {
            tv_sec: secs,
            tv_nsec: 0,
        };
        if libc::sigtimedwait(&set, &mut info, &timeout) != signo {
            return None;
        }
        let words = (&info as *const libc::siginfo_t).cast::<i32>();
        Some(Accepted {
            code: info.si_code,
            timerid: *words.add(4),
            overrun: *words.add(5),
        })
    }
}

/// Accepts the pending `SIGNO`: (si_code, si_overrun).
fn accept() -> (i32, i32) {
    let a = accept_within(SIGNO, 10).expect("no signal");
    (a.code, a.overrun)
}

fn child() {
    let rt = Runtime::new(1).unwrap();
    let posix = rt.system().posix();
    let notify = Notify::Signal {
        signo: SIGNO,
        value: 7,
        thread: None,
    };
    let id = posix.timer_create(ClockId::Monotonic, notify).unwrap();
    let armed = Instant::now();
    posix
        .timer_settime(id, false, ItimerSpec::periodic(PERIOD, PERIOD))
        .unwrap();
    // Five periods pass while the first signal waits: four overruns.
    std::thread::sleep(PERIOD * 5 + PERIOD / 2);
    assert_eq!(posix.timer_getoverrun(id).unwrap(), 0, "not accepted yet");
    // On a loaded machine the worker may lag: wait until it has processed
    // every expiry so far (the next one is then ahead; a passed but
    // unprocessed one reads as 1 ns).
    while posix.timer_gettime(id).unwrap().value <= Duration::from_micros(1) {
        std::thread::sleep(Duration::from_millis(1));
    }
    let expirations = || (armed.elapsed().as_nanos() / PERIOD.as_nanos()) as i32;
    let before = expirations();
    let (code, si_overrun) = accept();
    assert_eq!(code, SI_TIMER);
    // The signal was queued at the first expiry, with no overrun then.
    assert_eq!(si_overrun, 0);
    let overruns = posix.timer_getoverrun(id).unwrap();
    let after = expirations();
    // The first signal and its overruns are every expiration so far.
    assert!(
        (before - 1..=after - 1).contains(&overruns),
        "{overruns} overruns after {before}..{after} expirations"
    );
    // The next signal starts from zero: its overruns are at most the
    // periods since the first was accepted (not the first one's again).
    let accepted = Instant::now();
    let (code, si_overrun) = accept();
    assert_eq!(code, SI_TIMER);
    let since = (accepted.elapsed().as_nanos() / PERIOD.as_nanos()) as i32;
    assert!(
        si_overrun <= since + 1,
        "next signal: {si_overrun} overruns, {since} periods after the first"
    );
    posix.timer_delete(id).unwrap();
    rt.shutdown();
    println!("child_ok");
}

/// Runs this binary again for test `name` alone, as a child whose every
/// thread blocks `signo` (set between fork and exec, inherited by each
/// thread), and checks that the child's scenario passed.
fn run_child(name: &str, signo: i32) {
    let set = set_of(signo);
    let mut child = Command::new(std::env::current_exe().unwrap());
    child
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1");
    // SAFETY: pthread_sigmask is async-signal-safe, and `set` is a copy
    // owned by the closure.
    unsafe {
        child.pre_exec(move || {
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            Ok(())
        });
    }
    let out = child.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("child_ok"),
        "child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn overruns_count_until_the_signal_is_accepted() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    run_child(TEST, SIGNO);
}

/// Timers that share a real-time signal each queue their own, as each
/// kernel timer has its own queue entry; a pending signal of the same
/// number from elsewhere (`sigqueue`) holds none of them back.
fn shared_signal_child() {
    let signo = libc::SIGRTMIN() + 5;
    let rt = Runtime::new(1).unwrap();
    let posix = rt.system().posix();
    // Someone else's signal of the same number, pending first.
    // SAFETY: sigqueue to our own process with a plain value.
    let queued = unsafe {
        libc::sigqueue(
            libc::getpid(),
            signo,
            libc::sigval {
                sival_ptr: std::ptr::null_mut(),
            },
        )
    };
    assert_eq!(queued, 0);
    let notify = || Notify::Signal {
        signo,
        value: 1,
        thread: None,
    };
    let a = posix.timer_create(ClockId::Monotonic, notify()).unwrap();
    let b = posix.timer_create(ClockId::Monotonic, notify()).unwrap();
    let once = ItimerSpec::once(Duration::from_millis(5));
    posix.timer_settime(a, false, once).unwrap();
    posix.timer_settime(b, false, once).unwrap();
    std::thread::sleep(Duration::from_millis(30));
    let mut timers = Vec::new();
    while let Some(a) = accept_within(signo, 2) {
        if a.code == SI_TIMER {
            timers.push(a.timerid);
        }
        if timers.len() == 2 {
            break;
        }
    }
    timers.sort();
    let mut want = vec![a.raw(), b.raw()];
    want.sort();
    assert_eq!(timers, want, "each one-shot timer's signal arrives");
    posix.timer_delete(a).unwrap();
    posix.timer_delete(b).unwrap();
    rt.shutdown();
    println!("child_ok");
}

#[test]
fn timers_sharing_a_signal_each_deliver_theirs() {
    if std::env::var_os(CHILD).is_some() {
        shared_signal_child();
        return;
    }
    run_child(
        "timers_sharing_a_signal_each_deliver_theirs",
        libc::SIGRTMIN() + 5,
    );
}
