//! `utimer`: the command line tool of the utimer workspace.
//!
//! `bench` measures utimer side by side with the timer facilities people
//! use instead (tokio's timer, tokio-util's `DelayQueue`, a binary heap, a
//! `BTreeMap`, POSIX timers and `timerfd`). The cases, the peers, the
//! methodology and the SVG charts live in the `utimer-bench` library crate,
//! which the Criterion benches use too; this is the front end. `sim` runs
//! the pull model's deterministic simulator (`utimer::sim`, front end in
//! `sim.rs`). `programs` runs other projects' real programs (stress-ng,
//! cyclictest) on the kernel and on the drop-in library side by side and
//! writes the comparison (`programs.rs`).
//!
//! Arguments are parsed with clap (derive). A usage error prints clap's
//! message to stderr and exits with status 2; `--help` and `help` print to
//! stdout and exit with 0. The build script embeds the git revision the
//! tool is built from (`unknown` outside a git checkout), which
//! `--version` shows and `bench --json` records.

mod programs;
mod sim;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::builder::NonEmptyStringValueParser;
use clap::{Args, Parser, Subcommand};
use utimer_bench as bench;

/// The memory case counts the measuring thread's allocations; only a
/// binary can install a global allocator.
#[global_allocator]
static GLOBAL: bench::alloc::Counting = bench::alloc::Counting;

/// The tool's version and the git revision it was built from.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (git ",
    env!("UTIMER_GIT_REVISION"),
    ")"
);

/// utimer: kernel-grade timers for user space (command line tool)
#[derive(Debug, Parser)]
#[command(
    name = "utimer",
    version = VERSION,
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
    /// Run stress-ng and cyclictest on the kernel and on
    /// libutimer_posix.so, side by side
    #[command(after_help = programs::AFTER_HELP)]
    Programs(programs::ProgramsArgs),
}

const BENCH_AFTER_HELP: &str = "\
Each table shows, per case, one row per implementation: the median over the
repetitions (nanoseconds per operation in most tables), the 10th and 90th
percentiles, and the ratio to the utimer row (2.00x = twice utimer's
value). Each table's caption says whether lower or higher is better there,
and so whether a ratio above 1.00x is worse or better than utimer. A legend
explains the `utimer (owner)` and `entered` rows where they first appear.
When stderr is a terminal, one updating line there tells which group and
case is running and how many groups are done.

Cost: a full run takes about 10 minutes on a 2-core machine and peaks at
about 2.4 GB of memory (the 10M-timer fills); --quick takes about 35 s and
peaks at about 250 MB. The first run also builds the `tokio alt timer`
helper (about 20 s more on that machine).

A filter that matches no case, and an output path that cannot be written,
fail before anything is measured. When stdout is closed (`utimer bench |
head`), the run ends quietly with status 0, unless it has files to write
(--json, --plot, --markdown): then it goes on without printing and writes
them.";

/// `utimer bench`'s options: compare utimer with the timer facilities
/// people use today.
#[derive(Debug, Args)]
struct BenchArgs {
    /// Fewer repetitions and smaller fills (the whole run stays under a
    /// minute on a 2-core machine); 1M instead of 10M pending timers in the
    /// large-fill case
    #[arg(long)]
    quick: bool,
    /// Print the groups' cases, one "group/case" per line, the groups in
    /// run order, and measure nothing (with --quick: the quick run's cases;
    /// with --filter: only those it selects)
    #[arg(long, conflicts_with_all = ["json", "plot", "markdown"])]
    list: bool,
    /// Also write the run to FILE as JSON (its folder is created if
    /// missing): the machine, the date, the tool's version and git
    /// revision, the mode and the filter under "meta", every result under
    /// "results"
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
    /// --plot (ci/results.sh writes docs/results/MACHINE.md this way)
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
            tool: bench::ToolInfo {
                name: "utimer".to_string(),
                version: env!("CARGO_PKG_VERSION").to_string(),
                git_revision: env!("UTIMER_GIT_REVISION").to_string(),
            },
        }
    }
}

fn main() -> ExitCode {
    // Usage errors exit here with status 2, help and version with 0.
    match Cli::parse().command {
        Command::Bench(args) => {
            let list = args.list;
            let opts = bench::Options::from(args);
            let done = if list {
                bench::print_list(&opts)
            } else {
                bench::run(&opts)
            };
            match done {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    // Not `eprintln!`, which panics when stderr is closed.
                    let _ = writeln!(std::io::stderr(), "utimer bench: error: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Programs(args) => match programs::run(&args) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::FAILURE,
            Err(e) => {
                let _ = writeln!(std::io::stderr(), "utimer programs: error: {e}");
                ExitCode::from(2)
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
            &["bench", "--list", "--json", "x.json"],
            &["bench", "--list", "--plot", "plots"],
            &["bench", "--list", "--markdown", "x.md"],
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
            &["programs", "--help"],
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
            "--list",
            "--json <FILE>",
            "--filter <SUBSTR>",
            "--plot <DIR>",
            "--markdown <FILE>",
        ] {
            assert!(help.contains(flag), "{flag} missing from\n{help}");
        }
        // What a run costs, before one is started.
        for cost in ["10 minutes", "2.4 GB", "--quick takes about"] {
            assert!(help.contains(cost), "{cost} missing from\n{help}");
        }
    }
}
