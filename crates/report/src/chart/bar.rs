//! Grouped bar charts: one group of bars per category, one bar per series in each group.

use plotters::prelude::DrawingBackend;
use plotters::style::text_anchor::{HPos, VPos};

use super::frame::{self, Painter, Rect, Swatch, TextOpts};
use super::{Axis, Chart, DEFAULT_SIZE};

/// Categories × series as grouped vertical bars, e.g. hit ratio per policy (series) for each
/// workload (category).
///
/// Bars start at zero (or at the bottom of a fixed range that excludes zero). A value that is
/// NaN or infinite leaves its bar out; missing values (a series shorter than the category
/// list) do the same. Category names that do not fit under their group are wrapped onto two
/// lines, or turned vertical when the groups are narrow; past 40 characters they are
/// shortened with an ellipsis.
///
/// ```
/// use cloudcache_report::{Axis, BarChart, Chart, ValueFormat};
/// let svg = BarChart::new("Hit ratio per workload")
///     .categories(["oltp", "backup", "vdi"])
///     .y_axis(Axis::new("hit ratio").format(ValueFormat::Percent))
///     .series("LRU", [0.61, 0.05, 0.72])
///     .series("ARC", [0.66, 0.09, 0.74])
///     .to_svg();
/// assert!(svg.contains("backup") && svg.contains("ARC"));
/// ```
#[derive(Clone, Debug)]
pub struct BarChart {
    title: String,
    size: (u32, u32),
    category_title: String,
    categories: Vec<String>,
    y: Axis,
    series: Vec<(String, Vec<f64>)>,
    value_labels: Option<bool>,
}

const VALUE_LABEL_SIZE: f64 = 10.5;
/// Tallest room given to vertical category labels.
const MAX_VERTICAL_LABELS: f64 = 150.0;
/// Narrowest category slot in which labels are wrapped rather than turned vertical.
const MIN_WRAP_WIDTH: f64 = 56.0;

/// How category labels are set.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Labels {
    OneLine,
    TwoLines,
    Vertical,
}

/// Splits a label into at most two lines that fit `width`, preferring to break after a space,
/// dash, underscore, slash or dot; whatever still does not fit is cut with an ellipsis.
fn wrap_in_two(label: &str, width: f64) -> Vec<String> {
    let size = frame::LABEL_SIZE;
    if frame::text_width(label, size) <= width {
        return vec![label.to_string()];
    }
    let chars: Vec<char> = label.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    let fits = |n: usize| frame::text_width(&chars[..n].iter().collect::<String>(), size) <= width;
    let longest = (1..=chars.len()).take_while(|&n| fits(n)).last().unwrap_or(1);
    let soft = (1..=longest).rev().find(|&n| matches!(chars[n - 1], ' ' | '-' | '_' | '/' | '.' | ':'));
    // A break that leaves a tiny first line reads worse than a hard one.
    let split = soft.filter(|&n| n * 3 >= longest).unwrap_or(longest);
    let first: String = chars[..split].iter().collect();
    let rest: String = chars[split..].iter().collect();
    let mut lines = vec![first.trim_end().to_string()];
    let rest = rest.trim_start();
    if !rest.is_empty() {
        lines.push(frame::fit_text(rest, size, width));
    }
    lines
}

impl BarChart {
    /// An empty chart with a title (may be empty).
    pub fn new(title: impl Into<String>) -> Self {
        BarChart {
            title: title.into(),
            size: DEFAULT_SIZE,
            category_title: String::new(),
            categories: Vec::new(),
            y: Axis::default(),
            series: Vec::new(),
            value_labels: None,
        }
    }

    /// Sets the size in pixels (default 760 × 400).
    pub fn size(mut self, width: u32, height: u32) -> Self {
        self.size = (width, height);
        self
    }

