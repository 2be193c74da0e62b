//! What a simulation run tells people and programs: a one-screen text
//! summary, and the JSON document (`results` holds one object per cache).

use std::fmt::Write as _;

use serde::Serialize;

use crate::load::LoadedTrace;
use crate::replay::SimResult;

/// The JSON document `cloudcache sim --json` writes.
#[derive(Clone, Debug, Serialize)]
pub struct SimReport {
    /// Version of cloudcache that produced it.
    pub cloudcache_version: &'static str,
    /// What was replayed.
    pub trace: TraceSummary,
    /// One object per (policy, cache size), in command-line order.
    pub results: Vec<SimResult>,
}

/// The replayed trace, as the report describes it.
#[derive(Clone, Debug, Serialize)]
pub struct TraceSummary {
    /// Files read (empty for a synthetic workload).
    pub sources: Vec<SourceSummary>,
    /// Requests replayed.
    pub requests: u64,
    /// Volume names by id.
    pub volumes: Vec<String>,
    /// Whether requests carry timestamps.
    pub has_timestamps: bool,
    /// Last minus first request time, when known.
    pub duration_ns: Option<u64>,
}

/// One input file.
#[derive(Clone, Debug, Serialize)]
pub struct SourceSummary {
    /// Path as given.
    pub path: String,
    /// Format read.
    pub format: String,
    /// Compression found.
    pub compression: String,
    /// Requests read.
    pub requests: u64,
    /// Bad lines skipped.
    pub skipped_lines: u64,
}

impl SimReport {
    /// Assemble the report of `results` replayed from `trace`.
    pub fn new(trace: &LoadedTrace, results: Vec<SimResult>) -> Self {
        SimReport {
            cloudcache_version: env!("CARGO_PKG_VERSION"),
            trace: TraceSummary {
                sources: trace
                    .sources
                    .iter()
                    .map(|s| SourceSummary {
                        path: s.path.display().to_string(),
                        format: s.format.clone(),
                        compression: s.compression.clone(),
                        requests: s.requests,
                        skipped_lines: s.skipped_lines,
                    })
                    .collect(),
                requests: trace.requests.len() as u64,
                volumes: trace.volume_names.clone(),
                has_timestamps: trace.has_timestamps,
                duration_ns: trace.time_span_ns().map(|(first, last)| last - first),
            },
            results,
        }
    }

