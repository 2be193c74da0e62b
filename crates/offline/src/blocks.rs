//! The block-access stream offline policies replay, and the
//! future-knowledge annotation pass over it.
//!
//! Requests are split into cache blocks, each (volume, block number) gets a
//! dense id, and the annotation pass records, for every access, the position
//! of the block's next access if that access is a read, or [`INF`] when the
//! block is next written, trimmed or never touched again (seed 002's
//! next_ref: a block whose next reference is a write need not be cached).
//! Positions in the stream are the offline policies' clock: unique, so no
//! two cached blocks ever tie.

use cloudcache_trace::{Op, Request, RequestSource};
use rustc_hash::FxHashMap;

use crate::OfflineError;

/// "No next read": never read again before being overwritten or trimmed.
pub const INF: u32 = u32::MAX;
/// Placeholder before [`BlockTrace::annotate`] has run.
const UNANNOTATED: u32 = u32::MAX - 1;

const OP_SHIFT: u32 = 30;
const BLOCK_MASK: u32 = (1 << OP_SHIFT) - 1;
/// Trims larger than this many blocks visit the known blocks instead of the range.
const TRIM_SCAN_LIMIT: u64 = 1 << 22;

/// One block access: 8 bytes, block id and op packed in one word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockAccess {
    word: u32,
    next_read: u32,
}

impl BlockAccess {
    /// An access to dense block id `block` (below 2^30).
    pub fn new(block: u32, op: Op) -> Self {
        let code = match op {
            Op::Read => 0,
            Op::Write => 1,
            Op::Trim => 2,
        };
        BlockAccess { word: block | (code << OP_SHIFT), next_read: UNANNOTATED }
    }

    /// Dense block id.
    pub fn block(self) -> u32 {
        self.word & BLOCK_MASK
    }

    /// Read, write or trim.
    pub fn op(self) -> Op {
        match self.word >> OP_SHIFT {
            0 => Op::Read,
            1 => Op::Write,
            _ => Op::Trim,
        }
    }

    /// Position of the block's next access if it is a read, else [`INF`].
    /// Meaningful only on an annotated trace.
    pub fn next_read(self) -> u32 {
        self.next_read
    }
}

/// A trace as a stream of block accesses.
#[derive(Clone, Debug)]
pub struct BlockTrace {
    accesses: Vec<BlockAccess>,
    distinct_blocks: u32,
    block_size: u64,
    requests: u64,
    span_ns: Option<u64>,
    annotated: bool,
}

impl BlockTrace {
    /// Split every request of `source` into `block_size` blocks (a power of
    /// two). `progress` is told about requests read.
    pub fn from_source(
        source: &mut dyn RequestSource,
        block_size: u64,
        progress: &dyn Fn(u64),
    ) -> Result<Self, OfflineError> {
        if !block_size.is_power_of_two() {
            return Err(OfflineError::Config(format!("block size {block_size} is not a power of two")));
        }
        let shift = block_size.trailing_zeros();
        let mut ids: FxHashMap<(u32, u64), u32> = FxHashMap::default();
        let mut accesses = Vec::new();
        let mut req = Request::default();
        let (mut first, mut last, mut requests) = (u64::MAX, 0u64, 0u64);
        while source.next_request(&mut req)? {
            requests += 1;
            first = first.min(req.time_ns);
            last = last.max(req.time_ns);
            if requests % 65_536 == 0 {
                progress(65_536);
            }
            if req.len == 0 {
                continue;
            }
            let (start, end) = (req.offset >> shift, (req.end() - 1) >> shift);
            if req.op == Op::Trim {
                // Only blocks already seen matter: an untouched block has nothing cached.
                if end - start < TRIM_SCAN_LIMIT {
                    for n in start..=end {
                        if let Some(&id) = ids.get(&(req.volume, n)) {
                            accesses.push(BlockAccess::new(id, Op::Trim));
                        }
                    }
                } else {
                    let mut hit: Vec<u32> = ids
                        .iter()
                        .filter(|((v, n), _)| *v == req.volume && (start..=end).contains(n))
                        .map(|(_, &id)| id)
                        .collect();
                    hit.sort_unstable();
                    accesses.extend(hit.into_iter().map(|id| BlockAccess::new(id, Op::Trim)));
                }
                continue;
            }
            for n in start..=end {
                let next_id = ids.len() as u32;
                let id = *ids.entry((req.volume, n)).or_insert(next_id);
                if id > BLOCK_MASK {
                    return Err(OfflineError::TooLarge(format!(
                        "the trace touches more than 2^30 distinct {block_size}-byte blocks"
                    )));
                }
                accesses.push(BlockAccess::new(id, req.op));
            }
            if accesses.len() >= UNANNOTATED as usize {
                return Err(OfflineError::TooLarge(format!(
                    "the trace has more than {} block accesses",
                    UNANNOTATED - 1
                )));
            }
        }
        progress(requests % 65_536);
        let span_ns = (source.has_timestamps() && requests > 0).then(|| last - first);
        Ok(BlockTrace {
            accesses,
            distinct_blocks: ids.len() as u32,
            block_size,
            requests,
            span_ns,
            annotated: false,
        })
    }

