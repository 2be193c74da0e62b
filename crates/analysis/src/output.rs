//! The files `cloudcache analyze` writes: `summary.json`, one CSV per
//! series, one SVG per plot, and `report.html` with everything inline.
//!
//! Everything is written into a temporary directory beside the target and
//! renamed into place when complete, so an interrupted or failed run never
//! leaves a directory that looks like a finished analysis.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use cloudcache_report::{
    format_bytes, format_count, format_duration_ns, format_percent, Axis, BarChart, Chart, LineChart, Report,
    Scale, Table, ValueFormat,
};
use serde::Serialize;

use crate::analyze::Analysis;
use crate::characterize::{bucket_rows, BucketRow, Log2Counts, ReadWrite};
use crate::heatmap_chart::HeatMapChart;
use crate::mrc::CurvePoint;

/// Volumes drawn in the per-volume chart (the busiest).
const CHART_VOLUMES: usize = 8;

/// Why the output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The directory exists and holds files this command did not write.
    #[error(
        "output directory {dir} already exists and holds other files ({files}); choose a new directory \
         or empty it"
    )]
    NotEmpty {
        /// The directory.
        dir: String,
        /// Some of its entries.
        files: String,
    },
    /// The directory holds a previous analysis.
    #[error("output directory {0} holds a previous analysis; add --force to replace it")]
    Previous(String),
    /// File system error.
    #[error("{path}: {source}")]
    Io {
        /// Path involved.
        path: String,
        /// The error.
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> OutputError + '_ {
    move |source| OutputError::Io { path: path.display().to_string(), source }
}

/// The summary document (`summary.json`).
#[derive(Serialize)]
struct Summary<'a> {
    cloudcache_version: &'static str,
    trace: &'a str,
    #[serde(flatten)]
    analysis: &'a Analysis,
    files: Vec<String>,
}

/// Check that `dir` may be written: absent, empty, or (with `force`) a
/// previous analysis. Call before the (long) analysis.
pub fn check_output_dir(dir: &Path, force: bool) -> Result<(), OutputError> {
    let Ok(entries) = fs::read_dir(dir) else { return Ok(()) };
    let names: Vec<String> =
        entries.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    if names.is_empty() {
        return Ok(());
    }
    let ours =
        |n: &str| n == "summary.json" || n == "report.html" || n.ends_with(".csv") || n.ends_with(".svg");
    if names.iter().all(|n| ours(n)) && names.iter().any(|n| n == "summary.json") {
        return if force { Ok(()) } else { Err(OutputError::Previous(dir.display().to_string())) };
    }
    // Name the files that are not ours (or all of them, if every one
    // looks like ours but there is no summary.json).
    let mut foreign: Vec<&String> = names.iter().filter(|n| !ours(n)).collect();
    if foreign.is_empty() {
        foreign = names.iter().collect();
    }
    foreign.sort();
    let shown: Vec<&str> = foreign.iter().take(5).map(|s| s.as_str()).collect();
    Err(OutputError::NotEmpty {
        dir: dir.display().to_string(),
        files: format!("{}{}", shown.join(", "), if foreign.len() > 5 { ", ..." } else { "" }),
    })
}

/// Write the analysis of `trace` into `dir`; returns the file names.
pub fn write_dir(
    analysis: &Analysis,
    trace: &str,
    dir: &Path,
    force: bool,
) -> Result<Vec<String>, OutputError> {
    check_output_dir(dir, force)?;
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "analysis".into());
    let parent = dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    fs::create_dir_all(parent).map_err(io(parent))?;
    let tmp = parent.join(format!(".{name}.partial-{}", std::process::id()));
    if tmp.exists() {
        fs::remove_dir_all(&tmp).map_err(io(&tmp))?;
    }
    fs::create_dir(&tmp).map_err(io(&tmp))?;
    let result = write_files(analysis, trace, &tmp);
    let files = match result {
        Ok(files) => files,
        Err(e) => {
            let _ = fs::remove_dir_all(&tmp);
            return Err(e);
        }
    };
    // Move into place: an empty directory or a previous analysis (force)
    // is replaced only now that the new one is complete.
    if dir.exists() {
        let old = parent.join(format!(".{name}.old-{}", std::process::id()));
        fs::rename(dir, &old).map_err(io(dir))?;
        fs::rename(&tmp, dir).map_err(io(dir))?;
        fs::remove_dir_all(&old).map_err(io(&old))?;
    } else {
        fs::rename(&tmp, dir).map_err(io(dir))?;
    }
    Ok(files)
}

