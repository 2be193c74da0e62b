//! What the I/O looks like, in the distributions seed 004 (chapter 5)
//! reports: request sizes and the read/write mix, reuse distances (in time,
//! in intervening block accesses, and in distinct blocks), run lengths,
//! jump distances, block popularity, and an LBA x time heat map.
//!
//! Definitions (each a choice where the seed is ambiguous; see
//! `docs/analysis.md`):
//! * a request of blocks `b..=e` is the block accesses `b, b+1, ..., e`;
//! * **reuse distance** of a block access: since the previous access to the
//!   same block of the same volume (by a read or a write), the time elapsed,
//!   the block accesses in between (seed 004's "number of accesses between"),
//!   and the distinct blocks in between (the LRU stack distance, computed by
//!   [`crate::mrc`]); filed under the op of the re-access;
//! * **run length**: in each volume's read stream and write stream
//!   separately, a maximal sequence of block accesses `b_{i+1} = b_i + 1`;
//!   so a run spans requests, and requests of the other op in between do not
//!   break it;
//! * **jump distance**: between successive requests of a volume (reads and
//!   writes together), 0 when the next starts right after the previous one
//!   ends, otherwise `|first_next - last_prev|` in blocks.

use cloudcache_trace::Op;
use hashbrown::HashMap;
use rustc_hash::FxBuildHasher;
use serde::Serialize;

use crate::mrc::VolumeBlock;
use crate::workload::Workload;

/// Counts by power-of-two bucket: bucket 0 holds the value 0, bucket `k`
/// the values in `[2^(k-1), 2^k)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Log2Counts(pub Vec<u64>);

impl Log2Counts {
    /// Count one value.
    #[inline]
    pub fn add(&mut self, value: u64) {
        self.add_n(value, 1);
    }

    /// Count `n` copies of a value.
    #[inline]
    pub fn add_n(&mut self, value: u64, n: u64) {
        let k = (64 - value.leading_zeros()) as usize;
        if k >= self.0.len() {
            self.0.resize(k + 1, 0);
        }
        self.0[k] += n;
    }

    /// Values counted.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// `(lowest, highest)` value of bucket `k`.
    pub fn bounds(k: usize) -> (u64, u64) {
        match k {
            0 => (0, 0),
            64 => (1 << 63, u64::MAX),
            k => (1 << (k - 1), (1 << k) - 1),
        }
    }
}

/// Two distributions side by side, as the seed plots them.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReadWrite<T> {
    /// Of reads.
    pub reads: T,
    /// Of writes.
    pub writes: T,
}

/// One row of a power-of-two distribution (for JSON and CSV).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct BucketRow {
    /// Smallest value in the bucket.
    pub from: u64,
    /// Largest value in the bucket.
    pub to: u64,
    /// Count among reads.
    pub reads: u64,
    /// Count among writes.
    pub writes: u64,
}

/// Rows of a read/write pair of power-of-two distributions, empty buckets
/// at either end dropped.
pub fn bucket_rows(rw: &ReadWrite<Log2Counts>) -> Vec<BucketRow> {
    let n = rw.reads.0.len().max(rw.writes.0.len());
    let get = |c: &Log2Counts, k: usize| c.0.get(k).copied().unwrap_or(0);
    let rows: Vec<BucketRow> = (0..n)
        .map(|k| {
            let (from, to) = Log2Counts::bounds(k);
            BucketRow { from, to, reads: get(&rw.reads, k), writes: get(&rw.writes, k) }
        })
        .collect();
    let first = rows.iter().position(|r| r.reads + r.writes > 0).unwrap_or(rows.len());
    rows[first..].to_vec()
}

