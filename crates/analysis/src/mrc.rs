//! Exact miss-ratio curves of LRU from stack distances, in block mode and
//! object mode, for the whole trace and per volume.
//!
//! Block mode follows the engine exactly (`docs/semantics.md`): a read or
//! write of bytes `[off, off+len)` references blocks `off/B ..= (off+len-1)/B`
//! in ascending order; under write-back every one of them is an LRU
//! reference (a write miss is admitted). A trim drops the blocks wholly
//! inside its range from the stack, as the engine drops them from the cache;
//! see `docs/analysis.md` for why the curve is then exact only up to a
//! second-order effect. Object mode follows libCacheSim's model as the
//! engine implements it: a request is an object keyed by (volume, offset)
//! whose size is its length; it hits a cache of `C` bytes when it and every
//! distinct object accessed since its last access fit in `C`.

use cloudcache_trace::{Op, VolumeId};
use serde::Serialize;

use crate::block_stack::BlockStack;
use crate::histogram::{DenseHistogram, LogHistogram};
use crate::stack::StackTracker;
use crate::workload::WorkloadRequest;

/// Log-linear resolution of object-mode byte distances: exact below 4 KiB,
/// then 1/4096 relative (multiples of 4 KiB are exact up to 32 MiB).
const OBJECT_DISTANCE_BITS: u32 = 12;

/// A block of one volume: the key of a whole-trace (shared cache) stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VolumeBlock {
    /// Volume id.
    pub volume: VolumeId,
    /// Block number (or byte offset of an object).
    pub block: u64,
}

/// One point of a miss-ratio curve, as `cloudcache mrc --json` writes it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CurvePoint {
    /// Cache size.
    pub cache_size_bytes: u64,
    /// Misses / accesses (null when there were no accesses).
    pub miss_ratio: Option<f64>,
    /// Hits / accesses.
    pub hit_ratio: Option<f64>,
}

impl CurvePoint {
    /// The point of `hits` out of `accesses` at `cache_size_bytes`.
    pub fn new(cache_size_bytes: u64, hits: f64, accesses: f64) -> Self {
        if accesses <= 0.0 {
            return CurvePoint { cache_size_bytes, miss_ratio: None, hit_ratio: None };
        }
        let hit = (hits / accesses).clamp(0.0, 1.0);
        CurvePoint { cache_size_bytes, miss_ratio: Some(1.0 - hit), hit_ratio: Some(hit) }
    }
}

/// Which accesses a curve counts. All accesses always update the LRU stack
/// (a write-back cache sees every block); `Reads` counts only read hits and
/// read accesses, i.e. the read hit ratio of that cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Counted {
    /// Reads and writes.
    All,
    /// Reads only.
    Reads,
}

/// Mean absolute difference of the miss ratios two curves give at the
/// sizes they share (None when they share no defined point).
pub fn mean_absolute_error(a: &[CurvePoint], b: &[CurvePoint]) -> Option<f64> {
    let mut sum = 0.0;
    let mut n = 0usize;
    for p in a {
        if let Some(q) = b.iter().find(|q| q.cache_size_bytes == p.cache_size_bytes) {
            if let (Some(x), Some(y)) = (p.miss_ratio, q.miss_ratio) {
                sum += (x - y).abs();
                n += 1;
            }
        }
    }
    (n > 0).then(|| sum / n as f64)
}

/// Cache sizes for a dense curve up to `footprint_bytes`, in multiples of
/// `unit`: the powers of two from one unit, plus 256 equal steps up to the
/// footprint, sorted and without repeats.
pub fn dense_sizes(footprint_bytes: u64, unit: u64) -> Vec<u64> {
    let units = footprint_bytes.div_ceil(unit.max(1));
    if units == 0 {
        return Vec::new();
    }
    let mut sizes: Vec<u64> =
        std::iter::successors(Some(1u64), |&u| u.checked_mul(2)).take_while(|&u| u < units).collect();
    let step = units.div_ceil(256);
    sizes.extend((1..=units.div_ceil(step)).map(|k| (k * step).min(units)));
    sizes.sort_unstable();
    sizes.dedup();
    sizes.into_iter().map(|u| u * unit).collect()
}

