//! POSIX timers through the public API, with the checks of the kernel's
//! `tools/testing/selftests/timers/posix_timers.c` and `set-timer-lat.c`
//! that apply (written from what they check), a reference-model property
//! test, and bad input. Deterministic cases run on a manual clock
//! (hrtimers read `tick × tick length`); a few run on a real runtime.

use proptest::prelude::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use utimer::{Clock, ClockId, ItimerSpec, Notify, Runtime, TimerError, TimerId, TimerSystem};

const MS: Duration = Duration::from_millis(1);

/// A manual clock with 1 ms ticks.
fn manual() -> (TimerSystem, Clock) {
    let clock = Clock::manual();
    let sys = TimerSystem::builder()
        .workers(1)
        .clock(clock.clone())
        .build_without_threads();
    (sys, clock)
}

fn advance(sys: &TimerSystem, clock: &Clock, to: u64) {
    clock.set(to);
    sys.run_expired(0, to).unwrap();
}

fn counter() -> (Arc<AtomicUsize>, Notify) {
    let n = Arc::new(AtomicUsize::new(0));
    let c = n.clone();
    (
        n,
        Notify::Callback(Arc::new(move |_| {
            c.fetch_add(1, SeqCst);
        })),
    )
}

#[test]
fn one_shot_fires_once_and_never_early() {
    let (sys, clock) = manual();
    let (n, notify) = counter();
    let id = sys
        .posix()
        .timer_create(ClockId::Monotonic, notify)
        .unwrap();
    let old = sys
        .posix()
        .timer_settime(id, false, ItimerSpec::once(10 * MS))
        .unwrap();
    assert_eq!(old, ItimerSpec::default(), "a new timer is disarmed");
    assert_eq!(sys.posix().timer_gettime(id).unwrap().value, 10 * MS);
    advance(&sys, &clock, 9);
    assert_eq!(n.load(SeqCst), 0, "early");
    assert_eq!(sys.posix().timer_gettime(id).unwrap().value, MS);
    advance(&sys, &clock, 10);
    assert_eq!(n.load(SeqCst), 1);
    advance(&sys, &clock, 100);
    assert_eq!(n.load(SeqCst), 1, "a one-shot timer fires once");
    assert_eq!(
        sys.posix().timer_gettime(id).unwrap(),
        ItimerSpec::default()
    );
    sys.posix().timer_delete(id).unwrap();
}

#[test]
fn zero_value_disarms_and_interval_needs_a_value() {
    let (sys, clock) = manual();
    let (n, notify) = counter();
    let id = sys
        .posix()
        .timer_create(ClockId::Monotonic, notify)
        .unwrap();
    // An interval without a value arms nothing.
    sys.posix()
        .timer_settime(id, false, ItimerSpec::periodic(Duration::ZERO, 5 * MS))
        .unwrap();
    advance(&sys, &clock, 50);
    assert_eq!(n.load(SeqCst), 0);
    assert_eq!(sys.posix().timer_gettime(id).unwrap().value, Duration::ZERO);
    sys.posix()
        .timer_settime(id, false, ItimerSpec::periodic(5 * MS, 5 * MS))
        .unwrap();
    advance(&sys, &clock, 55);
    assert_eq!(n.load(SeqCst), 1);
    // Disarm returns the old setting.
    let old = sys
        .posix()
        .timer_settime(id, false, ItimerSpec::default())
        .unwrap();
    assert_eq!(old, ItimerSpec::periodic(5 * MS, 5 * MS));
    advance(&sys, &clock, 100);
    assert_eq!(n.load(SeqCst), 1);
}

#[test]
fn absolute_settime() {
    let (sys, clock) = manual();
    clock.set(1_000);
    let (n, notify) = counter();
    let id = sys
        .posix()
        .timer_create(ClockId::Monotonic, notify)
        .unwrap();
    let at = Duration::from_nanos(sys.clock_ns(ClockId::Monotonic).as_nanos()) + 7 * MS;
    sys.posix()
        .timer_settime(id, true, ItimerSpec::once(at))
        .unwrap();
    assert_eq!(sys.posix().timer_gettime(id).unwrap().value, 7 * MS);
    advance(&sys, &clock, 1_006);
    assert_eq!(n.load(SeqCst), 0);
    advance(&sys, &clock, 1_007);
    assert_eq!(n.load(SeqCst), 1);
    // An absolute time already passed fires at once.
    sys.posix()
        .timer_settime(id, true, ItimerSpec::once(MS))
        .unwrap();
    advance(&sys, &clock, 1_007);
    assert_eq!(n.load(SeqCst), 2);
}

