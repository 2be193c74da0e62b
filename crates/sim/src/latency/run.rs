//! Timed replay of a trace through one cache (or none) under the latency
//! model: per-request latency, percentiles per volume and overall, server
//! load per time bucket, and host reboots with a choice of what survives.

use std::fmt;
use std::str::FromStr;

use cloudcache_engine::{BlockKey, Cache, CacheConfig, WritePolicy};
use cloudcache_trace::{Op, VolumeId};
use hashbrown::HashMap;
use serde::Serialize;

use super::des::{Observer, Simulator};
use super::model::LatencyModel;
use super::plan::{Device, Dir, Plan, PlannedOp, Purpose};
use crate::load::LoadedTrace;
use crate::timed::{Schedule, TimedError};

/// What a host reboot keeps (seed 001 §2.8, figure 2.25).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Restart {
    /// All-persistent metadata: the cache comes back exactly as it was.
    Warm,
    /// Write-back-persistent metadata: dirty blocks come back (they must),
    /// clean blocks are forgotten.
    DirtyOnly,
    /// Nothing persists. The shutdown first writes every dirty block back to
    /// the server (a burst of server writes at the reboot), since losing them
    /// would lose client data; the cache then restarts empty.
    Cold,
}

impl Restart {
    /// Every kind, in report order.
    pub const ALL: [Restart; 3] = [Restart::Warm, Restart::DirtyOnly, Restart::Cold];

    /// Name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Restart::Warm => "warm",
            Restart::DirtyOnly => "dirty-only",
            Restart::Cold => "cold",
        }
    }
}

impl fmt::Display for Restart {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Restart {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "warm" | "all-persistent" => Ok(Restart::Warm),
            "dirty-only" | "write-back-persistent" => Ok(Restart::DirtyOnly),
            "cold" | "non-persistent" => Ok(Restart::Cold),
            _ => Err(format!("unknown restart kind {s:?}; expected warm, dirty-only or cold")),
        }
    }
}

/// One timed replay.
#[derive(Clone, Debug)]
pub struct TimedSpec {
    /// Name of this configuration in reports.
    pub label: String,
    /// The cache, or `None` to send every request to the server (the seed's
    /// "No Cache" baseline). `record_actions` is turned on by the replay.
    pub cache: Option<CacheConfig>,
    /// Device timing.
    pub model: LatencyModel,
    /// Replay this many times faster than recorded.
    pub speedup: f64,
    /// Length of a report bucket, in trace time.
    pub bucket_ns: u64,
    /// Host reboots, as offsets from the first request (trace time).
    pub reboots: Vec<u64>,
    /// What a reboot keeps.
    pub restart: Restart,
}

/// Latency percentiles of a set of requests, in microseconds (nearest rank).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct LatencyStats {
    /// Requests answered.
    pub requests: u64,
    /// Mean.
    pub mean_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 95th percentile.
    pub p95_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// Largest.
    pub max_us: f64,
}

impl LatencyStats {
    /// Statistics of `latencies_ns`, which are sorted in place.
    pub fn of(latencies_ns: &mut [u64]) -> Self {
        if latencies_ns.is_empty() {
            return LatencyStats::default();
        }
        latencies_ns.sort_unstable();
        let n = latencies_ns.len();
        let rank = |q: f64| latencies_ns[((q * n as f64).ceil() as usize).clamp(1, n) - 1] as f64 / 1000.0;
        let sum: u128 = latencies_ns.iter().map(|&l| u128::from(l)).sum();
        LatencyStats {
            requests: n as u64,
            mean_us: sum as f64 / n as f64 / 1000.0,
            p50_us: rank(0.50),
            p90_us: rank(0.90),
            p95_us: rank(0.95),
            p99_us: rank(0.99),
            max_us: latencies_ns[n - 1] as f64 / 1000.0,
        }
    }
}

