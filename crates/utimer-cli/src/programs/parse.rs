//! What the programs print, read: stress-ng's `--yaml` metrics and its
//! error lines, cyclictest's `-v` latencies, and the dynamic loader's
//! `LD_DEBUG` logs. Pure functions of text, tested on the formats the
//! programs and glibc's `ld.so` write.

use std::collections::{BTreeMap, BTreeSet};

/// Bogo-ops per second (real time) of `stressor` in a stress-ng `--yaml`
/// metrics file, or `None` when the stressor is absent or did no bogo-op.
///
/// The file lists `- stressor: NAME` entries, each followed by its
/// `bogo-ops:` and `bogo-ops-per-second-real-time:` keys.
pub(crate) fn yaml_rate(yaml: &str, stressor: &str) -> Option<f64> {
    let mut current = false;
    let (mut ops, mut rate) = (None, None);
    for line in yaml.lines() {
        let mut words = line.split_whitespace();
        match (words.next(), words.next(), words.next()) {
            (Some("-"), Some("stressor:"), Some(name)) => current = name == stressor,
            (Some("bogo-ops:"), Some(v), _) if current => ops = v.parse::<f64>().ok(),
            (Some("bogo-ops-per-second-real-time:"), Some(v), _) if current => {
                rate = v.parse::<f64>().ok();
            }
            _ => {}
        }
    }
    match ops {
        Some(n) if n > 0.0 => rate,
        _ => None,
    }
}

/// The first line of a stress-ng log that reports a failure (`fail`,
/// `verif...`, `error`, "counters are zero", in any case), with its
/// `stress-ng: ` prefix removed; `None` when there is none. Its `info:`,
/// `metrc:` and `debug:` lines are not failures (an info line may say
/// what "may fail"), nor is the loader's "cannot be preloaded", which the
/// preload check reports on its own.
pub(crate) fn stress_ng_failure(log: &str) -> Option<&str> {
    log.lines()
        .find(|line| {
            let l = line.to_ascii_lowercase();
            ["fail", "verif", "error", "counters are zero"]
                .iter()
                .any(|w| l.contains(w))
                && ![
                    "stress-ng: info: ",
                    "stress-ng: metrc: ",
                    "stress-ng: debug: ",
                ]
                .iter()
                .any(|p| line.starts_with(p))
                && !line.contains("cannot be preloaded")
        })
        .map(|line| line.strip_prefix("stress-ng: ").unwrap_or(line))
}

/// The latency statistics of one cyclictest run, in microseconds.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Latency {
    /// Cycles measured.
    pub(crate) samples: usize,
    /// The first cycle's latency (cycle 0; 0 if the log lacks it).
    pub(crate) first: i64,
    /// The least latency.
    pub(crate) min: i64,
    /// The mean latency.
    pub(crate) avg: f64,
    /// The 99th percentile: the least latency that at least 99% of the
    /// cycles do not exceed (nearest rank).
    pub(crate) p99: i64,
    /// The greatest latency.
    pub(crate) max: i64,
}

/// One `thread: cycle: latency` line of `cyclictest -v` (three decimal
/// fields, the latency possibly negative), as `(cycle, latency)`.
fn cycle_line(line: &str) -> Option<(u64, i64)> {
    let mut fields = line.split(':');
    let (thread, cycle, latency) = (fields.next()?, fields.next()?, fields.next()?);
    if fields.next().is_some() {
        return None;
    }
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (thread, cycle, latency) = (thread.trim(), cycle.trim(), latency.trim());
    let unsigned_latency = latency.strip_prefix('-').unwrap_or(latency);
    if !digits(thread) || !digits(cycle) || !digits(unsigned_latency) {
        return None;
    }
    Some((cycle.parse().ok()?, latency.parse().ok()?))
}

/// Whether a line of a cyclictest log is one of its `-v` samples (the
/// rest, its messages, is what a failed run shows).
pub(crate) fn is_cycle_line(line: &str) -> bool {
    cycle_line(line).is_some()
}

/// The statistics of a `cyclictest -v` log, `None` when it holds no
/// sample.
pub(crate) fn cyclictest_latency(log: &str) -> Option<Latency> {
    let cycles: Vec<(u64, i64)> = log.lines().filter_map(cycle_line).collect();
    let first = cycles.iter().find(|&&(c, _)| c == 0).map_or(0, |&(_, l)| l);
    let mut v: Vec<i64> = cycles.iter().map(|&(_, l)| l).collect();
    v.sort_unstable();
    let n = v.len();
    if n == 0 {
        return None;
    }
    // Nearest rank: the ceil(0.99 n)-th smallest, at least the first.
    let rank = (n * 99).div_ceil(100).max(1);
    let sum: i64 = v.iter().sum();
    Some(Latency {
        samples: n,
        first,
        min: v[0],
        avg: sum as f64 / n as f64,
        p99: v[rank - 1],
        max: v[n - 1],
    })
}

