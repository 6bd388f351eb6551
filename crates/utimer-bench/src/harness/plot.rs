//! SVG charts of a run: `utimer bench --plot DIR`.
//!
//! What to chart is declared beside each case: the call that registers it
//! with the [`Runner`](crate::Runner) (`case`, `values`, `push_records`)
//! names a [`Chart`], which each of the case's [`Record`]s carries. This
//! module draws what the records declare and knows no group by name:
//!
//! * [`Chart::Bars`]: one horizontal bar per implementation (utimer's in
//!   blue, the peers' in grey), the median with its value written at the
//!   bar's end;
//! * [`Chart::Scaling`]: the same bars, and the cases of a group that differ
//!   only in the N of their name (`..._N_threads`, `.../N_workers`, see
//!   [`scaling_key`]) give one line chart per family, the value against N;
//! * [`Chart::Percentiles`]: p50 and p99 side by side per implementation,
//!   from rows named `NAME p50`, `NAME p99`;
//! * [`Chart::Shares`]: cases named `WORKLOAD/SHARE` in %: one chart per
//!   workload, a bar per share, beside the published numbers.
//!
//! Each group's case charts come first, in run order, then its charts
//! across cases (shares, lines). A value axis turns logarithmic (base 10)
//! when the largest positive value is more than 100 times the smallest
//! (`plot/axis.rs`). Skipped rows and rows without a value are left out; a
//! chart whose values are all zero is not drawn. The SVG is written by
//! plotters' SVG backend alone ([`render`]); `DIR/index.html` shows every
//! chart, in run order (`plot/index.rs`).

mod axis;
mod case;
mod chart;
mod family;
mod figure;
mod index;
mod render;
#[cfg(test)]
mod tests;

use std::io;
use std::path::{Path, PathBuf};

pub use case::file_name;
pub use chart::{Chart, Shares};
pub use family::scaling_key;
pub use figure::{Figure, Shape};
pub use render::render;

use crate::Record;
use case::Case;

/// Draws every chart of `records` into `dir` (created if missing) plus
/// `dir/index.html`; returns the chart files written, in run order.
pub fn write_all(dir: &Path, records: &[Record]) -> io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let figures = figures(records);
    let mut files = Vec::with_capacity(figures.len());
    for figure in &figures {
        let svg = render(figure).map_err(|e| io::Error::other(format!("{}: {e}", figure.file)))?;
        let path = dir.join(&figure.file);
        std::fs::write(&path, svg)?;
        files.push(path);
    }
    std::fs::write(dir.join("index.html"), index::index_html(&figures))?;
    Ok(files)
}

/// The charts `records` declare, in run order (each group's case charts,
/// then its charts across cases), with unique file names.
pub fn figures(records: &[Record]) -> Vec<Figure> {
    group_figures(records).into_iter().map(|(_, f)| f).collect()
}

/// [`figures`], each with the group it belongs to.
pub fn group_figures(records: &[Record]) -> Vec<(String, Figure)> {
    let cases = case::by_case(records);
    let mut groups: Vec<&str> = Vec::new();
    for c in &cases {
        if !groups.contains(&c.group) {
            groups.push(c.group);
        }
    }
    let mut out = Vec::new();
    for group in groups {
        let in_group: Vec<&Case<'_>> = cases.iter().filter(|c| c.group == group).collect();
        let mut of_group = Vec::new();
        for case in &in_group {
            of_group.extend(match case.chart() {
                Chart::Bars | Chart::Scaling => case.bars(),
                Chart::Percentiles => case.percentiles(),
                Chart::Shares(_) => None, // one chart per workload, below
            });
        }
        of_group.extend(family::shares(group, &in_group));
        of_group.extend(family::lines(group, &in_group));
        out.extend(of_group.into_iter().map(|f| (group.to_string(), f)));
    }
    // Unique file names (sanitizing may map two cases to one name).
    let mut seen: Vec<String> = Vec::new();
    for (_, figure) in &mut out {
        let stem = figure.file.trim_end_matches(".svg").to_string();
        let mut k = 1;
        while seen.contains(&figure.file) {
            k += 1;
            figure.file = format!("{stem}-{k}.svg");
        }
        seen.push(figure.file.clone());
    }
    out
}
