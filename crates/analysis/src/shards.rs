//! SHARDS (Waldspurger et al., FAST'15): miss-ratio curves from a spatially
//! hashed sample of the blocks.
//!
//! A block is in the sample when a hash of (volume, block) falls below a
//! threshold `T`, so the rate is `R = T / 2^64` and every access to a
//! sampled block is seen. Stack distances measured among sampled blocks,
//! divided by `R`, estimate the true distances.
//!
//! * **Fixed rate** ([`ShardsSample`]) keeps the sampled references
//!   themselves (about `R` x the block accesses, 24 bytes each) and builds
//!   curves from them afterwards: for the whole trace, for one volume, or for
//!   any set of volumes as if they shared one cache (the sample of a union of
//!   volumes is the union of their samples, interleaved in trace order). The
//!   miss ratio is sampled misses over sampled references. SHARDS_adj (add
//!   the difference between the expected `R x N` and the actual number of
//!   sampled references to the smallest distance) was tried and left out:
//!   on the CloudPhysics sample and on a synthetic trace it made the mean
//!   absolute error larger at 1 % over eleven independent samples
//!   (`docs/analysis.md`).
//! * **Fixed size** ([`ShardsFixedSize`]) bounds memory: at most `s_max`
//!   blocks are tracked; when one more arrives, the block with the largest
//!   hash is dropped and the threshold lowered to its hash. Each sampled
//!   reference counts with weight `1/R` at the rate in force when it was
//!   seen, and the curve is normalized by the total weight.

use std::collections::BinaryHeap;

use cloudcache_trace::{Op, VolumeId};

use crate::block_stack::BlockStack;
use crate::histogram::{DenseHistogram, LogHistogram};
use crate::mrc::{Counted, CurvePoint, VolumeBlock};
use crate::workload::WorkloadRequest;

/// Resolution of fixed-size SHARDS's scaled distances (1/256 relative).
const SCALED_DISTANCE_BITS: u32 = 8;

/// The sampling hash of a block: a splitmix64 finalizer over the volume and
/// block number, uniform enough that every threshold is a fair rate.
#[inline]
pub fn block_hash(volume: VolumeId, block: u64) -> u64 {
    salted_block_hash(volume, block, 0)
}

/// [`block_hash`] with a salt: another salt draws another, independent
/// sample (used to measure how much SHARDS's error depends on the draw).
#[inline]
pub fn salted_block_hash(volume: VolumeId, block: u64, salt: u64) -> u64 {
    // The salt moves the block into a far region of the hash's domain, so
    // another salt is another sample, not this one shifted by a few blocks.
    let mut x = (block ^ u64::from(volume).wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(salt.wrapping_mul(0xD1B5_4A32_D192_ED03));
    x ^= x >> 30;
    x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// The threshold of rate `rate` in (0, 1]; `None` means every block.
fn threshold_of(rate: f64) -> Option<u64> {
    if rate >= 1.0 {
        None
    } else {
        Some((rate * 18_446_744_073_709_551_616.0) as u64)
    }
}

/// The rate SHARDS samples at by default, when no rate is given: 1 %, as
/// the benchmark and the SHARDS paper's larger rates use.
pub const DEFAULT_RATE: f64 = 0.01;

/// Distinct blocks the default rate keeps at least: below [`DEFAULT_RATE`]
/// x distinct blocks, the rate is raised until the sample holds this many
/// (see [`default_rate`]). The error of a sampled curve falls with the
/// number of sampled blocks, not with the rate, and a 1 % sample of a small
/// trace (the 270,000-block CloudPhysics sample: 2,700 blocks) leaves the
/// curve to a few heavy blocks (`docs/analysis.md`, `docs/benchmarks.md`).
pub const DEFAULT_MIN_SAMPLED_BLOCKS: usize = 32_768;

/// The default SHARDS rate for `requests`: the larger of [`DEFAULT_RATE`]
/// and the rate at which [`DEFAULT_MIN_SAMPLED_BLOCKS`] of their distinct
/// blocks are sampled (1 when they have fewer). On traces of more than
/// about 3.3 million distinct blocks this is exactly 1 %.
pub fn default_rate<'a>(
    requests: impl IntoIterator<Item = &'a WorkloadRequest>,
    block_size: u64,
    salt: u64,
) -> f64 {
    rate_for_blocks(requests, block_size, DEFAULT_MIN_SAMPLED_BLOCKS, salt).max(DEFAULT_RATE)
}

/// The smallest rate at which `blocks` distinct blocks of `requests` are
/// sampled with hash salt `salt` (1 when they have fewer): just above the
/// `blocks`-th smallest block hash, found in one pass with a bounded heap
/// of the smallest hashes (memory: `blocks` hashes).
pub fn rate_for_blocks<'a>(
    requests: impl IntoIterator<Item = &'a WorkloadRequest>,
    block_size: u64,
    blocks: usize,
    salt: u64,
) -> f64 {
    let shift = block_size.trailing_zeros();
    let blocks = blocks.max(1);
    let mut smallest: BinaryHeap<u64> = BinaryHeap::with_capacity(blocks + 1);
    let mut kept = hashbrown::HashSet::with_capacity_and_hasher(blocks + 1, rustc_hash::FxBuildHasher);
    let mut bound = u64::MAX;
    for r in requests {
        if r.op == Op::Trim {
            continue;
        }
        let Some((first, last)) = r.blocks(shift) else { continue };
        for block in first..=last {
            let h = salted_block_hash(r.volume, block, salt);
            if h >= bound || !kept.insert(h) {
                continue;
            }
            smallest.push(h);
            if smallest.len() > blocks {
                let dropped = smallest.pop().expect("not empty");
                kept.remove(&dropped);
            }
            if smallest.len() == blocks {
                bound = *smallest.peek().expect("not empty");
            }
        }
    }
    if smallest.len() < blocks {
        return 1.0;
    }
    // Hashes below `bound + 1` are exactly the kept ones.
    ((bound as f64 + 1.0) / 18_446_744_073_709_551_616.0).min(1.0)
}

