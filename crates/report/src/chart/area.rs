//! Stacked area charts: several series over one common x (usually time), stacked on each
//! other, e.g. how the cache is shared between VMs over a day.

use plotters::prelude::DrawingBackend;

use super::frame::{self, Painter, Swatch, XyData};
use super::{Axis, Chart, ValueFormat, DEFAULT_SIZE};

/// Series stacked over a common x, drawn as steps (default) or as linearly joined areas.
///
/// In step mode each value holds from its x until the next x, and the last value until
/// [`StackedAreaChart::x_end`] (by default one more interval like the previous one), which
/// suits samples taken per time window. Values that are NaN, infinite or negative count as
/// zero, because a stack has no room for them; samples whose x is not drawable are dropped,
/// and samples are sorted by x. A series shorter than the x values is padded with zeros.
///
/// ```
/// use cloudcache_report::{Axis, Chart, StackedAreaChart, ValueFormat};
/// let hour = 3_600e9;
/// let svg = StackedAreaChart::new("Cache share per VM")
///     .x_axis(Axis::new("time").format(ValueFormat::DurationNs))
///     .x_values([0.0, hour, 2.0 * hour])
///     .series("vm-a", [0.2, 0.5, 0.6])
///     .series("vm-b", [0.8, 0.5, 0.4])
///     .normalized(true)
///     .to_svg();
/// assert!(svg.contains("vm-a") && svg.contains("100%"));
/// ```
#[derive(Clone, Debug)]
pub struct StackedAreaChart {
    title: String,
    size: (u32, u32),
    x: Axis,
    y: Option<Axis>,
    xs: Vec<f64>,
    series: Vec<(String, Vec<f64>)>,
    step: bool,
    normalized: bool,
    x_end: Option<f64>,
}

impl StackedAreaChart {
    /// An empty chart with a title (may be empty), in step mode, not normalized.
    pub fn new(title: impl Into<String>) -> Self {
        StackedAreaChart {
            title: title.into(),
            size: DEFAULT_SIZE,
            x: Axis::default(),
            y: None,
            xs: Vec::new(),
            series: Vec::new(),
            step: true,
            normalized: false,
            x_end: None,
        }
    }

    /// Sets the size in pixels (default 760 × 400).
    pub fn size(mut self, width: u32, height: u32) -> Self {
        self.size = (width, height);
        self
    }

    /// Sets the x axis.
    pub fn x_axis(mut self, axis: Axis) -> Self {
        self.x = axis;
        self
    }

    /// Sets the y axis. Without one, a normalized chart gets a 0–100 % axis titled "share";
    /// with one, a normalized chart still shows 0–100 % unless the axis sets a range.
    pub fn y_axis(mut self, axis: Axis) -> Self {
        self.y = Some(axis);
        self
    }

    /// Sets the common x values of all series.
    pub fn x_values(mut self, xs: impl IntoIterator<Item = f64>) -> Self {
        self.xs = xs.into_iter().collect();
        self
    }

    /// Adds a series: one value per x value, stacked above the series added before it.
    pub fn series(mut self, name: impl Into<String>, values: impl IntoIterator<Item = f64>) -> Self {
        self.add_series(name, values);
        self
    }

    /// Adds a series to a chart held by reference (for building in a loop).
    pub fn add_series(
        &mut self,
        name: impl Into<String>,
        values: impl IntoIterator<Item = f64>,
    ) -> &mut Self {
        self.series.push((name.into(), values.into_iter().collect()));
        self
    }

    /// Steps (each value holds until the next x) when true, straight lines between samples
    /// when false.
    pub fn step(mut self, step: bool) -> Self {
        self.step = step;
        self
    }

    /// Divides each column by its total, so that the stack always reaches 100 % and shows
    /// shares rather than amounts. Columns whose total is zero stay empty.
    pub fn normalized(mut self, normalized: bool) -> Self {
        self.normalized = normalized;
        self
    }

    /// Where the last step ends (step mode only).
    pub fn x_end(mut self, x: f64) -> Self {
        self.x_end = Some(x);
        self
    }

    fn y_axis_or_default(&self) -> Axis {
        match (&self.y, self.normalized) {
            // Shares never exceed the whole; rounding must not stretch the axis to 120 %.
            (Some(axis), true) if axis.range.is_none() => axis.clone().range(0.0, 1.0),
            (Some(axis), _) => axis.clone(),
            (None, true) => Axis::new("share").format(ValueFormat::Percent).range(0.0, 1.0),
            (None, false) => Axis::default(),
        }
    }

    /// Sorted drawable x values, and per series the cumulative stack top at each of them.
    fn stacks(&self) -> (Vec<f64>, Vec<Vec<f64>>) {
        let mut order: Vec<usize> =
            (0..self.xs.len()).filter(|&i| frame::valid_on(self.x.scale, self.xs[i])).collect();
        order.sort_by(|&a, &b| self.xs[a].total_cmp(&self.xs[b]));
        let xs: Vec<f64> = order.iter().map(|&i| self.xs[i]).collect();
        let value = |values: &Vec<f64>, i: usize| {
            values.get(i).copied().filter(|v| v.is_finite() && *v > 0.0).unwrap_or(0.0)
        };
        let totals: Vec<f64> = order
            .iter()
            .map(|&i| self.series.iter().map(|(_, values)| value(values, i)).sum::<f64>())
            .collect();
        let mut running = vec![0.0; order.len()];
        let tops = self
            .series
            .iter()
            .map(|(_, values)| {
                for (k, &i) in order.iter().enumerate() {
                    let v = value(values, i);
                    let v = if self.normalized {
                        if totals[k] > 0.0 && totals[k].is_finite() {
                            v / totals[k]
                        } else {
                            0.0
                        }
                    } else {
                        v
                    };
                    running[k] += v;
                }
                running.clone()
            })
            .collect();
        (xs, tops)
    }