/// One volume's latencies.
#[derive(Clone, Debug, Serialize)]
pub struct VolumeLatency {
    /// Volume name.
    pub name: String,
    /// Reads and writes.
    pub all: LatencyStats,
    /// Reads.
    pub reads: LatencyStats,
    /// Writes.
    pub writes: LatencyStats,
}

/// Operations and bytes of one kind sent to a device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct OpCount {
    /// Operations (after merging contiguous blocks).
    pub ops: u64,
    /// Bytes.
    pub bytes: u64,
}

impl OpCount {
    fn add(&mut self, op: &PlannedOp) {
        self.ops += 1;
        self.bytes += op.len;
    }
}

/// What the storage server was asked to do: its I/O load.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ServerLoad {
    /// Client reads that missed (and read-modify-write fetches).
    pub reads: OpCount,
    /// Client writes sent on (write-through, write-invalidate, no cache).
    pub writes: OpCount,
    /// Dirty blocks written back (eviction, cleaning, shutdown flush).
    pub write_backs: OpCount,
    /// Trims forwarded.
    pub trims: OpCount,
}

impl ServerLoad {
    /// All operations the server served.
    pub fn total_ops(&self) -> u64 {
        self.reads.ops + self.writes.ops + self.write_backs.ops + self.trims.ops
    }

    fn add(&mut self, op: &PlannedOp) {
        match op.purpose {
            Purpose::ClientRead => self.reads.add(op),
            Purpose::ClientWrite => self.writes.add(op),
            Purpose::WriteBack => self.write_backs.add(op),
            Purpose::Trim => self.trims.add(op),
            Purpose::Fill => {}
        }
    }
}

/// What the flash device was asked to do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FlashLoad {
    /// Reads (hits and write-back sources).
    pub reads: OpCount,
    /// Writes (fills and cached writes).
    pub writes: OpCount,
}

/// One time bucket of the replay.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Bucket {
    /// Start, in seconds of trace time from the first request.
    pub start_s: f64,
    /// Requests that arrived in it and were answered.
    pub requests: u64,
    /// Their mean latency.
    pub mean_latency_us: f64,
    /// Read block accesses and hits of requests arriving in it.
    pub read_blocks: u64,
    /// Read block hits.
    pub read_hits: u64,
    /// Server operations issued in it.
    pub server: ServerLoad,
    #[serde(skip)]
    latency_sum_ns: u128,
}

/// A reboot and what it cost.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct RebootReport {
    /// When, in seconds of trace time from the first request.
    pub at_s: f64,
    /// Blocks cached just before.
    pub cached_blocks: u64,
    /// Dirty blocks just before: what a crash without persistent metadata loses.
    pub dirty_blocks: u64,
    /// Blocks cached just after.
    pub kept_blocks: u64,
    /// Dirty blocks written back by the shutdown (cold restart).
    pub flushed_blocks: u64,
}

/// Requests between two reboots (or the start and end of the trace).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Segment {
    /// Start, in seconds of trace time.
    pub start_s: f64,
    /// Read block accesses.
    pub read_blocks: u64,
    /// Read block hits.
    pub read_hits: u64,
    /// Read block hit ratio (`null` without reads).
    pub read_hit_ratio: Option<f64>,
}

/// The result of one timed replay.
#[derive(Clone, Debug, Serialize)]
pub struct TimedResult {
    /// Configuration name.
    pub label: String,
    /// Write policy, or "no-cache".
    pub write_policy: String,
    /// Cache size (0 without a cache).
    pub cache_size_bytes: u64,
    /// Speed-up factor.
    pub speedup: f64,
    /// What reboots keep.
    pub restart: Restart,
    /// Reads and writes answered.
    pub latency: LatencyStats,
    /// Reads.
    pub read_latency: LatencyStats,
    /// Writes.
    pub write_latency: LatencyStats,
    /// Per volume, in volume id order.
    pub volumes: Vec<VolumeLatency>,
    /// Read block accesses.
    pub read_blocks: u64,
    /// Read block hits.
    pub read_hits: u64,
    /// Read block hit ratio.
    pub read_hit_ratio: Option<f64>,
    /// Storage server load over the whole replay.
    pub server: ServerLoad,
    /// Flash device load.
    pub flash: FlashLoad,
    /// Busy fraction of the server's servers over the replay.
    pub server_utilization: f64,
    /// Busy fraction of the flash device's servers.
    pub flash_utilization: f64,
    /// Replay time until the last operation ended, in seconds.
    pub replay_seconds: f64,
    /// Bucket length, seconds of trace time.
    pub bucket_seconds: f64,
    /// Per bucket.
    pub buckets: Vec<Bucket>,
    /// Reboots injected.
    pub reboots: Vec<RebootReport>,
    /// Between reboots.
    pub segments: Vec<Segment>,
}