/// Distance histograms of one stream: all accesses and reads alone.
#[derive(Clone, Debug, Default)]
pub struct BlockHistograms {
    /// Every block access.
    pub all: DenseHistogram,
    /// Read block accesses.
    pub reads: DenseHistogram,
}

impl BlockHistograms {
    fn of(&self, counted: Counted) -> &DenseHistogram {
        match counted {
            Counted::All => &self.all,
            Counted::Reads => &self.reads,
        }
    }

    /// Distinct blocks referenced (first accesses, counting re-accesses
    /// after a discard): the size at which only cold misses remain.
    pub fn footprint_blocks(&self) -> u64 {
        self.all.cold
    }
}

/// Hits per time window at every power-of-two cache size (the hit ratio
/// over time): each window keeps a histogram of the bit lengths of its
/// accesses' stack distances, and a distance `d` hits a cache of `2^k`
/// blocks exactly when its bit length is at most `k`.
#[derive(Clone, Debug, Serialize)]
pub struct HitTimeline {
    /// Window length (ns).
    pub window_ns: u64,
    /// Start of window 0 (ns, trace time).
    pub start_ns: u64,
    /// Block size.
    pub block_size: u64,
    /// Per window: accesses by the bit length of their distance (index 65:
    /// cold misses).
    #[serde(skip)]
    windows: Vec<[u64; 66]>,
}

impl HitTimeline {
    /// Windows of `window_ns` from `start_ns`, for `block_size` blocks.
    pub fn new(window_ns: u64, start_ns: u64, block_size: u64) -> Self {
        HitTimeline { window_ns: window_ns.max(1), start_ns, block_size, windows: Vec::new() }
    }

    #[inline]
    fn record(&mut self, time_ns: u64, distance: Option<u32>) {
        let w = (time_ns.saturating_sub(self.start_ns) / self.window_ns) as usize;
        if w >= self.windows.len() {
            self.windows.resize(w + 1, [0; 66]);
        }
        let bucket = match distance {
            Some(d) => (32 - d.leading_zeros()) as usize,
            None => 65,
        };
        self.windows[w][bucket] += 1;
    }

    /// Number of windows.
    pub fn windows(&self) -> usize {
        self.windows.len()
    }

    /// The largest power-of-two number of blocks not above `cache_bytes`,
    /// in bytes: the size [`HitTimeline::hit_ratios`] reports for it.
    pub fn effective_size(&self, cache_bytes: u64) -> u64 {
        let blocks = (cache_bytes / self.block_size).max(1);
        (1u64 << (63 - blocks.leading_zeros())) * self.block_size
    }

    /// Block accesses and hit ratio (None in an empty window) per window of
    /// a cache of [`HitTimeline::effective_size`]`(cache_bytes)`.
    pub fn hit_ratios(&self, cache_bytes: u64) -> Vec<(u64, Option<f64>)> {
        let k = (63 - (cache_bytes / self.block_size).max(1).leading_zeros()) as usize;
        self.windows
            .iter()
            .map(|h| {
                let accesses: u64 = h.iter().sum();
                let hits: u64 = h[..=k.min(64)].iter().sum();
                (accesses, (accesses > 0).then(|| hits as f64 / accesses as f64))
            })
            .collect()
    }
}

/// Distances of one stream as they are recorded: reads and writes apart,
/// so each access increments one counter (a cache miss on a large trace),
/// not two; [`BlockHistograms`] are made from them at the end.
#[derive(Clone, Debug, Default)]
struct ByOp {
    reads: DenseHistogram,
    writes: DenseHistogram,
}

