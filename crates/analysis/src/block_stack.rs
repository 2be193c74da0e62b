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

use std::hash::Hash;

use hashbrown::HashMap;
use rustc_hash::FxBuildHasher;

use crate::fenwick::Fenwick;

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

/// The LRU stack of blocks `K`.
#[derive(Clone, Debug)]
pub struct BlockStack<K> {
    last: HashMap<K, u32, FxBuildHasher>,
    marks: RankBitmap,
    next: u32,
}

impl<K: Hash + Eq + Copy> Default for BlockStack<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Hash + Eq + Copy> BlockStack<K> {
    /// An empty stack.
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty stack sized for about `keys` distinct keys.
    pub fn with_capacity(keys: usize) -> Self {
        BlockStack {
            last: HashMap::with_capacity_and_hasher(keys, FxBuildHasher),
            marks: RankBitmap::with_prefix((4 * keys).next_power_of_two().max(MIN_POSITIONS), 0),
            next: 0,
        }
    }

    /// Distinct keys on the stack.
    pub fn len(&self) -> usize {
        self.last.len()
    }

    /// Whether the stack is empty.
    pub fn is_empty(&self) -> bool {
        self.last.is_empty()
    }

    /// Access `key`: `None` on a first access, otherwise the number of
    /// distinct keys accessed since its previous access. It moves to the top.
    #[inline]
    pub fn access(&mut self, key: K) -> Option<u32> {
        if self.next as usize == self.marks.len() {
            self.compact();
        }
        let now = self.next;
        self.next += 1;
        let live = self.last.len() as u32;
        match self.last.entry(key) {
            hashbrown::hash_map::Entry::Occupied(mut entry) => {
                let pos = *entry.get() as usize;
                let above = live - self.marks.rank_inclusive(pos);
                self.marks.clear(pos);
                self.marks.set(now as usize);
                *entry.get_mut() = now;
                Some(above)
            }
            hashbrown::hash_map::Entry::Vacant(entry) => {
                entry.insert(now);
                self.marks.set(now as usize);
                None
            }
        }
    }

    /// Drop `key` (its data was discarded). Returns whether it was there.
    pub fn remove(&mut self, key: &K) -> bool {
        match self.last.remove(key) {
            Some(pos) => {
                self.marks.clear(pos as usize);
                true
            }
            None => false,
        }
    }

    /// Drop every key `drop` selects (a scan of the live keys).
    pub fn remove_where(&mut self, mut drop: impl FnMut(&K) -> bool) {
        let marks = &mut self.marks;
        self.last.retain(|k, &mut pos| {
            if drop(k) {
                marks.clear(pos as usize);
                false
            } else {
                true
            }
        });
    }

    /// Renumber the live keys to `0..live` in order (a key's new position
    /// is the number of live keys before it) in a space of four times the
    /// live keys.
    fn compact(&mut self) {
        let live = self.last.len();
        let size = (4 * live).next_power_of_two().max(MIN_POSITIONS);
        assert!(size <= u32::MAX as usize, "more than 2^30 distinct keys on one LRU stack");
        for pos in self.last.values_mut() {
            *pos = self.marks.rank_inclusive(*pos as usize) - 1;
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

    #[test]
    fn distances_match_the_fenwick_tracker_across_compactions() {
        // 300 000 accesses over 20 000 keys: several compactions, both
        // halves of superblocks, removals.
        let mut a = BlockStack::<u32>::new();
        let mut b = StackTracker::<u32, u32>::new();
        for i in 0..300_000u32 {
            let k = (i.wrapping_mul(2_654_435_761) >> 9) % 20_000;
            if i % 97 == 0 {
                assert_eq!(a.remove(&k), b.remove(&k));
                continue;
            }
            assert_eq!(a.access(k), b.access(k, 1).map(|(d, _)| d), "access {i}");
        }
        a.remove_where(|&k| k % 3 == 0);
        b.remove_where(|&k| k % 3 == 0);
        assert_eq!(a.len(), b.len());
        for k in 0..20_000 {
            assert_eq!(a.access(k), b.access(k, 1).map(|(d, _)| d));
        }
    }
}
