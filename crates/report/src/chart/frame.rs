//! What all charts share: the SVG document, text measuring, the title and legend header, axis
//! fitting and drawing, and clipping of lines to the plot area.
//!
//! Layout happens in `f64` pixels and is rounded only when handed to plotters, whose backend
//! coordinates are integers.

use plotters::coord::Shift;
use plotters::prelude::{
    Circle, DrawingArea, DrawingBackend, IntoDrawingArea, PathElement, Polygon, RGBAColor, RGBColor,
    Rectangle, SVGBackend, ShapeStyle, WHITE,
};
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{FontDesc, FontFamily, FontStyle, FontTransform, TextStyle};

use super::{Axis, Scale, ValueFormat, PALETTE};
use crate::html::escape_html;
use crate::ticks;

pub(crate) type Rgb = (u8, u8, u8);

pub(crate) const TEXT: Rgb = (0x22, 0x22, 0x22);
pub(crate) const MUTED_TEXT: Rgb = (0x55, 0x55, 0x55);
const GRID: Rgb = (0xE3, 0xE3, 0xE3);
const AXIS_LINE: Rgb = (0x77, 0x77, 0x77);

pub(crate) const TITLE_SIZE: f64 = 15.0;
pub(crate) const LABEL_SIZE: f64 = 12.0;
const AXIS_TITLE_SIZE: f64 = 12.5;
const LEGEND_SIZE: f64 = 12.0;
const FONT_FAMILY: &str = "Helvetica, Arial, sans-serif";
/// Longest legend entry or category label, in characters, before it is cut with an ellipsis.
pub(crate) const MAX_LABEL_CHARS: usize = 40;

/// The palette colour of a series, and whether it is in a second (or later) round of colours.
pub(crate) fn series_rgb(index: usize) -> (Rgb, bool) {
    (PALETTE[index % PALETTE.len()], index >= PALETTE.len())
}

/// Estimated width of `text` at font size `size`, erring wide: there are no font metrics
/// here (the browser picks the font), so labels get room for a broad sans-serif such as
/// DejaVu Sans.
pub(crate) fn text_width(text: &str, size: f64) -> f64 {
    let ems: f64 = text
        .chars()
        .map(|c| match c {
            'i' | 'j' | 'l' | '.' | ',' | ':' | ';' | '|' | '!' | '\'' | 'I' | 'f' | 't' | 'r' => 0.34,
            ' ' => 0.32,
            'm' | 'w' | 'M' | 'W' | '%' | '@' => 0.9,
            c if c.is_ascii_uppercase() => 0.7,
            c if c.is_ascii_digit() => 0.62,
            c if c.is_ascii() => 0.57,
            // Wide scripts and symbols: a full em is the safe guess.
            _ => 1.0,
        })
        .sum();
    ems * size
}

