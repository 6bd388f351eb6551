//! `utimer`: the command line tool of the utimer workspace.
//!
//! `bench` measures utimer side by side with the timer facilities people
//! use instead (tokio's timer, tokio-util's `DelayQueue`, a binary heap, a
//! `BTreeMap`, POSIX timers and `timerfd`). The cases, the peers, the
//! methodology and the SVG charts live in the `utimer-bench` library crate,
//! which the Criterion benches use too; this is the front end. `sim` runs
//! the pull model's deterministic simulator (`utimer::sim`, front end in
//! `sim.rs`).
//!
//! Arguments are parsed with clap (derive). A usage error prints clap's
//! message to stderr and exits with status 2; `--help` and `help` print to
//! stdout and exit with 0.

mod sim;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::builder::NonEmptyStringValueParser;
use clap::{Args, Parser, Subcommand};
use utimer_bench as bench;

/// The memory case counts the measuring thread's allocations; only a
/// binary can install a global allocator.
#[global_allocator]
static GLOBAL: bench::alloc::Counting = bench::alloc::Counting;

/// utimer: kernel-grade timers for user space (command line tool)
#[derive(Debug, Parser)]
#[command(
    name = "utimer",
    version,
    arg_required_else_help = true,
    max_term_width = 100
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Benchmark utimer against tokio, DelayQueue, BinaryHeap, BTreeMap,
    /// POSIX timers and timerfd
    #[command(after_help = BENCH_AFTER_HELP)]
    Bench(BenchArgs),
    /// Simulate the pull model with virtual workers and time
    #[command(after_help = sim::AFTER_HELP)]
    Sim(sim::SimArgs),
}

const BENCH_AFTER_HELP: &str = "\
Each table shows, per case, one row per implementation: the median
nanoseconds per operation over the repetitions, the 10th and 90th
percentiles, and the ratio to the utimer row (2.00x = twice utimer's time).
When stderr is a terminal, one updating line there tells which group and
case is running and how many groups are done.";

/// `utimer bench`'s options: compare utimer with the timer facilities
/// people use today.
#[derive(Debug, Args)]
struct BenchArgs {
    /// Fewer repetitions and smaller fills (the whole run stays under a
    /// minute on a 2-core machine); 1M instead of 10M pending timers in the
    /// large-fill case
    #[arg(long)]
    quick: bool,
    /// Also write every result as a JSON array to FILE
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Only run the cases whose "group/case" contains SUBSTR (case-sensitive;
    /// e.g. `arm_cancel`, `rearm_shares`, `memory`, `posix` for the four
    /// POSIX timer groups)
    #[arg(long, value_name = "SUBSTR", value_parser = NonEmptyStringValueParser::new())]
    filter: Option<String>,
    /// Also draw the results as SVG charts into DIR (created if missing):
    /// one file per chart and an index.html that shows them all
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    /// Also write the results page to FILE: this run's tables in Markdown,
    /// one section per group with what it measures, linking the charts of
    /// --plot (ci/results.sh writes docs/results.md this way)
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
}

impl From<BenchArgs> for bench::Options {
    fn from(a: BenchArgs) -> Self {
        bench::Options {
            quick: a.quick,
            json: a.json,
            filter: a.filter,
            plot: a.plot,
            markdown: a.markdown,
        }
    }
}

fn main() -> ExitCode {
    // Usage errors exit here with status 2, help and version with 0.
    match Cli::parse().command {
        Command::Bench(args) => match bench::run(&args.into()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("utimer bench: error: {e}");
                ExitCode::FAILURE
            }
        },
        Command::Sim(args) => match sim::run(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("utimer sim: {e}");
                ExitCode::FAILURE
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::error::ErrorKind;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("utimer").chain(args.iter().copied()))
    }

    #[test]
    fn definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_bench_flags() {
        let Ok(Cli {
            command: Command::Bench(a),
        }) = parse(&[
            "bench",
            "--quick",
            "--json",
            "out.json",
            "--filter=posix",
            "--plot",
            "plots",
            "--markdown=docs/results.md",
        ])
        else {
            panic!("expected bench");
        };
        let o = bench::Options::from(a);
        assert!(o.quick);
        assert_eq!(o.json, Some(PathBuf::from("out.json")));
        assert_eq!(o.filter.as_deref(), Some("posix"));
        assert_eq!(o.plot, Some(PathBuf::from("plots")));
        assert_eq!(o.markdown, Some(PathBuf::from("docs/results.md")));
    }

    #[test]
    fn rejects_bad_flags() {
        for bad in [
            &["frobnicate"][..],
            &["bench", "--fast"],
            &["bench", "--json"],
            &["bench", "--json="],
            &["bench", "--filter="],
            &["bench", "--plot"],
            &["bench", "--markdown"],
            &["bench", "--markdown="],
            &["bench", "--quick=1"],
            &["bench", "stray"],
        ] {
            let e = parse(bad).expect_err(&format!("{bad:?} should fail"));
            // Usage errors exit with status 2.
            assert_eq!(e.exit_code(), 2, "{bad:?}: {e}");
        }
        // No command: the help text, on stderr, with status 2.
        let e = parse(&[]).unwrap_err();
        assert_eq!(
            e.kind(),
            ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
        );
        assert_eq!(e.exit_code(), 2);
    }

    #[test]
    fn help_anywhere() {
        for args in [
            &["--help"][..],
            &["help"],
            &["help", "bench"],
            &["bench", "--quick", "-h"],
            &["sim", "--help"],
        ] {
            let e = parse(args).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::DisplayHelp, "{args:?}");
            assert_eq!(e.exit_code(), 0);
        }
        let help = Cli::command()
            .find_subcommand_mut("bench")
            .unwrap()
            .render_long_help()
            .to_string();
        for flag in [
            "--quick",
            "--json <FILE>",
            "--filter <SUBSTR>",
            "--plot <DIR>",
            "--markdown <FILE>",
        ] {
            assert!(help.contains(flag), "{flag} missing from\n{help}");
        }
    }
}
