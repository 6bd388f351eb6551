//! utimer's benchmark suite: the runner, the cases and the peers behind
//! `utimer bench` (crates/utimer-cli) and the Criterion benches
//! (`benches/timers.rs`).
//!
//! This file holds the public API, the runner and `GROUPS`, the table of
//! every group in run order. Under it, `groups/` has one module per group
//! (the `run` functions that table names), [`peers`] the timer
//! implementations the cases measure, and `harness/` the machinery every
//! group uses: the counting allocator ([`alloc`]), the run's metadata
//! ([`meta`]), stdout and the progress line, the tables and the JSON file,
//! the charts ([`plot`]) and the results page.
//!
//! The memory case reads the counting allocator in [`alloc`]; a binary that
//! runs it installs [`alloc::Counting`] as its `#[global_allocator]`.
//!
//! # Method
//!
//! A *case* (say "arm+cancel on the local base") is measured for several
//! *contenders*: utimer and each peer (tokio's timer, `DelayQueue`, a binary
//! heap, a `BTreeMap`, POSIX timers, timerfd). Every contender is a closure
//! that performs `n` operations and returns the time they took, measured with
//! [`Instant`] around the loop only (set-up such as filling a queue with a
//! million background timers happens before the clock starts).
//!
//! 1. **Set-up.** Each contender's state is built once per case.
//! 2. **Calibration = warm-up.** A batch size is found by doubling `n` until a
//!    batch takes at least the target time (2 ms quick, 5 ms full) so that
//!    the clock's resolution and the loop overhead vanish in the batch. These
//!    batches also warm caches, the branch predictor and the allocator.
//! 3. **Repetitions.** Each contender runs one batch per repetition; the
//!    repetitions are *interleaved* (rep 1 runs A, B, C; rep 2 runs B, C, A;
//!    ...) so a burst of noise from the shared machine hits every contender
//!    alike instead of ruining one of them.
//! 4. **Statistic.** Each batch gives one sample, nanoseconds per operation;
//!    the table shows the median over the repetitions (robust to the odd
//!    preempted batch) plus the 10th and 90th percentiles as the spread.
//!
//! Some cases cannot be cut into uniform batches (firing 1M timers, threads
//! started per sample): those contenders are *fixed* closures that do their
//! own set-up untimed and return the timed part plus how many operations it
//! covered. Cases that fill tens of millions of timers run *sequentially*
//! (one contender's state alive at a time) so memory stays bounded.
//!
//! Operands and results go through [`std::hint::black_box`] so the optimizer
//! cannot hoist or delete the work. Nothing is pinned to a CPU: the numbers
//! are what an unpinned program sees.

mod groups;
mod harness;
pub mod peers;

pub use harness::{alloc, meta, plot};

/// The library's own tests measure memory too.
#[cfg(test)]
#[global_allocator]
static GLOBAL: alloc::Counting = alloc::Counting;

use std::cell::RefCell;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use harness::out::{self, outln};
use harness::{markdown, progress, report};
pub use meta::{Machine, RunMeta, ToolInfo};
use plot::Chart;
pub use report::{Better, Record};

/// Options of `utimer bench`.
#[derive(Debug, Default, Clone)]
pub struct Options {
    /// Fewer repetitions and smaller fills.
    pub quick: bool,
    /// Where to write every [`Record`] as a JSON array.
    pub json: Option<PathBuf>,
    /// Only the cases whose `group/case` contains this.
    pub filter: Option<String>,
    /// Where to write the SVG charts and their `index.html` ([`plot`]).
    pub plot: Option<PathBuf>,
    /// Where to write the results page: this run's tables in Markdown,
    /// each group under its [`GroupDoc`], linking the charts of `plot`.
    pub markdown: Option<PathBuf>,
    /// The build of the tool, recorded in the JSON file and the results
    /// page.
    pub tool: ToolInfo,
}

/// What a group measures, for the results page (`--markdown`): declared
/// beside the group in its module and given to [`Runner::enter_group`].
/// The text is Markdown and says how the group measures, never what a
/// particular run measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupDoc {
    /// The section's heading.
    pub title: &'static str,
    /// What the group measures and how.
    pub about: &'static str,
    /// What to look for in its tables.
    pub look_for: &'static str,
}

