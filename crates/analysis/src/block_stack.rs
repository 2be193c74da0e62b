//! LRU stack distances of unit-weight keys (blocks), the hot path of the
//! exact curve: the same algorithm as [`crate::stack::StackTracker`], with
//! the Fenwick tree of 0/1 marks replaced by a rank bitmap.
//!
//! Marks are bits; every 4096 positions (a 64-word superblock) keep their
//! count, and a small Fenwick tree sums superblock counts. Counting the
//! marks before a position is one Fenwick query over superblocks (a few
//! kilobytes, always in cache) plus popcounts over at most half a
//! superblock of adjacent words (four cache lines). One bit per position
//! instead of a 32-bit tree node keeps the structure eight times smaller,
//! which is what matters once the distinct blocks outgrow the CPU caches.

use cloudcache_trace::VolumeId;
use hashbrown::HashMap;
use rustc_hash::FxBuildHasher;

use crate::fenwick::Fenwick;
use crate::mrc::VolumeBlock;

/// Words per superblock.
const WORDS_PER_SUPER: usize = 64;
/// Smallest position space.
const MIN_POSITIONS: usize = 1 << 16;

/// Marks over positions `0..len` with fast rank queries.
#[derive(Clone, Debug)]
struct RankBitmap {
    words: Vec<u64>,
    super_counts: Vec<u32>,
    supers: Fenwick<u32>,
}

impl RankBitmap {
    /// `len` positions (a multiple of 4096), the first `set` of them marked.
    fn with_prefix(len: usize, set: usize) -> Self {
        let mut words = vec![0u64; len / 64];
        for (i, w) in words.iter_mut().enumerate().take(set.div_ceil(64)) {
            let bits = (set - i * 64).min(64);
            *w = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
        }
        let super_counts: Vec<u32> =
            words.chunks(WORDS_PER_SUPER).map(|c| c.iter().map(|w| w.count_ones()).sum()).collect();
        let supers = Fenwick::from_weights(&super_counts);
        RankBitmap { words, super_counts, supers }
    }

    fn len(&self) -> usize {
        self.words.len() * 64
    }

    #[inline]
    fn set(&mut self, pos: usize) {
        self.words[pos / 64] |= 1 << (pos % 64);
        let s = pos / (64 * WORDS_PER_SUPER);
        self.super_counts[s] += 1;
        self.supers.add(s, 1);
    }

    #[inline]
    fn clear(&mut self, pos: usize) {
        self.words[pos / 64] &= !(1 << (pos % 64));
        let s = pos / (64 * WORDS_PER_SUPER);
        self.super_counts[s] -= 1;
        self.supers.sub(s, 1);
    }

    /// Marks at positions `0..=pos`.
    #[inline]
    fn rank_inclusive(&self, pos: usize) -> u32 {
        let word = pos / 64;
        let s = word / WORDS_PER_SUPER;
        let first = s * WORDS_PER_SUPER;
        let before_super = if s == 0 { 0 } else { self.supers.prefix_inclusive(s - 1) };
        let bit = pos % 64;
        let upto_bit = if bit == 63 { u64::MAX } else { (1u64 << (bit + 1)) - 1 };
        let in_word = (self.words[word] & upto_bit).count_ones();
        // Popcount the shorter side of the superblock.
        if word - first <= WORDS_PER_SUPER / 2 {
            let left: u32 = self.words[first..word].iter().map(|w| w.count_ones()).sum();
            before_super + left + in_word
        } else {
            let last = (first + WORDS_PER_SUPER).min(self.words.len());
            let right: u32 = self.words[word + 1..last].iter().map(|w| w.count_ones()).sum();
            let after_in_word = (self.words[word] & !upto_bit).count_ones();
            before_super + self.super_counts[s] - right - after_in_word
        }
    }
}

/// Blocks per chunk of the position map: 16 positions of 4 bytes fill one
/// 64-byte cache line.
const CHUNK_BITS: u32 = 4;
const CHUNK_BLOCKS: usize = 1 << CHUNK_BITS;
/// A chunk slot of a block not on the stack.
const ABSENT: u32 = u32::MAX;

/// Latest positions of 16 consecutive blocks of a volume (`ABSENT` when not
/// on the stack), one cache line.
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
struct Chunk([u32; CHUNK_BLOCKS]);

/// The key of a chunk: volume and block number / 16.
type ChunkKey = (VolumeId, u64);

fn chunk_key(k: &VolumeBlock) -> ChunkKey {
    (k.volume, k.block >> CHUNK_BITS)
}