/// Requests, bytes and blocks by operation.
#[derive(Clone, Debug, Default, Serialize)]
pub struct OpMix {
    /// Read requests (non-empty).
    pub read_requests: u64,
    /// Write requests (non-empty).
    pub write_requests: u64,
    /// Trim requests.
    pub trim_requests: u64,
    /// Zero-length reads and writes.
    pub empty_requests: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Bytes trimmed.
    pub trim_bytes: u64,
    /// Block accesses by reads.
    pub read_blocks: u64,
    /// Block accesses by writes.
    pub write_blocks: u64,
    /// Fraction of read and write requests that are reads.
    pub read_fraction_requests: Option<f64>,
    /// Fraction of bytes read and written that are read.
    pub read_fraction_bytes: Option<f64>,
}

/// How concentrated accesses are on few blocks.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Popularity {
    /// Distinct blocks accessed.
    pub distinct_blocks: u64,
    /// Blocks accessed exactly once.
    pub blocks_accessed_once: u64,
    /// The most accesses of one block.
    pub max_accesses_per_block: u64,
    /// `(top fraction of blocks, fraction of accesses they take)` at 1, 5,
    /// 10, 20 and 50 %.
    pub top: Vec<TopShare>,
    /// The whole curve: cumulative fraction of accesses against fraction of
    /// blocks, most popular first (up to 200 points).
    pub curve: Vec<(f64, f64)>,
}

/// The top `blocks_fraction` of blocks take `accesses_fraction` of accesses.
#[derive(Clone, Debug, Serialize)]
pub struct TopShare {
    /// Fraction of the distinct blocks (the most accessed ones).
    pub blocks_fraction: f64,
    /// Fraction of all block accesses they receive.
    pub accesses_fraction: f64,
}

/// Block accesses of one volume per (LBA range, time range) cell.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HeatMap {
    /// The volume shown (the busiest).
    pub volume: String,
    /// First block of row 0.
    pub first_block: u64,
    /// Blocks per row.
    pub blocks_per_row: u64,
    /// Start of column 0 (ns; request index when the trace has no timestamps).
    pub start: u64,
    /// Length of a column (ns, or requests).
    pub per_column: u64,
    /// Whether columns are time (true) or request index (false).
    pub time_columns: bool,
    /// `counts[row][column]`: block accesses.
    pub counts: Vec<Vec<u64>>,
}

/// Everything this module measures.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Characterization {
    /// Operation mix.
    pub ops: OpMix,
    /// Request sizes in bytes (reads and writes).
    #[serde(skip)]
    pub request_sizes: ReadWrite<Log2Counts>,
    /// Reuse distance in time (ns).
    #[serde(skip)]
    pub reuse_time_ns: ReadWrite<Log2Counts>,
    /// Reuse distance in intervening block accesses.
    #[serde(skip)]
    pub reuse_accesses: ReadWrite<Log2Counts>,
    /// Block accesses that were reuses (the block was accessed before).
    pub reuses: ReadWrite<u64>,
    /// Run lengths in blocks.
    #[serde(skip)]
    pub run_lengths: ReadWrite<Log2Counts>,
    /// Fraction of runs of one block.
    pub runs_of_one_block: ReadWrite<Option<f64>>,
    /// Longest run (blocks).
    pub longest_run: ReadWrite<u64>,
    /// Jump distances in blocks (reads and writes together; in `reads`).
    #[serde(skip)]
    pub jump_distances: Log2Counts,
    /// Fraction of successive requests that are sequential (jump 0).
    pub sequential_fraction: Option<f64>,
    /// Block popularity.
    pub popularity: Popularity,
    /// LBA x time heat map of the busiest volume.
    #[serde(skip)]
    pub heat_map: HeatMap,
}

/// Per-block state: last access time and index, accesses.
#[derive(Clone, Copy)]
struct BlockState {
    last_time: u64,
    last_index: u64,
    accesses: u32,
}

/// Heat map resolution.
const HEAT_ROWS: usize = 64;
const HEAT_COLUMNS: usize = 120;

