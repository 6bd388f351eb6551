//! Output of `utimer bench`: the machine banner, one table per case, and the
//! JSON file. The results page (`markdown.rs`) reuses the banner and the
//! tables' columns.
//!
//! Tables show, per case, one row per implementation: the median over the
//! repetitions, the 10th and 90th percentiles (nearest rank) and the ratio
//! to the utimer row of the same case (`2.00x` = twice utimer's value).
//! Each table's caption says whether lower or higher is better
//! ([`Better`], from the rows' unit unless a case says otherwise), and so
//! whether a ratio above 1.00x is worse or better than utimer. Rows that
//! could not be measured say why. Before the first table with rows named
//! for how the thread reaches its worker (`utimer (owner)`, `entered`), a
//! legend line explains the names.
//!
//! The JSON file is an object: `schema`, the run's [`RunMeta`] as `meta`,
//! and every [`Record`] as `results`, one per row, in run order.

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use crate::harness::meta::{JsonFile, Machine, RunMeta, JSON_SCHEMA};
use crate::harness::out::outln;
use crate::harness::plot::Chart;
use crate::harness::progress;
use crate::{Outcome, Runner};

/// Which way a row's value is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Lower is better: a time, a memory size, lateness, wake-ups.
    Lower,
    /// Higher is better: a throughput.
    Higher,
}

impl Better {
    /// The direction of values in `unit`: lower for times, sizes,
    /// allocations, lateness, cycles and wake-ups, higher for rates of
    /// work done; `None` for the units of counts, shares and ratios,
    /// which a case marks itself where one way is better.
    pub fn for_unit(unit: &str) -> Option<Better> {
        match unit {
            "ns/op" | "µs" | "cycles" | "ticks" | "B/timer" | "allocs/timer" | "allocs/op"
            | "B/future" | "wakeups/s" | "samples" | "early" => Some(Better::Lower),
            "Mcalls/s" | "Mops/s" | "kreq/s" => Some(Better::Higher),
            _ => None,
        }
    }

    /// `lower` or `higher`.
    pub fn word(self) -> &'static str {
        match self {
            Better::Lower => "lower",
            Better::Higher => "higher",
        }
    }
}

/// One row: a measured timing, a measured value, or a skip.
#[derive(Clone, Debug, Serialize)]
pub struct Record {
    pub group: String,
    pub case: String,
    #[serde(rename = "impl")]
    pub impl_name: String,
    /// Median nanoseconds per operation; `null` for non-timing rows and
    /// skipped rows.
    pub ns_per_op: Option<f64>,
    /// The headline number in `unit` (equals `ns_per_op` for timings).
    pub value: Option<f64>,
    pub unit: String,
    /// Number of samples (repetitions) the median is taken over.
    pub samples: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p10: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p90: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// Operations per sample (batch size, or timers per firing run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ops_per_sample: Option<u64>,
    /// For `rearm_shares`: the number the Linux patch reported for the same
    /// cell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// Why the row was not measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    /// `quick` or `full`.
    pub mode: String,
    /// Whether lower or higher is better (`lower`, `higher`); absent for
    /// a count or share to read as it is, and for skipped rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub better: Option<Better>,
    /// What `--plot` draws of the row's case, as the case was registered
    /// with the [`Runner`]; not in the JSON.
    #[serde(skip)]
    pub chart: Chart,
}

/// Nearest-rank percentile of sorted values.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

impl Record {
    /// A row of `values` (samples, any order) in `unit`: the median, with
    /// p10, p90 and min (nearest rank), or skipped with `err`, or with
    /// "no sample".
    pub(crate) fn distribution(
        group: &str,
        (case, name, mode): (&str, &str, &str),
        values: &[f64],
        unit: &str,
        err: Option<&str>,
    ) -> Record {
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let rank = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
        match (err, v.is_empty()) {
            (Some(why), _) => Record::skipped(group, case, name, mode, why),
            (None, true) => Record::skipped(group, case, name, mode, "no sample"),
            (None, false) => {
                let mut r = Record::value(group, case, name, mode, rank(0.5), unit);
                r.samples = v.len();
                r.p10 = Some(rank(0.1));
                r.p90 = Some(rank(0.9));
                r.min = Some(v[0]);
                r
            }
        }
    }

    fn base(group: &str, case: &str, impl_name: &str, unit: &str, mode: &str) -> Self {
        Record {
            group: group.to_string(),
            case: case.to_string(),
            impl_name: impl_name.to_string(),
            ns_per_op: None,
            value: None,
            unit: unit.to_string(),
            samples: 0,
            p10: None,
            p90: None,
            min: None,
            ops_per_sample: None,
            reference: None,
            skipped: None,
            mode: mode.to_string(),
            better: Better::for_unit(unit),
            chart: Chart::Bars,
        }
    }

