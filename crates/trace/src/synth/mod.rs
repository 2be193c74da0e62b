//! Deterministic synthetic multi-VM block workloads, configured in TOML.
//!
//! Each VM (one volume of the trace) combines:
//! - a **random workload**: Poisson arrivals at `iops`, modulated by a
//!   **diurnal** sinusoid (by thinning), reads with probability
//!   `read_ratio`, lengths from `request_size`, and offsets either in a
//!   **Zipf hot set** (extents scattered by a keyed permutation, drifting
//!   every `shift_every` so that working-set predictors have something to
//!   track) or uniform over the rest of the disk;
//! - **scans**: recurring sequential runs over a region, periodic or Poisson;
//! - **backups**: the same, weekly by default: the one-time-use sequential
//!   reads that an admission policy (RWS_N, HEC, sequential cutoff) should
//!   keep out of the cache, as the weekly backup of seed 001's Webserver.
//!
//! [`SynthSource`] merges every VM's streams in time order with a binary heap
//! keyed by each stream's next event, so it streams any length of trace in
//! memory proportional to the number of streams. Every random choice comes
//! from a ChaCha8 generator per stream, seeded from `seed` and the VM name,
//! and the few transcendental functions are computed in portable arithmetic
//! (the private `math` module), so a config and seed give the same trace on every platform, and
//! editing one VM does not change the requests of the others.
//!
//! The schema is in [`config`] and `docs/synthetic.md`; [`DEMO_CONFIG`] is a
//! commented 12-VM, 14-day example.

pub mod config;
mod math;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

pub use config::{
    ByteSize, DiurnalConfig, HotConfig, Portion, RequestSize, SeqConfig, SeqKind, SeqOp, SizeWeight, Span,
    StartTime, SynthConfig, Throughput, VmConfig,
};

use crate::error::TraceError;
use crate::request::{Op, Request, VolumeId, VolumeTable};
use crate::units::NS_PER_SEC;
use crate::RequestSource;
use math::{below, exponential, fnv1a, mix64, unit, Permutation, Zipf};

/// The embedded demo workload: 12 VMs (web servers with weekly backups,
/// Moodle-like course servers, file servers, a database, an analytics VM, an
/// application server with a drifting working set, a mostly idle VM) over 14
/// days, about 3 million requests. Copy it to start a config of your own.
pub const DEMO_CONFIG: &str = include_str!("demo.toml");

/// A workload config that cannot be parsed or makes no sense. The message
/// names the line and key (syntax and type errors) or the VM and key
/// (validation errors).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SynthError(pub String);

/// Build the request stream of a validated or hand-built config; same as
/// [`SynthSource::new`]. Wrap it in a [`crate::TraceReader`] or use it
/// directly as a [`RequestSource`].
pub fn open(config: &SynthConfig) -> Result<SynthSource, SynthError> {
    SynthSource::new(config)
}

const DAY_NS: u64 = 86_400 * NS_PER_SEC;

/// Cold requests redraw this many times to avoid the hot set; past that (a
/// hot set covering nearly the whole disk) they land where they fall.
const COLD_TRIES: u32 = 64;

/// Stream tags mixed into the per-stream seeds.
const TAG_RANDOM: u64 = 0x7261_6e64;
const TAG_HOT: u64 = 0x686f_7473;
const TAG_SCAN: u64 = 0x7363_616e_0000;
const TAG_BACKUP: u64 = 0x6261_636b_0000;

fn stream_rng(seed: u64, vm_name: &str, tag: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(mix64(seed ^ mix64(fnv1a(vm_name) ^ tag)))
}

/// The hot set of one VM in resolved units.
#[derive(Clone, Debug)]
struct HotPlan {
    /// Bytes per extent.
    extent: u64,
    /// Extent-aligned slots on the disk.
    slots: u64,
    /// Extents in the hot set.
    count: u64,
    share: f64,
    zipf: Zipf,
    /// Maps positions of the (rotating) popularity order to disk slots.
    perm: Permutation,
    /// Nanoseconds between shifts; 0 = static.
    shift_every: u64,
    /// Extents replaced at each shift.
    step: u64,
}

impl HotPlan {
    fn epoch(&self, t: u64) -> u64 {
        t.checked_div(self.shift_every).unwrap_or(0)
    }

