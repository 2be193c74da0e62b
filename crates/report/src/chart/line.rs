//! Line charts: several named series of (x, y) points over shared axes.

use plotters::prelude::DrawingBackend;

use super::frame::{self, Painter, Rect, Swatch, XyData};
use super::{Axis, Chart, DEFAULT_SIZE};

/// Named series of (x, y) points drawn as lines, e.g. hit ratio against cache size per policy.
///
/// Points are joined in the order given. A point that cannot be drawn (NaN or infinite, or
/// not positive on a logarithmic axis) is skipped and breaks the line, so gaps in the data
/// show as gaps. Series with few points get a marker at each point; a lone point always does.
///
/// ```
/// use cloudcache_report::{Axis, Chart, LineChart, Scale, ValueFormat};
/// let mib = |n: u64| (n << 20) as f64;
/// let svg = LineChart::new("Hit ratio by cache size")
///     .x_axis(Axis::new("cache size").scale(Scale::Log2).format(ValueFormat::Bytes))
///     .y_axis(Axis::new("hit ratio").format(ValueFormat::Percent).range(0.0, 1.0))
///     .series("LRU", [(mib(16), 0.31), (mib(64), 0.52), (mib(256), 0.70)])
///     .series("FIFO", [(mib(16), 0.27), (mib(64), 0.47), (mib(256), 0.66)])
///     .to_svg();
/// assert!(svg.starts_with("<svg") && svg.contains("64 MiB"));
/// ```
#[derive(Clone, Debug)]
pub struct LineChart {
    title: String,
    size: (u32, u32),
    x: Axis,
    y: Axis,
    series: Vec<(String, Vec<(f64, f64)>)>,
    markers: Option<bool>,
}

/// Series with at most this many points get markers unless told otherwise.
const AUTO_MARKER_POINTS: usize = 60;

impl LineChart {
    /// An empty chart with a title (may be empty) and untitled linear axes.
    pub fn new(title: impl Into<String>) -> Self {
        LineChart {
            title: title.into(),
            size: DEFAULT_SIZE,
            x: Axis::default(),
            y: Axis::default(),
            series: Vec::new(),
            markers: None,
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

    /// Sets the y axis. Its fitted range includes zero unless [`Axis::include_zero`] says not.
    pub fn y_axis(mut self, axis: Axis) -> Self {
        self.y = axis;
        self
    }

    /// Adds a series. An empty name is allowed; a lone unnamed series gets no legend.
    pub fn series(mut self, name: impl Into<String>, points: impl IntoIterator<Item = (f64, f64)>) -> Self {
        self.add_series(name, points);
        self
    }

    /// Adds a series to a chart held by reference (for building in a loop).
    pub fn add_series(
        &mut self,
        name: impl Into<String>,
        points: impl IntoIterator<Item = (f64, f64)>,
    ) -> &mut Self {
        self.series.push((name.into(), points.into_iter().collect()));
        self
    }

    /// Forces point markers on or off (by default, on for series of at most 60 points).
    pub fn markers(mut self, on: bool) -> Self {
        self.markers = Some(on);
        self
    }

    fn drawable(&self, point: (f64, f64)) -> bool {
        frame::valid_on(self.x.scale, point.0) && frame::valid_on(self.y.scale, point.1)
    }

    fn series_markers(&self, points: &[(f64, f64)]) -> bool {
        self.markers
            .unwrap_or_else(|| points.iter().filter(|&&p| self.drawable(p)).count() <= AUTO_MARKER_POINTS)
    }

    fn draw<DB: DrawingBackend>(&self, p: &Painter<DB>) {
        let (width, height) = (f64::from(self.size.0), f64::from(self.size.1));
        let legend: Vec<frame::LegendItem> = if self.series.len() == 1 && self.series[0].0.is_empty() {
            Vec::new()
        } else {
            self.series
                .iter()
                .enumerate()
                .map(|(i, (name, points))| {
                    let (color, later_round) = frame::series_rgb(i);
                    let marker = self.series_markers(points);
                    frame::LegendItem {
                        name: name.clone(),
                        color,
                        swatch: Swatch::Line { dashed: later_round, marker },
                    }
                })
                .collect()
        };
        let top = frame::draw_header(p, width, &self.title, &legend);
        let drawable =
            || self.series.iter().flat_map(|(_, pts)| pts.iter().copied()).filter(|&pt| self.drawable(pt));
        let layout = frame::layout_xy(
            width,
            height,
            top,
            XyData { axis: &self.x, values: drawable().map(|pt| pt.0).collect(), zero_by_default: false },
            XyData { axis: &self.y, values: drawable().map(|pt| pt.1).collect(), zero_by_default: true },
        );
        let plot = layout.plot;
        frame::draw_y_axis(p, &plot, &layout.y, &self.y.title);
        frame::draw_x_axis(p, &plot, &layout.x, &self.x.title);
        // Lines on the border (a ratio of exactly 1.0 on a 0..1 axis) must not be cut away.
        let clip = Rect {
            left: plot.left - 1.5,
            top: plot.top - 1.5,
            right: plot.right + 1.5,
            bottom: plot.bottom + 1.5,
        };
        let mut drew_any = false;
        for (i, (_, points)) in self.series.iter().enumerate() {
            let (color, later_round) = frame::series_rgb(i);
            let markers = self.series_markers(points);
            let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
            for &point in points {
                let pixel = self.drawable(point).then(|| {
                    frame::x_px(&plot, &layout.x, point.0).zip(frame::y_px(&plot, &layout.y, point.1))
                });
                match pixel.flatten() {
                    Some(px) => runs.last_mut().into_iter().for_each(|run| run.push(px)),
                    None if runs.last().is_some_and(|run| !run.is_empty()) => runs.push(Vec::new()),
                    None => {}
                }
            }
            for run in runs.iter().filter(|run| !run.is_empty()) {
                for piece in frame::clip_polyline(run, &clip) {
                    drew_any = true;
                    let piece =
                        if piece.len() > 4 * plot.width() as usize { frame::decimate(&piece) } else { piece };
                    if later_round {
                        p.dashed_polyline(&piece, color, 2);
                    } else {
                        p.polyline(&piece, color, 2);
                    }
                }
                let inside = |&(x, y): &(f64, f64)| {
                    x >= clip.left && x <= clip.right && y >= clip.top && y <= clip.bottom
                };
                if markers || run.len() == 1 {
                    for point in run.iter().filter(|pt| inside(pt)) {
                        p.circle(*point, 3, color, !later_round);
                    }
                }
            }
        }
        frame::draw_axis_lines(p, &plot);
        if !drew_any {
            frame::draw_no_data(p, &plot);
        }
    }
}

impl Chart for LineChart {
    fn to_svg(&self) -> String {
        frame::svg_document(self.size, &self.title, |p| self.draw(p))
    }
}
