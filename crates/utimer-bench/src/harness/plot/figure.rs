//! A chart as drawn: its file, its words and its bars or lines.

/// One chart, before it is drawn.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// The file name: group and case sanitized, ending in `.svg`.
    pub file: String,
    pub title: String,
    /// What the value axis shows, e.g. `median ns/op`.
    pub axis: String,
    /// Whether the value axis may turn logarithmic (not for shares).
    pub allow_log: bool,
    pub shape: Shape,
}

/// The shape of a chart.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
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
