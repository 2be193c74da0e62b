//! The HTML report of a simulation: hit ratios, flash writes and backend
//! I/O against cache size for every policy, per-VM results, and the full
//! tables, in one self-contained page.

use cloudcache_report::{
    format_bytes, format_bytes_f64, format_count, format_duration_ns, format_percent, Align, Axis, BarChart,
    LineChart, Report, Scale, StackedAreaChart, Table, ValueFormat,
};

use crate::replay::SimResult;
use crate::report::SimReport;

/// Render `report` as a self-contained HTML page.
pub fn render(report: &SimReport) -> String {
    let mut page = Report::new("cloudcache simulation");
    page.subtitle(subtitle(report));
    trace_section(&mut page, report);
    if !report.results.is_empty() {
        ratio_section(&mut page, report);
        io_section(&mut page, report);
        volume_section(&mut page, report);
        allocation_section(&mut page, report);
        results_table(&mut page, report);
    }
    page.footer(format!(
        "cloudcache {}; hit ratios are labelled by what they divide (docs/usage.md)",
        report.cloudcache_version
    ));
    page.render()
}

fn subtitle(report: &SimReport) -> String {
    let Some(first) = report.results.first() else { return "no caches simulated".to_owned() };
    format!(
        "{} mode, {} write policy, {} blocks",
        first.mode,
        first.write_policy,
        format_bytes(first.block_size)
    )
}

fn trace_section(page: &mut Report, report: &SimReport) {
    let t = &report.trace;
    let section = page.section("Trace");
    let mut facts: Vec<(String, String)> = t
        .sources
        .iter()
        .map(|s| {
            let mut what = format!("{} ({}", s.format, s.compression);
            if s.skipped_lines > 0 {
                what.push_str(&format!(", {} bad lines skipped", format_count(s.skipped_lines)));
            }
            what.push(')');
            (s.path.clone(), what)
        })
        .collect();
    facts.push(("requests".into(), format_count(t.requests)));
    facts.push(("volumes".into(), format_count(t.volumes.len() as u64)));
    facts.push((
        "duration".into(),
        t.duration_ns.map_or_else(|| "no timestamps".to_owned(), format_duration_ns),
    ));
    section.key_values(facts);
}

/// Distinct policies (with their allocation method) in result order, each
/// with its results in size order.
fn by_policy(report: &SimReport) -> Vec<(String, Vec<&SimResult>)> {
    let mut groups: Vec<(String, Vec<&SimResult>)> = Vec::new();
    for r in &report.results {
        let label = r.label();
        match groups.iter_mut().find(|(p, _)| *p == label) {
            Some((_, rs)) => rs.push(r),
            None => groups.push((label, vec![r])),
        }
    }
    for (_, rs) in &mut groups {
        rs.sort_by_key(|r| r.cache_size_bytes);
    }
    groups
}

fn size_axis() -> Axis {
    Axis::new("cache size").scale(Scale::Log2).format(ValueFormat::Bytes)
}

/// One line per policy of `metric` against cache size.
fn chart_by_size(
    report: &SimReport,
    title: &str,
    y_axis: Axis,
    metric: impl Fn(&SimResult) -> Option<f64>,
) -> LineChart {
    let mut chart = LineChart::new(title).x_axis(size_axis()).y_axis(y_axis).markers(true);
    for (policy, results) in by_policy(report) {
        let points: Vec<(f64, f64)> =
            results.iter().filter_map(|r| metric(r).map(|v| (r.cache_size_bytes as f64, v))).collect();
        chart = chart.series(policy, points);
    }
    chart
}

fn percent_axis(title: &str) -> Axis {
    Axis::new(title).format(ValueFormat::Percent).include_zero(true)
}

fn ratio_section(page: &mut Report, report: &SimReport) {
    let section = page.section("Hit ratio by cache size");
    section.paragraph(
        "Block hit ratio counts every cache block a request touches; the request hit ratio counts \
         requests whose every block hit; the read hit ratio is over read blocks only.",
    );
    section.chart(&chart_by_size(
        report,
        "Block hit ratio",
        percent_axis("block hits / block accesses"),
        |r| r.ratios.block_hit_ratio,
    ));
    section.chart(&chart_by_size(
        report,
        "Read block hit ratio",
        percent_axis("read block hits / read block accesses"),
        |r| r.ratios.read_block_hit_ratio,
    ));
    section.chart(&chart_by_size(
        report,
        "Request hit ratio",
        percent_axis("request hits / requests"),
        |r| r.ratios.request_hit_ratio,
    ));
}

