//! Seed 001's chapter-2 studies as functions: write policies compared on
//! latency and server load, and host reboots with persistent or lost cache
//! metadata. Each runs several timed replays of one trace in parallel and
//! renders its comparison as a text table.

use std::fmt::Write as _;

use cloudcache_engine::{CacheConfig, WritePolicy};
use cloudcache_trace::Op;
use hashbrown::HashSet;
use rayon::prelude::*;
use serde::Serialize;

use crate::latency::{run_timed, LatencyModel, Restart, TimedResult, TimedSpec};
use crate::load::LoadedTrace;
use crate::timed::TimedError;

/// Distinct blocks the trace's reads and writes touch (its working set).
pub fn working_set_blocks(trace: &LoadedTrace, block_size: u64) -> u64 {
    let shift = block_size.trailing_zeros();
    let mut seen: HashSet<(u32, u64)> =
        HashSet::with_capacity(trace.block_accesses(block_size).min(1 << 26) as usize);
    for r in trace.requests.iter().filter(|r| r.len > 0 && r.op != Op::Trim) {
        for block in (r.offset >> shift)..=((r.offset + r.len - 1) >> shift) {
            seen.insert((r.volume, block));
        }
    }
    seen.len() as u64
}

/// What every study shares.
#[derive(Clone, Debug)]
pub struct StudySetup {
    /// The cache (its write policy is the study's baseline where it varies).
    pub cache: CacheConfig,
    /// Device timing.
    pub model: LatencyModel,
    /// Replay speed-up.
    pub speedup: f64,
    /// Report bucket, trace time.
    pub bucket_ns: u64,
}

impl StudySetup {
    fn spec(&self, label: &str, cache: Option<CacheConfig>) -> TimedSpec {
        TimedSpec {
            label: label.to_owned(),
            cache,
            model: self.model,
            speedup: self.speedup,
            bucket_ns: self.bucket_ns,
            reboots: Vec::new(),
            restart: Restart::Warm,
        }
    }
}

/// The write-policy study's document.
#[derive(Clone, Debug, Serialize)]
pub struct WritePolicyStudy {
    /// Cache size in bytes.
    pub cache_size_bytes: u64,
    /// Speed-up.
    pub speedup: f64,
    /// No cache, write-invalidate, write-through, write-back.
    pub results: Vec<TimedResult>,
}

/// Replay the trace with no cache and under write-invalidate, write-through
/// and write-back, in parallel.
pub fn write_policy_study(trace: &LoadedTrace, setup: &StudySetup) -> Result<WritePolicyStudy, TimedError> {
    let mut specs = vec![setup.spec("no cache", None)];
    for policy in [WritePolicy::WriteInvalidate, WritePolicy::WriteThrough, WritePolicy::WriteBack] {
        let cache = CacheConfig { write_policy: policy, ..setup.cache.clone() };
        specs.push(setup.spec(policy.name(), Some(cache)));
    }
    let results =
        specs.par_iter().map(|spec| run_timed(trace, spec, &|_| {})).collect::<Result<Vec<_>, _>>()?;
    Ok(WritePolicyStudy { cache_size_bytes: setup.cache.capacity_bytes, speedup: setup.speedup, results })
}

impl WritePolicyStudy {
    /// A table: latency percentiles, hit ratio and server load per policy.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let wt_ops =
            self.results.iter().find(|r| r.write_policy == "write-through").map(|r| r.server.total_ops());
        writeln!(
            out,
            "{:<17} {:>6} {:>9} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>10} {:>9} {:>9} {:>7} {:>6}",
            "policy",
            "rhit%",
            "mean ms",
            "p50",
            "p90",
            "p95",
            "p99",
            "read p90",
            "write p90",
            "server ops",
            "reads",
            "writes",
            "vs WT",
            "util%"
        )
        .unwrap();
        for r in &self.results {
            let vs_wt = match wt_ops {
                Some(wt) if wt > 0 => {
                    format!("{:+.0}%", (r.server.total_ops() as f64 / wt as f64 - 1.0) * 100.0)
                }
                _ => "-".into(),
            };
            writeln!(
                out,
                "{:<17} {:>6} {:>9.3} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>9.3} {:>9.3} {:>10} {:>9} {:>9} {:>7} {:>6.1}",
                r.label,
                r.read_hit_ratio.map_or("-".into(), |h| format!("{:.1}", h * 100.0)),
                r.latency.mean_us / 1000.0,
                r.latency.p50_us / 1000.0,
                r.latency.p90_us / 1000.0,
                r.latency.p95_us / 1000.0,
                r.latency.p99_us / 1000.0,
                r.read_latency.p90_us / 1000.0,
                r.write_latency.p90_us / 1000.0,
                r.server.total_ops(),
                r.server.reads.ops,
                r.server.writes.ops + r.server.write_backs.ops,
                vs_wt,
                r.server_utilization * 100.0
            )
            .unwrap();
        }
        out
    }
}

/// The restart study's document.
#[derive(Clone, Debug, Serialize)]
pub struct RestartStudy {
    /// Reboot times, seconds of trace time from the first request.
    pub reboots_s: Vec<f64>,
    /// Hit ratio margin (absolute) within which a restarted cache counts as
    /// warmed up again.
    pub warmup_margin: f64,
    /// Warm, dirty-only and cold restarts.
    pub results: Vec<RestartResult>,
}

