//! The HTML report: escaping, well-formedness, and a sample report written to the target
//! directory for a person to look at (`target/tmp/report-sample/report.html`).

mod common;

use cloudcache_report::{
    format_bytes, format_count, format_duration_ns, format_percent, Align, Axis, BarChart, LineChart, Report,
    Scale, StackedAreaChart, Table, ValueFormat,
};
use common::check_markup;

const EVIL: &str = "<script>alert(\"x\")</script> & <img src=x onerror=alert(1)>";

fn well_formed(html: &str) {
    if let Err(problem) = check_markup(html) {
        panic!("malformed report: {problem}");
    }
    assert_eq!(html.matches("<svg").count(), html.matches("</svg>").count());
    assert!(!html.contains("<script") && !html.contains("<img"), "unescaped user text");
}

#[test]
fn everything_user_provided_is_escaped() {
    let mut report = Report::new(EVIL);
    report.subtitle(EVIL).footer(EVIL);
    report
        .section(EVIL)
        .subheading(EVIL)
        .paragraph(EVIL)
        .note(EVIL)
        .code(EVIL)
        .key_values([(EVIL, EVIL)])
        .table(Table::new([EVIL]).caption(EVIL).with_row([EVIL]))
        .chart(&LineChart::new(EVIL).series(EVIL, [(1.0, 1.0), (2.0, 2.0)]))
        .chart(&BarChart::new(EVIL).categories([EVIL]).series(EVIL, [1.0]))
        .chart(&StackedAreaChart::new(EVIL).x_values([1.0]).series(EVIL, [1.0]));
    for i in 0..4 {
        report.section(format!("{EVIL} {i}"));
    }
    let html = report.render();
    well_formed(&html);
    assert!(html.contains("&lt;script&gt;"));
    assert!(html.contains("<nav class=\"contents\">"), "long reports get a table of contents");
}

#[test]
fn empty_report_is_valid() {
    let html = Report::new("").render();
    well_formed(&html);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(!html.contains("http://") && !html.contains("https://"), "nothing is fetched");
}

#[test]
fn numeric_columns_are_right_aligned() {
    let table = Table::new(["policy", "hits", "ratio", "size", "note"])
        .with_row(["LRU", "1,234", "42.3%", "64 MiB", "ok"])
        .with_row(["ARC", "n/a", "-", "1.5 GiB", "12 skipped"])
        .align(4, Align::Left);
    let mut report = Report::new("t");
    report.section("s").table(table);
    let html = report.render();
    well_formed(&html);
    assert!(html.contains("<th scope=\"col\">policy</th>"));
    assert!(html.contains("<th scope=\"col\" class=\"num\">hits</th>"));
    assert!(html.contains("<td class=\"num\">64 MiB</td>"));
    assert!(html.contains("<td>ok</td>"), "forced left despite a numeric-looking cell");
    assert!(html.contains("<td class=\"num\">n/a</td>"));
}

#[test]
fn ragged_rows_keep_the_grid() {
    let mut table = Table::new(["a", "b"]);
    table.row(["1"]).row(["1", "2", "3"]);
    let mut report = Report::new("t");
    report.section("s").table(table);
    let html = report.render();
    well_formed(&html);
    let tbody = html.split("<tbody>").nth(1).unwrap_or_default();
    for row in tbody.split("<tr>").skip(1).take(2) {
        assert_eq!(row.matches("<td").count(), 3, "{row}");
    }
}

/// A report like the simulator's, written to `target/tmp/report-sample/report.html`.
#[test]
fn sample_report() {
    let html = sample().render();
    well_formed(&html);
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-sample");
    std::fs::create_dir_all(&dir).expect("create sample dir");
    let path = dir.join("report.html");
    std::fs::write(&path, &html).expect("write sample report");
    println!("sample report: {}", path.display());
}

