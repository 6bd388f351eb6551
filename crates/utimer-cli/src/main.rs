//! `utimer`: the command line tool of the utimer workspace.
//!
//! `bench` measures utimer side by side with the timer facilities people
//! use instead (tokio's timer, tokio-util's `DelayQueue`, a binary heap, a
//! `BTreeMap`, POSIX timers and `timerfd`). The cases, the peers and the
//! methodology live in the `utimer-bench` library crate, which the
//! Criterion benches use too; this is the front end. `sim` runs the pull
//! model's deterministic simulator (`utimer::sim`, front end in `sim.rs`).
//!
//! Argument parsing is done by hand: the surface is four flags, and a parser
//! dependency would cost more build time than it saves. Usage errors print a
//! message and the usage text to stderr and exit with status 2.

mod sim;

use std::path::PathBuf;
use std::process::ExitCode;
use utimer_bench as bench;

/// The memory case counts the measuring thread's allocations; only a
/// binary can install a global allocator.
#[global_allocator]
static GLOBAL: bench::alloc::Counting = bench::alloc::Counting;

const USAGE: &str = "\
utimer: kernel-grade timers for user space (command line tool)

Usage:
    utimer <COMMAND> [OPTIONS]

Commands:
    bench     Benchmark utimer against tokio, DelayQueue, BinaryHeap, BTreeMap,
              POSIX timers and timerfd
    sim       Simulate the pull model with virtual workers and time
    help      Print this message

Options:
    -h, --help      Print help (`utimer bench --help` for the bench options)
";

const BENCH_USAGE: &str = "\
utimer bench: compare utimer with the timer facilities people use today

Usage:
    utimer bench [--quick] [--json FILE] [--filter SUBSTR]

Options:
    --quick            Fewer repetitions and smaller fills (the whole run stays
                       under a minute on a 2-core machine); 1M instead of 10M
                       pending timers in the large-fill case
    --json FILE        Also write every result as a JSON array to FILE
    --filter SUBSTR    Only run the cases whose \"group/case\" contains SUBSTR
                       (case-sensitive; e.g. `arm_cancel`, `seed002`, `memory`)
    -h, --help         Print this message

Each table shows, per case, one row per implementation: the median
nanoseconds per operation over the repetitions, the 10th and 90th
percentiles, and the ratio to the utimer row (2.00x = twice utimer's time).
";

/// A usage error: printed with the relevant usage text, exit status 2.
struct UsageError {
    message: String,
    usage: &'static str,
}

fn usage_error(message: impl Into<String>, usage: &'static str) -> UsageError {
    UsageError {
        message: message.into(),
        usage,
    }
}

/// What the command line asked for.
enum Command {
    Help(&'static str),
    Bench(bench::Options),
    Sim(sim::SimOptions),
}

fn parse(args: &[String]) -> Result<Command, UsageError> {
    let Some((first, rest)) = args.split_first() else {
        return Err(usage_error("no command given", USAGE));
    };
    match first.as_str() {
        "-h" | "--help" | "help" => Ok(Command::Help(USAGE)),
        "bench" => parse_bench(rest),
        "sim" => sim::parse(rest)
            .map(Command::Sim)
            .map_err(|m| usage_error(m, sim::USAGE)),
        other if other.starts_with('-') => {
            Err(usage_error(format!("unknown option `{other}`"), USAGE))
        }
        other => Err(usage_error(format!("unknown command `{other}`"), USAGE)),
    }
}

fn parse_bench(args: &[String]) -> Result<Command, UsageError> {
    let mut opts = bench::Options::default();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        // Accept both `--flag VALUE` and `--flag=VALUE`.
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        let mut value = |name: &str| -> Result<String, UsageError> {
            let v = match inline.clone() {
                Some(v) => Some(v),
                None => it.next().cloned(),
            };
            match v {
                Some(v) if !v.is_empty() => Ok(v),
                _ => Err(usage_error(format!("`{name}` needs a value"), BENCH_USAGE)),
            }
        };
        match flag {
            "-h" | "--help" => return Ok(Command::Help(BENCH_USAGE)),
            "--quick" if inline.is_none() => opts.quick = true,
            "--json" => opts.json = Some(PathBuf::from(value("--json")?)),
            "--filter" => opts.filter = Some(value("--filter")?),
            "--quick" => {
                return Err(usage_error("`--quick` takes no value", BENCH_USAGE));
            }
            other if other.starts_with('-') => {
                return Err(usage_error(
                    format!("unknown option `{other}`"),
                    BENCH_USAGE,
                ));
            }
            other => {
                return Err(usage_error(
                    format!("unexpected argument `{other}`"),
                    BENCH_USAGE,
                ));
            }
        }
    }
    Ok(Command::Bench(opts))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match parse(&args) {
        Ok(Command::Help(text)) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Ok(Command::Bench(opts)) => match bench::run(&opts) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("utimer bench: error: {e}");
                ExitCode::FAILURE
            }
        },
        Ok(Command::Sim(opts)) if opts.help => {
            print!("{}", sim::USAGE);
            ExitCode::SUCCESS
        }
        Ok(Command::Sim(opts)) => match sim::run(&opts) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("utimer sim: {e}");
                ExitCode::FAILURE
            }
        },
        Err(e) => {
            eprintln!("utimer: error: {}\n", e.message);
            eprint!("{}", e.usage);
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &[&str]) -> Vec<String> {
        s.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn parses_bench_flags() {
        let Ok(Command::Bench(o)) = parse(&args(&[
            "bench",
            "--quick",
            "--json",
            "out.json",
            "--filter=seed",
        ])) else {
            panic!("expected bench");
        };
        assert!(o.quick);
        assert_eq!(o.json, Some(PathBuf::from("out.json")));
        assert_eq!(o.filter.as_deref(), Some("seed"));
    }

    #[test]
    fn rejects_bad_flags() {
        assert!(parse(&args(&[])).is_err());
        assert!(parse(&args(&["frobnicate"])).is_err());
        assert!(parse(&args(&["bench", "--fast"])).is_err());
        assert!(parse(&args(&["bench", "--json"])).is_err());
        assert!(parse(&args(&["bench", "--quick=1"])).is_err());
        assert!(parse(&args(&["bench", "stray"])).is_err());
    }

    #[test]
    fn help_anywhere() {
        assert!(matches!(parse(&args(&["--help"])), Ok(Command::Help(_))));
        assert!(matches!(
            parse(&args(&["bench", "--quick", "-h"])),
            Ok(Command::Help(_))
        ));
    }
}