/// A sampling rate outside (0, 1].
#[derive(Debug, thiserror::Error)]
#[error("sampling rate {0} is outside (0, 1]: give a fraction such as 0.01 for 1 %")]
pub struct BadRate(pub f64);

/// Check a sampling rate.
pub fn check_rate(rate: f64) -> Result<f64, BadRate> {
    if rate.is_finite() && rate > 0.0 && rate <= 1.0 {
        Ok(rate)
    } else {
        Err(BadRate(rate))
    }
}

/// One sampled event: a block access, or a trim of a block range (trims
/// are kept whatever their blocks, since which sampled blocks they cover is
/// known only when replaying).
#[derive(Clone, Copy, Debug)]
struct Sampled {
    volume: VolumeId,
    op: Op,
    block: u64,
    /// Last block of a trim.
    last: u64,
}

/// Fixed-rate SHARDS: the sampled references of a trace, from which curves
/// of any set of volumes are built.
#[derive(Clone, Debug)]
pub struct ShardsSample {
    shift: u32,
    rate: f64,
    threshold: Option<u64>,
    salt: u64,
    events: Vec<Sampled>,
}

impl ShardsSample {
    /// Sample `block_size` blocks at `rate` (check it with [`check_rate`]).
    pub fn new(block_size: u64, rate: f64) -> Result<Self, BadRate> {
        let rate = check_rate(rate)?;
        Ok(ShardsSample {
            shift: block_size.trailing_zeros(),
            rate,
            threshold: threshold_of(rate),
            salt: 0,
            events: Vec::new(),
        })
    }

    /// Draw the sample with another hash salt (0 is the default).
    pub fn with_salt(mut self, salt: u64) -> Self {
        self.salt = salt;
        self
    }

    /// The sampling rate.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// Sampled references kept.
    pub fn sampled(&self) -> usize {
        self.events.len()
    }

    /// Feed one request.
    #[inline]
    pub fn request(&mut self, r: &WorkloadRequest) {
        let volume = r.volume;
        if r.op == Op::Trim {
            if let Some((first, last)) = r.whole_blocks(self.shift) {
                self.events.push(Sampled { volume, op: Op::Trim, block: first, last });
            }
            return;
        }
        let Some((first, last)) = r.blocks(self.shift) else { return };
        match self.threshold {
            None => {
                for block in first..=last {
                    self.events.push(Sampled { volume, op: r.op, block, last: block });
                }
            }
            Some(t) => {
                for block in first..=last {
                    if salted_block_hash(volume, block, self.salt) < t {
                        self.events.push(Sampled { volume, op: r.op, block, last: block });
                    }
                }
            }
        }
    }

    /// Distinct blocks of `volumes` (`None`: all), estimated as the distinct
    /// sampled blocks divided by the rate, in bytes.
    pub fn estimated_footprint_bytes(&self, volumes: Option<&[usize]>) -> u64 {
        let mut seen = hashbrown::HashSet::with_hasher(rustc_hash::FxBuildHasher);
        for e in &self.events {
            if e.op != Op::Trim && volumes.is_none_or(|set| set.contains(&(e.volume as usize))) {
                seen.insert((e.volume, e.block));
            }
        }
        ((seen.len() as f64 / self.rate).round() as u64) << self.shift
    }

