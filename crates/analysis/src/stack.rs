//! LRU stack distances in O(log n) per access (Mattson's stack algorithm
//! without the stack).
//!
//! Every access gets a position in time order; each live key marks the
//! position of its latest access in a [`Fenwick`] tree with its weight. The
//! weight above key `k` in the LRU stack (the distinct keys, or their bytes,
//! accessed since `k` was last accessed) is then the sum of the marks after
//! `k`'s position: one prefix query. Positions are compacted when they run
//! out, so memory stays proportional to the distinct keys (four to eight
//! tree entries per key), not to the length of the trace.

use std::hash::Hash;

use hashbrown::HashMap;
use rustc_hash::FxBuildHasher;

use crate::fenwick::{Fenwick, Weight};

/// Smallest position space; compaction keeps room for at least four times
/// the live keys, so it runs at most once per three-times-live accesses.
const MIN_POSITIONS: usize = 1 << 12;

/// Tracks the LRU stack of keys `K` whose items weigh `W` (`u32` ones for
/// blocks, `u64` bytes for objects).
#[derive(Clone, Debug)]
pub struct StackTracker<K, W: Weight> {
    /// Latest position and current weight of every live key.
    last: HashMap<K, (u32, W), FxBuildHasher>,
    tree: Fenwick<W>,
    /// Position the next access takes.
    next: u32,
    /// Sum of the weights of live keys.
    live_weight: W,
}

impl<K: Hash + Eq + Copy, W: Weight> Default for StackTracker<K, W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Hash + Eq + Copy, W: Weight> StackTracker<K, W> {
    /// An empty stack.
    pub fn new() -> Self {
        Self::with_capacity(0)
    }

    /// An empty stack sized for about `keys` distinct keys.
    pub fn with_capacity(keys: usize) -> Self {
        StackTracker {
            last: HashMap::with_capacity_and_hasher(keys, FxBuildHasher),
            tree: Fenwick::new((2 * keys).next_power_of_two().max(MIN_POSITIONS)),
            next: 0,
            live_weight: W::default(),
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

    /// Total weight on the stack.
    pub fn total_weight(&self) -> W {
        self.live_weight
    }

    /// Access `key` now with weight `weight`. Returns `None` on a first
    /// access (a cold miss at every size), otherwise `(above, old_weight)`:
    /// the weight of the distinct keys accessed since `key`'s previous access
    /// and the weight `key` had then. The key moves to the top of the stack
    /// with the new weight.
    #[inline]
    pub fn access(&mut self, key: K, weight: W) -> Option<(W, W)> {
        if self.next as usize == self.tree.len() {
            self.compact();
        }
        let now = self.next;
        self.next += 1;
        match self.last.entry(key) {
            hashbrown::hash_map::Entry::Occupied(mut entry) => {
                let (pos, old) = *entry.get();
                let above = self.live_weight.minus(self.tree.prefix_inclusive(pos as usize));
                self.tree.sub(pos as usize, old);
                self.tree.add(now as usize, weight);
                *entry.get_mut() = (now, weight);
                self.live_weight = self.live_weight.minus(old).plus(weight);
                Some((above, old))
            }
            hashbrown::hash_map::Entry::Vacant(entry) => {
                entry.insert((now, weight));
                self.tree.add(now as usize, weight);
                self.live_weight = self.live_weight.plus(weight);
                None
            }
        }
    }

    /// Drop `key` from the stack (its data was discarded); the next access
    /// to it is a cold miss. Returns whether it was there.
    pub fn remove(&mut self, key: &K) -> bool {
        match self.last.remove(key) {
            Some((pos, w)) => {
                self.tree.sub(pos as usize, w);
                self.live_weight = self.live_weight.minus(w);
                true
            }
            None => false,
        }
    }

    /// Drop every key `drop` selects; a scan of the live keys, for discards
    /// too large to probe key by key.
    pub fn remove_where(&mut self, mut drop: impl FnMut(&K) -> bool) {
        let tree = &mut self.tree;
        let live = &mut self.live_weight;
        self.last.retain(|k, &mut (pos, w)| {
            if drop(k) {
                tree.sub(pos as usize, w);
                *live = live.minus(w);
                false
            } else {
                true
            }
        });
    }

    /// Renumber the live keys' positions to `0..live` in the same order and
    /// size the tree to four times the live keys. A key's new position is
    /// the number of live positions before its old one: a counting pass over
    /// the old position space, no sort.
    fn compact(&mut self) {
        let live = self.last.len();
        let size = (4 * live).next_power_of_two().max(MIN_POSITIONS);
        assert!(size <= u32::MAX as usize, "more than 2^30 distinct keys on one LRU stack");
        let mut rank = vec![0u32; self.tree.len()];
        for &(pos, _) in self.last.values() {
            rank[pos as usize] = 1;
        }
        let mut before = 0u32;
        for r in rank.iter_mut() {
            let here = *r;
            *r = before;
            before += here;
        }
        let mut weights = vec![W::default(); size];
        for (pos, w) in self.last.values_mut() {
            *pos = rank[*pos as usize];
            weights[*pos as usize] = *w;
        }
        self.tree = Fenwick::from_weights(&weights);
        self.next = live as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The textbook stack: a vector, most recent first.
    fn naive_distances(keys: &[u32]) -> Vec<Option<u32>> {
        let mut stack: Vec<u32> = Vec::new();
        keys.iter()
            .map(|&k| {
                let found = stack.iter().position(|&x| x == k);
                if let Some(i) = found {
                    stack.remove(i);
                }
                stack.insert(0, k);
                found.map(|i| i as u32)
            })
            .collect()
    }

    #[test]
    fn distances_match_the_textbook_stack_across_compactions() {
        // 20 000 accesses over 300 keys force several compactions.
        let keys: Vec<u32> = (0..20_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 7) % 300).collect();
        let mut tracker = StackTracker::<u32, u32>::new();
        let got: Vec<Option<u32>> = keys.iter().map(|&k| tracker.access(k, 1).map(|(d, _)| d)).collect();
        assert_eq!(got, naive_distances(&keys));
    }

    #[test]
    fn hand_worked_sequence() {
        // a b c a b b d a: a's second access has b and c above it (2).
        let mut t = StackTracker::<char, u32>::new();
        let d: Vec<Option<u32>> = "abcabbda".chars().map(|c| t.access(c, 1).map(|(d, _)| d)).collect();
        assert_eq!(d, [None, None, None, Some(2), Some(2), Some(0), None, Some(2)]);
    }

    #[test]
    fn weighted_and_removed_keys() {
        let mut t = StackTracker::<u8, u64>::new();
        t.access(1, 100);
        t.access(2, 30);
        t.access(3, 5);
        // Above 1: 30 + 5 bytes; its own old weight was 100.
        assert_eq!(t.access(1, 40), Some((35, 100)));
        assert!(t.remove(&2));
        assert_eq!(t.total_weight(), 45);
        assert_eq!(t.access(2, 30), None);
        assert_eq!(t.access(3, 5), Some((70, 5)));
        t.remove_where(|&k| k != 3);
        assert_eq!((t.len(), t.total_weight()), (1, 5));
    }
}
