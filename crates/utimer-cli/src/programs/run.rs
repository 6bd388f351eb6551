//! Running a program on one side, and watching it while it runs.
//!
//! Every program runs under coreutils' `timeout -k 5 LIMIT` (which kills
//! its whole process group, `sudo` or not) through `env`, which sets the
//! loader's variables even where `sudo` would clear them: `LD_DEBUG=files`
//! on both sides, so that `ld.so` logs each object it loads and
//! initialises, and `LD_PRELOAD` on the preload side only. While it runs,
//! its process tree is sampled from `/proc` (every 0.1 s five times, then
//! every 0.5 s: a busy program, hrtimers' `SCHED_RR` children, can starve
//! the sampler for the rest of its run, so the first samples come early)
//! for the library in `/proc/PID/maps` and the kernel's POSIX timers in
//! `/proc/PID/timers`.

use std::collections::HashMap;
use std::fs::{self, File};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::parse;

/// Which side a program runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    /// No preload: the kernel's timers.
    Kernel,
    /// `LD_PRELOAD=LIB` (the kernel again when there is no library).
    Preload,
}

/// How programs are started: where, with which library, and whether
/// through `sudo -n` (cyclictest as non-root needs scheduling rights).
#[derive(Debug)]
pub(crate) struct Launcher {
    /// The drop-in library, an absolute path; `None` runs the kernel on
    /// both sides.
    pub(crate) lib: Option<PathBuf>,
    /// The programs' working directory: stress-ng wants it writable and
    /// leaves its temporary files there.
    pub(crate) workdir: PathBuf,
    /// Run through `sudo -n`.
    pub(crate) sudo: bool,
}

/// What one run did.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// Its exit status as a shell reports it (128 + N when killed by
    /// signal N).
    pub(crate) status: i32,
    /// Whether it ran for its whole limit (and was killed for it).
    pub(crate) hung: bool,
    /// The limit it ran under, in seconds.
    pub(crate) limit: u64,
    /// Whether `ld.so` initialised the library in this run (its
    /// `calling init:` line), or the library was seen in a
    /// `/proc/PID/maps` of the run's processes.
    pub(crate) mapped: bool,
    /// The most kernel POSIX timers over the run's processes at one
    /// sample: a starved sampler can only undercount.
    pub(crate) kernel_timers: usize,
    /// Its output, stdout and stderr together.
    pub(crate) log: String,
}

impl Outcome {
    /// Why a run failed, from its status: `hung (killed after N s)`,
    /// `killed by signal N` or `exit N`.
    pub(crate) fn why(&self) -> String {
        if self.hung {
            format!("hung (killed after {} s)", self.limit)
        } else if self.status > 128 {
            format!("killed by signal {}", self.status - 128)
        } else {
            format!("exit {}", self.status)
        }
    }
}

impl Launcher {
    /// The command that runs `argv` with the given loader environment
    /// under `timeout` (and `sudo -n` if need be), in the work directory.
    fn command(&self, limit: u64, env: &[String], argv: &[&str]) -> Command {
        let mut words: Vec<String> = Vec::new();
        if self.sudo {
            words.extend(["sudo".into(), "-n".into()]);
        }
        words.extend(["timeout".into(), "-k".into(), "5".into(), limit.to_string()]);
        words.push("env".into());
        words.extend(env.iter().cloned());
        words.extend(argv.iter().map(|s| s.to_string()));
        let mut cmd = Command::new(&words[0]);
        cmd.args(&words[1..]).current_dir(&self.workdir);
        cmd
    }

    /// The loader's environment of a run on `side`, its log in files
    /// `DEBUG_OUT.PID` (`ld.so` appends the PID).
    fn loader_env(&self, side: Side, debug: &str, debug_out: &Path) -> Vec<String> {
        let mut env = Vec::new();
        match (&self.lib, side) {
            (Some(lib), Side::Preload) => env.push(format!("LD_PRELOAD={}", lib.display())),
            _ => env.extend(["-u".to_string(), "LD_PRELOAD".to_string()]),
        }
        env.push(format!("LD_DEBUG={debug}"));
        env.push(format!("LD_DEBUG_OUTPUT={}", debug_out.display()));
        env
    }

