//! `utimer programs`: other projects' real programs, unmodified, on the
//! kernel's timers and on `libutimer_posix.so`, side by side.
//!
//! Each program runs twice in the same run, once with no preload and once
//! with `LD_PRELOAD=LIB` (the order alternating from row to row, so that a
//! machine that slows down does not always favour one side), and a
//! markdown page compares the two. The run fails on any correctness
//! failure on either side; the performance targets (stress-ng bogo-ops/s
//! at least the kernel's, cyclictest's avg and p99 within 1.2× of the
//! kernel's) are printed, not enforced: a shared machine's noise is not a
//! defect, a wrong answer is.
//!
//! The programs:
//!
//! - stress-ng, one instance each, `--verify`, ops/s from its `--yaml`
//!   metrics (real time). `timer`: a POSIX timer (`CLOCK_REALTIME`,
//!   `SIGEV_SIGNAL`) re-armed by `timer_settime()` in its signal handler,
//!   `timer_getoverrun()` there, at `--timer-freq 100000` (and with
//!   `--timer-rand`'s jitter). `timerfd`: `timerfd_create/settime/gettime`,
//!   `poll()` and `read()` (and `--timerfd-rand`, re-armed after every
//!   expiry). `clock`: `timer_create()` on three clocks (`SIGEV_NONE`),
//!   one-shot settings of 1 to 5,000 ns, `gettime/getoverrun/delete`.
//!   `hrtimers`: forked processes, each with its own POSIX timer at random
//!   periods of 1 to 65,536 ns and a signal handler. A run fails on a
//!   non-zero exit, zero bogo-ops, a hang (killed at SECONDS + 60 s) or a
//!   failure line in its output.
//! - cyclictest `-x`: a POSIX timer per thread (`SIGEV_THREAD_ID`,
//!   `TIMER_ABSTIME`, periodic) waited for with `sigwait()`; `-v` prints
//!   every cycle's latency, from which the first cycle's, min, avg, p99
//!   and max come. It needs real-time scheduling rights even without
//!   `-p`: as non-root it runs under `sudo -n` when that works, else it is
//!   skipped (printed, not a failure). A run fails on a non-zero exit, a
//!   hang, or fewer samples than loops.
//!
//! The preload is checked, not assumed: in every preload run `ld.so` must
//! have loaded and initialised LIB (each run has `LD_DEBUG=files`, whose
//! log says `calling init: LIB`; the library in a `/proc/PID/maps` of the
//! program, sampled while it runs, counts too), no kernel run may have it,
//! and one `LD_DEBUG=bindings` run of each program must bind every
//! `timer_*`/`timerfd_*` symbol the program itself imports (those it binds
//! to libc without the preload) to LIB. The page also shows the most
//! kernel POSIX timers seen in `/proc/PID/timers` during each run: a
//! user-space timer is not one of them, so a preload run of `timer`,
//! `hrtimers` or cyclictest that shows one is marked (a failure with
//! `--user-timers`): the library forwarded the call to the kernel.
//!
//! Installing the programs and building the library is `ci/programs.sh`'s
//! job; this tool runs, measures and writes the page.

mod page;
mod parse;
mod run;

use std::fs;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::{value_parser, Args};

use page::{Cyclic, CyclicRun, Header, Measured, StressRow};
use run::{Launcher, Outcome, Side};