/// A group as a run entered it: its doc, the heading the terminal showed
/// and the notes printed under it.
#[derive(Clone, Debug)]
pub(crate) struct GroupLog {
    pub(crate) name: String,
    pub(crate) doc: GroupDoc,
    pub(crate) about: String,
    pub(crate) notes: Vec<String>,
}

/// One group of the suite: the name its cases are listed under and the
/// function that runs them.
struct Group {
    /// The `group` of its cases' `group/case` names.
    name: &'static str,
    /// Runs the group's cases that the runner's filter selects; in
    /// [`list`]'s mode it measures nothing and only names them.
    run: fn(&mut Runner),
}

/// Every group of a full run, in run order: [`run`] and [`list`] go
/// through it and the progress line counts it.
const GROUPS: &[Group] = &[
    Group {
        name: "arm_cancel",
        run: groups::cases::run_arm_cancel,
    },
    Group {
        name: "rearm",
        run: groups::cases::run_rearm,
    },
    Group {
        name: "expiry",
        run: groups::cases::run_expiry,
    },
    Group {
        name: "next_expiry",
        run: groups::cases::run_next_expiry,
    },
    Group {
        name: "arm_cancel_pending",
        run: groups::cases::run_arm_cancel_pending,
    },
    Group {
        name: "memory",
        run: groups::cases::run_memory,
    },
    Group {
        name: "wheel",
        run: groups::cases::run_wheel,
    },
    Group {
        name: "threads",
        run: groups::threads::run,
    },
    Group {
        name: "rearm_shares",
        run: groups::rearm_shares::run,
    },
    Group {
        name: "delete_sync",
        run: groups::delete_sync::run,
    },
    Group {
        name: "pull_model",
        run: groups::pull_model::run,
    },
    Group {
        name: "posix-lookup",
        run: groups::posix_timers::run_lookup,
    },
    Group {
        name: "posix-workload2025",
        run: groups::posix_timers::run_workload2025,
    },
    Group {
        name: "posix-costs",
        run: groups::posix_timers::run_costs,
    },
    Group {
        name: "posix-dropin",
        run: groups::posix_timers::run_dropin,
    },
    Group {
        name: "posix-latency",
        run: groups::posix_timers::run_latency,
    },
    Group {
        name: "latency",
        run: groups::latency::run,
    },
    Group {
        name: "async",
        run: groups::async_timers::run,
    },
    Group {
        name: "async-mt",
        run: groups::async_runtime::run,
    },
    Group {
        name: "async-server",
        run: groups::async_server::run,
    },
];

/// The names of the groups of a full run, in run order: the `group` of
/// every `group/case` that [`list`] gives.
pub fn group_names() -> Vec<&'static str> {
    GROUPS.iter().map(|g| g.name).collect()
}

/// Runs the whole suite (or the filtered part of it); prints the tables to
/// stdout, the progress line to stderr when that is a terminal, and writes
/// the JSON file, the charts and the results page the options ask for.
///
/// Before anything is measured it fails if the filter matches no case
/// ([`list`]) or if an output path cannot be written (its folders are
/// created). A closed stdout (`utimer bench | head`) ends the process
/// quietly with status 0, unless the run has files to write: then it goes
/// on without printing and writes them.
pub fn run(opts: &Options) -> Result<(), String> {
    check_filter(opts)?;
    check_outputs(opts)?;
    out::keep_running_when_closed(
        opts.json.is_some() || opts.plot.is_some() || opts.markdown.is_some(),
    );
    let mut r = Runner::new(opts);
    report::print_machine(&r);
    let total = opts.filter.is_none().then_some(GROUPS.len());
    progress::start(std::io::stderr().is_terminal(), total);
    run_groups(&mut r, GROUPS);
    progress::finish();
    if r.records.is_empty() {
        return Err(match &opts.filter {
            Some(f) => format!("no case of the filter `{f}` gave a row"),
            None => "no case ran".to_string(),
        });
    }
    outln!(
        "\ntotal run time {:.1} s, {} results",
        r.started.elapsed().as_secs_f64(),
        r.records.len()
    );
    if let Some(path) = &opts.json {
        let meta = r.meta(&opts.tool);
        report::write_json(path, &meta, &r.records)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        outln!("wrote {}", path.display());
    }
    if let Some(dir) = &opts.plot {
        let files = plot::write_all(dir, &r.records)
            .map_err(|e| format!("cannot write the charts to {}: {e}", dir.display()))?;
        outln!(
            "wrote {} charts and {}",
            files.len(),
            dir.join("index.html").display()
        );
    }
    if let Some(path) = &opts.markdown {
        markdown::write(path, &r, &opts.tool, opts.plot.as_deref())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        outln!("wrote {}", path.display());
    }
    Ok(())
}