    /// Runs `argv` on `side` for at most `limit` seconds (then `timeout`
    /// kills it), its output in `log`, sampling its process tree.
    pub(crate) fn run_side(&self, side: Side, log: &Path, limit: u64, argv: &[&str]) -> Outcome {
        let debug_out = with_suffix(log, ".ld");
        let env = self.loader_env(side, "files", &debug_out);
        let mut cmd = self.command(limit, &env, argv);
        let started = Instant::now();
        let (status, mut mapped, kernel_timers) = match File::create(log)
            .and_then(|f| Ok((f.try_clone()?, f)))
            .and_then(|(out, err)| cmd.stdout(out).stderr(err).stdin(Stdio::null()).spawn())
        {
            Ok(mut child) => {
                let root = child.id();
                let (mut mapped, mut most) = (false, 0);
                let mut samples = 0u32;
                let status = loop {
                    match child.try_wait() {
                        Ok(Some(status)) => break shell_status(status),
                        Ok(None) => {}
                        Err(_) => break 127,
                    }
                    // `timeout` kills the program at its limit; this is
                    // the last resort if `timeout` itself is stuck.
                    if started.elapsed() > Duration::from_secs(limit + 30) {
                        let _ = child.kill();
                    }
                    std::thread::sleep(Duration::from_millis(if samples < 5 { 100 } else { 500 }));
                    samples += 1;
                    let (seen, timers) = self.sample(root);
                    mapped |= seen;
                    most = most.max(timers);
                };
                (status, mapped, most)
            }
            Err(e) => {
                let _ = fs::write(log, format!("cannot run {argv:?}: {e}\n"));
                (127, false, 0)
            }
        };
        let hung = started.elapsed() >= Duration::from_secs(limit);
        if let Some(lib) = &self.lib {
            let lib = lib.display().to_string();
            mapped |= read_logs(&debug_out)
                .iter()
                .any(|text| parse::initialised(text, &lib));
        }
        Outcome {
            status,
            hung,
            limit,
            mapped,
            kernel_timers,
            log: String::from_utf8_lossy(&fs::read(log).unwrap_or_default()).into_owned(),
        }
    }

    /// One sample of the tree under `root`: whether the library is in a
    /// process's maps, and how many kernel POSIX timers its processes
    /// hold. The wrappers (`timeout`, which has a POSIX timer of its own,
    /// and `sudo`) are not the program.
    fn sample(&self, root: u32) -> (bool, usize) {
        let lib = self.lib.as_ref().map(|l| l.display().to_string());
        let (mut mapped, mut timers) = (false, 0);
        for pid in tree_pids(root) {
            let Ok(comm) = fs::read_to_string(format!("/proc/{pid}/comm")) else {
                continue;
            };
            if matches!(comm.trim_end(), "timeout" | "sudo") {
                continue;
            }
            if let Some(lib) = &lib {
                if !mapped
                    && self
                        .read_proc(&format!("/proc/{pid}/maps"))
                        .contains(lib.as_str())
                {
                    mapped = true;
                }
            }
            timers += parse::kernel_timers(&self.read_proc(&format!("/proc/{pid}/timers")));
        }
        (mapped, timers)
    }

    /// A `/proc` file of a program's process: through `sudo -n cat` when
    /// the program runs as root and this tool does not. Empty if it is
    /// gone or unreadable.
    fn read_proc(&self, path: &str) -> String {
        if self.sudo {
            Command::new("sudo")
                .args(["-n", "cat", path])
                .stderr(Stdio::null())
                .output()
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap_or_default()
        } else {
            fs::read(path)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default()
        }
    }

    /// Runs `argv` once with `LD_DEBUG=bindings` on `side` (30 s at
    /// most) and answers the loader's log and the program's output.
    pub(crate) fn bindings_run(&self, side: Side, base: &Path, argv: &[&str]) -> (String, String) {
        let debug_out = with_suffix(base, ".ld");
        let env = self.loader_env(side, "bindings", &debug_out);
        let output = self
            .command(30, &env, argv)
            .stdin(Stdio::null())
            .output()
            .map(|o| combined(&o))
            .unwrap_or_else(|e| format!("cannot run {argv:?}: {e}\n"));
        (read_logs(&debug_out).concat(), output)
    }