/// Shown after the options by `utimer programs --help`.
pub(crate) const AFTER_HELP: &str = "\
Runs stress-ng's timer, timerfd, clock and hrtimers stressors and
cyclictest -x, each once on the kernel and once with LD_PRELOAD=LIB, checks
that the preload was in effect, and prints a markdown table of both sides
(bogo-ops/s; cyclictest's latencies in µs). Exits with status 1 on any
failure of either side; the speed targets are printed, not enforced.
Needs stress-ng and cyclictest (Debian's stress-ng and rt-tests), and
coreutils' timeout; ci/programs.sh installs them and builds the library.
Takes about 7 x SECONDS + SECONDS s.";

/// `utimer programs`' options.
#[derive(Debug, Args)]
pub(crate) struct ProgramsArgs {
    /// The drop-in library to preload (default: libutimer_posix.so beside
    /// this executable); `none` runs the kernel on both sides, checking
    /// the run without the library
    #[arg(long, value_name = "PATH|none")]
    lib: Option<PathBuf>,
    /// Seconds per stress-ng run; cyclictest runs SECONDS x 1000 loops of
    /// 1 ms (1..=3600)
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = value_parser!(u64).range(1..=3_600))]
    seconds: u64,
    /// Also write the page to FILE (docs/programs.md)
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// cyclictest's SCHED_FIFO priority (-p), used where permitted; 0: none
    #[arg(long, value_name = "N", default_value_t = 80, value_parser = value_parser!(u32).range(0..=99))]
    cyclic_prio: u32,
    /// Also fail when a preload run of timer, hrtimers or cyclictest (whose
    /// timers the library keeps in user space) shows a kernel POSIX timer
    #[arg(long)]
    user_timers: bool,
}

/// The timer symbols whose binding the preload check follows.
const TIMER_SYMBOLS: [&str; 8] = [
    "timer_create",
    "timer_settime",
    "timer_gettime",
    "timer_getoverrun",
    "timer_delete",
    "timerfd_create",
    "timerfd_settime",
    "timerfd_gettime",
];

/// The signal calls the check reports (the drop-in takes them over so that
/// its signals reach the program's handlers and waits).
const SIGNAL_SYMBOLS: [&str; 5] = [
    "sigaction",
    "signal",
    "sigwait",
    "sigwaitinfo",
    "sigtimedwait",
];

/// The stressors, one row each: the stressor and its arguments.
const STRESSORS: [(&str, &str); 6] = [
    ("timer", "--timer 1 --timer-freq 100000"),
    ("timer", "--timer 1 --timer-freq 100000 --timer-rand"),
    ("timerfd", "--timerfd 1"),
    ("timerfd", "--timerfd 1 --timerfd-rand"),
    ("clock", "--clock 1"),
    ("hrtimers", "--hrtimers 1"),
];

/// A scratch directory, removed when dropped.
#[derive(Debug)]
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> std::io::Result<Self> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir =
            std::env::temp_dir().join(format!("utimer-programs.{}.{nanos}", std::process::id()));
        fs::create_dir_all(dir.join("run"))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// One run of the programs: how they start, and what has failed so far.
#[derive(Debug)]
struct Session {
    launcher: Launcher,
    scratch: Scratch,
    user_timers: bool,
    /// The second side's name: `preload`, or `kernel (2nd)`.
    label: &'static str,
    /// Every failure, in order.
    failures: Vec<String>,
    /// The preload check's line per program.
    bindings: Vec<String>,
}

impl Session {
    fn fail(&mut self, why: String) {
        let _ = writeln!(std::io::stderr(), "FAIL: {why}");
        self.failures.push(why);
    }

    fn path(&self, name: &str) -> PathBuf {
        self.scratch.0.join(name)
    }

    fn lib_str(&self) -> Option<String> {
        self.launcher.lib.as_ref().map(|l| l.display().to_string())
    }

