//! Drawing a [`Figure`] as an SVG document with plotters' SVG backend:
//! horizontal bars (utimer's blue, the peers' grey; one colour per series
//! when there are several) and lines against a thread or worker count.
//!
//! Text goes into the file as `<text>` elements for the browser to render
//! (plotters' built-in size estimate lays it out), so no font file and no
//! system font library is needed.

use std::error::Error;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::axis::{ticked, Axis};
use super::figure::{Figure, Shape};
use crate::harness::report::fmt_num;

const WIDTH: u32 = 900;
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

/// The share of an axis' drawn range to add past its end so that a legend
/// of `names` fits to the right of the data in a plot `plot_px` wide.
fn room_for_legend(names: &[&str], plot_px: u32) -> f64 {
    let longest = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    let legend_px = (longest * 8 + 70) as f64;
    let share = (legend_px / f64::from(plot_px.max(1))).min(0.6);
    share / (1.0 - share)
}

/// Draws `chart` as an SVG document.
pub fn render(chart: &Figure) -> Result<String, Box<dyn Error>> {
    let mut svg = String::new();
    match &chart.shape {
        Shape::Bars { rows, series } => {
            let bars = rows.len() * series.len();
            let height = (110 + bars * 20 + rows.len() * 10).max(220) as u32;
            let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
            draw_bars(&root, chart, rows, series)?;
            root.present()?;
        }
        Shape::Lines { x_axis, series } => {
            let root = SVGBackend::with_string(&mut svg, (WIDTH, 480)).into_drawing_area();
            draw_lines(&root, chart, x_axis, series)?;
            root.present()?;
        }
    }
    Ok(svg)
}

fn draw_bars(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    chart: &Figure,
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
    chart: &Figure,
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