/// Runs `groups` in their order, each measuring what `r`'s filter
/// selects.
fn run_groups(r: &mut Runner, groups: &[Group]) {
    for g in groups {
        (g.run)(r);
    }
}

/// The `group/case` names a run with `opts` would measure, group by group
/// in run order, found without measuring anything: what `utimer bench
/// --list` prints.
/// `opts.quick` picks the quick run's cases (some names carry a fill
/// size, `1M` instead of `10M`); with `opts.filter`, only the names that
/// contain it. The other options are not used.
pub fn list(opts: &Options) -> Vec<String> {
    let names = names_of(GROUPS, opts.quick);
    match &opts.filter {
        Some(f) => names
            .into_iter()
            .filter(|n| n.contains(f.as_str()))
            .collect(),
        None => names,
    }
}

/// The `group/case` names that `groups` would measure in a quick or a
/// full run, in their order, found without measuring anything.
fn names_of(groups: &[Group], quick: bool) -> Vec<String> {
    let mut r = Runner::new(&Options {
        quick,
        ..Options::default()
    });
    r.listing = Some(RefCell::new(Vec::new()));
    run_groups(&mut r, groups);
    r.listing
        .take()
        .map(RefCell::into_inner)
        .unwrap_or_default()
}

/// Prints [`list`] to stdout, one `group/case` per line; fails as [`run`]
/// does when the filter matches no case. A closed stdout ends the process
/// quietly with status 0.
pub fn print_list(opts: &Options) -> Result<(), String> {
    check_filter(opts)?;
    for name in list(opts) {
        outln!("{name}");
    }
    out::flush();
    Ok(())
}

/// Fails when `opts.filter` matches no case of the run's mode, naming the
/// groups (and the other mode if the filter matches a case there).
fn check_filter(opts: &Options) -> Result<(), String> {
    let Some(f) = &opts.filter else {
        return Ok(());
    };
    if !list(opts).is_empty() {
        return Ok(());
    }
    let other = Options {
        quick: !opts.quick,
        filter: opts.filter.clone(),
        ..Options::default()
    };
    let (mode, hint) = if opts.quick {
        ("quick", "a full run's: drop --quick")
    } else {
        ("full", "a quick run's: add --quick")
    };
    let elsewhere = if list(&other).is_empty() {
        String::new()
    } else {
        format!(" (it matches {hint})")
    };
    Err(format!(
        "no case of a {mode} run matches the filter `{f}` (a substring of `group/case`)\
         {elsewhere}; the groups are: {}; `utimer bench --list` shows every case",
        group_names().join(", ")
    ))
}

/// Fails, before anything is measured, when an output path cannot be
/// written: the file of `--json` and `--markdown` (its folder is created
/// if missing), the folder of `--plot` (created if missing).
fn check_outputs(opts: &Options) -> Result<(), String> {
    if let Some(p) = &opts.json {
        writable_file(p).map_err(|e| format!("cannot write the JSON file {}: {e}", p.display()))?;
    }
    if let Some(p) = &opts.markdown {
        writable_file(p)
            .map_err(|e| format!("cannot write the results page {}: {e}", p.display()))?;
    }
    if let Some(d) = &opts.plot {
        writable_dir(d).map_err(|e| format!("cannot write the charts to {}: {e}", d.display()))?;
    }
    Ok(())
}

/// Creates `path`'s folder if missing and opens `path` for writing without
/// changing it; a file that was not there before is removed again.
fn writable_file(path: &Path) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_dir(dir)?;
    }
    let existed = path.symlink_metadata().is_ok();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)?;
    if !existed {
        std::fs::remove_file(path)?;
    }
    Ok(())
}

/// Creates folder `dir` and its parents if missing; a file in its place is
/// an error that says so.
fn create_dir(dir: &Path) -> std::io::Result<()> {
    if dir.exists() && !dir.is_dir() {
        let msg = format!("{} is a file, not a folder", dir.display());
        return Err(std::io::Error::new(std::io::ErrorKind::NotADirectory, msg));
    }
    std::fs::create_dir_all(dir)
}