/// The symbols that the main program binds, from `LD_DEBUG=bindings`
/// logs: symbol → the objects it was bound to (normally one).
///
/// `prog` is the program's name as it was run (`argv[0]`); a line
/// `binding file PROG [0] to /lib/.../libc.so.6 [0]: normal symbol
/// `timer_create' [GLIBC_2.3.3]` binds `timer_create` of PROG (or of
/// `.../PROG`) to libc. Other objects' bindings are not the program's.
pub(crate) fn main_bindings(logs: &str, prog: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in logs.lines() {
        let Some((_, rest)) = line.split_once("binding file ") else {
            continue;
        };
        let Some((file, rest)) = rest.split_once(' ') else {
            continue;
        };
        if !(file == prog || file.strip_suffix(prog).is_some_and(|d| d.ends_with('/'))) {
            continue;
        }
        let Some(rest) = skip_scope(rest).and_then(|r| r.strip_prefix(" to ")) else {
            continue;
        };
        let Some((target, rest)) = rest.split_once(' ') else {
            continue;
        };
        let Some(rest) = skip_scope(rest).and_then(|r| r.strip_prefix(": normal symbol `")) else {
            continue;
        };
        let Some((symbol, _)) = rest.split_once('\'') else {
            continue;
        };
        out.entry(symbol.to_string())
            .or_default()
            .insert(target.to_string());
    }
    out
}