/// Degenerate and crowded charts, written next to the sample for a person to look at.
#[test]
fn edge_case_report() {
    let mut report = Report::new("Edge cases");
    let mut many = LineChart::new("Twelve series in a narrow chart").size(420, 320);
    for i in 0..12 {
        many.add_series(format!("policy-{i}"), (0..6).map(|x| (x as f64, (x * (i + 1)) as f64)));
    }
    let mut crowd =
        StackedAreaChart::new("Sixty VMs: the legend stops at five rows").x_values([0.0, 1.0, 2.0, 3.0]);
    for i in 0..60 {
        crowd.add_series(format!("vm-{i:03}"), [1.0, 1.0 + (i % 7) as f64, 2.0, 1.0]);
    }
    let mut bars = BarChart::new("Eight series, three categories").size(480, 320);
    for i in 0..9 {
        bars.add_series(format!("s{i}"), [1.0 + i as f64, 2.0, f64::NAN]);
    }
    report
        .section("Degenerate data")
        .chart(&LineChart::new("Empty series").series("nothing", []))
        .chart(&LineChart::new("One point").series("lonely", [(3.0, 0.5)]).size(420, 260))
        .chart(
            &LineChart::new("All equal, NaN gap, negative")
                .series("flat", [(1.0, 2.0), (2.0, 2.0), (3.0, 2.0)])
                .series("gap", [(1.0, -1.0), (1.5, f64::NAN), (2.0, 1.0), (3.0, 0.5)])
                .size(420, 260),
        )
        .chart(
            &StackedAreaChart::new("One column")
                .x_values([5.0])
                .series("a", [1.0])
                .series("b", [2.0])
                .size(420, 260),
        )
        .chart(
            &BarChart::new("Negative and missing")
                .categories(["a", "b", "c"])
                .series("v", [-3.0, 2.0, f64::NAN])
                .size(420, 260),
        )
        .chart(&many)
        .chart(&crowd)
        .chart(&bars.categories(["first", "second", "third"]));
    let html = report.render();
    well_formed(&html);
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-sample");
    std::fs::create_dir_all(&dir).expect("create sample dir");
    std::fs::write(dir.join("edge.html"), &html).expect("write edge report");
}

