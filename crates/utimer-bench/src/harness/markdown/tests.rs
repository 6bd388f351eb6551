//! The results page's tests, on sample records.

use super::*;
use crate::harness::plot::Chart;
use crate::{Better, GroupDoc};
use std::path::PathBuf;

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
        command: "utimer bench --markdown docs/results/test-cpu.md".to_string(),
        tool: &ToolInfo {
            name: "utimer".to_string(),
            version: "9.8.7".to_string(),
            git_revision: "0123abc".to_string(),
        },
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
        .skip(1)
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .collect()
}

/// The text between heading `### `case`` and its table.
fn caption_of<'a>(md: &'a str, case: &str) -> &'a str {
    let start = md.find(&format!("### `{case}`")).expect("case heading");
    let table = start + md[start..].find("\n|").expect("table");
    md[start..table]
        .split_once('\n')
        .map_or("", |(_, c)| c.trim())
}

#[test]
fn headings_in_run_order() {
    let (records, groups) = sample();
    let md = page(&records, &groups, None);
    let at = |s: &str| md.find(s).unwrap_or_else(|| panic!("{s} missing"));
    assert!(md.starts_with("# utimer bench results\n"));
    assert!(md.contains("`ci/results.sh`") && md.contains("2026-01-02 (UTC)"));
    assert!(md.contains("`utimer bench --markdown docs/results/test-cpu.md`"));
    assert!(md.contains("[the index](../results.md)"));
    assert!(md.contains("- **Tool:** utimer 9.8.7, git revision 0123abc\n"));
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
fn captions_say_which_way_is_better() {
    let (records, groups) = sample();
    let md = page(&records, &groups, None);
    assert_eq!(
        caption_of(&md, "empty"),
        "*Lower is better; vs utimer = this row / utimer's, above 1.00x is worse than utimer.*"
    );
    assert!(
        caption_of(&md, "simple/match").starts_with("*Neither lower nor higher is better"),
        "{md}"
    );
    let rate = |name: &str, v: f64| Record::value("g", "rate", name, "quick", v, "Mops/s");
    let ratio = |name: &str, b: Better| {
        Record::value("g", "ratio", name, "quick", 1.1, "x").with_better(Some(b))
    };
    let records = vec![
        rate("utimer-async", 2.0),
        rate("tokio", 1.0),
        ratio("throughput", Better::Higher),
        ratio("p99 latency", Better::Lower),
    ];
    let md = page(&records, &[], None);
    assert_eq!(
        caption_of(&md, "rate"),
        "*Higher is better; vs utimer = this row / utimer's, above 1.00x is better than utimer.*"
    );
    assert_eq!(
        caption_of(&md, "ratio"),
        "*Lower is better for `p99 latency`; higher is better for `throughput`.*"
    );
}

#[test]
fn legend_once_before_the_first_owner_table() {
    let records = vec![
        timing("empty", "utimer", 10.0),
        timing("empty", "BinaryHeap", 12.0),
        timing("owned", "utimer", 10.0),
        timing("owned", "utimer (owner)", 5.0),
        timing("shared", "owner", 10.0),
        timing("shared", "no owner (both entered: the spinlock)", 5.0),
    ];
    let md = page(&records, &[], None);
    assert_eq!(md.matches("**Row names.**").count(), 1, "{md}");
    let legend = md.find("**Row names.**").unwrap();
    assert!(md.find("### `owned`").unwrap() < legend);
    assert!(legend < md.find("### `shared`").unwrap());
    assert!(md[legend..].contains("`sys.enter`") && md[legend..].contains("`register_worker`"));
}