    /// The curve of the volumes `volumes` sharing one cache (`None`: all of
    /// them), at `sizes` bytes, with `block_size` blocks.
    pub fn curve(&self, volumes: Option<&[usize]>, sizes: &[u64], counted: Counted) -> Vec<CurvePoint> {
        let selected = |v: VolumeId| volumes.is_none_or(|set| set.contains(&(v as usize)));
        let mut stack = BlockStack::new();
        let mut hist = DenseHistogram::default();
        for e in self.events.iter().filter(|e| selected(e.volume)) {
            match e.op {
                Op::Trim => {
                    let (first, last) = (e.block, e.last);
                    if last - first < stack.len() as u64 {
                        for block in first..=last {
                            stack.remove(&VolumeBlock { volume: e.volume, block });
                        }
                    } else {
                        stack.remove_where(|k| k.volume == e.volume && (first..=last).contains(&k.block));
                    }
                }
                op => {
                    let d = stack.access(VolumeBlock { volume: e.volume, block: e.block });
                    if counted == Counted::All || op == Op::Read {
                        hist.record(d);
                    }
                }
            }
        }
        let sampled = hist.accesses();
        let block_size = 1u64 << self.shift;
        if sampled == 0 {
            return sizes.iter().map(|&s| CurvePoint::new(s, 0.0, 0.0)).collect();
        }
        // A sampled distance d stands for d / R blocks: it hits a cache of C
        // blocks when d < C x R.
        let capacities: Vec<u64> =
            sizes.iter().map(|&s| ((s / block_size) as f64 * self.rate).ceil() as u64).collect();
        let hits = hist.hits_at(&capacities);
        sizes.iter().zip(hits).map(|(&s, h)| CurvePoint::new(s, h as f64, sampled as f64)).collect()
    }
}

/// Fixed-size SHARDS over the whole trace: at most `max_samples` blocks
/// tracked, whatever the trace's length.
#[derive(Debug)]
pub struct ShardsFixedSize {
    shift: u32,
    max_samples: usize,
    threshold: u64,
    salt: u64,
    stack: BlockStack,
    by_hash: BinaryHeap<(u64, VolumeBlock)>,
    all: LogHistogram,
    reads: LogHistogram,
}

impl ShardsFixedSize {
    /// Track at most `max_samples` blocks of `block_size` bytes, starting
    /// at rate 1.
    pub fn new(block_size: u64, max_samples: usize) -> Self {
        ShardsFixedSize {
            shift: block_size.trailing_zeros(),
            max_samples: max_samples.max(1),
            threshold: u64::MAX,
            salt: 0,
            stack: BlockStack::with_capacity(max_samples + 1),
            by_hash: BinaryHeap::with_capacity(max_samples + 1),
            all: LogHistogram::new(SCALED_DISTANCE_BITS),
            reads: LogHistogram::new(SCALED_DISTANCE_BITS),
        }
    }

    /// Draw the sample with another hash salt (0 is the default).
    pub fn with_salt(mut self, salt: u64) -> Self {
        self.salt = salt;
        self
    }

    /// The sampling rate now.
    pub fn rate(&self) -> f64 {
        if self.threshold == u64::MAX {
            1.0
        } else {
            self.threshold as f64 / 18_446_744_073_709_551_616.0
        }
    }

    /// Feed one request.
    pub fn request(&mut self, r: &WorkloadRequest) {
        let volume = r.volume;
        if r.op == Op::Trim {
            if let Some((first, last)) = r.whole_blocks(self.shift) {
                if last - first < self.stack.len() as u64 {
                    for block in first..=last {
                        self.stack.remove(&VolumeBlock { volume, block });
                    }
                } else {
                    self.stack.remove_where(|k| k.volume == volume && (first..=last).contains(&k.block));
                }
            }
            return;
        }
        let Some((first, last)) = r.blocks(self.shift) else { return };
        for block in first..=last {
            let h = salted_block_hash(volume, block, self.salt);
            if h >= self.threshold && self.threshold != u64::MAX {
                continue;
            }
            let key = VolumeBlock { volume, block };
            let rate = self.rate();
            let distance = self.stack.access(key);
            let weight = 1.0 / rate;
            match distance {
                Some(d) => {
                    // Needed capacity in blocks: hit iff d / R < C.
                    let needed = (f64::from(d) / rate).floor() as u64 + 1;
                    self.all.record(needed, weight);
                    if r.op == Op::Read {
                        self.reads.record(needed, weight);
                    }
                }
                None => {
                    self.all.cold += weight;
                    if r.op == Op::Read {
                        self.reads.cold += weight;
                    }
                    self.by_hash.push((h, key));
                    self.shrink();
                }
            }
        }
    }

