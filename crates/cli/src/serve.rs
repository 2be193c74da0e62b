//! `cloudcache serve`: the NBD caching server, and `cloudcache check`.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use cloudcache_server::config::{ServerConfig, ShutdownMode, VolumeConfig};
use cloudcache_server::nbd::stream::ListenAddr;
use cloudcache_server::server::Server;
use cloudcache_server::store::CheckReport;
use cloudcache_trace::units::{parse_duration, parse_size};

/// `cloudcache serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Configuration file (TOML, docs/server.md); flags add to it.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Start on an embedded default: a 64 MiB local disk image and a flash
    /// file under a temporary directory, listening on a Unix socket there.
    #[arg(long)]
    demo: bool,
    /// Where clients connect: unix:PATH or tcp:HOST:PORT (repeatable).
    #[arg(long)]
    listen: Vec<ListenAddr>,
    /// Flash store file or block device (created if missing, reopened warm if present).
    #[arg(long)]
    flash: Option<PathBuf>,
    /// Size of a new flash store, e.g. 1GiB.
    #[arg(long, value_parser = parse_size)]
    flash_size: Option<u64>,
    /// Cache block size, e.g. 4KiB.
    #[arg(long, value_parser = parse_size)]
    block_size: Option<u64>,
    /// NAME=BACKEND[:write-back|write-through|write-invalidate|read-only]; BACKEND is
    /// a file path or an nbd:// / nbd+unix:// URI (repeatable).
    #[arg(long = "volume")]
    volumes: Vec<VolumeConfig>,
    /// DIR[:WRITE-POLICY]: every disk image file in DIR as a volume named by
    /// its file name without the extension (repeatable).
    #[arg(long = "disk-dir")]
    disk_dirs: Vec<String>,
    /// Admin HTTP API (JSON) and Prometheus /metrics address, HOST:PORT
    /// (e.g. 127.0.0.1:9090; port 0 picks a free port).
    #[arg(long)]
    admin: Option<String>,
    /// Log lines as text, or as JSON objects (one per line: ts, level, target, msg).
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    /// Worker threads carrying out requests.
    #[arg(long)]
    workers: Option<usize>,
    /// Start writing back when dirty blocks exceed this fraction of the cache.
    #[arg(long)]
    dirty_high: Option<f64>,
    /// Write back down to this fraction.
    #[arg(long)]
    dirty_low: Option<f64>,
    /// Write-back rate limit per second, e.g. 64MiB (0 = unlimited).
    #[arg(long, value_parser = parse_size)]
    writeback_rate: Option<u64>,
    /// Do not admit misses in sequential runs longer than this, e.g. 4MiB (0 = off).
    #[arg(long, value_parser = parse_size)]
    sequential_cutoff: Option<u64>,
    /// On graceful shutdown: persist (keep dirty blocks on flash) or flush (write them back).
    #[arg(long)]
    shutdown: Option<ShutdownMode>,
    /// On-demand allocation window in wall-clock time, e.g. 10min (off unless given).
    #[arg(long, value_parser = parse_duration)]
    window: Option<u64>,
    /// N of RWS_N for demand measurement and staging admission.
    #[arg(long)]
    rws_n: Option<u32>,
}

/// How log lines look.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// `[ts LEVEL target] message`, for people.
    Text,
    /// One JSON object per line, for log collectors.
    Json,
}