/// Measure `w` at `block_size` blocks.
pub fn characterize(w: &Workload, block_size: u64) -> Characterization {
    let shift = block_size.trailing_zeros();
    let mut c = Characterization::default();
    let mut blocks: HashMap<VolumeBlock, BlockState, FxBuildHasher> =
        HashMap::with_capacity_and_hasher(1 << 16, FxBuildHasher);
    // Per (volume, op): last block of the current run and its length.
    let mut runs: HashMap<(u32, bool), (u64, u64), FxBuildHasher> = HashMap::default();
    let mut last_request: HashMap<u32, u64, FxBuildHasher> = HashMap::default();
    let mut sequential = 0u64;
    let mut index = 0u64;
    let mut per_volume_blocks: Vec<u64> = Vec::new();

    for r in &w.requests {
        let Some((first, last)) = r.blocks(shift) else {
            if r.op == Op::Trim {
                c.ops.trim_requests += 1;
            } else {
                c.ops.empty_requests += 1;
            }
            continue;
        };
        let n = last - first + 1;
        match r.op {
            Op::Trim => {
                c.ops.trim_requests += 1;
                c.ops.trim_bytes += r.len;
                continue;
            }
            Op::Read => {
                c.ops.read_requests += 1;
                c.ops.read_bytes += r.len;
                c.ops.read_blocks += n;
                c.request_sizes.reads.add(r.len);
            }
            Op::Write => {
                c.ops.write_requests += 1;
                c.ops.write_bytes += r.len;
                c.ops.write_blocks += n;
                c.request_sizes.writes.add(r.len);
            }
        }
        let is_read = r.op == Op::Read;
        let v = r.volume as usize;
        if v >= per_volume_blocks.len() {
            per_volume_blocks.resize(v + 1, 0);
        }
        per_volume_blocks[v] += n;

        // Jump distance between this volume's successive requests.
        if let Some(prev_last) = last_request.insert(r.volume, last) {
            let jump = if first == prev_last.wrapping_add(1) { 0 } else { first.abs_diff(prev_last) };
            c.jump_distances.add(jump);
            sequential += u64::from(jump == 0);
        }

        // Runs in this volume's stream of this op.
        let run = runs.entry((r.volume, is_read)).or_insert((u64::MAX, 0));
        if run.1 > 0 && first == run.0.wrapping_add(1) {
            run.1 += n;
        } else {
            if run.1 > 0 {
                close_run(&mut c, is_read, run.1);
            }
            run.1 = n;
        }
        run.0 = last;

        // Reuse distances and popularity.
        for block in first..=last {
            let key = VolumeBlock { volume: r.volume, block };
            match blocks.entry(key) {
                hashbrown::hash_map::Entry::Occupied(mut e) => {
                    let s = e.get_mut();
                    let (time, accesses) = if is_read {
                        (&mut c.reuse_time_ns.reads, &mut c.reuse_accesses.reads)
                    } else {
                        (&mut c.reuse_time_ns.writes, &mut c.reuse_accesses.writes)
                    };
                    time.add(r.time_ns.saturating_sub(s.last_time));
                    accesses.add(index - s.last_index - 1);
                    if is_read {
                        c.reuses.reads += 1;
                    } else {
                        c.reuses.writes += 1;
                    }
                    *s = BlockState {
                        last_time: r.time_ns,
                        last_index: index,
                        accesses: s.accesses.saturating_add(1),
                    };
                }
                hashbrown::hash_map::Entry::Vacant(e) => {
                    e.insert(BlockState { last_time: r.time_ns, last_index: index, accesses: 1 });
                }
            }
            index += 1;
        }
    }
    // Close the open runs.
    for (&(_, is_read), &(_, len)) in &runs {
        if len > 0 {
            close_run(&mut c, is_read, len);
        }
    }
    let ones =
        |l: &Log2Counts| (l.total() > 0).then(|| l.0.get(1).copied().unwrap_or(0) as f64 / l.total() as f64);
    c.runs_of_one_block =
        ReadWrite { reads: ones(&c.run_lengths.reads), writes: ones(&c.run_lengths.writes) };
    let jumps = c.jump_distances.total();
    c.sequential_fraction = (jumps > 0).then(|| sequential as f64 / jumps as f64);
    let rw_requests = c.ops.read_requests + c.ops.write_requests;
    c.ops.read_fraction_requests = (rw_requests > 0).then(|| c.ops.read_requests as f64 / rw_requests as f64);
    let rw_bytes = c.ops.read_bytes + c.ops.write_bytes;
    c.ops.read_fraction_bytes = (rw_bytes > 0).then(|| c.ops.read_bytes as f64 / rw_bytes as f64);

    c.popularity = popularity(blocks.values().map(|s| u64::from(s.accesses)).collect());
    let busiest = per_volume_blocks.iter().enumerate().max_by_key(|&(_, n)| *n).map(|(v, _)| v);
    if let Some(v) = busiest {
        c.heat_map = heat_map(w, v as u32, shift);
    }
    c
}

