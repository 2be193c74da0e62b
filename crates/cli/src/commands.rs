//! Subcommands: argument definitions and the thin glue that runs them.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use cloudcache_engine::{Mode, PolicyKind, WritePolicy};
use cloudcache_sim::report::SimReport;
use cloudcache_sim::{run_sweep, LoadedTrace, SweepSpec};
use cloudcache_trace::formats::cct;
use cloudcache_trace::synth::{self, SynthConfig};
use cloudcache_trace::{Format, OpenOptions, RequestSource};

use crate::analysis_commands::{self, AnalyzeArgs, MrcArgs};
use crate::progress;
use crate::units::{parse_positive_size, parse_size};

/// On-demand host-side flash caching for virtualized cloud storage:
/// trace-driven simulation and trace tools.
#[derive(Parser, Debug)]
#[command(name = "cloudcache", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Replay traces through caches of several sizes and policies.
    Sim(SimArgs),
    /// Inspect, convert and generate traces.
    #[command(subcommand)]
    Trace(TraceCommand),
    /// Replay the embedded 12-VM synthetic workload and write a report.
    Demo(DemoArgs),
    /// Print (and write as JSON) the LRU miss-ratio curve of a trace, exact or sampled (SHARDS).
    Mrc(MrcArgs),
    /// Characterize a trace: curves, working sets, reuse, sequentiality, content; writes a report directory.
    Analyze(AnalyzeArgs),
}

#[derive(Subcommand, Debug)]
enum TraceCommand {
    /// Print a validation report: requests, time span, volumes, op mix,
    /// sizes, alignment, footprint.
    Info(InfoArgs),
    /// Convert a trace to cloudcache's binary format (.cct).
    Convert(ConvertArgs),
    /// Generate a synthetic trace from a TOML workload description.
    Generate(GenerateArgs),
}

/// How to read trace files.
#[derive(Args, Debug, Clone)]
pub(crate) struct ReadArgs {
    /// Trace format (default: detect). One of: cct, vscsi, msr, fiu, systor,
    /// alibaba, tencent, blkparse, fio, csv.
    #[arg(long, value_parser = parse_format)]
    format: Option<Format>,
    /// Column mapping for --format csv, e.g. "time=0:us,volume=1,op=2,offset=3:sectors,len=4:bytes".
    #[arg(long)]
    columns: Option<String>,
    /// Skip malformed lines (and count them) instead of stopping at the first.
    #[arg(long)]
    skip_bad_lines: bool,
}

impl ReadArgs {
    pub(crate) fn options(&self) -> OpenOptions {
        OpenOptions {
            format: self.format,
            skip_bad_lines: self.skip_bad_lines,
            csv_columns: self.columns.clone(),
            ..OpenOptions::default()
        }
    }
}