/// `text` cut to at most `max_chars` characters, with an ellipsis when cut.
pub(crate) fn truncate(text: &str, max_chars: usize) -> String {
    if text.chars().count() <= max_chars {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// `text` cut so that its estimated width stays within `max_width` (at least one character
/// is kept).
pub(crate) fn fit_text(text: &str, size: f64, max_width: f64) -> String {
    if text_width(text, size) <= max_width {
        return text.to_string();
    }
    // No character is narrower than 0.3 em, which bounds the search for very long text.
    let bound = (max_width / (0.3 * size.max(1.0))).clamp(1.0, 100_000.0) as usize + 1;
    let (mut lo, mut hi) = (1, text.chars().count().min(bound));
    // Largest character count whose cut text fits, by bisection.
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if text_width(&truncate(text, mid), size) <= max_width {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    truncate(text, lo)
}

/// A rectangle in pixels.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rect {
    pub left: f64,
    pub top: f64,
    pub right: f64,
    pub bottom: f64,
}

impl Rect {
    pub fn width(&self) -> f64 {
        self.right - self.left
    }
    pub fn height(&self) -> f64 {
        self.bottom - self.top
    }
}

/// Text placement options.
#[derive(Clone, Copy)]
pub(crate) struct TextOpts {
    pub size: f64,
    pub color: Rgb,
    pub h: HPos,
    pub v: VPos,
    pub bold: bool,
    pub italic: bool,
    pub vertical: bool,
}

impl TextOpts {
    pub fn new(size: f64, color: Rgb, h: HPos, v: VPos) -> Self {
        TextOpts { size, color, h, v, bold: false, italic: false, vertical: false }
    }
}

/// Thin drawing layer over a plotters drawing area, in `f64` pixels.
///
/// Drawing errors are ignored on purpose: the SVG backend writes to a `String` and cannot fail,
/// and a chart is better with one element missing than not at all.
pub(crate) struct Painter<'a, DB: DrawingBackend> {
    area: &'a DrawingArea<DB, Shift>,
}

fn px(v: f64) -> i32 {
    // Saturating float-to-int conversion: absurd coordinates land far off-canvas, not in a panic.
    v.round() as i32
}

fn shape(color: Rgb, alpha: f64, filled: bool, width: u32) -> ShapeStyle {
    ShapeStyle { color: RGBAColor(color.0, color.1, color.2, alpha), filled, stroke_width: width }
}

impl<DB: DrawingBackend> Painter<'_, DB> {
    pub fn text(&self, text: &str, x: f64, y: f64, opts: TextOpts) {
        if text.is_empty() {
            return;
        }
        // XML forbids most control characters, and plotters passes them through.
        let cleaned: String;
        let text = if text.chars().any(char::is_control) {
            cleaned = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
            cleaned.as_str()
        } else {
            text
        };
        let style = match (opts.bold, opts.italic) {
            (true, _) => FontStyle::Bold,
            (false, true) => FontStyle::Italic,
            _ => FontStyle::Normal,
        };
        // The SVG backend writes font-size as size / 1.24 (a points-to-pixels guess); undo it
        // so that sizes here are CSS pixels.
        let mut font = FontDesc::new(FontFamily::Name(FONT_FAMILY), opts.size * 1.24, style);
        if opts.vertical {
            font = font.transform(FontTransform::Rotate270);
        }
        let color = RGBColor(opts.color.0, opts.color.1, opts.color.2);
        let style = TextStyle::from(font).color(&color).pos(Pos::new(opts.h, opts.v));
        let _ = self.area.draw_text(text, &style, (px(x), px(y)));
    }

    pub fn polyline(&self, points: &[(f64, f64)], color: Rgb, width: u32) {
        let points = pixel_path(points);
        if points.len() >= 2 {
            let _ = self.area.draw(&PathElement::new(points, shape(color, 1.0, false, width)));
        }
    }

    pub fn dashed_polyline(&self, points: &[(f64, f64)], color: Rgb, width: u32) {
        // plotters' dashed path emits one element per dash; draw the dashes directly so that
        // they follow the whole path without restarting at each vertex.
        const DASH: f64 = 7.0;
        const GAP: f64 = 4.0;
        let mut on = true;
        let mut left = DASH;
        let mut current: Vec<(f64, f64)> = Vec::new();
        for pair in points.windows(2) {
            let (mut a, b) = (pair[0], pair[1]);
            let mut length = ((b.0 - a.0).powi(2) + (b.1 - a.1).powi(2)).sqrt();
            if !length.is_finite() {
                continue;
            }
            if on && current.is_empty() {
                current.push(a);
            }
            while length > left {
                let t = left / length;
                let cut = (a.0 + (b.0 - a.0) * t, a.1 + (b.1 - a.1) * t);
                if on {
                    current.push(cut);
                    self.polyline(&current, color, width);
                    current.clear();
                } else {
                    current.push(cut);
                }
                on = !on;
                length -= left;
                left = if on { DASH } else { GAP };
                a = cut;
            }
            left -= length;
            if on {
                current.push(b);
            } else {
                current.clear();
            }
        }
        if on {
            self.polyline(&current, color, width);
        }
    }

    pub fn line(&self, from: (f64, f64), to: (f64, f64), color: Rgb, width: u32) {
        self.polyline(&[from, to], color, width);
    }

    pub fn polygon(&self, points: &[(f64, f64)], color: Rgb, alpha: f64) {
        let points = pixel_path(points);
        if points.len() >= 3 {
            let _ = self.area.draw(&Polygon::new(points, shape(color, alpha, true, 0)));
        }
    }

    pub fn rect(&self, x0: f64, y0: f64, x1: f64, y1: f64, color: Rgb, alpha: f64) {
        let (x0, x1) = (x0.min(x1), x0.max(x1));
        let (y0, y1) = (y0.min(y1), y0.max(y1));
        if !(x0.is_finite() && x1.is_finite() && y0.is_finite() && y1.is_finite()) {
            return;
        }
        let corners = [(px(x0), px(y0)), (px(x1).max(px(x0) + 1), px(y1).max(px(y0) + 1))];
        let _ = self.area.draw(&Rectangle::new(corners, shape(color, alpha, true, 0)));
    }

    pub fn circle(&self, center: (f64, f64), radius: u32, color: Rgb, filled: bool) {
        if !(center.0.is_finite() && center.1.is_finite()) {
            return;
        }
        if !filled {
            // A white disc under the ring keeps hollow markers readable over lines.
            let _ = self.area.draw(&Circle::new(
                (px(center.0), px(center.1)),
                radius,
                shape((255, 255, 255), 1.0, true, 0),
            ));
        }
        let style = shape(color, 1.0, filled, if filled { 0 } else { 2 });
        let _ = self.area.draw(&Circle::new((px(center.0), px(center.1)), radius, style));
    }
}

