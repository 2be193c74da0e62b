//! `cloudcache latency` and `cloudcache study ...`: timed replays under the
//! latency model, and seed 001's write-policy, restart and RAID studies.

use std::fs;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use cloudcache_engine::{CacheConfig, WritePolicy};
use cloudcache_sim::latency::{run_timed, LatencyModel, LatencyStats, Restart, TimedResult, TimedSpec};
use cloudcache_sim::raid::{raid_study, RaidLayout};
use cloudcache_sim::raid_timing::RaidTiming;
use cloudcache_sim::study::{restart_study, working_set_blocks, write_policy_study, StudySetup};
use cloudcache_sim::LoadedTrace;
use cloudcache_trace::units::parse_duration;
use serde::Serialize;

use super::{write_file, ReadArgs};
use crate::progress;
use crate::units::parse_size;

/// A cache size: bytes, or a percentage of the trace's working set.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CacheSize {
    /// Bytes.
    Bytes(u64),
    /// Percent of the distinct blocks the trace touches.
    PercentOfWorkingSet(f64),
}

fn parse_cache_size(text: &str) -> Result<CacheSize, String> {
    if let Some(percent) = text.trim().strip_suffix('%') {
        let p: f64 =
            percent.trim().parse().map_err(|_| format!("cache size {text:?} is not a percentage"))?;
        if !(p > 0.0 && p <= 1000.0) {
            return Err(format!("cache size {text:?} must be a percentage above 0 (of the working set)"));
        }
        return Ok(CacheSize::PercentOfWorkingSet(p));
    }
    match parse_size(text)? {
        0 => Err(format!("cache size {text:?} is zero; a cache needs a positive size")),
        n => Ok(CacheSize::Bytes(n)),
    }
}

fn parse_duration_arg(text: &str) -> Result<u64, String> {
    if text.trim_start().starts_with('-') {
        return Err(format!("duration {text:?} is negative"));
    }
    parse_duration(text)
}

fn parse_positive_duration(text: &str) -> Result<u64, String> {
    match parse_duration_arg(text)? {
        0 => Err(format!("duration {text:?} is zero")),
        n => Ok(n),
    }
}

fn parse_speedup(text: &str) -> Result<f64, String> {
    let s = text.trim().trim_end_matches(['x', 'X']);
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("speed-up {text:?} is not a positive number (e.g. 1, 20, 20x)")),
    }
}

fn parse_restart(text: &str) -> Result<Restart, String> {
    text.parse()
}

/// Options every timed replay shares.
#[derive(Args, Debug, Clone)]
pub struct TimedArgs {
    /// Trace files (several are merged by time, each keeping its volumes).
    #[arg(required = true)]
    traces: Vec<PathBuf>,
    #[command(flatten)]
    read: ReadArgs,
    /// Cache size: bytes (e.g. 256MiB) or a percentage of the working set (e.g. 10%).
    #[arg(long, default_value = "10%", value_parser = parse_cache_size)]
    cache_size: CacheSize,
    /// Cache block size (a power of two).
    #[arg(long, default_value = "4KiB", value_parser = parse_size)]
    block_size: u64,
    /// Replay this many times faster than the trace was recorded (seed 001 uses 20).
    #[arg(long, default_value = "1", value_parser = parse_speedup)]
    speedup: f64,
    /// Length of a report bucket in trace time (e.g. 20min, 1h).
    #[arg(long, default_value = "20min", value_parser = parse_positive_duration)]
    bucket: u64,
    /// Device timing model (TOML; see docs/latency.md). Default: seed 001's testbed.
    #[arg(long)]
    model: Option<PathBuf>,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

impl TimedArgs {
    fn load(&self) -> Result<(LoadedTrace, LatencyModel)> {
        let model = match &self.model {
            Some(path) => {
                let text =
                    fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
                LatencyModel::from_toml_str(&text).with_context(|| format!("in {}", path.display()))?
            }
            None => LatencyModel::default(),
        };
        let loading = progress::bar(None, "loading", self.quiet);
        let trace = LoadedTrace::load(&self.traces, &self.read.options(), &|n| loading.inc(n))?;
        loading.finish_and_clear();
        if trace.requests.is_empty() {
            bail!("the trace has no requests");
        }
        Ok((trace, model))
    }

    /// The cache configuration, sizing a percentage from the working set.
    fn cache(&self, trace: &LoadedTrace, write_policy: WritePolicy) -> Result<CacheConfig> {
        if self.block_size == 0 || !self.block_size.is_power_of_two() {
            bail!("block size {} is not a power of two", self.block_size);
        }
        let capacity_bytes = self.capacity(trace, 1)?;
        let config = CacheConfig {
            capacity_bytes,
            block_size: self.block_size,
            write_policy,
            ..CacheConfig::default()
        };
        config.validate()?;
        Ok(config)
    }