/// Cache configuration shared by `sim` and `demo`.
#[derive(Args, Debug, Clone)]
struct CacheArgs {
    /// Replacement policies, comma-separated: lru, fifo, clock, arc, 2q, s3fifo, sieve.
    #[arg(long, value_delimiter = ',', default_value = "lru", value_parser = parse_policy)]
    policy: Vec<PolicyKind>,
    /// Cache sizes, comma-separated (e.g. 16MiB,64MiB,256MiB,1GiB).
    #[arg(long, value_delimiter = ',', default_value = "16MiB,64MiB,256MiB,1GiB", value_parser = parse_positive_size, allow_hyphen_values = true)]
    cache_size: Vec<u64>,
    /// Cache block size (a power of two).
    #[arg(long, default_value = "4KiB", value_parser = parse_size, allow_hyphen_values = true)]
    block_size: u64,
    /// write-back, write-through, write-invalidate (write-around) or read-only.
    #[arg(long, default_value = "write-back", value_parser = parse_write_policy)]
    write_policy: WritePolicy,
    /// block (split requests into cache blocks) or object (libCacheSim's model).
    #[arg(long, default_value = "block", value_parser = parse_mode)]
    mode: Mode,
    /// Write back when dirty blocks exceed this fraction of the cache (off by default).
    #[arg(long)]
    dirty_high: Option<f64>,
    /// Write back down to this fraction (default: half of --dirty-high).
    #[arg(long)]
    dirty_low: Option<f64>,
    /// Worker threads (default: one per core).
    #[arg(long)]
    jobs: Option<usize>,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

impl CacheArgs {
    fn spec(&self) -> SweepSpec {
        SweepSpec {
            policies: self.policy.clone(),
            cache_sizes: self.cache_size.clone(),
            block_size: self.block_size,
            mode: self.mode,
            write_policy: self.write_policy,
            dirty_high_watermark: self.dirty_high,
            dirty_low_watermark: self.dirty_low,
        }
    }
}

#[derive(Args, Debug)]
struct SimArgs {
    /// Trace files (several are merged by time, each keeping its volumes).
    #[arg(required = true)]
    traces: Vec<PathBuf>,
    #[command(flatten)]
    read: ReadArgs,
    #[command(flatten)]
    cache: CacheArgs,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write a self-contained HTML report to this file.
    #[arg(long)]
    html: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct InfoArgs {
    /// Trace file.
    trace: PathBuf,
    #[command(flatten)]
    read: ReadArgs,
    /// Write the report as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct ConvertArgs {
    /// Trace to read.
    input: PathBuf,
    /// .cct file to write.
    output: PathBuf,
    #[command(flatten)]
    read: ReadArgs,
}

#[derive(Args, Debug)]
struct GenerateArgs {
    /// Workload description (TOML); see docs/synthetic.md. Use "demo" for the embedded demo workload.
    config: String,
    /// .cct file to write.
    output: PathBuf,
}

#[derive(Args, Debug)]
struct DemoArgs {
    /// Directory for demo.json and demo.html.
    #[arg(long, default_value = "out")]
    out: PathBuf,
    /// Replacement policies to compare.
    #[arg(long, value_delimiter = ',', default_value = "lru,arc,s3fifo", value_parser = parse_policy)]
    policy: Vec<PolicyKind>,
    /// Cache sizes.
    #[arg(long, value_delimiter = ',', default_value = "64MiB,256MiB,1GiB,4GiB", value_parser = parse_positive_size)]
    cache_size: Vec<u64>,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

fn parse_format(s: &str) -> Result<Format, String> {
    s.parse()
}
fn parse_policy(s: &str) -> Result<PolicyKind, String> {
    s.parse()
}
fn parse_write_policy(s: &str) -> Result<WritePolicy, String> {
    s.parse()
}
fn parse_mode(s: &str) -> Result<Mode, String> {
    s.parse()
}

/// Run a parsed command line.
pub fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Sim(args) => sim(args),
        Command::Trace(TraceCommand::Info(args)) => info(args),
        Command::Trace(TraceCommand::Convert(args)) => convert(args),
        Command::Trace(TraceCommand::Generate(args)) => generate(args),
        Command::Demo(args) => demo(args),
        Command::Mrc(args) => analysis_commands::mrc(args),
        Command::Analyze(args) => analysis_commands::analyze(args),
    }
}

fn set_threads(jobs: Option<usize>) -> Result<()> {
    if let Some(jobs) = jobs {
        if jobs == 0 {
            bail!("--jobs must be at least 1");
        }
        rayon::ThreadPoolBuilder::new()
            .num_threads(jobs)
            .build_global()
            .context("cannot start worker threads")?;
    }
    Ok(())
}

fn sim(args: SimArgs) -> Result<()> {
    set_threads(args.cache.jobs)?;
    let spec = args.cache.spec();
    // Reject a bad configuration before spending time on the trace.
    spec.configs(0)?;
    let loading = progress::bar(None, "loading", args.cache.quiet);
    let trace = LoadedTrace::load(&args.traces, &args.read.options(), &|n| loading.inc(n))?;
    loading.finish_and_clear();
    let report = replay(&trace, &spec, args.cache.quiet)?;
    print!("{}", report.render_text());
    write_outputs(&report, args.json.as_deref(), args.html.as_deref())
}

fn replay(trace: &LoadedTrace, spec: &SweepSpec, quiet: bool) -> Result<SimReport> {
    let jobs = (spec.policies.len() * spec.cache_sizes.len()) as u64;
    let bar = progress::bar(Some(trace.requests.len() as u64 * jobs), "replaying", quiet);
    let results = run_sweep(trace, spec, &|n| bar.inc(n))?;
    bar.finish_and_clear();
    Ok(SimReport::new(trace, results))
}

fn write_outputs(report: &SimReport, json: Option<&Path>, html: Option<&Path>) -> Result<()> {
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(report).context("cannot encode results as JSON")?;
        write_file(path, text.as_bytes())?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(path) = html {
        write_file(path, cloudcache_sim::html::render(report).as_bytes())?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).with_context(|| format!("cannot create directory {}", dir.display()))?;
    }
    fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))
}

