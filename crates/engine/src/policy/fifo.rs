//! FIFO: evict the item admitted longest ago, whatever its hits.

use super::ReplacementPolicy;
use crate::key::{BlockKey, Slot};
use crate::list::{Links, List};

/// First in, first out: hits change nothing.
pub struct Fifo {
    links: Links,
    list: List,
}

impl Fifo {
    /// A FIFO for up to `slots` slots.
    pub fn new(slots: usize) -> Self {
        Fifo { links: Links::with_slots(slots), list: List::new() }
    }
}

impl ReplacementPolicy for Fifo {
    fn insert(&mut self, slot: Slot, _key: BlockKey, _weight: u64) {
        self.links.push_front(&mut self.list, slot);
    }
    fn hit(&mut self, _slot: Slot) {}
    fn remove(&mut self, slot: Slot) {
        self.links.unlink(&mut self.list, slot);
    }
    fn evict(&mut self, _incoming: BlockKey, _keys: &[BlockKey]) -> Slot {
        self.links.pop_back(&mut self.list).expect("evict called on an empty cache")
    }
    fn reserve_slots(&mut self, slots: usize) {
        self.links.ensure_slots(slots);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::tests::{run_sequence, Sequence};

    #[test]
    fn hand_worked_sequence() {
        // Capacity 3: a b c a d -> d evicts a despite its hit.
        let seq = Sequence::new(3, "a b c a d a");
        assert_eq!(run_sequence(Fifo::new(3), &seq), "m m m h m(a) m(b)");
    }
}
