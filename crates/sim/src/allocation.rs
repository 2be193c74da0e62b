//! On-demand allocation in the simulator: the engine's cache driven by the
//! `demand` crate over tumbling windows of trace time, as CloudCache runs
//! (seed 001, chapter 3), and the seed's baselines beside it.
//!
//! At the end of every window each volume's demand (WSS, RWSS_N or HEC's
//! touch count) is observed, filtered and fed to its predictor; the
//! forecasts divide the cache for the next window and the engine enforces
//! the shares at replacement time. The first window is a warm-up with equal
//! shares. Windows are tumbling, start at the trace's first request, and
//! run on through idle periods (an idle volume's demand is 0).

use std::fmt;
use std::str::FromStr;

use cloudcache_demand::{Controller, ControllerConfig, DemandMeasure, PredictorKind, Spare, VolumeWindow};
use cloudcache_engine::{Admission, Cache, CacheConfig, Counters, ShareMode, StagingKind};
use cloudcache_trace::Op;
use serde::Serialize;

use crate::flash::FlashModel;
use crate::load::LoadedTrace;
use crate::occupancy::OccupancySampler;

/// Occupancy samples taken per window (for mean occupancy).
pub const SAMPLES_PER_WINDOW: u64 = 16;

/// The allocation methods `sim --allocation` runs by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AllocationMethod {
    /// One shared LRU over the whole cache; every miss admitted.
    None,
    /// Equal fixed partitions; every miss admitted.
    Static,
    /// Shares by predicted WSS; every miss admitted.
    Wss,
    /// CloudCache: shares by predicted RWSS_N; admission by staging.
    Rwss,
    /// HEC: shares by touch count; touch-count admission with sequential rejection.
    Hec,
    /// LARC: shares by reused addresses (RWSS_1); LARC's adaptive ghost admission.
    Larc,
}

impl AllocationMethod {
    /// Every method.
    pub const ALL: [AllocationMethod; 6] = [
        AllocationMethod::None,
        AllocationMethod::Static,
        AllocationMethod::Wss,
        AllocationMethod::Rwss,
        AllocationMethod::Hec,
        AllocationMethod::Larc,
    ];

    /// Name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            AllocationMethod::None => "none",
            AllocationMethod::Static => "static",
            AllocationMethod::Wss => "wss",
            AllocationMethod::Rwss => "rwss",
            AllocationMethod::Hec => "hec",
            AllocationMethod::Larc => "larc",
        }
    }
}

impl fmt::Display for AllocationMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for AllocationMethod {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AllocationMethod::ALL.into_iter().find(|m| m.name() == s.to_ascii_lowercase()).ok_or_else(|| {
            format!("unknown allocation {s:?}; expected one of none, static, wss, rwss, hec, larc")
        })
    }
}

/// How shares are enforced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Enforcement {
    /// Excess is reclaimed at replacement time (CloudCache in practice).
    Gradual,
    /// Excess is dropped at every window start (the seed's evaluation).
    Strict,
}

impl Enforcement {
    /// Name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Enforcement::Gradual => "gradual",
            Enforcement::Strict => "strict",
        }
    }
}

impl FromStr for Enforcement {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "gradual" => Ok(Enforcement::Gradual),
            "strict" => Ok(Enforcement::Strict),
            _ => Err(format!("unknown enforcement {s:?}; expected gradual or strict")),
        }
    }
}

/// One allocation run's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AllocationSpec {
    /// Method.
    pub method: AllocationMethod,
    /// N of RWS_N (rwss only; LARC measures RWS_1).
    pub rws_n: u32,
    /// Window length in nanoseconds of trace time.
    pub window_ns: u64,
    /// Demand predictor.
    pub predictor: PredictorKind,
    /// Whether the outlier filter (n = 20, lambda = 5) is in front of it.
    pub outlier_filter: bool,
    /// Staging kind (rwss).
    pub staging: StagingKind,
    /// Staging memory of the whole cache in bytes (rwss).
    pub staging_bytes: u64,
    /// What spare capacity does.
    pub spare: Spare,
    /// How shares are enforced.
    pub enforcement: Enforcement,
}

/// Staging memory when none is given: the seed's 256 MiB.
pub const DEFAULT_STAGING_BYTES: u64 = 256 << 20;