/// Rounds to pixels and drops repeated points, which are common when many samples fall into
/// one pixel.
fn pixel_path(points: &[(f64, f64)]) -> Vec<(i32, i32)> {
    let mut out: Vec<(i32, i32)> = Vec::with_capacity(points.len());
    for &(x, y) in points {
        if !(x.is_finite() && y.is_finite()) {
            continue;
        }
        let p = (px(x), px(y));
        if out.last() != Some(&p) {
            out.push(p);
        }
    }
    out
}

/// Renders a whole SVG document of the given size through `draw`.
pub(crate) fn svg_document(size: (u32, u32), title: &str, draw: impl FnOnce(&Painter<SVGBackend>)) -> String {
    let (width, height) = (size.0.clamp(120, 10_000), size.1.clamp(100, 10_000));
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (width, height)).into_drawing_area();
        let _ = root.fill(&WHITE);
        draw(&Painter { area: &root });
        let _ = root.present();
    }
    // Give screen readers and hovering users the chart's name; plotters has no hook for it.
    let label = escape_html(if title.is_empty() { "chart" } else { title });
    match buf.find("<svg ").and_then(|start| buf[start..].find('>').map(|end| start + end)) {
        Some(end) => {
            let mut out = String::with_capacity(buf.len() + 2 * label.len() + 64);
            out.push_str(&buf[..end]);
            out.push_str(&format!(
                " role=\"img\" aria-label=\"{label}\" class=\"cc-chart\">\n<title>{label}</title>"
            ));
            out.push_str(&buf[end + 1..]);
            out
        }
        None => buf,
    }
}

/// How a series is shown in the legend.
#[derive(Clone, Copy)]
pub(crate) enum Swatch {
    /// A short line, dashed for later colour rounds, with a marker when the series has them.
    Line { dashed: bool, marker: bool },
    /// A filled square (areas, bars).
    Block { alpha: f64 },
}

pub(crate) struct LegendItem {
    pub name: String,
    pub color: Rgb,
    pub swatch: Swatch,
}

const SWATCH_WIDTH: f64 = 22.0;
const SWATCH_GAP: f64 = 6.0;
const ITEM_GAP: f64 = 18.0;
const LEGEND_ROW: f64 = 19.0;
const MAX_LEGEND_ROWS: usize = 5;

