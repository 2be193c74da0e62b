//! Demand measured over one tumbling time window of one volume.
//!
//! A [`DemandTracker`] counts, for the window in progress, how often each
//! block was accessed, and keeps a running count of the blocks that meet its
//! [`DemandMeasure`]. Its table holds only the current window's distinct
//! blocks and is cleared (its memory kept for the next window) when the
//! window ends, so memory is bounded by the largest single window's working
//! set (16 bytes per 16-block chunk touched, so 1 to 16 bytes per block,
//! plus the table's slack), however long the trace
//! (memory a burst needed is kept for the next windows, and given back after
//! eight windows that needed far less).
//! The caller decides where windows begin and end (trace time in the
//! simulator, wall time in the server).

use cloudcache_trace::block_hash::hash_block;
use hashbrown::{HashSet, HashTable};
use rustc_hash::FxBuildHasher;

/// Blocks per table entry: a run of neighbouring blocks shares one entry,
/// so a request costs one lookup per 16 blocks it spans, not one per block.
const CHUNK_BLOCKS: u64 = 16;
const CHUNK_SHIFT: u32 = CHUNK_BLOCKS.trailing_zeros();

/// Bits of each block's saturating access count inside an entry.
const COUNT_BITS: u32 = 4;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

/// Windows in a row a table may stay more than 4x oversized before its
/// memory is given back.
const SHRINK_AFTER_WINDOWS: u32 = 8;

/// Largest N of RWS_N a tracker can count (the count saturates at N + 1).
pub const MAX_REUSES: u32 = COUNT_MASK as u32 - 1;

/// The access counts of one 16-block chunk of a window.
#[derive(Clone, Copy, Debug)]
struct Chunk {
    /// Block number / 16.
    id: u64,
    /// Sixteen 4-bit saturating counts, block `16 * id + i` at bits `4i..4i+4`.
    counts: u64,
}

/// The lowest bit of every count in a chunk.
const LOW_BITS: u64 = 0x1111_1111_1111_1111;

/// Low bit of each count in `counts` that equals `value`, all else 0.
#[inline]
fn counts_equal(counts: u64, value: u64) -> u64 {
    let differ = counts ^ (value * LOW_BITS);
    !(differ | differ >> 1 | differ >> 2 | differ >> 3) & LOW_BITS
}

/// One access to each block at `positions` of a chunk whose counts are
/// `counts`, for a measure that wants `wanted` accesses (at most 15). Returns
/// the new counts, the blocks seen for the first time and the blocks that
/// reached `wanted`. Counts saturate at `wanted`, so a count below it can be
/// incremented in place without carrying into the next one: all positions
/// are done at once, with no loop over blocks.
#[inline]
fn count_reuses(counts: u64, positions: std::ops::Range<u32>, wanted: u32) -> (u64, u64, u64) {
    let width = (positions.end - positions.start) * COUNT_BITS;
    let span = if width == 64 { u64::MAX } else { ((1u64 << width) - 1) << (positions.start * COUNT_BITS) };
    let wanted = u64::from(wanted);
    let growing = span & LOW_BITS & !counts_equal(counts, wanted);
    let first_seen = span & counts_equal(counts, 0);
    let reaching = span & counts_equal(counts, wanted - 1);
    (counts + growing, u64::from(first_seen.count_ones()), u64::from(reaching.count_ones()))
}

/// What a volume's demand is taken to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DemandMeasure {
    /// RWS_N: distinct blocks accessed at least `n + 1` times in the window
    /// (reused at least `n` times). `n = 0` is the working set (WS).
    Rws {
        /// Reuses required.
        n: u32,
    },
    /// HEC's touch count: distinct blocks of the window whose region (of
    /// `2^region_shift` blocks) had been touched before, at any time in the
    /// volume's history. This is what HEC would admit, so it is the demand
    /// HEC's allocation follows.
    TouchCount {
        /// log2 of blocks per region (10 for 4 MiB regions of 4 KiB blocks).
        region_shift: u32,
    },
}

/// The demand of one finished window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WindowDemand {
    /// Distinct blocks accessed (the working set size, WSS).
    pub working_set_blocks: u64,
    /// Distinct blocks that met the measure (RWSS_N, or HEC's count).
    pub demand_blocks: u64,
}

