//! tokio's *alternative timer* ("tokio alt timer" rows): per-worker timer
//! wheels with deferred cancellation, switched on by
//! `tokio::runtime::Builder::enable_alt_timer` (tokio 1.49 and later) on a
//! multi-thread runtime. Measured by a helper program, run as a child
//! process, because that builder method only exists when tokio is compiled
//! with `--cfg tokio_unstable`.
//!
//! # Why a separate program
//!
//! A cfg flag reaches tokio only through `RUSTFLAGS` (or a `rustflags`
//! setting), and Cargo applies those to *every* crate of a build: set for
//! the workspace, it would compile the library crates (`utimer`,
//! `utimer-async`, `utimer-capi`) and their tests against unstable tokio
//! too, and change the tokio that the other tokio rows measure. Cargo has no
//! per-package rustflags on stable, and a feature cannot set a cfg. So the
//! measurements live in their own crate, `crates/utimer-bench/tokio-alt`:
//!
//! * it is its own workspace (an empty `[workspace]` table, and listed in
//!   the root manifest's `exclude`) with its own `Cargo.lock` and its own
//!   target directory (`$CARGO_TARGET_DIR/tokio-alt`, else `target/` inside
//!   it), so its build never shares artifacts with the main one;
//! * its `.cargo/config.toml` sets `--cfg tokio_unstable`; Cargo reads that
//!   file only when its working directory is inside the helper's directory,
//!   and the helper refuses to compile without the flag (`compile_error!`);
//! * `utimer bench` builds it on first use, once per run, by running
//!   `cargo build --release` in that directory (the `cargo` that runs the
//!   bench, from `$CARGO`, else the one on `PATH`; an up-to-date build is a
//!   no-op). `RUSTFLAGS` or `CARGO_ENCODED_RUSTFLAGS` in the environment
//!   would replace the config file's flags, so when either is set the flag
//!   is appended to it for that one command. `UTIMER_TOKIO_ALT_HELPER`
//!   names a prebuilt helper instead.
//!
//! Other options were weaker: a build script of this crate that builds the
//! helper would run a nested Cargo at every (re)build of the bench, tests
//! included, and fail the whole build offline or when it breaks; a
//! `tokio_unstable` feature of the bench crate cannot pass the cfg at all.
//!
//! If the helper cannot be built (no `cargo`, no network for its first
//! build, sources not on this machine) its rows are shown as skipped with
//! the reason, and a note says so once; the rest of the run is unaffected.
//!
//! # Talking to the helper
//!
//! Each contender starts its own helper process in its set-up, with the
//! case and its parameters as arguments, so the runner interleaves,
//! calibrates and repeats it like any other row (and a sequential case holds
//! one helper's memory at a time). Each batch is one line on the child's
//! stdin (the operation count) and one JSON line back ([`Reply`]); the time
//! is taken inside the helper, on the runtime's worker thread, so the pipe
//! round trip is not in it. The helper's own module docs say what each case
//! does; in short, sleeps are made and polled inside a task on a worker (the
//! alt timer's per-worker wheel is only used there), and every timed part
//! ends with one yield so the worker parks once and does the work that
//! dropping or resetting a sleep deferred.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use serde::Deserialize;

use crate::harness::out::errln;
use crate::harness::progress;
use crate::{Contender, Sample};

/// Row name of every alt-timer row.
pub const NAME: &str = "tokio alt timer";

/// The helper crate, as this crate was compiled from.
const HELPER_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tokio-alt");
/// The helper's binary name.
const HELPER_BIN: &str = "utimer-bench-tokio-alt";
/// Names a prebuilt helper binary; nothing is built then.
const HELPER_ENV: &str = "UTIMER_TOKIO_ALT_HELPER";