/// posix_timers.c's overrun check: a 100 ms interval timer whose
/// notification is held up for about a second reports 9 overruns.
#[test]
fn blocked_notification_reports_nine_overruns() {
    let (sys, clock) = manual();
    let sys = Arc::new(sys);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (s2, seen2, c2) = (Arc::downgrade(&sys), seen.clone(), clock.clone());
    let id = sys
        .posix()
        .timer_create(
            ClockId::Monotonic,
            Notify::Callback(Arc::new(move |id| {
                let sys = s2.upgrade().unwrap();
                let mut seen = seen2.lock().unwrap();
                seen.push(sys.posix().timer_getoverrun(id).unwrap());
                if seen.len() == 1 {
                    // The notification is held up until 1 s after arming.
                    c2.set(1_000);
                }
            })),
        )
        .unwrap();
    sys.posix()
        .timer_settime(id, false, ItimerSpec::periodic(100 * MS, 100 * MS))
        .unwrap();
    advance(&sys, &clock, 100);
    advance(&sys, &clock, 1_000);
    advance(&sys, &clock, 1_100);
    assert_eq!(*seen.lock().unwrap(), [0, 9]);
    assert_eq!(sys.posix().timer_getoverrun(id).unwrap(), 9);
    // settime resets it.
    sys.posix()
        .timer_settime(id, false, ItimerSpec::once(MS))
        .unwrap();
    assert_eq!(sys.posix().timer_getoverrun(id).unwrap(), 0);
}

#[test]
fn late_worker_counts_overruns_and_does_not_drift() {
    let (sys, clock) = manual();
    let id = sys
        .posix()
        .timer_create(ClockId::Monotonic, Notify::Fd)
        .unwrap();
    let fd = sys.posix().timer_fd(id).unwrap();
    sys.posix()
        .timer_settime(id, false, ItimerSpec::periodic(10 * MS, 10 * MS))
        .unwrap();
    advance(&sys, &clock, 35); // expirations at 10, 20, 30
    assert_eq!(sys.posix().timer_getoverrun(id).unwrap(), 2);
    assert_eq!(read_count(fd), Some(3));
    assert_eq!(read_count(fd), None, "the count resets on read");
    // The next expiry stays on the grid: 40.
    assert_eq!(sys.posix().timer_gettime(id).unwrap().value, 5 * MS);
    advance(&sys, &clock, 40);
    assert_eq!(read_count(fd), Some(1));
}

fn read_count(fd: i32) -> Option<u64> {
    let mut buf = [0u8; 8];
    // SAFETY: a valid fd; read into a live 8-byte buffer.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), 8) };
    (n == 8).then(|| u64::from_ne_bytes(buf))
}

/// Re-arming while a notification is pending delivers none for the old
/// setting; deleting delivers nothing more.
#[test]
fn rearm_and_delete_with_a_pending_notification() {
    let (sys, clock) = manual();
    let id = sys
        .posix()
        .timer_create(ClockId::Monotonic, Notify::Fd)
        .unwrap();
    let fd = sys.posix().timer_fd(id).unwrap();
    sys.posix()
        .timer_settime(id, false, ItimerSpec::once(MS))
        .unwrap();
    advance(&sys, &clock, 1);
    sys.posix()
        .timer_settime(id, false, ItimerSpec::once(50 * MS))
        .unwrap();
    assert_eq!(
        read_count(fd),
        None,
        "the old setting's notification was dropped"
    );
    let (n, notify) = counter();
    let id2 = sys
        .posix()
        .timer_create(ClockId::Monotonic, notify)
        .unwrap();
    sys.posix()
        .timer_settime(id2, false, ItimerSpec::periodic(MS, MS))
        .unwrap();
    sys.posix().timer_delete(id2).unwrap();
    advance(&sys, &clock, 100);
    assert_eq!(n.load(SeqCst), 0, "a deleted timer notifies nothing");
    // The fd is closed by delete.
    sys.posix().timer_delete(id).unwrap();
    // SAFETY: fcntl on a closed fd is harmless and reports EBADF.
    assert_eq!(unsafe { libc::fcntl(fd, libc::F_GETFD) }, -1);
}