/// One volume's demand in the window in progress.
#[derive(Clone, Debug)]
pub struct DemandTracker {
    measure: DemandMeasure,
    /// One entry per 16-block chunk touched in this window, holding a 4-bit
    /// count per block (RWS: accesses, saturating at n + 1; touch count: 1
    /// once counted, 0 while its region was new).
    chunks: HashTable<Chunk>,
    /// Distinct blocks accessed in this window.
    distinct_blocks: u64,
    demand_blocks: u64,
    /// Windows in a row whose table was far larger than needed.
    oversized_windows: u32,
    /// Regions ever touched (touch count only: all of history, as HEC's
    /// bitmap; one entry per region, so 1/1024 of the footprint).
    touched_regions: HashSet<u64, FxBuildHasher>,
}

impl DemandTracker {
    /// A tracker for `measure`, with nothing seen yet.
    pub fn new(measure: DemandMeasure) -> Self {
        DemandTracker {
            measure,
            chunks: HashTable::new(),
            distinct_blocks: 0,
            demand_blocks: 0,
            oversized_windows: 0,
            touched_regions: HashSet::default(),
        }
    }

    /// The measure this tracker counts.
    pub fn measure(&self) -> DemandMeasure {
        self.measure
    }

    /// Blocks `first .. first + count` were accessed (read or written).
    #[inline]
    pub fn access(&mut self, first: u64, count: u64) {
        let end = first.saturating_add(count);
        let mut block = first;
        while block < end {
            let id = block >> CHUNK_SHIFT;
            let chunk_end = ((id + 1) << CHUNK_SHIFT).min(end);
            let positions = (block - (id << CHUNK_SHIFT)) as u32..(chunk_end - (id << CHUNK_SHIFT)) as u32;
            let mut counts = *self.chunk(id);
            let (mut distinct, mut demand) = (0, 0);
            match self.measure {
                DemandMeasure::Rws { n } => {
                    (counts, distinct, demand) = count_reuses(counts, positions, n.min(MAX_REUSES) + 1);
                }
                DemandMeasure::TouchCount { region_shift } => {
                    for position in positions {
                        let shift = position * COUNT_BITS;
                        let b = (id << CHUNK_SHIFT) + u64::from(position);
                        let region_was_touched = !self.touched_regions.insert(b >> region_shift);
                        // Bit 0: accessed this window; bit 1: counted.
                        let state = (counts >> shift) & COUNT_MASK;
                        distinct += u64::from(state == 0);
                        let mut new_state = state | 1;
                        if state & 2 == 0 && region_was_touched {
                            new_state |= 2;
                            demand += 1;
                        }
                        counts = (counts & !(COUNT_MASK << shift)) | (new_state << shift);
                    }
                }
            }
            *self.chunk(id) = counts;
            self.distinct_blocks += distinct;
            self.demand_blocks += demand;
            block = chunk_end;
        }
    }

    /// The counts of chunk `id`, inserted as zeros if new.
    #[inline]
    fn chunk(&mut self, id: u64) -> &mut u64 {
        &mut self
            .chunks
            .entry(hash_block(0, id), |c| c.id == id, |c| hash_block(0, c.id))
            .or_insert(Chunk { id, counts: 0 })
            .into_mut()
            .counts
    }

    /// Distinct blocks accessed so far in this window.
    pub fn working_set_blocks(&self) -> u64 {
        self.distinct_blocks
    }

    /// Blocks that met the measure so far in this window.
    pub fn demand_blocks(&self) -> u64 {
        self.demand_blocks
    }