    /// A timing row from the runner's samples.
    pub fn timing(group: &str, case: &str, impl_name: &str, mode: &str, o: Outcome) -> Self {
        let mut r = Record::base(group, case, impl_name, "ns/op", mode);
        match o {
            Outcome::Skipped(reason) => r.skipped = Some(reason),
            Outcome::Measured(samples) if samples.is_empty() => {
                r.skipped = Some("no samples".to_string())
            }
            Outcome::Measured(samples) => {
                let mut ns: Vec<f64> = samples.iter().map(|s| s.ns_per_op()).collect();
                ns.sort_by(f64::total_cmp);
                let m = median(&ns);
                r.ns_per_op = Some(m);
                r.value = Some(m);
                r.samples = ns.len();
                r.p10 = Some(percentile(&ns, 10.0));
                r.p90 = Some(percentile(&ns, 90.0));
                r.min = Some(ns[0]);
                r.ops_per_sample = samples.last().map(|s| s.ops);
            }
        }
        r
    }

    /// A non-timing row (bytes per timer, a percentage, ...).
    pub fn value(
        group: &str,
        case: &str,
        impl_name: &str,
        mode: &str,
        value: f64,
        unit: &str,
    ) -> Self {
        let mut r = Record::base(group, case, impl_name, unit, mode);
        r.value = Some(value);
        r.samples = 1;
        r
    }

    /// A row that was not measured.
    pub fn skipped(group: &str, case: &str, impl_name: &str, mode: &str, why: &str) -> Self {
        let mut r = Record::base(group, case, impl_name, "", mode);
        r.skipped = Some(why.to_string());
        r
    }

    /// The row, with `ops` operations per sample.
    pub fn with_ops(mut self, ops: u64) -> Self {
        self.ops_per_sample = Some(ops);
        self
    }

    /// The row, with the number a published experiment reported for it.
    pub fn with_reference(mut self, reference: &str) -> Self {
        self.reference = Some(reference.to_string());
        self
    }

    /// The row, with `better` instead of its unit's direction
    /// ([`Better::for_unit`]): for ratios and shares, where the case knows
    /// which way is better.
    pub fn with_better(mut self, better: Option<Better>) -> Self {
        self.better = better;
        self
    }

    /// The row, drawn as `chart` says.
    pub fn charted(mut self, chart: Chart) -> Self {
        self.chart = chart;
        self
    }
}