#[test]
fn sigev_none_interval_keeps_wrapping() {
    let (sys, clock) = manual();
    let id = sys
        .posix()
        .timer_create(ClockId::Monotonic, Notify::None)
        .unwrap();
    sys.posix()
        .timer_settime(id, false, ItimerSpec::periodic(10 * MS, 10 * MS))
        .unwrap();
    for (now, left) in [(5, 5), (10, 10), (25, 5), (1_003, 7)] {
        clock.set(now);
        let cur = sys.posix().timer_gettime(id).unwrap();
        assert_eq!(cur.value, left * MS, "at {now}");
        assert_eq!(cur.interval, 10 * MS);
    }
    // A one-shot SIGEV_NONE timer reads 0 once expired.
    sys.posix()
        .timer_settime(id, false, ItimerSpec::once(MS))
        .unwrap();
    clock.set(2_000);
    assert_eq!(
        sys.posix().timer_gettime(id).unwrap(),
        ItimerSpec::default()
    );
}

#[test]
fn ids_are_per_system_and_never_reused_at_once() {
    let (a, _) = manual();
    let (b, _) = manual();
    let ia = a
        .posix()
        .timer_create(ClockId::Monotonic, Notify::None)
        .unwrap();
    let ib = b
        .posix()
        .timer_create(ClockId::Monotonic, Notify::None)
        .unwrap();
    assert_ne!(ia, ib);
    assert!(ia.raw() >= 0);
    assert_eq!(b.posix().timer_gettime(ia), Err(TimerError::NoSuchTimer));
    assert_eq!(b.posix().timer_delete(ia), Err(TimerError::NoSuchTimer));
    assert_eq!(a.posix().timer_gettime(ib), Err(TimerError::NoSuchTimer));
    a.posix().timer_delete(ia).unwrap();
    assert_eq!(
        a.posix().timer_delete(ia),
        Err(TimerError::NoSuchTimer),
        "double delete"
    );
    assert_eq!(
        a.posix().timer_settime(ia, false, ItimerSpec::once(MS)),
        Err(TimerError::NoSuchTimer)
    );
    assert_eq!(a.posix().timer_getoverrun(ia), Err(TimerError::NoSuchTimer));
    let next = a
        .posix()
        .timer_create(ClockId::Monotonic, Notify::None)
        .unwrap();
    assert_ne!(next, ia, "a deleted ID is not issued again at once");
    for bad in [-1, i32::MIN, i32::MAX] {
        assert_eq!(
            a.posix().timer_gettime(TimerId::from_raw(bad)),
            Err(TimerError::NoSuchTimer)
        );
    }
}

#[test]
fn dropping_the_system_deletes_its_timers() {
    let (sys, _) = manual();
    let id = sys
        .posix()
        .timer_create(ClockId::Monotonic, Notify::Fd)
        .unwrap();
    let fd = sys.posix().timer_fd(id).unwrap();
    drop(sys);
    // SAFETY: as above.
    assert_eq!(unsafe { libc::fcntl(fd, libc::F_GETFD) }, -1, "fd closed");
    let (other, _) = manual();
    assert_eq!(
        other.posix().timer_gettime(id),
        Err(TimerError::NoSuchTimer)
    );
}