    /// Drop the largest-hash blocks until at most `max_samples` remain,
    /// lowering the threshold to the last hash dropped.
    fn shrink(&mut self) {
        while self.stack.len() > self.max_samples {
            let Some((h, key)) = self.by_hash.pop() else { break };
            self.threshold = h;
            self.stack.remove(&key);
        }
        while let Some(&(h, key)) = self.by_hash.peek() {
            if h < self.threshold {
                break;
            }
            self.by_hash.pop();
            self.stack.remove(&key);
        }
    }

    /// Distinct blocks estimated from the weights of first accesses, in
    /// bytes.
    pub fn estimated_footprint_bytes(&self) -> u64 {
        (self.all.cold.round() as u64) << self.shift
    }

    /// The curve at `sizes` bytes.
    pub fn curve(&self, sizes: &[u64], counted: Counted) -> Vec<CurvePoint> {
        let hist = match counted {
            Counted::All => &self.all,
            Counted::Reads => &self.reads,
        };
        let capacities: Vec<u64> = sizes.iter().map(|&s| s >> self.shift).collect();
        let hits = hist.weight_at_most(&capacities);
        let total = hist.total();
        sizes.iter().zip(hits).map(|(&s, h)| CurvePoint::new(s, h, total)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_outside_the_unit_interval_are_refused() {
        for bad in [0.0, -0.5, 1.5, f64::NAN, f64::INFINITY] {
            assert!(check_rate(bad).unwrap_err().to_string().contains("outside (0, 1]"));
        }
        assert_eq!(check_rate(1.0).unwrap(), 1.0);
    }

    #[test]
    fn the_hash_samples_close_to_the_rate() {
        let t = threshold_of(0.01).unwrap();
        let sampled = (0..1_000_000u64).filter(|&b| block_hash(3, b) < t).count();
        assert!((9_000..11_000).contains(&sampled), "{sampled}");
    }

    fn run(volume: u32, first_block: u64, blocks: u64) -> WorkloadRequest {
        WorkloadRequest { time_ns: 0, offset: first_block * 4096, len: blocks * 4096, volume, op: Op::Read }
    }

    #[test]
    fn the_rate_for_a_number_of_blocks_samples_exactly_that_many() {
        // 50,000 distinct blocks of two volumes, each read twice.
        let reqs: Vec<WorkloadRequest> = (0..2)
            .flat_map(|_| (0..2).flat_map(|v| (0..25u64).map(move |i| run(v, i * 1000, 1000))))
            .collect();
        for (blocks, salt) in [(1000, 0), (5000, 3), (20_000, 7)] {
            let rate = rate_for_blocks(&reqs, 4096, blocks, salt);
            let mut s = ShardsSample::new(4096, rate).unwrap().with_salt(salt);
            reqs.iter().for_each(|r| s.request(r));
            let sampled_blocks = s.estimated_footprint_bytes(None) as f64 / 4096.0 * rate;
            assert!((sampled_blocks - blocks as f64).abs() <= 1.0, "{blocks}: {sampled_blocks} at {rate}");
            assert_eq!(s.sampled(), 2 * sampled_blocks.round() as usize);
        }
        // Fewer distinct blocks than asked for: everything.
        assert_eq!(rate_for_blocks(&reqs, 4096, 50_001, 0), 1.0);
        assert!(rate_for_blocks(&reqs, 4096, 50_000, 0) <= 1.0);
        // The default: raised on this small trace, 1 % on a large one.
        let raised = default_rate(&reqs, 4096, 0);
        assert_eq!(raised, rate_for_blocks(&reqs, 4096, DEFAULT_MIN_SAMPLED_BLOCKS, 0));
        assert!((0.6..0.72).contains(&raised), "{raised}: 32,768 of 50,000 blocks");
        assert_eq!(default_rate(&reqs[..10], 4096, 0), 1.0);
        let large: Vec<WorkloadRequest> = (0..5000u64).map(|i| run(0, i * 1000, 1000)).collect();
        assert_eq!(default_rate(&large, 4096, 0), DEFAULT_RATE);
    }
}
