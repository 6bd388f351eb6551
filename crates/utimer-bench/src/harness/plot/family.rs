//! The charts across the cases of a group: the shares of one workload
//! ([`Chart::Shares`]), and the lines of a family of cases that differ only
//! in a thread or worker count ([`Chart::Scaling`]).

use super::case::{all_zero, file_name, value, Case};
use super::chart::{Chart, Shares};
use super::figure::{Figure, Shape};

/// `5.5%` or `<0.01%` as a number; `-` as none.
pub(super) fn parse_percent(s: &str) -> Option<f64> {
    s.trim()
        .trim_start_matches('<')
        .trim_end_matches('%')
        .parse()
        .ok()
}

/// Per workload (`simple/match` -> `simple`) of the cases declared
/// [`Chart::Shares`]: a bar per share and a series per row, beside the
/// rows' reference numbers.
pub(super) fn shares(group: &str, cases: &[&Case<'_>]) -> Vec<Figure> {
    // (workload, its words, its cases), in order of appearance.
    let mut workloads: Vec<(&str, Shares, Vec<&Case<'_>>)> = Vec::new();
    for c in cases {
        let (Chart::Shares(words), Some((w, _))) = (c.chart(), c.case.split_once('/')) else {
            continue;
        };
        match workloads.iter_mut().find(|x| x.0 == w) {
            Some(x) => x.2.push(c),
            None => workloads.push((w, words, vec![c])),
        }
    }
    let mut out = Vec::new();
    for (w, words, metrics) in workloads {
        let mut impls: Vec<&str> = Vec::new();
        for c in &metrics {
            for r in &c.rows {
                if !impls.contains(&r.impl_name.as_str()) {
                    impls.push(&r.impl_name);
                }
            }
        }
        let mut series = Vec::new();
        for name in impls {
            let measured: Vec<Option<f64>> = metrics
                .iter()
                .map(|c| c.row(name).and_then(value))
                .collect();
            let reported: Vec<Option<f64>> = metrics
                .iter()
                .map(|c| {
                    c.row(name)
                        .and_then(|r| r.reference.as_deref())
                        .and_then(parse_percent)
                })
                .collect();
            series.push((name.to_string(), measured));
            if reported.iter().any(Option::is_some) {
                series.push((format!("{name} ({})", words.reference), reported));
            }
        }
        out.push(Figure {
            file: file_name(&[group, w, "shares"]),
            title: format!("{group} / {w}: shares of {}", words.of),
            axis: words.axis.to_string(),
            allow_log: false,
            shape: Shape::Bars {
                rows: metrics
                    .iter()
                    .map(|c| c.case.split_once('/').map_or(c.case, |p| p.1).to_string())
                    .collect(),
                series,
            },
        });
    }
    out
}

/// `gettime_4_threads` -> (`gettime`, 4, `threads`); `warm/32_workers` ->
/// (`warm`, 32, `workers`); `1_thread` -> (``, 1, `threads`).
pub fn scaling_key(case: &str) -> Option<(&str, u64, &'static str)> {
    for (suffix, what) in [
        ("_threads", "threads"),
        ("_thread", "threads"),
        ("_workers", "workers"),
    ] {
        let Some(head) = case.strip_suffix(suffix) else {
            continue;
        };
        let digits = head.len() - head.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let (prefix, n) = head.split_at(head.len() - digits);
        if digits == 0 || !(prefix.is_empty() || prefix.ends_with(['_', '/'])) {
            continue;
        }
        let n = n.parse().ok()?;
        return Some((prefix.trim_end_matches(['_', '/']), n, what));
    }
    None
}

/// One line chart per family of the cases declared [`Chart::Scaling`] that
/// differ only in their thread or worker count, when the family has at
/// least two counts.
pub(super) fn lines(group: &str, cases: &[&Case<'_>]) -> Vec<Figure> {
    // (prefix, what) -> [(n, case)], in order of appearance.
    type Family<'a, 'r> = ((&'a str, &'static str), Vec<(u64, &'a Case<'r>)>);
    let mut families: Vec<Family<'_, '_>> = Vec::new();
    for c in cases.iter().filter(|c| c.chart() == Chart::Scaling) {
        let Some((prefix, n, what)) = scaling_key(c.case) else {
            continue;
        };
        match families.iter_mut().find(|f| f.0 == (prefix, what)) {
            Some(f) => f.1.push((n, c)),
            None => families.push(((prefix, what), vec![(n, c)])),
        }
    }
    let mut out = Vec::new();
    for ((prefix, what), mut members) in families {
        members.sort_by_key(|m| m.0);
        members.dedup_by_key(|m| m.0);
        if members.len() < 2 {
            continue;
        }
        let unit = members[0].1.unit();
        let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        for (n, c) in &members {
            for r in c.rows.iter().filter(|r| r.unit == unit) {
                let Some(v) = value(r) else { continue };
                match series.iter_mut().find(|s| s.0 == r.impl_name) {
                    Some(s) => s.1.push((*n as f64, v)),
                    None => series.push((r.impl_name.clone(), vec![(*n as f64, v)])),
                }
            }
        }
        if all_zero(series.iter().flat_map(|s| s.1.iter().map(|p| p.1))) {
            continue;
        }
        let family = if prefix.is_empty() {
            group.to_string()
        } else {
            format!("{group} / {prefix}")
        };
        out.push(Figure {
            file: file_name(&[group, prefix, &format!("vs-{what}")]),
            title: format!("{family}: {unit} vs {what}"),
            axis: members[0].1.axis(),
            allow_log: true,
            shape: Shape::Lines {
                x_axis: what.to_string(),
                series,
            },
        });
    }
    out
}
