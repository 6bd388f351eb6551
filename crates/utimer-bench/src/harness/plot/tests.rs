use super::axis::Axis;
use super::family::parse_percent;
use super::*;
use crate::groups::rearm_shares::SHARES;

/// A value row of `group/case`, declared as `chart`.
fn rec(group: &str, case: &str, name: &str, v: f64, unit: &str, chart: Chart) -> Record {
    Record::value(group, case, name, "quick", v, unit).charted(chart)
}

/// Synthetic records in the shapes the suite produces, declared as their
/// cases declare them.
fn records() -> Vec<Record> {
    use Chart::{Bars, Percentiles, Scaling};
    let arm = |name: &str, v| rec("arm_cancel", "empty", name, v, "ns/op", Bars);
    let late = |name: &str, v| rec("latency", "1ms", name, v, "µs", Percentiles);
    let share = |case: &str, name: &str, v, reported: &str| {
        rec("rearm_shares", case, name, v, "%", SHARES).with_reference(reported)
    };
    let per_modify = "simple/ns_per_modify";
    let modify = |name: &str, v| rec("rearm_shares", per_modify, name, v, "ns/op", Bars);
    let lookup = |threads: u32, name: &str, v| {
        let case = format!("gettime_{threads}_threads");
        rec("posix-lookup", &case, name, v, "Mcalls/s", Scaling)
    };
    vec![
        arm("utimer", 22.5),
        arm("Mutex<BinaryHeap>", 30.0),
        arm("timerfd", 4800.0),
        Record::skipped("arm_cancel", "empty", "POSIX timer", "quick", "n/a"),
        late("utimer p50", 600.0),
        late("utimer p99", 1000.0),
        late("utimer max", 1200.0),
        late("timerfd p50", 37.0),
        late("timerfd p99", 86.0),
        rec(
            "latency",
            "idle/no_timers",
            "utimer Runtime",
            0.0,
            "wakeups/s",
            Bars,
        ),
        share("simple/match", "before", 3.1, "5.5%"),
        share("simple/match", "after", 83.3, "86.6%"),
        share("simple/recalc", "before", 0.0, "-"),
        share("simple/recalc", "after", 0.0, "<0.01%"),
        modify("before", 30.2),
        modify("after", 26.7),
        lookup(1, "utimer timer_gettime", 16.8),
        lookup(1, "global lock", 13.8),
        lookup(2, "utimer timer_gettime", 32.0),
        lookup(2, "global lock", 8.2),
        lookup(16, "utimer timer_gettime", 35.2),
        lookup(16, "global lock", 0.6),
        rec(
            "posix-lookup",
            "scaling_2T_over_1T",
            "utimer timer_gettime",
            1.9,
            "x",
            Bars,
        ),
    ]
}

fn files(figures: &[Figure]) -> Vec<&str> {
    figures.iter().map(|c| c.file.as_str()).collect()
}

/// Tags open and close in order: a small well-formedness check.
fn assert_well_formed(xml: &str) {
    let mut stack: Vec<&str> = Vec::new();
    let mut rest = xml;
    while let Some(open) = rest.find('<') {
        let close = rest[open..].find('>').expect("unclosed tag") + open;
        let tag = &rest[open + 1..close];
        rest = &rest[close + 1..];
        if tag.starts_with('?') || tag.starts_with('!') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop(), Some(name.trim()), "mismatched </{name}>");
        } else if !tag.ends_with('/') {
            let name = tag.split_whitespace().next().expect("empty tag");
            stack.push(name);
        }
    }
    assert!(stack.is_empty(), "unclosed elements: {stack:?}");
}

#[test]
fn file_names_and_scaling_keys() {
    assert_eq!(file_name(&["expiry", "100K due"]), "expiry--100K_due.svg");
    assert_eq!(
        file_name(&["delete_sync", "warm/4_workers"]),
        "delete_sync--warm_4_workers.svg"
    );
    assert_eq!(
        scaling_key("gettime_16_threads"),
        Some(("gettime", 16, "threads"))
    );
    assert_eq!(
        scaling_key("warm/32_workers"),
        Some(("warm", 32, "workers"))
    );
    assert_eq!(scaling_key("1_thread"), Some(("", 1, "threads")));
    assert_eq!(
        scaling_key("enqueue_dequeue_8_workers"),
        Some(("enqueue_dequeue", 8, "workers"))
    );
    assert_eq!(scaling_key("scaling_2T_over_1T"), None);
    assert_eq!(scaling_key("x8_threads"), None);
    assert_eq!(parse_percent("<0.01%"), Some(0.01));
    assert_eq!(parse_percent("-"), None);
}