    /// Sets the category names, in display order.
    pub fn categories<S: Into<String>>(mut self, categories: impl IntoIterator<Item = S>) -> Self {
        self.categories = categories.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the title shown under the category labels.
    pub fn category_title(mut self, title: impl Into<String>) -> Self {
        self.category_title = title.into();
        self
    }

    /// Sets the value axis. Its fitted range includes zero unless [`Axis::include_zero`] says not.
    pub fn y_axis(mut self, axis: Axis) -> Self {
        self.y = axis;
        self
    }

    /// Adds a series: one value per category, in category order.
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

    /// Forces value labels above the bars on or off (by default they are shown when every
    /// label fits above its bar).
    pub fn value_labels(mut self, on: bool) -> Self {
        self.value_labels = Some(on);
        self
    }

    fn category_count(&self) -> usize {
        self.series.iter().map(|(_, values)| values.len()).max().unwrap_or(0).max(self.categories.len())
    }

    fn draw<DB: DrawingBackend>(&self, p: &Painter<DB>) {
        let (width, height) = (f64::from(self.size.0), f64::from(self.size.1));
        let legend: Vec<frame::LegendItem> = if self.series.len() == 1 && self.series[0].0.is_empty() {
            Vec::new()
        } else {
            self.series
                .iter()
                .enumerate()
                .map(|(i, (name, _))| {
                    let (color, later_round) = frame::series_rgb(i);
                    let alpha = if later_round { 0.5 } else { 1.0 };
                    frame::LegendItem { name: name.clone(), color, swatch: Swatch::Block { alpha } }
                })
                .collect()
        };
        let top = frame::draw_header(p, width, &self.title, &legend) + frame::LABEL_SIZE / 2.0;
        let categories = self.category_count();
        let bars = self.series.len().max(1);
        let values: Vec<f64> = self
            .series
            .iter()
            .flat_map(|(_, values)| values.iter().copied())
            .filter(|v| v.is_finite())
            .collect();
        let labels: Vec<String> = (0..categories)
            .map(|c| {
                frame::truncate(self.categories.get(c).map_or("", String::as_str), frame::MAX_LABEL_CHARS)
            })
            .collect();
        let widest = |labels: &[String]| {
            labels.iter().map(|l| frame::text_width(l, frame::LABEL_SIZE)).fold(0.0, f64::max)
        };
        let title_room = frame::x_axis_height(&self.category_title) - frame::x_axis_height("");

        // The y axis width depends on the plot height, which depends on how the category labels
        // are set (one line, two lines, or turned vertical), which depends on the plot width:
        // settle it in a second pass if the first one had to change the labels.
        let mut labelling = Labels::OneLine;
        let mut layout = None;
        for attempt in 0..3 {
            let label_room = match labelling {
                Labels::OneLine => frame::LABEL_SIZE + 12.0,
                Labels::TwoLines => frame::LABEL_SIZE * 2.3 + 12.0,
                Labels::Vertical => {
                    let fitted: Vec<String> = labels
                        .iter()
                        .map(|l| frame::fit_text(l, frame::LABEL_SIZE, MAX_VERTICAL_LABELS))
                        .collect();
                    widest(&fitted) + 14.0
                }
            };
            let bottom = (height - 6.0 - label_room - title_room).max(top + 40.0);
            let provisional = frame::resolve_axis(&self.y, values.iter().copied(), true, bottom - top, false);
            let left = frame::y_axis_width(&provisional, &self.y.title);
            let right = (width - 16.0).max(left + 40.0);
            let plot = Rect { left, top, right, bottom };
            let slot = plot.width() / categories.max(1) as f64;
            layout = Some((plot, slot, label_room));
            if attempt == 2 {
                break;
            }
            let wanted = if widest(&labels) <= slot - 8.0 {
                Labels::OneLine
            } else if slot - 8.0 >= MIN_WRAP_WIDTH {
                Labels::TwoLines
            } else {
                Labels::Vertical
            };
            if wanted == labelling {
                break;
            }
            labelling = wanted;
        }
        let Some((plot, slot, label_room)) = layout else { return };
        let group = slot * if bars == 1 { 0.6 } else { 0.8 };
        let bar_width = group / bars as f64;
        let format = &self.y.format;
        let widest_value = values
            .iter()
            .map(|&v| frame::text_width(&format.format(v), VALUE_LABEL_SIZE))
            .fold(0.0, f64::max);
        let show_values =
            self.value_labels.unwrap_or(bar_width >= widest_value + 4.0 && categories * bars <= 48);
        // Room above the tallest bar for its value label.
        let headroom = if show_values { VALUE_LABEL_SIZE * 2.0 } else { 0.0 };
        let fit_values: Vec<f64> = if show_values && plot.height() > headroom * 3.0 {
            let stretch = plot.height() / (plot.height() - headroom);
            values.iter().map(|v| v * stretch).collect()
        } else {
            values.clone()
        };
        let y = frame::resolve_axis(&self.y, fit_values, true, plot.height(), false);
        frame::draw_y_axis(p, &plot, &y, &self.y.title);
        let y_pixel = |v: f64| frame::y_px(&plot, &y, v).map(|py| py.clamp(plot.top, plot.bottom));
        let base = y_pixel(y.baseline()).unwrap_or(plot.bottom);
        let mut drew_any = false;
        for (s, (_, series_values)) in self.series.iter().enumerate() {
            let (color, later_round) = frame::series_rgb(s);
            for (c, &v) in series_values.iter().enumerate() {
                let Some(top_px) = y_pixel(v).filter(|_| v.is_finite()) else { continue };
                drew_any = true;
                let x0 = plot.left + slot * c as f64 + (slot - group) / 2.0 + bar_width * s as f64;
                let gap = if bar_width > 6.0 { 1.0 } else { 0.0 };
                p.rect(
                    x0 + gap,
                    top_px,
                    x0 + bar_width - gap,
                    base,
                    color,
                    if later_round { 0.5 } else { 1.0 },
                );
                if show_values {
                    let text = format.format(v);
                    let center = x0 + bar_width / 2.0;
                    let opts = if top_px <= base {
                        TextOpts::new(VALUE_LABEL_SIZE, frame::MUTED_TEXT, HPos::Center, VPos::Bottom)
                    } else {
                        TextOpts::new(VALUE_LABEL_SIZE, frame::MUTED_TEXT, HPos::Center, VPos::Top)
                    };
                    let offset = if top_px <= base { -3.0 } else { 3.0 };
                    p.text(&text, center, top_px + offset, opts);
                }
            }
        }
        for (c, label) in labels.iter().enumerate() {
            let center = plot.left + slot * (c as f64 + 0.5);
            let y = plot.bottom + 7.0;
            match labelling {
                Labels::Vertical => {
                    let mut opts =
                        TextOpts::new(frame::LABEL_SIZE, frame::MUTED_TEXT, HPos::Right, VPos::Center);
                    opts.vertical = true;
                    let fitted = frame::fit_text(label, frame::LABEL_SIZE, MAX_VERTICAL_LABELS);
                    p.text(&fitted, center, y, opts);
                }
                Labels::OneLine | Labels::TwoLines => {
                    let opts = TextOpts::new(frame::LABEL_SIZE, frame::MUTED_TEXT, HPos::Center, VPos::Top);
                    for (i, line) in wrap_in_two(label, slot - 8.0).iter().enumerate() {
                        p.text(line, center, y + i as f64 * frame::LABEL_SIZE * 1.25, opts);
                    }
                }
            }
        }
        frame::draw_x_title(p, &plot, &self.category_title, plot.bottom + label_room + 4.0);
        frame::draw_axis_lines(p, &plot);
        if !drew_any {
            frame::draw_no_data(p, &plot);
        }
    }
}

impl Chart for BarChart {
    fn to_svg(&self) -> String {
        frame::svg_document(self.size, &self.title, |p| self.draw(p))
    }
}