impl ByOp {
    #[inline]
    fn record(&mut self, is_read: bool, distance: Option<u32>) {
        if is_read {
            self.reads.record(distance);
        } else {
            self.writes.record(distance);
        }
    }

    fn into_histograms(self) -> BlockHistograms {
        let mut all = self.writes;
        all.merge(&self.reads);
        BlockHistograms { all, reads: self.reads }
    }
}

/// Builds exact block-mode LRU curves in one pass over the requests.
#[derive(Debug)]
pub struct ExactBlockMrc {
    shift: u32,
    whole: BlockStack,
    whole_hist: ByOp,
    per_volume: Option<Vec<(BlockStack, ByOp)>>,
    timeline: Option<HitTimeline>,
}

impl ExactBlockMrc {
    /// A builder for `block_size` blocks (a power of two); `per_volume` also
    /// keeps one curve per volume (each volume alone in its own cache).
    pub fn new(block_size: u64, per_volume: bool) -> Self {
        assert!(block_size.is_power_of_two());
        ExactBlockMrc {
            shift: block_size.trailing_zeros(),
            whole: BlockStack::new(),
            whole_hist: ByOp::default(),
            per_volume: per_volume.then(Vec::new),
            timeline: None,
        }
    }

    /// Also count, per time window, the hits of the caches of `timeline`
    /// (whole trace, all accesses).
    pub fn with_timeline(mut self, timeline: HitTimeline) -> Self {
        self.timeline = Some(timeline);
        self
    }

    /// Pre-size the whole-trace stack for about `distinct` blocks.
    pub fn reserve(mut self, distinct: usize) -> Self {
        self.whole = BlockStack::with_capacity(distinct);
        self
    }

    /// Feed one request.
    #[inline]
    pub fn request(&mut self, r: &WorkloadRequest) {
        if r.op == Op::Trim {
            self.trim(r);
            return;
        }
        let Some((first, last)) = r.blocks(self.shift) else { return };
        let is_read = r.op == Op::Read;
        let volume = r.volume;
        if let Some(vols) = self.per_volume.as_mut() {
            if vols.len() <= volume as usize {
                vols.resize_with(volume as usize + 1, Default::default);
            }
        }
        for block in first..=last {
            let d = self.whole.access(VolumeBlock { volume, block });
            self.whole_hist.record(is_read, d);
            if let Some(t) = self.timeline.as_mut() {
                t.record(r.time_ns, d);
            }
            if let Some(vols) = self.per_volume.as_mut() {
                let (stack, hist) = &mut vols[volume as usize];
                hist.record(is_read, stack.access(VolumeBlock { volume, block }));
            }
        }
    }

    fn trim(&mut self, r: &WorkloadRequest) {
        let Some((first, last)) = r.whole_blocks(self.shift) else { return };
        let volume = r.volume;
        let span = last - first + 1;
        if span <= self.whole.len() as u64 {
            for block in first..=last {
                self.whole.remove(&VolumeBlock { volume, block });
            }
        } else {
            self.whole.remove_where(|k| k.volume == volume && (first..=last).contains(&k.block));
        }
        if let Some(stack) = self.per_volume.as_mut().and_then(|v| v.get_mut(volume as usize)) {
            let stack = &mut stack.0;
            if span <= stack.len() as u64 {
                for block in first..=last {
                    stack.remove(&VolumeBlock { volume, block });
                }
            } else {
                stack.remove_where(|k| (first..=last).contains(&k.block));
            }
        }
    }

    /// The curves.
    pub fn finish(self) -> ExactMrc {
        ExactMrc {
            block_size: 1 << self.shift,
            whole: self.whole_hist.into_histograms(),
            volumes: self
                .per_volume
                .map(|v| v.into_iter().map(|(_, h)| h.into_histograms()).collect())
                .unwrap_or_default(),
            timeline: self.timeline,
        }
    }
}