fn info(args: InfoArgs) -> Result<()> {
    let mut reader = cloudcache_trace::open(&args.trace, &args.read.options())?;
    let bar = progress::bar(None, "reading", false);
    let report = cloudcache_trace::info::analyze(&mut reader, |n| bar.set_position(n))?;
    bar.finish_and_clear();
    println!("{}", report.render_text().trim_end());
    if let Some(path) = args.json {
        let text = serde_json::to_string_pretty(&report).context("cannot encode the report as JSON")?;
        write_file(&path, text.as_bytes())?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

fn convert(args: ConvertArgs) -> Result<()> {
    let mut reader = cloudcache_trace::open(&args.input, &args.read.options())?;
    let format = reader.format();
    write_cct(&mut reader, &args.output, &format!("{} ({format})", args.input.display()))
}

fn generate(args: GenerateArgs) -> Result<()> {
    let (text, label) = if args.config == "demo" {
        (synth::DEMO_CONFIG.to_owned(), "the embedded demo workload".to_owned())
    } else {
        let text =
            fs::read_to_string(&args.config).with_context(|| format!("cannot read {}", args.config))?;
        (text, args.config.clone())
    };
    let config = SynthConfig::from_toml_str(&text).with_context(|| format!("in {label}"))?;
    let mut source = synth::open(&config).with_context(|| format!("in {label}"))?;
    write_cct(&mut source, &args.output, &label)
}

/// Write any request source as a .cct file, with progress and a closing line.
fn write_cct(source: &mut dyn RequestSource, output: &Path, label: &str) -> Result<()> {
    let bar = progress::bar(None, "converting", false);
    let stats = cct::convert_with_progress(source, output, |n| bar.set_position(n))?;
    bar.finish_and_clear();
    eprintln!(
        "wrote {}: {} requests, {} volume(s) from {label}",
        output.display(),
        stats.requests,
        stats.volumes
    );
    Ok(())
}

fn demo(args: DemoArgs) -> Result<()> {
    let config = SynthConfig::from_toml_str(synth::DEMO_CONFIG).context("embedded demo workload")?;
    let mut source = synth::open(&config).context("embedded demo workload")?;
    let generating = progress::bar(Some(config.expected_requests() as u64), "generating", args.quiet);
    let trace = LoadedTrace::read_source(
        &mut source,
        "embedded demo workload (docs/synthetic.md)",
        "synthetic",
        "none",
        &|n| generating.inc(n),
    )?;
    generating.finish_and_clear();
    let spec = SweepSpec {
        policies: args.policy,
        cache_sizes: args.cache_size,
        block_size: 4096,
        mode: Mode::Block,
        write_policy: WritePolicy::WriteBack,
        dirty_high_watermark: None,
        dirty_low_watermark: None,
    };
    let report = replay(&trace, &spec, args.quiet)?;
    println!("cloudcache demo: 12 VMs sharing one flash cache for 14 days (seed 001's workload mix)");
    print!("{}", report.render_text());
    let json = args.out.join("demo.json");
    let html = args.out.join("demo.html");
    write_outputs(&report, Some(&json), Some(&html))
}
