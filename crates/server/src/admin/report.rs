//! What the admin API reports: one consistent reading of the server (taken
//! under a single engine lock) and the JSON documents built from it. The
//! Prometheus exposition (`metrics.rs`) is built from the same reading, so
//! `/volumes` and `/metrics` never disagree about one moment.

use cloudcache_engine::{Counters, VolumeState, WritePolicy};
use serde::Serialize;

use crate::core::{AllocationState, WindowSummary};
use crate::server::{Export, Server};
use crate::store::RecoveryReport;
use crate::volume::VolumeStatsSnapshot;

/// Everything the admin API reports, read at one moment.
pub struct Reading {
    /// Attached volumes, by name, with their engine state.
    pub volumes: Vec<VolumeReading>,
    /// Cache block size in bytes.
    pub block_size: u64,
    /// Blocks the cache can hold.
    pub capacity_blocks: u64,
    /// Blocks now cached.
    pub used_blocks: u64,
    /// Dirty blocks now cached.
    pub dirty_blocks: u64,
    /// Whole-cache counters (every volume the engine has seen, attached or not).
    pub counters: Counters,
    /// Blocks held in pinned flash slots after a failed write-back.
    pub held_blocks: u64,
    /// A flash error turned caching of new data off.
    pub degraded: bool,
    /// Flash I/O errors so far.
    pub flash_errors: u64,
    /// Backend I/O errors so far.
    pub backend_errors: u64,
    /// The configured on-demand allocation window (`None`: off).
    pub allocation_window_ms: Option<u64>,
    /// Whether shares are set (the allocation controller has run).
    pub shares_set: bool,
    /// The demand controller's state (`None`: allocation is off).
    pub allocation: Option<AllocationState>,
}

/// One attached volume at the moment of a [`Reading`].
pub struct VolumeReading {
    /// Its export.
    pub export: Export,
    /// The write policy in force: the engine's, which a flash error may
    /// have turned to write-invalidate whatever was configured.
    pub write_policy: WritePolicy,
    /// What clients asked of it.
    pub stats: VolumeStatsSnapshot,
    /// What the engine did with it, and its footprint.
    pub engine: VolumeState,
    /// Its share of the cache in blocks (`None` while no shares are set).
    pub share_blocks: Option<u64>,
}

impl Reading {
    /// Reads the server now.
    pub fn take(server: &Server) -> Reading {
        let exports = server.exports();
        let core = server.core();
        let (engine_states, shares, capacity_blocks, used_blocks, dirty_blocks, counters) =
            core.with_engine(|cache| {
                let states: Vec<VolumeState> = exports
                    .iter()
                    .map(|e| cache.volumes().get(e.volume.id as usize).copied().unwrap_or_default())
                    .collect();
                let shares: Vec<(Option<u64>, WritePolicy)> = exports
                    .iter()
                    .map(|e| (cache.share(e.volume.id), cache.write_policy(e.volume.id)))
                    .collect();
                (
                    states,
                    shares,
                    cache.capacity_weight(),
                    cache.used_weight(),
                    cache.dirty_blocks(),
                    cache.counters(),
                )
            });
        let shares_set = shares.iter().any(|(share, _)| share.is_some());
        let volumes = exports
            .into_iter()
            .zip(engine_states)
            .zip(shares)
            .map(|((export, engine), (share_blocks, write_policy))| VolumeReading {
                stats: export.volume.stats.snapshot(),
                export,
                write_policy,
                engine,
                share_blocks,
            })
            .collect();
        let (flash_errors, backend_errors) = core.error_counts();
        Reading {
            volumes,
            block_size: core.block_size(),
            capacity_blocks,
            used_blocks,
            dirty_blocks,
            counters,
            held_blocks: core.held_blocks() as u64,
            degraded: core.degraded(),
            flash_errors: flash_errors as u64,
            backend_errors: backend_errors as u64,
            allocation_window_ms: server.config().allocation_window_ms,
            shares_set,
            allocation: core.allocation(),
        }
    }

    /// The reading of the volume named `name`.
    pub fn volume(&self, name: &str) -> Option<&VolumeReading> {
        self.volumes.iter().find(|v| v.export.volume.name == name)
    }
}

/// A volume in `GET /volumes`.
#[derive(Debug, Serialize)]
pub struct VolumeDoc {
    /// Export name.
    pub name: String,
    /// Engine volume id (stable across restarts).
    pub id: u32,
    /// Where its data lives (a path or a URI).
    pub backend: String,
    /// Disk size.
    pub size_bytes: u64,
    /// The write policy in force (write-invalidate once a flash error
    /// has degraded the cache, whatever was configured).
    pub write_policy: String,
    /// What clients asked of it (NBD commands).
    pub stats: VolumeStatsSnapshot,
    /// What the cache did with it.
    pub cache: VolumeCacheDoc,
    /// Its share of the cache in blocks (`null` while no shares are set).
    pub share_blocks: Option<u64>,
}

/// A volume's cache behaviour and footprint.
#[derive(Debug, Serialize)]
pub struct VolumeCacheDoc {
    /// Block accesses that missed.
    pub block_misses: u64,
    /// block_hits / block_accesses (`null` before any access).
    pub block_hit_ratio: Option<f64>,
    /// Blocks of this volume now cached.
    pub cached_blocks: u64,
    /// Of those, dirty.
    pub dirty_blocks: u64,
    /// The engine's counters for this volume (block_hits, flash_read_blocks,
    /// backend_write_blocks, evictions, ...).
    #[serde(flatten)]
    pub counters: Counters,
}