/// The LRU stack of blocks.
///
/// Where each block was last accessed is kept in chunks of 16 consecutive
/// blocks: a request is a run of consecutive blocks, so one hash lookup
/// (often none: the chunk of the previous access is remembered) serves the
/// whole run, and its positions sit in one cache line. A hash map entry per
/// block cost two cache misses per block access (control bytes and slot) on
/// traces larger than the CPU caches. A chunk whose blocks have all left the
/// stack (trims, fixed-size SHARDS dropping blocks) is freed and reused, so
/// memory follows the live blocks.
#[derive(Clone, Debug)]
pub struct BlockStack {
    chunk_of: HashMap<ChunkKey, u32, FxBuildHasher>,
    chunks: Vec<Chunk>,
    /// Chunks no key maps to, for reuse.
    free: Vec<u32>,
    /// The chunk of the latest lookup, if it still exists.
    recent: Option<(ChunkKey, u32)>,
    live: usize,
    marks: RankBitmap,
    next: u32,
}

impl Default for BlockStack {
    fn default() -> Self {
        Self::new()
    }
}

impl BlockStack {
    /// An empty stack.
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty stack sized for about `keys` distinct blocks far apart from
    /// each other (one chunk each, as in a sample of blocks).
    pub fn with_capacity(keys: usize) -> Self {
        BlockStack {
            chunk_of: HashMap::with_capacity_and_hasher(keys, FxBuildHasher),
            chunks: Vec::with_capacity(keys),
            free: Vec::new(),
            recent: None,
            live: 0,
            marks: RankBitmap::with_prefix((4 * keys).next_power_of_two().max(MIN_POSITIONS), 0),
            next: 0,
        }
    }

    /// Distinct keys on the stack.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether the stack is empty.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The chunk of `key`, created when missing.
    #[inline]
    fn chunk_for(&mut self, key: ChunkKey) -> usize {
        if let Some((k, c)) = self.recent {
            if k == key {
                return c as usize;
            }
        }
        let chunks = &mut self.chunks;
        let free = &mut self.free;
        let c = *self.chunk_of.entry(key).or_insert_with(|| match free.pop() {
            Some(c) => c,
            None => {
                chunks.push(Chunk([ABSENT; CHUNK_BLOCKS]));
                u32::try_from(chunks.len() - 1).expect("fewer than 2^32 chunks")
            }
        });
        self.recent = Some((key, c));
        c as usize
    }

    /// Access `key`: `None` on a first access, otherwise the number of
    /// distinct keys accessed since its previous access. It moves to the top.
    #[inline]
    pub fn access(&mut self, key: VolumeBlock) -> Option<u32> {
        if self.next as usize == self.marks.len() {
            self.compact();
        }
        let now = self.next;
        self.next += 1;
        let c = self.chunk_for(chunk_key(&key));
        let slot = &mut self.chunks[c].0[key.block as usize % CHUNK_BLOCKS];
        let previous = std::mem::replace(slot, now);
        let above = if previous == ABSENT {
            self.live += 1;
            None
        } else {
            let pos = previous as usize;
            // Every live key but this one is marked: those after its
            // previous position are the keys above it.
            let above = self.live as u32 - self.marks.rank_inclusive(pos);
            self.marks.clear(pos);
            Some(above)
        };
        self.marks.set(now as usize);
        above
    }

    /// Drop `key` (its data was discarded). Returns whether it was there.
    pub fn remove(&mut self, key: &VolumeBlock) -> bool {
        let ck = chunk_key(key);
        let Some(&c) = self.chunk_of.get(&ck) else { return false };
        let chunk = &mut self.chunks[c as usize].0;
        let slot = &mut chunk[key.block as usize % CHUNK_BLOCKS];
        if *slot == ABSENT {
            return false;
        }
        self.marks.clear(*slot as usize);
        *slot = ABSENT;
        self.live -= 1;
        if chunk.iter().all(|&p| p == ABSENT) {
            self.chunk_of.remove(&ck);
            self.free.push(c);
            if self.recent.is_some_and(|(_, r)| r == c) {
                self.recent = None;
            }
        }
        true
    }

    /// Drop every key `drop` selects (a scan of the live keys).
    pub fn remove_where(&mut self, mut drop: impl FnMut(&VolumeBlock) -> bool) {
        let marks = &mut self.marks;
        let chunks = &mut self.chunks;
        let free = &mut self.free;
        let live = &mut self.live;
        self.chunk_of.retain(|&(volume, high), &mut c| {
            let chunk = &mut chunks[c as usize].0;
            for (i, slot) in chunk.iter_mut().enumerate() {
                if *slot != ABSENT && drop(&VolumeBlock { volume, block: high << CHUNK_BITS | i as u64 }) {
                    marks.clear(*slot as usize);
                    *slot = ABSENT;
                    *live -= 1;
                }
            }
            let keep = chunk.iter().any(|&p| p != ABSENT);
            if !keep {
                free.push(c);
            }
            keep
        });
        self.recent = None;
    }