    /// Where the window of `count` positions starts in epoch `epoch`: it
    /// advances by `step` per shift, so the newest `step` positions become the
    /// hottest ranks and the coldest `step` drop out.
    fn base(&self, epoch: u64) -> u64 {
        ((u128::from(epoch) * u128::from(self.step)) % u128::from(self.slots)) as u64
    }

    /// Disk slot of 0-based popularity rank `r` (0 = hottest).
    fn slot_of_rank(&self, epoch: u64, r: u64) -> u64 {
        let q = (u128::from(self.base(epoch)) + u128::from(self.count - 1 - r)) % u128::from(self.slots);
        self.perm.apply(q as u64)
    }

    fn contains_slot(&self, epoch: u64, slot: u64) -> bool {
        if slot >= self.slots {
            return false;
        }
        let q = self.perm.invert(slot);
        (q + self.slots - self.base(epoch)) % self.slots < self.count
    }
}

/// One VM in resolved units.
#[derive(Clone, Debug)]
struct VmPlan {
    disk: u64,
    hot: Option<HotPlan>,
}

/// The next request of one stream, in trace-relative nanoseconds.
#[derive(Clone, Copy, Debug)]
struct Pending {
    t: u64,
    op: Op,
    offset: u64,
    len: u64,
}

/// The random (Poisson, diurnal, hot/cold) workload of one VM.
struct RandomGen {
    vm: usize,
    rng: ChaCha8Rng,
    /// Time of the last candidate arrival.
    t: u64,
    /// Mean gap between candidate arrivals at the peak rate, in ns.
    mean_gap_ns: f64,
    amplitude: f64,
    /// Peak hour as a fraction of the day.
    peak_phase: f64,
    read_ratio: f64,
    /// (length, cumulative probability).
    sizes: Vec<(u64, f64)>,
}

/// A recurring sequential stream (scan or backup) of one VM.
struct SeqGen {
    rng: ChaCha8Rng,
    op: Op,
    region_start: u64,
    region_len: u64,
    length: u64,
    request: u64,
    gap_ns: f64,
    every: u64,
    poisson: bool,
    /// Scheduled start of the next run.
    sched: u64,
    /// When the previous run finished (a run never overlaps the previous one).
    free_at: u64,
    active: bool,
    run_start: u64,
    run_pos: u64,
    index: u64,
    count: u64,
}

enum Stream {
    Random(RandomGen),
    Seq(SeqGen),
}

/// A streaming generator of a synthetic workload (see the module docs).
pub struct SynthSource {
    vms: Vec<VmPlan>,
    streams: Vec<(VolumeId, Stream)>,
    pending: Vec<Option<Pending>>,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    volumes: VolumeTable,
    block: u64,
    start_ns: u64,
    duration_ns: u64,
    last_t: u64,
}

