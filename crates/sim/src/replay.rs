//! Replaying a loaded trace through many cache configurations at once.

use std::time::Instant;

use cloudcache_engine::{Cache, CacheConfig, ConfigError, Counters, Mode, PolicyKind, Ratios, WritePolicy};
use rayon::prelude::*;
use serde::Serialize;

use crate::allocation::{replay_with_allocation, AllocationMethod, AllocationSpec, WindowPoint};
use crate::flash::{FlashModel, FlashResult, FlashSpec};
use crate::load::LoadedTrace;
use crate::occupancy::OccupancySampler;

/// Occupancy samples over a replay without windows (evenly spaced by
/// request count).
const OCCUPANCY_SAMPLES: usize = 1024;

/// The cache configurations of one `sim` command: every policy at every size.
#[derive(Clone, Debug)]
pub struct SweepSpec {
    /// Replacement policies to compare.
    pub policies: Vec<PolicyKind>,
    /// Cache sizes in bytes.
    pub cache_sizes: Vec<u64>,
    /// Cache block size in bytes.
    pub block_size: u64,
    /// Block or object mode.
    pub mode: Mode,
    /// Write policy.
    pub write_policy: WritePolicy,
    /// Dirty high watermark (fraction of capacity), write-back only.
    pub dirty_high_watermark: Option<f64>,
    /// Dirty low watermark (fraction of capacity).
    pub dirty_low_watermark: Option<f64>,
    /// Allocation runs for each (policy, size); empty = one plain shared
    /// cache without windows.
    pub allocations: Vec<AllocationSpec>,
    /// Flash device model every replay feeds (none: no actions recorded).
    pub flash: Option<FlashSpec>,
}

/// One replay of a sweep: a cache, and the allocation driving it.
#[derive(Clone, Debug)]
pub struct Job {
    /// The cache.
    pub config: CacheConfig,
    /// Windows and shares, if any.
    pub allocation: Option<AllocationSpec>,
    /// Flash device model, if any (`config.record_actions` must be on).
    pub flash: Option<FlashSpec>,
}

impl SweepSpec {
    /// Every job: policy x size x allocation, validated.
    pub fn jobs(&self, expected_items: usize) -> Result<Vec<Job>, ConfigError> {
        let allocations: Vec<Option<AllocationSpec>> = if self.allocations.is_empty() {
            vec![None]
        } else {
            self.allocations.iter().copied().map(Some).collect()
        };
        let mut jobs = Vec::new();
        for config in self.configs(expected_items)? {
            for allocation in &allocations {
                let mut config = config.clone();
                if let Some(spec) = allocation {
                    spec.configure(&mut config);
                    config.validate().map_err(|e| {
                        ConfigError(format!(
                            "allocation {} at cache size {} B: {e}",
                            spec.label(),
                            config.capacity_bytes
                        ))
                    })?;
                }
                if let Some(flash) = self.flash {
                    FlashModel::check(flash, &config).map_err(|e| {
                        ConfigError(format!(
                            "cache size {}: {e}",
                            crate::report::human_bytes(config.capacity_bytes)
                        ))
                    })?;
                }
                jobs.push(Job { config, allocation: *allocation, flash: self.flash });
            }
        }
        Ok(jobs)
    }

    /// The engine configuration of one (policy, size) job, validated.
    pub fn configs(&self, expected_items: usize) -> Result<Vec<CacheConfig>, ConfigError> {
        let mut configs = Vec::new();
        for &policy in &self.policies {
            for &capacity_bytes in &self.cache_sizes {
                let config = CacheConfig {
                    capacity_bytes,
                    block_size: self.block_size,
                    mode: self.mode,
                    policy,
                    write_policy: self.write_policy,
                    dirty_high_watermark: self.dirty_high_watermark,
                    dirty_low_watermark: self.dirty_low_watermark,
                    // Actions cost time per request; only the flash model reads them.
                    record_actions: self.flash.is_some(),
                    expected_items,
                    ..CacheConfig::default()
                };
                config.validate()?;
                configs.push(config);
            }
        }
        Ok(configs)
    }
}

/// One volume's share of a result.
#[derive(Clone, Debug, Serialize)]
pub struct VolumeResult {
    /// Volume name from the trace.
    pub name: String,
    /// Counters of this volume's requests and blocks.
    #[serde(flatten)]
    pub counters: Counters,
    /// Ratios derived from them.
    #[serde(flatten)]
    pub ratios: Ratios,
    /// Blocks (objects) of this volume cached at the end.
    pub cached_items_at_end: u64,
    /// Dirty blocks of this volume cached at the end (not flushed).
    pub dirty_blocks_at_end: u64,
    /// Time-weighted mean of this volume's share (the whole cache without
    /// allocation).
    pub mean_allocated_bytes: f64,
    /// Largest share this volume had.
    pub peak_allocated_bytes: u64,
    /// Mean bytes this volume had cached.
    pub mean_occupied_bytes: f64,
    /// Most bytes this volume had cached in any sample.
    pub peak_occupied_bytes: u64,
    /// Per-window series (empty without allocation).
    pub windows: Vec<WindowPoint>,
}

