//! Charts render valid SVG for ordinary and degenerate data, escape what callers give them,
//! and place ticks where a reader expects them.

mod common;

use cloudcache_report::{Axis, BarChart, Chart, LineChart, Scale, StackedAreaChart, ValueFormat};
use common::check_markup;

const MIB: f64 = (1u64 << 20) as f64;

fn valid(svg: &str) {
    assert!(svg.starts_with("<svg"), "not an svg: {}", &svg[..svg.len().min(80)]);
    assert_eq!(svg.matches("<svg").count(), 1);
    assert!(svg.trim_end().ends_with("</svg>"));
    if let Err(problem) = check_markup(svg) {
        panic!("malformed SVG: {problem}\n{svg}");
    }
    assert!(!svg.contains("NaN") && !svg.contains("inf"), "non-finite number in SVG");
}

/// The text of every `<text>` element, trimmed.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| t.split_once('>'))
        .map(|(_, rest)| rest)
        .filter_map(|t| t.split_once("</text>"))
        .map(|(text, _)| text.trim().to_string())
        .collect()
}

#[test]
fn series_names_and_titles_are_escaped() {
    let evil = "<script>alert('x')</script> & \"more\"";
    let line = LineChart::new(evil)
        .x_axis(Axis::new(evil))
        .y_axis(Axis::new(evil))
        .series(evil, [(1.0, 2.0), (2.0, 3.0)]);
    let area = StackedAreaChart::new(evil).x_values([0.0, 1.0]).series(evil, [1.0, 2.0]);
    let bar = BarChart::new(evil).categories([evil]).category_title(evil).series(evil, [1.0]);
    let custom = LineChart::new("custom")
        .y_axis(Axis::new("y").format(ValueFormat::custom(|_| "<b>&</b>".to_string())))
        .series("a", [(0.0, 1.0)]);
    for svg in [line.to_svg(), area.to_svg(), bar.to_svg(), custom.to_svg()] {
        valid(&svg);
        assert!(!svg.contains("<script") && !svg.contains("<b>"), "unescaped text in {svg}");
    }
    assert!(line.to_svg().contains("&lt;script&gt;"));
}

#[test]
fn log2_axis_over_cache_sizes_has_power_of_two_ticks() {
    let sizes: Vec<f64> = (0..=6).map(|i| 16.0 * MIB * 2f64.powi(i)).collect();
    let svg = LineChart::new("sweep")
        .x_axis(Axis::new("cache size").scale(Scale::Log2).format(ValueFormat::Bytes))
        .y_axis(Axis::new("hit ratio").format(ValueFormat::Percent).range(0.0, 1.0))
        .series("LRU", sizes.iter().enumerate().map(|(i, &s)| (s, 0.1 * i as f64)))
        .to_svg();
    valid(&svg);
    let labels = texts(&svg);
    for expected in ["16 MiB", "32 MiB", "64 MiB", "128 MiB", "256 MiB", "512 MiB", "1 GiB", "0%", "100%"] {
        assert!(labels.iter().any(|l| l == expected), "missing tick {expected} in {labels:?}");
    }
    assert!(!labels.iter().any(|l| l == "48 MiB" || l == "2 GiB"), "{labels:?}");
}

#[test]
fn wide_log2_sweep_thins_ticks_instead_of_overlapping() {
    let sizes: Vec<f64> = (0..=8).map(|i| 16.0 * MIB * 2f64.powi(i)).collect();
    let svg = LineChart::new("sweep")
        .size(360, 300)
        .x_axis(Axis::new("cache size").scale(Scale::Log2).format(ValueFormat::Bytes))
        .series("LRU", sizes.iter().map(|&s| (s, 0.5)))
        .to_svg();
    valid(&svg);
    let labels = texts(&svg);
    let byte_labels: Vec<&String> = labels.iter().filter(|l| l.ends_with("iB")).collect();
    assert!(byte_labels.len() >= 3 && byte_labels.len() < 9, "{byte_labels:?}");
    assert!(labels.iter().any(|l| l == "16 MiB") && labels.iter().any(|l| l == "4 GiB"), "{labels:?}");
}