fn sample() -> Report {
    let mib = |n: u64| n << 20;
    let sizes: Vec<u64> = (0..=8).map(|i| mib(16) << i).collect();
    let curve = |scale: f64, cap: f64| -> Vec<(f64, f64)> {
        sizes
            .iter()
            .map(|&s| (s as f64, cap * (1.0 - (-(s as f64) / (scale * mib(1) as f64)).exp())))
            .collect()
    };
    let policies = [
        ("LRU", curve(600.0, 0.82)),
        ("FIFO", curve(700.0, 0.79)),
        ("ARC", curve(420.0, 0.85)),
        ("CLOCK", curve(620.0, 0.81)),
    ];

    let mut report = Report::new("cloudcache sim — oltp-week.csv.zst");
    report.subtitle("4 policies × 9 cache sizes (16 MiB – 4 GiB), write-back, 4 KiB blocks, seed 42");
    report.footer(
        "cloudcache 0.1.0 · rendered by cloudcache-report · deterministic for a given seed and input",
    );

    report
        .section("Summary")
        .paragraph(
            "Replay of one week of block I/O from 6 VMs. ARC reaches the highest read hit ratio at every size; \
             beyond 1 GiB all policies flatten out, so a larger cache buys little for this workload.",
        )
        .key_values([
            ("Trace", "oltp-week.csv.zst".to_string()),
            ("Requests", format_count(48_213_977)),
            ("Read / write", format!("{} / {}", format_percent(0.712), format_percent(0.288))),
            ("Unique data", format_bytes(37 << 30)),
            ("Trace duration", format_duration_ns(7 * 86_400_000_000_000 + 3 * 3_600_000_000_000)),
            ("Replay time", format_duration_ns(94_500_000_000)),
        ])
        .note("1,204 corrupt trace lines were skipped (first: line 88,312, field \"lba\": not a number).")
        .code("cloudcache sim --trace oltp-week.csv.zst --policy lru,fifo,arc,clock --size 16M..4G --report report.html");

    let mut line = LineChart::new("Read hit ratio by cache size")
        .x_axis(Axis::new("cache size").scale(Scale::Log2).format(ValueFormat::Bytes))
        .y_axis(Axis::new("read hit ratio").format(ValueFormat::Percent).range(0.0, 1.0));
    for (name, points) in &policies {
        line.add_series(*name, points.iter().copied());
    }
    let mut table = Table::new(["cache size", "LRU", "FIFO", "ARC", "CLOCK"]).caption("Read hit ratio");
    for (i, &size) in sizes.iter().enumerate() {
        let mut row = vec![format_bytes(size)];
        row.extend(policies.iter().map(|(_, points)| format_percent(points[i].1)));
        table.row(row);
    }
    report
        .section("Hit ratio")
        .paragraph("Each point is one full replay at that cache size.")
        .chart(&line)
        .table(table);

    let hour = 3_600e9;
    let xs: Vec<f64> = (0..72).map(|h| h as f64 * hour).collect();
    let mut area = StackedAreaChart::new("Cache occupancy per VM (ARC, 1 GiB)")
        .x_axis(Axis::new("time since trace start").format(ValueFormat::DurationNs))
        .y_axis(Axis::new("occupancy").format(ValueFormat::Bytes))
        .x_values(xs.clone());
    let mut shares = StackedAreaChart::new("Share of the cache per VM")
        .x_axis(Axis::new("time since trace start").format(ValueFormat::DurationNs))
        .y_axis(Axis::new("share of cache").format(ValueFormat::Percent))
        .x_values(xs.clone())
        .normalized(true)
        .step(false);
    let vms = ["vm-db-01", "vm-db-02", "vm-web", "vm-batch", "vm-backup", "<script>"];
    for (v, name) in vms.iter().enumerate() {
        let phase = v as f64;
        let occupancy: Vec<f64> = xs
            .iter()
            .map(|x| {
                let t = x / hour;
                let wave = 1.0 + 0.8 * ((t / 24.0 * std::f64::consts::TAU) + phase).sin();
                let burst = if *name == "vm-backup" && (t % 24.0) < 4.0 { 3.0 } else { 0.2 };
                (wave * (6 - v) as f64 + burst) * 30.0 * (1u64 << 20) as f64
            })
            .collect();
        area.add_series(*name, occupancy.clone());
        shares.add_series(*name, occupancy);
    }
    report
        .section("Per-VM occupancy")
        .paragraph(
            "How the cache is divided between the VMs over the first three days, in bytes and as shares.",
        )
        .chart(&area)
        .chart(&shares);

    let workloads = ["oltp", "web", "batch", "backup", "vdi-boot-storm-monday-morning"];
    let mut bars = BarChart::new("Read hit ratio per workload at 256 MiB")
        .categories(workloads)
        .category_title("workload")
        .y_axis(Axis::new("read hit ratio").format(ValueFormat::Percent));
    for (p, (name, _)) in policies.iter().enumerate() {
        bars.add_series(
            *name,
            workloads.iter().enumerate().map(|(w, _)| 0.2 + 0.15 * w as f64 - 0.03 * p as f64),
        );
    }
    let latency = LineChart::new("p99 read latency")
        .x_axis(Axis::new("cache size").scale(Scale::Log2).format(ValueFormat::Bytes))
        .y_axis(Axis::new("p99 latency").format(ValueFormat::DurationNs))
        .series("LRU", sizes.iter().map(|&s| (s as f64, 8e6 / (1.0 + s as f64 / (256 << 20) as f64))))
        .series("ARC", sizes.iter().map(|&s| (s as f64, 7e6 / (1.0 + s as f64 / (200 << 20) as f64))));
    let volumes: Vec<String> = (1..=16).map(|i| format!("volume-{i:02}-ssd-pool-a")).collect();
    let requests = BarChart::new("Requests per volume")
        .categories(volumes)
        .y_axis(Axis::new("requests").format(ValueFormat::Count))
        .series("", (1..=16).map(|i| (i * i * 37_000 % 900_000) as f64));
    report.section("Workloads").chart(&bars).chart(&latency).chart(&requests);
    report
}