/// Draws the title and the legend (centred rows, wrapping) and returns the y where the plot
/// may start.
pub(crate) fn draw_header<DB: DrawingBackend>(
    p: &Painter<DB>,
    width: f64,
    title: &str,
    legend: &[LegendItem],
) -> f64 {
    let mut y = 12.0;
    if !title.is_empty() {
        let mut opts = TextOpts::new(TITLE_SIZE, TEXT, HPos::Center, VPos::Top);
        opts.bold = true;
        p.text(&fit_text(title, TITLE_SIZE * 1.05, width - 24.0), width / 2.0, y, opts);
        y += TITLE_SIZE + 12.0;
    }
    let items: Vec<(String, &LegendItem, f64)> = legend
        .iter()
        .map(|item| {
            let name = fit_text(&truncate(&item.name, MAX_LABEL_CHARS), LEGEND_SIZE, width - 80.0);
            let w = SWATCH_WIDTH + SWATCH_GAP + text_width(&name, LEGEND_SIZE);
            (name, item, w)
        })
        .collect();
    if items.is_empty() {
        return y + 4.0;
    }
    let available = width - 32.0;
    let mut rows: Vec<Vec<usize>> = vec![Vec::new()];
    let mut row_width = 0.0;
    for (i, (_, _, w)) in items.iter().enumerate() {
        let needed = if row_width == 0.0 { *w } else { row_width + ITEM_GAP + w };
        if needed > available && row_width > 0.0 {
            rows.push(vec![i]);
            row_width = *w;
        } else {
            if let Some(row) = rows.last_mut() {
                row.push(i);
            }
            row_width = needed;
        }
    }
    // Hundreds of series would push the plot off the canvas: show five rows and say how many
    // are left out at the end of the last one.
    let mut hidden = 0;
    if rows.len() > MAX_LEGEND_ROWS {
        rows.truncate(MAX_LEGEND_ROWS);
        if let Some(last) = rows.last_mut() {
            last.pop();
        }
        hidden = items.len() - rows.iter().map(Vec::len).sum::<usize>();
    }
    let more = format!("+{hidden} more");
    for (r, row) in rows.iter().enumerate() {
        let with_more = hidden > 0 && r + 1 == rows.len();
        let more_width = if with_more { text_width(&more, LEGEND_SIZE) } else { 0.0 };
        let total: f64 = row.iter().map(|&i| items[i].2 + ITEM_GAP).sum::<f64>() - ITEM_GAP + more_width;
        let mut x = (width - total) / 2.0;
        let mid = y + LEGEND_ROW / 2.0;
        for &i in row {
            let (name, item, w) = &items[i];
            draw_swatch(p, x, mid, item);
            p.text(
                name,
                x + SWATCH_WIDTH + SWATCH_GAP,
                mid,
                TextOpts::new(LEGEND_SIZE, TEXT, HPos::Left, VPos::Center),
            );
            x += w + ITEM_GAP;
        }
        if with_more {
            let mut opts = TextOpts::new(LEGEND_SIZE, MUTED_TEXT, HPos::Left, VPos::Center);
            opts.italic = true;
            p.text(&more, x, mid, opts);
        }
        y += LEGEND_ROW;
    }
    y + 8.0
}

fn draw_swatch<DB: DrawingBackend>(p: &Painter<DB>, x: f64, mid: f64, item: &LegendItem) {
    match item.swatch {
        Swatch::Line { dashed, marker } => {
            let line = [(x, mid), (x + SWATCH_WIDTH, mid)];
            if dashed {
                p.dashed_polyline(&line, item.color, 2);
            } else {
                p.polyline(&line, item.color, 2);
            }
            if marker {
                p.circle((x + SWATCH_WIDTH / 2.0, mid), 3, item.color, !dashed);
            }
        }
        Swatch::Block { alpha } => {
            let side = 12.0;
            let x0 = x + (SWATCH_WIDTH - side) / 2.0;
            p.rect(x0, mid - side / 2.0, x0 + side, mid + side / 2.0, item.color, alpha);
        }
    }
}

/// Whether `v` can be placed on an axis of this scale.
pub(crate) fn valid_on(scale: Scale, v: f64) -> bool {
    v.is_finite() && (scale == Scale::Linear || v > 0.0)
}

/// An axis fitted to data and pixels: its shown range, ticks and their labels.
#[derive(Clone, Debug)]
pub(crate) struct Resolved {
    pub scale: Scale,
    pub lo: f64,
    pub hi: f64,
    pub ticks: Vec<f64>,
    pub labels: Vec<String>,
}

impl Resolved {
    fn transform(&self, v: f64) -> f64 {
        match self.scale {
            Scale::Linear => v,
            Scale::Log2 => v.log2(),
            Scale::Log10 => v.log10(),
        }
    }

    /// Position of `v` between the range ends as 0..1 (outside for values out of range), or
    /// `None` when the value cannot be placed on this scale.
    pub fn frac(&self, v: f64) -> Option<f64> {
        if !valid_on(self.scale, v) {
            return None;
        }
        let (a, b) = (self.transform(self.lo), self.transform(self.hi));
        let span = b - a;
        if !(span.is_finite() && span > 0.0) {
            return Some(0.5);
        }
        let f = (self.transform(v) - a) / span;
        // Keep wildly out-of-range values finite and far off the plot; clipping removes them.
        f.is_finite().then_some(f.clamp(-1e6, 1e6))
    }

