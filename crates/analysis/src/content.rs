//! Content statistics from per-block hashes (FIU traces carry an MD5 per
//! 4 KiB): how much of what is read and written is duplicate content, how
//! soon content recurs (seed 004's content reuse distance), and what an LRU
//! cache keyed by content instead of address would save.
//!
//! Request `r`'s hash `i` is the content of 4 KiB block `r.offset / 4096 + i`
//! of its volume. Reads and writes both count: a write puts that content at
//! that address, a read finds it there.

use cloudcache_trace::{ContentHash, Op, CONTENT_BLOCK_BYTES};
use hashbrown::HashMap;
use rustc_hash::FxBuildHasher;
use serde::Serialize;

use crate::characterize::{Log2Counts, ReadWrite};
use crate::histogram::DenseHistogram;
use crate::mrc::{dense_sizes, CurvePoint, VolumeBlock};
use crate::stack::StackTracker;
use crate::workload::Workload;

/// What the content hashes say.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ContentStats {
    /// 4 KiB accesses that carry a hash.
    pub hashed_accesses: u64,
    /// Distinct (volume, block) addresses among them.
    pub distinct_addresses: u64,
    /// Distinct contents among them.
    pub distinct_contents: u64,
    /// `1 - distinct_contents / distinct (address, content) pairs`: the
    /// fraction of the distinct data that is a copy of other data.
    pub duplicate_ratio: Option<f64>,
    /// Accesses whose address was accessed before.
    pub address_reuses: ReadWrite<u64>,
    /// Accesses whose content was accessed before (at any address).
    pub content_reuses: ReadWrite<u64>,
    /// Accesses whose content was seen before but never at this address
    /// (what only a content-addressed cache can hit).
    pub content_only_reuses: ReadWrite<u64>,
    /// Content reuse distance in intervening hashed accesses.
    #[serde(skip)]
    pub content_reuse_distance: ReadWrite<Log2Counts>,
    /// LRU miss ratio keyed by address, at `sizes`.
    pub address_cache: Vec<CurvePoint>,
    /// LRU miss ratio keyed by content, at the same sizes.
    pub content_cache: Vec<CurvePoint>,
}

impl ContentStats {
    /// Mean over the sizes of the miss ratio a content-addressed cache saves.
    pub fn mean_miss_ratio_saving(&self) -> Option<f64> {
        let diffs: Vec<f64> = self
            .address_cache
            .iter()
            .zip(&self.content_cache)
            .filter_map(|(a, c)| Some(a.miss_ratio? - c.miss_ratio?))
            .collect();
        (!diffs.is_empty()).then(|| diffs.iter().sum::<f64>() / diffs.len() as f64)
    }
}

/// Measure the content of `w`; `None` when it has no hashes.
pub fn content_stats(w: &Workload) -> Option<ContentStats> {
    if !w.has_content() {
        return None;
    }
    let mut s = ContentStats::default();
    let mut by_address = StackTracker::<VolumeBlock, u32>::new();
    let mut by_content = StackTracker::<ContentHash, u32>::new();
    let (mut address_hist, mut content_hist) = (DenseHistogram::default(), DenseHistogram::default());
    let mut content_last: HashMap<ContentHash, u64, FxBuildHasher> = HashMap::default();
    let mut pairs: hashbrown::HashSet<(VolumeBlock, ContentHash), FxBuildHasher> = Default::default();
    let mut index = 0u64;
    for (i, r) in w.requests.iter().enumerate() {
        if r.op == Op::Trim {
            continue;
        }
        let is_read = r.op == Op::Read;
        let base = r.offset / CONTENT_BLOCK_BYTES;
        for (k, hash) in w.content(i).iter().enumerate() {
            let address = VolumeBlock { volume: r.volume, block: base + k as u64 };
            let address_seen = by_address.access(address, 1).map(|(d, _)| d);
            address_hist.record(address_seen);
            content_hist.record(by_content.access(*hash, 1).map(|(d, _)| d));
            let new_pair = pairs.insert((address, *hash));
            let pick = |rw: &mut ReadWrite<u64>| if is_read { rw.reads += 1 } else { rw.writes += 1 };
            if address_seen.is_some() {
                pick(&mut s.address_reuses);
            }
            if let Some(last) = content_last.insert(*hash, index) {
                pick(&mut s.content_reuses);
                if new_pair {
                    pick(&mut s.content_only_reuses);
                }
                let d = if is_read {
                    &mut s.content_reuse_distance.reads
                } else {
                    &mut s.content_reuse_distance.writes
                };
                d.add(index - last - 1);
            }
            index += 1;
        }
    }
    s.hashed_accesses = index;
    s.distinct_addresses = by_address.len() as u64;
    s.distinct_contents = content_last.len() as u64;
    s.duplicate_ratio = (!pairs.is_empty()).then(|| 1.0 - s.distinct_contents as f64 / pairs.len() as f64);
    let sizes = dense_sizes(s.distinct_addresses * CONTENT_BLOCK_BYTES, CONTENT_BLOCK_BYTES);
    let curve = |h: &DenseHistogram| {
        let capacities: Vec<u64> = sizes.iter().map(|&b| b / CONTENT_BLOCK_BYTES).collect();
        let total = h.accesses() as f64;
        sizes
            .iter()
            .zip(h.hits_at(&capacities))
            .map(|(&b, hits)| CurvePoint::new(b, hits as f64, total))
            .collect()
    };
    s.address_cache = curve(&address_hist);
    s.content_cache = curve(&content_hist);
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cloudcache_trace::Request;

    #[test]
    fn seed_004_content_reuse_example() {
        // Blocks 2000 2001 4000 4001 2000 2001 2002 4000 4001, where 2000 and
        // 4000 hold the same content X: X is at positions 0, 2, 4, 7, so its
        // content reuse distances are 1, 1, 2.
        let x = [1u8; 16];
        let hash = |b: u64| if b == 2000 || b == 4000 { x } else { [b as u8; 16] };
        let seq = [2000u64, 2001, 4000, 4001, 2000, 2001, 2002, 4000, 4001];
        let reqs: Vec<Request> = seq
            .iter()
            .enumerate()
            .map(|(i, &b)| Request {
                time_ns: i as u64,
                volume: 0,
                op: Op::Read,
                offset: b * 4096,
                len: 4096,
                content: vec![hash(b)],
            })
            .collect();
        let s = content_stats(&Workload::from_requests(&reqs)).unwrap();
        // X: distances 1, 1, 2; 2001: 3; 4001: 4 (buckets 1, 2, 2, 3).
        assert_eq!(s.content_reuse_distance.reads.0, vec![0, 2, 2, 1]);
        assert_eq!((s.distinct_addresses, s.distinct_contents), (5, 4));
        // 4000's first access is a content reuse at a new address.
        assert_eq!(s.content_only_reuses.reads, 1);
        assert_eq!((s.address_reuses.reads, s.content_reuses.reads), (4, 5));
        assert_eq!(s.duplicate_ratio, Some(1.0 - 4.0 / 5.0));
        // A content cache never misses more than an address cache.
        for (a, c) in s.address_cache.iter().zip(&s.content_cache) {
            assert!(c.miss_ratio.unwrap() <= a.miss_ratio.unwrap());
        }
        assert!(s.mean_miss_ratio_saving().unwrap() > 0.0);
        assert!(content_stats(&Workload::from_requests(&[Request::default()])).is_none());
    }
}