/// One answer of the helper; fields a case does not fill are `None` or 0.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default)]
pub struct Reply {
    /// Nanoseconds that `ops` operations took.
    pub ns: u64,
    /// Operations timed.
    pub ops: u64,
    /// `threads`: overlap of the tasks' timed loops (0..1).
    pub overlap: Option<f64>,
    /// `pending`, `memory`: net heap bytes per sleep.
    pub bytes: Option<f64>,
    /// `memory`: allocations per sleep.
    pub allocs: Option<f64>,
    /// `pending`: resident-set growth per sleep, in bytes.
    pub rss: Option<f64>,
    /// `lateness`: completion − deadline of each sleep, µs, sorted.
    pub late: Option<Vec<f64>>,
    /// `lateness`: sleeps that completed early; `expiry`: fired before the
    /// timed park.
    pub early: Option<u64>,
    /// `expiry`: sleeps not fired at all.
    pub missed: Option<u64>,
    /// Why the helper could not answer.
    pub error: Option<String>,
}

/// The helper binary, built at most once per process.
pub fn helper() -> Result<PathBuf, String> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let built = build();
            if let Err(e) = &built {
                progress::clear();
                errln!("note: the `{NAME}` rows are skipped: {e}");
            }
            built
        })
        .clone()
}

/// Where the helper's build goes: its own directory under the caller's
/// `CARGO_TARGET_DIR`, else `target/` in the helper crate.
fn target_dir(dir: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(t) if !t.is_empty() => {
            let t = PathBuf::from(t);
            let t = if t.is_relative() {
                std::env::current_dir().map_or(t.clone(), |cwd| cwd.join(&t))
            } else {
                t
            };
            t.join("tokio-alt")
        }
        _ => dir.join("target"),
    }
}

/// `flags` with `--cfg tokio_unstable` appended, in the encoding of the
/// variable it came from (`CARGO_ENCODED_RUSTFLAGS` separates by 0x1f).
fn with_cfg(flags: OsString, encoded: bool) -> OsString {
    let mut f = flags;
    if encoded {
        if !f.is_empty() {
            f.push("\x1f");
        }
        f.push("--cfg\x1ftokio_unstable");
    } else {
        f.push(" --cfg tokio_unstable");
    }
    f
}

/// Builds the helper (a no-op when it is up to date) and returns its path.
fn build() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os(HELPER_ENV) {
        let p = PathBuf::from(p);
        if !p.is_file() {
            return Err(format!("{HELPER_ENV}={} is not a file", p.display()));
        }
        return Ok(p);
    }
    let dir = Path::new(HELPER_DIR);
    if !dir.join("Cargo.toml").is_file() {
        return Err(format!(
            "its helper's sources ({}) are not on this machine",
            dir.display()
        ));
    }
    let target = target_dir(dir);
    let exe = target.join("release").join(HELPER_BIN);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(&cargo);
    // The working directory selects the helper's .cargo/config.toml.
    cmd.current_dir(dir)
        .args(["build", "--release", "--quiet", "--target-dir"])
        .arg(&target)
        .stdin(Stdio::null());
    if let Some(f) = std::env::var_os("CARGO_ENCODED_RUSTFLAGS") {
        cmd.env("CARGO_ENCODED_RUSTFLAGS", with_cfg(f, true));
    } else if let Some(f) = std::env::var_os("RUSTFLAGS") {
        cmd.env("RUSTFLAGS", with_cfg(f, false));
    }
    if !exe.is_file() {
        progress::clear();
        errln!(
            "note: building the `{NAME}` helper (tokio with --cfg tokio_unstable) in {}",
            target.display()
        );
    }
    match cmd.output() {
        Err(e) if exe.is_file() => {
            progress::clear();
            errln!(
                "note: cannot run {} ({e}); using the helper built before",
                Path::new(&cargo).display()
            );
            Ok(exe)
        }
        Err(e) => Err(format!(
            "cannot run `{}` to build its helper: {e}",
            Path::new(&cargo).display()
        )),
        Ok(out) if !out.status.success() => {
            let err = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = err.lines().rev().take(6).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            Err(format!(
                "building its helper ({}) failed: {}",
                dir.display(),
                tail.join(" | ")
            ))
        }
        Ok(_) if exe.is_file() => Ok(exe),
        Ok(_) => Err(format!("the helper build made no {}", exe.display())),
    }
}