/// Creates folder `dir` if missing and checks that a file can be created
/// in it.
fn writable_dir(dir: &Path) -> std::io::Result<()> {
    create_dir(dir)?;
    let probe = dir.join(format!(".utimer-bench-probe-{}", std::process::id()));
    std::fs::File::create(&probe)?;
    std::fs::remove_file(&probe)
}

/// One timed portion: `ops` operations took `elapsed`.
#[derive(Clone, Copy, Debug)]
pub struct Sample {
    pub elapsed: Duration,
    pub ops: u64,
}

impl Sample {
    pub fn ns_per_op(&self) -> f64 {
        self.elapsed.as_nanos() as f64 / self.ops.max(1) as f64
    }
}

/// Times `f`: a convenience for batch closures.
#[inline]
pub fn time(f: impl FnOnce()) -> Duration {
    let t0 = Instant::now();
    f();
    t0.elapsed()
}

/// How a contender is run once set up.
pub enum Body<'a> {
    /// `f(n)` performs `n` operations and returns their time; the runner
    /// picks `n`.
    Batched(Box<dyn FnMut(u64) -> Duration + 'a>),
    /// `f()` performs a fixed amount of work and reports it.
    Fixed(Box<dyn FnMut() -> Sample + 'a>),
    /// Not measured; the reason is shown in the table and the JSON.
    Skip(String),
}

impl std::fmt::Debug for Body<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Body::Batched(_) => f.debug_tuple("Batched").finish_non_exhaustive(),
            Body::Fixed(_) => f.debug_tuple("Fixed").finish_non_exhaustive(),
            Body::Skip(why) => f.debug_tuple("Skip").field(why).finish(),
        }
    }
}

type Setup<'a> = Box<dyn FnOnce() -> Body<'a> + 'a>;

/// One implementation in a case. Its state is created lazily by `setup` so
/// that filtered-out cases cost nothing and sequential cases hold one
/// contender's state at a time.
pub struct Contender<'a> {
    pub name: String,
    setup: Setup<'a>,
}

impl std::fmt::Debug for Contender<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Contender")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<'a> Contender<'a> {
    /// A contender whose set-up returns a closure `f(n) -> Duration`.
    pub fn batched<S, F>(name: impl Into<String>, setup: S) -> Self
    where
        S: FnOnce() -> Result<F, String> + 'a,
        F: FnMut(u64) -> Duration + 'a,
    {
        Contender {
            name: name.into(),
            setup: Box::new(move || match setup() {
                Ok(f) => Body::Batched(Box::new(f)),
                Err(e) => Body::Skip(e),
            }),
        }
    }

    /// A contender whose set-up returns a closure `f() -> Sample`.
    pub fn fixed<S, F>(name: impl Into<String>, setup: S) -> Self
    where
        S: FnOnce() -> Result<F, String> + 'a,
        F: FnMut() -> Sample + 'a,
    {
        Contender {
            name: name.into(),
            setup: Box::new(move || match setup() {
                Ok(f) => Body::Fixed(Box::new(f)),
                Err(e) => Body::Skip(e),
            }),
        }
    }

    /// A contender that is shown as skipped, with the reason.
    pub fn skip(name: impl Into<String>, reason: impl Into<String>) -> Self {
        let reason = reason.into();
        Contender {
            name: name.into(),
            setup: Box::new(move || Body::Skip(reason)),
        }
    }
}

/// Whether a case's contenders are alive together (interleaved repetitions)
/// or one after the other (bounded memory for huge fills).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Schedule {
    Interleaved,
    Sequential,
}

/// Drives cases, prints each table as soon as its case is done and keeps
/// every result for the JSON file.
#[derive(Debug)]
pub struct Runner {
    pub quick: bool,
    filter: Option<String>,
    /// Repetitions (samples) per contender.
    pub reps: usize,
    /// Minimum duration of one batch.
    pub target: Duration,
    pub records: Vec<Record>,
    current_group: Option<String>,
    /// The groups entered, in run order.
    groups: Vec<GroupLog>,
    started: Instant,
    /// When the run started, for the JSON file and the results page.
    started_at: SystemTime,
    /// Whether the legend of the utimer rows' names was printed.
    legend_shown: bool,
    /// [`list`]'s mode: [`Runner::wants`] records each `group/case` asked
    /// about here and selects nothing, so no case runs.
    listing: Option<RefCell<Vec<String>>>,
}

