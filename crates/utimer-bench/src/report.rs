//! Output of `utimer bench`: the machine banner, one table per case, and the
//! JSON file. The results page (`markdown.rs`) reuses the banner and the
//! tables' columns.
//!
//! Tables show, per case, one row per implementation: the median over the
//! repetitions, the 10th and 90th percentiles (nearest rank) and the ratio
//! to the utimer row of the same case (`2.00x` = takes twice as long as, or
//! uses twice the memory of, utimer). Rows that could not be measured say
//! why.
//!
//! The JSON file is an array of [`Record`]s, one per row, in run order.

use std::io::Write;
use std::path::Path;

use serde::Serialize;

use super::plot::Chart;
use super::{progress, Outcome, Runner};

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

    pub fn with_ops(mut self, ops: u64) -> Self {
        self.ops_per_sample = Some(ops);
        self
    }

    pub fn with_reference(mut self, reference: &str) -> Self {
        self.reference = Some(reference.to_string());
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
pub(crate) const RATIO_COLUMN: &str =
    "this row / the utimer row of the same case (lower is faster)";

/// Describes the machine and the run's parameters.
pub(crate) fn banner(r: &Runner) -> Banner {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, m)| m.trim().to_string())
        .unwrap_or_else(|| "unknown CPU".to_string());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".to_string());
    Banner {
        machine: format!("{cpus} CPUs (nproc), {model}, Linux {kernel}"),
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
    println!("utimer bench ({} mode)", r.mode());
    println!("machine: {}", b.machine);
    println!("method: {}", b.method);
    println!("ratio column: {RATIO_COLUMN}");
}

/// Prints a group heading.
pub(crate) fn print_group(group: &str, about: &str) {
    progress::clear();
    println!("\n== {group} ==");
    for line in about.lines() {
        println!("   {line}");
    }
}

/// Prints an explanation line.
pub(crate) fn print_note(group: &str, text: &str) {
    progress::clear();
    println!("   [{group}] note: {text}");
    progress::redraw(false);
}

/// Prints one case's table.
pub(crate) fn print_case(case: &str, records: &[Record]) {
    progress::clear();
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
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "\n  {case}");
    let _ = writeln!(
        out,
        "    {:<width$} {:>14} {:>10} {:>10} {:>10}",
        "impl", label, "p10", "p90", "vs utimer",
    );
    for r in records {
        if let Some(why) = &r.skipped {
            let _ = writeln!(out, "    {:<width$} skipped: {why}", r.impl_name);
            continue;
        }
        let v = r.value.unwrap_or(f64::NAN);
        let _ = writeln!(
            out,
            "    {:<width$} {:>14} {:>10} {:>10} {:>10}",
            r.impl_name,
            fmt_num(v),
            fmt_opt(r.p10),
            fmt_opt(r.p90),
            fmt_ratio(v, base),
        );
    }
}

/// Writes all records as a pretty-printed JSON array.
pub(crate) fn write_json(path: &Path, records: &[Record]) -> std::io::Result<()> {
    let file = std::fs::File::create(path)?;
    let mut w = std::io::BufWriter::new(file);
    serde_json::to_writer_pretty(&mut w, records).map_err(std::io::Error::other)?;
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
    }
}
