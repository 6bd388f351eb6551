//! An expiry run over many due timers, for profiling the run by hand:
//! `n` timers (default 1M) with empty callbacks, due over 64 ticks as in
//! `utimer bench --filter expiry`, armed and fired `rounds` times, by a
//! thread that `enter`s the worker or (`owner`) registers as it.
//!
//! ```text
//! cargo build --release -p utimer --example expiry
//! perf record target/release/examples/expiry 1000000 20 owner
//! valgrind --tool=callgrind target/release/examples/expiry 100000 1
//! ```

use utimer::{Clock, Expiry, TimerSystem};

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .map_or(1_000_000, |s| s.parse().expect("a count"));
    let rounds: usize = args.next().map_or(10, |s| s.parse().expect("a count"));
    let clock = Clock::manual();
    clock.set(1000);
    let sys = TimerSystem::builder()
        .workers(1)
        .clock(clock.clone())
        .build_without_threads();
    let owner = args.next().as_deref() == Some("owner");
    let _worker = owner.then(|| sys.register_worker(0, || {}).expect("worker 0"));
    let _entered = (!owner).then(|| sys.enter(0).expect("worker 0"));
    let timers: Vec<_> = (0..n).map(|_| sys.timer(|_| {})).collect();
    let mut best = f64::MAX;
    for _ in 0..rounds {
        let now = sys.now();
        for (i, t) in timers.iter().enumerate() {
            t.add(Expiry::Tick(now + 1 + (i as u64 % 64)))
                .expect("a live system");
        }
        let until = now + 64 + 16;
        clock.set(until);
        let start = std::time::Instant::now();
        let fired = sys.run_expired(0, until).expect("worker 0");
        let ns = start.elapsed().as_nanos() as f64 / n as f64;
        assert_eq!(fired, n);
        best = best.min(ns);
        println!("expiry: {ns:.1} ns per timer");
    }
    println!("best: {best:.1} ns per timer");
}