impl Runner {
    pub fn new(opts: &Options) -> Self {
        Runner {
            quick: opts.quick,
            filter: opts.filter.clone(),
            reps: if opts.quick { 7 } else { 11 },
            target: Duration::from_millis(if opts.quick { 2 } else { 5 }),
            records: Vec::new(),
            current_group: None,
            groups: Vec::new(),
            started: Instant::now(),
            started_at: SystemTime::now(),
            legend_shown: false,
            listing: None,
        }
    }

    /// What the JSON file says about this run, built by `tool`.
    pub fn meta(&self, tool: &ToolInfo) -> RunMeta {
        RunMeta {
            tool: tool.clone(),
            date: meta::rfc3339_utc(self.started_at),
            mode: self.mode().to_string(),
            filter: self.filter.clone(),
            machine: Machine::detect(),
            method: meta::Method {
                repetitions: self.reps,
                batch_target_ms: self.target.as_millis() as u64,
            },
            duration_s: self.started.elapsed().as_secs_f64(),
        }
    }

    /// `quick` or `full`, for the output and the JSON.
    pub fn mode(&self) -> &'static str {
        if self.quick {
            "quick"
        } else {
            "full"
        }
    }

    /// Picks `quick` in quick mode and `full` otherwise.
    pub fn pick<T>(&self, quick: T, full: T) -> T {
        if self.quick {
            quick
        } else {
            full
        }
    }

    /// Whether the filter selects `group/case`. In [`list`]'s mode, the
    /// name is recorded and nothing is selected.
    pub fn wants(&self, group: &str, case: &str) -> bool {
        if let Some(names) = &self.listing {
            let name = format!("{group}/{case}");
            let mut names = names.borrow_mut();
            if !names.contains(&name) {
                names.push(name);
            }
            return false;
        }
        match &self.filter {
            None => true,
            Some(f) => format!("{group}/{case}").contains(f.as_str()),
        }
    }

    /// Whether the filter selects anything in `group`.
    pub fn wants_group(&self, group: &str, cases: &[&str]) -> bool {
        cases.iter().any(|c| self.wants(group, c))
    }

    /// Prints the group heading `about` (this run's parameters) when
    /// `group` differs from the last one; `doc` is the group's section of
    /// the results page.
    pub fn enter_group(&mut self, group: &str, doc: GroupDoc, about: &str) {
        if self.current_group.as_deref() != Some(group) {
            self.current_group = Some(group.to_string());
            report::print_group(group, about);
            progress::group(group);
            if !self.groups.iter().any(|g| g.name == group) {
                self.groups.push(GroupLog {
                    name: group.to_string(),
                    doc,
                    about: about.to_string(),
                    notes: Vec::new(),
                });
            }
        }
    }

    /// Prints a line of explanation for `group` (callers check the filter),
    /// kept for the results page.
    pub fn note(&mut self, group: &str, text: &str) {
        report::print_note(group, text);
        if let Some(g) = self.groups.iter_mut().find(|g| g.name == group) {
            g.notes.push(text.to_string());
        }
    }

    /// Measures one case, drawn by `--plot` as `chart` says. `build` is
    /// only called if the filter selects it.
    pub fn case<'a>(
        &mut self,
        group: &str,
        case: &str,
        chart: Chart,
        schedule: Schedule,
        build: impl FnOnce() -> Vec<Contender<'a>>,
    ) {
        if !self.wants(group, case) {
            return;
        }
        progress::case(group, case);
        let contenders = build();
        let results = match schedule {
            Schedule::Interleaved => self.run_interleaved(contenders),
            Schedule::Sequential => contenders
                .into_iter()
                .flat_map(|c| self.run_interleaved(vec![c]))
                .collect(),
        };
        let records: Vec<Record> = results
            .into_iter()
            .map(|(name, outcome)| {
                Record::timing(group, case, &name, self.mode(), outcome).charted(chart)
            })
            .collect();
        report::print_case(case, &records, &mut self.legend_shown);
        self.records.extend(records);
    }

    /// Records values that are not timings (bytes per timer, percentages),
    /// drawn by `--plot` as `chart` says, and prints them as one table.
    pub fn values(&mut self, group: &str, case: &str, chart: Chart, records: Vec<Record>) {
        if !self.wants(group, case) {
            return;
        }
        report::print_case(case, &records, &mut self.legend_shown);
        self.push_records(chart, records);
    }

    /// Keeps records that the caller has already printed, drawn by `--plot`
    /// as `chart` says.
    pub fn push_records(&mut self, chart: Chart, records: Vec<Record>) {
        let records = records.into_iter().map(|r| r.charted(chart));
        self.records.extend(records);
    }

    fn run_interleaved<'a>(&self, contenders: Vec<Contender<'a>>) -> Vec<(String, Outcome)> {
        let mut names = Vec::new();
        let mut bodies = Vec::new();
        for c in contenders {
            names.push(c.name);
            bodies.push((c.setup)());
        }
        // Calibration doubles as warm-up.
        let mut batch: Vec<u64> = bodies.iter_mut().map(|b| self.calibrate(b)).collect();
        let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); bodies.len()];
        let n = bodies.len();
        for rep in 0..self.reps {
            for k in 0..n {
                let i = (k + rep) % n;
                let s = match &mut bodies[i] {
                    Body::Batched(f) => Some(Sample {
                        elapsed: f(batch[i]),
                        ops: batch[i],
                    }),
                    Body::Fixed(f) => Some(f()),
                    Body::Skip(_) => None,
                };
                if let Some(s) = s {
                    samples[i].push(s);
                }
            }
        }
        batch.clear();
        names
            .into_iter()
            .zip(bodies)
            .zip(samples)
            .map(|((name, body), samples)| {
                let outcome = match body {
                    Body::Skip(reason) => Outcome::Skipped(reason),
                    _ => Outcome::Measured(samples),
                };
                (name, outcome)
            })
            .collect()
    }

    /// Finds the batch size for a batched body (and warms it up). Fixed
    /// bodies run once as warm-up.
    fn calibrate(&self, body: &mut Body<'_>) -> u64 {
        const MAX_BATCH: u64 = 1 << 24;
        match body {
            Body::Batched(f) => {
                let mut n = 16u64;
                loop {
                    let d = f(n);
                    if d >= self.target || n >= MAX_BATCH {
                        // One more batch at the final size: warm-up proper.
                        f(n);
                        return n;
                    }
                    // Jump close to the target, at most 8x at a time.
                    let ratio = self.target.as_secs_f64() / d.as_secs_f64().max(1e-9);
                    let grow = ratio.clamp(2.0, 8.0);
                    n = ((n as f64 * grow) as u64).min(MAX_BATCH);
                }
            }
            Body::Fixed(f) => {
                f();
                1
            }
            Body::Skip(_) => 0,
        }
    }
}