    /// The value at the bottom of bars and areas: zero, or the lower end when zero is not shown.
    pub fn baseline(&self) -> f64 {
        if self.scale == Scale::Linear && self.lo <= 0.0 && self.hi >= 0.0 {
            0.0
        } else if self.scale == Scale::Linear && self.hi < 0.0 {
            self.hi
        } else {
            self.lo
        }
    }
}

/// Fits an axis to `values` over `length` pixels, choosing the densest ticks whose labels do
/// not collide.
pub(crate) fn resolve_axis(
    axis: &Axis,
    values: impl IntoIterator<Item = f64>,
    zero_by_default: bool,
    length: f64,
    horizontal: bool,
) -> Resolved {
    let scale = axis.scale;
    let mut data: Option<(f64, f64)> = None;
    for v in values.into_iter().filter(|&v| valid_on(scale, v)) {
        data = Some(data.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))));
    }
    let range = axis
        .range
        .filter(|&(a, b)| valid_on(scale, a) && valid_on(scale, b) && a != b)
        .map(|(a, b)| (a.min(b), a.max(b)));
    let default = if scale == Scale::Linear { (0.0, 1.0) } else { (1.0, 2.0) };
    let (mut lo, mut hi) = range.or(data).unwrap_or(default);
    if range.is_none() && scale == Scale::Linear && axis.include_zero.unwrap_or(zero_by_default) {
        lo = lo.min(0.0);
        hi = hi.max(0.0);
    }
    let build = |target: usize| -> Resolved {
        let mut ticks = match scale {
            Scale::Linear => match axis.format {
                ValueFormat::Bytes => ticks::byte_ticks(lo, hi, target),
                ValueFormat::DurationNs => ticks::duration_ticks(lo, hi, target),
                ValueFormat::Count => count_ticks(lo, hi, target),
                _ => ticks::nice_ticks(lo, hi, target),
            },
            Scale::Log2 => ticks::log_ticks(lo, hi, 2.0, target + 1),
            Scale::Log10 => ticks::log_ticks(lo, hi, 10.0, target + 1),
        };
        let (shown_lo, shown_hi) = if range.is_some() || ticks.len() < 2 {
            let slack = (hi - lo).abs() * 1e-9;
            ticks.retain(|&t| t >= lo - slack && t <= hi + slack);
            (lo, hi)
        } else {
            (ticks[0], ticks[ticks.len() - 1])
        };
        let labels = ticks.iter().map(|&t| axis.format.format(t)).collect();
        Resolved { scale, lo: shown_lo, hi: shown_hi, ticks, labels }
    };
    let fits = |r: &Resolved| -> bool {
        let positions: Vec<f64> = r.ticks.iter().filter_map(|&t| r.frac(t)).map(|f| f * length).collect();
        positions.windows(2).zip(r.labels.windows(2)).all(|(pos, labels)| {
            let needed = if horizontal {
                (text_width(&labels[0], LABEL_SIZE) + text_width(&labels[1], LABEL_SIZE)) / 2.0 + 12.0
            } else {
                LABEL_SIZE * 2.2
            };
            pos[1] - pos[0] >= needed
        })
    };
    let most = if horizontal { 10 } else { ((length / (LABEL_SIZE * 3.0)) as usize).clamp(2, 10) };
    (2..=most).rev().map(build).find(fits).unwrap_or_else(|| build(1))
}

/// Nice ticks that stay on whole numbers.
fn count_ticks(lo: f64, hi: f64, target: usize) -> Vec<f64> {
    let ticks = ticks::nice_ticks(lo, hi, target);
    if ticks.iter().all(|t| t.fract() == 0.0) {
        return ticks;
    }
    let (first, last) = (lo.floor(), hi.ceil().max(lo.floor() + 1.0));
    if last - first > ticks::MAX_TICKS as f64 {
        return ticks;
    }
    let mut whole = Vec::new();
    let mut t = first;
    while t <= last {
        whole.push(t);
        t += 1.0;
    }
    whole
}