#[test]
fn linear_axis_uses_nice_ticks() {
    let svg = LineChart::new("").series("", [(0.0, 0.0), (97.0, 97.0)]).to_svg();
    valid(&svg);
    let labels = texts(&svg);
    for expected in ["0", "20", "40", "60", "80", "100"] {
        assert!(labels.iter().any(|l| l == expected), "missing {expected} in {labels:?}");
    }
    assert!(!labels.iter().any(|l| l == "97"));
}

#[test]
fn degenerate_line_charts_render() {
    let cases: Vec<LineChart> = vec![
        LineChart::new("no series"),
        LineChart::new("empty series").series("a", []),
        LineChart::new("one point").series("a", [(5.0, 5.0)]),
        LineChart::new("all equal").series("a", [(1.0, 3.0), (2.0, 3.0), (3.0, 3.0)]),
        LineChart::new("all equal no zero")
            .y_axis(Axis::new("y").include_zero(false))
            .series("a", [(1.0, 3.0), (1.0, 3.0)]),
        LineChart::new("nan")
            .series("a", [(f64::NAN, 1.0), (1.0, f64::NAN), (f64::INFINITY, 2.0), (2.0, f64::NEG_INFINITY)]),
        LineChart::new("gap").series("a", [(1.0, 1.0), (2.0, f64::NAN), (3.0, 3.0), (4.0, 4.0)]),
        LineChart::new("log with zero")
            .x_axis(Axis::new("x").scale(Scale::Log10))
            .series("a", [(0.0, 1.0), (-5.0, 2.0)]),
        LineChart::new("huge").series("a", [(-f64::MAX, f64::MAX), (f64::MAX, -f64::MAX)]),
        LineChart::new("tiny").series("a", [(1e-300, 1e-300), (2e-300, 3e-300)]),
        LineChart::new("bad range")
            .y_axis(Axis::new("y").range(f64::NAN, 1.0))
            .series("a", [(0.0, 1.0), (1.0, 2.0)]),
        LineChart::new("inverted range")
            .y_axis(Axis::new("y").range(1.0, 0.0))
            .series("a", [(0.0, 5.0), (1.0, -5.0)]),
        LineChart::new("tiny canvas").size(0, 0).series("a", [(0.0, 1.0), (1.0, 2.0)]),
    ];
    for chart in cases {
        let svg = chart.to_svg();
        valid(&svg);
    }
    let empty = LineChart::new("empty").series("a", []).to_svg();
    assert!(texts(&empty).iter().any(|t| t == "no data"));
    let single = LineChart::new("one").series("a", [(5.0, 5.0)]).to_svg();
    assert!(single.contains("<circle"), "a lone point needs a marker");
    let blue_lines =
        |svg: &str| svg.split("<polyline").skip(1).filter(|p| p.contains("stroke=\"#0072B2\"")).count();
    let gap = LineChart::new("gap")
        .markers(false)
        .series("", [(1.0, 1.0), (2.0, 2.0), (2.5, f64::NAN), (3.0, 3.0), (4.0, 4.0)])
        .to_svg();
    assert_eq!(blue_lines(&gap), 2, "the NaN breaks the line in two");
    let lone = LineChart::new("gap")
        .markers(false)
        .series("", [(1.0, 1.0), (2.0, f64::NAN), (3.0, 3.0), (4.0, 4.0)])
        .to_svg();
    assert_eq!(blue_lines(&lone), 1);
    assert_eq!(lone.matches("<circle").count(), 1, "the point before the gap stands alone and gets a marker");
}

#[test]
fn many_series_cycle_the_palette_with_dashes() {
    let mut chart = LineChart::new("many");
    for i in 0..12 {
        chart.add_series(format!("s{i}"), (0..5).map(|x| (x as f64, (x * i) as f64)));
    }
    let svg = chart.to_svg();
    valid(&svg);
    for i in 0..12 {
        assert!(texts(&svg).contains(&format!("s{i}")), "legend lacks s{i}");
    }
    assert!(svg.contains("#0072B2") || svg.contains("#0072b2"));
}

#[test]
fn long_series_are_thinned() {
    let points: Vec<(f64, f64)> = (0..200_000).map(|i| (i as f64, ((i as f64) * 0.01).sin())).collect();
    let svg = LineChart::new("long").series("a", points).to_svg();
    valid(&svg);
    assert!(svg.len() < 200_000, "{} bytes", svg.len());
}