/// The samples of one contender, or why it was not run.
#[derive(Debug)]
pub enum Outcome {
    Measured(Vec<Sample>),
    Skipped(String),
}

/// A small deterministic PRNG (xorshift64*), so fills and workloads are the
/// same on every run.
#[derive(Clone, Debug)]
pub struct XorShift(u64);

impl XorShift {
    pub fn new(seed: u64) -> Self {
        XorShift(seed.max(1))
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform-ish in `0..n` (`n > 0`; the modulo bias is irrelevant here).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xorshift_is_deterministic() {
        let mut a = XorShift::new(42);
        let mut b = XorShift::new(42);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert!(a.below(10) < 10);
    }

    fn opts(quick: bool, filter: Option<&str>) -> Options {
        Options {
            quick,
            filter: filter.map(str::to_string),
            ..Options::default()
        }
    }

    #[test]
    fn list_names_every_group_without_running() {
        for quick in [true, false] {
            let names = list(&opts(quick, None));
            let groups = group_names();
            for g in &groups {
                let prefix = format!("{g}/");
                assert!(
                    names.iter().any(|n| n.starts_with(&prefix)),
                    "group {g} not in {names:?}"
                );
            }
            // Each name once, each group's names together, in run order.
            let mut seen = Vec::new();
            for n in &names {
                assert_eq!(names.iter().filter(|m| *m == n).count(), 1, "{n}");
                let g = groups.iter().position(|g| n.starts_with(&format!("{g}/")));
                let g = g.unwrap_or_else(|| panic!("{n}: no group of GROUPS"));
                if seen.last() != Some(&g) {
                    assert!(!seen.contains(&g), "{n}: group {} split", groups[g]);
                    seen.push(g);
                }
            }
            assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
        }
        let full = list(&opts(false, None));
        let quick = list(&opts(true, None));
        assert!(full.contains(&"arm_cancel_pending/10M".to_string()));
        assert!(quick.contains(&"arm_cancel_pending/1M".to_string()));
        assert!(!quick.contains(&"arm_cancel_pending/10M".to_string()));
        assert!(full.contains(&"async/lateness_200ms/early".to_string()));
        let rearm = list(&opts(true, Some("rearm/")));
        assert_eq!(
            rearm,
            [
                "rearm/same_bucket",
                "rearm/new_bucket",
                "rearm/three_buckets"
            ]
        );
    }

    #[test]
    fn each_group_runs_only_its_own_cases() {
        let mut names: Vec<&str> = group_names();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), GROUPS.len(), "a group name twice");
        for quick in [true, false] {
            for g in GROUPS {
                let cases = names_of(std::slice::from_ref(g), quick);
                assert!(!cases.is_empty(), "{}: no case", g.name);
                let prefix = format!("{}/", g.name);
                for c in &cases {
                    assert!(c.starts_with(&prefix), "{c} run by group {}", g.name);
                }
            }
        }
    }

    #[test]
    fn unmatched_filter_names_the_groups() {
        assert!(check_filter(&opts(true, Some("wheel"))).is_ok());
        assert!(check_filter(&opts(true, None)).is_ok());
        let e = check_filter(&opts(true, Some("no-such-case"))).unwrap_err();
        assert!(e.contains("`no-such-case`"), "{e}");
        for g in group_names() {
            assert!(e.contains(g), "{g} missing from {e}");
        }
        assert!(e.contains("--list"), "{e}");
        // A case of the other mode only.
        let e = check_filter(&opts(true, Some("/10M"))).unwrap_err();
        assert!(e.contains("drop --quick"), "{e}");
        let e = print_list(&opts(false, Some("no-such-case"))).unwrap_err();
        assert!(e.contains("no case of a full run"), "{e}");
    }

    #[test]
    fn output_paths_checked_before_the_run() {
        let dir = std::env::temp_dir().join(format!("utimer-bench-outputs-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("a-file");
        std::fs::write(&file, "x").unwrap();
        let with = |json: Option<PathBuf>, plot: Option<PathBuf>, markdown: Option<PathBuf>| {
            check_outputs(&Options {
                json,
                plot,
                markdown,
                ..Options::default()
            })
        };
        let e = with(Some(file.join("x.json")), None, None).unwrap_err();
        assert!(e.contains("JSON file") && e.contains("not a folder"), "{e}");
        let e = with(None, Some(file.clone()), None).unwrap_err();
        assert!(e.contains("charts") && e.contains("not a folder"), "{e}");
        let e = with(None, None, Some(file.join("sub/page.md"))).unwrap_err();
        assert!(e.contains("results page"), "{e}");
        let e = with(Some(dir.clone()), None, None).unwrap_err();
        assert!(e.contains("JSON file"), "{e}");
        // Good paths: the folders are created, no file is left behind and
        // an existing file is kept as it is.
        let (json, plots) = (dir.join("new/run.json"), dir.join("new/plots"));
        with(Some(json.clone()), Some(plots.clone()), Some(file.clone())).unwrap();
        assert!(!json.exists() && json.parent().unwrap().is_dir());
        assert_eq!(std::fs::read_dir(&plots).unwrap().count(), 0);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn runner_measures_and_skips() {
        let opts = Options {
            quick: true,
            ..Options::default()
        };
        let mut r = Runner::new(&opts);
        r.case("g", "c", Chart::Bars, Schedule::Interleaved, || {
            vec![
                Contender::batched("spin", || {
                    Ok(|n: u64| {
                        time(|| {
                            for i in 0..n {
                                std::hint::black_box(i);
                            }
                        })
                    })
                }),
                Contender::skip("none", "not applicable"),
            ]
        });
        assert_eq!(r.records.len(), 2);
        assert!(r.records[0].ns_per_op.is_some());
        assert_eq!(r.records[0].samples, r.reps);
        assert!(r.records[1].skipped.is_some());
    }
}