    /// Whether `argv` runs and exits 0 within 30 s, quietly, on the
    /// kernel (the probe of cyclictest's scheduling rights).
    pub(crate) fn succeeds(&self, argv: &[&str]) -> bool {
        let env = ["-u".to_string(), "LD_PRELOAD".to_string()];
        self.command(30, &env, argv)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

/// A finished command's stdout and then its stderr, as text.
pub(crate) fn combined(o: &std::process::Output) -> String {
    let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&o.stderr));
    text
}

/// `path` with `suffix` appended to its file name.
pub(crate) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// The texts of the loader's log files `BASE.PID`, in name order.
fn read_logs(base: &Path) -> Vec<String> {
    let (Some(dir), Some(name)) = (base.parent(), base.file_name()) else {
        return Vec::new();
    };
    let prefix = format!("{}.", name.to_string_lossy());
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect();
    files.sort();
    files
        .iter()
        .filter_map(|f| fs::read(f).ok())
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .collect()
}

/// An exit status as a shell reports it: the code, or 128 + the signal.
fn shell_status(s: std::process::ExitStatus) -> i32 {
    s.code()
        .or_else(|| s.signal().map(|n| 128 + n))
        .unwrap_or(255)
}

/// `root` and all its descendants, `root` first. The parent links come
/// from every `/proc/PID/stat` (not every kernel has
/// `/proc/PID/task/*/children`).
pub(crate) fn tree_pids(root: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for entry in fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if let Some(ppid) = parse::stat_ppid(&stat) {
            children.entry(ppid).or_default().push(pid);
        }
    }
    let mut todo = vec![root];
    let mut i = 0;
    while i < todo.len() {
        if let Some(kids) = children.get(&todo[i]) {
            todo.extend(kids);
        }
        i += 1;
    }
    todo
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_childs_tree() {
        let mut child = Command::new("sh")
            .args(["-c", "sleep 2 & sleep 2; wait"])
            .spawn()
            .unwrap();
        let root = child.id();
        // Both sleeps are the shell's children once it has forked them.
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut tree = tree_pids(root);
        while tree.len() < 3 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
            tree = tree_pids(root);
        }
        assert_eq!(tree[0], root);
        assert_eq!(tree.len(), 3, "{tree:?}");
        child.kill().unwrap();
        child.wait().unwrap();
        // Gone, it has no children: its sleeps, orphaned, belong to the
        // reaper now (and end on their own).
        assert_eq!(tree_pids(root), [root]);
    }

    #[test]
    fn runs_and_reports_a_program() {
        let dir = std::env::temp_dir().join(format!("utimer-programs-test-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let launcher = Launcher {
            lib: None,
            workdir: dir.clone(),
            sudo: false,
        };
        let log = dir.join("ok.log");
        let o = launcher.run_side(Side::Kernel, &log, 10, &["sh", "-c", "echo hello; exit 3"]);
        assert_eq!(o.status, 3);
        assert!(!o.hung && !o.mapped);
        assert_eq!(o.log, "hello\n");
        assert_eq!(o.why(), "exit 3");
        // The loader logged the run (LD_DEBUG=files).
        assert!(!read_logs(&with_suffix(&log, ".ld")).concat().is_empty());
        // At its limit, timeout kills it: a hang.
        let o = launcher.run_side(Side::Kernel, &dir.join("hang.log"), 1, &["sleep", "30"]);
        assert!(o.hung, "{o:?}");
        assert_eq!(o.status, 124);
        assert_eq!(o.why(), "hung (killed after 1 s)");
        let killed = Outcome {
            status: 137,
            hung: false,
            limit: 9,
            mapped: false,
            kernel_timers: 0,
            log: String::new(),
        };
        assert_eq!(killed.why(), "killed by signal 9");
        assert!(launcher.succeeds(&["true"]));
        assert!(!launcher.succeeds(&["false"]));
        fs::remove_dir_all(&dir).unwrap();
    }
}
