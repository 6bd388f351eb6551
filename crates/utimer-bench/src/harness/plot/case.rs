//! The charts of one case: its measured rows, drawn as bars or as
//! percentiles per implementation.

use super::chart::Chart;
use super::figure::{Figure, Shape};
use crate::Record;

/// The measured rows of one `group/case`.
pub(super) struct Case<'r> {
    pub(super) group: &'r str,
    pub(super) case: &'r str,
    pub(super) rows: Vec<&'r Record>,
}

/// The rows of `records` that have a value, by case, in run order.
pub(super) fn by_case(records: &[Record]) -> Vec<Case<'_>> {
    let mut cases: Vec<Case<'_>> = Vec::new();
    for r in records.iter().filter(|r| value(r).is_some()) {
        match cases
            .iter_mut()
            .find(|c| c.group == r.group && c.case == r.case)
        {
            Some(c) => c.rows.push(r),
            None => cases.push(Case {
                group: &r.group,
                case: &r.case,
                rows: vec![r],
            }),
        }
    }
    cases
}

/// A row's value, if it has one to draw.
pub(super) fn value(r: &Record) -> Option<f64> {
    r.value.filter(|v| v.is_finite() && r.skipped.is_none())
}

pub(super) fn all_zero(values: impl IntoIterator<Item = f64>) -> bool {
    values.into_iter().all(|v| v == 0.0)
}

/// A file name from the parts: letters, digits, `-`, `_` and `.` are kept,
/// anything else becomes `_`; parts are joined with `--`.
pub fn file_name(parts: &[&str]) -> String {
    let clean: Vec<String> = parts
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| {
            p.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                        c
                    } else {
                        '_'
                    }
                })
                .collect()
        })
        .collect();
    format!("{}.svg", clean.join("--"))
}

impl<'r> Case<'r> {
    /// What the case declared (its first row's declaration).
    pub(super) fn chart(&self) -> Chart {
        self.rows.first().map_or(Chart::Bars, |r| r.chart)
    }

    pub(super) fn unit(&self) -> &'r str {
        self.rows.first().map_or("", |r| r.unit.as_str())
    }

    /// `median ns/op` for repeated timings, else the unit.
    pub(super) fn axis(&self) -> String {
        if self.rows.iter().any(|r| r.samples > 1) {
            format!("median {}", self.unit())
        } else {
            self.unit().to_string()
        }
    }

    /// The row of implementation `name`.
    pub(super) fn row(&self, name: &str) -> Option<&'r Record> {
        self.rows.iter().find(|r| r.impl_name == name).copied()
    }

    /// One bar per row in the case's first unit.
    pub(super) fn bars(&self) -> Option<Figure> {
        let unit = self.unit();
        let rows: Vec<&Record> = self
            .rows
            .iter()
            .copied()
            .filter(|r| r.unit == unit)
            .collect();
        let values: Vec<Option<f64>> = rows.iter().map(|r| value(r)).collect();
        if rows.is_empty() || all_zero(values.iter().flatten().copied()) {
            return None;
        }
        Some(Figure {
            file: file_name(&[self.group, self.case]),
            title: format!("{} / {}", self.group, self.case),
            axis: self.axis(),
            allow_log: true,
            shape: Shape::Bars {
                rows: rows.iter().map(|r| r.impl_name.clone()).collect(),
                series: vec![(self.axis(), values)],
            },
        })
    }

    /// p50 and p99 per implementation from rows named `NAME p50`,
    /// `NAME p99`.
    pub(super) fn percentiles(&self) -> Option<Figure> {
        const STATS: [&str; 2] = ["p50", "p99"];
        let mut names: Vec<&str> = Vec::new();
        let mut cells: Vec<(&str, usize, f64)> = Vec::new();
        for r in &self.rows {
            let Some((name, stat)) = r.impl_name.rsplit_once(' ') else {
                continue;
            };
            let Some(k) = STATS.iter().position(|s| *s == stat) else {
                continue;
            };
            if !names.contains(&name) {
                names.push(name);
            }
            cells.extend(value(r).map(|v| (name, k, v)));
        }
        if names.is_empty() || all_zero(cells.iter().map(|c| c.2)) {
            return None;
        }
        let series = STATS
            .iter()
            .enumerate()
            .map(|(k, stat)| {
                let values = names
                    .iter()
                    .map(|n| cells.iter().find(|c| c.0 == *n && c.1 == k).map(|c| c.2))
                    .collect();
                (stat.to_string(), values)
            })
            .collect();
        Some(Figure {
            file: file_name(&[self.group, self.case]),
            title: format!("{} / {}: p50 and p99", self.group, self.case),
            axis: self.unit().to_string(),
            allow_log: true,
            shape: Shape::Bars {
                rows: names.iter().map(|n| n.to_string()).collect(),
                series,
            },
        })
    }
}