/// Runs the server until SIGINT or SIGTERM.
pub fn serve(args: ServeArgs) -> Result<()> {
    init_logging(args.log_format);
    let mut config = match &args.config {
        Some(path) => {
            let text =
                std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
            ServerConfig::from_toml(&text, &path.display().to_string()).map_err(anyhow::Error::msg)?
        }
        None => ServerConfig::default(),
    };
    let demo_dir = if args.demo { Some(demo_setup(&mut config)?) } else { None };
    config.listen.extend(args.listen);
    config.volumes.extend(args.volumes);
    for spec in &args.disk_dirs {
        // A policy after the last colon, if it names one; else all of it is the path.
        let (dir, policy) = match spec.rsplit_once(':').map(|(dir, policy)| (dir, policy.parse())) {
            Some((dir, Ok(policy))) => (dir, policy),
            _ => (spec.as_str(), cloudcache_engine::WritePolicy::WriteBack),
        };
        config.volumes.extend(
            cloudcache_server::config::volumes_in_dir(std::path::Path::new(dir), policy)
                .map_err(anyhow::Error::msg)?,
        );
    }
    if let Some(v) = args.flash {
        config.flash = v;
    }
    macro_rules! set {
        ($($field:ident),*) => { $( if let Some(v) = args.$field { config.$field = v; } )* };
    }
    set!(
        flash_size,
        block_size,
        workers,
        dirty_high,
        dirty_low,
        writeback_rate,
        sequential_cutoff,
        shutdown,
        rws_n
    );
    if args.admin.is_some() {
        config.admin = args.admin;
    }
    if let Some(ns) = args.window {
        config.allocation_window_ms = Some(ns / 1_000_000);
    }
    let admin = config.admin.clone();
    // Installed before the server starts, so a stop request during start-up
    // is a graceful stop too.
    let mut signals =
        signal_hook::iterator::Signals::new([signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM])
            .context("cannot install signal handlers")?;
    let server = Server::start(config).map_err(anyhow::Error::msg)?;
    for addr in server.bound_addresses() {
        eprintln!("cloudcache serve: listening on {addr}");
    }
    if let Some(addr) = admin {
        match cloudcache_server::admin::spawn(server.clone(), &addr) {
            Ok(bound) => eprintln!("cloudcache serve: admin API on http://{bound}"),
            Err(e) => {
                // Stop cleanly (persisting the cache) rather than run unobservable.
                let _ = server.shutdown();
                bail!(e);
            }
        }
    }
    if let Some(dir) = &demo_dir {
        print_demo_help(&server, dir);
    }
    if let Some(signal) = signals.forever().next() {
        log::info!("signal {signal}: stopping");
    }
    server.shutdown().map_err(anyhow::Error::msg)?;
    eprintln!("cloudcache serve: stopped cleanly");
    Ok(())
}

fn init_logging(format: LogFormat) {
    let env = env_logger::Env::default().filter_or("CLOUDCACHE_LOG", "info");
    let mut builder = env_logger::Builder::from_env(env);
    builder.format_timestamp_millis();
    if format == LogFormat::Json {
        builder.format(|out, record| {
            use std::io::Write;
            let line = JsonLogLine {
                ts: out.timestamp_millis().to_string(),
                level: record.level().as_str(),
                target: record.target(),
                msg: record.args().to_string(),
            };
            writeln!(out, "{}", serde_json::to_string(&line).map_err(std::io::Error::other)?)
        });
    }
    let _ = builder.try_init();
}

/// One log line with `--log-format json` (fields in this order).
#[derive(serde::Serialize)]
struct JsonLogLine<'a> {
    /// RFC 3339 UTC time, milliseconds.
    ts: String,
    level: &'a str,
    target: &'a str,
    msg: String,
}

/// The embedded default: a disk image and a flash file in a fresh
/// directory, one write-back volume named `demo`, a Unix socket.
fn demo_setup(config: &mut ServerConfig) -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("cloudcache-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let disk = dir.join("demo-disk.img");
    std::fs::File::create(&disk)
        .and_then(|f| f.set_len(64 << 20))
        .with_context(|| format!("cannot create {}", disk.display()))?;
    config.flash = dir.join("flash.img");
    config.flash_size = 32 << 20;
    config.listen.push(ListenAddr::Unix(dir.join("nbd.sock")));
    config.volumes.push(VolumeConfig {
        name: "demo".into(),
        backend: disk.display().to_string(),
        write_policy: cloudcache_engine::WritePolicy::WriteBack,
    });
    Ok(dir)
}

fn print_demo_help(server: &Server, dir: &std::path::Path) {
    let socket = dir.join("nbd.sock");
    let uri = format!("nbd+unix:///demo?socket={}", socket.display());
    println!(
        "cloudcache demo: a 64 MiB disk ({}) cached on a 32 MiB flash file ({})",
        dir.join("demo-disk.img").display(),
        server.config().flash.display()
    );
    println!("connect with, for example:");
    println!("  qemu-io -f raw -c 'write -P 0xab 0 1M' -c 'read -P 0xab 0 1M' '{uri}'");
    println!("  nbdinfo '{uri}'");
    println!("  fio --name=demo --ioengine=nbd --uri='{uri}' --rw=randrw --bs=4k --size=16M --time_based --runtime=10");
    println!("stop with Ctrl-C (the cache is persisted; files stay in {})", dir.display());
}

/// `cloudcache check`.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The flash store file or device.
    flash: PathBuf,
    /// Repair what can be repaired (rewrite a damaged superblock copy, clear
    /// corrupt, stale and unverifiable entries).
    #[arg(long)]
    repair: bool,
    /// Print the report as JSON on stdout instead of text.
    #[arg(long)]
    json: bool,
}