#[test]
fn bad_input_is_einval() {
    let ts = |s, ns| libc::timespec {
        tv_sec: s,
        tv_nsec: ns,
    };
    for (value, interval) in [
        (ts(0, 1_000_000_000), ts(0, 0)),
        (ts(-1, 0), ts(0, 0)),
        (ts(0, 0), ts(0, -1)),
        (ts(1, 0), ts(0, i64::MAX)),
    ] {
        let spec = libc::itimerspec {
            it_value: value,
            it_interval: interval,
        };
        assert_eq!(ItimerSpec::from_c(&spec), Err(TimerError::InvalidArgument));
    }
    let ok = libc::itimerspec {
        it_value: ts(1, 999_999_999),
        it_interval: ts(0, 0),
    };
    assert_eq!(
        ItimerSpec::from_c(&ok).unwrap().value,
        Duration::new(1, 999_999_999)
    );
    assert_eq!(ClockId::from_raw(libc::CLOCK_PROCESS_CPUTIME_ID), None);
    assert_eq!(ClockId::from_raw(12345), None);
    let (sys, _) = manual();
    for signo in [0, -5, 65, 1_000] {
        let n = Notify::Signal {
            signo,
            value: 0,
            thread: None,
        };
        assert_eq!(
            sys.posix().timer_create(ClockId::Monotonic, n).err(),
            Some(TimerError::InvalidArgument)
        );
    }
    // SIGEV_THREAD_ID must name a live thread of this process, as the
    // kernel's good_sigevent() checks: not a negative ID, not one no thread
    // has, not another process's (a child's).
    let mut child = std::process::Command::new("sleep")
        .arg("10")
        .spawn()
        .unwrap();
    // (Not a thread of ours that has exited: after `join` the kernel may
    // still hold it for a moment, or give its ID to a new thread.)
    for tid in [-3, 0, i32::MAX, child.id() as i32] {
        let n = Notify::Signal {
            signo: libc::SIGUSR1,
            value: 0,
            thread: Some(tid),
        };
        assert_eq!(
            sys.posix().timer_create(ClockId::Monotonic, n).err(),
            Some(TimerError::InvalidArgument),
            "thread {tid}"
        );
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // SAFETY: gettid takes no arguments.
    let me = unsafe { libc::gettid() };
    let own = Notify::Signal {
        signo: libc::SIGUSR1,
        value: 0,
        thread: Some(me),
    };
    let id = sys
        .posix()
        .timer_create(ClockId::Monotonic, own)
        .expect("this thread is a thread of the process");
    sys.posix().timer_delete(id).unwrap();
    let id = sys
        .posix()
        .timer_create(ClockId::Monotonic, Notify::None)
        .unwrap();
    assert_eq!(
        sys.posix().timer_fd(id),
        Err(TimerError::InvalidArgument),
        "not an fd timer"
    );
    assert_eq!(TimerError::NoSuchTimer.errno(), libc::EINVAL);
    // Huge values saturate instead of wrapping.
    sys.posix()
        .timer_settime(
            id,
            false,
            ItimerSpec::periodic(Duration::MAX, Duration::MAX),
        )
        .unwrap();
    assert!(sys.posix().timer_gettime(id).unwrap().value > Duration::from_secs(1 << 30));
}

#[test]
fn real_signal_with_si_value() {
    // Block the signal on this thread and wait for it synchronously.
    let signo = libc::SIGRTMIN() + 3;
    // SAFETY: plain signal-mask manipulation of this thread; the set lives
    // on the stack.
    let tid = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signo);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        libc::gettid()
    };
    let rt = Runtime::new(1).unwrap();
    let sys = rt.system();
    let notify = Notify::Signal {
        signo,
        value: 0xfeed,
        thread: Some(tid),
    };
    let id = sys
        .posix()
        .timer_create(ClockId::Monotonic, notify)
        .unwrap();
    let start = Instant::now();
    sys.posix()
        .timer_settime(id, false, ItimerSpec::once(5 * MS))
        .unwrap();
    let seen;
    // SAFETY: sigtimedwait writes a siginfo_t we own; the set is valid; the
    // words read lie inside its 128 bytes.
    let (got, value) = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signo);
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let timeout = libc::timespec {
            tv_sec: 10,
            tv_nsec: 0,
        };
        let got = libc::sigtimedwait(&set, &mut info, &timeout);
        // The kernel's SI_TIMER layout: si_timerid and si_overrun are the
        // two ints after the 16-byte header (`_sifields._timer`).
        let words = (&info as *const libc::siginfo_t).cast::<i32>();
        seen = (info.si_code, *words.add(4), *words.add(5));
        (got, info.si_value().sival_ptr as usize)
    };
    assert_eq!(got, signo);
    assert_eq!(value, 0xfeed);
    // As the kernel fills a timer's signal: SI_TIMER, the timer's ID, and
    // its overrun (none for a one-shot timer).
    const SI_TIMER: i32 = -2;
    assert_eq!(
        seen,
        (SI_TIMER, id.raw(), 0),
        "(si_code, si_timerid, si_overrun)"
    );
    assert!(start.elapsed() >= 5 * MS, "early");
    sys.posix().timer_delete(id).unwrap();
}