    fn side_label(&self, side: Side) -> &'static str {
        match side {
            Side::Kernel => "kernel",
            Side::Preload => self.label,
        }
    }

    /// The preload check of one program: which of its own timer symbols
    /// `ld.so` binds to the library (all must be), and where its signal
    /// calls go.
    fn check_bindings(&mut self, name: &str, argv: &[&str]) {
        let prog = argv[0];
        let (kernel_log, _) =
            self.launcher
                .bindings_run(Side::Kernel, &self.path(&format!("ldk-{name}")), argv);
        let own = parse::main_bindings(&kernel_log, prog);
        let required: Vec<&str> = TIMER_SYMBOLS
            .into_iter()
            .filter(|s| own.contains_key(*s))
            .collect();
        let Some(lib) = self.lib_str() else {
            self.bindings.push(if required.is_empty() {
                format!(
                    "- {name}: LD_DEBUG=bindings showed no timer_*/timerfd_* binding of its own"
                )
            } else {
                format!(
                    "- {name} imports {}: not checked (LIB=none)",
                    required.join(" ")
                )
            });
            return;
        };
        if required.is_empty() {
            self.fail(format!(
                "{name}: LD_DEBUG=bindings showed no timer symbol bound by {prog}: cannot check the preload"
            ));
            self.bindings.push(format!(
                "- {name}: LD_DEBUG=bindings showed no timer_*/timerfd_* binding of its own"
            ));
            return;
        }
        let (preload_log, output) =
            self.launcher
                .bindings_run(Side::Preload, &self.path(&format!("ldp-{name}")), argv);
        let with = parse::main_bindings(&preload_log, prog);
        let target = |s: &str| with.get(s).and_then(|t| t.iter().next()).cloned();
        let base = |t: &str| t.rsplit('/').next().unwrap_or(t).to_string();
        let (mut bound, mut unbound) = (Vec::new(), Vec::new());
        for s in &required {
            match target(s) {
                Some(t) if t == lib => bound.push(s.to_string()),
                t => unbound.push(format!("{s} -> {}", base(&t.unwrap_or_default()))),
            }
        }
        let (mut sig_lib, mut sig_other) = (Vec::new(), Vec::new());
        for s in SIGNAL_SYMBOLS {
            match target(s) {
                Some(t) if t == lib => sig_lib.push(s.to_string()),
                Some(t) => sig_other.push(format!("{s} -> {}", base(&t))),
                None => {}
            }
        }
        let mut line = format!(
            "- {name}: {}/{} of its timer symbols bound to {}",
            bound.len(),
            required.len(),
            base(&lib)
        );
        if !bound.is_empty() {
            line += &format!(" ({})", bound.join(" "));
        }
        if !unbound.is_empty() {
            line += &format!("; NOT: {}", unbound.join(" "));
        }
        if !sig_lib.is_empty() {
            line += &format!("; signal calls bound to it: {}", sig_lib.join(" "));
        }
        if !sig_other.is_empty() {
            line += &format!("; elsewhere: {}", sig_other.join(" "));
        }
        self.bindings.push(line);
        if !unbound.is_empty() {
            self.fail(format!(
                "{name}: preload not in effect for {}",
                unbound.join(" ")
            ));
        }
        if let Some(l) = output.lines().find(|l| l.contains("cannot be preloaded")) {
            self.fail(format!("{name}: ld.so could not preload {lib}: {l}"));
        }
    }

    /// A preload run without the library is a failure, not a result, and
    /// so is a kernel run that had it: why, if so (and it is failed).
    fn check_mapped(&mut self, side: Side, what: &str, o: &Outcome) -> Option<String> {
        self.launcher.lib.as_ref()?;
        let why = match side {
            Side::Kernel if o.mapped => {
                Some("library mapped in the kernel run (/etc/ld.so.preload?)".to_string())
            }
            Side::Kernel => None,
            Side::Preload => match parse::not_preloaded(&o.log) {
                Some(l) => Some(format!("not preloaded: {l}")),
                None if !o.mapped => Some(
                    "library not loaded (no \"calling init\" from ld.so, not in /proc/PID/maps)"
                        .to_string(),
                ),
                None => None,
            },
        }?;
        self.fail(format!("{what}: {why}"));
        Some(why)
    }

    /// For a preload run whose program's timers are all ones the library
    /// keeps in user space: a note if the kernel held POSIX timers during
    /// it (a failure with `--user-timers`).
    fn kernel_timers_note(&mut self, what: &str, count: usize) -> String {
        if self.launcher.lib.is_none() || count == 0 {
            return String::new();
        }
        if self.user_timers {
            self.fail(format!(
                "{what}: {count} kernel POSIX timer(s) in /proc/PID/timers during the preload run"
            ));
        }
        format!("; {count} kernel POSIX timer(s) in the preload run")
    }

    /// Row `row` of the stress-ng table: the stressor on both sides, the
    /// preload first in odd rows.
    fn stress_row(&mut self, row: usize, name: &str, args: &str, secs: u64) -> StressRow {
        let opts = args
            .strip_prefix(&format!("--{name} 1"))
            .unwrap_or(args)
            .trim()
            .to_string();
        let order = if row % 2 == 1 {
            [Side::Preload, Side::Kernel]
        } else {
            [Side::Kernel, Side::Preload]
        };
        let mut results = [
            Measured::Failed(String::new()),
            Measured::Failed(String::new()),
        ];
        let mut timers = [0; 2];
        for side in order {
            let i = usize::from(side == Side::Preload);
            let base = self.path(&format!("sng-{row}-{i}"));
            let yaml = format!("{}.yaml", base.display());
            let secs_s = secs.to_string();
            let mut argv: Vec<&str> = vec!["stress-ng"];
            argv.extend(args.split_whitespace());
            argv.extend([
                "--verify",
                "-t",
                &secs_s,
                "--metrics-brief",
                "--yaml",
                &yaml,
            ]);
            let o =
                self.launcher
                    .run_side(side, &run::with_suffix(&base, ".log"), secs + 60, &argv);
            timers[i] = o.kernel_timers;
            let opts_sp = if opts.is_empty() {
                String::new()
            } else {
                format!("{opts} ")
            };
            let what = format!("stress-ng --{name} {opts_sp}({})", self.side_label(side));
            let rate = parse::yaml_rate(&fs::read_to_string(&yaml).unwrap_or_default(), name);
            let bad = parse::stress_ng_failure(&o.log);
            let mut result = match rate {
                Some(r) if o.status == 0 && bad.is_none() => Measured::Ok(r),
                _ => {
                    let mut why = o.why();
                    if rate.is_none() {
                        why += ", no bogo-ops";
                    }
                    if let Some(b) = bad {
                        why += &format!(": {b}");
                    }
                    self.fail(format!("{what}: {why}"));
                    eprint_tail(o.log.lines());
                    Measured::Failed(why)
                }
            };
            if let Some(why) = self.check_mapped(side, &what, &o) {
                result = Measured::Failed(why);
            }
            let _ = writeln!(
                std::io::stderr(),
                "{what}: {} bogo-ops/s, {}",
                rate.map_or("?".to_string(), |r| r.to_string()),
                result.status()
            );
            results[i] = result;
        }
        let [kernel, preload] = results;
        let note = if kernel.ok().is_some()
            && preload.ok().is_some()
            && matches!(name, "timer" | "hrtimers")
        {
            self.kernel_timers_note(&format!("stress-ng --{name}"), timers[1])
        } else {
            String::new()
        };
        StressRow {
            name: name.to_string(),
            opts,
            kernel,
            preload,
            kernel_timers: timers,
            note,
        }
    }

    /// cyclictest's section: the rights it needs, then both sides.
    fn cyclictest(&mut self, secs: u64, prio: u32) -> Cyclic {
        let loops = secs * 1000;
        const CYC: [&str; 5] = ["cyclictest", "-x", "-t1", "-i", "1000"];
        let prio_s = prio.to_string();
        let with_prio: Vec<&str> = if prio > 0 {
            vec!["-p", &prio_s]
        } else {
            vec![]
        };
        let probe = |l: &Launcher, flags: &[&str]| {
            let mut argv = CYC.to_vec();
            argv.extend(["-l", "2", "-q"]);
            argv.extend(flags);
            l.succeeds(&argv)
        };
        let mut flags: Option<Vec<&str>> = None;
        if prio > 0 && probe(&self.launcher, &with_prio) {
            flags = Some(with_prio.clone());
        } else if probe(&self.launcher, &[]) {
            flags = Some(vec![]);
        } else if !is_root() && sudo_works() {
            self.launcher.sudo = true;
            if prio > 0 && probe(&self.launcher, &with_prio) {
                flags = Some(with_prio.clone());
            } else if probe(&self.launcher, &[]) {
                flags = Some(vec![]);
            }
        }
        let Some(flags) = flags else {
            self.launcher.sudo = false;
            let msg = "cyclictest skipped: it needs RT scheduling rights (root, RLIMIT_RTPRIO or passwordless sudo)";
            let _ = writeln!(std::io::stderr(), "{msg}");
            return Cyclic::Skipped(msg.to_string());
        };
        if self.launcher.sudo {
            let _ = writeln!(
                std::io::stderr(),
                "cyclictest: run with sudo -n (needs RT scheduling rights)"
            );
        }
        let mut check = CYC.to_vec();
        check.extend(["-l", "100", "-q"]);
        check.extend(&flags);
        self.check_bindings("cyclictest", &check);
        let loops_s = loops.to_string();
        let mut results = [
            Measured::Failed(String::new()),
            Measured::Failed(String::new()),
        ];
        let (mut samples, mut timers) = ([0; 2], [0; 2]);
        for side in [Side::Kernel, Side::Preload] {
            let i = usize::from(side == Side::Preload);
            let mut argv = CYC.to_vec();
            argv.extend(["-l", &loops_s, "-v", "-q"]);
            argv.extend(&flags);
            let o = self.launcher.run_side(
                side,
                &self.path(&format!("cyc-{i}.log")),
                loops / 1000 + 60,
                &argv,
            );
            let what = format!("cyclictest -x ({})", self.side_label(side));
            let stats = parse::cyclictest_latency(&o.log);
            let n = stats.as_ref().map_or(0, |s| s.samples);
            let mut result = match stats {
                Some(s) if o.status == 0 && s.samples as u64 >= loops => Measured::Ok(s),
                _ => {
                    let why = format!("{}, {n} of {loops} samples", o.why());
                    self.fail(format!("{what}: {why}"));
                    eprint_tail(o.log.lines().filter(|l| !parse::is_cycle_line(l)));
                    Measured::Failed(why)
                }
            };
            if let Some(why) = self.check_mapped(side, &what, &o) {
                result = Measured::Failed(why);
            }
            let shown = match result.ok() {
                Some(s) => format!(
                    "{} {} {} {:.1} {} {}",
                    s.samples, s.first, s.min, s.avg, s.p99, s.max
                ),
                None => format!("{n} – – – – –"),
            };
            let _ = writeln!(
                std::io::stderr(),
                "{what}: n first min avg p99 max = {shown} (µs), {}, kernel timers seen: {}",
                result.status(),
                o.kernel_timers
            );
            samples[i] = n;
            timers[i] = o.kernel_timers;
            results[i] = result;
        }
        let note = self.kernel_timers_note("cyclictest -x", timers[1]);
        let [kernel, preload] = results;
        Cyclic::Ran(CyclicRun {
            loops,
            flags: flags.iter().map(|s| s.to_string()).collect(),
            kernel,
            preload,
            samples,
            kernel_timers: timers,
            note,
        })
    }
}

