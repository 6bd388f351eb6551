//! The results page's tests, on sample records.

use super::*;
use crate::plot::Chart;
use crate::GroupDoc;
use std::path::PathBuf;
use std::time::Duration;

fn timing(case: &str, name: &str, v: f64) -> Record {
    let mut r = Record::value("arm_cancel", case, name, "quick", v, "ns/op");
    (r.ns_per_op, r.samples, r.p10, r.p90) = (Some(v), 7, Some(v * 0.9), Some(v * 1.1));
    r
}

fn share(case: &str, name: &str, v: f64, reported: &str) -> Record {
    Record::value("rearm_shares", case, name, "quick", v, "%")
        .with_reference(reported)
        .charted(Chart::Bars)
}

fn log(name: &str, title: &'static str) -> GroupLog {
    GroupLog {
        name: name.to_string(),
        doc: GroupDoc {
            title,
            about: "What it measures.",
            look_for: "What to look for.",
        },
        about: format!("{name}: the terminal heading"),
        notes: vec![format!("a note of {name}")],
    }
}

fn page(records: &[Record], groups: &[GroupLog], charts: Option<Charts>) -> String {
    render(&Page {
        date: "2026-01-02".to_string(),
        mode: "quick",
        filter: Some("a"),
        banner: report::Banner {
            machine: "2 CPUs (nproc), Test CPU, Linux 6.0".to_string(),
            method: "median of 7 interleaved repetitions".to_string(),
        },
        seconds: 12.0,
        groups,
        records,
        charts,
    })
}

fn sample() -> (Vec<Record>, Vec<GroupLog>) {
    let records = vec![
        timing("empty", "utimer", 10.0),
        timing("empty", "Mutex<BinaryHeap>", 25.0),
        Record::skipped("arm_cancel", "empty", "POSIX timer", "quick", "n/a"),
        share("simple/match", "before", 3.1, "5.5%"),
        share("simple/match", "after", 83.3, "86.6%"),
        Record::value("other", "c", "x", "quick", 1.0, "B/timer"),
    ];
    let groups = vec![
        log("arm_cancel", "Arm and cancel"),
        log("rearm_shares", "Same-bucket shares"),
    ];
    (records, groups)
}

/// The lines of the table under heading `### `case``.
fn table_of<'a>(md: &'a str, case: &str) -> Vec<&'a str> {
    let start = md.find(&format!("### `{case}`")).expect("case heading");
    md[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect()
}

#[test]
fn headings_in_run_order() {
    let (records, groups) = sample();
    let md = page(&records, &groups, None);
    let at = |s: &str| md.find(s).unwrap_or_else(|| panic!("{s} missing"));
    assert!(md.starts_with("# utimer bench results\n"));
    assert!(md.contains("`ci/results.sh`") && md.contains("2026-01-02 (UTC)"));
    assert!(md.contains("Test CPU") && md.contains("`a`"));
    let order = [
        "## Method",
        "## The peers",
        "## Arm and cancel",
        "### `empty`",
        "## Same-bucket shares",
        "### `simple/match`",
        "## other",
    ];
    for w in order.windows(2) {
        assert!(at(w[0]) < at(w[1]), "{} after {}", w[0], w[1]);
    }
    assert!(md.contains("<a id=\"arm_cancel\"></a>"));
    assert!(md.contains("note: a note of rearm_shares"));
    assert!(!md.contains("## Charts"));
}

#[test]
fn table_rows_per_impl_with_terminal_numbers() {
    let (records, groups) = sample();
    let md = page(&records, &groups, None);
    let t = table_of(&md, "empty");
    assert_eq!(t.len(), 2 + 3, "{t:#?}");
    assert_eq!(
        t[0],
        "| implementation | median ns/op | p10 | p90 | vs utimer | note |"
    );
    assert_eq!(t[2], "| utimer | 10.0 | 9.00 | 11.0 | 1.00x |  |");
    assert_eq!(
        t[3],
        "| Mutex&lt;BinaryHeap&gt; | 25.0 | 22.5 | 27.5 | 2.50x |  |"
    );
    assert_eq!(t[4], "| POSIX timer | - | - | - | - | skipped: n/a |");
}

#[test]
fn reference_column_only_when_present() {
    let (records, groups) = sample();
    let md = page(&records, &groups, None);
    assert!(!table_of(&md, "empty")[0].contains("reference"));
    let t = table_of(&md, "simple/match");
    assert_eq!(t[0], "| implementation | % | reference (published) |");
    assert_eq!(t[2], "| before | 3.10 | 5.5% |");
    assert_eq!(t[3], "| after | 83.3 | 86.6% |");
}

#[test]
fn chart_links_are_relative() {
    let abs = |s: &str| PathBuf::from(s);
    assert_eq!(
        relative(&abs("/tmp"), &abs("/tmp/rplots")).unwrap(),
        "rplots"
    );
    assert_eq!(
        relative(Path::new("docs"), Path::new("docs/plots")).unwrap(),
        "plots"
    );
    let up = relative(Path::new("docs/./x/.."), Path::new("target/plots")).unwrap();
    assert_eq!(up, "../target/plots");
    assert_eq!(relative(&abs("/a/b"), &abs("/a")).unwrap(), "..");
    assert_eq!(relative(&abs("/a"), &abs("/a")).unwrap(), ".");
    let (records, groups) = sample();
    let figures = plot::group_figures(&records);
    assert!(!figures.is_empty());
    let dir = relative(Path::new("docs"), Path::new("docs/plots")).unwrap();
    let md = page(&records, &groups, Some(Charts { dir, figures }));
    let link = "[arm_cancel / empty](plots/arm_cancel--empty.svg)";
    let section = md.find("## Same-bucket shares").unwrap();
    let charts = md.find("## Charts").unwrap();
    assert!(md[..section].contains(&format!("Charts: {link}")), "{md}");
    assert!(md[charts..].contains(&format!("- {link}")));
    assert!(md[charts..].contains("(plots/index.html)"));
}

#[test]
fn utc_dates() {
    let at = |s: u64| utc_date(UNIX_EPOCH + Duration::from_secs(s));
    assert_eq!(at(0), "1970-01-01");
    assert_eq!(at(951_868_800), "2000-03-01");
    assert_eq!(at(1_709_164_800 + 86_399), "2024-02-29");
    assert_eq!(at(1_735_689_599), "2024-12-31");
}
