//! Charts rendered to standalone SVG strings: [`LineChart`], [`StackedAreaChart`] and
//! [`BarChart`], configured through [`Axis`] and [`ValueFormat`].
//!
//! Every chart is a plain builder: collect data, then call [`Chart::to_svg`]. Rendering never
//! fails and never panics; points that cannot be drawn (NaN, infinities, non-positive values on
//! a logarithmic axis) are skipped, and a chart without drawable data still renders its frame
//! with a "no data" note.

use std::fmt;
use std::sync::Arc;

use crate::format;

mod area;
mod bar;
mod frame;
mod line;

pub use area::StackedAreaChart;
pub use bar::BarChart;
pub use line::LineChart;

/// Anything that renders itself as one standalone `<svg>` element.
pub trait Chart {
    /// The chart as an SVG document fragment (`<svg …>…</svg>`), suitable for inlining in HTML
    /// or writing to a `.svg` file. All text taken from the caller is escaped.
    fn to_svg(&self) -> String;
}

/// The fixed, colour-blind-safe series palette (Okabe & Ito, "Color Universal Design"), in the
/// order series receive it. Series past the eighth reuse it with dashed lines and hollow
/// markers (line charts) or lighter fills (areas, bars).
pub const PALETTE: [(u8, u8, u8); 8] = [
    (0x00, 0x72, 0xB2), // blue
    (0xE6, 0x9F, 0x00), // orange
    (0x00, 0x9E, 0x73), // bluish green
    (0xD5, 0x5E, 0x00), // vermillion
    (0xCC, 0x79, 0xA7), // reddish purple
    (0x56, 0xB4, 0xE9), // sky blue
    (0x00, 0x00, 0x00), // black
    (0xF0, 0xE4, 0x42), // yellow: last, as it is faint as a thin line on white
];

/// The palette colour of series number `index` as CSS hex (`#0072b2`), for legends drawn
/// outside a chart.
pub fn series_color(index: usize) -> String {
    let (r, g, b) = PALETTE[index % PALETTE.len()];
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// How values on an axis (and value labels) are printed.
#[derive(Clone, Default)]
pub enum ValueFormat {
    /// Plain numbers: [`format::format_number`].
    #[default]
    Number,
    /// Whole counts with thousands separators; ticks stay on integers.
    Count,
    /// Bytes in binary units ([`format::format_bytes_f64`]); linear ticks step by powers of two.
    Bytes,
    /// Fractions shown as percentages (`0.42` → `42%`, [`format::format_percent_short`]).
    Percent,
    /// Nanoseconds shown as durations ([`format::format_duration_ns_f64`]); linear ticks step
    /// by clock units (seconds, minutes, hours, days).
    DurationNs,
    /// Any other formatter, e.g. `ValueFormat::custom(|v| format!("{v:.1} ms"))`.
    Custom(Arc<dyn Fn(f64) -> String + Send + Sync>),
}

impl ValueFormat {
    /// Wraps a closure as a [`ValueFormat::Custom`] formatter.
    pub fn custom(f: impl Fn(f64) -> String + Send + Sync + 'static) -> Self {
        ValueFormat::Custom(Arc::new(f))
    }

    /// Formats one value.
    pub fn format(&self, value: f64) -> String {
        match self {
            ValueFormat::Number => format::format_number(value),
            ValueFormat::Count if value.is_finite() && value.fract() == 0.0 && value.abs() < 1e18 => {
                let text = format::format_count(value.abs() as u64);
                if value < 0.0 {
                    format!("-{text}")
                } else {
                    text
                }
            }
            ValueFormat::Count => format::format_number(value),
            ValueFormat::Bytes => format::format_bytes_f64(value),
            ValueFormat::Percent => format::format_percent_short(value),
            ValueFormat::DurationNs => format::format_duration_ns_f64(value),
            ValueFormat::Custom(f) => f(value),
        }
    }
}

impl fmt::Debug for ValueFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            ValueFormat::Number => "Number",
            ValueFormat::Count => "Count",
            ValueFormat::Bytes => "Bytes",
            ValueFormat::Percent => "Percent",
            ValueFormat::DurationNs => "DurationNs",
            ValueFormat::Custom(_) => "Custom(..)",
        };
        f.write_str(name)
    }
}

/// How positions along an axis map to values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scale {
    /// Evenly spaced values, ticks at round numbers.
    #[default]
    Linear,
    /// Doubling per step, ticks at powers of two (cache sizes: 16 MiB, 32 MiB, …).
    Log2,
    /// Tenfold per step, ticks at powers of ten.
    Log10,
}

/// One axis of a chart: its title, value format, scale and optional fixed range.
///
/// ```
/// use cloudcache_report::{Axis, Scale, ValueFormat};
/// let x = Axis::new("cache size").scale(Scale::Log2).format(ValueFormat::Bytes);
/// let y = Axis::new("hit ratio").format(ValueFormat::Percent).range(0.0, 1.0);
/// # let _ = (x, y);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Axis {
    pub(crate) title: String,
    pub(crate) format: ValueFormat,
    pub(crate) scale: Scale,
    pub(crate) range: Option<(f64, f64)>,
    pub(crate) include_zero: Option<bool>,
}

impl Axis {
    /// An axis with a title (may be empty), plain number labels and a linear scale.
    pub fn new(title: impl Into<String>) -> Self {
        Axis { title: title.into(), ..Axis::default() }
    }

    /// Sets how tick labels are printed.
    pub fn format(mut self, format: ValueFormat) -> Self {
        self.format = format;
        self
    }

    /// Sets the scale. On a logarithmic scale, non-positive values are not drawn.
    pub fn scale(mut self, scale: Scale) -> Self {
        self.scale = scale;
        self
    }

    /// Fixes the shown range instead of fitting it to the data; data outside is clipped.
    /// A range that is empty, not finite, or not positive on a log scale is ignored.
    pub fn range(mut self, min: f64, max: f64) -> Self {
        self.range = Some((min, max));
        self
    }

    /// Whether a fitted linear range is stretched to include zero. Defaults to yes for value
    /// axes (so that bars and ratios are not exaggerated) and no for line charts' x axes.
    pub fn include_zero(mut self, include: bool) -> Self {
        self.include_zero = Some(include);
        self
    }
}

/// Width and height of a chart in SVG user units (CSS pixels at 100 %).
pub(crate) const DEFAULT_SIZE: (u32, u32) = (760, 400);