impl VolumeDoc {
    /// The document of one volume reading.
    pub fn new(v: &VolumeReading) -> VolumeDoc {
        let c = v.engine.counters;
        VolumeDoc {
            name: v.export.volume.name.clone(),
            id: v.export.volume.id,
            backend: v.export.volume.backend.describe(),
            size_bytes: v.export.volume.size,
            write_policy: v.write_policy.name().to_string(),
            stats: v.stats,
            cache: VolumeCacheDoc {
                block_misses: c.block_accesses - c.block_hits,
                block_hit_ratio: c.ratios().block_hit_ratio,
                cached_blocks: v.engine.cached_weight,
                dirty_blocks: v.engine.dirty_blocks,
                counters: c,
            },
            share_blocks: v.share_blocks,
        }
    }
}

/// `GET /allocation`: how the flash is divided among volumes.
#[derive(Debug, Serialize)]
pub struct AllocationDoc {
    /// Blocks the cache can hold.
    pub capacity_blocks: u64,
    /// Cache block size in bytes.
    pub block_size: u64,
    /// Blocks now cached.
    pub used_blocks: u64,
    /// The on-demand allocation window in milliseconds (`null`: allocation
    /// is off and the volumes share one LRU).
    pub window_ms: Option<u64>,
    /// Whether shares are in force (the controller has set them).
    pub shares_set: bool,
    /// Allocation windows closed so far (the first is the equal-share
    /// warm-up); `null` when allocation is off.
    pub windows_closed: Option<u64>,
    /// Per volume, by name.
    pub volumes: Vec<VolumeAllocationDoc>,
}

/// One volume's part of the cache.
#[derive(Debug, Serialize)]
pub struct VolumeAllocationDoc {
    /// Export name.
    pub name: String,
    /// Engine volume id.
    pub id: u32,
    /// Its share in blocks (`null` while no shares are set).
    pub share_blocks: Option<u64>,
    /// Blocks it has cached.
    pub cached_blocks: u64,
    /// Of those, dirty.
    pub dirty_blocks: u64,
    /// The last closed window: working set, demand (RWS_N), the demand
    /// predicted for it and the share it had (`null` before the first).
    pub last_window: Option<WindowSummary>,
}

impl AllocationDoc {
    /// The allocation at the moment of `r`.
    pub fn new(r: &Reading) -> AllocationDoc {
        AllocationDoc {
            capacity_blocks: r.capacity_blocks,
            block_size: r.block_size,
            used_blocks: r.used_blocks,
            window_ms: r.allocation_window_ms,
            shares_set: r.shares_set,
            windows_closed: r.allocation.as_ref().map(|a| a.windows_closed),
            volumes: r
                .volumes
                .iter()
                .map(|v| VolumeAllocationDoc {
                    name: v.export.volume.name.clone(),
                    id: v.export.volume.id,
                    share_blocks: v.share_blocks,
                    cached_blocks: v.engine.cached_weight,
                    dirty_blocks: v.engine.dirty_blocks,
                    last_window: r
                        .allocation
                        .as_ref()
                        .and_then(|a| a.last_window.get(v.export.volume.id as usize).copied()),
                })
                .collect(),
        }
    }
}

/// `GET /cache`: the whole cache and the flash store's health.
#[derive(Debug, Serialize)]
pub struct CacheDoc {
    /// Cache block size in bytes.
    pub block_size: u64,
    /// Blocks the cache can hold.
    pub capacity_blocks: u64,
    /// capacity_blocks * block_size.
    pub capacity_bytes: u64,
    /// Blocks now cached.
    pub used_blocks: u64,
    /// Dirty blocks now cached.
    pub dirty_blocks: u64,
    /// Dirty blocks held in pinned flash slots after a failed write-back (retried).
    pub held_blocks: u64,
    /// A flash error turned caching of new data off.
    pub degraded: bool,
    /// Flash I/O errors so far.
    pub flash_errors: u64,
    /// Backend I/O errors so far.
    pub backend_errors: u64,
    /// The flash store file or device.
    pub flash: String,
    /// What opening the store found (`null` if it could not be opened).
    pub recovery: Option<RecoveryReport>,
    /// Why the store could not be opened (`null` if it was): every volume
    /// then passes through to its backend.
    pub store_error: Option<String>,
    /// Whole-cache counters.
    pub counters: Counters,
}

impl CacheDoc {
    /// The cache at the moment of `r`.
    pub fn new(server: &Server, r: &Reading) -> CacheDoc {
        CacheDoc {
            block_size: r.block_size,
            capacity_blocks: r.capacity_blocks,
            capacity_bytes: r.capacity_blocks * r.block_size,
            used_blocks: r.used_blocks,
            dirty_blocks: r.dirty_blocks,
            held_blocks: r.held_blocks,
            degraded: r.degraded,
            flash_errors: r.flash_errors,
            backend_errors: r.backend_errors,
            flash: server.config().flash.display().to_string(),
            recovery: server.recovery().cloned(),
            store_error: server.store_error().map(str::to_string),
            counters: r.counters,
        }
    }
}