struct Writer {
    dir: PathBuf,
    files: Vec<String>,
}

impl Writer {
    fn file(&mut self, name: &str, text: &str) -> Result<(), OutputError> {
        let path = self.dir.join(name);
        fs::write(&path, text).map_err(io(&path))?;
        self.files.push(name.to_owned());
        Ok(())
    }

    fn svg(&mut self, name: &str, chart: &dyn Chart) -> Result<String, OutputError> {
        let svg = chart.to_svg();
        self.file(name, &svg)?;
        Ok(svg)
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

fn opt(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.6}")).unwrap_or_default()
}

fn bucket_csv(rows: &[BucketRow], unit: &str) -> String {
    let mut s = format!("from_{unit},to_{unit},reads,writes\n");
    for r in rows {
        let _ = writeln!(s, "{},{},{},{}", r.from, r.to, r.reads, r.writes);
    }
    s
}

fn bucket_chart(title: &str, rows: &[BucketRow], label: impl Fn(u64) -> String, axis: &str) -> BarChart {
    let categories: Vec<String> = rows
        .iter()
        .map(|r| if r.from == r.to { label(r.from) } else { format!("{}–{}", label(r.from), label(r.to)) })
        .collect();
    BarChart::new(title)
        .categories(categories)
        .category_title(axis)
        .y_axis(Axis::new("count").format(ValueFormat::Count))
        .series("reads", rows.iter().map(|r| r.reads as f64))
        .series("writes", rows.iter().map(|r| r.writes as f64))
        .value_labels(false)
}

fn miss_points(points: &[CurvePoint]) -> Vec<(f64, f64)> {
    points.iter().filter_map(|p| Some((p.cache_size_bytes as f64, p.miss_ratio?))).collect()
}

fn mrc_axes(chart: LineChart) -> LineChart {
    chart
        .x_axis(Axis::new("cache size").scale(Scale::Log2).format(ValueFormat::Bytes))
        .y_axis(Axis::new("miss ratio").format(ValueFormat::Percent).range(0.0, 1.0))
        .markers(false)
}

fn write_files(a: &Analysis, trace: &str, dir: &Path) -> Result<Vec<String>, OutputError> {
    let mut w = Writer { dir: dir.to_owned(), files: Vec::new() };
    let c = &a.characterization;
    let mut report = Report::new(format!("cloudcache analyze: {trace}"));
    report.subtitle(format!(
        "{} requests, {} volume(s), {} block accesses of {}, footprint {}{}",
        format_count(a.requests),
        a.volumes.len(),
        format_count(a.block_accesses),
        format_bytes(a.block_size),
        format_bytes(a.footprint_bytes),
        a.duration_ns.map(|d| format!(", {} of trace time", format_duration_ns(d))).unwrap_or_default()
    ));

    // Summary section.
    {
        let s = report.section("Summary");
        for warning in &a.warnings {
            s.note(format!("Warning: {warning}"));
        }
        let pct = |v: Option<f64>| v.map(format_percent).unwrap_or_else(|| "-".into());
        s.key_values([
            ("trace", trace.to_owned()),
            ("requests", format_count(a.requests)),
            (
                "read / write / trim requests",
                format!(
                    "{} / {} / {}",
                    format_count(c.ops.read_requests),
                    format_count(c.ops.write_requests),
                    format_count(c.ops.trim_requests)
                ),
            ),
            (
                "reads (share of requests, of bytes)",
                format!("{}, {}", pct(c.ops.read_fraction_requests), pct(c.ops.read_fraction_bytes)),
            ),
            (
                "bytes read / written",
                format!("{} / {}", format_bytes(c.ops.read_bytes), format_bytes(c.ops.write_bytes)),
            ),
            ("block accesses", format_count(a.block_accesses)),
            ("footprint (distinct blocks)", format_bytes(a.footprint_bytes)),
            ("sequential successive requests", pct(c.sequential_fraction)),
            (
                "top 10 % of blocks take",
                c.popularity.top.get(2).map(|t| format_percent(t.accesses_fraction)).unwrap_or_default(),
            ),
        ]);
    }

    // Miss-ratio curves.
    let k = &a.curves;
    let mut csv = String::from("cache_size_bytes,exact_miss_ratio,exact_read_miss_ratio,shards_miss_ratio\n");
    for i in 0..k.sizes.len() {
        let _ = writeln!(
            csv,
            "{},{},{},{}",
            k.sizes[i],
            opt(k.exact[i].miss_ratio),
            opt(k.exact_reads[i].miss_ratio),
            opt(k.shards[i].miss_ratio)
        );
    }
    w.file("mrc.csv", &csv)?;
    let chart = mrc_axes(LineChart::new("LRU miss ratio by cache size (whole trace, one shared cache)"))
        .series("exact, all accesses", miss_points(&k.exact))
        .series("exact, reads", miss_points(&k.exact_reads))
        .series(format!("SHARDS {:.4}, all accesses", k.shards_rate), miss_points(&k.shards));
    let svg = w.svg("mrc.svg", &chart)?;
    {
        let s = report.section("Miss-ratio curves");
        s.paragraph(
            "Exact LRU miss ratio from stack distances, block mode, write-back (every read and write \
             references its blocks; reads-only counts read hits among reads). It equals what `cloudcache sim \
             --policy lru` reports at every size. SHARDS samples blocks by a hash of their address.",
        );
        s.chart(&StaticSvg(svg));
        if let Some(mae) = k.shards_mean_absolute_error {
            s.note(format!(
                "SHARDS at rate {:.4}{} sampled {} block accesses; mean absolute error against the exact curve: \
                 {mae:.4}",
                k.shards_rate,
                if k.shards_default_rate {
                    format!(" (the default: 1 %, or enough to sample {} blocks)", crate::DEFAULT_MIN_SAMPLED_BLOCKS)
                } else {
                    String::new()
                },
                format_count(k.shards_sampled_accesses)
            ));
        }
        let mut t = Table::new(["cache size", "miss ratio", "read miss ratio", "SHARDS miss ratio"]);
        let step = k.sizes.len().div_ceil(16).max(1);
        for i in (0..k.sizes.len()).filter(|i| i % step == 0 || i + 1 == k.sizes.len()) {
            let pct = |p: &CurvePoint| p.miss_ratio.map(format_percent).unwrap_or_else(|| "-".into());
            t.row([format_bytes(k.sizes[i]), pct(&k.exact[i]), pct(&k.exact_reads[i]), pct(&k.shards[i])]);
        }
        s.table(t);
    }

    // Per volume.
    let mut csv = String::from("volume,cache_size_bytes,miss_ratio,read_miss_ratio\n");
    for v in &k.volumes {
        for (p, r) in v.points.iter().zip(&v.read_points) {
            let _ = writeln!(
                csv,
                "{},{},{},{}",
                csv_field(&v.name),
                p.cache_size_bytes,
                opt(p.miss_ratio),
                opt(r.miss_ratio)
            );
        }
    }
    w.file("mrc_volumes.csv", &csv)?;
    if k.volumes.len() > 1 {
        let mut busiest: Vec<&crate::analyze::VolumeCurve> = k.volumes.iter().collect();
        busiest.sort_by_key(|v| std::cmp::Reverse(v.block_accesses));
        let mut chart = mrc_axes(LineChart::new("Each volume alone in its own LRU cache (busiest volumes)"));
        for v in busiest.iter().take(CHART_VOLUMES) {
            let pts: Vec<(f64, f64)> = miss_points(&v.points)
                .into_iter()
                .filter(|&(s, _)| s <= v.footprint_bytes as f64 * 1.01)
                .collect();
            chart = chart.series(v.name.clone(), pts);
        }
        let svg = w.svg("mrc_volumes.svg", &chart)?;
        let s = report.section("Per-volume curves");
        s.chart(&StaticSvg(svg));
        let mut t = Table::new(["volume", "block accesses", "footprint"]);
        for v in busiest.iter().take(20) {
            t.row([v.name.clone(), format_count(v.block_accesses), format_bytes(v.footprint_bytes)]);
        }
        s.table(t);
    }

    // Distributions.
    let sizes = bucket_rows(&c.request_sizes);
    w.file("request_sizes.csv", &bucket_csv(&sizes, "bytes"))?;
    let svg =
        w.svg("request_sizes.svg", &bucket_chart("Request sizes", &sizes, format_bytes, "request size"))?;
    report.section("Request sizes").chart(&StaticSvg(svg));

    let reuse_time = bucket_rows(&c.reuse_time_ns);
    w.file("reuse_time.csv", &bucket_csv(&reuse_time, "ns"))?;
    let [dr, dw] = a.distinct_reuse_log2();
    let distinct = bucket_rows(&ReadWrite { reads: dr, writes: dw });
    w.file("reuse_distinct_blocks.csv", &bucket_csv(&distinct, "blocks"))?;
    let accesses = bucket_rows(&c.reuse_accesses);
    w.file("reuse_accesses.csv", &bucket_csv(&accesses, "accesses"))?;
    {
        let svg1 = w.svg(
            "reuse_time.svg",
            &bucket_chart(
                "Reuse distance in time",
                &reuse_time,
                format_duration_ns,
                "time since the previous access to the block",
            ),
        )?;
        let svg2 = w.svg(
            "reuse_distinct_blocks.svg",
            &bucket_chart(
                "Reuse distance in distinct blocks (LRU stack distance)",
                &distinct,
                format_count,
                "distinct blocks accessed in between",
            ),
        )?;
        let svg3 = w.svg(
            "reuse_accesses.svg",
            &bucket_chart(
                "Reuse distance in block accesses (seed 004)",
                &accesses,
                format_count,
                "block accesses in between",
            ),
        )?;
        let s = report.section("Reuse distances");
        s.paragraph(format!(
            "For each block access that is a reuse ({} reads and {} writes), the distance since the previous \
             access to the same block, filed under the op of the reuse.",
            format_count(c.reuses.reads),
            format_count(c.reuses.writes)
        ));
        s.chart(&StaticSvg(svg1)).chart(&StaticSvg(svg2)).chart(&StaticSvg(svg3));
    }

    let runs = bucket_rows(&c.run_lengths);
    w.file("run_lengths.csv", &bucket_csv(&runs, "blocks"))?;
    let jumps = bucket_rows(&ReadWrite { reads: c.jump_distances.clone(), writes: Log2Counts::default() });
    let mut csv = String::from("from_blocks,to_blocks,count\n");
    for r in &jumps {
        let _ = writeln!(csv, "{},{},{}", r.from, r.to, r.reads);
    }
    w.file("jump_distances.csv", &csv)?;
    {
        let svg1 = w.svg(
            "run_lengths.svg",
            &bucket_chart("Run lengths (seed 004)", &runs, format_count, "blocks in the run"),
        )?;
        let jump_chart = BarChart::new("Jump distances between successive requests (seed 004)")
            .categories(jumps.iter().map(|r| {
                if r.from == r.to {
                    format_count(r.from)
                } else {
                    format!("{}–{}", format_count(r.from), format_count(r.to))
                }
            }))
            .category_title("blocks")
            .y_axis(Axis::new("requests").format(ValueFormat::Count))
            .series("reads and writes", jumps.iter().map(|r| r.reads as f64))
            .value_labels(false);
        let svg2 = w.svg("jump_distances.svg", &jump_chart)?;
        let s = report.section("Sequentiality");
        let pct = |v: Option<f64>| v.map(format_percent).unwrap_or_else(|| "-".into());
        s.paragraph(format!(
            "Runs of one block: {} of read runs, {} of write runs; longest run up to {} (reads), {} (writes) \
             blocks. Successive requests of a volume that are sequential: {}.",
            pct(c.runs_of_one_block.reads),
            pct(c.runs_of_one_block.writes),
            format_count(c.longest_run.reads),
            format_count(c.longest_run.writes),
            pct(c.sequential_fraction)
        ));
        s.chart(&StaticSvg(svg1)).chart(&StaticSvg(svg2));
    }

    // Popularity.
    let p = &c.popularity;
    let mut csv = String::from("blocks_fraction,accesses_fraction\n");
    for (x, y) in &p.curve {
        let _ = writeln!(csv, "{x:.6},{y:.6}");
    }
    w.file("popularity.csv", &csv)?;
    let chart = LineChart::new("Share of accesses taken by the most accessed blocks")
        .x_axis(
            Axis::new("most accessed blocks (fraction of distinct blocks)")
                .format(ValueFormat::Percent)
                .range(0.0, 1.0),
        )
        .y_axis(Axis::new("share of block accesses").format(ValueFormat::Percent).range(0.0, 1.0))
        .series("cumulative share", p.curve.iter().copied())
        .markers(false);
    let svg = w.svg("popularity.svg", &chart)?;
    {
        let s = report.section("Block popularity");
        s.chart(&StaticSvg(svg));
        let mut t = Table::new(["top blocks", "share of accesses"]);
        for top in &p.top {
            t.row([format_percent(top.blocks_fraction), format_percent(top.accesses_fraction)]);
        }
        s.table(t);
        s.paragraph(format!(
            "{} distinct blocks; {} accessed once; the most accessed block {} times.",
            format_count(p.distinct_blocks),
            format_count(p.blocks_accessed_once),
            format_count(p.max_accesses_per_block)
        ));
    }

    // Heat map.
    let h = &c.heat_map;
    let mut csv = String::from("row,first_block,column,column_start,accesses\n");
    for (row, cells) in h.counts.iter().enumerate() {
        for (col, &n) in cells.iter().enumerate() {
            if n > 0 {
                let _ = writeln!(
                    csv,
                    "{row},{},{col},{},{n}",
                    h.first_block + row as u64 * h.blocks_per_row,
                    h.start + col as u64 * h.per_column
                );
            }
        }
    }
    w.file("heat_map.csv", &csv)?;
    let svg = w.svg("heat_map.svg", &HeatMapChart { map: h, block_size: a.block_size })?;
    report
        .section("Address x time heat map")
        .paragraph(format!(
            "Block accesses of the busiest volume ({}) by address range ({} per row) and time.",
            h.volume,
            format_bytes(h.blocks_per_row * a.block_size)
        ))
        .chart(&StaticSvg(svg));

    // Content.
    if let Some(ct) = &a.content {
        let mut csv = String::from("cache_size_bytes,address_cache_miss_ratio,content_cache_miss_ratio\n");
        for (x, y) in ct.address_cache.iter().zip(&ct.content_cache) {
            let _ = writeln!(csv, "{},{},{}", x.cache_size_bytes, opt(x.miss_ratio), opt(y.miss_ratio));
        }
        w.file("content_mrc.csv", &csv)?;
        let rows = bucket_rows(&ct.content_reuse_distance);
        w.file("content_reuse_accesses.csv", &bucket_csv(&rows, "accesses"))?;
        let chart = mrc_axes(LineChart::new("LRU keyed by address vs by content"))
            .series("address-keyed", miss_points(&ct.address_cache))
            .series("content-addressed", miss_points(&ct.content_cache));
        let svg1 = w.svg("content_mrc.svg", &chart)?;
        let svg2 = w.svg(
            "content_reuse_accesses.svg",
            &bucket_chart(
                "Content reuse distance (seed 004)",
                &rows,
                format_count,
                "hashed accesses in between",
            ),
        )?;
        let s = report.section("Content");
        let pct = |v: Option<f64>| v.map(format_percent).unwrap_or_else(|| "-".into());
        s.key_values([
            ("hashed 4 KiB accesses", format_count(ct.hashed_accesses)),
            (
                "distinct addresses / contents",
                format!("{} / {}", format_count(ct.distinct_addresses), format_count(ct.distinct_contents)),
            ),
            ("duplicate ratio (distinct data that is a copy)", pct(ct.duplicate_ratio)),
            (
                "reads reusing an address / content",
                format!(
                    "{} / {}",
                    format_count(ct.address_reuses.reads),
                    format_count(ct.content_reuses.reads)
                ),
            ),
            ("reads whose content was seen only elsewhere", format_count(ct.content_only_reuses.reads)),
            ("mean miss ratio saved by a content-addressed cache", pct(ct.mean_miss_ratio_saving())),
        ]);
        s.chart(&StaticSvg(svg1)).chart(&StaticSvg(svg2));
    }

    // Working sets.
    if let Some(ws) = &a.working_sets {
        let mut csv = String::from("window,start_ns,volume,block_accesses,wss_bytes,rws_bytes\n");
        for r in &ws.rows {
            let _ = writeln!(
                csv,
                "{},{},{},{},{},{}",
                r.window,
                r.start_ns,
                csv_field(&a.volumes.get(r.volume as usize).cloned().unwrap_or_else(|| r.volume.to_string())),
                r.accesses,
                r.wss_blocks * a.block_size,
                r.rws_blocks * a.block_size
            );
        }
        w.file("working_sets.csv", &csv)?;
        let windows = ws.timeline.len().max(ws.rows.iter().map(|r| r.window as usize + 1).max().unwrap_or(0));
        let (mut wss, mut rws) = (vec![0u64; windows], vec![0u64; windows]);
        for r in &ws.rows {
            wss[r.window as usize] += r.wss_blocks * a.block_size;
            rws[r.window as usize] += r.rws_blocks * a.block_size;
        }
        let t = |i: usize| (i as u64 * ws.window_ns) as f64;
        let chart = LineChart::new(format!(
            "Working set per {} window (all volumes)",
            format_duration_ns(ws.window_ns)
        ))
        .x_axis(Axis::new("time since the first request").format(ValueFormat::DurationNs))
        .y_axis(Axis::new("size").format(ValueFormat::Bytes))
        .series("WSS", wss.iter().enumerate().map(|(i, &v)| (t(i), v as f64)))
        .series(format!("RWSS (N = {})", ws.n), rws.iter().enumerate().map(|(i, &v)| (t(i), v as f64)));
        let svg1 = w.svg("working_sets.svg", &chart)?;

        let mut csv = String::from("window,start_ns,block_accesses");
        for s in &ws.timeline_sizes {
            let _ = write!(csv, ",hit_ratio_{s}");
        }
        csv.push('\n');
        for (i, (n, ratios)) in ws.timeline.iter().enumerate() {
            let _ = write!(csv, "{i},{},{n}", i as u64 * ws.window_ns);
            for r in ratios {
                let _ = write!(csv, ",{}", opt(*r));
            }
            csv.push('\n');
        }
        w.file("hit_ratio_over_time.csv", &csv)?;
        let mut chart = LineChart::new("LRU hit ratio per window")
            .x_axis(Axis::new("time since the first request").format(ValueFormat::DurationNs))
            .y_axis(Axis::new("hit ratio").format(ValueFormat::Percent).range(0.0, 1.0));
        for (j, &size) in ws.timeline_sizes.iter().enumerate() {
            let pts: Vec<(f64, f64)> =
                ws.timeline.iter().enumerate().filter_map(|(i, (_, r))| Some((t(i), r[j]?))).collect();
            chart = chart.series(format!("{} cache", format_bytes(size)), pts);
        }
        let svg2 = w.svg("hit_ratio_over_time.svg", &chart)?;

        let mut csv = String::from("window_ns,windows,mean_rwss_bytes,hit_ratio\n");
        for r in &ws.knee.candidates {
            let _ = writeln!(csv, "{},{},{},{}", r.window_ns, r.windows, r.mean_rwss_bytes, opt(r.hit_ratio));
        }
        w.file("knee.csv", &csv)?;
        let s = report.section("Working sets over time");
        s.paragraph(format!(
            "Tumbling windows of {} of trace time. WSS: distinct blocks accessed in the window; RWSS: distinct \
             blocks accessed at least {} times (reused at least N = {} times), summed over volumes. The hit \
             ratio per window is that of one LRU cache of the given size over the whole trace (sizes are \
             powers of two in blocks).",
            format_duration_ns(ws.window_ns),
            ws.n + 1,
            ws.n
        ));
        s.chart(&StaticSvg(svg1)).chart(&StaticSvg(svg2));
        if ws.knee.candidates.len() >= 2 {
            let chart = LineChart::new("Knee-point window analysis")
                .x_axis(Axis::new("window").scale(Scale::Log10).format(ValueFormat::DurationNs))
                .y_axis(
                    Axis::new("hit ratio with a cache of the mean RWSS")
                        .format(ValueFormat::Percent)
                        .range(0.0, 1.0),
                )
                .series(
                    "hit ratio",
                    ws.knee.candidates.iter().filter_map(|r| Some((r.window_ns as f64, r.hit_ratio?))),
                );
            let svg3 = w.svg("knee.svg", &chart)?;
            let s = report.section("Knee-point window");
            s.paragraph(
                "For each candidate window, a cache sized at the mean RWSS measured with it, and the hit ratio \
                 such an LRU cache gets over the whole trace (seed 001, 3.4.1). The knee, where the hit ratio \
                 stops rising quickly, is the suggested window (Kneedle on log window and hit ratio).",
            );
            s.chart(&StaticSvg(svg3));
            match ws.knee.knee_window_ns {
                Some(knee) => s.note(format!("Knee: {}.", format_duration_ns(knee))),
                None => s.note(
                    "No clear knee: the hit ratio does not flatten over these windows. The seed's advice for \
                     that case is a small window.",
                ),
            };
            let mut t = Table::new(["window", "windows", "mean RWSS", "hit ratio", ""]);
            for r in &ws.knee.candidates {
                t.row([
                    format_duration_ns(r.window_ns),
                    format_count(r.windows),
                    format_bytes(r.mean_rwss_bytes),
                    r.hit_ratio.map(format_percent).unwrap_or_else(|| "-".into()),
                    if ws.knee.knee_window_ns == Some(r.window_ns) { "knee".into() } else { String::new() },
                ]);
            }
            s.table(t);
        }
    }

    let mut files = w.files.clone();
    files.push("summary.json".into());
    files.push("report.html".into());
    files.sort();
    report.footer(format!("Files beside this report: {}.", files.join(", ")));
    let summary =
        Summary { cloudcache_version: env!("CARGO_PKG_VERSION"), trace, analysis: a, files: files.clone() };
    let json = serde_json::to_string_pretty(&summary).expect("the summary serializes");
    w.file("summary.json", &json)?;
    w.file("report.html", &report.render())?;
    Ok(files)
}

/// An SVG already rendered (written to its file), inlined again in the report.
struct StaticSvg(String);

impl Chart for StaticSvg {
    fn to_svg(&self) -> String {
        self.0.clone()
    }
}