/// Exact block-mode LRU curves: histograms that answer any cache size.
#[derive(Clone, Debug)]
pub struct ExactMrc {
    /// Block size.
    pub block_size: u64,
    /// The whole trace in one shared cache.
    pub whole: BlockHistograms,
    /// Each volume alone (empty unless asked for).
    pub volumes: Vec<BlockHistograms>,
    /// Hits over time, when asked for.
    pub timeline: Option<HitTimeline>,
}

impl ExactMrc {
    /// The whole-trace curve at `sizes` (bytes; rounded down to whole blocks,
    /// as the engine sizes its cache).
    pub fn curve(&self, sizes: &[u64], counted: Counted) -> Vec<CurvePoint> {
        curve_of(self.whole.of(counted), self.block_size, sizes)
    }

    /// Volume `v`'s curve alone.
    pub fn volume_curve(&self, v: usize, sizes: &[u64], counted: Counted) -> Vec<CurvePoint> {
        self.volumes.get(v).map(|h| curve_of(h.of(counted), self.block_size, sizes)).unwrap_or_default()
    }

    /// Stack distances (distinct blocks since the previous access) of read
    /// and of write block accesses: the reuse distance in distinct blocks.
    pub fn distinct_reuse(&self) -> [DenseHistogram; 2] {
        let reads = self.whole.reads.clone();
        let mut writes = self.whole.all.clone();
        for (w, r) in writes.counts.iter_mut().zip(&reads.counts) {
            *w -= r;
        }
        writes.cold -= reads.cold;
        [reads, writes]
    }

    /// Distinct blocks of the whole trace, in bytes.
    pub fn footprint_bytes(&self) -> u64 {
        self.whole.footprint_blocks() * self.block_size
    }
}

fn curve_of(hist: &DenseHistogram, block_size: u64, sizes: &[u64]) -> Vec<CurvePoint> {
    let capacities: Vec<u64> = sizes.iter().map(|&s| s / block_size).collect();
    let hits = hist.hits_at(&capacities);
    let accesses = hist.accesses() as f64;
    sizes.iter().zip(hits).map(|(&s, h)| CurvePoint::new(s, h as f64, accesses)).collect()
}

/// Builds exact object-mode LRU curves (variable sizes, byte capacities).
#[derive(Debug)]
pub struct ExactObjectMrc {
    whole: StackTracker<VolumeBlock, u64>,
    all: LogHistogram,
    reads: LogHistogram,
}

impl Default for ExactObjectMrc {
    fn default() -> Self {
        ExactObjectMrc {
            whole: StackTracker::new(),
            all: LogHistogram::new(OBJECT_DISTANCE_BITS),
            reads: LogHistogram::new(OBJECT_DISTANCE_BITS),
        }
    }
}

impl ExactObjectMrc {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed one request.
    #[inline]
    pub fn request(&mut self, r: &WorkloadRequest) {
        let key = VolumeBlock { volume: r.volume, block: r.offset };
        if r.op == Op::Trim {
            self.whole.remove(&key);
            return;
        }
        // The object hits when it and everything above it fit; its size in
        // the cache is the size it had when last accessed.
        match self.whole.access(key, r.len) {
            Some((above, old)) => {
                let needed = above.saturating_add(old);
                self.all.record(needed, 1.0);
                if r.op == Op::Read {
                    self.reads.record(needed, 1.0);
                }
            }
            None => {
                self.all.cold += 1.0;
                if r.op == Op::Read {
                    self.reads.cold += 1.0;
                }
            }
        }
    }

    /// Total bytes of the distinct objects on the stack at the end.
    pub fn footprint_bytes(&self) -> u64 {
        self.whole.total_weight()
    }

