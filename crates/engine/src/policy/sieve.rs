//! SIEVE: a FIFO whose hand sifts out unvisited items (Y. Zhang, J. Yang,
//! Y. Yue, Y. Vigfusson and K. V. Rashmi, "SIEVE is Simpler than LRU: an
//! Efficient Turn-Key Eviction Algorithm for Web Caches", NSDI'24, Fig. 2).

use super::ReplacementPolicy;
use crate::key::{BlockKey, Slot, NO_SLOT};
use crate::list::{Links, List};

/// SIEVE: one FIFO queue, a visited bit per slot set on hit, and a hand.
///
/// New items enter at the head with the bit clear. The hand moves from the
/// tail towards the head, clearing visited bits as it passes and evicting
/// the first unvisited item; it stays where it stopped and wraps to the tail
/// after passing the head. Unlike CLOCK, an item the hand passes stays where
/// it is in the queue rather than moving to the head, so it is examined
/// again only after the hand has swept every newer item: old popular items
/// keep their place and new items are sifted out quickly.
pub struct Sieve {
    links: Links,
    list: List,
    visited: Vec<bool>,
    /// The next slot to examine; `NO_SLOT` means "start from the tail".
    hand: Slot,
}

impl Sieve {
    /// A SIEVE for up to `slots` slots.
    pub fn new(slots: usize) -> Self {
        Sieve {
            links: Links::with_slots(slots),
            list: List::new(),
            visited: vec![false; slots],
            hand: NO_SLOT,
        }
    }

    /// The slot after `slot` in the hand's direction (towards the head), or
    /// `NO_SLOT` to wrap around to the tail.
    fn towards_head(&self, slot: Slot) -> Slot {
        self.links.prev(slot).unwrap_or(NO_SLOT)
    }
}

impl ReplacementPolicy for Sieve {
    #[inline]
    fn insert(&mut self, slot: Slot, _key: BlockKey, _weight: u64) {
        self.visited[slot as usize] = false;
        self.links.push_front(&mut self.list, slot);
    }

    #[inline]
    fn hit(&mut self, slot: Slot) {
        self.visited[slot as usize] = true;
    }

    fn remove(&mut self, slot: Slot) {
        // The hand must not be left on a slot that is no longer queued; it
        // moves on exactly as if it had just evicted `slot`.
        if self.hand == slot {
            self.hand = self.towards_head(slot);
        }
        self.links.unlink(&mut self.list, slot);
    }

    fn evict(&mut self, _incoming: BlockKey, _keys: &[BlockKey]) -> Slot {
        let tail = self.list.back().expect("evict called on an empty cache");
        let mut slot = if self.hand == NO_SLOT { tail } else { self.hand };
        // Terminates within one sweep: every slot passed has its bit cleared.
        while std::mem::take(&mut self.visited[slot as usize]) {
            slot = self.links.prev(slot).unwrap_or(tail);
        }
        self.hand = self.towards_head(slot);
        self.links.unlink(&mut self.list, slot);
        slot
    }

    fn reserve_slots(&mut self, slots: usize) {
        self.links.ensure_slots(slots);
        if self.visited.len() < slots {
            self.visited.resize(slots, false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::tests::{run_sequence, Sequence};
    use crate::policy::Clock;

    #[test]
    fn hand_stays_and_retained_items_keep_their_place() {
        // Capacity 3. a b c fill; queue head..tail = c b a. a hit (visited).
        // d: hand starts at the tail a: visited, cleared, a stays put; b is
        //    unvisited: evict b. Hand -> c. Queue d c a.
        // e: hand at c, unvisited: evict c. Hand -> d. Queue e d a.
        // f: hand at d, unvisited: evict d. Hand -> e. Queue f e a.
        // a: still cached, a hit.
        // CLOCK moves a to the head at d, so a becomes the oldest again and
        // goes at f, and the final a misses.
        let seq = Sequence::new(3, "a b c a d e f a");
        assert_eq!(run_sequence(Sieve::new(3), &seq), "m m m h m(b) m(c) m(d) h");
        assert_eq!(run_sequence(Clock::new(3), &seq), "m m m h m(b) m(c) m(a) m(d)");
    }

    #[test]
    fn hand_wraps_from_head_to_tail() {
        // Capacity 2. a b fill; queue head..tail = b a. a and b hit.
        // c: the hand sweeps a (cleared) and b (cleared), passes the head,
        //    wraps to the tail a, now unvisited: evict a. Hand -> b.
        //    Queue c b.
        // d: hand at b, cleared by the sweep: evict b. The hand rests on c,
        //    which d then joins ahead of. Queue d c.
        // c hit. e: hand at c: visited, cleared; on towards the head to d,
        //    never visited: evict d, although it is newer than c.
        let seq = Sequence::new(2, "a b a b c d c e");
        assert_eq!(run_sequence(Sieve::new(2), &seq), "m m h h m(a) m(b) h m(d)");
    }

    #[test]
    fn removing_the_slot_under_the_hand_moves_the_hand_on() {
        let keys: Vec<BlockKey> = (0..4).map(|b| BlockKey::new(0, b)).collect();
        let new = BlockKey::new(0, 99);
        let mut s = Sieve::new(4);
        for slot in 0..4 {
            s.insert(slot, keys[slot as usize], 1);
        }
        // Queue head..tail = 3 2 1 0. 0 visited: the hand clears it and
        // evicts 1, then rests on 2.
        s.hit(0);
        assert_eq!(s.evict(new, &keys), 1);
        // Removing 2 must move the hand on to 3, not leave it dangling.
        s.remove(2);
        assert_eq!(s.evict(new, &keys), 3);
        // 3 was the head: the hand wraps to the tail, 0, whose bit is clear.
        assert_eq!(s.evict(new, &keys), 0);
    }
}