/// Count a finished run of `len` blocks.
fn close_run(c: &mut Characterization, is_read: bool, len: u64) {
    let (lengths, longest) = if is_read {
        (&mut c.run_lengths.reads, &mut c.longest_run.reads)
    } else {
        (&mut c.run_lengths.writes, &mut c.longest_run.writes)
    };
    lengths.add(len);
    *longest = (*longest).max(len);
}

/// Popularity from the access count of every distinct block.
fn popularity(mut counts: Vec<u64>) -> Popularity {
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let total: u64 = counts.iter().sum();
    let n = counts.len();
    if n == 0 || total == 0 {
        return Popularity::default();
    }
    let mut cumulative = Vec::with_capacity(n);
    let mut sum = 0u64;
    for &c in &counts {
        sum += c;
        cumulative.push(sum);
    }
    // Accesses of the top `fraction` of blocks (at least one block).
    let share = |fraction: f64| {
        let k = ((fraction * n as f64).ceil() as usize).clamp(1, n);
        cumulative[k - 1] as f64 / total as f64
    };
    let top = [0.01, 0.05, 0.1, 0.2, 0.5]
        .into_iter()
        .map(|f| TopShare { blocks_fraction: f, accesses_fraction: share(f) })
        .collect();
    let points = n.min(200);
    let curve = (1..=points)
        .map(|i| {
            let k = (i * n).div_ceil(points);
            (k as f64 / n as f64, cumulative[k - 1] as f64 / total as f64)
        })
        .collect();
    Popularity {
        distinct_blocks: n as u64,
        blocks_accessed_once: counts.iter().filter(|&&c| c == 1).count() as u64,
        max_accesses_per_block: counts[0],
        top,
        curve,
    }
}

