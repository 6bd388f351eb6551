//! `utimer bench` as a user runs it: the binary, spawned with its
//! arguments, its exit status and what it printed. Nothing here runs more
//! than one small case.

use std::fs::File;
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The built `utimer` binary.
fn utimer() -> Command {
    Command::new(env!("CARGO_BIN_EXE_utimer"))
}

/// A fresh folder for one test's files.
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("bench-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Waits for `child` at most `limit`; kills it and fails past that.
fn wait_at_most(mut child: Child, limit: Duration, what: &str) -> Output {
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what}: still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `utimer ARGS`, failing if it takes longer than `limit`.
fn run(args: &[&str], limit: Duration) -> Output {
    let child = utimer()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_at_most(child, limit, &format!("utimer {args:?}"))
}

/// Runs `utimer ARGS` with stdout a pipe whose read end is already
/// closed, so that its first write fails with `EPIPE`.
fn run_with_closed_stdout(args: &[&str], limit: Duration) -> Output {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe() writes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: pipe() just opened both; each is owned once, here.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    let child = utimer()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(write))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_at_most(child, limit, &format!("utimer {args:?} (stdout closed)"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const GROUPS: [&str; 5] = [
    "arm_cancel",
    "wheel",
    "rearm_shares",
    "posix-lookup",
    "async-server",
];

#[test]
fn list_prints_the_cases_without_running() {
    let out = run(&["bench", "--list"], Duration::from_secs(20));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines.len() > 50, "{stdout}");
    // One `group/case` per line, nothing else: no banner, no table.
    for l in &lines {
        assert!(l.contains('/') && !l.starts_with(' '), "{l:?}");
    }
    for g in GROUPS {
        assert!(lines.iter().any(|l| l.starts_with(&format!("{g}/"))), "{g}");
    }
    assert!(lines.contains(&"arm_cancel_pending/10M"));
    // The quick run's cases, and a filter's.
    let quick = text(&run(&["bench", "--list", "--quick"], Duration::from_secs(20)).stdout);
    assert!(
        quick.lines().any(|l| l == "arm_cancel_pending/1M"),
        "{quick}"
    );
    let out = run(
        &["bench", "--list", "--filter", "wheel/"],
        Duration::from_secs(20),
    );
    assert_eq!(text(&out.stdout), "wheel/arm_cancel_1K\n");
    // Not with the options of a run that writes files.
    let out = run(
        &["bench", "--list", "--json", "x.json"],
        Duration::from_secs(20),
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn unmatched_filter_fails_naming_the_groups() {
    for args in [
        &["bench", "--filter", "no-such-case"][..],
        &["bench", "--quick", "--filter", "no-such-case"],
        &["bench", "--list", "--filter", "no-such-case"],
    ] {
        let out = run(args, Duration::from_secs(20));
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}: {}", text(&out.stdout));
        assert!(stderr.contains("`no-such-case`"), "{stderr}");
        for g in GROUPS {
            assert!(stderr.contains(g), "{g} missing from {stderr}");
        }
        assert!(stderr.contains("--list"), "{stderr}");
    }
}

#[test]
fn bad_output_path_fails_before_measuring() {
    let dir = scratch("bad-output");
    let file = dir.join("a-file");
    std::fs::write(&file, "not a folder").unwrap();
    let under_file = file.join("out.json");
    let page = file.join("sub").join("page.md");
    // No --quick and no filter: a whole run, were the paths not checked
    // first.
    for (flag, path, what) in [
        ("--json", &under_file, "JSON file"),
        ("--plot", &file, "charts"),
        ("--markdown", &page, "results page"),
        ("--json", &dir, "JSON file"),
    ] {
        let p = path.to_str().unwrap();
        let out = run(&["bench", flag, p], Duration::from_secs(20));
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(1), "{flag} {p}: {stderr}");
        assert!(
            stdout.is_empty(),
            "{flag} {p}: measured before failing:\n{stdout}"
        );
        assert!(stderr.contains(what) && stderr.contains(p), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a folder");
}

#[test]
fn closed_stdout_ends_quietly() {
    for args in [
        &["bench", "--list"][..],
        &["bench", "--quick", "--filter", "wheel/arm_cancel_1K"],
    ] {
        let out = run_with_closed_stdout(args, Duration::from_secs(60));
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(!stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    }
}

/// A quick run of one small case, its JSON written to `path`.
fn quick_json_args(path: &str) -> [&str; 6] {
    [
        "bench",
        "--quick",
        "--filter",
        "wheel/arm_cancel_1K",
        "--json",
        path,
    ]
}

#[test]
fn closed_stdout_still_writes_the_files_asked_for() {
    let json = scratch("closed-json").join("run.json");
    let args = quick_json_args(json.to_str().unwrap());
    let out = run_with_closed_stdout(&args, Duration::from_secs(120));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(!v["results"].as_array().unwrap().is_empty());
}

#[test]
fn json_records_the_machine_and_the_build() {
    let json = scratch("json-meta").join("run.json");
    let args = quick_json_args(json.to_str().unwrap());
    let out = run(&args, Duration::from_secs(120));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut s = String::new();
    File::open(&json).unwrap().read_to_string(&mut s).unwrap();
    let v: serde_json::Value = serde_json::from_str(&s).unwrap();
    assert_eq!(v["schema"], 2);
    let m = &v["meta"];
    assert_eq!(m["tool"]["name"], "utimer");
    assert_eq!(m["tool"]["version"], env!("CARGO_PKG_VERSION"));
    let rev = m["tool"]["git_revision"].as_str().unwrap();
    assert!(
        rev == "unknown" || (rev.len() >= 7 && rev.bytes().all(|b| b.is_ascii_hexdigit())),
        "{rev}"
    );
    assert_eq!(m["mode"], "quick");
    assert_eq!(m["filter"], "wheel/arm_cancel_1K");
    let date = m["date"].as_str().unwrap();
    let b = date.as_bytes();
    assert!(
        b.len() == 20 && b[4] == b'-' && b[10] == b'T' && b[13] == b':' && b[19] == b'Z',
        "{date}"
    );
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    let model = m["machine"]["cpu_model"].as_str().unwrap();
    assert!(cpuinfo.contains(model), "{model}");
    assert!(m["machine"]["cpus"].as_u64().unwrap() >= 1);
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(m["machine"]["kernel"], release.trim());
    assert!(m["duration_s"].as_f64().unwrap() > 0.0);
    let rows = v["results"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{rows:?}");
    for r in rows {
        assert_eq!(r["group"], "wheel");
        assert_eq!(r["better"], "lower");
    }
    // The terminal says it too.
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("arm_cancel_1K  (lower is better"),
        "{stdout}"
    );
}

#[test]
fn version_names_the_revision() {
    let out = run(&["--version"], Duration::from_secs(20));
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with(&format!("utimer {} (git ", env!("CARGO_PKG_VERSION"))),
        "{stdout}"
    );
}