    /// Bytes of one of `devices` equal devices holding the cache size.
    fn capacity(&self, trace: &LoadedTrace, devices: u64) -> Result<u64> {
        Ok(match self.cache_size {
            CacheSize::Bytes(b) => b,
            CacheSize::PercentOfWorkingSet(p) => {
                let blocks = working_set_blocks(trace, self.block_size);
                let bytes = (blocks as f64 * p / 100.0 / devices as f64).round() as u64 * self.block_size;
                if bytes == 0 {
                    bail!("{p}% of the working set ({blocks} blocks) is less than one block");
                }
                eprintln!(
                    "cache size {p}% of the working set ({blocks} blocks of {} B) = {} B{}",
                    self.block_size,
                    bytes * devices,
                    if devices > 1 { format!(" ({devices} devices of {bytes} B)") } else { String::new() }
                );
                bytes
            }
        })
    }

    fn setup(
        &self,
        trace: &LoadedTrace,
        model: LatencyModel,
        write_policy: WritePolicy,
    ) -> Result<StudySetup> {
        Ok(StudySetup {
            cache: self.cache(trace, write_policy)?,
            model,
            speedup: self.speedup,
            bucket_ns: self.bucket,
        })
    }
}

/// `cloudcache latency`.
#[derive(Args, Debug)]
pub struct LatencyArgs {
    #[command(flatten)]
    timed: TimedArgs,
    /// write-back, write-through, write-invalidate (write-around), read-only, or none (no cache).
    #[arg(long, default_value = "write-back")]
    write_policy: String,
    /// Host reboots at these trace times from the first request (e.g. 6h,30h).
    #[arg(long, value_delimiter = ',', value_parser = parse_duration_arg)]
    reboot_at: Vec<u64>,
    /// What a reboot keeps: warm (all metadata persists), dirty-only, cold.
    #[arg(long, default_value = "cold", value_parser = parse_restart)]
    restart: Restart,
}

/// `cloudcache study ...`.
#[derive(Subcommand, Debug)]
pub enum StudyCommand {
    /// Compare no cache, write-invalidate, write-through and write-back on latency and server load.
    WritePolicy(WritePolicyArgs),
    /// Inject host reboots; compare warm, dirty-only and cold restarts.
    Restart(RestartArgs),
    /// Cache-optimized RAID over two flash devices versus RAID-0 and RAID-1.
    Raid(RaidArgs),
}

/// `cloudcache study write-policy`.
#[derive(Args, Debug)]
pub struct WritePolicyArgs {
    #[command(flatten)]
    timed: TimedArgs,
}

/// `cloudcache study restart`.
#[derive(Args, Debug)]
pub struct RestartArgs {
    #[command(flatten)]
    timed: TimedArgs,
    /// Host reboots at these trace times from the first request (e.g. 6h,30h).
    #[arg(long, value_delimiter = ',', required = true, value_parser = parse_duration_arg)]
    reboot_at: Vec<u64>,
    /// Write policy of the cache.
    #[arg(long, default_value = "write-back")]
    write_policy: WritePolicy,
}

/// `cloudcache study raid`.
#[derive(Args, Debug)]
pub struct RaidArgs {
    /// Trace files.
    #[arg(required = true)]
    traces: Vec<PathBuf>,
    #[command(flatten)]
    read: ReadArgs,
    /// Size of each of the two flash devices: bytes, or a percentage of the
    /// working set for the pair together (e.g. 10% gives two devices of 5%).
    #[arg(long, default_value = "10%", value_parser = parse_cache_size)]
    cache_size: CacheSize,
    /// Cache block size (a power of two).
    #[arg(long, default_value = "4KiB", value_parser = parse_size)]
    block_size: u64,
    /// Replay this many times faster than the trace was recorded, for the latency of each layout.
    #[arg(long, default_value = "1", value_parser = parse_speedup)]
    speedup: f64,
    /// Device timing model (TOML; see docs/latency.md); its flash section describes each device.
    #[arg(long)]
    model: Option<PathBuf>,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

/// The JSON document of `cloudcache latency` and the studies.
#[derive(Serialize)]
struct Document<'a, T: Serialize> {
    cloudcache_version: &'static str,
    command: &'a str,
    trace: Vec<String>,
    requests: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<LatencyModel>,
    #[serde(flatten)]
    body: T,
}

fn write_json<T: Serialize>(
    path: &Option<PathBuf>,
    command: &str,
    trace: &LoadedTrace,
    model: Option<LatencyModel>,
    body: T,
) -> Result<()> {
    if let Some(path) = path {
        let doc = Document {
            cloudcache_version: env!("CARGO_PKG_VERSION"),
            command,
            trace: trace.sources.iter().map(|s| s.path.display().to_string()).collect(),
            requests: trace.requests.len() as u64,
            model,
            body,
        };
        let text = serde_json::to_string_pretty(&doc).context("cannot encode results as JSON")?;
        write_file(path, text.as_bytes())?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

fn stats_line(name: &str, s: &LatencyStats) -> String {
    format!(
        "{name:<24} {:>9} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}\n",
        s.requests,
        s.mean_us / 1000.0,
        s.p50_us / 1000.0,
        s.p90_us / 1000.0,
        s.p95_us / 1000.0,
        s.p99_us / 1000.0,
        s.max_us / 1000.0
    )
}

fn render_timed(r: &TimedResult) -> String {
    let mut out = format!(
        "{}: cache {} B, speed-up {}x, read hit ratio {}\n",
        r.label,
        r.cache_size_bytes,
        r.speedup,
        r.read_hit_ratio.map_or("-".into(), |h| format!("{:.1} %", h * 100.0))
    );
    out += &format!(
        "{:<24} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}\n",
        "latency (ms)", "requests", "mean", "p50", "p90", "p95", "p99", "max"
    );
    out += &stats_line("all", &r.latency);
    out += &stats_line("reads", &r.read_latency);
    out += &stats_line("writes", &r.write_latency);
    if r.volumes.len() > 1 {
        for v in &r.volumes {
            out += &stats_line(&format!("  {}", v.name), &v.all);
        }
    }
    out += &format!(
        "server: {} ops ({} reads, {} writes, {} write-backs, {} trims), {:.1} % busy; flash {:.1} % busy; replay took {:.1} s\n",
        r.server.total_ops(),
        r.server.reads.ops,
        r.server.writes.ops,
        r.server.write_backs.ops,
        r.server.trims.ops,
        r.server_utilization * 100.0,
        r.flash_utilization * 100.0,
        r.replay_seconds
    );
    for b in &r.reboots {
        out += &format!(
            "reboot at {:.0} s: {} blocks cached ({} dirty), {} kept, {} flushed\n",
            b.at_s, b.cached_blocks, b.dirty_blocks, b.kept_blocks, b.flushed_blocks
        );
    }
    out
}

/// Run `cloudcache latency`.
pub fn latency(args: LatencyArgs) -> Result<()> {
    let policy = match args.write_policy.as_str() {
        "none" | "no-cache" => None,
        p => Some(p.parse::<WritePolicy>().map_err(anyhow::Error::msg)?),
    };
    let (trace, model) = args.timed.load()?;
    let cache = match policy {
        Some(p) => Some(args.timed.cache(&trace, p)?),
        None => None,
    };
    let spec = TimedSpec {
        label: policy.map_or("no cache", |p| p.name()).to_owned(),
        cache,
        model,
        speedup: args.timed.speedup,
        bucket_ns: args.timed.bucket,
        reboots: args.reboot_at,
        restart: args.restart,
    };
    let bar = progress::bar(Some(trace.requests.len() as u64), "replaying", args.timed.quiet);
    let result = run_timed(&trace, &spec, &|n| bar.inc(n))?;
    bar.finish_and_clear();
    print!("{}", render_timed(&result));
    write_json(&args.timed.json, "latency", &trace, Some(model), &result)
}

/// Run `cloudcache study ...`.
pub fn study(command: StudyCommand) -> Result<()> {
    match command {
        StudyCommand::WritePolicy(args) => {
            let (trace, model) = args.timed.load()?;
            let setup = args.timed.setup(&trace, model, WritePolicy::WriteBack)?;
            let study = write_policy_study(&trace, &setup)?;
            println!(
                "write policies: cache {} B, speed-up {}x, {} requests (latency in ms)",
                study.cache_size_bytes,
                study.speedup,
                trace.requests.len()
            );
            print!("{}", study.render_text());
            write_json(&args.timed.json, "study write-policy", &trace, Some(model), &study)
        }
        StudyCommand::Restart(args) => {
            let (trace, model) = args.timed.load()?;
            let setup = args.timed.setup(&trace, model, args.write_policy)?;
            let study = restart_study(&trace, &setup, &args.reboot_at)?;
            println!(
                "restarts ({}): cache {} B, reboots at {:?} s (latency in ms, warm-up = hours until the hit ratio is within {:.0} points of warm)",
                args.write_policy,
                setup.cache.capacity_bytes,
                study.reboots_s,
                study.warmup_margin * 100.0
            );
            print!("{}", study.render_text());
            write_json(&args.timed.json, "study restart", &trace, Some(model), &study)
        }
        StudyCommand::Raid(args) => {
            let timed = TimedArgs {
                traces: args.traces.clone(),
                read: args.read.clone(),
                cache_size: args.cache_size,
                block_size: args.block_size,
                speedup: args.speedup,
                bucket: 1,
                model: args.model.clone(),
                json: None,
                quiet: args.quiet,
            };
            if args.block_size == 0 || !args.block_size.is_power_of_two() {
                bail!("block size {} is not a power of two", args.block_size);
            }
            let (trace, model) = timed.load()?;
            let device_bytes = timed.capacity(&trace, 2)?;
            let timing = if trace.has_timestamps {
                Some(RaidTiming { model, speedup: args.speedup })
            } else {
                eprintln!("the trace has no timestamps: capacity, hits and loss only, no latency");
                None
            };
            let study = raid_study(&trace, device_bytes, args.block_size, &RaidLayout::ALL, timing.as_ref())?;
            println!(
                "RAID over 2 flash devices of {} B each, write-back, LRU; {} requests",
                device_bytes,
                trace.requests.len()
            );
            print!("{}", study.render_text());
            write_json(&args.json, "study raid", &trace, timing.map(|t| t.model), &study)
        }
    }
}