impl AllocationSpec {
    /// Staging memory for a cache of `cache_bytes` when none is given: the
    /// seed's 256 MiB, capped at a quarter of a smaller cache so that the
    /// default works at every size (staging larger than the cache is an error).
    pub fn default_staging_bytes(cache_bytes: u64) -> u64 {
        DEFAULT_STAGING_BYTES.min(cache_bytes / 4)
    }

    /// The result label: "rwss1", "wss", "none" ...
    pub fn label(&self) -> String {
        match self.method {
            AllocationMethod::Rwss => format!("rwss{}", self.rws_n),
            m => m.name().to_owned(),
        }
    }

    /// Shape `config` for this method (admission, partitioning).
    pub fn configure(&self, config: &mut CacheConfig) {
        config.partitioned = self.method != AllocationMethod::None;
        config.admission = match self.method {
            AllocationMethod::None | AllocationMethod::Static | AllocationMethod::Wss => Admission::Always,
            AllocationMethod::Rwss => {
                Admission::Staging { reuses: self.rws_n, kind: self.staging, total_bytes: self.staging_bytes }
            }
            AllocationMethod::Hec => Admission::HEC_DEFAULT,
            AllocationMethod::Larc => Admission::Larc,
        };
    }

    fn measure(&self, block_size: u64) -> DemandMeasure {
        match self.method {
            AllocationMethod::Rwss => DemandMeasure::Rws { n: self.rws_n },
            AllocationMethod::Larc => DemandMeasure::Rws { n: 1 },
            AllocationMethod::Hec => {
                let Admission::TouchCount { region_bytes, .. } = Admission::HEC_DEFAULT else {
                    unreachable!()
                };
                DemandMeasure::TouchCount { region_shift: (region_bytes / block_size).trailing_zeros() }
            }
            AllocationMethod::None | AllocationMethod::Static | AllocationMethod::Wss => {
                DemandMeasure::Rws { n: 0 }
            }
        }
    }

    fn share_mode(&self) -> ShareMode {
        ShareMode {
            lend_free_space: self.enforcement == Enforcement::Gradual && self.spare == Spare::Proportional,
            drop_excess: self.enforcement == Enforcement::Strict,
        }
    }

    /// Whether shares follow predicted demand (rather than being fixed).
    fn follows_demand(&self) -> bool {
        !matches!(self.method, AllocationMethod::None | AllocationMethod::Static)
    }
}

/// One window of one volume.
#[derive(Clone, Debug, Default, Serialize)]
pub struct WindowPoint {
    /// Window start, seconds from the trace's first request.
    pub start_seconds: f64,
    /// Window length in seconds (the last one may be partial).
    pub duration_seconds: f64,
    /// Distinct bytes accessed (WSS).
    pub working_set_bytes: u64,
    /// Observed demand of the method's measure (RWSS_N, WSS or touch count).
    pub observed_demand_bytes: u64,
    /// What the predictor was fed: the observation, or the outlier filter's
    /// replacement.
    pub filtered_demand_bytes: u64,
    /// Demand predicted for this window at its start (none in the warm-up).
    pub predicted_demand_bytes: Option<u64>,
    /// Share in force during the window.
    pub allocated_bytes: u64,
    /// Cached bytes at the window's end.
    pub occupied_bytes: u64,
    /// Block hit ratio within the window (none without block accesses).
    pub block_hit_ratio: Option<f64>,
}

/// What allocation adds to one volume's result.
#[derive(Clone, Debug, Default, Serialize)]
pub struct VolumeAllocation {
    /// Time-weighted mean share.
    pub mean_allocated_bytes: f64,
    /// Largest share of any window.
    pub peak_allocated_bytes: u64,
    /// Mean cached bytes ([`SAMPLES_PER_WINDOW`] samples per window).
    pub mean_occupied_bytes: f64,
    /// Largest sampled cached bytes.
    pub peak_occupied_bytes: u64,
    /// Per-window series.
    pub windows: Vec<WindowPoint>,
}