#[test]
fn stacked_area_renders_shares() {
    let hour = 3_600e9;
    let xs: Vec<f64> = (0..24).map(|h| h as f64 * hour).collect();
    let chart = StackedAreaChart::new("share")
        .x_axis(Axis::new("time").format(ValueFormat::DurationNs))
        .x_values(xs.clone())
        .series("vm-a", xs.iter().map(|x| 1.0 + x / hour))
        .series("vm-b", xs.iter().map(|_| 10.0))
        .series("vm-c", xs.iter().map(|x| if x / hour > 12.0 { 5.0 } else { f64::NAN }))
        .normalized(true);
    let svg = chart.to_svg();
    valid(&svg);
    let labels = texts(&svg);
    assert!(labels.iter().any(|l| l == "100%"), "{labels:?}");
    assert!(labels.iter().any(|l| l.ends_with(" h")), "{labels:?}");
    assert_eq!(svg.matches("<polygon").count(), 3);
}

#[test]
fn degenerate_area_charts_render() {
    let cases = vec![
        StackedAreaChart::new("nothing"),
        StackedAreaChart::new("no x").series("a", [1.0, 2.0]),
        StackedAreaChart::new("no series").x_values([1.0, 2.0]),
        StackedAreaChart::new("one column").x_values([5.0]).series("a", [1.0]).series("b", [2.0]),
        StackedAreaChart::new("one column linear").step(false).x_values([5.0]).series("a", [1.0]),
        StackedAreaChart::new("short series").x_values([1.0, 2.0, 3.0]).series("a", [1.0]),
        StackedAreaChart::new("unsorted")
            .x_values([3.0, 1.0, f64::NAN, 2.0])
            .series("a", [1.0, 2.0, 3.0, 4.0]),
        StackedAreaChart::new("zeros normalized")
            .normalized(true)
            .x_values([1.0, 2.0])
            .series("a", [0.0, 0.0]),
        StackedAreaChart::new("negative").x_values([1.0, 2.0]).series("a", [-1.0, f64::INFINITY]),
        StackedAreaChart::new("x end").x_values([1.0, 2.0]).x_end(10.0).series("a", [1.0, 1.0]),
        StackedAreaChart::new("log x")
            .x_axis(Axis::new("x").scale(Scale::Log2))
            .x_values([0.0, 1.0, 4.0])
            .series("a", [1.0, 1.0, 1.0]),
    ];
    for chart in cases {
        valid(&chart.to_svg());
    }
    let long: Vec<f64> = (0..100_000).map(f64::from).collect();
    let svg = StackedAreaChart::new("long")
        .x_values(long.clone())
        .series("a", long.iter().map(|x| x % 7.0))
        .to_svg();
    valid(&svg);
    assert!(svg.len() < 100_000, "{} bytes", svg.len());
}

#[test]
fn bar_charts_render_and_degrade() {
    let svg = BarChart::new("hits")
        .categories(["oltp", "backup", "vdi"])
        .y_axis(Axis::new("hit ratio").format(ValueFormat::Percent))
        .series("LRU", [0.61, 0.05, 0.72])
        .series("ARC", [0.66, f64::NAN, 0.74])
        .to_svg();
    valid(&svg);
    assert!(texts(&svg).contains(&"61%".to_string()), "value labels shown when they fit");
    let cases = vec![
        BarChart::new("nothing"),
        BarChart::new("categories only").categories(["a", "b"]),
        BarChart::new("all nan").categories(["a"]).series("s", [f64::NAN]),
        BarChart::new("negative").categories(["a", "b"]).series("s", [-3.0, 2.0]),
        BarChart::new("more values than categories").categories(["a"]).series("s", [1.0, 2.0, 3.0]),
        BarChart::new("equal").categories(["a", "b"]).series("s", [4.0, 4.0]),
        BarChart::new("zero").categories(["a"]).series("s", [0.0]),
        BarChart::new("log")
            .y_axis(Axis::new("y").scale(Scale::Log10))
            .categories(["a", "b"])
            .series("s", [0.0, 100.0]),
        BarChart::new("many")
            .categories((0..200).map(|i| format!("category number {i}")))
            .series("s", (0..200).map(f64::from)),
    ];
    for chart in cases {
        valid(&chart.to_svg());
    }
    let empty = BarChart::new("nothing").to_svg();
    assert!(texts(&empty).iter().any(|t| t == "no data"));
}
