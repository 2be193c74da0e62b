//! Ghost lists: the keys of recently evicted items, which ARC, 2Q and
//! S3-FIFO consult to recognise an item coming back.

use crate::key::{key_map_with_capacity, BlockKey, KeyMap, Slot};
use crate::list::{Links, List};

/// `N` ghost lists over one preallocated arena: keys (with the weight of the
/// item they stood for) of recently evicted items, oldest dropped first.
///
/// Each list is a FIFO; for ghosts that is also LRU order, because an entry
/// is never touched again: it is either dropped or taken out on a hit. The
/// arena has a fixed number of entries so nothing allocates once warmed up
/// (the key map may rehash in place, and resizes at most once past its
/// initial size). Policies bound their lists by weight themselves; if the
/// arena runs out first (many small objects), a push drops the oldest entry
/// of its own list, or of another list if its own is empty.
pub(super) struct Ghosts<const N: usize> {
    links: Links,
    lists: [List; N],
    weights: [u64; N],
    key: Vec<BlockKey>,
    weight: Vec<u64>,
    list_of: Vec<u8>,
    /// Unused arena entries.
    free: Vec<Slot>,
    map: KeyMap<Slot>,
}

impl<const N: usize> Ghosts<N> {
    /// Ghost lists sharing `entries` entries.
    pub(super) fn new(entries: usize) -> Self {
        let mut ghosts = Ghosts {
            links: Links::default(),
            lists: [List::new(); N],
            weights: [0; N],
            key: Vec::new(),
            weight: Vec::new(),
            list_of: Vec::new(),
            free: Vec::new(),
            map: key_map_with_capacity(entries),
        };
        ghosts.grow(entries);
        ghosts
    }

    /// Let the arena hold `entries` entries.
    pub(super) fn grow(&mut self, entries: usize) {
        let old = self.key.len();
        if entries <= old {
            return;
        }
        self.links.ensure_slots(entries);
        self.key.resize(entries, BlockKey::default());
        self.weight.resize(entries, 0);
        self.list_of.resize(entries, 0);
        self.free.reserve(entries - old);
        // Lowest indices are handed out first, which keeps runs reproducible.
        self.free.extend((old..entries).rev().map(|e| e as Slot));
        self.map.reserve(entries.saturating_sub(self.map.len()));
    }

    /// The list holding `key` and the weight it remembers.
    pub(super) fn lookup(&self, key: BlockKey) -> Option<(usize, u64)> {
        self.map.get(&key).map(|&e| (self.list_of[e as usize] as usize, self.weight[e as usize]))
    }

    /// Forget `key`, returning what [`Self::lookup`] would have.
    pub(super) fn take(&mut self, key: BlockKey) -> Option<(usize, u64)> {
        let e = self.map.remove(&key)?;
        Some(self.release(e))
    }

    /// Remember `key` of weight `weight` as the newest entry of `list`.
    pub(super) fn push(&mut self, list: usize, key: BlockKey, weight: u64) {
        self.take(key);
        if self.free.is_empty() && !self.pop_oldest(list) {
            for other in 0..N {
                if self.pop_oldest(other) {
                    break;
                }
            }
        }
        let Some(e) = self.free.pop() else { return };
        self.key[e as usize] = key;
        self.weight[e as usize] = weight;
        self.list_of[e as usize] = list as u8;
        self.links.push_front(&mut self.lists[list], e);
        self.weights[list] += weight;
        self.map.insert(key, e);
    }

    /// Drop the oldest entry of `list`; false if it was empty.
    pub(super) fn pop_oldest(&mut self, list: usize) -> bool {
        match self.lists[list].back() {
            Some(e) => {
                self.map.remove(&self.key[e as usize]);
                self.release(e);
                true
            }
            None => false,
        }
    }

    /// Total weight remembered on `list`.
    pub(super) fn weight(&self, list: usize) -> u64 {
        self.weights[list]
    }

    /// Number of entries on `list`.
    #[cfg(test)]
    pub(super) fn len(&self, list: usize) -> usize {
        self.lists[list].len()
    }

    /// Unlink arena entry `e` (already out of the map) and free it.
    fn release(&mut self, e: Slot) -> (usize, u64) {
        let list = self.list_of[e as usize] as usize;
        let weight = self.weight[e as usize];
        self.links.unlink(&mut self.lists[list], e);
        self.weights[list] -= weight;
        self.free.push(e);
        (list, weight)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ghost_arena_drops_oldest_when_full() {
        let k = |b| BlockKey::new(0, b);
        let mut g: Ghosts<2> = Ghosts::new(2);
        g.push(0, k(1), 5);
        g.push(1, k(2), 7);
        // Full: a push to list 0 drops list 0's oldest (k1).
        g.push(0, k(3), 1);
        assert_eq!(g.lookup(k(1)), None);
        assert_eq!((g.len(0), g.weight(0), g.len(1), g.weight(1)), (1, 1, 1, 7));
        // Full, and list 0's only entry is dropped for the new one.
        g.push(0, k(4), 2);
        assert_eq!(g.lookup(k(3)), None);
        assert_eq!(g.take(k(2)), Some((1, 7)));
        assert_eq!(g.lookup(k(4)), Some((0, 2)));
        assert!(g.pop_oldest(0));
        assert!(!g.pop_oldest(0));
        assert_eq!(g.weight(0), 0);
    }
}