/// Collects what the simulator reports.
struct Stats {
    reads: Vec<Vec<u64>>,
    writes: Vec<Vec<u64>>,
    buckets: Vec<Bucket>,
    bucket_replay_ns: u64,
    server: ServerLoad,
    flash: FlashLoad,
}

impl Stats {
    fn bucket(&mut self, replay_ns: u64) -> &mut Bucket {
        let i = (replay_ns / self.bucket_replay_ns) as usize;
        if i >= self.buckets.len() {
            self.buckets.resize_with(i + 1, Bucket::default);
        }
        &mut self.buckets[i]
    }
}

impl Observer for Stats {
    fn answered(&mut self, volume: VolumeId, read: bool, arrival_ns: u64, latency_ns: u64) {
        let list = if read { &mut self.reads } else { &mut self.writes };
        list[volume as usize].push(latency_ns);
        let b = self.bucket(arrival_ns);
        b.requests += 1;
        b.latency_sum_ns += u128::from(latency_ns);
    }

    fn issued(&mut self, now_ns: u64, op: &PlannedOp) {
        match op.device {
            Device::Backend => {
                self.server.add(op);
                self.bucket(now_ns).server.add(op);
            }
            Device::Flash | Device::Flash1 => match op.dir {
                Dir::Read => self.flash.reads.add(op),
                _ => self.flash.writes.add(op),
            },
        }
    }
}

fn ratio(num: u64, den: u64) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

