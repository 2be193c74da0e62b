//! CLOCK: FIFO with a second chance for items referenced since the hand last
//! passed (F. J. Corbató, "A Paging Experiment with the Multics System",
//! 1968; the one-bit "second chance" algorithm of the OS textbooks).

use super::ReplacementPolicy;
use crate::key::{BlockKey, Slot};
use crate::list::{Links, List};

/// CLOCK with one reference bit per slot.
///
/// The clock face is kept as a list whose back is the slot under the hand:
/// sweeping past a referenced slot clears its bit and moves it to the front,
/// which is the same as the hand moving on past it, and a new item enters at
/// the front, just behind the hand. New items enter with the bit **clear**,
/// so an item never hit is evicted at its first encounter with the hand
/// (the textbook variant that sets the bit on load would give every new item
/// a free extra round).
pub struct Clock {
    links: Links,
    list: List,
    referenced: Vec<bool>,
}

impl Clock {
    /// A CLOCK for up to `slots` slots.
    pub fn new(slots: usize) -> Self {
        Clock { links: Links::with_slots(slots), list: List::new(), referenced: vec![false; slots] }
    }
}

impl ReplacementPolicy for Clock {
    #[inline]
    fn insert(&mut self, slot: Slot, _key: BlockKey, _weight: u64) {
        self.referenced[slot as usize] = false;
        self.links.push_front(&mut self.list, slot);
    }

    #[inline]
    fn hit(&mut self, slot: Slot) {
        self.referenced[slot as usize] = true;
    }

    fn remove(&mut self, slot: Slot) {
        self.links.unlink(&mut self.list, slot);
    }

    fn evict(&mut self, _incoming: BlockKey, _keys: &[BlockKey]) -> Slot {
        // Terminates within one sweep: every slot passed has its bit cleared.
        loop {
            let slot = self.list.back().expect("evict called on an empty cache");
            if !std::mem::take(&mut self.referenced[slot as usize]) {
                self.links.unlink(&mut self.list, slot);
                return slot;
            }
            self.links.move_to_front(&mut self.list, slot);
        }
    }

    fn reserve_slots(&mut self, slots: usize) {
        self.links.ensure_slots(slots);
        if self.referenced.len() < slots {
            self.referenced.resize(slots, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::tests::{run_sequence, Sequence};

    #[test]
    fn second_chance() {
        // Capacity 3. a b c fill (order from the hand: a b c, all bits clear).
        // a, b hit: bits of a and b set.
        // d: hand at a (set -> clear, to the back), b (set -> clear), c clear:
        //    evict c. Order now a b d.
        // e: a clear -> evicted. Order b d e.
        // a: b clear -> evicted. FIFO would have evicted a, the oldest, at d.
        let seq = Sequence::new(3, "a b c a b d e a");
        assert_eq!(run_sequence(Clock::new(3), &seq), "m m m h h m(c) m(a) m(b)");
    }

    #[test]
    fn new_items_enter_unreferenced() {
        // Capacity 2. a b fill; c evicts a at once (no bit was ever set);
        // b hit; d passes b (clearing it) and evicts c, the newer item, which
        // was never referenced; e evicts b, whose bit d cleared.
        let seq = Sequence::new(2, "a b c b d e");
        assert_eq!(run_sequence(Clock::new(2), &seq), "m m m(a) h m(c) m(b)");
    }
}