/// The rest of `s` after a leading `[N]` (a namespace index in `ld.so`'s
/// log).
fn skip_scope(s: &str) -> Option<&str> {
    let inner = s.strip_prefix('[')?;
    let (n, rest) = inner.split_once(']')?;
    (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then_some(rest)
}

/// Whether an `LD_DEBUG=files` log shows `ld.so` initialising `lib` (it
/// logs `calling init: LIB` as it runs each object's constructors).
pub(crate) fn initialised(ld_log: &str, lib: &str) -> bool {
    let want = format!("calling init: {lib}");
    ld_log.lines().any(|l| l.trim_end().ends_with(&want))
}

/// The loader's first "cannot be preloaded" error in a program's output,
/// without its `ERROR: ld.so: ` prefix.
pub(crate) fn not_preloaded(log: &str) -> Option<&str> {
    log.lines()
        .find(|l| l.contains("cannot be preloaded"))
        .map(|l| l.strip_prefix("ERROR: ld.so: ").unwrap_or(l))
}

/// How many kernel POSIX timers a `/proc/PID/timers` text lists (one
/// `ID:` line each).
pub(crate) fn kernel_timers(proc_timers: &str) -> usize {
    proc_timers.lines().filter(|l| l.starts_with("ID:")).count()
}

/// The parent's PID in a `/proc/PID/stat` line: the field after the
/// state, which follows the last `)` (a command name may hold `)`).
pub(crate) fn stat_ppid(stat: &str) -> Option<u32> {
    let (_, rest) = stat.rsplit_once(") ")?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The version in `stress-ng --version`'s line (`stress-ng, version
/// 0.15.06 (gcc ...)`), or `?`.
pub(crate) fn stress_ng_version(out: &str) -> String {
    out.split_whitespace()
        .nth(2)
        .map(|v| v.replace(',', ""))
        .unwrap_or_else(|| "?".to_string())
}

/// The version in `cyclictest --help`'s `cyclictest V 2.40` line, or `?`.
pub(crate) fn cyclictest_version(out: &str) -> String {
    out.lines()
        .find(|l| l.starts_with("cyclictest V"))
        .and_then(|l| l.split_whitespace().nth(2))
        .unwrap_or("?")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const YAML: &str = "\
---
system-info:
      stress-ng-version: 0.15.06
metrics:
    - stressor: timer
      bogo-ops: 133056
      bogo-ops-per-second-usr-sys-time: 60418.7
      bogo-ops-per-second-real-time: 44352.1
      wall-clock-time: 3.0
    - stressor: timerfd
      bogo-ops: 0
      bogo-ops-per-second-real-time: 0.0
...
";

    #[test]
    fn reads_a_stressors_real_time_rate() {
        assert_eq!(yaml_rate(YAML, "timer"), Some(44352.1));
        // Zero bogo-ops is no result, nor is an absent stressor or file.
        assert_eq!(yaml_rate(YAML, "timerfd"), None);
        assert_eq!(yaml_rate(YAML, "clock"), None);
        assert_eq!(yaml_rate("", "timer"), None);
        // A later stressor's keys are not the earlier one's.
        let swapped = "    - stressor: clock\n      bogo-ops: 5\n    - stressor: timer\n";
        assert_eq!(yaml_rate(swapped, "timer"), None);
    }

    #[test]
    fn finds_stress_ngs_failure_lines() {
        let ok = "stress-ng: info:  [12] dispatching hogs: 1 timer\n\
                  stress-ng: info:  [12] note: some calls may fail\n\
                  stress-ng: metrc: [12] stressor bogo ops\n\
                  ERROR: ld.so: object 'x.so' from LD_PRELOAD cannot be preloaded\n\
                  stress-ng: info:  [12] successful run completed in 3.00s\n";
        assert_eq!(stress_ng_failure(ok), None);
        let bad = format!("{ok}stress-ng: fail:  [13] timer: timer_settime failed, errno=22\n");
        assert_eq!(
            stress_ng_failure(&bad),
            Some("fail:  [13] timer: timer_settime failed, errno=22")
        );
        assert_eq!(
            stress_ng_failure("stress-ng: warn: [1] Bogo-Op counters are zero\n"),
            Some("warn: [1] Bogo-Op counters are zero")
        );
        assert_eq!(
            stress_ng_failure("hrtimers: VERIFICATION mismatch\n"),
            Some("hrtimers: VERIFICATION mismatch")
        );
    }

    #[test]
    fn cyclictest_statistics() {
        // cyclictest's own lines around the samples are not samples.
        let mut log =
            String::from("# /dev/cpu_dma_latency set to 0us\nPolicy: fifo: loadavg: 0.1\n");
        // Cycles 0..100 with latencies 100 down to 1: cycle 0's is 100.
        for c in 0..100 {
            log.push_str(&format!("       0:{c:8}:{:8}\n", 100 - c));
        }
        let s = cyclictest_latency(&log).unwrap();
        assert_eq!(
            s,
            Latency {
                samples: 100,
                first: 100,
                min: 1,
                avg: 50.5,
                p99: 99,
                max: 100
            }
        );
        // 1,000 samples: p99 is the 990th smallest.
        let log: String = (1..=1000).map(|l| format!("0:{l}:{l}\n")).collect();
        let s = cyclictest_latency(&log).unwrap();
        assert_eq!((s.p99, s.first, s.samples), (990, 0, 1000));
        // One sample, negative latencies, and malformed lines.
        let s = cyclictest_latency("0:0:-3\n0:1:x\n0:2:3:4\n-1:3:5\n").unwrap();
        assert_eq!(
            (s.samples, s.first, s.min, s.p99, s.max),
            (1, -3, -3, -3, -3)
        );
        assert_eq!(cyclictest_latency("T: 0 ( 5) P:80 I:1000\n"), None);
        assert!(is_cycle_line("       0:      17:       9"));
        assert!(!is_cycle_line("Thread 0 Interval: 1500"));
    }

    #[test]
    fn reads_the_programs_own_bindings() {
        let log = "\
     41:\tbinding file stress-ng [0] to /lib/x86_64-linux-gnu/libc.so.6 [0]: normal symbol `timer_create' [GLIBC_2.3.3]
     41:\tbinding file /usr/bin/stress-ng [0] to /tmp/lib/libutimer_posix.so [0]: normal symbol `timer_settime' [GLIBC_2.3.3]
     41:\tbinding file /lib/x86_64-linux-gnu/libc.so.6 [0] to /lib/x86_64-linux-gnu/libc.so.6 [0]: normal symbol `timer_delete'
     41:\tbinding file not-stress-ng [0] to /lib/libc.so.6 [0]: normal symbol `timer_gettime'
     41:\tbinding file stress-ng [0] to /lib/x86_64-linux-gnu/libc.so.6 [0]: normal symbol `sigaction' [GLIBC_2.2.5]
     41:\tfile=libc.so.6 [0];  needed by stress-ng [0]
";
        let b = main_bindings(log, "stress-ng");
        let names: Vec<&str> = b.keys().map(String::as_str).collect();
        assert_eq!(names, ["sigaction", "timer_create", "timer_settime"]);
        assert_eq!(
            b["timer_settime"].iter().next().unwrap(),
            "/tmp/lib/libutimer_posix.so"
        );
    }

    #[test]
    fn loader_and_proc_texts() {
        let lib = "/w/target/release/libutimer_posix.so";
        let files =
            format!("     7:\tcalling init: /lib/libc.so.6\n     7:\tcalling init: {lib}\n");
        assert!(initialised(&files, lib));
        assert!(!initialised("     7:\tcalling init: /lib/libc.so.6\n", lib));
        assert_eq!(
            not_preloaded(
                "ERROR: ld.so: object 'x.so' from LD_PRELOAD cannot be preloaded (x): ignored.\n"
            ),
            Some("object 'x.so' from LD_PRELOAD cannot be preloaded (x): ignored.")
        );
        assert_eq!(not_preloaded("fine\n"), None);
        let timers =
            "ID: 0\nsignal: 34/0000000000000000\nnotify: signal/pid.7\nClockID: 0\nID: 1\n";
        assert_eq!(kernel_timers(timers), 2);
        assert_eq!(kernel_timers(""), 0);
        let stat = "1234 (a (b) c) S 99 1234 1234 0 -1 4194560";
        assert_eq!(stat_ppid(stat), Some(99));
        assert_eq!(stat_ppid("garbage"), None);
    }

    #[test]
    fn program_versions() {
        assert_eq!(
            stress_ng_version("stress-ng, version 0.15.06 (gcc 12.2, x86_64 Linux 6.1.0) 💻🔥\n"),
            "0.15.06"
        );
        assert_eq!(stress_ng_version(""), "?");
        assert_eq!(
            cyclictest_version("cyclictest V 2.40\nUsage:\ncyclictest <options>\n"),
            "2.40"
        );
        assert_eq!(cyclictest_version("usage"), "?");
    }
}