/// What allocation adds to a whole result.
#[derive(Clone, Debug, Default)]
pub struct AllocationOutcome {
    /// Time-weighted mean of the shares' sum.
    pub mean_allocated_bytes: f64,
    /// The same after the warm-up window (equal shares of the whole cache
    /// weigh heavily on short traces); the whole mean if there is no later window.
    pub mean_allocated_after_warmup_bytes: f64,
    /// Largest sum of shares of any window.
    pub peak_allocated_bytes: u64,
    /// Mean cached bytes.
    pub mean_occupied_bytes: f64,
    /// Largest sampled cached bytes.
    pub peak_occupied_bytes: u64,
    /// Mean staging memory in use (staging areas, LARC's ghost).
    pub mean_staging_bytes: f64,
    /// Per volume, by id.
    pub volumes: Vec<VolumeAllocation>,
}

/// Replay `trace` through `cache` (configured by [`AllocationSpec::configure`])
/// with windows and shares as `spec` says.
pub fn replay_with_allocation(
    trace: &LoadedTrace,
    cache: &mut Cache,
    spec: &AllocationSpec,
    mut flash: Option<&mut FlashModel>,
    progress: &dyn Fn(u64),
) -> AllocationOutcome {
    let block_size = cache.config().block_size;
    let shift = block_size.trailing_zeros();
    let capacity_blocks = cache.capacity_weight();
    let volumes = trace.volume_names.len().max(1);
    let controller = Controller::new(
        ControllerConfig {
            measure: spec.measure(block_size),
            predictor: spec.predictor,
            outlier_filter: spec.outlier_filter,
            spare: spec.spare,
            follow_demand: spec.follows_demand(),
        },
        volumes,
        capacity_blocks,
    );
    let mut run = WindowedRun {
        spec: *spec,
        block_size,
        capacity_blocks,
        controller,
        finished: Vec::with_capacity(volumes),
        counters_at_start: vec![Counters::default(); volumes],
        outcome: AllocationOutcome {
            volumes: vec![VolumeAllocation::default(); volumes],
            ..Default::default()
        },
        allocated_time_sum: 0.0,
        volume_allocated_time_sum: vec![0.0; volumes],
        total_time: 0.0,
        windows_closed: 0,
        after_warmup_allocated_time_sum: 0.0,
        after_warmup_time: 0.0,
        occupancy: OccupancySampler::new(volumes),
    };
    if spec.method != AllocationMethod::None {
        cache.set_shares(run.controller.shares(), spec.share_mode());
    }
    let Some(first) = trace.requests.first() else { return run.outcome };
    let window = spec.window_ns.max(1);
    let sample_step = (window / SAMPLES_PER_WINDOW).max(1);
    let mut window_start = first.time_ns;
    let mut next_sample = first.time_ns;
    let mut last_time = first.time_ns;
    const PROGRESS_STEP: usize = 1 << 16;
    for (i, r) in trace.requests.iter().enumerate() {
        // Saturating: a window or sample point past the end of time never
        // closes (timestamps near u64::MAX must not loop or overflow).
        while window_start.checked_add(window).is_some_and(|end| r.time_ns >= end) {
            let end = window_start + window;
            while next_sample < end {
                run.sample(cache);
                next_sample = next_sample.saturating_add(sample_step);
            }
            run.close_window(cache, window_start - first.time_ns, window, flash.as_deref_mut());
            window_start = end;
        }
        while r.time_ns >= next_sample && next_sample != u64::MAX {
            run.sample(cache);
            next_sample = next_sample.saturating_add(sample_step);
        }
        if r.op != Op::Trim && r.len > 0 {
            let first_block = r.offset >> shift;
            let last_block = (r.offset.saturating_add(r.len) - 1) >> shift;
            run.controller.access(r.volume as usize, first_block, last_block - first_block + 1);
        }
        cache.handle(r.volume, r.op, r.offset, r.len);
        if let Some(flash) = flash.as_deref_mut() {
            flash.apply(cache.actions());
        }
        last_time = r.time_ns;
        if (i + 1) % PROGRESS_STEP == 0 {
            progress(PROGRESS_STEP as u64);
        }
    }
    progress((trace.requests.len() % PROGRESS_STEP) as u64);
    run.sample(cache);
    // The last window ends with the last request (at least one nanosecond).
    run.close_window(cache, window_start - first.time_ns, (last_time - window_start).max(1), flash);
    run.finish()
}