    /// Renumber the live keys to `0..live` in order (a key's new position
    /// is the number of live keys before it) in a space of four times the
    /// live keys.
    fn compact(&mut self) {
        let live = self.live;
        let size = (4 * live).next_power_of_two().max(MIN_POSITIONS);
        assert!(size <= u32::MAX as usize, "more than 2^30 distinct keys on one LRU stack");
        // Marks before each word, in one pass; then a key's new position is
        // that count plus the marks before it in its word.
        let mut before = Vec::with_capacity(self.marks.words.len());
        let mut sum = 0u32;
        for w in &self.marks.words {
            before.push(sum);
            sum += w.count_ones();
        }
        let words = &self.marks.words;
        for slot in self.chunks.iter_mut().flat_map(|c| c.0.iter_mut()).filter(|p| **p != ABSENT) {
            let pos = *slot as usize;
            let below = words[pos / 64] & ((1u64 << (pos % 64)) - 1);
            *slot = before[pos / 64] + below.count_ones();
        }
        self.marks = RankBitmap::with_prefix(size, live);
        self.next = live as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stack::StackTracker;

    #[test]
    fn rank_counts_marks_up_to_a_position() {
        let mut b = RankBitmap::with_prefix(1 << 14, 100);
        let mut naive = vec![false; 1 << 14];
        naive[..100].iter_mut().for_each(|x| *x = true);
        for p in [150usize, 4095, 4096, 7000, 9000, 16383, 3000] {
            b.set(p);
            naive[p] = true;
        }
        b.clear(5);
        naive[5] = false;
        for p in (0..1 << 14).step_by(37).chain([0, 63, 64, 4095, 4096, 16383]) {
            let want = naive[..=p].iter().filter(|&&x| x).count() as u32;
            assert_eq!(b.rank_inclusive(p), want, "rank at {p}");
        }
    }

    fn vb(volume: VolumeId, block: u64) -> VolumeBlock {
        VolumeBlock { volume, block }
    }

    #[test]
    fn distances_match_the_fenwick_tracker_across_compactions() {
        // Runs of consecutive blocks (as requests make them) over 40 000
        // blocks of two volumes: several compactions, both halves of
        // superblocks, runs crossing chunks, removals that empty chunks.
        let mut a = BlockStack::new();
        let mut b = StackTracker::<VolumeBlock, u32>::new();
        let mut i = 0u64;
        for round in 0..100_000u64 {
            let h = round.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20;
            let (volume, start, run) = ((h % 2) as u32, (h >> 1) % 20_000, 1 + (h >> 20) % 9);
            for block in start..start + run {
                let k = vb(volume, block);
                i += 1;
                if i % 97 == 0 {
                    assert_eq!(a.remove(&k), b.remove(&k));
                    continue;
                }
                assert_eq!(a.access(k), b.access(k, 1).map(|(d, _)| d), "access {i}");
            }
        }
        a.remove_where(|k| k.block % 3 == 0);
        b.remove_where(|k| k.block % 3 == 0);
        assert_eq!(a.len(), b.len());
        for volume in 0..2 {
            for block in 0..20_010 {
                assert_eq!(a.access(vb(volume, block)), b.access(vb(volume, block), 1).map(|(d, _)| d));
            }
        }
    }

    #[test]
    fn emptied_chunks_are_freed_and_reused() {
        // Sparse blocks (one per chunk), all removed, then others: memory
        // follows the live blocks, as fixed-size SHARDS needs.
        let mut a = BlockStack::new();
        for block in 0..1000 {
            assert_eq!(a.access(vb(1, block * 100)), None);
        }
        assert_eq!(a.access(vb(1, 0)), Some(999));
        for block in 0..1000 {
            assert!(a.remove(&vb(1, block * 100)));
        }
        assert!(!a.remove(&vb(1, 0)));
        assert!(a.is_empty() && a.chunk_of.is_empty());
        for block in 0..1000 {
            assert_eq!(a.access(vb(2, block * 100 + 7)), None);
        }
        assert_eq!(a.chunks.len(), 1000);
        a.remove_where(|k| k.block < 50_000);
        assert_eq!((a.len(), a.chunk_of.len(), a.free.len()), (500, 500, 500));
        assert_eq!(a.access(vb(2, 99_907)), Some(0));
        assert_eq!(a.access(vb(2, 50_007)), Some(499));
    }
}