fn io_section(page: &mut Report, report: &SimReport) {
    let section = page.section("Flash writes and backend I/O");
    section.paragraph(
        "Flash writes wear the cache device; backend reads and writes load the shared storage \
         server. Both are in cache blocks.",
    );
    section.chart(&chart_by_size(
        report,
        "Flash write ratio",
        Axis::new("flash writes / block accesses").format(ValueFormat::Number).include_zero(true),
        |r| r.ratios.flash_write_ratio,
    ));
    let count_axis = |title: &str| Axis::new(title).format(ValueFormat::Number).include_zero(true);
    section.chart(&chart_by_size(report, "Backend reads", count_axis("blocks read from the backend"), |r| {
        Some(r.counters.backend_read_blocks as f64)
    }));
    section.chart(&chart_by_size(
        report,
        "Backend writes",
        count_axis("blocks written to the backend"),
        |r| Some(r.counters.backend_write_blocks as f64),
    ));
}

fn volume_section(page: &mut Report, report: &SimReport) {
    let Some(largest) = report.results.iter().map(|r| r.cache_size_bytes).max() else { return };
    let at_largest: Vec<&SimResult> =
        report.results.iter().filter(|r| r.cache_size_bytes == largest).collect();
    let names: Vec<String> = at_largest[0].volumes.iter().map(|v| v.name.clone()).collect();
    if names.len() < 2 {
        return;
    }
    let section = page.section("Per-VM results");
    section.paragraph(format!(
        "Each VM's block hit ratio in a shared {} cache, one bar per policy.",
        format_bytes(largest)
    ));
    let mut chart = BarChart::new(format!("Block hit ratio per VM at {}", format_bytes(largest)))
        .categories(names.clone())
        .category_title("VM")
        .y_axis(percent_axis("block hits / block accesses"));
    for r in &at_largest {
        chart =
            chart.series(r.label(), r.volumes.iter().map(|v| v.ratios.block_hit_ratio.unwrap_or(f64::NAN)));
    }
    section.chart(&chart);
    let first = at_largest[0];
    let mut table = Table::new([
        "VM",
        "requests",
        "read / write",
        "block hit",
        "read hit",
        "flash writes",
        "backend reads",
        "backend writes",
        "cached at end",
    ])
    .caption(format!("{} at {}", first.label(), format_bytes(largest)));
    for v in &first.volumes {
        table.row([
            v.name.clone(),
            format_count(v.counters.requests),
            format!(
                "{} / {}",
                format_count(v.counters.read_requests),
                format_count(v.counters.write_requests)
            ),
            percent(v.ratios.block_hit_ratio),
            percent(v.ratios.read_block_hit_ratio),
            format_count(v.counters.flash_write_blocks),
            format_count(v.counters.backend_read_blocks),
            format_count(v.counters.backend_write_blocks),
            format_count(v.cached_items_at_end),
        ]);
    }
    section.table(table.align(0, Align::Left));
}

