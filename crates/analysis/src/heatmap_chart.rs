//! The LBA x time heat map as an SVG chart (the report crate has line, area
//! and bar charts; a grid of shaded cells is drawn here directly).

use std::fmt::Write;

use cloudcache_report::{escape_html, format_bytes, format_count, format_duration_ns, Chart};

use crate::characterize::HeatMap;

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 420.0;
const LEFT: f64 = 96.0;
const RIGHT: f64 = 110.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 48.0;

/// A heat map of block accesses; darker is more (log scale).
pub struct HeatMapChart<'a> {
    /// The data.
    pub map: &'a HeatMap,
    /// Block size (for LBA labels in bytes).
    pub block_size: u64,
}

/// White to the report palette's blue, by `t` in [0, 1].
fn shade(t: f64) -> String {
    let t = t.clamp(0.0, 1.0);
    let mix = |from: f64, to: f64| (from + (to - from) * t).round() as u8;
    format!("#{:02x}{:02x}{:02x}", mix(255.0, 0x08 as f64), mix(255.0, 0x30 as f64), mix(255.0, 0x6b as f64))
}

impl Chart for HeatMapChart<'_> {
    fn to_svg(&self) -> String {
        let m = self.map;
        let mut svg = String::new();
        let _ = write!(
            svg,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"{WIDTH}\" \
             height=\"{HEIGHT}\" font-family=\"sans-serif\" font-size=\"12\">\
             <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\
             <text x=\"{}\" y=\"20\" text-anchor=\"middle\" font-size=\"15\" font-weight=\"bold\">\
             Block accesses by address and time: {}</text>",
            WIDTH / 2.0,
            escape_html(&m.volume)
        );
        let rows = m.counts.len();
        let cols = m.counts.first().map_or(0, Vec::len);
        let max = m.counts.iter().flatten().copied().max().unwrap_or(0);
        if rows == 0 || cols == 0 || max == 0 {
            let _ = write!(
                svg,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">no data</text></svg>",
                WIDTH / 2.0,
                HEIGHT / 2.0
            );
            return svg;
        }
        let (pw, ph) = (WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM);
        let (cw, ch) = (pw / cols as f64, ph / rows as f64);
        let scale = ((max + 1) as f64).ln();
        for (row, cells) in m.counts.iter().enumerate() {
            // Row 0 (lowest addresses) at the bottom.
            let y = TOP + ph - (row + 1) as f64 * ch;
            for (col, &n) in cells.iter().enumerate() {
                if n == 0 {
                    continue;
                }
                let _ = write!(
                    svg,
                    "<rect x=\"{:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{:.2}\" fill=\"{}\"/>",
                    LEFT + col as f64 * cw,
                    y,
                    cw + 0.3,
                    ch + 0.3,
                    shade(((n + 1) as f64).ln() / scale)
                );
            }
        }
        let _ = write!(
            svg,
            "<rect x=\"{LEFT}\" y=\"{TOP}\" width=\"{pw}\" height=\"{ph}\" fill=\"none\" stroke=\"#444\"/>"
        );
        // Address labels: bottom and top of the range, and the middle.
        let lba = |row: u64| format_bytes((m.first_block + row * m.blocks_per_row) * self.block_size);
        for (frac, row) in [(0.0, 0u64), (0.5, rows as u64 / 2), (1.0, rows as u64)] {
            let _ = write!(
                svg,
                "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" dominant-baseline=\"middle\">{}</text>",
                LEFT - 6.0,
                TOP + ph - frac * ph,
                lba(row)
            );
        }
        let span = m.per_column * cols as u64;
        let when = |t: u64| {
            if m.time_columns {
                format_duration_ns(t)
            } else {
                format!("request {}", format_count(t))
            }
        };
        for (frac, t) in [(0.0, 0u64), (0.5, span / 2), (1.0, span)] {
            let _ = write!(
                svg,
                "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                LEFT + frac * pw,
                TOP + ph + 18.0,
                when(t)
            );
        }
        let _ = write!(
            svg,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>\
             <text x=\"16\" y=\"{:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {:.1})\">address (byte offset)</text>",
            LEFT + pw / 2.0,
            HEIGHT - 8.0,
            if m.time_columns { "time since the first request" } else { "request number" },
            TOP + ph / 2.0,
            TOP + ph / 2.0
        );
        // Legend: a vertical ramp with its extremes.
        let lx = WIDTH - RIGHT + 24.0;
        for i in 0..20 {
            let t = 1.0 - i as f64 / 19.0;
            let _ = write!(
                svg,
                "<rect x=\"{lx}\" y=\"{:.1}\" width=\"16\" height=\"{:.1}\" fill=\"{}\"/>",
                TOP + i as f64 * ph / 20.0,
                ph / 20.0 + 0.3,
                shade(t)
            );
        }
        let _ = write!(
            svg,
            "<text x=\"{}\" y=\"{}\" dominant-baseline=\"middle\">{}</text>\
             <text x=\"{}\" y=\"{}\" dominant-baseline=\"middle\">1</text>\
             <text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">accesses per cell (log scale)</text></svg>",
            lx + 20.0,
            TOP + 4.0,
            format_count(max),
            lx + 20.0,
            TOP + ph - 4.0,
            WIDTH - 4.0,
            TOP - 6.0
        );
        svg
    }
}