/// Space reserved below the plot for x tick labels and the x axis title.
pub(crate) fn x_axis_height(title: &str) -> f64 {
    LABEL_SIZE + 12.0 + if title.is_empty() { 0.0 } else { AXIS_TITLE_SIZE + 12.0 }
}

/// Space reserved left of the plot for y tick labels and the y axis title.
pub(crate) fn y_axis_width(y: &Resolved, title: &str) -> f64 {
    let widest = y.labels.iter().map(|l| text_width(l, LABEL_SIZE)).fold(0.0, f64::max);
    12.0 + widest + 8.0 + if title.is_empty() { 0.0 } else { AXIS_TITLE_SIZE + 10.0 }
}

/// Plot area and both axes of an x/y chart, laid out inside `width × height` below `top`.
pub(crate) struct XyLayout {
    pub plot: Rect,
    pub x: Resolved,
    pub y: Resolved,
}

pub(crate) struct XyData<'a> {
    pub axis: &'a Axis,
    pub values: Vec<f64>,
    pub zero_by_default: bool,
}

pub(crate) fn layout_xy(width: f64, height: f64, top: f64, x: XyData<'_>, y: XyData<'_>) -> XyLayout {
    let bottom = (height - 6.0 - x_axis_height(&x.axis.title)).max(top + 40.0);
    let top = top + LABEL_SIZE / 2.0;
    let y_axis = resolve_axis(y.axis, y.values, y.zero_by_default, bottom - top, false);
    let left = y_axis_width(&y_axis, &y.axis.title);
    let provisional_right = width - 20.0;
    let x_axis = resolve_axis(x.axis, x.values, x.zero_by_default, provisional_right - left, true);
    let first = x_axis.labels.first().map_or(0.0, |l| text_width(l, LABEL_SIZE));
    let last = x_axis.labels.last().map_or(0.0, |l| text_width(l, LABEL_SIZE));
    let left = left.max(first / 2.0 + 8.0);
    let right = (width - (last / 2.0 + 8.0).max(20.0)).max(left + 40.0);
    XyLayout { plot: Rect { left, top, right, bottom }, x: x_axis, y: y_axis }
}

/// Pixel position of an x value inside the plot (may lie outside for out-of-range values).
pub(crate) fn x_px(plot: &Rect, axis: &Resolved, v: f64) -> Option<f64> {
    axis.frac(v).map(|f| plot.left + f * plot.width())
}

/// Pixel position of a y value inside the plot (may lie outside for out-of-range values).
pub(crate) fn y_px(plot: &Rect, axis: &Resolved, v: f64) -> Option<f64> {
    axis.frac(v).map(|f| plot.bottom - f * plot.height())
}

/// Horizontal grid lines, y tick labels and the rotated y title.
pub(crate) fn draw_y_axis<DB: DrawingBackend>(p: &Painter<DB>, plot: &Rect, y: &Resolved, title: &str) {
    for (tick, label) in y.ticks.iter().zip(&y.labels) {
        let Some(py) = y_px(plot, y, *tick) else { continue };
        if py < plot.top - 0.5 || py > plot.bottom + 0.5 {
            continue;
        }
        p.line((plot.left, py), (plot.right, py), GRID, 1);
        p.text(label, plot.left - 8.0, py, TextOpts::new(LABEL_SIZE, MUTED_TEXT, HPos::Right, VPos::Center));
    }
    if y.scale == Scale::Linear && y.lo < 0.0 && y.hi > 0.0 {
        if let Some(py) = y_px(plot, y, 0.0) {
            p.line((plot.left, py), (plot.right, py), AXIS_LINE, 1);
        }
    }
    if !title.is_empty() {
        let mut opts = TextOpts::new(AXIS_TITLE_SIZE, TEXT, HPos::Center, VPos::Top);
        opts.vertical = true;
        let fitted = fit_text(title, AXIS_TITLE_SIZE, plot.height() + 20.0);
        p.text(&fitted, 10.0, (plot.top + plot.bottom) / 2.0, opts);
    }
}