    /// The curve at `sizes` (bytes).
    pub fn curve(&self, sizes: &[u64], counted: Counted) -> Vec<CurvePoint> {
        let hist = match counted {
            Counted::All => &self.all,
            Counted::Reads => &self.reads,
        };
        let hits = hist.weight_at_most(sizes);
        let total = hist.total();
        sizes.iter().zip(hits).map(|(&s, h)| CurvePoint::new(s, h, total)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(volume: u32, op: Op, block: u64, blocks: u64) -> WorkloadRequest {
        WorkloadRequest { time_ns: 0, offset: block * 4096, len: blocks * 4096, volume, op }
    }

    #[test]
    fn hand_worked_curve() {
        // Blocks: 0 1 2 0 1 | read 0 | write 3 | read 2.
        // Distances: 0,1,2 cold; 0 -> 2; 1 -> 2; 0 -> 1; 3 cold; 2 -> 3.
        let mut b = ExactBlockMrc::new(4096, true);
        for r in [
            req(0, Op::Write, 0, 3),
            req(0, Op::Read, 0, 2),
            req(0, Op::Read, 0, 1),
            req(0, Op::Write, 3, 1),
            req(0, Op::Read, 2, 1),
        ] {
            b.request(&r);
        }
        let m = b.finish();
        let sizes = [4096, 2 * 4096, 3 * 4096, 4 * 4096, 4 * 4096 + 100];
        let hits: Vec<f64> =
            m.curve(&sizes, Counted::All).iter().map(|p| p.hit_ratio.unwrap() * 8.0).collect();
        let expect = [0.0, 1.0, 3.0, 4.0, 4.0];
        for (h, e) in hits.iter().zip(expect) {
            assert!((h - e).abs() < 1e-9, "{hits:?}");
        }
        // Reads: 0(d2) 1(d2) 0(d1) 2(d3): 4 reads.
        let reads: Vec<f64> =
            m.curve(&sizes, Counted::Reads).iter().map(|p| p.hit_ratio.unwrap() * 4.0).collect();
        for (h, e) in reads.iter().zip([0.0, 1.0, 3.0, 4.0, 4.0]) {
            assert!((h - e).abs() < 1e-9, "{reads:?}");
        }
        assert_eq!(m.footprint_bytes(), 4 * 4096);
        assert_eq!(m.volume_curve(0, &sizes, Counted::All), m.curve(&sizes, Counted::All));
    }

    #[test]
    fn trims_make_the_next_access_cold_and_volumes_are_separate() {
        let mut b = ExactBlockMrc::new(4096, true);
        b.request(&req(0, Op::Read, 0, 1));
        b.request(&req(1, Op::Read, 0, 1));
        b.request(&req(0, Op::Trim, 0, 1));
        b.request(&req(0, Op::Read, 0, 1));
        b.request(&req(1, Op::Read, 0, 1));
        let m = b.finish();
        // Volume 1's block 0 is a reuse at distance 1 (volume 0's block 0 is above it).
        assert_eq!(m.whole.all.cold, 3);
        assert_eq!(m.whole.all.counts[1], 1);
        assert_eq!(m.volumes[1].all.counts[0], 1);
        assert_eq!(m.volumes[0].all.cold, 2);
    }

    #[test]
    fn object_mode_counts_bytes() {
        let mut b = ExactObjectMrc::new();
        let obj =
            |offset: u64, len: u64| WorkloadRequest { time_ns: 0, offset, len, volume: 0, op: Op::Read };
        for r in [obj(0, 1000), obj(1 << 20, 3000), obj(0, 1000), obj(1 << 20, 3000)] {
            b.request(&r);
        }
        // Object 0 needs 3000 + 1000 bytes; object 1 needs 1000 + 3000.
        let c = b.curve(&[3999, 4000], Counted::All);
        assert_eq!(c[0].hit_ratio, Some(0.0));
        assert_eq!(c[1].hit_ratio, Some(0.5));
        assert_eq!(b.footprint_bytes(), 4000);
    }

    #[test]
    fn dense_sizes_reach_the_footprint() {
        let s = dense_sizes(1000 * 4096, 4096);
        assert_eq!(s.first(), Some(&4096));
        assert_eq!(s.last(), Some(&(1000 * 4096)));
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        assert!(dense_sizes(0, 4096).is_empty());
    }
}
