//! Subcommands: argument definitions and the thin glue that runs them.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use cloudcache_demand::{PredictorKind, Spare};
use cloudcache_engine::{CacheConfig, Mode, PolicyKind, StagingKind, WritePolicy};
use cloudcache_sim::report::SimReport;
use cloudcache_sim::{run_sweep, AllocationMethod, AllocationSpec, Enforcement, LoadedTrace, SweepSpec};
use cloudcache_trace::formats::cct;
use cloudcache_trace::synth::{self, SynthConfig};
use cloudcache_trace::{Format, OpenOptions, RequestSource};

use crate::analysis_commands::{self, AnalyzeArgs, MrcArgs};
use crate::progress;
use crate::units::{parse_duration, parse_positive_duration, parse_positive_size, parse_size};

mod flash_args;
mod study;

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
    Sim(Box<SimArgs>),
    /// Inspect, convert and generate traces.
    #[command(subcommand)]
    Trace(TraceCommand),
    /// Replay the embedded 12-VM synthetic workload and write a report.
    Demo(DemoArgs),
    /// Choose the RWSS window length: replay a profiling period at several
    /// windows and take the knee of hit ratio against window length.
    WindowProfile(Box<WindowProfileArgs>),
    /// Timed replay under the device latency model: percentiles and server load.
    Latency(study::LatencyArgs),
    /// Seed 001's studies: write policies, restarts, cache-optimized RAID.
    #[command(subcommand)]
    Study(study::StudyCommand),
    /// Offline bounds (MIN, M+, C ...) and online baselines under a flash
    /// model: hit ratio, erasures, EPBPD, write amplification (docs/offline.md).
    Offline(crate::offline::OfflineArgs),
    /// Print (and write as JSON) the LRU miss-ratio curve of a trace, exact or sampled (SHARDS).
    Mrc(MrcArgs),
    /// Characterize a trace: curves, working sets, reuse, sequentiality, content; writes a report directory.
    Analyze(AnalyzeArgs),
    /// Serve VM disks over NBD, cached on this host's flash (docs/server.md).
    Serve(Box<crate::serve::ServeArgs>),
    /// Verify a flash store offline (and with --repair, repair it).
    Check(crate::serve::CheckArgs),
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
    #[arg(long)]
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
    #[arg(long, value_delimiter = ',', default_value = "lru")]
    policy: Vec<PolicyKind>,
    /// Cache sizes, comma-separated (e.g. 16MiB,64MiB,256MiB,1GiB).
    #[arg(long, value_delimiter = ',', default_value = "16MiB,64MiB,256MiB,1GiB", value_parser = parse_positive_size, allow_hyphen_values = true)]
    cache_size: Vec<u64>,
    /// Cache block size (a power of two).
    #[arg(long, default_value = "4KiB", value_parser = parse_size, allow_hyphen_values = true)]
    block_size: u64,
    /// write-back, write-through, write-invalidate (write-around) or read-only.
    #[arg(long, default_value = "write-back")]
    write_policy: WritePolicy,
    /// block (split requests into cache blocks) or object (libCacheSim's model).
    #[arg(long, default_value = "block")]
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
            allocations: Vec::new(),
            flash: None,
        }
    }
}

/// On-demand allocation (seed 001 chapter 3): which methods, and how.
#[derive(Args, Debug, Clone)]
struct AllocationArgs {
    /// Allocation methods, comma-separated: none, static, wss, rwss, hec, larc.
    /// Given, the replay runs in time windows and reports per-window series.
    #[arg(long, value_delimiter = ',')]
    allocation: Vec<AllocationMethod>,
    /// N of RWS_N for rwss (a block is admitted on access N + 1), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1", allow_hyphen_values = true, value_parser = parse_rws_n)]
    rws_n: Vec<u32>,
    /// Window length in trace time (e.g. 30min, 12h, 2d).
    #[arg(long, default_value = "24h", value_parser = parse_positive_duration, allow_hyphen_values = true)]
    window: u64,
    #[command(flatten)]
    tuning: AllocationTuning,
}