#[test]
fn chooses_charts() {
    let figures = figures(&records());
    assert_eq!(
        files(&figures),
        [
            "arm_cancel--empty.svg",
            "latency--1ms.svg",
            "rearm_shares--simple_ns_per_modify.svg",
            "rearm_shares--simple--shares.svg",
            "posix-lookup--gettime_1_threads.svg",
            "posix-lookup--gettime_2_threads.svg",
            "posix-lookup--gettime_16_threads.svg",
            "posix-lookup--scaling_2T_over_1T.svg",
            "posix-lookup--gettime--vs-threads.svg",
        ]
    );
    // Skipped rows are left out; the latency chart has p50 and p99.
    let Shape::Bars { rows, .. } = &figures[0].shape else {
        panic!("bars")
    };
    assert_eq!(rows, &["utimer", "Mutex<BinaryHeap>", "timerfd"]);
    let Shape::Bars { rows, series } = &figures[1].shape else {
        panic!("bars")
    };
    assert_eq!(rows, &["utimer", "timerfd"]);
    assert_eq!(
        series[1],
        ("p99".to_string(), vec![Some(1000.0), Some(86.0)])
    );
    let shares = &figures[3];
    assert_eq!(
        shares.title,
        "rearm_shares / simple: shares of re-arms of pending timers"
    );
    assert_eq!(
        (shares.axis.as_str(), shares.allow_log),
        ("% of re-arms", false)
    );
    let Shape::Bars { rows, series } = &shares.shape else {
        panic!("bars")
    };
    assert_eq!(rows, &["match", "recalc"]);
    let names: Vec<&str> = series.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "before",
            "before (Linux patch)",
            "after",
            "after (Linux patch)"
        ]
    );
    assert_eq!(series[1].1, vec![Some(5.5), None]);
    let Shape::Lines { series, .. } = &figures[8].shape else {
        panic!("lines")
    };
    assert_eq!(series[1].1, vec![(1.0, 13.8), (2.0, 8.2), (16.0, 0.6)]);
}

/// The charts follow the declarations, not the group names.
#[test]
fn the_declaration_decides() {
    let renamed: Vec<Record> = records()
        .into_iter()
        .map(|mut r| {
            r.group = format!("other-{}", r.group);
            r
        })
        .collect();
    let expected: Vec<String> = figures(&records())
        .iter()
        .map(|c| format!("other-{}", c.file))
        .collect();
    assert_eq!(files(&figures(&renamed)), expected);
    // Declared as plain bars: no line across the thread counts, and the
    // latency statistics are one bar each.
    let bars: Vec<Record> = records()
        .into_iter()
        .filter(|r| r.group != "rearm_shares")
        .map(|r| r.charted(Chart::Bars))
        .collect();
    let figures = figures(&bars);
    assert!(!files(&figures).iter().any(|f| f.contains("--vs-")));
    let Shape::Bars { rows, series } = &figures[1].shape else {
        panic!("bars")
    };
    assert_eq!(rows.len(), 5);
    assert_eq!(series.len(), 1);
}

#[test]
fn axes() {
    let lin = Axis::for_values([3.0, 83.3], 0.0, true);
    assert!(!lin.log);
    assert_eq!(lin.ticks.first(), Some(&0.0));
    assert!(*lin.ticks.last().unwrap() >= 83.3);
    assert!(!Axis::for_values([0.01, 86.6], 0.0, false).log);
    let log = Axis::for_values([0.0, 22.5, 4800.0], 0.0, true);
    assert!(log.log);
    assert_eq!(log.ticks, [1.0, 2.0, 3.0, 4.0]);
    assert_eq!(log.map(0.0), 1.0);
    assert_eq!(log.label(3.0), "1000");
}

#[test]
fn writes_well_formed_svg_and_index() {
    let dir = std::env::temp_dir().join(format!("utimer-plot-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let files = write_all(&dir, &records()).unwrap();
    assert_eq!(files.len(), 9);
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    for f in &files {
        let svg = std::fs::read_to_string(f).unwrap();
        assert!(svg.starts_with("<svg"), "{}: {}", f.display(), &svg[..40]);
        assert!(svg.trim_end().ends_with("</svg>"), "{}", f.display());
        assert_well_formed(&svg);
    }
    let bars = read("arm_cancel--empty.svg");
    for name in [
        "utimer",
        "Mutex&lt;BinaryHeap&gt;",
        "timerfd",
        "arm_cancel / empty",
    ] {
        assert!(bars.contains(name), "{name} missing");
    }
    assert!(!bars.contains("POSIX timer"));
    let lat = read("latency--1ms.svg");
    assert!(lat.contains("\np50\n") && lat.contains("\np99\n"), "{lat}");
    let shares = read("rearm_shares--simple--shares.svg");
    assert!(shares.contains("after (Linux patch)"));
    let lines = read("posix-lookup--gettime--vs-threads.svg");
    for name in ["utimer timer_gettime", "global lock", "threads"] {
        assert!(lines.contains(name), "{name} missing");
    }
    let index = read("index.html");
    assert_well_formed(
        &index
            .replace("<!DOCTYPE html>", "")
            .replace("<meta charset=\"utf-8\">", ""),
    );
    for f in &files {
        let name = f.file_name().unwrap().to_str().unwrap();
        assert!(
            index.contains(&format!("src=\"{name}\"")),
            "{name} not in index"
        );
    }
    if std::env::var_os("UTIMER_KEEP_PLOTS").is_none() {
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