struct WindowedRun {
    spec: AllocationSpec,
    block_size: u64,
    capacity_blocks: u64,
    controller: Controller,
    /// The last closed window, per volume (reused buffer).
    finished: Vec<VolumeWindow>,
    counters_at_start: Vec<Counters>,
    outcome: AllocationOutcome,
    allocated_time_sum: f64,
    volume_allocated_time_sum: Vec<f64>,
    total_time: f64,
    windows_closed: u64,
    after_warmup_allocated_time_sum: f64,
    after_warmup_time: f64,
    occupancy: OccupancySampler,
}

impl WindowedRun {
    fn sample(&mut self, cache: &Cache) {
        self.occupancy.sample(cache, self.block_size);
    }

    /// `flash` sees the evictions of strict share enforcement.
    fn close_window(
        &mut self,
        cache: &mut Cache,
        start_ns: u64,
        duration_ns: u64,
        flash: Option<&mut FlashModel>,
    ) {
        let bs = self.block_size;
        let seconds = duration_ns as f64 / 1e9;
        // Without allocation every volume may use the whole cache.
        let shared = self.spec.method == AllocationMethod::None;
        let whole_allocation =
            if shared { self.capacity_blocks } else { self.controller.shares().iter().sum() };
        self.allocated_time_sum += (whole_allocation * bs) as f64 * seconds;
        self.outcome.peak_allocated_bytes = self.outcome.peak_allocated_bytes.max(whole_allocation * bs);
        self.total_time += seconds;
        if self.windows_closed > 0 {
            self.after_warmup_allocated_time_sum += (whole_allocation * bs) as f64 * seconds;
            self.after_warmup_time += seconds;
        }
        self.windows_closed += 1;
        self.controller.close_window(&mut self.finished);
        for (v, window) in self.finished.iter().enumerate() {
            let state = cache.volumes().get(v).copied().unwrap_or_default();
            let before = self.counters_at_start[v];
            let accesses = state.counters.block_accesses - before.block_accesses;
            let hits = state.counters.block_hits - before.block_hits;
            self.counters_at_start[v] = state.counters;
            let allocated = if shared { self.capacity_blocks } else { window.share_blocks } * bs;
            self.volume_allocated_time_sum[v] += allocated as f64 * seconds;
            let volume = &mut self.outcome.volumes[v];
            volume.peak_allocated_bytes = volume.peak_allocated_bytes.max(allocated);
            volume.windows.push(WindowPoint {
                start_seconds: start_ns as f64 / 1e9,
                duration_seconds: seconds,
                working_set_bytes: window.demand.working_set_blocks * bs,
                observed_demand_bytes: window.demand.demand_blocks * bs,
                filtered_demand_bytes: (window.filtered_demand_blocks * bs as f64).round() as u64,
                predicted_demand_bytes: window.predicted_demand_blocks.map(|p| p * bs),
                allocated_bytes: allocated,
                occupied_bytes: state.cached_weight * bs,
                block_hit_ratio: (accesses > 0).then(|| hits as f64 / accesses as f64),
            });
        }
        if shared {
            return;
        }
        // Static shares are set again too: strict mode drops any excess.
        cache.set_shares(self.controller.shares(), self.spec.share_mode());
        if let Some(flash) = flash {
            flash.apply(cache.actions());
        }
    }

    fn finish(mut self) -> AllocationOutcome {
        let time = self.total_time.max(f64::MIN_POSITIVE);
        let occupancy = self.occupancy.finish();
        self.outcome.mean_allocated_bytes = self.allocated_time_sum / time;
        self.outcome.mean_allocated_after_warmup_bytes = if self.after_warmup_time > 0.0 {
            self.after_warmup_allocated_time_sum / self.after_warmup_time
        } else {
            self.outcome.mean_allocated_bytes
        };
        self.outcome.mean_occupied_bytes = occupancy.mean_bytes;
        self.outcome.peak_occupied_bytes = occupancy.peak_bytes;
        self.outcome.mean_staging_bytes = occupancy.mean_staging_bytes;
        for (v, volume) in self.outcome.volumes.iter_mut().enumerate() {
            volume.mean_allocated_bytes = self.volume_allocated_time_sum[v] / time;
            (volume.mean_occupied_bytes, volume.peak_occupied_bytes) = occupancy.volumes[v];
        }
        self.outcome
    }
}
