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
                    let wanted = u64::from(n.min(MAX_REUSES) + 1);
                    for position in positions {
                        let shift = position * COUNT_BITS;
                        let seen = (counts >> shift) & COUNT_MASK;
                        if seen < wanted {
                            counts += 1 << shift;
                            distinct += u64::from(seen == 0);
                            demand += u64::from(seen + 1 == wanted);
                        }
                    }
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
