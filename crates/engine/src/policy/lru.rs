//! LRU: evict the item accessed longest ago.

use super::ReplacementPolicy;
use crate::key::{BlockKey, Slot};
use crate::list::{Links, List};

/// Least recently used: one list, hits move to the front, the back goes.
pub struct Lru {
    links: Links,
    list: List,
}

impl Lru {
    /// An LRU for up to `slots` slots.
    pub fn new(slots: usize) -> Self {
        Lru { links: Links::with_slots(slots), list: List::new() }
    }
}

impl ReplacementPolicy for Lru {
    #[inline]
    fn insert(&mut self, slot: Slot, _key: BlockKey, _weight: u64) {
        self.links.push_front(&mut self.list, slot);
    }
    #[inline]
    fn hit(&mut self, slot: Slot) {
        self.links.move_to_front(&mut self.list, slot);
    }
    fn remove(&mut self, slot: Slot) {
        self.links.unlink(&mut self.list, slot);
    }
    #[inline]
    fn evict(&mut self, _incoming: BlockKey, _keys: &[BlockKey]) -> Slot {
        self.links.pop_back(&mut self.list).expect("evict called on an empty cache")
    }
    fn reserve_slots(&mut self, slots: usize) {
        self.links.ensure_slots(slots);
    }
    #[inline]
    fn prefetch_coming_victims(&self) -> (Slot, Slot) {
        self.links.prefetch_coming_backs(&self.list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::tests::{run_sequence, Sequence};

    #[test]
    fn hand_worked_sequence() {
        // Capacity 3: a b c a d -> d evicts b (a was refreshed); then b evicts c.
        let seq = Sequence::new(3, "a b c a d b a");
        assert_eq!(run_sequence(Lru::new(3), &seq), "m m m h m(b) m(c) h");
    }
}