/// Block accesses of volume `v` over LBA rows and time columns.
fn heat_map(w: &Workload, v: u32, shift: u32) -> HeatMap {
    let reqs = || w.requests.iter().enumerate().filter(|(_, r)| r.volume == v && r.op != Op::Trim);
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    for (_, r) in reqs() {
        if let Some((first, last)) = r.blocks(shift) {
            lo = lo.min(first);
            hi = hi.max(last);
        }
    }
    let time_columns = w.has_timestamps && w.time_span_ns().is_some_and(|(a, b)| b > a);
    let (start, end) = if time_columns {
        w.time_span_ns().expect("checked")
    } else {
        (0, w.requests.len().saturating_sub(1) as u64)
    };
    if lo > hi {
        return HeatMap::default();
    }
    let blocks_per_row = ((hi - lo) / HEAT_ROWS as u64 + 1).max(1);
    let per_column = ((end - start) / HEAT_COLUMNS as u64 + 1).max(1);
    let mut counts = vec![vec![0u64; HEAT_COLUMNS]; HEAT_ROWS];
    for (i, r) in reqs() {
        let Some((first, last)) = r.blocks(shift) else { continue };
        let t = if time_columns { r.time_ns } else { i as u64 };
        let col = ((t.saturating_sub(start) / per_column) as usize).min(HEAT_COLUMNS - 1);
        // Spread the request's blocks over the rows they fall in.
        let mut b = first;
        while b <= last {
            let row = ((b - lo) / blocks_per_row) as usize;
            let row_end = (lo + (row as u64 + 1) * blocks_per_row - 1).min(last);
            counts[row.min(HEAT_ROWS - 1)][col] += row_end - b + 1;
            if row_end == u64::MAX {
                break;
            }
            b = row_end + 1;
        }
    }
    HeatMap {
        volume: w.volume_name(v as usize),
        first_block: lo,
        blocks_per_row,
        start,
        per_column,
        time_columns,
        counts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cloudcache_trace::Request;

    fn block_req(time_ns: u64, op: Op, block: u64, blocks: u64) -> Request {
        Request { time_ns, volume: 0, op, offset: block * 4096, len: blocks * 4096, content: vec![] }
    }

    #[test]
    fn seed_004_run_length_example() {
        // Fig. 5.4: runs of 2, 5 and 1 blocks.
        let w = Workload::from_requests(&[
            block_req(0, Op::Read, 10, 2),
            block_req(1, Op::Read, 100, 3),
            block_req(2, Op::Read, 103, 2),
            block_req(3, Op::Read, 7, 1),
        ]);
        let c = characterize(&w, 4096);
        // Buckets: 1 -> [1], 2 -> [2,3], 3 -> [4,7].
        assert_eq!(c.run_lengths.reads.0, vec![0, 1, 1, 1]);
        assert_eq!(c.runs_of_one_block.reads, Some(1.0 / 3.0));
        assert_eq!(c.longest_run.reads, 5);
        // Jumps: 11 -> 100 (89), 102 -> 103 (0), 104 -> 7 (97).
        assert_eq!(c.jump_distances.total(), 3);
        assert_eq!(c.sequential_fraction, Some(1.0 / 3.0));
    }

    #[test]
    fn seed_004_reuse_distance_example() {
        // 2000 2001 4000 4001 2000 2001 2002 4000 4001: distances 3, 3, 4, 4.
        let seq = [2000, 2001, 4000, 4001, 2000, 2001, 2002, 4000, 4001];
        let reqs: Vec<Request> =
            seq.iter().enumerate().map(|(i, &b)| block_req(i as u64 * 10, Op::Read, b, 1)).collect();
        let c = characterize(&Workload::from_requests(&reqs), 4096);
        // 3 -> bucket 2 ([2,3]), 4 -> bucket 3 ([4,7]).
        assert_eq!(c.reuse_accesses.reads.0, vec![0, 0, 2, 2]);
        assert_eq!(c.reuses.reads, 4);
        // In time: 40 ns each (bucket 6: [32, 63]).
        assert_eq!(c.reuse_time_ns.reads.0[6], 4);
    }

    #[test]
    fn popularity_of_a_skewed_trace() {
        // Block 0 accessed 7 times, blocks 1..=3 once: 10 accesses, 4 blocks.
        let mut reqs: Vec<Request> = (0..7).map(|t| block_req(t, Op::Read, 0, 1)).collect();
        reqs.push(block_req(8, Op::Write, 1, 3));
        let c = characterize(&Workload::from_requests(&reqs), 4096);
        let p = &c.popularity;
        assert_eq!((p.distinct_blocks, p.blocks_accessed_once, p.max_accesses_per_block), (4, 3, 7));
        // The top 1 % (one block) takes 70 %; the top half takes 80 %.
        assert_eq!(p.top[0].accesses_fraction, 0.7);
        assert_eq!(p.top[4].accesses_fraction, 0.8);
        assert_eq!(c.ops.read_fraction_requests, Some(7.0 / 8.0));
        // Heat map: all 10 accesses land in it.
        assert_eq!(c.heat_map.counts.iter().flatten().sum::<u64>(), 10);
    }
}