pub(crate) fn fmt_num(v: f64) -> String {
    if v != 0.0 && v.abs() < 0.01 {
        format!("{v:.1e}")
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// The machine and the method lines of the banner a run prints first, and
/// the results page repeats.
pub(crate) struct Banner {
    /// `2 CPUs (nproc), <CPU model>, Linux <release>`.
    pub(crate) machine: String,
    /// The repetitions and the batch target of this run.
    pub(crate) method: String,
}

/// What the ratio column means.
pub(crate) const RATIO_COLUMN: &str = "this row / the utimer row of the same case; \
     each table says whether lower or higher is better there, and so whether above \
     1.00x is worse or better than utimer";

/// The legend of the rows named for how the arming thread reaches its
/// worker, shown once, before the first table with such rows.
pub(crate) const LEGEND: &str = "`utimer (owner)`, `(owners)`, `owner`: the arming thread \
     is registered as the worker (`register_worker`, as a `Runtime`'s threads are), owns its \
     bases and takes their locks without an atomic read-modify-write; plain `utimer`, \
     `remote`, `entered`: the thread entered the worker (`sys.enter`) and takes the base's \
     spinlock; `utimer (pinned)`: the timer is on the worker's local base";

/// Whether `records` have rows that [`LEGEND`] explains.
pub(crate) fn needs_legend(records: &[Record]) -> bool {
    records.iter().any(|r| {
        let n = r.impl_name.as_str();
        n.contains("(owner") || n == "owner" || n.contains("entered") || n.contains("(pinned)")
    })
}

/// The caption of a case's table: whether lower or higher is better, and
/// what the ratio column means there; empty when no row has a value.
pub(crate) fn caption(records: &[Record]) -> String {
    let measured: Vec<&Record> = records
        .iter()
        .filter(|r| r.skipped.is_none() && r.value.is_some())
        .collect();
    let Some(first) = measured.first() else {
        return String::new();
    };
    let ratio = ratio_base(records).is_some();
    let same = measured.iter().all(|r| r.better == first.better);
    let mut text = match (same, first.better) {
        (true, Some(b)) => format!("{} is better", b.word()),
        (true, None) => "neither lower nor higher is better: counts or shares to read as \
                         they are"
            .to_string(),
        (false, _) => {
            let mut parts = Vec::new();
            for (b, label) in [
                (Some(Better::Lower), "lower is better for"),
                (Some(Better::Higher), "higher is better for"),
                (None, "to read as it is:"),
            ] {
                let names: Vec<String> = measured
                    .iter()
                    .filter(|r| r.better == b)
                    .map(|r| format!("`{}`", r.impl_name))
                    .collect();
                if !names.is_empty() {
                    parts.push(format!("{label} {}", names.join(", ")));
                }
            }
            parts.join("; ")
        }
    };
    if ratio {
        text.push_str("; vs utimer = this row / utimer's");
        match (same, first.better) {
            (true, Some(Better::Lower)) => text.push_str(", above 1.00x is worse than utimer"),
            (true, Some(Better::Higher)) => text.push_str(", above 1.00x is better than utimer"),
            _ => {}
        }
    }
    text
}

/// Describes the machine and the run's parameters.
pub(crate) fn banner(r: &Runner) -> Banner {
    Banner {
        machine: Machine::detect().describe(),
        method: format!(
            "median of {} interleaved repetitions; batches of >= {} ms; \
             warm-up = calibration; nothing pinned",
            r.reps,
            r.target.as_millis()
        ),
    }
}

/// Prints the machine description and the run's parameters.
pub(crate) fn print_machine(r: &Runner) {
    let b = banner(r);
    outln!("utimer bench ({} mode)", r.mode());
    outln!("machine: {}", b.machine);
    outln!("method: {}", b.method);
    outln!("ratio column: {RATIO_COLUMN}");
}

/// Prints a group heading.
pub(crate) fn print_group(group: &str, about: &str) {
    progress::clear();
    outln!("\n== {group} ==");
    for line in about.lines() {
        outln!("   {line}");
    }
}

/// Prints an explanation line.
pub(crate) fn print_note(group: &str, text: &str) {
    progress::clear();
    outln!("   [{group}] note: {text}");
    progress::redraw(false);
}

/// Prints one case's table, after the legend if the table is the first
/// to need it (`legend_shown` says whether one did before).
pub(crate) fn print_case(case: &str, records: &[Record], legend_shown: &mut bool) {
    progress::clear();
    if !*legend_shown && needs_legend(records) {
        *legend_shown = true;
        outln!("\n  legend: {LEGEND}");
    }
    write_case(case, records);
    progress::redraw(true);
}

/// The heading of a case's value column: `median ns/op` for repeated
/// timings, else the unit of its first measured row.
pub(crate) fn value_label(records: &[Record]) -> String {
    let unit = records
        .iter()
        .find(|r| r.skipped.is_none())
        .map(|r| r.unit.as_str())
        .unwrap_or("");
    if records.iter().any(|r| r.samples > 1) {
        format!("median {unit}")
    } else {
        unit.to_string()
    }
}

/// The value the ratio column divides by: the first utimer row's.
pub(crate) fn ratio_base(records: &[Record]) -> Option<f64> {
    records
        .iter()
        .find(|r| r.impl_name.starts_with("utimer") && r.value.is_some())
        .and_then(|r| r.value)
}

/// A row's ratio cell: `2.00x`, or `-` without a base.
pub(crate) fn fmt_ratio(value: f64, base: Option<f64>) -> String {
    match base {
        Some(b) if b > 0.0 => format!("{:.2}x", value / b),
        _ => "-".to_string(),
    }
}

/// A percentile cell: the number, or `-`.
pub(crate) fn fmt_opt(x: Option<f64>) -> String {
    x.map(fmt_num).unwrap_or_else(|| "-".into())
}

fn write_case(case: &str, records: &[Record]) {
    let label = value_label(records);
    let base = ratio_base(records);
    let width = records
        .iter()
        .map(|r| r.impl_name.len())
        .max()
        .unwrap_or(4)
        .max(18);
    let caption = caption(records);
    if caption.is_empty() {
        outln!("\n  {case}");
    } else {
        outln!("\n  {case}  ({caption})");
    }
    outln!(
        "    {:<width$} {:>14} {:>10} {:>10} {:>10}",
        "impl",
        label,
        "p10",
        "p90",
        "vs utimer",
    );
    for r in records {
        if let Some(why) = &r.skipped {
            outln!("    {:<width$} skipped: {why}", r.impl_name);
            continue;
        }
        let v = r.value.unwrap_or(f64::NAN);
        outln!(
            "    {:<width$} {:>14} {:>10} {:>10} {:>10}",
            r.impl_name,
            fmt_num(v),
            fmt_opt(r.p10),
            fmt_opt(r.p90),
            fmt_ratio(v, base),
        );
    }
}

/// Writes the run's [`JsonFile`], pretty-printed: `meta` and all records.
pub(crate) fn write_json(path: &Path, meta: &RunMeta, records: &[Record]) -> std::io::Result<()> {
    let file = std::fs::File::create(path)?;
    let mut w = std::io::BufWriter::new(file);
    let doc = JsonFile {
        schema: JSON_SCHEMA,
        meta,
        results: records,
    };
    serde_json::to_writer_pretty(&mut w, &doc).map_err(std::io::Error::other)?;
    writeln!(w)?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Sample;
    use std::time::Duration;

    #[test]
    fn median_and_percentiles() {
        let s: Vec<Sample> = [5u64, 1, 3, 2, 4]
            .iter()
            .map(|&ns| Sample {
                elapsed: Duration::from_nanos(ns * 10),
                ops: 10,
            })
            .collect();
        let r = Record::timing("g", "c", "i", "quick", Outcome::Measured(s));
        assert_eq!(r.ns_per_op, Some(3.0));
        assert_eq!(r.p10, Some(1.0));
        assert_eq!(r.p90, Some(5.0));
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.contains("\"impl\":\"i\""));
        assert!(json.contains("\"ns_per_op\":3.0"));
        assert!(json.contains("\"better\":\"lower\""));
    }

    #[test]
    fn directions_from_units_and_cases() {
        assert_eq!(Better::for_unit("ns/op"), Some(Better::Lower));
        assert_eq!(Better::for_unit("B/timer"), Some(Better::Lower));
        assert_eq!(Better::for_unit("Mops/s"), Some(Better::Higher));
        assert_eq!(Better::for_unit("%"), None);
        let r = Record::value("g", "c", "i", "full", 2.0, "x");
        assert_eq!(r.better, None);
        let json = serde_json::to_string(&r).unwrap();
        assert!(!json.contains("better"), "{json}");
        let r = r.with_better(Some(Better::Higher));
        assert!(serde_json::to_string(&r)
            .unwrap()
            .contains("\"better\":\"higher\""));
    }

    #[test]
    fn json_file_has_the_run_and_its_rows() {
        let opts = crate::Options {
            quick: true,
            filter: Some("wheel".to_string()),
            ..crate::Options::default()
        };
        let r = Runner::new(&opts);
        let tool = crate::ToolInfo {
            git_revision: "0123abc".to_string(),
            ..crate::ToolInfo::default()
        };
        let meta = r.meta(&tool);
        let rows = [Record::value("g", "c", "utimer", "quick", 1.0, "ns/op")];
        let path = std::env::temp_dir().join(format!("utimer-bench-json-{}", std::process::id()));
        write_json(&path, &meta, &rows).unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(v["schema"], 2);
        let m = &v["meta"];
        assert_eq!(m["tool"]["name"], "utimer");
        assert_eq!(m["tool"]["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(m["tool"]["git_revision"], "0123abc");
        assert_eq!(
            (&m["mode"], &m["filter"]),
            (&"quick".into(), &"wheel".into())
        );
        let date = m["date"].as_str().unwrap();
        assert!(
            date.len() == 20 && date.ends_with('Z') && &date[10..11] == "T",
            "{date}"
        );
        assert!(m["machine"]["cpu_model"]
            .as_str()
            .is_some_and(|s| !s.is_empty()));
        assert!(m["machine"]["cpus"].as_u64().unwrap() >= 1);
        assert!(m["machine"]["kernel"]
            .as_str()
            .is_some_and(|s| !s.is_empty()));
        assert_eq!(m["method"]["repetitions"], 7);
        assert_eq!(v["results"][0]["impl"], "utimer");
        assert_eq!(v["results"][0]["better"], "lower");
    }

    #[test]
    fn captions_and_legend() {
        let t = |name: &str, v: f64| Record::value("g", "c", name, "full", v, "ns/op");
        let c = caption(&[t("utimer", 1.0), t("heap", 2.0)]);
        assert_eq!(
            c,
            "lower is better; vs utimer = this row / utimer's, above 1.00x is worse than utimer"
        );
        assert_eq!(caption(&[t("heap", 2.0)]), "lower is better");
        let skipped = Record::skipped("g", "c", "posix", "full", "n/a");
        assert_eq!(caption(&[skipped]), "");
        assert!(!needs_legend(&[t("utimer", 1.0), t("heap", 2.0)]));
        assert!(needs_legend(&[t("utimer (owner)", 1.0)]));
        assert!(needs_legend(&[t(
            "no owner (both entered: the spinlock)",
            1.0
        )]));
    }
}