    /// A one-screen text summary: one line per cache.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let t = &self.trace;
        let _ = write!(out, "{} requests, {} volume(s)", t.requests, t.volumes.len());
        if let Some(d) = t.duration_ns {
            let _ = write!(out, ", {:.1} h of trace time", d as f64 / 3.6e12);
        }
        let skipped: u64 = t.sources.iter().map(|s| s.skipped_lines).sum();
        if skipped > 0 {
            let _ = write!(out, ", {skipped} bad line(s) skipped");
        }
        out.push('\n');
        if let Some(first) = self.results.first() {
            let _ = writeln!(
                out,
                "mode {}, write policy {}, block size {} B; hit ratios in %, flash/backend in blocks\n",
                first.mode, first.write_policy, first.block_size
            );
        }
        let _ = writeln!(
            out,
            "{:<10} {:>10} {:>8} {:>8} {:>8} {:>8} {:>12} {:>12} {:>12} {:>10}",
            "policy",
            "cache",
            "req hit",
            "blk hit",
            "read hit",
            "byte hit",
            "flash wr",
            "backend rd",
            "backend wr",
            "dirty end"
        );
        for r in &self.results {
            let pct = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{:.2}", v * 100.0));
            let _ = writeln!(
                out,
                "{:<10} {:>10} {:>8} {:>8} {:>8} {:>8} {:>12} {:>12} {:>12} {:>10}",
                r.label(),
                human_bytes(r.cache_size_bytes),
                pct(r.ratios.request_hit_ratio),
                pct(r.ratios.block_hit_ratio),
                pct(r.ratios.read_block_hit_ratio),
                pct(r.ratios.byte_hit_ratio),
                r.counters.flash_write_blocks,
                r.counters.backend_read_blocks,
                r.counters.backend_write_blocks,
                r.dirty_blocks_at_end,
            );
        }
        if self.results.iter().any(|r| r.window_seconds.is_some()) {
            self.render_allocation(&mut out);
        }
        if self.results.iter().any(|r| r.flash.is_some()) {
            self.render_flash(&mut out);
        }
        out
    }

    /// The flash device table: what each cache cost the flash.
    fn render_flash(&self, out: &mut String) {
        if let Some(f) = self.results.iter().find_map(|r| r.flash.as_ref()) {
            let _ = writeln!(
                out,
                "\nflash device ({}, erase unit {}, over-provisioning {:.1} %, {}; endurance at {} P/E cycles)\n",
                f.flash_model,
                human_bytes(f.erase_unit_bytes),
                f.over_provisioning * 100.0,
                if f.trim { "TRIM on" } else { "no TRIM" },
                f.pe_limit
            );
        }
        let _ = writeln!(
            out,
            "{:<10} {:>10} {:>7} {:>10} {:>12} {:>12} {:>7} {:>7} {:>11}",
            "policy", "cache", "units", "erasures", "EPBPD", "copy-fwd", "WA", "FUE", "endur. days"
        );
        for r in &self.results {
            let Some(f) = &r.flash else { continue };
            let num =
                |v: Option<f64>, digits: usize| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.digits$}"));
            let _ = writeln!(
                out,
                "{:<10} {:>10} {:>7} {:>10} {:>12} {:>12} {:>7.3} {:>7} {:>11}",
                r.label(),
                human_bytes(r.cache_size_bytes),
                f.erase_units,
                f.erasures,
                num(f.epbpd, 3),
                f.copy_forward_blocks,
                f.write_amplification,
                num(f.fue, 3),
                num(f.endurance_days, 1),
            );
        }
    }

    /// The allocation table: what each method gave and used.
    fn render_allocation(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "\non-demand allocation (cache sizes in bytes as averages over time; flash wr = blocks written / blocks accessed)\n"
        );
        let _ = writeln!(
            out,
            "{:<10} {:>10} {:>8} {:>8} {:>10} {:>10} {:>10} {:>10} {:>9} {:>10}",
            "allocation",
            "cache",
            "blk hit",
            "read hit",
            "mean alloc",
            "after w-up",
            "peak alloc",
            "mean used",
            "flash wr",
            "staging"
        );
        for r in &self.results {
            let pct = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{:.2}", v * 100.0));
            let _ = writeln!(
                out,
                "{:<10} {:>10} {:>8} {:>8} {:>10} {:>10} {:>10} {:>10} {:>9} {:>10}",
                r.allocation,
                human_bytes(r.cache_size_bytes),
                pct(r.ratios.block_hit_ratio),
                pct(r.ratios.read_block_hit_ratio),
                human_bytes(r.mean_allocated_bytes.round() as u64),
                human_bytes(r.mean_allocated_after_warmup_bytes.round() as u64),
                human_bytes(r.peak_allocated_bytes),
                human_bytes(r.mean_occupied_bytes.round() as u64),
                pct(r.ratios.flash_write_ratio),
                human_bytes(r.mean_staging_bytes.round() as u64),
            );
        }
    }
}

/// `bytes` in the largest binary unit that keeps it whole ("64MiB"), else bytes.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [(&str, u32); 5] = [("PiB", 50), ("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)];
    for (unit, shift) in UNITS {
        if bytes >= 1 << shift && bytes % (1 << shift) == 0 {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    if bytes >= 1 << 20 {
        return format!("{:.1}MiB", bytes as f64 / (1u64 << 20) as f64);
    }
    if bytes >= 1 << 10 {
        return format!("{:.1}KiB", bytes as f64 / 1024.0);
    }
    format!("{bytes}B")
}

#[cfg(test)]
mod tests {
    use super::human_bytes;

    #[test]
    fn human_bytes_picks_whole_units() {
        assert_eq!(human_bytes(64 << 20), "64MiB");
        assert_eq!(human_bytes(1 << 30), "1GiB");
        assert_eq!(human_bytes(1536 << 20), "1536MiB");
        assert_eq!(human_bytes(4096), "4KiB");
        assert_eq!(human_bytes(1000), "1000B");
    }
}
