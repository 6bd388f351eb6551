//! The first timers of a process are on time: a timer armed the moment a
//! process's first `Runtime` is up fires when a later one would, not after
//! the milliseconds the kernel takes to register a multi-threaded process
//! for `membarrier` (an RCU grace period: 12–15 ms measured), which a
//! worker once spent before its first look at its timers.
//!
//! Each measurement needs a fresh process, so the test runs this binary
//! again, for this test alone, as the child that measures.

use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use utimer::{ClockId, HrRestart, Runtime};

const CHILD: &str = "UTIMER_FIRST_TIMER_CHILD";
const TEST: &str = "the_first_timers_of_a_process_are_on_time";
const TIMEOUT: Duration = Duration::from_millis(2);

/// In a fresh process with a thread of its own (as any program that has
/// threads: the case where registering is slow), starts a runtime, arms an
/// hrtimer and a wheel timer at once and prints how late each fired.
fn child() {
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let other = std::thread::spawn(move || {
        let _ = stop_rx.recv();
    });
    let rt = Runtime::new(1).unwrap();
    let sys = rt.system();
    let (tx, rx) = mpsc::channel();
    let tx2 = tx.clone();
    let hr = sys.hrtimer(ClockId::Monotonic, move |_| {
        tx.send(("hr", Instant::now())).unwrap();
        HrRestart::NoRestart
    });
    let wheel = sys.timer(move |_| tx2.send(("wheel", Instant::now())).unwrap());
    let armed = Instant::now();
    hr.start_after(TIMEOUT).unwrap();
    wheel.modify(TIMEOUT).unwrap();
    for _ in 0..2 {
        let (kind, fired) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        let after = fired - armed;
        assert!(after >= TIMEOUT, "{kind} fired early: {after:?}");
        println!("{kind}_late_us={}", (after - TIMEOUT).as_micros());
    }
    drop((hr, wheel));
    rt.shutdown();
    stop_tx.send(()).unwrap();
    other.join().unwrap();
}

fn lateness(out: &str, kind: &str) -> Duration {
    let key = format!("{kind}_late_us=");
    let line = out
        .lines()
        .find_map(|l| l.split_once(key.as_str()).map(|(_, v)| v))
        .unwrap_or_else(|| panic!("no {key} in the child's output:\n{out}"));
    Duration::from_micros(line.trim().parse().unwrap())
}

#[test]
fn the_first_timers_of_a_process_are_on_time() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    // The best of three fresh processes: a loaded machine may delay any one
    // of them, but the registration delayed every one, by milliseconds.
    let mut best_hr = Duration::MAX;
    let mut best_wheel = Duration::MAX;
    for _ in 0..3 {
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", TEST, "--nocapture", "--test-threads=1"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "child failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        best_hr = best_hr.min(lateness(&stdout, "hr"));
        best_wheel = best_wheel.min(lateness(&stdout, "wheel"));
    }
    // An hrtimer wakes its worker within microseconds; a wheel timer may
    // also wait for its bucket: up to a tick (1 ms) and the coarse clock's
    // lag (up to 4 ms).
    assert!(
        best_hr < Duration::from_millis(4),
        "hrtimer {best_hr:?} late"
    );
    assert!(
        best_wheel < Duration::from_millis(6),
        "wheel timer {best_wheel:?} late"
    );
}
