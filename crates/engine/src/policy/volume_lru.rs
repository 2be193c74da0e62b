//! LRU kept per volume, so a cache shared by many volumes can take a block
//! from the volume that must give one up (replacement-time share
//! enforcement, seed 001 section 3.4.3) without searching a global list.

use super::ReplacementPolicy;
use crate::key::{BlockKey, Slot};
use crate::list::{Links, List};

/// One LRU list per volume over a shared link arena.
pub struct VolumeLru {
    links: Links,
    lists: Vec<List>,
    /// Volume of each slot's item, to find its list on a hit.
    slot_volume: Vec<u32>,
    /// The volume evicted from last: the likeliest to give up the next.
    last_evicted: u32,
}

impl VolumeLru {
    /// Per-volume LRU for up to `slots` slots.
    pub fn new(slots: usize) -> Self {
        VolumeLru {
            links: Links::with_slots(slots),
            lists: Vec::new(),
            slot_volume: vec![0; slots],
            last_evicted: 0,
        }
    }

    /// Evict `volume`'s least recently used item; `None` if it has none.
    pub fn evict_from(&mut self, volume: u32) -> Option<Slot> {
        self.last_evicted = volume;
        let list = self.lists.get_mut(volume as usize)?;
        self.links.pop_back(list)
    }

    /// Items cached for `volume`.
    pub fn len_of(&self, volume: u32) -> usize {
        self.lists.get(volume as usize).map_or(0, List::len)
    }

    fn ensure_volume(&mut self, volume: u32) {
        if volume as usize >= self.lists.len() {
            self.lists.resize(volume as usize + 1, List::new());
        }
    }
}

impl ReplacementPolicy for VolumeLru {
    fn insert(&mut self, slot: Slot, key: BlockKey, _weight: u64) {
        self.slot_volume[slot as usize] = key.volume;
        self.ensure_volume(key.volume);
        self.links.push_front(&mut self.lists[key.volume as usize], slot);
    }
    fn hit(&mut self, slot: Slot) {
        let v = self.slot_volume[slot as usize] as usize;
        self.links.move_to_front(&mut self.lists[v], slot);
    }
    fn remove(&mut self, slot: Slot) {
        let v = self.slot_volume[slot as usize] as usize;
        self.links.unlink(&mut self.lists[v], slot);
    }
    /// Without shares to enforce, the incoming volume replaces its own
    /// least recently used item, or, with none cached, the largest volume's.
    fn evict(&mut self, incoming: BlockKey, _keys: &[BlockKey]) -> Slot {
        if let Some(slot) = self.evict_from(incoming.volume) {
            return slot;
        }
        let largest = (0..self.lists.len())
            .max_by_key(|&v| self.lists[v].len())
            .expect("evict called on an empty cache");
        self.evict_from(largest as u32).expect("evict called on an empty cache")
    }
    fn reserve_slots(&mut self, slots: usize) {
        self.links.ensure_slots(slots);
        if self.slot_volume.len() < slots {
            self.slot_volume.resize(slots, 0);
        }
    }
    #[inline]
    fn prefetch_coming_victims(&self) -> (Slot, Slot) {
        match self.lists.get(self.last_evicted as usize) {
            Some(list) => self.links.prefetch_coming_backs(list),
            None => (crate::key::NO_SLOT, crate::key::NO_SLOT),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_volume_keeps_its_own_order() {
        let mut p = VolumeLru::new(6);
        for (slot, (volume, block)) in [(0, 1), (1, 1), (0, 2), (1, 2), (0, 3)].into_iter().enumerate() {
            p.insert(slot as Slot, BlockKey::new(volume, block), 1);
        }
        p.hit(0); // volume 0: block 1 refreshed
        assert_eq!((p.len_of(0), p.len_of(1), p.len_of(7)), (3, 2, 0));
        assert_eq!(p.evict_from(0), Some(2));
        assert_eq!(p.evict_from(1), Some(1));
        p.remove(3);
        assert_eq!(p.evict_from(1), None);
        assert_eq!(p.evict(BlockKey::new(5, 0), &[]), 4);
    }
}