/// Verifies a store offline (docs/server.md, "Checking a flash store").
/// Fails (non-zero exit) when problems remain: found and not repaired, or
/// beyond repair.
pub fn check(args: CheckArgs) -> Result<()> {
    // The error names the store and the cause itself: no chain to print.
    let report =
        cloudcache_server::store::check(&args.flash, args.repair).map_err(|e| anyhow::anyhow!("{e}"))?;
    if args.json {
        let text = serde_json::to_string_pretty(&report).context("cannot encode the report as JSON")?;
        println!("{text}");
    } else {
        print!("{}", render_check(&report));
    }
    if report.clean {
        return Ok(());
    }
    let left = report.problems.iter().filter(|p| !p.repaired).count();
    let repairable = report.problems.iter().filter(|p| !p.repaired && p.repairable).count();
    let flash = args.flash.display();
    if repairable == 0 {
        bail!("{flash}: {left} problem(s) that cannot be repaired (see above)");
    }
    bail!(
        "{flash}: {left} problem(s) found, {repairable} repairable: run `cloudcache check --repair {flash}`"
    )
}

/// The report as text.
fn render_check(report: &CheckReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(out, "flash store {} ({} bytes)", report.path, report.device_bytes);
    for sb in &report.superblocks {
        let used = if report.superblock_used == Some(sb.copy) { " (used)" } else { "" };
        match (&sb.error, sb.generation) {
            (None, Some(generation)) => {
                let closed =
                    if sb.clean_shutdown == Some(true) { "closed cleanly" } else { "open or crashed" };
                let _ = writeln!(
                    out,
                    "  superblock {} at {}: ok, generation {generation}, {closed}, {} volume(s){used}",
                    sb.copy,
                    sb.offset,
                    sb.volumes.unwrap_or(0)
                );
            }
            (error, _) => {
                let why = error.as_deref().unwrap_or("invalid");
                let _ = writeln!(out, "  superblock {} at {}: BAD: {why}", sb.copy, sb.offset);
            }
        }
    }
    if let Some(g) = &report.geometry {
        let _ = writeln!(
            out,
            "  geometry: {} slots of {} B; metadata {} B at {}, data at {}, ends at {}",
            g.slot_count, g.block_size, g.metadata_bytes, g.metadata_offset, g.data_offset, g.end
        );
        let s = &report.slots;
        let _ = writeln!(
            out,
            "  slots: {} empty, {} clean, {} dirty ({} torn); dropped: {} corrupt, {} unknown volume, {} stale \
             duplicate, {} data checksum",
            s.empty,
            s.clean,
            s.dirty,
            s.torn_dirty,
            s.corrupt_entries,
            s.unknown_volume,
            s.stale_duplicates,
            s.checksum_dropped
        );
    }
    for v in &report.volumes {
        let _ = writeln!(
            out,
            "  volume {} (id {}, {} bytes): {} clean, {} dirty ({} torn)",
            v.name, v.id, v.size, v.clean_blocks, v.dirty_blocks, v.torn_dirty
        );
    }
    for slot in report.damaged_slots.iter().take(10) {
        let what = match (slot.volume, slot.block) {
            (Some(volume), Some(block)) => format!("volume id {volume} block {block}"),
            _ => "unreadable entry".to_string(),
        };
        let _ = writeln!(out, "  slot {}: {} ({what})", slot.slot, slot.verdict.name());
    }
    if report.damaged_slots.len() > 10 {
        let _ = writeln!(out, "  ... (--json lists the first {} damaged slots)", report.damaged_slots.len());
    }
    for warning in &report.warnings {
        let _ = writeln!(out, "warning: {warning}");
    }
    for problem in &report.problems {
        let state = match (problem.repaired, problem.repairable) {
            (true, _) => "repaired",
            (false, true) => "PROBLEM (repairable)",
            (false, false) => "PROBLEM (cannot be repaired)",
        };
        let _ = writeln!(out, "{state}: {}", problem.what);
    }
    for repair in &report.repairs {
        let _ = writeln!(out, "changed: {repair}");
    }
    let verdict = match (report.clean, report.repairs.is_empty()) {
        (true, true) => "clean",
        (true, false) => "clean after repair",
        (false, _) => "NOT clean",
    };
    let _ = writeln!(out, "{verdict}");
    out
}