#[test]
fn periodic_callbacks_on_a_runtime_are_never_early() {
    let rt = Runtime::new(2).unwrap();
    let sys = rt.system_arc();
    let times = Arc::new(Mutex::new(Vec::new()));
    let t2 = times.clone();
    let id = sys
        .posix()
        .timer_create(
            ClockId::Monotonic,
            Notify::Callback(Arc::new(move |_| t2.lock().unwrap().push(Instant::now()))),
        )
        .unwrap();
    let start = Instant::now();
    sys.posix()
        .timer_settime(id, false, ItimerSpec::periodic(5 * MS, 5 * MS))
        .unwrap();
    while times.lock().unwrap().len() < 10 {
        assert!(start.elapsed() < Duration::from_secs(10));
        std::thread::sleep(MS);
    }
    sys.posix().timer_delete(id).unwrap();
    // Delete waited for a running callback: nothing runs after it.
    let after = times.lock().unwrap().len();
    std::thread::sleep(20 * MS);
    let times = times.lock().unwrap().clone();
    assert_eq!(
        times.len(),
        after,
        "a notification after timer_delete returned"
    );
    for (k, t) in times.iter().enumerate() {
        // Expiry k is at 5 ms × (k + 1 + overruns so far) >= 5 ms × (k + 1).
        assert!(
            *t >= start + 5 * MS * (k as u32 + 1),
            "notification {k} early"
        );
    }
}