/// The outcome of replaying the trace through one cache.
#[derive(Clone, Debug, Serialize)]
pub struct SimResult {
    /// Replacement policy.
    pub policy: String,
    /// "block" or "object".
    pub mode: String,
    /// Write policy ("none" in object mode, which treats writes as reads).
    pub write_policy: String,
    /// Cache block size in bytes.
    pub block_size: u64,
    /// Cache size in bytes.
    pub cache_size_bytes: u64,
    /// Allocation method ("none": one shared cache, no windows unless asked).
    pub allocation: String,
    /// N of RWS_N (rwss only).
    pub rws_n: Option<u32>,
    /// Window length in seconds, when windows ran.
    pub window_seconds: Option<f64>,
    /// Demand predictor, when shares follow demand.
    pub predictor: Option<String>,
    /// Staging kind and memory (rwss only).
    pub staging: Option<String>,
    /// Staging memory of the whole cache, bytes (rwss only).
    pub staging_bytes: Option<u64>,
    /// Spare-capacity policy and enforcement, when shares are enforced.
    pub spare: Option<String>,
    /// "gradual" or "strict", when shares are enforced.
    pub enforcement: Option<String>,
    /// Time-weighted mean of the allocated cache (sum of shares; the whole
    /// cache without allocation).
    pub mean_allocated_bytes: f64,
    /// The same, leaving out the warm-up window.
    pub mean_allocated_after_warmup_bytes: f64,
    /// Largest sum of shares of any window.
    pub peak_allocated_bytes: u64,
    /// Mean cached bytes.
    pub mean_occupied_bytes: f64,
    /// Most cached bytes in any sample.
    pub peak_occupied_bytes: u64,
    /// Mean staging memory in use (staging areas; LARC's ghost).
    pub mean_staging_bytes: f64,
    /// Whole-cache counters.
    #[serde(flatten)]
    pub counters: Counters,
    /// Ratios derived from them.
    #[serde(flatten)]
    pub ratios: Ratios,
    /// Dirty blocks still cached at the end; reported, not flushed.
    pub dirty_blocks_at_end: u64,
    /// Blocks (objects) cached at the end.
    pub cached_items_at_end: u64,
    /// Wall-clock seconds this replay took (excluding trace loading).
    pub replay_seconds: f64,
    /// Flash device results (with a flash model only).
    #[serde(flatten)]
    pub flash: Option<FlashResult>,
    /// Per-volume results, in volume id order.
    pub volumes: Vec<VolumeResult>,
}

impl SimResult {
    /// How the result is named in tables and charts: the policy, with the
    /// allocation method when there is one ("lru", "rwss1", "wss").
    pub fn label(&self) -> String {
        if self.allocation == "none" && self.window_seconds.is_none() {
            self.policy.clone()
        } else if self.allocation == "none" {
            format!("{}/none", self.policy)
        } else {
            self.allocation.clone()
        }
    }
}

/// Replay `trace` through one cache and collect its result.
pub fn replay_one(trace: &LoadedTrace, config: CacheConfig, progress: &dyn Fn(u64)) -> SimResult {
    replay_job(trace, Job { config, allocation: None, flash: None }, progress)
}