/// Replay `trace` in time through `spec`'s cache and devices.
pub fn run_timed(
    trace: &LoadedTrace,
    spec: &TimedSpec,
    progress: &dyn Fn(u64),
) -> Result<TimedResult, TimedError> {
    spec.model.validate().map_err(|e| TimedError(format!("latency model: {e}")))?;
    if spec.bucket_ns == 0 {
        return Err(TimedError("the report bucket must be longer than zero".into()));
    }
    let schedule = Schedule::new(trace, spec.speedup)?;
    schedule.check_offsets("reboot", &spec.reboots)?;
    let mut reboots = spec.reboots.clone();
    reboots.sort_unstable();
    reboots.dedup();

    let config = spec.cache.clone().map(|c| CacheConfig { record_actions: true, ..c });
    let mut cache = match &config {
        Some(c) => Some(Cache::new(c.clone()).map_err(|e| TimedError(format!("cache: {e}")))?),
        None => None,
    };
    let block_size = config.as_ref().map_or(4096, |c| c.block_size);
    let policy = config.as_ref().map(|c| c.write_policy);
    // Dirty blocks must survive a dirty-only restart; the engine does not
    // list its blocks, so the replay remembers what write-back wrote (and
    // when, to restore them in write order).
    let track_written = spec.restart == Restart::DirtyOnly && policy == Some(WritePolicy::WriteBack);
    let mut written: HashMap<BlockKey, u64> = HashMap::new();

    let volumes = trace.volume_names.len().max(1);
    let mut per_volume = vec![0usize; volumes];
    for r in &trace.requests {
        if (r.volume as usize) < volumes {
            per_volume[r.volume as usize] += 1;
        }
    }
    let mut stats = Stats {
        reads: per_volume.iter().map(|&n| Vec::with_capacity(n)).collect(),
        writes: per_volume.iter().map(|&n| Vec::with_capacity(n)).collect(),
        buckets: Vec::new(),
        bucket_replay_ns: schedule.offset_to_replay(spec.bucket_ns).max(1),
        server: ServerLoad::default(),
        flash: FlashLoad::default(),
    };
    let mut sim = Simulator::new(&spec.model);
    let mut plan = Plan::default();
    let mut reboot_reports = Vec::new();
    let mut segments = vec![Segment::default()];
    let mut next_reboot = 0;
    let mut clock = 0u64;

    const STEP: usize = 1 << 14;
    for (n, r) in trace.requests.iter().enumerate() {
        if n % STEP == STEP - 1 {
            progress(STEP as u64);
        }
        let offset = r.time_ns.saturating_sub(schedule.first_ns());
        while next_reboot < reboots.len() && offset >= reboots[next_reboot] {
            let at = schedule.offset_to_replay(reboots[next_reboot]).max(clock);
            sim.advance_to(at, &mut stats);
            clock = at;
            if let (Some(c), Some(config)) = (cache.as_mut(), config.as_ref()) {
                let report = reboot(
                    c,
                    config,
                    spec.restart,
                    &mut written,
                    &mut sim,
                    &mut plan,
                    &mut stats,
                    block_size,
                );
                reboot_reports.push(RebootReport { at_s: reboots[next_reboot] as f64 / 1e9, ..report });
            }
            segments.push(Segment { start_s: reboots[next_reboot] as f64 / 1e9, ..Segment::default() });
            next_reboot += 1;
        }
        // Out-of-order timestamps arrive "now": time never runs backwards.
        let at = schedule.replay_ns(r.time_ns).max(clock);
        sim.advance_to(at, &mut stats);
        clock = at;
        let read = r.op == Op::Read;
        match cache.as_mut() {
            Some(c) => {
                let outcome = c.handle(r.volume, r.op, r.offset, r.len);
                plan.from_actions(
                    r.op,
                    r.volume,
                    r.offset,
                    r.len,
                    policy.unwrap_or(WritePolicy::WriteBack),
                    c.actions(),
                    block_size,
                );
                if track_written && r.op == Op::Write {
                    for op in
                        plan.phase(super::plan::phase::STORE).iter().filter(|op| op.device == Device::Flash)
                    {
                        for b in 0..op.len / block_size {
                            let key = BlockKey { volume: op.volume, block: op.offset / block_size + b };
                            written.insert(key, n as u64);
                        }
                    }
                }
                if read {
                    let b = stats.bucket(at);
                    b.read_blocks += outcome.blocks;
                    b.read_hits += outcome.hit_blocks;
                    let s = segments.last_mut().expect("one segment at least");
                    s.read_blocks += outcome.blocks;
                    s.read_hits += outcome.hit_blocks;
                }
            }
            None => {
                plan.uncached(r.volume, r.op, r.offset, r.len);
                if read {
                    let blocks = if r.len == 0 {
                        0
                    } else {
                        (r.offset + r.len - 1) / block_size - r.offset / block_size + 1
                    };
                    stats.bucket(at).read_blocks += blocks;
                    segments.last_mut().expect("one segment at least").read_blocks += blocks;
                }
            }
        }
        // Zero-length requests touch nothing and are not client latencies.
        let record = r.len > 0 && r.op != Op::Trim;
        sim.submit(r.volume, read, &plan, record, &mut stats);
    }
    progress((trace.requests.len() % STEP) as u64);
    let end_ns = sim.finish(&mut stats);

    let mut all = Vec::with_capacity(trace.requests.len());
    let mut all_reads = Vec::new();
    let mut all_writes = Vec::new();
    let mut volume_stats = Vec::with_capacity(volumes);
    for v in 0..volumes {
        all_reads.extend_from_slice(&stats.reads[v]);
        all_writes.extend_from_slice(&stats.writes[v]);
        let mut both: Vec<u64> = stats.reads[v].iter().chain(&stats.writes[v]).copied().collect();
        all.extend_from_slice(&both);
        volume_stats.push(VolumeLatency {
            name: trace.volume_name(v),
            all: LatencyStats::of(&mut both),
            reads: LatencyStats::of(&mut stats.reads[v]),
            writes: LatencyStats::of(&mut stats.writes[v]),
        });
    }
    let bucket_trace_s = spec.bucket_ns as f64 / 1e9;
    for (i, b) in stats.buckets.iter_mut().enumerate() {
        b.start_s = i as f64 * bucket_trace_s;
        b.mean_latency_us =
            if b.requests > 0 { b.latency_sum_ns as f64 / b.requests as f64 / 1000.0 } else { 0.0 };
    }
    for s in &mut segments {
        s.read_hit_ratio = ratio(s.read_hits, s.read_blocks);
    }
    let (read_blocks, read_hits) =
        stats.buckets.iter().fold((0, 0), |(b, h), x| (b + x.read_blocks, h + x.read_hits));
    let utilization = |device| {
        let t = sim.totals(device);
        if end_ns == 0 {
            0.0
        } else {
            t.busy_ns as f64 / (f64::from(t.servers) * end_ns as f64)
        }
    };
    Ok(TimedResult {
        label: spec.label.clone(),
        write_policy: policy.map_or_else(|| "no-cache".to_owned(), |p| p.name().to_owned()),
        cache_size_bytes: config.as_ref().map_or(0, |c| c.capacity_bytes),
        speedup: spec.speedup,
        restart: spec.restart,
        latency: LatencyStats::of(&mut all),
        read_latency: LatencyStats::of(&mut all_reads),
        write_latency: LatencyStats::of(&mut all_writes),
        volumes: volume_stats,
        read_blocks,
        read_hits,
        read_hit_ratio: ratio(read_hits, read_blocks),
        server: stats.server,
        flash: stats.flash,
        server_utilization: utilization(Device::Backend),
        flash_utilization: utilization(Device::Flash),
        replay_seconds: end_ns as f64 / 1e9,
        bucket_seconds: bucket_trace_s,
        buckets: stats.buckets,
        reboots: reboot_reports,
        segments,
    })
}

