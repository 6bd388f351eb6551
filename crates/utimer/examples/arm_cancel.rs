//! Arm + cancel of one timer in a loop, on the calling thread's worker:
//! `owner` registers the thread as the worker (its base lock is biased
//! towards it: no atomic read-modify-write), `enter` only enters it (the
//! spinlock). For profiling the hot path by hand, e.g. instruction counts:
//!
//! ```text
//! cargo build --release -p utimer --example arm_cancel
//! valgrind --tool=callgrind target/release/examples/arm_cancel enter 200000
//! target/release/examples/arm_cancel owner 20000000
//! ```
//!
//! (Under valgrind `membarrier` is not available, so both modes take the
//! spinlock there.) `utimer bench --filter arm_cancel` has the same case
//! beside its peers.

use std::hint::black_box;
use utimer::{Clock, TimerSystem};

fn main() {
    let clock = Clock::manual();
    clock.set(1000);
    let sys = TimerSystem::builder()
        .workers(1)
        .clock(clock.clone())
        .build();
    let owner = std::env::args().nth(1).as_deref() == Some("owner");
    let n: u64 = std::env::args()
        .nth(2)
        .map_or(20_000_000, |s| s.parse().expect("a number of iterations"));
    let _worker = owner.then(|| sys.register_worker(0, || {}).expect("worker 0"));
    let _entered = (!owner).then(|| sys.enter(0).expect("worker 0"));
    let t = sys.timer(|_| {});
    let at = sys.now() + 100;
    let start = std::time::Instant::now();
    for _ in 0..n {
        t.add(black_box(at)).expect("a live system");
        black_box(t.delete());
    }
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    println!(
        "{} arm+cancel: {ns:.2} ns",
        if owner { "owner" } else { "entered" }
    );
}