/// Replay `trace` as `job` says and collect its result.
pub fn replay_job(trace: &LoadedTrace, job: Job, progress: &dyn Fn(u64)) -> SimResult {
    let Job { config, allocation, flash } = job;
    let mut cache = Cache::new(config.clone()).expect("configuration validated by SweepSpec::jobs");
    let mut flash = flash.map(|spec| {
        assert!(config.record_actions, "a flash model needs the engine's actions");
        FlashModel::new(spec, &config).expect("flash model validated by SweepSpec::jobs")
    });
    let unit = if config.mode == Mode::Block { config.block_size } else { 1 };
    let started = Instant::now();
    let outcome = match &allocation {
        Some(spec) => replay_with_allocation(trace, &mut cache, spec, flash.as_mut(), progress),
        None => replay_plain(trace, &mut cache, unit, flash.as_mut(), progress),
    };
    let replay_seconds = started.elapsed().as_secs_f64();
    let counters = cache.counters();
    let mut outcome_volumes = outcome.volumes.into_iter();
    let volumes = cache
        .volumes()
        .iter()
        .enumerate()
        .map(|(id, state)| {
            let a = outcome_volumes.next().unwrap_or_default();
            VolumeResult {
                name: trace.volume_name(id),
                counters: state.counters,
                ratios: state.counters.ratios(),
                cached_items_at_end: state.cached_items,
                dirty_blocks_at_end: state.dirty_blocks,
                mean_allocated_bytes: a.mean_allocated_bytes,
                peak_allocated_bytes: a.peak_allocated_bytes,
                mean_occupied_bytes: a.mean_occupied_bytes,
                peak_occupied_bytes: a.peak_occupied_bytes,
                windows: a.windows,
            }
        })
        .collect();
    let spec = allocation.as_ref();
    let enforced = spec.filter(|s| s.method != AllocationMethod::None);
    let follows = spec.filter(|s| !matches!(s.method, AllocationMethod::None | AllocationMethod::Static));
    let rwss = spec.filter(|s| s.method == AllocationMethod::Rwss);
    SimResult {
        allocation: spec.map_or_else(|| "none".to_owned(), AllocationSpec::label),
        rws_n: rwss.map(|s| s.rws_n),
        window_seconds: spec.map(|s| s.window_ns as f64 / 1e9),
        predictor: follows.map(|s| {
            let filter = if s.outlier_filter { "+filter" } else { "" };
            format!("{}{filter}", s.predictor.name())
        }),
        staging: rwss.map(|s| s.staging.name().to_owned()),
        staging_bytes: rwss.map(|s| s.staging_bytes),
        spare: enforced.map(|s| s.spare.name().to_owned()),
        enforcement: enforced.map(|s| s.enforcement.name().to_owned()),
        mean_allocated_bytes: outcome.mean_allocated_bytes,
        mean_allocated_after_warmup_bytes: outcome.mean_allocated_after_warmup_bytes,
        peak_allocated_bytes: outcome.peak_allocated_bytes,
        mean_occupied_bytes: outcome.mean_occupied_bytes,
        peak_occupied_bytes: outcome.peak_occupied_bytes,
        mean_staging_bytes: outcome.mean_staging_bytes,
        policy: config.policy.name().to_owned(),
        mode: config.mode.name().to_owned(),
        write_policy: match config.mode {
            Mode::Block => config.write_policy.name().to_owned(),
            Mode::Object => "none".to_owned(),
        },
        block_size: config.block_size,
        cache_size_bytes: config.capacity_bytes,
        counters,
        ratios: counters.ratios(),
        dirty_blocks_at_end: cache.dirty_blocks(),
        cached_items_at_end: cache.cached_items(),
        replay_seconds,
        flash: flash.map(|model| model.result(&counters, trace_days(trace))),
        volumes,
    }
}

/// Replay without windows, sampling occupancy at evenly spaced requests.
fn replay_plain(
    trace: &LoadedTrace,
    cache: &mut Cache,
    unit: u64,
    mut flash: Option<&mut FlashModel>,
    progress: &dyn Fn(u64),
) -> crate::allocation::AllocationOutcome {
    let mut occupancy = OccupancySampler::new(trace.volume_names.len());
    let chunk = trace.requests.len().div_ceil(OCCUPANCY_SAMPLES).max(1);
    let mut next_requests = trace.requests.iter().skip(1);
    for requests in trace.requests.chunks(chunk) {
        for r in requests {
            if let Some(next) = next_requests.next() {
                cache.prefetch_request(next.volume, next.offset);
            }
            cache.handle(r.volume, r.op, r.offset, r.len);
            if let Some(flash) = flash.as_deref_mut() {
                flash.apply(cache.actions());
            }
        }
        progress(requests.len() as u64);
        occupancy.sample(cache, unit);
    }
    let occupancy = occupancy.finish();
    let capacity = cache.capacity_weight() * unit;
    crate::allocation::AllocationOutcome {
        mean_allocated_bytes: capacity as f64,
        mean_allocated_after_warmup_bytes: capacity as f64,
        peak_allocated_bytes: capacity,
        mean_occupied_bytes: occupancy.mean_bytes,
        peak_occupied_bytes: occupancy.peak_bytes,
        mean_staging_bytes: occupancy.mean_staging_bytes,
        volumes: occupancy
            .volumes
            .into_iter()
            .map(|(mean, peak)| crate::allocation::VolumeAllocation {
                mean_allocated_bytes: capacity as f64,
                peak_allocated_bytes: capacity,
                mean_occupied_bytes: mean,
                peak_occupied_bytes: peak,
                windows: Vec::new(),
            })
            .collect(),
    }
}

/// Trace time in days (EPBPD's denominator), as `cloudcache offline` counts
/// it: last minus first request time; none without timestamps.
fn trace_days(trace: &LoadedTrace) -> Option<f64> {
    trace.time_span_ns().map(|(first, last)| (last - first) as f64 / 86_400e9).filter(|&d| d > 0.0)
}

/// Replay every configuration of `spec`, in parallel over the rayon pool,
/// reporting requests replayed (summed over jobs) to `progress`. Results come
/// back in the order of [`SweepSpec::configs`].
pub fn run_sweep(
    trace: &LoadedTrace,
    spec: &SweepSpec,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<Vec<SimResult>, ConfigError> {
    // Tables never need more entries than the trace has items; the engine
    // caps this further by the cache's own capacity in block mode.
    let expected_items = match spec.mode {
        Mode::Block => trace.block_accesses(spec.block_size),
        Mode::Object => trace.requests.len() as u64,
    };
    let jobs = spec.jobs(expected_items.min(1 << 28) as usize)?;
    Ok(jobs.into_par_iter().map(|job| replay_job(trace, job, progress)).collect())
}