/// Reboot the host: apply `restart` to the cache, sending any shutdown
/// flush to the devices as background work.
#[allow(clippy::too_many_arguments)]
fn reboot(
    cache: &mut Cache,
    config: &CacheConfig,
    restart: Restart,
    written: &mut HashMap<BlockKey, u64>,
    sim: &mut Simulator,
    plan: &mut Plan,
    stats: &mut Stats,
    block_size: u64,
) -> RebootReport {
    let cached_blocks = cache.cached_items();
    let dirty_blocks = cache.dirty_blocks();
    let mut flushed_blocks = 0;
    match restart {
        Restart::Warm => {}
        Restart::Cold => {
            flushed_blocks = cache.write_back_all(None);
            plan.flush(cache.actions(), block_size);
            sim.submit(0, false, plan, false, stats);
            *cache = Cache::new(config.clone()).expect("validated at the start");
        }
        Restart::DirtyOnly => {
            let mut dirty: Vec<(u64, BlockKey)> = written
                .iter()
                .filter(|(key, _)| cache.lookup(**key).is_some_and(|(_, dirty)| dirty))
                .map(|(key, seq)| (*seq, *key))
                .collect();
            dirty.sort_unstable();
            *cache = Cache::new(config.clone()).expect("validated at the start");
            // The blocks are already on flash: restoring their metadata
            // costs no device operation, so the actions are dropped.
            for (_, key) in &dirty {
                cache.handle(key.volume, Op::Write, key.block * block_size, block_size);
            }
            written.retain(|key, _| cache.lookup(*key).is_some());
        }
    }
    RebootReport { at_s: 0.0, cached_blocks, dirty_blocks, kept_blocks: cache.cached_items(), flushed_blocks }
}
