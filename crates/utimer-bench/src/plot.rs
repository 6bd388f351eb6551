//! SVG charts of a run: `utimer bench --plot DIR`.
//!
//! The charts are drawn from the same [`Record`]s the JSON file holds:
//!
//! * **one bar chart per case** (`group/case`): utimer beside its peers,
//!   one horizontal bar per implementation (utimer's bars in blue, the
//!   peers' in grey), the median with its value written at the bar's end;
//! * **latency distributions** (the `latency` and `seed003-latency`
//!   groups): p50 and p99 side by side per implementation, one chart per
//!   case;
//! * **seed 002**: per workload, the shares of re-arms (match, requeue,
//!   recalc) before and after, next to the numbers the Linux patch reported;
//! * **scaling lines**: cases named `..._N_threads` or `..._N_workers`
//!   (`threads`, seed 000, seed 003's lookup throughput, seed 004) also give
//!   one line chart per group and case family, the value against N.
//!
//! A value axis turns logarithmic (base 10) when the largest positive value
//! is more than 100 times the smallest. Skipped rows and rows without a
//! value are left out; a chart whose values are all zero is not drawn.
//!
//! Only plotters' SVG backend is used: text goes into the file as `<text>`
//! elements for the browser to render (plotters' built-in size estimate
//! lays it out), so no font file and no system font library is needed.
//! `DIR/index.html` shows every chart, in run order.

use std::error::Error;
use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::report::fmt_num;
use crate::Record;

/// Groups whose rows are `NAME p50`, `NAME p99`, ... latency statistics
/// (in `async`, only `lateness`: its other cases fall back to bars).
const LATENCY_GROUPS: &[&str] = &["latency", "seed003-latency", "async"];

/// One chart, before it is drawn.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// The file name: group and case sanitized, ending in `.svg`.
    pub file: String,
    pub title: String,
    /// What the value axis shows, e.g. `median ns/op`.
    pub axis: String,
    /// Whether the value axis may turn logarithmic (not for shares).
    pub allow_log: bool,
    pub kind: Kind,
}

/// The shape of a chart.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// Horizontal bars: one row per label (top to bottom), and in each row
    /// one bar per series (`None`: no bar).
    Bars {
        rows: Vec<String>,
        series: Vec<(String, Vec<Option<f64>>)>,
    },
    /// Lines: one per series, points `(n, value)` sorted by `n`; `x_axis`
    /// names `n` (threads, workers).
    Lines {
        x_axis: String,
        series: Vec<(String, Vec<(f64, f64)>)>,
    },
}

/// Draws every chart of `records` into `dir` (created if missing) plus
/// `dir/index.html`; returns the chart files written, in run order.
pub fn write_all(dir: &Path, records: &[Record]) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let charts = charts(records);
    let mut files = Vec::with_capacity(charts.len());
    for chart in &charts {
        let svg = render(chart).map_err(|e| io::Error::other(format!("{}: {e}", chart.file)))?;
        let path = dir.join(&chart.file);
        std::fs::write(&path, svg)?;
        files.push(path);
    }
    std::fs::write(dir.join("index.html"), index_html(&charts))?;
    Ok(files)
}

/// The charts `records` give, in run order (each group's case charts, then
/// its per-group charts), with unique file names.
pub fn charts(records: &[Record]) -> Vec<Chart> {
    let cases = by_case(records);
    let mut out = Vec::new();
    let mut groups: Vec<&str> = Vec::new();
    for c in &cases {
        if !groups.contains(&c.group) {
            groups.push(c.group);
        }
    }
    for group in groups {
        let in_group: Vec<&Case<'_>> = cases.iter().filter(|c| c.group == group).collect();
        for case in &in_group {
            let chart = if LATENCY_GROUPS.contains(&group) {
                latency_chart(case).or_else(|| bar_chart(case))
            } else if group == "seed002" && case.unit() == "%" {
                None // drawn per workload below
            } else {
                bar_chart(case)
            };
            out.extend(chart);
        }
        if group == "seed002" {
            out.extend(seed002_charts(&in_group));
        }
        out.extend(line_charts(group, &in_group));
    }
    // Unique file names (sanitizing may map two cases to one name).
    let mut seen: Vec<String> = Vec::new();
    for chart in &mut out {
        let stem = chart.file.trim_end_matches(".svg").to_string();
        let mut k = 1;
        while seen.contains(&chart.file) {
            k += 1;
            chart.file = format!("{stem}-{k}.svg");
        }
        seen.push(chart.file.clone());
    }
    out
}