    /// The x at which the last step ends.
    fn end_of(&self, xs: &[f64]) -> Option<f64> {
        let last = *xs.last()?;
        if !self.step {
            return Some(last);
        }
        if let Some(end) = self.x_end.filter(|&e| frame::valid_on(self.x.scale, e) && e > last) {
            return Some(end);
        }
        let end = match xs.len() {
            1 => last,
            n => match self.x.scale {
                super::Scale::Linear => last + (last - xs[n - 2]),
                // The same ratio on a log axis looks like the same width.
                _ => last * (last / xs[n - 2]),
            },
        };
        Some(if end.is_finite() { end } else { last })
    }

    fn draw<DB: DrawingBackend>(&self, p: &Painter<DB>) {
        let (width, height) = (f64::from(self.size.0), f64::from(self.size.1));
        let y_axis = self.y_axis_or_default();
        let legend: Vec<frame::LegendItem> = self
            .series
            .iter()
            .enumerate()
            .map(|(i, (name, _))| {
                let (color, later_round) = frame::series_rgb(i);
                let alpha = if later_round { 0.45 } else { 0.9 };
                frame::LegendItem { name: name.clone(), color, swatch: Swatch::Block { alpha } }
            })
            .collect();
        let top = frame::draw_header(p, width, &self.title, &legend);
        let (xs, tops) = self.stacks();
        let end = self.end_of(&xs);
        let mut x_values = xs.clone();
        x_values.extend(end);
        let highest = tops.last().cloned().unwrap_or_default();
        let layout = frame::layout_xy(
            width,
            height,
            top,
            XyData { axis: &self.x, values: x_values, zero_by_default: false },
            XyData { axis: &y_axis, values: highest, zero_by_default: true },
        );
        let plot = layout.plot;
        frame::draw_y_axis(p, &plot, &layout.y, &y_axis.title);
        frame::draw_x_axis(p, &plot, &layout.x, &self.x.title);
        let x_pixel =
            |x: f64| frame::x_px(&plot, &layout.x, x).unwrap_or(plot.left).clamp(plot.left, plot.right);
        let y_pixel =
            |y: f64| frame::y_px(&plot, &layout.y, y).unwrap_or(plot.bottom).clamp(plot.top, plot.bottom);

        // Columns as (start pixel, end pixel, index into xs); samples sharing a pixel column
        // are averaged so that long traces do not produce megabytes of SVG.
        let mut columns: Vec<(f64, usize, usize)> = Vec::new(); // (pixel, first, last) sample
        for (k, &x) in xs.iter().enumerate() {
            let pixel = x_pixel(x);
            match columns.last_mut() {
                Some(column) if pixel.round() == column.0.round() && xs.len() as f64 > plot.width() => {
                    column.2 = k
                }
                _ => columns.push((pixel, k, k)),
            }
        }
        let column_end = |c: usize| match columns.get(c + 1) {
            Some(next) => next.0,
            None => end.map(x_pixel).unwrap_or(columns[c].0),
        };
        let stack_at = |s: Option<usize>, c: usize| -> f64 {
            let Some(s) = s else { return 0.0 };
            let (_, first, last) = columns[c];
            let values = &tops[s][first..=last];
            values.iter().sum::<f64>() / values.len() as f64
        };
        for s in 0..self.series.len() {
            let (color, later_round) = frame::series_rgb(s);
            let below = s.checked_sub(1);
            let mut upper: Vec<(f64, f64)> = Vec::new();
            let mut lower: Vec<(f64, f64)> = Vec::new();
            for c in 0..columns.len() {
                let start = columns[c].0;
                let (hi, lo) = (y_pixel(stack_at(Some(s), c)), y_pixel(stack_at(below, c)));
                if self.step {
                    // A lone sample still gets a visible sliver.
                    let stop = column_end(c).max(start + if columns.len() == 1 { 3.0 } else { 0.0 });
                    upper.extend([(start, hi), (stop, hi)]);
                    lower.extend([(start, lo), (stop, lo)]);
                } else {
                    upper.push((start, hi));
                    lower.push((start, lo));
                }
            }
            if !self.step && columns.len() == 1 {
                let (x, hi, lo) = (upper[0].0, upper[0].1, lower[0].1);
                p.line((x, hi), (x, lo), color, 3);
                continue;
            }
            let outline: Vec<(f64, f64)> = upper.iter().copied().chain(lower.iter().rev().copied()).collect();
            p.polygon(&outline, color, if later_round { 0.45 } else { 0.9 });
            // A thin white edge keeps neighbouring layers of similar colour apart.
            if s + 1 < self.series.len() {
                p.polyline(&upper, (255, 255, 255), 1);
            }
        }
        frame::draw_axis_lines(p, &plot);
        if columns.is_empty() || self.series.is_empty() {
            frame::draw_no_data(p, &plot);
        }
    }
}

impl Chart for StackedAreaChart {
    fn to_svg(&self) -> String {
        frame::svg_document(self.size, &self.title, |p| self.draw(p))
    }
}