impl SynthSource {
    /// Validate `config` and prepare its streams (no request is generated
    /// until asked for).
    pub fn new(config: &SynthConfig) -> Result<SynthSource, SynthError> {
        config.validate()?;
        let block = config.block_size.0;
        let mut volumes = VolumeTable::new();
        let mut vms = Vec::with_capacity(config.vms.len());
        let mut streams = Vec::new();
        for (i, vm) in config.vms.iter().enumerate() {
            let volume = volumes.intern(&vm.name);
            let disk = vm.disk_bytes(block);
            let sizes = vm.request_size.clone().unwrap_or(RequestSize::Fixed(ByteSize(block)));
            let max_request = sizes.max();
            let hot = vm.hot.as_ref().map(|h| {
                let extent = h.extent_bytes(block, max_request);
                let slots = disk / extent;
                let count = (h.size.resolve(disk, extent) / extent).clamp(1, slots);
                let shift_every = h.shift_every.map_or(0, |s| s.0);
                let step = (h.shift_fraction * count as f64).round() as u64;
                let key = mix64(config.seed ^ mix64(fnv1a(&vm.name) ^ TAG_HOT));
                HotPlan {
                    extent,
                    slots,
                    count,
                    share: h.share,
                    zipf: Zipf::new(count, h.exponent),
                    perm: Permutation::new(slots, key),
                    shift_every: if step == 0 { 0 } else { shift_every },
                    step,
                }
            });
            vms.push(VmPlan { disk, hot });

            if vm.iops > 0.0 {
                let (amplitude, peak) =
                    vm.diurnal.as_ref().map_or((0.0, 0.0), |d| (d.amplitude, d.peak_hour));
                let entries = sizes.entries();
                let total: f64 = entries.iter().map(|e| e.1).sum();
                let mut acc = 0.0;
                let sizes = entries
                    .iter()
                    .filter(|e| e.1 > 0.0)
                    .map(|&(len, w)| {
                        acc += w / total;
                        (len, acc)
                    })
                    .collect();
                streams.push((
                    volume,
                    Stream::Random(RandomGen {
                        vm: i,
                        rng: stream_rng(config.seed, &vm.name, TAG_RANDOM),
                        t: 0,
                        mean_gap_ns: NS_PER_SEC as f64 / (vm.iops * (1.0 + amplitude)),
                        amplitude,
                        peak_phase: peak / 24.0,
                        read_ratio: vm.read_ratio,
                        sizes,
                    }),
                ));
            }
            for (kind, list, tag) in
                [(SeqKind::Scan, &vm.scan, TAG_SCAN), (SeqKind::Backup, &vm.backup, TAG_BACKUP)]
            {
                for (j, s) in list.iter().enumerate() {
                    let (region_start, region_len) = s.region(disk, block);
                    let request = s.request_size_or_default(kind);
                    let at = s.at.map_or(0, |a| a.0);
                    streams.push((
                        volume,
                        Stream::Seq(SeqGen {
                            rng: stream_rng(config.seed, &vm.name, tag + j as u64),
                            op: match s.op {
                                SeqOp::Read => Op::Read,
                                SeqOp::Write => Op::Write,
                            },
                            region_start,
                            region_len,
                            length: s.run_length(disk, block),
                            request,
                            gap_ns: request as f64 * NS_PER_SEC as f64 / s.throughput_or_default(kind) as f64,
                            // Validation guarantees `every`; 7 days is only a fallback.
                            every: s.every_or_default(kind).unwrap_or(config::BACKUP_EVERY.0),
                            poisson: s.poisson,
                            sched: at,
                            free_at: 0,
                            active: false,
                            run_start: 0,
                            run_pos: 0,
                            index: 0,
                            count: 0,
                        }),
                    ));
                }
            }
        }
        let mut source = SynthSource {
            vms,
            pending: Vec::with_capacity(streams.len()),
            heap: BinaryHeap::with_capacity(streams.len()),
            streams,
            volumes,
            block,
            start_ns: config.start_time.0,
            duration_ns: config.duration.0,
            last_t: 0,
        };
        for k in 0..source.streams.len() {
            let p = source.advance(k);
            if let Some(p) = p {
                source.heap.push(Reverse((p.t, k as u32)));
            }
            source.pending.push(p);
        }
        Ok(source)
    }

    /// The next request of stream `k`, or `None` once it is past the end.
    fn advance(&mut self, k: usize) -> Option<Pending> {
        let duration = self.duration_ns;
        match &mut self.streams[k].1 {
            Stream::Random(g) => {
                let vm = &self.vms[g.vm];
                g.next(vm, self.block, self.start_ns, duration)
            }
            Stream::Seq(g) => g.next(self.block, duration),
        }
    }

    /// Whether byte `offset` of `volume` is in that VM's hot set at trace
    /// time `time_ns` (the clock of [`Request::time_ns`]). Ground truth for
    /// checking what a cache or a predictor found.
    pub fn in_hot_set(&self, volume: VolumeId, time_ns: u64, offset: u64) -> bool {
        let Some(hot) = self.vms.get(volume as usize).and_then(|v| v.hot.as_ref()) else {
            return false;
        };
        let epoch = hot.epoch(time_ns.saturating_sub(self.start_ns));
        hot.contains_slot(epoch, offset / hot.extent)
    }

    /// Size in bytes of each volume's disk, indexed by volume id.
    pub fn disk_sizes(&self) -> Vec<u64> {
        self.vms.iter().map(|v| v.disk).collect()
    }

    /// Time of the first instant of the trace, in ns since the Unix epoch.
    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }

    /// Length of the trace in ns.
    pub fn duration_ns(&self) -> u64 {
        self.duration_ns
    }

    /// Fraction of the trace time generated so far, in [0, 1].
    pub fn progress(&self) -> f64 {
        if self.heap.is_empty() {
            1.0
        } else {
            self.last_t as f64 / self.duration_ns as f64
        }
    }
}