/// The measured rows of one `group/case`.
struct Case<'r> {
    group: &'r str,
    case: &'r str,
    rows: Vec<&'r Record>,
}

impl Case<'_> {
    fn unit(&self) -> &str {
        self.rows.first().map_or("", |r| r.unit.as_str())
    }

    /// `median ns/op` for repeated timings, else the unit.
    fn axis(&self) -> String {
        if self.rows.iter().any(|r| r.samples > 1) {
            format!("median {}", self.unit())
        } else {
            self.unit().to_string()
        }
    }
}

fn value(r: &Record) -> Option<f64> {
    r.value.filter(|v| v.is_finite() && r.skipped.is_none())
}

fn by_case(records: &[Record]) -> Vec<Case<'_>> {
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

fn all_zero(values: impl IntoIterator<Item = f64>) -> bool {
    values.into_iter().all(|v| v == 0.0)
}

fn bar_chart(case: &Case<'_>) -> Option<Chart> {
    let unit = case.unit();
    let rows: Vec<&Record> = case
        .rows
        .iter()
        .copied()
        .filter(|r| r.unit == unit)
        .collect();
    let values: Vec<Option<f64>> = rows.iter().map(|r| value(r)).collect();
    if rows.is_empty() || all_zero(values.iter().flatten().copied()) {
        return None;
    }
    Some(Chart {
        file: file_name(&[case.group, case.case]),
        title: format!("{} / {}", case.group, case.case),
        axis: case.axis(),
        allow_log: true,
        kind: Kind::Bars {
            rows: rows.iter().map(|r| r.impl_name.clone()).collect(),
            series: vec![(case.axis(), values)],
        },
    })
}

