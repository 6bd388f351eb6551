//! The first sleep of a process is as precise as the ones after it: the
//! default runtime starts before the first deadline is taken, not between
//! the deadline and the first poll.
//!
//! It needs fresh processes: the one test here runs this test binary again
//! as child processes, each of which makes the first timer of its process.

use std::process::Command;
use std::time::Duration;
use utimer_async::{sleep, Instant};

const MS: Duration = Duration::from_millis(1);
/// Set in the child processes.
const CHILD: &str = "UTIMER_ASYNC_FIRST_SLEEP_CHILD";
const CHILDREN: usize = 5;

/// How late a 1 ms sleep completes after its deadline (never early).
fn lateness() -> Duration {
    let s = sleep(MS);
    let deadline = s.deadline();
    futures::executor::block_on(s);
    let now = Instant::now();
    assert!(now >= deadline, "early by {:?}", deadline - now);
    now - deadline
}

/// In a child: the first sleep's lateness, then the median of the next
/// ten's, in µs, on one line. The default runtime has 64 workers, so that
/// its start (64 threads spawned) takes long enough to be seen on any
/// machine.
fn child() {
    utimer_async::Handle::init_global(utimer::TimerSystem::builder().workers(64)).unwrap();
    let first = lateness();
    let mut next: Vec<Duration> = (0..10).map(|_| lateness()).collect();
    next.sort();
    println!(
        "first-sleep {} {}",
        first.as_micros(),
        next[next.len() / 2].as_micros()
    );
}

#[test]
fn the_first_sleep_of_a_process_is_as_late_as_the_next_ones() {
    if std::env::var_os(CHILD).is_some() {
        child();
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let mut firsts = Vec::new();
    let mut nexts = Vec::new();
    for _ in 0..CHILDREN {
        let out = Command::new(&exe)
            .args([
                "--exact",
                "the_first_sleep_of_a_process_is_as_late_as_the_next_ones",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "child failed: {stdout}");
        let line = stdout
            .lines()
            .find_map(|l| Some(l.split_once("first-sleep ")?.1))
            .unwrap_or_else(|| panic!("no measurement in {stdout}"));
        let mut v = line.split(' ').map(|x| x.parse::<u64>().unwrap());
        firsts.push(v.next().unwrap());
        nexts.push(v.next().unwrap());
    }
    firsts.sort();
    nexts.sort();
    eprintln!("first sleep late by (µs): {firsts:?}; the next ones' medians: {nexts:?}");
    // The best first sleep of five processes against the median of the
    // later ones: a start between deadline and poll (hundreds of µs to
    // ms) is in every first sleep, while a busy machine delays only some.
    let (best_first, median_next) = (firsts[0], nexts[CHILDREN / 2]);
    assert!(
        best_first <= median_next + 250,
        "the first sleep was late by {best_first} µs at best, the later ones by {median_next} µs"
    );
}
