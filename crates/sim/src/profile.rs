//! The window-size profiler (seed 001, section 3.4.1): replay a profiling
//! period with RWSS allocation at several window lengths and take the knee
//! of hit ratio against window length ([`cloudcache_demand::knee`] states
//! the rule).

use cloudcache_demand::choose_window;
use cloudcache_engine::CacheConfig;
use rayon::prelude::*;
use serde::Serialize;

use crate::allocation::AllocationSpec;
use crate::load::LoadedTrace;
use crate::replay::{replay_job, Job};

/// One profiled window length.
#[derive(Clone, Debug, Serialize)]
pub struct ProfilePoint {
    /// Window length in seconds.
    pub window_seconds: f64,
    /// Block hit ratio over the profiling period (the knee is taken on this).
    pub block_hit_ratio: f64,
    /// Read block hit ratio over the period.
    pub read_block_hit_ratio: Option<f64>,
    /// Time-weighted mean allocation.
    pub mean_allocated_bytes: f64,
    /// Blocks written to flash per block accessed.
    pub flash_write_ratio: Option<f64>,
}

/// The profiler's answer.
#[derive(Clone, Debug, Serialize)]
pub struct WindowProfile {
    /// Profiling period replayed, in seconds of trace time.
    pub period_seconds: f64,
    /// Requests in the period.
    pub requests: u64,
    /// One point per window length, shortest first.
    pub points: Vec<ProfilePoint>,
    /// The chosen window length in seconds.
    pub chosen_window_seconds: f64,
    /// "knee", "flat" or "no-knee" (see the knee rule).
    pub reason: String,
}

/// Profile `windows_ns` (sorted here) over the first `period_ns` of `trace`
/// with `spec`'s allocation on a cache configured as `config`; `None` when
/// no window was given.
pub fn profile_windows(
    trace: &LoadedTrace,
    config: &CacheConfig,
    spec: &AllocationSpec,
    windows_ns: &[u64],
    period_ns: u64,
    progress: &(dyn Fn(u64) + Sync),
) -> Option<WindowProfile> {
    let mut windows = windows_ns.to_vec();
    windows.sort_unstable();
    windows.dedup();
    let start = trace.requests.first().map_or(0, |r| r.time_ns);
    let end = start.saturating_add(period_ns);
    let period = LoadedTrace {
        requests: trace.requests.iter().take_while(|r| r.time_ns < end).copied().collect(),
        ..trace.clone_without_requests()
    };
    let points: Vec<ProfilePoint> = windows
        .par_iter()
        .map(|&window_ns| {
            let spec = AllocationSpec { window_ns, ..*spec };
            let mut config = config.clone();
            spec.configure(&mut config);
            let r = replay_job(&period, Job { config, allocation: Some(spec), flash: None }, progress);
            ProfilePoint {
                window_seconds: window_ns as f64 / 1e9,
                block_hit_ratio: r.ratios.block_hit_ratio.unwrap_or(0.0),
                read_block_hit_ratio: r.ratios.read_block_hit_ratio,
                mean_allocated_bytes: r.mean_allocated_bytes,
                flash_write_ratio: r.ratios.flash_write_ratio,
            }
        })
        .collect();
    let hit_ratios: Vec<f64> = points.iter().map(|p| p.block_hit_ratio).collect();
    let choice = choose_window(&hit_ratios)?;
    let period_seconds = period.requests.last().map_or(0, |r| r.time_ns - start) as f64 / 1e9;
    Some(WindowProfile {
        period_seconds,
        requests: period.requests.len() as u64,
        chosen_window_seconds: points[choice.index].window_seconds,
        reason: choice.reason.name().to_owned(),
        points,
    })
}
