//! `cloudcache mrc` and `cloudcache analyze`: argument definitions and the
//! glue over the analysis crate.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use cloudcache_analysis::curves::{self, CurveSpec, Granularity, Method};
use cloudcache_analysis::{Counted, Workload};
use cloudcache_report::{format_bytes, format_count, format_percent};

use crate::commands::{write_file, ReadArgs};
use crate::progress;
use crate::units::{parse_positive_size, parse_size};

/// Rows of the printed curve; the JSON always has every point.
const PRINTED_POINTS: usize = 40;

#[derive(Args, Debug)]
pub struct MrcArgs {
    /// Trace file.
    trace: PathBuf,
    #[command(flatten)]
    read: ReadArgs,
    /// exact (LRU stack distances) or shards (spatial sampling).
    #[arg(long, default_value = "exact", value_parser = parse_method)]
    method: Method,
    /// SHARDS sampling rate in (0, 1] [default: 0.01, raised on small traces to sample 32768 blocks].
    #[arg(long, allow_hyphen_values = true)]
    rate: Option<f64>,
    /// Fixed-size SHARDS: track at most this many blocks (bounded memory) instead of a fixed rate.
    #[arg(long)]
    max_samples: Option<usize>,
    /// Cache sizes, comma-separated (default: a dense curve up to the footprint).
    #[arg(long, value_delimiter = ',', value_parser = parse_positive_size, allow_hyphen_values = true)]
    sizes: Option<Vec<u64>>,
    /// Count read accesses only (every access still updates the LRU stack).
    #[arg(long)]
    reads_only: bool,
    /// Cache block size (a power of two).
    #[arg(long, default_value = "4KiB", value_parser = parse_size, allow_hyphen_values = true)]
    block_size: u64,
    /// block, or object (libCacheSim's model; exact method only).
    #[arg(long, default_value = "block", value_parser = parse_granularity)]
    mode: Granularity,
    /// Only these volumes, sharing one cache (comma-separated names).
    #[arg(long, value_delimiter = ',')]
    volumes: Option<Vec<String>>,
    /// With --method shards, also compute the exact curve and report the mean absolute error.
    #[arg(long)]
    compare_exact: bool,
    /// Write the curve as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

fn parse_method(s: &str) -> Result<Method, String> {
    s.parse()
}
fn parse_granularity(s: &str) -> Result<Granularity, String> {
    s.parse()
}

/// Load a trace into memory with a progress spinner.
pub fn load(path: &Path, read: &ReadArgs, quiet: bool) -> Result<Workload> {
    let mut reader = cloudcache_trace::open(path, &read.options())?;
    let loading = progress::bar(None, "loading", quiet);
    let workload = Workload::read(&mut reader, &path.display().to_string(), &|n| loading.inc(n))?;
    loading.finish_and_clear();
    if workload.requests.is_empty() {
        bail!("{}: the trace is empty (no requests)", path.display());
    }
    Ok(workload)
}

/// Volume ids of the named volumes; an unknown name is an error listing the
/// names there are.
fn volume_ids(w: &Workload, names: &[String]) -> Result<Vec<usize>> {
    names
        .iter()
        .map(|name| {
            w.volume_names.iter().position(|n| n == name).with_context(|| {
                let known: Vec<&str> = w.volume_names.iter().take(10).map(String::as_str).collect();
                format!(
                    "--volumes: no volume named {name:?} in the trace (it has {}: {}{})",
                    w.volume_names.len(),
                    known.join(", "),
                    if w.volume_names.len() > 10 { ", ..." } else { "" }
                )
            })
        })
        .collect()
}

pub fn mrc(args: MrcArgs) -> Result<()> {
    if !args.block_size.is_power_of_two() {
        bail!("--block-size {} is not a power of two", args.block_size);
    }
    if let Some(rate) = args.rate {
        cloudcache_analysis::check_rate(rate).context("--rate")?;
    }
    if args.mode == Granularity::Block {
        if let Some(small) = args.sizes.iter().flatten().find(|&&s| s < args.block_size) {
            bail!(
                "--sizes: {} is smaller than one block ({}); a block cache holds whole blocks",
                format_bytes(*small),
                format_bytes(args.block_size)
            );
        }
    }
    let w = load(&args.trace, &args.read, args.quiet)?;
    if w.requests.len() == 1 {
        eprintln!(
            "warning: {} has only one request: nothing can be reused, every access misses",
            args.trace.display()
        );
    }
    let spec = CurveSpec {
        method: args.method,
        granularity: args.mode,
        block_size: args.block_size,
        rate: args.rate,
        max_samples: args.max_samples,
        sizes: args.sizes.clone(),
        counted: if args.reads_only { Counted::Reads } else { Counted::All },
        volumes: args.volumes.as_deref().map(|names| volume_ids(&w, names)).transpose()?,
        compare_exact: args.compare_exact,
    };
    let passes = 1 + u64::from(args.method == Method::Shards && args.compare_exact);
    let bar = progress::bar(Some(w.requests.len() as u64 * passes), "curve", args.quiet);
    let doc =
        curves::compute(&w, &spec, &|n| bar.inc(n)).with_context(|| args.trace.display().to_string())?;
    bar.finish_and_clear();

    let method = match (doc.method, doc.max_samples) {
        (Method::Exact, _) => "exact LRU".to_owned(),
        (Method::Shards, None) => match doc.default_rate {
            Some(true) => format!(
                "SHARDS at rate {:.6} (the default: 1 %, or enough to sample {} blocks)",
                doc.sampling_rate.unwrap_or(1.0),
                cloudcache_analysis::DEFAULT_MIN_SAMPLED_BLOCKS
            ),
            _ => format!("SHARDS at rate {}", doc.sampling_rate.unwrap_or(1.0)),
        },
        (Method::Shards, Some(max)) => {
            format!("fixed-size SHARDS ({max} blocks, final rate {:.6})", doc.sampling_rate.unwrap_or(1.0))
        }
    };
    let mode = match doc.mode {
        Granularity::Block => format!("block mode ({})", format_bytes(doc.block_size)),
        Granularity::Object => "object mode".to_owned(),
    };
    println!(
        "{}: {method}, {mode}, {} accesses, {} volume(s), {} block accesses, footprint {}",
        args.trace.display(),
        doc.accesses,
        doc.volumes.len(),
        format_count(doc.block_accesses),
        format_bytes(doc.footprint_bytes)
    );
    println!("{:>12}  {:>10}  {:>10}", "cache size", "miss ratio", "hit ratio");
    let step = doc.points.len().div_ceil(PRINTED_POINTS).max(1);
    let ratio = |r: Option<f64>| r.map(format_percent).unwrap_or_else(|| "-".to_owned());
    for (i, p) in doc.points.iter().enumerate() {
        if i % step == 0 || i + 1 == doc.points.len() {
            println!(
                "{:>12}  {:>10}  {:>10}",
                format_bytes(p.cache_size_bytes),
                ratio(p.miss_ratio),
                ratio(p.hit_ratio)
            );
        }
    }
    if step > 1 {
        println!(
            "({} of {} points shown; --json has them all)",
            doc.points.len().div_ceil(step),
            doc.points.len()
        );
    }
    if let Some(mae) = doc.mean_absolute_error {
        println!("mean absolute error against the exact curve: {mae:.5}");
    }
    if let Some(path) = args.json {
        let text = serde_json::to_string_pretty(&doc).context("cannot encode the curve as JSON")?;
        write_file(&path, text.as_bytes())?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

#[derive(Args, Debug)]
pub struct AnalyzeArgs {
    /// Trace file.
    trace: PathBuf,
    #[command(flatten)]
    read: ReadArgs,
    /// Directory to write summary.json, CSVs, SVG plots and report.html into (must not hold other files).
    #[arg(long)]
    out: PathBuf,
    /// Replace a previous analysis in --out.
    #[arg(long)]
    force: bool,
    /// Cache block size (a power of two).
    #[arg(long, default_value = "4KiB", value_parser = parse_size, allow_hyphen_values = true)]
    block_size: u64,
    /// SHARDS sampling rate in (0, 1] for the sampled curve compared with the exact one [default: 0.01, raised
    /// on small traces to sample 32768 blocks].
    #[arg(long, allow_hyphen_values = true)]
    rate: Option<f64>,
    /// Working-set window, e.g. 10min, 1h, 24h (default: the longest of 1 min .. 2 days giving 12 windows).
    #[arg(long, value_parser = parse_window)]
    window: Option<u64>,
    /// N of the reuse working set RWS_N (blocks accessed at least N + 1 times in a window).
    #[arg(long, default_value = "1")]
    rws_n: u32,
    /// Cache sizes whose hit ratio is followed over time (default: about 10 % and 50 % of the footprint).
    #[arg(long, value_delimiter = ',', value_parser = parse_positive_size, allow_hyphen_values = true)]
    cache_size: Option<Vec<u64>>,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

fn parse_window(s: &str) -> Result<u64, String> {
    match cloudcache_trace::units::parse_duration(s)? {
        0 => Err(format!("window {s:?} is zero")),
        ns => Ok(ns),
    }
}

pub fn analyze(args: AnalyzeArgs) -> Result<()> {
    use cloudcache_analysis::analyze::{self, AnalyzeOptions};
    use cloudcache_analysis::output;

    if !args.block_size.is_power_of_two() {
        bail!("--block-size {} is not a power of two", args.block_size);
    }
    if let Some(rate) = args.rate {
        cloudcache_analysis::check_rate(rate).context("--rate")?;
    }
    // Refuse a bad output directory before spending time on the trace.
    output::check_output_dir(&args.out, args.force)?;
    let w = load(&args.trace, &args.read, args.quiet)?;
    let options = AnalyzeOptions {
        block_size: args.block_size,
        shards_rate: args.rate,
        window_ns: args.window,
        rws_n: args.rws_n,
        timeline_sizes: args.cache_size.clone(),
    };
    let bar = progress::bar(Some(w.requests.len() as u64 * analyze::PASSES), "analyzing", args.quiet);
    let analysis =
        analyze::analyze(&w, &options, &|n| bar.inc(n)).with_context(|| args.trace.display().to_string())?;
    bar.finish_and_clear();
    for warning in &analysis.warnings {
        eprintln!("warning: {}: {warning}", args.trace.display());
    }
    let label = args.trace.display().to_string();
    let files = output::write_dir(&analysis, &label, &args.out, args.force)?;
    let k = &analysis.curves;
    println!(
        "{label}: {} requests, {} block accesses, footprint {}",
        format_count(analysis.requests),
        format_count(analysis.block_accesses),
        format_bytes(analysis.footprint_bytes)
    );
    if let Some(mae) = k.shards_mean_absolute_error {
        let rate = if k.shards_default_rate {
            format!(
                "{:.4} (the default: 1 %, or enough to sample {} blocks)",
                k.shards_rate,
                cloudcache_analysis::DEFAULT_MIN_SAMPLED_BLOCKS
            )
        } else {
            k.shards_rate.to_string()
        };
        println!("SHARDS at rate {rate}: mean absolute error {mae:.4} against the exact curve");
    }
    if let Some(ws) = &analysis.working_sets {
        if let Some(knee) = ws.knee.knee_window_ns {
            println!("knee-point window: {}", cloudcache_report::format_duration_ns(knee));
        }
    }
    println!("wrote {} files to {} (open report.html)", files.len(), args.out.display());
    Ok(())
}