    /// End the window: return its demand and start an empty one.
    pub fn end_window(&mut self) -> WindowDemand {
        let finished =
            WindowDemand { working_set_blocks: self.working_set_blocks(), demand_blocks: self.demand_blocks };
        // Keep the table's memory for the next windows: bursts (backups)
        // recur, and regrowing costs a rehash per doubling. Give it back
        // only after several windows in a row far below it, so one burst
        // does not pin its memory for the rest of the run.
        let len = self.chunks.len();
        self.chunks.clear();
        if self.chunks.capacity() > 4 * len.max(1 << 12) {
            self.oversized_windows += 1;
            if self.oversized_windows >= SHRINK_AFTER_WINDOWS {
                self.chunks.shrink_to(len, |c| hash_block(0, c.id));
                self.oversized_windows = 0;
            }
        } else {
            self.oversized_windows = 0;
        }
        self.demand_blocks = 0;
        self.distinct_blocks = 0;
        finished
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(measure: DemandMeasure, blocks: &[u64]) -> WindowDemand {
        let mut t = DemandTracker::new(measure);
        for &b in blocks {
            t.access(b, 1);
        }
        t.end_window()
    }

    #[test]
    fn rws_counts_blocks_reused_n_times() {
        // a b a c a b d: a x3, b x2, c x1, d x1.
        let trace = [1, 2, 1, 3, 1, 2, 4];
        let ws = run(DemandMeasure::Rws { n: 0 }, &trace);
        assert_eq!(ws, WindowDemand { working_set_blocks: 4, demand_blocks: 4 });
        assert_eq!(run(DemandMeasure::Rws { n: 1 }, &trace).demand_blocks, 2);
        assert_eq!(run(DemandMeasure::Rws { n: 2 }, &trace).demand_blocks, 1);
        assert_eq!(run(DemandMeasure::Rws { n: 3 }, &trace).demand_blocks, 0);
    }

    #[test]
    fn a_request_counts_each_of_its_blocks_once() {
        let mut t = DemandTracker::new(DemandMeasure::Rws { n: 1 });
        t.access(10, 4); // blocks 10..14
        t.access(12, 4); // 12..16: 12 and 13 reused
        assert_eq!((t.working_set_blocks(), t.demand_blocks()), (6, 2));
    }

    #[test]
    fn agrees_with_a_plain_count_across_chunk_boundaries() {
        // Pseudo-random requests of 1-40 blocks over 300 blocks (chunks of 16
        // are crossed all the time), checked against a per-block count.
        for n in [0u32, 1, 2, 5] {
            let mut t = DemandTracker::new(DemandMeasure::Rws { n });
            let mut counts = std::collections::HashMap::new();
            let mut x: u64 = 12345;
            for _ in 0..2000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let first = (x >> 33) % 300;
                let len = 1 + (x >> 20) % 40;
                t.access(first, len);
                for b in first..first + len {
                    *counts.entry(b).or_insert(0u32) += 1;
                }
            }
            let want = WindowDemand {
                working_set_blocks: counts.len() as u64,
                demand_blocks: counts.values().filter(|&&c| c > n).count() as u64,
            };
            assert_eq!(t.end_window(), want, "n = {n}");
        }
    }

    #[test]
    fn a_chunk_counts_every_position_at_once() {
        // Counts (position 0 first) 0, 1, 2, 2, 0: wanted 2 (RWS_1).
        let counts = 0x0_2210;
        let (after, first_seen, reaching) = count_reuses(counts, 0..5, 2);
        assert_eq!((after, first_seen, reaching), (0x1_2221, 2, 1));
        // Only positions 1..3: the 1 reaches 2, the saturated 2 stays.
        assert_eq!(count_reuses(counts, 1..3, 2), (0x0_2220, 0, 1));
        // A whole chunk of zeros, wanted 1 (WS): every block counts.
        assert_eq!(count_reuses(0, 0..16, 1), (LOW_BITS, 16, 16));
        // Saturated at 15 stays at 15.
        assert_eq!(count_reuses(u64::MAX, 0..16, 15), (u64::MAX, 0, 0));
    }

    #[test]
    fn windows_do_not_carry_reuse_over() {
        let mut t = DemandTracker::new(DemandMeasure::Rws { n: 1 });
        t.access(7, 1);
        assert_eq!(t.end_window(), WindowDemand { working_set_blocks: 1, demand_blocks: 0 });
        t.access(7, 1);
        assert_eq!(t.end_window(), WindowDemand { working_set_blocks: 1, demand_blocks: 0 });
        let idle = t.end_window();
        assert_eq!(idle, WindowDemand::default());
    }

    #[test]
    fn touch_count_remembers_regions_across_windows() {
        // Regions of 4 blocks (shift 2).
        let mut t = DemandTracker::new(DemandMeasure::TouchCount { region_shift: 2 });
        t.access(0, 1); // region 0 new: not counted
        t.access(1, 1); // region 0 touched before: counted
        t.access(1, 1); // counted once
        t.access(8, 1); // region 2 new
        assert_eq!(t.end_window(), WindowDemand { working_set_blocks: 3, demand_blocks: 1 });
        t.access(0, 1); // region 0 remembered from the last window
        t.access(9, 1); // region 2 too
        t.access(0, 1);
        assert_eq!(t.end_window(), WindowDemand { working_set_blocks: 2, demand_blocks: 2 });
    }
}