/// One restart kind's outcome.
#[derive(Clone, Debug, Serialize)]
pub struct RestartResult {
    /// The timed replay.
    #[serde(flatten)]
    pub timed: TimedResult,
    /// Per reboot: trace time until this cache's bucket read hit ratio came
    /// back within the margin of the warm cache's (`null`: not within the
    /// segment).
    pub warmup_s: Vec<Option<f64>>,
}

/// Replay the trace with reboots at `reboots_ns` (offsets from the first
/// request) under each restart kind, in parallel.
pub fn restart_study(
    trace: &LoadedTrace,
    setup: &StudySetup,
    reboots_ns: &[u64],
) -> Result<RestartStudy, TimedError> {
    if reboots_ns.is_empty() {
        return Err(TimedError("the restart study needs at least one reboot time".into()));
    }
    let specs: Vec<TimedSpec> = Restart::ALL
        .iter()
        .map(|&restart| TimedSpec {
            reboots: reboots_ns.to_vec(),
            restart,
            ..setup.spec(restart.name(), Some(setup.cache.clone()))
        })
        .collect();
    let timed =
        specs.par_iter().map(|spec| run_timed(trace, spec, &|_| {})).collect::<Result<Vec<_>, _>>()?;
    let margin = 0.05;
    let warm = timed[0].clone();
    let results = timed
        .into_iter()
        .map(|t| {
            let warmup_s = warmup_times(&warm, &t, margin);
            RestartResult { timed: t, warmup_s }
        })
        .collect();
    Ok(RestartStudy {
        reboots_s: reboots_ns.iter().map(|&r| r as f64 / 1e9).collect(),
        warmup_margin: margin,
        results,
    })
}

/// For each reboot of `run`, the trace time from the reboot to the start of
/// the first bucket whose read hit ratio is within `margin` of `warm`'s.
fn warmup_times(warm: &TimedResult, run: &TimedResult, margin: f64) -> Vec<Option<f64>> {
    let hit = |r: &TimedResult, i: usize| {
        r.buckets.get(i).filter(|b| b.read_blocks > 0).map(|b| b.read_hits as f64 / b.read_blocks as f64)
    };
    let bucket_s = run.bucket_seconds;
    run.reboots
        .iter()
        .enumerate()
        .map(|(k, reboot)| {
            let end_s = run.reboots.get(k + 1).map_or(f64::INFINITY, |r| r.at_s);
            // The first bucket starting at or after the reboot.
            let first = (reboot.at_s / bucket_s).ceil() as usize;
            (first..run.buckets.len().max(warm.buckets.len()))
                .take_while(|&i| (i as f64) * bucket_s < end_s)
                .find(|&i| match (hit(run, i), hit(warm, i)) {
                    (Some(h), Some(w)) => h >= w - margin,
                    _ => false,
                })
                .map(|i| i as f64 * bucket_s - reboot.at_s)
        })
        .collect()
}

impl RestartStudy {
    /// A table: hit ratio overall and after the reboots, latency, server load
    /// and the dirty data each reboot put at risk.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        writeln!(
            out,
            "{:<11} {:>6} {:>11} {:>16} {:>9} {:>8} {:>9} {:>9} {:>11} {:>9} {:>10}",
            "restart",
            "rhit%",
            "after rb %",
            "warm-up (h)",
            "mean ms",
            "p90",
            "srv reads",
            "srv w-bk",
            "flushed",
            "kept",
            "dirty@rb"
        )
        .unwrap();
        for r in &self.results {
            let t = &r.timed;
            let after: (u64, u64) =
                t.segments[1..].iter().fold((0, 0), |a, s| (a.0 + s.read_hits, a.1 + s.read_blocks));
            // Per reboot, hours; "-" when the hit ratio never came back
            // before the next reboot or the end.
            let warmup: Vec<String> = r
                .warmup_s
                .iter()
                .map(|w| w.map_or("-".to_owned(), |s| format!("{:.2}", s / 3600.0)))
                .collect();
            let warmup = warmup.join(",");
            writeln!(
                out,
                "{:<11} {:>6} {:>11} {:>16} {:>9.3} {:>8.3} {:>9} {:>9} {:>11} {:>9} {:>10}",
                t.label,
                t.read_hit_ratio.map_or("-".into(), |h| format!("{:.1}", h * 100.0)),
                if after.1 > 0 {
                    format!("{:.1}", after.0 as f64 / after.1 as f64 * 100.0)
                } else {
                    "-".into()
                },
                warmup,
                t.latency.mean_us / 1000.0,
                t.latency.p90_us / 1000.0,
                t.server.reads.ops,
                t.server.write_backs.ops,
                t.reboots.iter().map(|b| b.flushed_blocks).sum::<u64>(),
                t.reboots.iter().map(|b| b.kept_blocks).sum::<u64>(),
                t.reboots.iter().map(|b| b.dirty_blocks).max().unwrap_or(0),
            )
            .unwrap();
        }
        out
    }
}
