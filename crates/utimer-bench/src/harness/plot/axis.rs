//! The value axes of the charts: linear from zero with round ticks, or
//! base-10 logarithmic when the values span more than 100x; and the plotters
//! coordinate that draws exactly the ticks chosen here.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};

use crate::harness::report::fmt_num;

/// A value axis: linear from zero, or base-10 logarithmic; values are drawn
/// at [`Axis::map`] of themselves.
pub(super) struct Axis {
    pub(super) log: bool,
    /// The drawn range, in mapped units.
    pub(super) lo: f64,
    pub(super) hi: f64,
    /// Labelled ticks, in mapped units.
    pub(super) ticks: Vec<f64>,
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
    pub(super) fn for_values(
        values: impl IntoIterator<Item = f64>,
        room: f64,
        allow_log: bool,
    ) -> Axis {
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
    pub(super) fn map(&self, v: f64) -> f64 {
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

    pub(super) fn label(&self, t: f64) -> String {
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

    pub(super) fn describe(&self, what: &str) -> String {
        if self.log {
            format!("{what} (log scale)")
        } else {
            what.to_string()
        }
    }
}

/// A linear coordinate over `lo..hi` whose labelled ticks are given (an
/// [`Axis`] maps a log scale to it itself).
#[derive(Clone, Debug)]
pub(super) struct Ticked {
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

pub(super) fn ticked(lo: f64, hi: f64, ticks: Vec<f64>) -> Ticked {
    Ticked { lo, hi, ticks }
}