/// Vertical grid lines, tick marks, x tick labels and the x title.
pub(crate) fn draw_x_axis<DB: DrawingBackend>(p: &Painter<DB>, plot: &Rect, x: &Resolved, title: &str) {
    for (tick, label) in x.ticks.iter().zip(&x.labels) {
        let Some(px) = x_px(plot, x, *tick) else { continue };
        if px < plot.left - 0.5 || px > plot.right + 0.5 {
            continue;
        }
        p.line((px, plot.top), (px, plot.bottom), GRID, 1);
        p.line((px, plot.bottom), (px, plot.bottom + 4.0), AXIS_LINE, 1);
        p.text(label, px, plot.bottom + 7.0, TextOpts::new(LABEL_SIZE, MUTED_TEXT, HPos::Center, VPos::Top));
    }
    draw_x_title(p, plot, title, plot.bottom + LABEL_SIZE + 14.0);
}

pub(crate) fn draw_x_title<DB: DrawingBackend>(p: &Painter<DB>, plot: &Rect, title: &str, y: f64) {
    if !title.is_empty() {
        let fitted = fit_text(title, AXIS_TITLE_SIZE, plot.width() + 40.0);
        p.text(
            &fitted,
            (plot.left + plot.right) / 2.0,
            y,
            TextOpts::new(AXIS_TITLE_SIZE, TEXT, HPos::Center, VPos::Top),
        );
    }
}

/// The left and bottom axis lines, drawn last so that data does not cover them.
pub(crate) fn draw_axis_lines<DB: DrawingBackend>(p: &Painter<DB>, plot: &Rect) {
    p.polyline(&[(plot.left, plot.top), (plot.left, plot.bottom), (plot.right, plot.bottom)], AXIS_LINE, 1);
}

/// The note shown in place of data when nothing could be drawn.
pub(crate) fn draw_no_data<DB: DrawingBackend>(p: &Painter<DB>, plot: &Rect) {
    let mut opts = TextOpts::new(13.0, MUTED_TEXT, HPos::Center, VPos::Center);
    opts.italic = true;
    p.text("no data", (plot.left + plot.right) / 2.0, (plot.top + plot.bottom) / 2.0, opts);
}

/// Splits a polyline into the runs that lie inside `rect`, cutting segments at its border
/// (Liang–Barsky).
pub(crate) fn clip_polyline(points: &[(f64, f64)], rect: &Rect) -> Vec<Vec<(f64, f64)>> {
    let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut current: Vec<(f64, f64)> = Vec::new();
    if points.len() == 1 {
        let (x, y) = points[0];
        if x >= rect.left && x <= rect.right && y >= rect.top && y <= rect.bottom {
            runs.push(vec![points[0]]);
        }
        return runs;
    }
    for pair in points.windows(2) {
        match clip_segment(pair[0], pair[1], rect) {
            Some((a, b)) => {
                if current.last() != Some(&a) {
                    if !current.is_empty() {
                        runs.push(std::mem::take(&mut current));
                    }
                    current.push(a);
                }
                current.push(b);
            }
            None => {
                if !current.is_empty() {
                    runs.push(std::mem::take(&mut current));
                }
            }
        }
    }
    if !current.is_empty() {
        runs.push(current);
    }
    runs
}

fn clip_segment(a: (f64, f64), b: (f64, f64), r: &Rect) -> Option<((f64, f64), (f64, f64))> {
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let (mut t0, mut t1) = (0.0f64, 1.0f64);
    for (p, q) in [(-dx, a.0 - r.left), (dx, r.right - a.0), (-dy, a.1 - r.top), (dy, r.bottom - a.1)] {
        if p == 0.0 {
            if q < 0.0 {
                return None;
            }
        } else {
            let t = q / p;
            if p < 0.0 {
                t0 = t0.max(t);
            } else {
                t1 = t1.min(t);
            }
            if t0 > t1 {
                return None;
            }
        }
    }
    let at = |t: f64| (a.0 + dx * t, a.1 + dy * t);
    Some((at(t0), at(t1)))
}