/// The last 20 of `lines` on stderr: what a failed run said.
fn eprint_tail<'a>(lines: impl Iterator<Item = &'a str>) {
    let lines: Vec<&str> = lines.collect();
    let mut err = std::io::stderr().lock();
    for l in &lines[lines.len().saturating_sub(20)..] {
        let _ = writeln!(err, "{l}");
    }
}

/// Whether this process runs as root (`/proc/self` belongs to its
/// effective user).
fn is_root() -> bool {
    fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Whether `sudo -n` runs a command without asking for a password.
fn sudo_works() -> bool {
    Command::new("sudo")
        .args(["-n", "true"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether `prog` is an executable file in a `PATH` directory.
fn on_path(prog: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path)
            .any(|d| fs::metadata(d.join(prog)).is_ok_and(|m| m.is_file() && m.mode() & 0o111 != 0))
    })
}

/// What a command prints, stdout and stderr together ("" if it cannot run).
fn output_of(prog: &str, args: &[&str]) -> String {
    Command::new(prog)
        .args(args)
        .output()
        .map(|o| run::combined(&o))
        .unwrap_or_default()
}

/// The library to preload: `--lib` (`none`: no library), else
/// `libutimer_posix.so` beside this executable; an absolute path, checked
/// to exist.
fn library(arg: Option<&Path>) -> Result<Option<PathBuf>, String> {
    let lib = match arg {
        Some(p) if p.as_os_str() == "none" => return Ok(None),
        Some(p) => p.to_path_buf(),
        None => std::env::current_exe()
            .map_err(|e| format!("cannot find this executable: {e}"))?
            .with_file_name("libutimer_posix.so"),
    };
    if !lib.is_file() {
        return Err(format!(
            "no such library: {} (build it with `cargo build --release -p utimer-posix`, or give --lib)",
            lib.display()
        ));
    }
    lib.canonicalize()
        .map(Some)
        .map_err(|e| format!("{}: {e}", lib.display()))
}

/// Runs the programs; `Ok(false)` when any run failed (the failures are
/// printed), `Err` when nothing could be run.
pub(crate) fn run(args: &ProgramsArgs) -> Result<bool, String> {
    let lib = library(args.lib.as_deref())?;
    for (prog, package) in [
        ("stress-ng", "stress-ng"),
        ("cyclictest", "rt-tests"),
        ("timeout", "coreutils"),
    ] {
        if !on_path(prog) {
            return Err(format!(
                "{prog} is not installed (Debian's {package}; ci/programs.sh installs it)"
            ));
        }
    }
    let scratch = Scratch::new().map_err(|e| format!("cannot make a scratch directory: {e}"))?;
    let machine = utimer_bench::Machine::detect();
    let date = utimer_bench::meta::rfc3339_utc(std::time::SystemTime::now());
    let header = Header {
        stamp: format!("{} {} UTC", &date[..10], &date[11..16]),
        cpu: machine.cpu_model,
        cpus: machine.cpus,
        kernel: machine.kernel,
        stress_ng: parse::stress_ng_version(&output_of("stress-ng", &["--version"])),
        cyclictest: parse::cyclictest_version(&output_of("cyclictest", &["--help"])),
        lib: lib.as_ref().map(|l| {
            l.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        }),
        seconds: args.seconds,
    };
    let _ = writeln!(
        std::io::stderr(),
        "programs: {}, Linux {}, {} CPUs, stress-ng {}, cyclictest {}; library: {}",
        header.stamp,
        header.kernel,
        header.cpus,
        header.stress_ng,
        header.cyclictest,
        lib.as_ref()
            .map_or("none (the kernel twice)".to_string(), |l| l
                .display()
                .to_string())
    );
    let mut s = Session {
        launcher: Launcher {
            lib,
            workdir: scratch.0.join("run"),
            sudo: false,
        },
        scratch,
        user_timers: args.user_timers,
        label: header.label(),
        failures: Vec::new(),
        bindings: Vec::new(),
    };

    s.check_bindings(
        "stress-ng",
        &[
            "stress-ng",
            "--timer",
            "1",
            "--timer-ops",
            "1000",
            "--timerfd",
            "1",
            "--timerfd-ops",
            "1000",
            "-t",
            "2",
        ],
    );
    let rows: Vec<StressRow> = STRESSORS
        .iter()
        .enumerate()
        .map(|(row, (name, a))| s.stress_row(row, name, a, args.seconds))
        .collect();
    let cyclic = s.cyclictest(args.seconds, args.cyclic_prio);

    let text = page::render(&header, &rows, &cyclic, &s.bindings);
    let _ = std::io::stdout().write_all(text.as_bytes());
    if let Some(out) = &args.out {
        fs::write(out, &text).map_err(|e| format!("{}: {e}", out.display()))?;
    }
    if s.failures.is_empty() {
        return Ok(true);
    }
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "\n{} failure(s):", s.failures.len());
    for f in &s.failures {
        let _ = writeln!(err, "  {f}");
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_the_library() {
        assert_eq!(library(Some(Path::new("none"))), Ok(None));
        let e = library(Some(Path::new("/nonexistent/libx.so"))).unwrap_err();
        assert!(
            e.starts_with("no such library: /nonexistent/libx.so"),
            "{e}"
        );
        // A relative path comes back absolute.
        let dir = std::env::temp_dir().join(format!("utimer-programs-lib-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let lib = dir.join("libfake.so");
        fs::write(&lib, b"").unwrap();
        let got = library(Some(&lib)).unwrap().unwrap();
        assert!(got.is_absolute() && got.ends_with("libfake.so"), "{got:?}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn finds_programs_on_path() {
        assert!(on_path("sh"));
        assert!(!on_path("utimer-no-such-program"));
    }

    #[test]
    fn each_stressor_row_is_its_own_stressor() {
        for (name, args) in STRESSORS {
            assert!(args.starts_with(&format!("--{name} 1")), "{name}: {args}");
        }
    }
}