/// How demand-driven allocation predicts, stages and enforces (shared by
/// `sim --allocation` and `window-profile`).
#[derive(Args, Debug, Clone)]
struct AllocationTuning {
    /// Demand predictor: last, exp, exp-self, dexp, dexp-self.
    #[arg(long, default_value = "exp-self")]
    predictor: PredictorKind,
    /// Turn the outlier filter (n = 20, lambda = 5) off.
    #[arg(long)]
    no_outlier_filter: bool,
    /// Staging for rwss: address, data or hybrid (1:7).
    #[arg(long, default_value = "hybrid")]
    staging: StagingKind,
    /// Staging memory for rwss (default: 256MiB, or a quarter of a smaller cache).
    #[arg(long, value_parser = parse_positive_size, allow_hyphen_values = true)]
    staging_size: Option<u64>,
    /// Spare capacity: proportional (shared out by demand) or idle (left unused).
    #[arg(long, default_value = "proportional")]
    spare: Spare,
    /// gradual (excess reclaimed at replacement) or strict (excess dropped at each window start).
    #[arg(long, default_value = "gradual")]
    enforcement: Enforcement,
}

impl AllocationTuning {
    /// A run of `method` with N = `rws_n` and windows of `window_ns` on a
    /// cache of `cache_size` bytes.
    fn spec(&self, method: AllocationMethod, rws_n: u32, window_ns: u64, cache_size: u64) -> AllocationSpec {
        AllocationSpec {
            method,
            rws_n,
            window_ns,
            predictor: self.predictor,
            outlier_filter: !self.no_outlier_filter,
            staging: self.staging,
            staging_bytes: self.staging_size.unwrap_or(AllocationSpec::default_staging_bytes(cache_size)),
            spare: self.spare,
            enforcement: self.enforcement,
        }
    }
}

/// Most windows a replay may have (each stores a point per volume).
const MAX_WINDOWS: u64 = 100_000;

impl AllocationArgs {
    /// The allocation runs for a cache of `cache_size` bytes.
    fn specs(&self, cache_size: u64) -> Vec<AllocationSpec> {
        let mut specs = Vec::new();
        for &method in &self.allocation {
            let ns: &[u32] = if method == AllocationMethod::Rwss { &self.rws_n } else { &[1] };
            for &rws_n in ns {
                specs.push(self.tuning.spec(method, rws_n, self.window, cache_size));
            }
        }
        specs
    }

    /// Check the windows against the trace: timestamps, resolution, count.
    fn check_trace(&self, trace: &LoadedTrace) -> Result<()> {
        if self.allocation.is_empty() {
            return Ok(());
        }
        let window = units_show_duration(self.window);
        if !trace.has_timestamps {
            bail!("--allocation runs in time windows, but the trace has no timestamps (window {window})");
        }
        if let Some(resolution) = trace.time_resolution_ns() {
            if self.window < resolution {
                bail!(
                    "--window {window} is shorter than the trace's time resolution ({} between timestamps)",
                    units_show_duration(resolution)
                );
            }
        }
        if let Some((first, last)) = trace.time_span_ns() {
            let windows = (last - first) / self.window + 1;
            if windows > MAX_WINDOWS {
                bail!(
                    "--window {window} cuts the trace's {} into {windows} windows; at most {MAX_WINDOWS} are kept \
                     (use a window of at least {})",
                    units_show_duration(last - first),
                    units_show_duration((last - first).div_ceil(MAX_WINDOWS))
                );
            }
            if last - first < self.window {
                eprintln!(
                    "warning: --window {window} is longer than the trace ({}): every volume keeps its warm-up share",
                    units_show_duration(last - first)
                );
            }
        }
        Ok(())
    }
}

