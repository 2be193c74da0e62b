//! Self-contained SVG charts and HTML reports for cloudcache results.
//!
//! The simulator (`cloudcache sim`, `cloudcache demo`) and the analyzer turn their results into
//! something a person would rather look at than read: one `report.html` that opens in any
//! browser without network access, with tables and inline SVG plots. This crate is the
//! general part of that and knows nothing about caches: line charts (optionally over a log2 or
//! log10 x axis, for cache-size sweeps), stacked step/area charts over time (per-VM shares),
//! grouped bar charts, a report builder, and formatting helpers for bytes, percentages,
//! durations and counts that charts and tables share.
//!
//! ```
//! use cloudcache_report::{Axis, Chart, LineChart, Report, Scale, Table, ValueFormat};
//!
//! let mib = |n: u64| (n << 20) as f64;
//! let chart = LineChart::new("Hit ratio by cache size")
//!     .x_axis(Axis::new("cache size").scale(Scale::Log2).format(ValueFormat::Bytes))
//!     .y_axis(Axis::new("hit ratio").format(ValueFormat::Percent))
//!     .series("LRU", [(mib(16), 0.31), (mib(64), 0.52), (mib(256), 0.70)]);
//! let mut report = Report::new("cloudcache sim");
//! report
//!     .section("Hit ratio")
//!     .paragraph("Read hit ratio of each policy at each cache size.")
//!     .chart(&chart)
//!     .table(Table::new(["size", "LRU"]).with_row(["16 MiB", "31%"]));
//! let html = report.render();
//! assert!(html.contains("<svg") && html.contains("16 MiB"));
//! ```
//!
//! # Why plotters, and how little of it
//!
//! Charts are drawn with the [`plotters`] crate's SVG backend, built with
//! `default-features = false, features = ["svg_backend"]`. Tried in a scratch crate first:
//! that build pulls in only `plotters-backend`, `plotters-svg` and `num-traits` — no
//! `font-kit`, `fontconfig` or `freetype` — and still renders titles and labels, because the
//! SVG backend writes `<text>` elements and leaves glyph layout to the browser (text size is
//! only estimated, which is all a browser-rendered SVG allows anyway). So a fresh CI machine
//! needs no system font libraries, and the drawing code, being generic over plotters'
//! `DrawingBackend`, could later also feed its bitmap backend for PNG output.
//!
//! Only plotters' drawing primitives (paths, polygons, rectangles, circles, text) are used.
//! Axes, ticks, legends and layout are done here: plotters' mesh drawing is not available for
//! ranges with caller-chosen tick positions (`WithKeyPoints` over `f64` or a log range does not
//! satisfy its formatter bounds), and its series legend sits inside the plot, over the data.
//! Ticks come from [`ticks`] (round numbers; powers of two for sizes; clock units for time),
//! the legend sits above the plot, and label widths are estimated generously so that labels
//! do not collide whichever sans-serif font the browser picks.
//!
//! Nothing here panics on data: NaN, infinities, empty series, single points and constant
//! values all render (skipped, or as a valid frame with a "no data" note).

pub mod chart;
pub mod format;
pub mod html;
pub mod ticks;

pub use chart::{
    series_color, Axis, BarChart, Chart, LineChart, Scale, StackedAreaChart, ValueFormat, PALETTE,
};
pub use format::{
    format_bytes, format_bytes_f64, format_count, format_duration_ns, format_duration_ns_f64, format_number,
    format_percent, format_percent_short,
};
pub use html::{escape_html, Align, Report, Section, Table};
