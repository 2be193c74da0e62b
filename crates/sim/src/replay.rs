//! Replaying a loaded trace through many cache configurations at once.

use std::time::Instant;

use cloudcache_engine::{Cache, CacheConfig, ConfigError, Counters, Mode, PolicyKind, Ratios, WritePolicy};
use rayon::prelude::*;
use serde::Serialize;

use crate::load::LoadedTrace;

/// Requests between progress updates: often enough for a smooth bar, rare
/// enough that the shared counter costs nothing.
const PROGRESS_EVERY: usize = 1 << 16;

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
}

impl SweepSpec {
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
                    record_actions: false,
                    expected_items,
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
    /// Per-volume results, in volume id order.
    pub volumes: Vec<VolumeResult>,
}

/// Replay `trace` through one cache and collect its result.
pub fn replay_one(trace: &LoadedTrace, config: CacheConfig, progress: &dyn Fn(u64)) -> SimResult {
    let mut cache = Cache::new(config.clone()).expect("configuration validated by SweepSpec::configs");
    let started = Instant::now();
    for chunk in trace.requests.chunks(PROGRESS_EVERY) {
        for r in chunk {
            cache.handle(r.volume, r.op, r.offset, r.len);
        }
        progress(chunk.len() as u64);
    }
    let replay_seconds = started.elapsed().as_secs_f64();
    let counters = cache.counters();
    let volumes = cache
        .volumes()
        .iter()
        .enumerate()
        .map(|(id, state)| VolumeResult {
            name: trace.volume_name(id),
            counters: state.counters,
            ratios: state.counters.ratios(),
            cached_items_at_end: state.cached_items,
            dirty_blocks_at_end: state.dirty_blocks,
        })
        .collect();
    SimResult {
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
        volumes,
    }
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
    let configs = spec.configs(expected_items.min(1 << 28) as usize)?;
    Ok(configs.into_par_iter().map(|config| replay_one(trace, config, progress)).collect())
}