/// A running helper process set up for one case.
#[derive(Debug)]
pub struct Helper {
    child: Child,
    input: Option<ChildStdin>,
    output: BufReader<ChildStdout>,
}

impl Helper {
    /// Builds the helper if needed, starts it for `args` (the case and its
    /// parameters) and waits until the case is set up.
    pub fn start(args: &[String]) -> Result<Helper, String> {
        let exe = helper()?;
        let mut child = Command::new(&exe)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
        let input = child.stdin.take();
        let output = BufReader::new(child.stdout.take().expect("piped stdout"));
        let mut h = Helper {
            child,
            input,
            output,
        };
        h.read()?;
        Ok(h)
    }

    fn read(&mut self) -> Result<Reply, String> {
        let mut line = String::new();
        match self.output.read_line(&mut line) {
            Ok(0) => Err("the helper exited".to_string()),
            Ok(_) => {
                let r: Reply = serde_json::from_str(&line)
                    .map_err(|e| format!("bad answer from the helper ({e}): {line}"))?;
                match r.error {
                    Some(e) => Err(format!("helper: {e}")),
                    None => Ok(r),
                }
            }
            Err(e) => Err(format!("cannot read from the helper: {e}")),
        }
    }

    /// Runs one batch of `n` operations (fixed cases ignore `n`).
    pub fn ask(&mut self, n: u64) -> Result<Reply, String> {
        let input = self.input.as_mut().ok_or("the helper's input is closed")?;
        writeln!(input, "{n}")
            .and_then(|()| input.flush())
            .map_err(|e| format!("cannot write to the helper: {e}"))?;
        self.read()
    }

    /// [`ask`](Self::ask), for the runner's closures: a helper that fails
    /// in the middle of a case is a bug, reported as a panic.
    fn must(&mut self, n: u64) -> Reply {
        self.ask(n).unwrap_or_else(|e| panic!("{NAME}: {e}"))
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        // End of input: the helper exits.
        drop(self.input.take());
        let _ = self.child.wait();
    }
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// A batched row: each batch of `n` operations is one helper answer.
pub fn batched<'a>(args: &[&str]) -> Contender<'a> {
    let args = strings(args);
    Contender::batched(NAME, move || {
        let mut h = Helper::start(&args)?;
        Ok(move |n: u64| Duration::from_nanos(h.must(n).ns))
    })
}

/// A fixed row: each sample is one helper answer, also handed to
/// `on_reply` (extra fields).
pub fn fixed<'a>(args: &[&str], mut on_reply: impl FnMut(&Reply) + 'a) -> Contender<'a> {
    let args = strings(args);
    Contender::fixed(NAME, move || {
        let mut h = Helper::start(&args)?;
        Ok(move || {
            let r = h.must(1);
            on_reply(&r);
            Sample {
                elapsed: Duration::from_nanos(r.ns),
                ops: r.ops,
            }
        })
    })
}

/// Sets up `args`, asks once and stops the helper.
pub fn once(args: &[&str]) -> Result<Reply, String> {
    Helper::start(&strings(args))?.ask(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_the_cfg_into_existing_flags() {
        assert_eq!(
            with_cfg("-Copt-level=2".into(), false),
            "-Copt-level=2 --cfg tokio_unstable"
        );
        assert_eq!(with_cfg("".into(), true), "--cfg\x1ftokio_unstable");
        assert_eq!(
            with_cfg("-Ca".into(), true),
            "-Ca\x1f--cfg\x1ftokio_unstable"
        );
    }

    #[test]
    fn helper_builds_and_answers() {
        let mut h = Helper::start(&strings(&["arm_cancel", "10"])).unwrap();
        let r = h.ask(1000).unwrap();
        assert_eq!(r.ops, 1000);
        assert!(r.ns > 0);
        let r = once(&["expiry", "1000"]).unwrap();
        assert_eq!(r.missed, Some(0));
        assert_eq!(r.ops + r.early.unwrap(), 1000);
        let e = Helper::start(&strings(&["no_such_case"])).err().unwrap();
        assert!(e.contains("unknown case"), "{e}");
    }
}