/// p50 and p99 per implementation from rows named `NAME p50`, `NAME p99`.
fn latency_chart(case: &Case<'_>) -> Option<Chart> {
    const STATS: [&str; 2] = ["p50", "p99"];
    let mut names: Vec<&str> = Vec::new();
    let mut cells: Vec<(&str, usize, f64)> = Vec::new();
    for r in &case.rows {
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
    Some(Chart {
        file: file_name(&[case.group, case.case]),
        title: format!("{} / {}: p50 and p99", case.group, case.case),
        axis: case.unit().to_string(),
        allow_log: true,
        kind: Kind::Bars {
            rows: names.iter().map(|n| n.to_string()).collect(),
            series,
        },
    })
}

/// `5.5%` or `<0.01%` as a number; `-` as none.
fn parse_percent(s: &str) -> Option<f64> {
    s.trim()
        .trim_start_matches('<')
        .trim_end_matches('%')
        .parse()
        .ok()
}

/// Seed 002: per workload (`simple/match` -> `simple`), the shares before
/// and after beside the patch's reported numbers.
fn seed002_charts(cases: &[&Case<'_>]) -> Vec<Chart> {
    let mut workloads: Vec<&str> = Vec::new();
    for c in cases.iter().filter(|c| c.unit() == "%") {
        if let Some((w, _)) = c.case.split_once('/') {
            if !workloads.contains(&w) {
                workloads.push(w);
            }
        }
    }
    let mut out = Vec::new();
    for w in workloads {
        let metrics: Vec<&Case<'_>> = cases
            .iter()
            .copied()
            .filter(|c| c.unit() == "%" && c.case.split_once('/').map(|p| p.0) == Some(w))
            .collect();
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
            fn row<'r>(c: &Case<'r>, name: &str) -> Option<&'r Record> {
                c.rows.iter().find(|r| r.impl_name == name).copied()
            }
            let measured: Vec<Option<f64>> = metrics
                .iter()
                .map(|c| row(c, name).and_then(value))
                .collect();
            let reported: Vec<Option<f64>> = metrics
                .iter()
                .map(|c| {
                    row(c, name)
                        .and_then(|r| r.reference.as_deref())
                        .and_then(parse_percent)
                })
                .collect();
            series.push((name.to_string(), measured));
            if reported.iter().any(Option::is_some) {
                series.push((format!("{name} (Linux patch)"), reported));
            }
        }
        out.push(Chart {
            file: file_name(&["seed002", w, "shares"]),
            title: format!("seed002 / {w}: shares of re-arms of pending timers"),
            axis: "% of re-arms".to_string(),
            allow_log: false,
            kind: Kind::Bars {
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

/// One line chart per family of cases that differ only in their thread or
/// worker count, when the family has at least two counts.
fn line_charts(group: &str, cases: &[&Case<'_>]) -> Vec<Chart> {
    // (prefix, what) -> [(n, case)], in order of appearance.
    type Family<'a, 'r> = ((&'a str, &'static str), Vec<(u64, &'a Case<'r>)>);
    let mut families: Vec<Family<'_, '_>> = Vec::new();
    for c in cases {
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
        out.push(Chart {
            file: file_name(&[group, prefix, &format!("vs-{what}")]),
            title: format!("{family}: {unit} vs {what}"),
            axis: members[0].1.axis(),
            allow_log: true,
            kind: Kind::Lines {
                x_axis: what.to_string(),
                series,
            },
        });
    }
    out
}

/// A value axis: linear from zero, or base-10 logarithmic; values are drawn
/// at [`Axis::map`] of themselves.
struct Axis {
    log: bool,
    /// The drawn range, in mapped units.
    lo: f64,
    hi: f64,
    /// Labelled ticks, in mapped units.
    ticks: Vec<f64>,
}

/// 1, 2, 2.5 or 5 times a power of ten, at least `x`.
fn nice_step(x: f64) -> f64 {
    let p = 10f64.powf(x.log10().floor());
    let m = x / p;
    p * if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 2.5 {
        2.5
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    }
}

impl Axis {
    /// The axis for `values`; `room` is the share of the range added past
    /// the last tick (for the value labels at the bars' ends).
    fn for_values(values: impl IntoIterator<Item = f64>, room: f64, allow_log: bool) -> Axis {
        let values: Vec<f64> = values.into_iter().filter(|v| v.is_finite()).collect();
        let max = values.iter().copied().fold(0.0, f64::max);
        let min_pos = values
            .iter()
            .copied()
            .filter(|v| *v > 0.0)
            .fold(f64::INFINITY, f64::min);
        if allow_log && max > 0.0 && max / min_pos > 100.0 {
            let lo = min_pos.log10().floor();
            let hi = max.log10().ceil().max(lo + 1.0);
            let ticks = (lo as i32..=hi as i32).map(f64::from).collect();
            return Axis {
                log: true,
                lo,
                hi: hi + (hi - lo) * room,
                ticks,
            };
        }
        let top = if max > 0.0 { max * 1.02 } else { 1.0 };
        let step = nice_step(top / 5.0);
        let last = (top / step).ceil() * step;
        let ticks = (0..=(last / step).round() as usize)
            .map(|k| k as f64 * step)
            .collect();
        Axis {
            log: false,
            lo: 0.0,
            hi: last * (1.0 + room),
            ticks,
        }
    }

    /// Where `v` is drawn (zero and below sit at the left end of a log axis).
    fn map(&self, v: f64) -> f64 {
        if self.log {
            if v > 0.0 {
                v.log10().max(self.lo)
            } else {
                self.lo
            }
        } else {
            v
        }
    }

    fn label(&self, t: f64) -> String {
        if t == 0.0 && !self.log {
            "0".to_string()
        } else if self.log {
            let v = 10f64.powf(t.round());
            if v >= 1e6 {
                format!("{v:.0e}")
            } else if v >= 1.0 {
                format!("{v:.0}")
            } else {
                fmt_num(v)
            }
        } else {
            fmt_num(t)
        }
    }

    fn describe(&self, what: &str) -> String {
        if self.log {
            format!("{what} (log scale)")
        } else {
            what.to_string()
        }
    }
}

/// A linear coordinate over `lo..hi` whose labelled ticks are given (the
/// axes above map log scales to it themselves).
#[derive(Clone, Debug)]
struct Ticked {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let share = (v - self.lo) / (self.hi - self.lo);
        limit.0 + (share * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

fn ticked(lo: f64, hi: f64, ticks: Vec<f64>) -> Ticked {
    Ticked { lo, hi, ticks }
}

const WIDTH: u32 = 900;

/// The share of an axis' drawn range to add past its end so that a legend
/// of `names` fits to the right of the data in a plot `plot_px` wide.
fn room_for_legend(names: &[&str], plot_px: u32) -> f64 {
    let longest = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    let legend_px = (longest * 8 + 70) as f64;
    let share = (legend_px / f64::from(plot_px.max(1))).min(0.6);
    share / (1.0 - share)
}
const FONT: &str = "sans-serif";
/// Tableau's ten colours: the series of multi-series charts.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];
const PEER_GREY: RGBColor = RGBColor(165, 165, 165);

type DrawResult = Result<(), Box<dyn Error>>;

/// Draws `chart` as an SVG document.
pub fn render(chart: &Chart) -> Result<String, Box<dyn Error>> {
    let mut svg = String::new();
    match &chart.kind {
        Kind::Bars { rows, series } => {
            let bars = rows.len() * series.len();
            let height = (110 + bars * 20 + rows.len() * 10).max(220) as u32;
            let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
            draw_bars(&root, chart, rows, series)?;
            root.present()?;
        }
        Kind::Lines { x_axis, series } => {
            let root = SVGBackend::with_string(&mut svg, (WIDTH, 480)).into_drawing_area();
            draw_lines(&root, chart, x_axis, series)?;
            root.present()?;
        }
    }
    Ok(svg)
}

fn draw_bars(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    chart: &Chart,
    rows: &[String],
    series: &[(String, Vec<Option<f64>>)],
) -> DrawResult {
    root.fill(&WHITE)?;
    let n = rows.len() as f64;
    let centers: Vec<f64> = (0..rows.len()).map(|i| n - i as f64 - 0.5).collect();
    let longest = rows.iter().map(|r| r.chars().count()).max().unwrap_or(4);
    let label_width = (longest as u32 * 8 + 20).clamp(80, 400);
    // Room right of the last tick: for the values written at the bars'
    // ends, and for the legend of a multi-series chart, which sits there.
    let room = if series.len() == 1 {
        0.12
    } else {
        let names: Vec<&str> = series.iter().map(|s| s.0.as_str()).collect();
        room_for_legend(&names, WIDTH - 28 - label_width)
    };
    let x = Axis::for_values(
        series.iter().flat_map(|s| s.1.iter().flatten().copied()),
        room,
        chart.allow_log,
    );
    let mut ctx = ChartBuilder::on(root)
        .caption(&chart.title, (FONT, 22))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(label_width)
        .build_cartesian_2d(ticked(x.lo, x.hi, x.ticks.clone()), ticked(0.0, n, centers))?;
    let row_label = |y: &f64| {
        let i = (n - y - 0.5).round();
        if i >= 0.0 && (i as usize) < rows.len() {
            rows[i as usize].clone()
        } else {
            String::new()
        }
    };
    let x_label = |t: &f64| x.label(*t);
    ctx.configure_mesh()
        .disable_y_mesh()
        .x_desc(x.describe(&chart.axis))
        .x_label_formatter(&x_label)
        .y_label_formatter(&row_label)
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 16))
        .draw()?;
    let m = series.len() as f64;
    let band = 0.8 / m;
    let single = series.len() == 1;
    for (j, (name, values)) in series.iter().enumerate() {
        let mut bars = Vec::new();
        for (i, v) in values.iter().enumerate() {
            let Some(v) = *v else { continue };
            let top = n - i as f64 - 0.1 - j as f64 * band;
            let bottom = top - band * 0.9;
            let color = if !single {
                PALETTE[j % PALETTE.len()]
            } else if rows[i].starts_with("utimer") {
                PALETTE[0]
            } else {
                PEER_GREY
            };
            bars.push((v, top, bottom, color));
        }
        let drawn = ctx.draw_series(bars.iter().map(|&(v, top, bottom, color)| {
            Rectangle::new([(x.lo, bottom), (x.map(v), top)], color.filled())
        }))?;
        if !single {
            let color = PALETTE[j % PALETTE.len()];
            drawn.label(name.as_str()).legend(move |(px, py)| {
                Rectangle::new([(px, py - 5), (px + 12, py + 5)], color.filled())
            });
        }
        ctx.draw_series(bars.iter().map(|&(v, top, bottom, _)| {
            EmptyElement::at((x.map(v), (top + bottom) / 2.0))
                + Text::new(
                    fmt_num(v),
                    (4, 0),
                    (FONT, 13)
                        .into_font()
                        .color(&BLACK)
                        .pos(Pos::new(HPos::Left, VPos::Center)),
                )
        }))?;
    }
    if !single {
        draw_legend(&mut ctx)?;
    }
    Ok(())
}

fn draw_lines(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    chart: &Chart,
    x_axis: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> DrawResult {
    root.fill(&WHITE)?;
    let y = Axis::for_values(
        series.iter().flat_map(|s| s.1.iter().map(|p| p.1)),
        0.05,
        chart.allow_log,
    );
    // Thread and worker counts are mostly powers of two: a log2 axis when
    // they span 8x or more; ticks at the counts measured.
    let mut counts: Vec<f64> = series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| p.0))
        .collect();
    counts.sort_by(f64::total_cmp);
    counts.dedup();
    let (min, max) = (counts[0], counts[counts.len() - 1]);
    let log2 = min > 0.0 && max / min >= 8.0;
    let xmap = |n: f64| if log2 { n.log2() } else { n };
    let pad = ((xmap(max) - xmap(min)) * 0.05).max(0.5);
    let xticks: Vec<f64> = counts.iter().map(|&c| xmap(c)).collect();
    // The legend sits right of the last count.
    let names: Vec<&str> = series.iter().map(|s| s.0.as_str()).collect();
    let room = room_for_legend(&names, WIDTH - 28 - 70);
    let (lo, hi) = (xmap(min) - pad, xmap(max) + pad);
    let mut ctx = ChartBuilder::on(root)
        .caption(&chart.title, (FONT, 22))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(
            ticked(lo, hi + (hi - lo) * room, xticks),
            ticked(y.lo, y.hi, y.ticks.clone()),
        )?;
    let x_label = |t: &f64| {
        let n = if log2 { t.exp2() } else { *t };
        format!("{}", n.round())
    };
    let y_label = |t: &f64| y.label(*t);
    let x_desc = if log2 {
        format!("{x_axis} (log scale)")
    } else {
        x_axis.to_string()
    };
    ctx.configure_mesh()
        .x_desc(x_desc)
        .y_desc(y.describe(&chart.axis))
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 16))
        .draw()?;
    for (j, (name, points)) in series.iter().enumerate() {
        let color = PALETTE[j % PALETTE.len()];
        let mapped: Vec<(f64, f64)> = points.iter().map(|&(n, v)| (xmap(n), y.map(v))).collect();
        ctx.draw_series(LineSeries::new(
            mapped.iter().copied(),
            color.stroke_width(2),
        ))?
        .label(name.as_str())
        .legend(move |(px, py)| {
            PathElement::new(vec![(px, py), (px + 16, py)], color.stroke_width(2))
        });
        ctx.draw_series(mapped.iter().map(|&p| Circle::new(p, 4, color.filled())))?;
    }
    draw_legend(&mut ctx)?;
    Ok(())
}

/// The series legend, top right, as every multi-series chart draws it.
fn draw_legend<'a, CT: CoordTranslate>(
    ctx: &mut ChartContext<'a, SVGBackend<'a>, CT>,
) -> DrawResult {
    ctx.configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font((FONT, 15))
        .draw()?;
    Ok(())
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The page that shows every chart, with a list of links on top.
fn index_html(charts: &[Chart]) -> String {
    let mut h = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>utimer bench charts</title>\n<style>\n\
         body { font-family: sans-serif; max-width: 960px; margin: 2em auto; }\n\
         figure { margin: 2em 0; } img { max-width: 100%; border: 1px solid #ddd; }\n\
         </style>\n</head>\n<body>\n<h1>utimer bench charts</h1>\n",
    );
    if charts.is_empty() {
        h.push_str("<p>No case of this run had values to chart.</p>\n");
    } else {
        let _ = writeln!(h, "<p>{} charts from one run of <code>utimer bench</code>; bars show the median of the repetitions.</p>\n<ul>", charts.len());
        for c in charts {
            let _ = writeln!(
                h,
                "<li><a href=\"#{}\">{}</a></li>",
                html_escape(&c.file),
                html_escape(&c.title)
            );
        }
        h.push_str("</ul>\n");
        for c in charts {
            let (file, title) = (html_escape(&c.file), html_escape(&c.title));
            let _ = writeln!(
                h,
                "<figure id=\"{file}\"><img src=\"{file}\" alt=\"{title}\" /><figcaption>{title}</figcaption></figure>"
            );
        }
    }
    h.push_str("</body>\n</html>\n");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(group: &str, case: &str, name: &str, v: f64, unit: &str) -> Record {
        Record::value(group, case, name, "quick", v, unit)
    }

    /// Synthetic records in the shapes the suite produces.
    fn records() -> Vec<Record> {
        vec![
            rec("arm_cancel", "empty", "utimer", 22.5, "ns/op"),
            rec("arm_cancel", "empty", "Mutex<BinaryHeap>", 30.0, "ns/op"),
            rec("arm_cancel", "empty", "timerfd", 4800.0, "ns/op"),
            Record::skipped("arm_cancel", "empty", "POSIX timer", "quick", "n/a"),
            rec("latency", "1ms", "utimer p50", 600.0, "µs"),
            rec("latency", "1ms", "utimer p99", 1000.0, "µs"),
            rec("latency", "1ms", "utimer max", 1200.0, "µs"),
            rec("latency", "1ms", "timerfd p50", 37.0, "µs"),
            rec("latency", "1ms", "timerfd p99", 86.0, "µs"),
            rec(
                "latency",
                "idle/no_timers",
                "utimer Runtime",
                0.0,
                "wakeups/s",
            ),
            rec("seed002", "simple/match", "before", 3.1, "%").with_reference("5.5%"),
            rec("seed002", "simple/match", "after", 83.3, "%").with_reference("86.6%"),
            rec("seed002", "simple/recalc", "before", 0.0, "%").with_reference("-"),
            rec("seed002", "simple/recalc", "after", 0.0, "%").with_reference("<0.01%"),
            rec("seed002", "simple/ns_per_modify", "before", 30.2, "ns/op"),
            rec("seed002", "simple/ns_per_modify", "after", 26.7, "ns/op"),
            rec(
                "seed003-lookup",
                "gettime_1_threads",
                "utimer timer_gettime",
                16.8,
                "Mcalls/s",
            ),
            rec(
                "seed003-lookup",
                "gettime_1_threads",
                "global lock",
                13.8,
                "Mcalls/s",
            ),
            rec(
                "seed003-lookup",
                "gettime_2_threads",
                "utimer timer_gettime",
                32.0,
                "Mcalls/s",
            ),
            rec(
                "seed003-lookup",
                "gettime_2_threads",
                "global lock",
                8.2,
                "Mcalls/s",
            ),
            rec(
                "seed003-lookup",
                "gettime_16_threads",
                "utimer timer_gettime",
                35.2,
                "Mcalls/s",
            ),
            rec(
                "seed003-lookup",
                "gettime_16_threads",
                "global lock",
                0.6,
                "Mcalls/s",
            ),
            rec(
                "seed003-lookup",
                "scaling_2T_over_1T",
                "utimer timer_gettime",
                1.9,
                "x",
            ),
        ]
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
            file_name(&["seed000", "warm/4_workers"]),
            "seed000--warm_4_workers.svg"
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
        let charts = charts(&records());
        let files: Vec<&str> = charts.iter().map(|c| c.file.as_str()).collect();
        assert_eq!(
            files,
            [
                "arm_cancel--empty.svg",
                "latency--1ms.svg",
                "seed002--simple_ns_per_modify.svg",
                "seed002--simple--shares.svg",
                "seed003-lookup--gettime_1_threads.svg",
                "seed003-lookup--gettime_2_threads.svg",
                "seed003-lookup--gettime_16_threads.svg",
                "seed003-lookup--scaling_2T_over_1T.svg",
                "seed003-lookup--gettime--vs-threads.svg",
            ]
        );
        // Skipped rows are left out; the latency chart has p50 and p99.
        let Kind::Bars { rows, .. } = &charts[0].kind else {
            panic!("bars")
        };
        assert_eq!(rows, &["utimer", "Mutex<BinaryHeap>", "timerfd"]);
        let Kind::Bars { rows, series } = &charts[1].kind else {
            panic!("bars")
        };
        assert_eq!(rows, &["utimer", "timerfd"]);
        assert_eq!(
            series[1],
            ("p99".to_string(), vec![Some(1000.0), Some(86.0)])
        );
        let Kind::Bars { series, .. } = &charts[3].kind else {
            panic!("bars")
        };
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
        let Kind::Lines { series, .. } = &charts[8].kind else {
            panic!("lines")
        };
        assert_eq!(series[1].1, vec![(1.0, 13.8), (2.0, 8.2), (16.0, 0.6)]);
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
        let shares = read("seed002--simple--shares.svg");
        assert!(shares.contains("after (Linux patch)"));
        let lines = read("seed003-lookup--gettime--vs-threads.svg");
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
}