#[test]
fn concurrent_lookups_settime_and_delete() {
    let (sys, _) = manual();
    let sys = Arc::new(sys);
    let ids: Vec<TimerId> = (0..64)
        .map(|_| {
            sys.posix()
                .timer_create(ClockId::Monotonic, Notify::None)
                .unwrap()
        })
        .collect();
    let ids = Arc::new(ids);
    let threads: Vec<_> = (0..4)
        .map(|k| {
            let (sys, ids) = (sys.clone(), ids.clone());
            std::thread::spawn(move || {
                for round in 0..2_000usize {
                    let id = ids[(round * 7 + k) % ids.len()];
                    match round % 4 {
                        0 if k == 0 && round % 64 == 0 => {
                            let _ = sys.posix().timer_delete(id);
                        }
                        1 => {
                            let _ = sys.posix().timer_settime(
                                id,
                                false,
                                ItimerSpec::once(MS * round as u32),
                            );
                        }
                        _ => match sys.posix().timer_gettime(id) {
                            Ok(_) | Err(TimerError::NoSuchTimer) => {}
                            Err(e) => panic!("{e}"),
                        },
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

/// A reference model of `SIGEV_NONE` timers on a manual clock.
#[derive(Clone, Debug)]
enum Op {
    Create,
    Settime {
        idx: usize,
        value: u64,
        interval: u64,
        abs: bool,
    },
    Gettime {
        idx: usize,
    },
    Delete {
        idx: usize,
    },
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => Just(Op::Create),
        3 => (0..8usize, 0..50u64, prop_oneof![Just(0u64), 1..20u64], any::<bool>())
            .prop_map(|(idx, value, interval, abs)| Op::Settime { idx, value, interval, abs }),
        3 => (0..8usize).prop_map(|idx| Op::Gettime { idx }),
        1 => (0..8usize).prop_map(|idx| Op::Delete { idx }),
        2 => (0..40u64).prop_map(Op::Advance),
    ]
}

#[derive(Clone, Copy, Default)]
struct Model {
    armed: bool,
    expires: u64,
    interval: u64,
}

impl Model {
    fn get(&mut self, now: u64) -> (u64, u64) {
        if !self.armed {
            return (0, self.interval);
        }
        if now >= self.expires {
            if self.interval == 0 {
                self.armed = false;
                return (0, 0);
            }
            self.expires += ((now - self.expires) / self.interval + 1) * self.interval;
        }
        (self.expires - now, self.interval)
    }
}

proptest! {
    #[test]
    fn settime_gettime_delete_match_the_model(ops in prop::collection::vec(op(), 1..80)) {
        let (sys, clock) = manual();
        let mut now = 0u64;
        let mut live: Vec<(TimerId, Option<Model>)> = Vec::new();
        let mut models: HashMap<TimerId, Model> = HashMap::new();
        for op in ops {
            match op {
                Op::Create => {
                    let id = sys.posix().timer_create(ClockId::Monotonic, Notify::None).unwrap();
                    prop_assert!(!models.contains_key(&id));
                    models.insert(id, Model::default());
                    live.push((id, None));
                }
                Op::Settime { idx, value, interval, abs } if !live.is_empty() => {
                    let id = live[idx % live.len()].0;
                    let spec = ItimerSpec::periodic(MS * value as u32, MS * interval as u32);
                    let got = sys.posix().timer_settime(id, abs, spec);
                    match models.get_mut(&id) {
                        None => prop_assert_eq!(got, Err(TimerError::NoSuchTimer)),
                        Some(m) => {
                            let (v, i) = m.get(now);
                            prop_assert_eq!(got.unwrap(), ItimerSpec::periodic(MS * v as u32, MS * i as u32));
                            // A disarming setting clears the interval too
                            // (the kernel's common_timer_set()).
                            m.interval = if value != 0 { interval } else { 0 };
                            m.armed = value != 0;
                            m.expires = if abs { value } else { now + value };
                        }
                    }
                }
                Op::Gettime { idx } if !live.is_empty() => {
                    let id = live[idx % live.len()].0;
                    let got = sys.posix().timer_gettime(id);
                    match models.get_mut(&id) {
                        None => prop_assert_eq!(got, Err(TimerError::NoSuchTimer)),
                        Some(m) => {
                            let (v, i) = m.get(now);
                            prop_assert_eq!(got.unwrap(), ItimerSpec::periodic(MS * v as u32, MS * i as u32));
                        }
                    }
                }
                Op::Delete { idx } if !live.is_empty() => {
                    let id = live[idx % live.len()].0;
                    let got = sys.posix().timer_delete(id);
                    match models.remove(&id) {
                        None => prop_assert_eq!(got, Err(TimerError::NoSuchTimer)),
                        Some(_) => prop_assert_eq!(got, Ok(())),
                    }
                }
                Op::Advance(d) => {
                    now += d;
                    clock.set(now);
                }
                _ => {}
            }
        }
    }
}

/// `timer_create_with` makes the notification from the new ID (POSIX's
/// default sigevent: `SIGALRM` with the ID as `si_value`), and a bad
/// notification made that way is refused without leaving a timer behind.
#[test]
fn create_with_sees_the_new_id() {
    let (sys, clock) = manual();
    let seen = Arc::new(AtomicUsize::new(usize::MAX));
    let s = seen.clone();
    let id = sys
        .posix()
        .timer_create_with(ClockId::Monotonic, |id| {
            let raw = id.raw() as usize;
            Notify::Callback(Arc::new(move |fired| {
                assert_eq!(fired.raw() as usize, raw);
                s.store(raw, SeqCst);
            }))
        })
        .unwrap();
    sys.posix()
        .timer_settime(id, false, ItimerSpec::once(MS))
        .unwrap();
    advance(&sys, &clock, 2);
    assert_eq!(seen.load(SeqCst), id.raw() as usize);
    let mut made = None;
    let bad = sys.posix().timer_create_with(ClockId::Monotonic, |id| {
        made = Some(id);
        Notify::Signal {
            signo: 0,
            value: 0,
            thread: None,
        }
    });
    assert_eq!(bad, Err(TimerError::InvalidArgument));
    assert_eq!(
        sys.posix().timer_gettime(made.expect("called")),
        Err(TimerError::NoSuchTimer),
        "the refused timer's ID names nothing"
    );
}
