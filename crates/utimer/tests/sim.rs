//! The pull model's deterministic simulator (`utimer::sim`): fixed seeds on
//! machines of 8 to 1,024 workers, plus one random seed, printed so that a
//! failure can be replayed with `utimer sim --seed N`.

use utimer::sim::{run_seed, SimReport};

fn must_pass(workers: usize, nodes: usize, seed: u64, ticks: u64) -> SimReport {
    match run_seed(workers, nodes, seed, ticks) {
        Ok(r) => r,
        Err(e) => panic!("simulation of {workers} workers on {nodes} nodes failed: {e}"),
    }
}

#[test]
fn fixed_seeds_small_machines() {
    for seed in 1..=6 {
        let r = must_pass(8, 1, seed, 3_000);
        assert!(r.timers_armed > 100);
        assert!(r.remote_expiries > 0, "seed {seed}: nobody pulled anything");
        let r = must_pass(64, 2, seed, 1_000);
        assert_eq!(r.levels, 3);
    }
}

#[test]
fn fixed_seeds_large_machines() {
    let r = must_pass(512, 8, 7, 300);
    assert!(r.idle_entries > 0);
    let r = must_pass(1024, 8, 8, 200);
    assert_eq!(r.levels, 4);
    assert!(r.idle_entry_cas.max <= 2 * 4 + 8, "{:?}", r.idle_entry_cas);
}

#[test]
fn a_random_seed() {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(42, |d| d.as_nanos() as u64);
    eprintln!("random simulation seed: {seed} (replay: utimer sim --workers 64 --nodes 2 --seed {seed} --ticks 1500)");
    must_pass(64, 2, seed, 1_500);
}

#[test]
fn stalls_are_found_and_pulled() {
    let r = must_pass(16, 1, 11, 5_000);
    assert!(
        r.stalls > 0,
        "no stall in 5,000 ticks: the schedule changed"
    );
}
