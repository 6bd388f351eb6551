//! A hand-written event loop that drives utimer through the integration
//! API: one thread that runs jobs from a channel and utimer's timers, and
//! sleeps, without a periodic tick, until its next timer or a new job.
//!
//! Run with `cargo run --example event_loop -p utimer`.

use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use utimer::TimerSystem;

enum Job {
    Say(&'static str),
    Stop,
}

fn main() {
    let sys = Arc::new(TimerSystem::builder().workers(1).build_without_threads());
    let (jobs_tx, jobs_rx) = mpsc::channel::<Job>();
    let start = Instant::now();

    let event_loop = {
        let sys = sys.clone();
        thread::spawn(move || {
            // The waker: unpark this thread. utimer calls it when a timer
            // armed from another thread must fire before we would wake.
            let me = thread::current();
            let worker = sys
                .register_worker(0, move || me.unpark())
                .expect("worker 0");
            let mut wakeups = 0u32;
            loop {
                // 1. Our own work.
                for job in jobs_rx.try_iter() {
                    match job {
                        Job::Say(s) => println!("{:>6.1?}  job: {s}", start.elapsed()),
                        Job::Stop => {
                            println!(
                                "{:>6.1?}  stopping after {wakeups} wake-ups",
                                start.elapsed()
                            );
                            return;
                        }
                    }
                }
                // 2. Timers that are due.
                worker.run_expired();
                // 3. Going idle: until when may we sleep?
                match worker.idle_enter_until() {
                    Some(at) => thread::park_timeout(at.saturating_duration_since(Instant::now())),
                    None => thread::park(),
                }
                wakeups += 1;
                // 4. Busy again.
                worker.idle_exit();
            }
        })
    };

    // Timers armed from the main thread land on worker 0 and wake it in time.
    let periodic = sys.timer(move |t| {
        println!("{:>6.1?}  periodic timer", start.elapsed());
        let _ = t.modify(Duration::from_millis(100));
    });
    periodic.modify(Duration::from_millis(100)).unwrap();
    let once = sys.timer(move |_| {
        println!("{:>6.1?}  one-shot timer (250 ms)", start.elapsed());
    });
    once.modify(Duration::from_millis(250)).unwrap();

    thread::sleep(Duration::from_millis(150));
    jobs_tx.send(Job::Say("hello from main")).unwrap();
    event_loop.thread().unpark();
    thread::sleep(Duration::from_millis(300));

    // Stop the periodic timer and wait until its callback is not running.
    periodic.shutdown_sync().unwrap();
    jobs_tx.send(Job::Stop).unwrap();
    event_loop.thread().unpark();
    event_loop.join().unwrap();
}
