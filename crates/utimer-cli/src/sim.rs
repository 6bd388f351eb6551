//! `utimer sim`: the pull model's deterministic simulator from the command
//! line. With `--workers`, one run; without, the table for 8, 64, 512 and
//! 1,024 workers.

use utimer::sim::{self, SimConfig, SimReport};

pub(crate) const USAGE: &str = "\
utimer sim: run the pull model (seed 004) on virtual workers and time

Usage:
    utimer sim [--workers N] [--nodes N] [--seed N] [--ticks N] [--stall-bound N]

Options:
    --workers N       Virtual workers (1..=65536); default: a table for 8, 64,
                      512 and 1,024 workers
    --nodes N         NUMA nodes they are spread over (default: 1 for 8 workers,
                      else 8)
    --seed N          Seed of every random choice (default 1); a failure prints
                      the seed and tick that reproduce it
    --ticks N         Simulated 1 ms ticks before the final drain (default 2000)
    --stall-bound N   Ticks a busy worker may miss before it counts as stalled
                      (default 2)
    -h, --help        Print this message

After every tick it checks the hierarchy's state words, that every timer
fires once, never early and on time, and that idle workers wake only for
their pinned timers or as the last idle worker. It prints hierarchy levels,
compare-and-swaps and group locks per idle entry and exit (mean and max),
and timer wake-ups per simulated second.
";

/// `utimer sim`'s options.
#[derive(Default, Debug)]
pub(crate) struct SimOptions {
    pub(crate) help: bool,
    workers: Option<usize>,
    nodes: Option<usize>,
    seed: Option<u64>,
    ticks: Option<u64>,
    stall_bound: Option<u64>,
}

pub(crate) fn parse(args: &[String]) -> Result<SimOptions, String> {
    let mut o = SimOptions::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        if flag == "-h" || flag == "--help" {
            o.help = true;
            continue;
        }
        let raw = inline
            .or_else(|| it.next().cloned())
            .ok_or_else(|| format!("`{flag}` needs a value"))?;
        let num = |max: u64| -> Result<u64, String> {
            match raw.parse::<u64>() {
                Ok(v) if (1..=max).contains(&v) => Ok(v),
                _ => Err(format!(
                    "`{flag}` needs a whole number from 1 to {max}, not `{raw}`"
                )),
            }
        };
        match flag {
            "--workers" => o.workers = Some(num(65_536)? as usize),
            "--nodes" => o.nodes = Some(num(1_024)? as usize),
            "--seed" => {
                o.seed = Some(
                    raw.parse()
                        .map_err(|_| format!("`--seed` needs a number, not `{raw}`"))?,
                )
            }
            "--ticks" => o.ticks = Some(num(10_000_000)?),
            "--stall-bound" => o.stall_bound = Some(num(1_000)?),
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    Ok(o)
}

fn config(o: &SimOptions, workers: usize) -> SimConfig {
    SimConfig {
        workers,
        nodes: o.nodes.unwrap_or(if workers <= 8 { 1 } else { 8 }),
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

pub(crate) fn run(o: &SimOptions) -> Result<(), sim::SimFailure> {
    let sizes = match o.workers {
        Some(w) => vec![w],
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

    fn args(s: &[&str]) -> Vec<String> {
        s.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn parses_and_rejects() {
        let o = parse(&args(&["--workers", "64", "--seed=9", "--ticks", "10"])).unwrap();
        assert_eq!((o.workers, o.seed, o.ticks), (Some(64), Some(9), Some(10)));
        assert!(parse(&args(&["--workers", "0"])).is_err());
        assert!(parse(&args(&["--workers"])).is_err());
        assert!(parse(&args(&["--nodes", "x"])).is_err());
        assert!(parse(&args(&["--frob", "1"])).is_err());
        assert!(parse(&args(&["-h"])).unwrap().help);
    }
}