/// On-demand allocation: what each method allocated and used, demand
/// against prediction (seed 001 figure 3.4) and each VM's share over time
/// (figure 4.4).
fn allocation_section(page: &mut Report, report: &SimReport) {
    let windowed: Vec<&SimResult> = report.results.iter().filter(|r| r.window_seconds.is_some()).collect();
    let Some(first) = windowed.first() else { return };
    let section = page.section("Demand and allocation");
    section.paragraph(format!(
        "Windows of {}; the first is a warm-up with equal shares. Allocation and use are averages \
         over time; the flash write ratio is blocks written to flash per block accessed.",
        format_duration_ns((first.window_seconds.unwrap_or(0.0) * 1e9) as u64)
    ));
    let mut table = Table::new([
        "allocation",
        "cache",
        "block hit",
        "read hit",
        "mean allocated",
        "peak allocated",
        "mean used",
        "flash write ratio",
        "staging memory",
        "not admitted",
    ]);
    for r in &windowed {
        table.row([
            r.label(),
            format_bytes(r.cache_size_bytes),
            percent(r.ratios.block_hit_ratio),
            percent(r.ratios.read_block_hit_ratio),
            format_bytes_f64(r.mean_allocated_bytes),
            format_bytes(r.peak_allocated_bytes),
            format_bytes_f64(r.mean_occupied_bytes),
            percent(r.ratios.flash_write_ratio),
            format_bytes_f64(r.mean_staging_bytes),
            format_count(r.counters.not_admitted),
        ]);
    }
    section.table(table.align(0, Align::Left));
    // The demand charts of RWSS if it ran, else of the first method whose
    // shares follow demand.
    let chosen = windowed
        .iter()
        .find(|r| r.rws_n.is_some())
        .or_else(|| windowed.iter().find(|r| r.predictor.is_some()));
    let Some(r) = chosen else { return };
    let hours = Axis::new("trace time").format(ValueFormat::DurationNs);
    let bytes = |title: &str| Axis::new(title).format(ValueFormat::Bytes).include_zero(true);
    let starts: Vec<f64> = r.volumes[0].windows.iter().map(|w| w.start_seconds * 1e9).collect();
    let sum = |f: &dyn Fn(&crate::allocation::WindowPoint) -> Option<u64>| -> Vec<(f64, f64)> {
        (0..starts.len())
            .filter_map(|i| {
                let mut total = 0;
                for v in &r.volumes {
                    total += f(v.windows.get(i)?)?;
                }
                Some((starts[i], total as f64))
            })
            .collect()
    };
    section.subheading(format!(
        "{} at {}: demand against prediction",
        r.label(),
        format_bytes(r.cache_size_bytes)
    ));
    section.chart(
        &LineChart::new("Observed and predicted demand, all VMs")
            .x_axis(hours.clone())
            .y_axis(bytes("bytes"))
            .markers(true)
            .series("working set (WSS)", sum(&|w| Some(w.working_set_bytes)))
            .series(format!("observed demand ({})", r.label()), sum(&|w| Some(w.observed_demand_bytes)))
            .series("predicted demand", sum(&|w| w.predicted_demand_bytes))
            .series("allocated", sum(&|w| Some(w.allocated_bytes))),
    );
    let end = r.volumes[0].windows.last().map_or(0.0, |w| (w.start_seconds + w.duration_seconds) * 1e9);
    let mut shares = StackedAreaChart::new("Each VM's cache share over time")
        .x_axis(hours)
        .y_axis(bytes("allocated"))
        .x_values(starts.iter().copied())
        .x_end(end);
    for v in &r.volumes {
        shares.add_series(v.name.clone(), v.windows.iter().map(|w| w.allocated_bytes as f64));
    }
    section.chart(&shares);
}

fn results_table(page: &mut Report, report: &SimReport) {
    let section = page.section("All results");
    let mut table = Table::new([
        "policy",
        "cache",
        "request hit",
        "block hit",
        "read hit",
        "write hit",
        "byte hit",
        "flash writes",
        "backend reads",
        "backend writes",
        "evictions (dirty)",
        "dirty at end",
    ]);
    for r in &report.results {
        table.row([
            r.label(),
            format_bytes(r.cache_size_bytes),
            percent(r.ratios.request_hit_ratio),
            percent(r.ratios.block_hit_ratio),
            percent(r.ratios.read_block_hit_ratio),
            percent(r.ratios.write_block_hit_ratio),
            percent(r.ratios.byte_hit_ratio),
            format_count(r.counters.flash_write_blocks),
            format_count(r.counters.backend_read_blocks),
            format_count(r.counters.backend_write_blocks),
            format!("{} ({})", format_count(r.counters.evictions), format_count(r.counters.dirty_evictions)),
            format_count(r.dirty_blocks_at_end),
        ]);
    }
    section.table(table.align(0, Align::Left));
}

fn percent(ratio: Option<f64>) -> String {
    ratio.map_or_else(|| "-".to_owned(), format_percent)
}
