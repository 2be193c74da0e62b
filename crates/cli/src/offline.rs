//! `cloudcache offline`: offline bounds (MIN, M+, C ...) and online
//! baselines under one flash model, at several cache sizes.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use cloudcache_offline::{run_offline, Algorithm, BlockTrace, CacheSize, OfflineReport, OfflineSpec};
use cloudcache_trace::synth::{self, SynthConfig};

use crate::commands::{write_file, ReadArgs};
use crate::progress;
use crate::units::{parse_positive_size, parse_size};

/// Arguments of `cloudcache offline`.
#[derive(Args, Debug)]
pub struct OfflineArgs {
    /// Trace file, or "demo" for the embedded synthetic workload (docs/synthetic.md).
    trace: PathBuf,
    #[command(flatten)]
    read: ReadArgs,
    /// Algorithms, comma-separated: lru, lru-log, ripq, min, min-trim, m+, mN (e.g. m5), mt, c, cN
    /// (e.g. c5), ct, c-arrival, c-nocfr.
    #[arg(long, value_delimiter = ',', default_value = "lru,min,m+,c,c5", value_parser = parse_algorithm)]
    algorithms: Vec<Algorithm>,
    /// Flash cache sizes, comma-separated: a percentage of the working set (2.5%) or bytes (64MiB).
    #[arg(long, value_delimiter = ',', default_value = "1%,2.5%,5%,10%", value_parser = parse_cache_size, allow_hyphen_values = true)]
    cache_size: Vec<CacheSize>,
    /// Cache block size = flash page (a power of two).
    #[arg(long, default_value = "4KiB", value_parser = parse_size, allow_hyphen_values = true)]
    block_size: u64,
    /// Flash erase unit (container) size, a multiple of the block size.
    #[arg(long, default_value = "2MiB", value_parser = parse_size, allow_hyphen_values = true)]
    erase_unit: u64,
    /// Over-provisioning: spare fraction of the physical flash, in (0, 1) (0.07 or 7%).
    #[arg(long, default_value = "0.07", value_parser = parse_fraction, allow_hyphen_values = true)]
    over_provisioning: f64,
    /// Container write buffer of the C family and lru-log, in erase units.
    #[arg(long, default_value_t = 4)]
    write_buffer: u32,
    /// DRAM cache size as a fraction of the flash cache (0.05 or 5%).
    #[arg(long, default_value = "0.05", value_parser = parse_fraction, allow_hyphen_values = true)]
    dram: f64,
    /// Online policies do not TRIM flash slots their blocks leave.
    #[arg(long)]
    no_trim: bool,
    /// Erasure budget of mt and ct, in EPBPD (erasures per erase unit per day).
    #[arg(long, allow_hyphen_values = true)]
    erasure_budget: Option<f64>,
    /// Program/erase cycles per erase unit, for the endurance projection.
    #[arg(long, default_value_t = 3000)]
    pe_limit: u64,
    /// RIPQ insertion points.
    #[arg(long, default_value_t = 8)]
    ripq_sections: u32,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

fn parse_algorithm(s: &str) -> Result<Algorithm, String> {
    s.parse()
}

fn parse_cache_size(s: &str) -> Result<CacheSize, String> {
    if let Some(pct) = s.trim().strip_suffix('%') {
        let value: f64 =
            pct.trim().parse().map_err(|_| format!("cache size {s:?}: {pct:?} is not a percentage"))?;
        if !(value > 0.0 && value <= 100.0) {
            return Err(format!("cache size {s:?}: a share of the working set must be in (0%, 100%]"));
        }
        return Ok(CacheSize::WorkingSet(value / 100.0));
    }
    parse_positive_size(s).map(CacheSize::Bytes)
}

/// A fraction written as 0.07 or 7%.
pub(crate) fn parse_fraction(s: &str) -> Result<f64, String> {
    let (text, scale) = match s.trim().strip_suffix('%') {
        Some(p) => (p.trim(), 100.0),
        None => (s.trim(), 1.0),
    };
    text.parse::<f64>().map(|v| v / scale).map_err(|_| format!("{s:?} is not a fraction (e.g. 0.07 or 7%)"))
}

/// Run the command.
pub fn offline(args: OfflineArgs) -> Result<()> {
    let spec = OfflineSpec {
        algorithms: args.algorithms.clone(),
        cache_sizes: args.cache_size.clone(),
        erase_unit_bytes: args.erase_unit,
        over_provisioning: args.over_provisioning,
        write_buffer_units: args.write_buffer,
        dram_fraction: args.dram,
        trim_online: !args.no_trim,
        erasure_budget: args.erasure_budget,
        pe_limit: args.pe_limit,
        ripq_sections: args.ripq_sections,
    };
    // Reject settings before reading the trace.
    spec.validate()?;
    cloudcache_flash::FlashConfig {
        capacity_bytes: args.erase_unit.max(args.block_size),
        page_bytes: args.block_size,
        erase_unit_bytes: args.erase_unit,
        over_provisioning: args.over_provisioning,
    }
    .geometry()?;
    let reading = progress::bar(None, "reading", args.quiet);
    let tick = |n| reading.inc(n);
    let mut trace = if args.trace.as_os_str() == "demo" && !args.trace.exists() {
        let config = SynthConfig::from_toml_str(synth::DEMO_CONFIG).context("embedded demo workload")?;
        let mut source = synth::open(&config).context("embedded demo workload")?;
        BlockTrace::from_source(&mut source, args.block_size, &tick)?
    } else {
        let mut reader = cloudcache_trace::open(&args.trace, &args.read.options())?;
        BlockTrace::from_source(&mut reader, args.block_size, &tick)
            .with_context(|| format!("reading {}", args.trace.display()))?
    };
    reading.finish_and_clear();
    if trace.accesses().is_empty() {
        anyhow::bail!("{}: the trace has no block accesses", args.trace.display());
    }
    if spec.algorithms.iter().any(|a| a.is_offline()) {
        trace.annotate();
    }
    let bar = progress::bar(Some(spec.total_work(&trace)), "replaying", args.quiet);
    let report = run_offline(&trace, &spec, &|n| bar.inc(n))?;
    bar.finish_and_clear();
    print!("{}", render_text(&report));
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report).context("cannot encode results as JSON")?;
        write_file(path, text.as_bytes())?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

fn render_text(report: &OfflineReport) -> String {
    let t = &report.trace;
    let mut out = format!(
        "trace: {} requests, {} block accesses ({} reads), working set {} blocks = {:.1} MiB, {}\n",
        t.requests,
        t.block_accesses,
        t.block_reads,
        t.distinct_blocks,
        t.working_set_bytes as f64 / 1048576.0,
        match t.days {
            Some(d) => format!("{:.3} days", d),
            None => "no timestamps (EPBPD not defined)".into(),
        }
    );
    out.push_str(&format!(
        "{:<10} {:>12} {:>8} {:>10} {:>9} {:>6} {:>7} {:>11} {:>11}\n",
        "algorithm", "flash", "RHR", "erasures", "EPBPD", "WA", "FUE", "writes", "copy-fwd"
    ));
    let opt = |v: Option<f64>, digits: usize| v.map_or("-".to_owned(), |v| format!("{v:.digits$}"));
    for r in &report.results {
        out.push_str(&format!(
            "{:<10} {:>8.1} MiB {:>8.4} {:>10} {:>9} {:>6.2} {:>7} {:>11} {:>11}\n",
            r.algorithm,
            r.cache_size_bytes as f64 / 1048576.0,
            r.read_hit_ratio,
            r.erasures,
            opt(r.epbpd, 2),
            r.write_amplification,
            opt(r.fue, 3),
            r.flash_write_blocks,
            r.copy_forward_blocks
        ));
    }
    out
}