fn units_show_duration(ns: u64) -> String {
    cloudcache_trace::units::show_duration(ns)
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
    #[command(flatten)]
    allocation: AllocationArgs,
    #[command(flatten)]
    flash: flash_args::FlashArgs,
    /// Shift each trace's timestamps by this much, in trace order
    /// (comma-separated, e.g. 0,6h,12h; missing ones are 0).
    #[arg(long, value_delimiter = ',', value_parser = parse_duration, allow_hyphen_values = true)]
    time_shift: Vec<u64>,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write a self-contained HTML report to this file.
    #[arg(long)]
    html: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct WindowProfileArgs {
    /// Trace files (several are merged by time, each keeping its volumes).
    #[arg(required = true)]
    traces: Vec<PathBuf>,
    #[command(flatten)]
    read: ReadArgs,
    /// Window lengths to try, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1h,2h,4h,8h,12h,24h,48h", value_parser = parse_positive_duration)]
    windows: Vec<u64>,
    /// Profiling period: the first this much of the trace (default: all of it).
    #[arg(long, value_parser = parse_positive_duration)]
    period: Option<u64>,
    /// Cache size.
    #[arg(long, default_value = "1GiB", value_parser = parse_positive_size, allow_hyphen_values = true)]
    cache_size: u64,
    /// Cache block size (a power of two).
    #[arg(long, default_value = "4KiB", value_parser = parse_size, allow_hyphen_values = true)]
    block_size: u64,
    /// N of RWS_N.
    #[arg(long, default_value = "1", allow_hyphen_values = true, value_parser = parse_rws_n)]
    rws_n: u32,
    #[command(flatten)]
    tuning: AllocationTuning,
    /// Write the profile as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
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
    #[arg(long, value_delimiter = ',', default_value = "lru,arc,s3fifo")]
    policy: Vec<PolicyKind>,
    /// Cache sizes.
    #[arg(long, value_delimiter = ',', default_value = "64MiB,256MiB,1GiB,4GiB", value_parser = parse_positive_size)]
    cache_size: Vec<u64>,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

fn parse_rws_n(s: &str) -> Result<u32, String> {
    let n: i64 = s.trim().parse().map_err(|_| format!("N of RWS_N must be a whole number, got {s:?}"))?;
    if n < 0 {
        return Err(format!("N of RWS_N must be 0 or more, got {n}"));
    }
    let max = cloudcache_demand::window::MAX_REUSES;
    if n > i64::from(max) {
        return Err(format!("N of RWS_N is at most {max} (the window counts saturate there), got {n}"));
    }
    Ok(n as u32)
}

/// Run a parsed command line.
impl Cli {
    /// Whether the command is the long-running server (which must survive
    /// clients that hang up).
    pub fn is_server(&self) -> bool {
        matches!(self.command, Command::Serve(_))
    }
}

pub fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Sim(args) => sim(*args),
        Command::Trace(TraceCommand::Info(args)) => info(args),
        Command::Trace(TraceCommand::Convert(args)) => convert(args),
        Command::Trace(TraceCommand::Generate(args)) => generate(args),
        Command::Demo(args) => demo(args),
        Command::WindowProfile(args) => window_profile(*args),
        Command::Latency(args) => study::latency(args),
        Command::Study(command) => study::study(command),
        Command::Offline(args) => crate::offline::offline(args),
        Command::Mrc(args) => analysis_commands::mrc(args),
        Command::Analyze(args) => analysis_commands::analyze(args),
        Command::Serve(args) => crate::serve::serve(*args),
        Command::Check(args) => crate::serve::check(args),
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
    let mut spec = args.cache.spec();
    spec.flash = args.flash.spec()?;
    if args.time_shift.len() > args.traces.len() {
        bail!("--time-shift has {} values for {} trace(s)", args.time_shift.len(), args.traces.len());
    }
    if !args.allocation.allocation.is_empty() {
        if spec.mode != Mode::Block {
            bail!("--allocation needs --mode block");
        }
        // Staging is sized per cache size; each size gets its own sweep.
        let mut all = Vec::new();
        for &size in &args.cache.cache_size {
            let mut one = spec.clone();
            one.cache_sizes = vec![size];
            one.allocations = args.allocation.specs(size);
            one.jobs(0)?;
            all.push(one);
        }
        return sim_allocation(args, all);
    }
    // Reject a bad configuration before spending time on the trace.
    spec.jobs(0)?;
    let trace = load_traces(&args)?;
    let report = replay(&trace, &spec, args.cache.quiet)?;
    print!("{}", report.render_text());
    write_outputs(&report, args.json.as_deref(), args.html.as_deref())
}

fn window_profile(args: WindowProfileArgs) -> Result<()> {
    let config = CacheConfig {
        capacity_bytes: args.cache_size,
        block_size: args.block_size,
        ..CacheConfig::default()
    };
    let spec = args.tuning.spec(AllocationMethod::Rwss, args.rws_n, args.windows[0], args.cache_size);
    let mut checked = config.clone();
    spec.configure(&mut checked);
    checked.validate()?;
    let loading = progress::bar(None, "loading", args.quiet);
    let trace = LoadedTrace::load(&args.traces, &args.read.options(), &|n| loading.inc(n))?;
    loading.finish_and_clear();
    let Some((first, last)) = trace.time_span_ns() else {
        bail!("window profiling replays time windows, but the trace has no timestamps");
    };
    let period = args.period.unwrap_or(last - first + 1);
    if let Some(resolution) = trace.time_resolution_ns() {
        if let Some(&short) = args.windows.iter().find(|&&w| w < resolution) {
            bail!(
                "window {} is shorter than the trace's time resolution ({})",
                cloudcache_trace::units::show_duration(short),
                cloudcache_trace::units::show_duration(resolution)
            );
        }
    }
    let requests = trace.requests.iter().take_while(|r| r.time_ns < first.saturating_add(period)).count();
    let bar = progress::bar(Some((requests * args.windows.len()) as u64), "profiling", args.quiet);
    let profile =
        cloudcache_sim::profile::profile_windows(&trace, &config, &spec, &args.windows, period, &|n| {
            bar.inc(n)
        })
        .context("no window to profile")?;
    bar.finish_and_clear();
    println!(
        "profiled {:.1} h of trace time ({} requests) with RWSS_{} allocation at {}",
        profile.period_seconds / 3600.0,
        profile.requests,
        args.rws_n,
        cloudcache_sim::report::human_bytes(args.cache_size)
    );
    println!("{:>10} {:>10} {:>10} {:>12} {:>10}", "window", "blk hit", "read hit", "mean alloc", "flash wr");
    for p in &profile.points {
        let pct = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{:.2}", v * 100.0));
        println!(
            "{:>10} {:>10} {:>10} {:>12} {:>10}",
            cloudcache_trace::units::show_duration((p.window_seconds * 1e9) as u64),
            pct(Some(p.block_hit_ratio)),
            pct(p.read_block_hit_ratio),
            cloudcache_sim::report::human_bytes(p.mean_allocated_bytes.round() as u64),
            pct(p.flash_write_ratio)
        );
    }
    println!(
        "chosen window: {} ({})",
        cloudcache_trace::units::show_duration((profile.chosen_window_seconds * 1e9) as u64),
        profile.reason
    );
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&profile).context("cannot encode the profile as JSON")?;
        write_file(path, text.as_bytes())?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

fn load_traces(args: &SimArgs) -> Result<LoadedTrace> {
    let loading = progress::bar(None, "loading", args.cache.quiet);
    let trace =
        LoadedTrace::load_shifted(&args.traces, &args.time_shift, &args.read.options(), &|n| loading.inc(n))?;
    loading.finish_and_clear();
    Ok(trace)
}

/// `sim --allocation`: one sweep per cache size (staging is sized per cache).
fn sim_allocation(args: SimArgs, specs: Vec<SweepSpec>) -> Result<()> {
    let trace = load_traces(&args)?;
    args.allocation.check_trace(&trace)?;
    let jobs: u64 = specs.iter().map(|s| (s.policies.len() * s.allocations.len().max(1)) as u64).sum();
    let bar = progress::bar(Some(trace.requests.len() as u64 * jobs), "replaying", args.cache.quiet);
    let mut results = Vec::new();
    for spec in &specs {
        results.extend(run_sweep(&trace, spec, &|n| bar.inc(n))?);
    }
    bar.finish_and_clear();
    let report = SimReport::new(&trace, results);
    print!("{}", report.render_text());
    write_outputs(&report, args.json.as_deref(), args.html.as_deref())
}

fn replay(trace: &LoadedTrace, spec: &SweepSpec, quiet: bool) -> Result<SimReport> {
    let jobs = (spec.policies.len() * spec.cache_sizes.len() * spec.allocations.len().max(1)) as u64;
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
        allocations: Vec::new(),
        flash: None,
    };
    let report = replay(&trace, &spec, args.quiet)?;
    println!("cloudcache demo: 12 VMs sharing one flash cache for 14 days (seed 001's workload mix)");
    print!("{}", report.render_text());
    let json = args.out.join("demo.json");
    let html = args.out.join("demo.html");
    write_outputs(&report, Some(&json), Some(&html))
}