    /// A trace from block accesses directly (tests, hand-worked examples):
    /// `(block, op)` pairs with dense ids, and a duration for EPBPD.
    pub fn from_accesses(accesses: &[(u32, Op)], block_size: u64, span_ns: Option<u64>) -> Self {
        let distinct_blocks = accesses.iter().map(|&(b, _)| b + 1).max().unwrap_or(0);
        BlockTrace {
            accesses: accesses.iter().map(|&(b, op)| BlockAccess::new(b, op)).collect(),
            distinct_blocks,
            block_size,
            requests: accesses.len() as u64,
            span_ns,
            annotated: false,
        }
    }

    /// The future-knowledge pass: one backward sweep filling every access's
    /// next read.
    pub fn annotate(&mut self) {
        let blocks = self.distinct_blocks as usize;
        // Position of each block's next access, and whether it is a read.
        let mut next = vec![INF; blocks];
        let mut next_is_read = vec![false; blocks];
        for (i, access) in self.accesses.iter_mut().enumerate().rev() {
            let b = access.block() as usize;
            access.next_read = if next_is_read[b] { next[b] } else { INF };
            next[b] = i as u32;
            next_is_read[b] = access.op() == Op::Read;
        }
        self.annotated = true;
    }

    /// Whether [`BlockTrace::annotate`] has run.
    pub fn is_annotated(&self) -> bool {
        self.annotated
    }

    /// The accesses in trace order.
    pub fn accesses(&self) -> &[BlockAccess] {
        &self.accesses
    }

    /// Distinct blocks touched (reads and writes).
    pub fn distinct_blocks(&self) -> u32 {
        self.distinct_blocks
    }

    /// Working-set size: distinct blocks times the block size.
    pub fn working_set_bytes(&self) -> u64 {
        u64::from(self.distinct_blocks) * self.block_size
    }

    /// Cache block size.
    pub fn block_size(&self) -> u64 {
        self.block_size
    }

    /// Requests read from the source.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Block reads.
    pub fn read_accesses(&self) -> u64 {
        self.accesses.iter().filter(|a| a.op() == Op::Read).count() as u64
    }

    /// Trace duration in days, when the trace has timestamps.
    pub fn days(&self) -> Option<f64> {
        self.span_ns.filter(|&ns| ns > 0).map(|ns| ns as f64 / 86_400e9)
    }

    /// Replicate the stream `times` times on disjoint blocks, one copy after
    /// the other in time (the benchmark's x20 input).
    pub fn replicate(&self, times: u32) -> Self {
        let mut accesses = Vec::with_capacity(self.accesses.len() * times as usize);
        for k in 0..times {
            let base = k * self.distinct_blocks;
            accesses.extend(self.accesses.iter().map(|a| BlockAccess::new(a.block() + base, a.op())));
        }
        BlockTrace {
            accesses,
            distinct_blocks: self.distinct_blocks * times,
            block_size: self.block_size,
            requests: self.requests * u64::from(times),
            span_ns: self.span_ns.map(|ns| ns * u64::from(times)),
            annotated: false,
        }
    }
}