impl RequestSource for SynthSource {
    fn next_request(&mut self, req: &mut Request) -> Result<bool, TraceError> {
        let Some(Reverse((_, k))) = self.heap.pop() else {
            return Ok(false);
        };
        let k = k as usize;
        let Some(p) = self.pending[k] else {
            return Ok(false);
        };
        req.time_ns = self.start_ns + p.t;
        req.volume = self.streams[k].0;
        req.op = p.op;
        req.offset = p.offset;
        req.len = p.len;
        req.content.clear();
        self.last_t = p.t;
        let next = self.advance(k);
        if let Some(n) = next {
            self.heap.push(Reverse((n.t, k as u32)));
        }
        self.pending[k] = next;
        Ok(true)
    }

    fn volumes(&self) -> &VolumeTable {
        &self.volumes
    }
}

impl RandomGen {
    fn next(&mut self, vm: &VmPlan, block: u64, start_ns: u64, duration: u64) -> Option<Pending> {
        loop {
            let gap = exponential(&mut self.rng, self.mean_gap_ns).round() as u64;
            self.t = self.t.saturating_add(gap);
            if self.t >= duration {
                return None;
            }
            if self.amplitude == 0.0 {
                break;
            }
            // Thinning: keep a candidate with probability rate(t) / peak rate.
            let abs = start_ns.saturating_add(self.t);
            let phase = (abs % DAY_NS) as f64 / DAY_NS as f64 - self.peak_phase;
            let rate = 1.0 + self.amplitude * math::cos(std::f64::consts::TAU * phase);
            if unit(&mut self.rng) * (1.0 + self.amplitude) < rate {
                break;
            }
        }
        let op = if unit(&mut self.rng) < self.read_ratio { Op::Read } else { Op::Write };
        let len = if self.sizes.len() == 1 {
            self.sizes[0].0
        } else {
            let u = unit(&mut self.rng);
            self.sizes.iter().find(|s| u < s.1).unwrap_or(&self.sizes[self.sizes.len() - 1]).0
        };
        let offset = self.offset(vm, block, len);
        Some(Pending { t: self.t, op, offset, len })
    }

    fn uniform(&mut self, disk: u64, block: u64, len: u64) -> u64 {
        below(&mut self.rng, (disk - len) / block + 1) * block
    }

    fn offset(&mut self, vm: &VmPlan, block: u64, len: u64) -> u64 {
        let Some(hot) = &vm.hot else {
            return self.uniform(vm.disk, block, len);
        };
        let epoch = hot.epoch(self.t);
        if unit(&mut self.rng) < hot.share {
            let rank = hot.zipf.sample(&mut self.rng) - 1;
            let base = hot.slot_of_rank(epoch, rank) * hot.extent;
            let within = if len < hot.extent {
                below(&mut self.rng, (hot.extent - len) / block + 1) * block
            } else {
                0
            };
            return (base + within).min(vm.disk - len);
        }
        let mut offset = 0;
        for _ in 0..COLD_TRIES {
            offset = self.uniform(vm.disk, block, len);
            if !hot.contains_slot(epoch, offset / hot.extent) {
                break;
            }
        }
        offset
    }
}

impl SeqGen {
    fn next(&mut self, block: u64, duration: u64) -> Option<Pending> {
        if !self.active {
            let start = self.sched.max(self.free_at);
            if start >= duration {
                return None;
            }
            self.run_start = start;
            let slack = (self.region_len - self.length) / block;
            self.run_pos =
                self.region_start + if slack > 0 { below(&mut self.rng, slack + 1) * block } else { 0 };
            self.index = 0;
            self.count = self.length.div_ceil(self.request);
            self.active = true;
            let gap = if self.poisson {
                exponential(&mut self.rng, self.every as f64).round() as u64
            } else {
                self.every
            };
            self.sched = self.sched.saturating_add(gap);
        }
        let t = self.run_start.saturating_add((self.index as f64 * self.gap_ns).round() as u64);
        if t >= duration {
            return None;
        }
        let offset = self.run_pos + self.index * self.request;
        let len = self.request.min(self.run_pos + self.length - offset);
        self.index += 1;
        if self.index == self.count {
            self.active = false;
            self.free_at = self.run_start.saturating_add((self.count as f64 * self.gap_ns).round() as u64);
        }
        Some(Pending { t, op: self.op, offset, len })
    }
}
