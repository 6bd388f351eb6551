//! `utimer sim`: the pull model's deterministic simulator from the command
//! line. With `--workers`, one run; without, the table for 8, 64, 512 and
//! 1,024 workers.

use clap::{value_parser, Args};
use utimer::sim::{self, SimConfig, SimReport};

/// Shown after the options by `utimer sim --help`.
pub(crate) const AFTER_HELP: &str = "\
After every tick it checks the hierarchy's state words, that every timer
fires once, never early and on time, and that idle workers wake only for
their pinned timers or as the last idle worker. It prints hierarchy levels,
compare-and-swaps and group locks per idle entry and exit (mean and max),
and timer wake-ups per simulated second.";

/// `utimer sim`'s options: run the pull model (the kernel's hierarchical
/// timer migration, 2022) on virtual workers and time.
#[derive(Debug, Default, Args)]
pub(crate) struct SimArgs {
    /// Virtual workers (1..=1024, utimer's MAX_WORKERS); default: a table
    /// for 8, 64, 512 and 1,024 workers
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..=utimer::MAX_WORKERS as u64))]
    workers: Option<u64>,
    /// NUMA nodes they are spread over (1..=1024; default: 1 for 8 workers,
    /// else 8)
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..=1_024))]
    nodes: Option<u64>,
    /// Seed of every random choice (default 1); a failure prints the seed and
    /// tick that reproduce it
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Simulated 1 ms ticks before the final drain (1..=10000000; default
    /// 2000)
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..=10_000_000))]
    ticks: Option<u64>,
    /// Ticks a busy worker may miss before it counts as stalled (1..=1000;
    /// default 2)
    #[arg(long, value_name = "N", value_parser = value_parser!(u64).range(1..=1_000))]
    stall_bound: Option<u64>,
}

fn config(o: &SimArgs, workers: usize) -> SimConfig {
    SimConfig {
        workers,
        nodes: o
            .nodes
            .map_or(if workers <= 8 { 1 } else { 8 }, |n| n as usize),
        seed: o.seed.unwrap_or(1),
        ticks: o.ticks.unwrap_or(2_000),
        stall_bound: o.stall_bound.unwrap_or(2),
    }
}

fn row(r: &SimReport, nodes: usize) {
    println!(
        "{:>7} {:>5} {:>6} | {:>6.2} {:>4} | {:>6.2} {:>4} | {:>6.2} {:>4} | {:>6.2} {:>4} | {:>10.1} | {:>8} {:>7} {:>6} {:>7} {:>5}",
        r.workers,
        nodes,
        r.levels,
        r.idle_entry_cas.mean,
        r.idle_entry_cas.max,
        r.idle_entry_locks.mean,
        r.idle_entry_locks.max,
        r.idle_exit_cas.mean,
        r.idle_exit_cas.max,
        r.idle_exit_locks.mean,
        r.idle_exit_locks.max,
        r.timer_wakeups_per_sec,
        r.timers_armed,
        r.remote_expiries,
        r.stalls,
        r.hotplugs,
        r.max_late_global,
    );
}

pub(crate) fn run(o: &SimArgs) -> Result<(), sim::SimFailure> {
    let sizes = match o.workers {
        Some(w) => vec![w as usize],
        None => vec![8, 64, 512, 1024],
    };
    println!(
        "pull model simulation, seed {}, {} ticks of 1 ms (+ drain)",
        o.seed.unwrap_or(1),
        o.ticks.unwrap_or(2_000)
    );
    println!(
        "{:>7} {:>5} {:>6} | {:>11} | {:>11} | {:>11} | {:>11} | {:>10} | {:>8} {:>7} {:>6} {:>7} {:>5}",
        "workers",
        "nodes",
        "levels",
        "entry CAS",
        "entry locks",
        "exit CAS",
        "exit locks",
        "wakeups/s",
        "timers",
        "remote",
        "stalls",
        "hotplug",
        "late"
    );
    println!(
        "{:>20} | {:>6} {:>4} | {:>6} {:>4} | {:>6} {:>4} | {:>6} {:>4} |",
        "", "mean", "max", "mean", "max", "mean", "max", "mean", "max"
    );
    for w in sizes {
        let cfg = config(o, w);
        let r = sim::run(&cfg)?;
        row(&r, cfg.nodes);
    }
    println!(
        "every check passed: hierarchy state, timers once / never early / on time, idle wake-ups"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        sim: SimArgs,
    }

    fn parse(args: &[&str]) -> Result<SimArgs, clap::Error> {
        Wrap::try_parse_from(std::iter::once("sim").chain(args.iter().copied())).map(|w| w.sim)
    }

    #[test]
    fn parses_and_rejects() {
        let o = parse(&["--workers", "64", "--seed=9", "--ticks", "10"]).unwrap();
        assert_eq!((o.workers, o.seed, o.ticks), (Some(64), Some(9), Some(10)));
        assert_eq!(config(&o, 64).nodes, 8);
        assert_eq!(parse(&["--stall-bound", "3"]).unwrap().stall_bound, Some(3));
        for bad in [
            &["--workers", "0"][..],
            &["--workers", "1025"],
            &["--workers"],
            &["--nodes", "x"],
            &["--seed", "-1"],
            &["--frob", "1"],
        ] {
            let e = parse(bad)
                .err()
                .unwrap_or_else(|| panic!("{bad:?} should fail"));
            assert_eq!(e.exit_code(), 2);
        }
    }
}