/// Reduces a long pixel polyline to at most four points per pixel column (first, lowest,
/// highest, last), which draws the same picture with far fewer points.
pub(crate) fn decimate(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    let mut i = 0;
    while i < points.len() {
        let column = points[i].0.round();
        let mut j = i;
        while j < points.len() && points[j].0.round() == column {
            j += 1;
        }
        let bucket = &points[i..j];
        if bucket.len() <= 4 {
            out.extend_from_slice(bucket);
        } else {
            let by_y = |a: &&(f64, f64), b: &&(f64, f64)| a.1.total_cmp(&b.1);
            let low = bucket.iter().min_by(by_y).copied();
            let high = bucket.iter().max_by(by_y).copied();
            let first = bucket[0];
            let last = bucket[bucket.len() - 1];
            // Keep the extremes in the order they occurred, so the path does not double back.
            let mut extremes: Vec<(usize, (f64, f64))> = [low, high]
                .into_iter()
                .flatten()
                .filter_map(|p| bucket.iter().position(|q| *q == p).map(|k| (k, p)))
                .collect();
            extremes.sort_by_key(|(k, _)| *k);
            out.push(first);
            out.extend(extremes.into_iter().map(|(_, p)| p));
            out.push(last);
        }
        i = j;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOX: Rect = Rect { left: 0.0, top: 0.0, right: 10.0, bottom: 10.0 };

    #[test]
    fn clipping_cuts_segments_at_the_border() {
        let runs = clip_polyline(&[(-5.0, 5.0), (5.0, 5.0), (15.0, 5.0)], &BOX);
        assert_eq!(runs, vec![vec![(0.0, 5.0), (5.0, 5.0), (10.0, 5.0)]]);
        // Leaving and re-entering makes two runs.
        let runs = clip_polyline(&[(1.0, 1.0), (1.0, 20.0), (2.0, 2.0)], &BOX);
        assert_eq!(runs.len(), 2);
        assert!(clip_polyline(&[(20.0, 20.0), (30.0, 30.0)], &BOX).is_empty());
        assert_eq!(clip_polyline(&[(3.0, 3.0)], &BOX), vec![vec![(3.0, 3.0)]]);
        assert!(clip_polyline(&[(f64::NAN, 3.0), (4.0, 4.0)], &BOX).len() <= 1);
    }

    #[test]
    fn decimation_keeps_extremes_in_order() {
        let points: Vec<(f64, f64)> =
            (0..1000).map(|i| (i as f64 / 100.0, ((i * 37) % 101) as f64)).collect();
        let thin = decimate(&points);
        assert!(thin.len() <= 4 * 11, "{}", thin.len());
        for column in 0..10 {
            let bucket: Vec<f64> =
                points.iter().filter(|p| p.0.round() as i32 == column).map(|p| p.1).collect();
            let kept: Vec<f64> = thin.iter().filter(|p| p.0.round() as i32 == column).map(|p| p.1).collect();
            let max = bucket.iter().copied().fold(f64::MIN, f64::max);
            let min = bucket.iter().copied().fold(f64::MAX, f64::min);
            assert!(kept.contains(&max) && kept.contains(&min), "column {column}");
        }
        assert!(thin.windows(2).all(|w| w[0].0 <= w[1].0), "x never goes back");
    }

    #[test]
    fn text_fitting() {
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
        assert_eq!(fit_text("short", 12.0, 500.0), "short");
        let long = "x".repeat(1_000_000);
        let fitted = fit_text(&long, 12.0, 100.0);
        assert!(text_width(&fitted, 12.0) <= 100.0 && fitted.ends_with('…'));
        assert_eq!(fit_text("wide", 12.0, 0.0).chars().count(), 1);
        assert!(text_width("MMMM", 12.0) > text_width("iiii", 12.0));
    }

    #[test]
    fn axis_fitting_avoids_label_collisions() {
        let axis = Axis::new("").format(ValueFormat::Bytes);
        let narrow = resolve_axis(&axis, [0.0, 1e12], false, 150.0, true);
        let wide = resolve_axis(&axis, [0.0, 1e12], false, 1500.0, true);
        assert!(narrow.ticks.len() < wide.ticks.len(), "{narrow:?} / {wide:?}");
        assert!(narrow.ticks.len() >= 2);
        let log = resolve_axis(&Axis::new("").scale(Scale::Log2), [0.0, -1.0, 8.0, 64.0], false, 600.0, true);
        assert_eq!(log.ticks, vec![8.0, 16.0, 32.0, 64.0]);
        let fixed = resolve_axis(&Axis::new("").range(0.0, 1.0), [5.0], true, 300.0, false);
        assert_eq!((fixed.lo, fixed.hi), (0.0, 1.0));
        assert!(fixed.frac(5.0).is_some_and(|f| f > 1.0), "out-of-range values lie outside 0..1");
    }
}
