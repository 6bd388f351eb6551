//! `utimer programs` end to end, on stand-ins: small shell scripts named
//! `stress-ng` and `cyclictest`, first on `PATH`, that print what the real
//! programs print (the version lines, the `--yaml` metrics, `-v`'s
//! `thread:cycle:latency` lines) or fail as told by the environment. The
//! real programs run in CI through `ci/programs.sh`; these check the
//! tool's measuring, failing and table on outputs it cannot choose.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The stand-in stress-ng: `--version`; otherwise the stressor is the
/// first argument (`--timer 1 ...`), the metrics go to `--yaml FILE` at
/// `RATE_<stressor>` bogo-ops/s (default 1000), and `FAIL_STRESSOR=NAME`
/// makes that stressor print a failure line.
const STRESS_NG: &str = r#"#!/bin/sh
[ "$1" = --version ] && { echo "stress-ng, version 0.99.01 (gcc 1, x86_64 Linux 6)"; exit 0; }
name=${1#--}
yaml=""
while [ $# -gt 0 ]; do [ "$1" = --yaml ] && yaml=$2; shift; done
eval "rate=\${RATE_$name:-1000}"
echo "stress-ng: info:  [1] dispatching hogs: 1 $name (may fail)"
[ "${FAIL_STRESSOR:-}" = "$name" ] && echo "stress-ng: fail:  [2] $name: timer_settime failed, errno=22"
if [ -n "$yaml" ]; then
  printf -- '---\nmetrics:\n    - stressor: %s\n      bogo-ops: 100\n      bogo-ops-per-second-real-time: %s\n' "$name" "$rate" >"$yaml"
fi
exit 0
"#;

/// The stand-in cyclictest: `--help`; `-l N` loops, and with `-v` one
/// sample line per loop (cycle c's latency: c mod 50, plus 100 for the
/// first), `CYC_SHORT=1` printing one sample fewer.
const CYCLICTEST: &str = r##"#!/bin/sh
[ "$1" = --help ] && { echo "cyclictest V 9.99"; echo "Usage:"; exit 0; }
loops=0 verbose=0
while [ $# -gt 0 ]; do
  case "$1" in -l) loops=$2; shift ;; -v) verbose=1 ;; esac
  shift
done
[ "${CYC_SHORT:-0}" = 1 ] && loops=$((loops - 1))
echo "# /dev/cpu_dma_latency set to 0us"
[ $verbose = 1 ] && seq 0 $((loops - 1)) | awk '{ l = $1 % 50; if ($1 == 0) l += 100; printf "%8d:%8d:%8d\n", 0, $1, l }'
exit 0
"##;

/// A folder holding the stand-ins, for `PATH`.
fn stand_ins(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("programs-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (prog, text) in [("stress-ng", STRESS_NG), ("cyclictest", CYCLICTEST)] {
        let p = dir.join(prog);
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

/// `utimer programs ARGS` with the stand-ins first on `PATH`.
fn programs(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_utimer"));
    cmd.arg("programs")
        .args(args)
        .env("PATH", path)
        .env_remove("LD_PRELOAD");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn measures_both_sides_and_writes_the_table() {
    let dir = stand_ins("ok");
    let out = dir.join("page.md");
    let o = programs(
        &dir,
        &[("RATE_timer", "44374.4"), ("RATE_hrtimers", "0.5")],
        &[
            "--lib",
            "none",
            "--seconds",
            "1",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
    assert!(o.status.success(), "{stderr}");
    let page = std::fs::read_to_string(&out).unwrap();
    assert_eq!(page, stdout, "--out writes what it prints");
    for want in [
        "stress-ng 0.99.01, cyclictest 9.99.",
        "LIB=none: each program ran twice on the kernel",
        "### stress-ng (1 instance each, `--verify`, 1 s each; bogo-ops/s, real time)",
        "| timer | `--timer-freq 100000` | 44374 | 44374 | 1.00× | yes | 0 / 0 | ok |",
        "| timer | `--timer-freq 100000 --timer-rand` | 44374 | 44374 | 1.00× | yes | 0 / 0 | ok |",
        "| timerfd |  | 1000 | 1000 | 1.00× | yes | 0 / 0 | ok |",
        "| timerfd | `--timerfd-rand` | 1000 | 1000 | 1.00× | yes | 0 / 0 | ok |",
        "| clock |  | 1000 | 1000 | 1.00× | yes | 0 / 0 | ok |",
        // Rounded as printf("%.0f") does: half to even.
        "| hrtimers |  | 0 | 0 | 1.00× | yes | 0 / 0 | ok |",
        "(1 thread, 1000 µs interval, 1000 loops, `-p 80`)",
        // 1,000 samples: cycle 0 is 100, the rest c mod 50 (0..=49, 20
        // times each less one 0): p99 is the 990th smallest, 49.
        "| first cycle | 100 | 100 | 1.00× | |",
        "| min | 0 | 0 | – | |",
        "| p99 | 49 | 49 | 1.00× | yes |",
        "| max | 100 | 100 | 1.00× | |",
        "| samples | 1000 | 1000 | | |",
        "| result | ok | ok | | |",
        "- stress-ng: LD_DEBUG=bindings showed no timer_*/timerfd_* binding of its own",
    ] {
        assert!(stdout.contains(want), "missing {want:?} in\n{stdout}");
    }
    // The avg of 0..=49 twenty times, with 100 for cycle 0's 0: 24.6.
    assert!(
        stdout.contains("| avg | 24.6 | 24.6 | 1.00× | yes |"),
        "{stdout}"
    );
    assert!(!stderr.contains("FAIL"), "{stderr}");
}

#[test]
fn a_failure_line_or_missing_samples_fail_the_run() {
    let dir = stand_ins("fail");
    let o = programs(
        &dir,
        &[("FAIL_STRESSOR", "hrtimers"), ("CYC_SHORT", "1")],
        &["--lib", "none", "--seconds", "1", "--cyclic-prio", "0"],
    );
    let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    for want in [
        "FAIL: stress-ng --hrtimers (kernel): exit 0: fail:  [2] hrtimers: timer_settime failed, errno=22",
        "FAIL: stress-ng --hrtimers (kernel (2nd)): exit 0: fail:",
        "FAIL: cyclictest -x (kernel): exit 0, 999 of 1000 samples",
        "4 failure(s):",
    ] {
        assert!(stderr.contains(want), "missing {want:?} in\n{stderr}");
    }
    for want in [
        "| timer | `--timer-freq 100000` | 1000 | 1000 | 1.00× | yes | 0 / 0 | ok |",
        "| hrtimers |  | – | – | – | – | 0 / 0 | kernel: FAIL (exit 0: fail:  [2] hrtimers: timer_settime failed, errno=22); kernel (2nd): FAIL (exit 0: fail:  [2] hrtimers: timer_settime failed, errno=22) |",
        "(1 thread, 1000 µs interval, 1000 loops)\n",
        "| avg | – | – | – | – |",
        "| samples | 999 | 999 | | |",
        "| result | FAIL (exit 0, 999 of 1000 samples) | FAIL (exit 0, 999 of 1000 samples) | | |",
    ] {
        assert!(stdout.contains(want), "missing {want:?} in\n{stdout}");
    }
}

#[test]
fn bad_arguments_and_missing_pieces_are_usage_errors() {
    let dir = stand_ins("usage");
    for args in [
        &["--seconds", "0"][..],
        &["--seconds", "x"],
        &["--cyclic-prio", "100"],
        &["--lib"],
        &["stray"],
    ] {
        let o = programs(&dir, &[], args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
    }
    let o = programs(&dir, &[], &["--lib", "/nonexistent/libutimer_posix.so"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("no such library: /nonexistent/libutimer_posix.so"),
        "{}",
        text(&o.stderr)
    );
    // No stress-ng on PATH: said, nothing run.
    std::fs::remove_file(dir.join("stress-ng")).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_utimer"))
        .args(["programs", "--lib", "none"])
        .env("PATH", &dir)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("stress-ng is not installed"),
        "{}",
        text(&o.stderr)
    );
    assert!(o.stdout.is_empty());
}
