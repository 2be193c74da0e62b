//! 2Q, full version (T. Johnson and D. Shasha, "2Q: A Low Overhead High
//! Performance Buffer Management Replacement Algorithm", VLDB'94, Fig. 3).

use super::ghost::Ghosts;
use super::ReplacementPolicy;
use crate::key::{BlockKey, Slot};
use crate::list::{Links, List};

/// A1out, the only ghost list.
const A1OUT: usize = 0;

/// Which resident queue a slot is on.
const NONE: u8 = 0;
const A1IN: u8 = 1;
const AM: u8 = 2;

/// Full 2Q: a FIFO A1in for first-time items, a ghost FIFO A1out of keys
/// paged out of A1in, and an LRU Am for items re-referenced after leaving
/// A1in.
///
/// A hit in A1in does nothing (the paper's "correlated reference"), a hit in
/// Am moves the item to Am's front. A miss whose key is remembered in A1out
/// goes to Am, any other miss to A1in. Reclaiming takes A1in's tail (its key
/// goes to A1out) while A1in holds more than Kin, otherwise Am's tail (no
/// history kept: it has not been used for a while). A key found in A1out
/// leaves it when its miss begins (the first `evict`, or the `insert` if the
/// cache had room), so it neither occupies A1out nor can be trimmed from it
/// while its item comes in. The paper's recommended
/// Kin = 25 % and Kout = 50 % of the cache are weights here, so in object
/// mode they are shares of bytes. A one-time scan passes through A1in and
/// A1out without disturbing Am.
pub struct TwoQ {
    capacity: u64,
    links: Links,
    a1in: List,
    am: List,
    a1in_weight: u64,
    weight: Vec<u64>,
    queue: Vec<u8>,
    a1out: Ghosts<1>,
    /// A miss found in A1out when its first eviction ran, bound for Am.
    to_am: Option<BlockKey>,
}

impl TwoQ {
    /// A 2Q for a cache of `capacity` weight units using up to `slots`
    /// slots; A1out has `slots` entries at most (with unit weights Kout
    /// allows half that).
    pub fn new(capacity: u64, slots: usize) -> Self {
        TwoQ {
            capacity,
            links: Links::with_slots(slots),
            a1in: List::new(),
            am: List::new(),
            a1in_weight: 0,
            weight: vec![0; slots],
            queue: vec![NONE; slots],
            a1out: Ghosts::new(slots),
            to_am: None,
        }
    }

    /// A1in weight above Kin = capacity / 4 (compared without rounding).
    fn a1in_over_kin(&self) -> bool {
        u128::from(self.a1in_weight) * 4 > u128::from(self.capacity)
    }

    /// A1out weight above Kout = capacity / 2.
    fn a1out_over_kout(&self) -> bool {
        u128::from(self.a1out.weight(A1OUT)) * 2 > u128::from(self.capacity)
    }

    fn unlink(&mut self, slot: Slot) {
        match self.queue[slot as usize] {
            A1IN => {
                self.links.unlink(&mut self.a1in, slot);
                self.a1in_weight -= self.weight[slot as usize];
            }
            AM => self.links.unlink(&mut self.am, slot),
            _ => debug_assert!(false, "slot {slot} is not cached"),
        }
        self.queue[slot as usize] = NONE;
    }
}

impl ReplacementPolicy for TwoQ {
    fn insert(&mut self, slot: Slot, key: BlockKey, weight: u64) {
        self.weight[slot as usize] = weight;
        let from_a1out = self.to_am.take() == Some(key);
        if from_a1out || self.a1out.take(key).is_some() {
            self.links.push_front(&mut self.am, slot);
            self.queue[slot as usize] = AM;
        } else {
            self.links.push_front(&mut self.a1in, slot);
            self.a1in_weight += weight;
            self.queue[slot as usize] = A1IN;
        }
    }

    #[inline]
    fn hit(&mut self, slot: Slot) {
        if self.queue[slot as usize] == AM {
            self.links.move_to_front(&mut self.am, slot);
        }
    }

    fn remove(&mut self, slot: Slot) {
        self.unlink(slot);
    }

    fn evict(&mut self, incoming: BlockKey, keys: &[BlockKey]) -> Slot {
        // As in the paper, A1out is consulted before reclaiming, whose Kout
        // trim could otherwise forget the very key being fetched.
        if self.a1out.take(incoming).is_some() {
            self.to_am = Some(incoming);
        }
        // An empty Am leaves only A1in, whatever its size.
        if self.a1in_over_kin() || self.am.is_empty() {
            if let Some(victim) = self.a1in.back() {
                self.unlink(victim);
                self.a1out.push(A1OUT, keys[victim as usize], self.weight[victim as usize]);
                while self.a1out_over_kout() && self.a1out.pop_oldest(A1OUT) {}
                return victim;
            }
        }
        let victim = self.am.back().expect("evict called on an empty cache");
        self.unlink(victim);
        victim
    }

    fn reserve_slots(&mut self, slots: usize) {
        self.links.ensure_slots(slots);
        if self.weight.len() < slots {
            self.weight.resize(slots, 0);
            self.queue.resize(slots, NONE);
        }
        self.a1out.grow(slots);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::tests::{run_sequence, Sequence};

    #[test]
    fn a1out_promotes_and_scans_pass_by() {
        // Capacity 4: Kin = 1 (A1in is reclaimed while it holds 2 or more),
        // Kout = 2 (A1out keeps the two newest keys).
        // a b c d fill A1in (tail..head a b c d). a hits: nothing moves.
        // e: A1in 4 > Kin: page out a. A1out [a]. A1in b c d e.
        // a: in A1out, so it leaves A1out for Am; page out b. A1in c d e,
        //    Am a, A1out [b].
        // b: likewise; page out c. A1in d e, Am a b, A1out [c].
        // f g h, a scan: each pages out A1in's tail (d, e, f); A1out ends
        //    as [e f].
        // a b: still in Am, hits: the scan went through A1in only.
        let seq = Sequence::new(4, "a b c d a e a b f g h a b");
        assert_eq!(run_sequence(TwoQ::new(4, 4), &seq), "m m m m h m(a) m(b) m(c) m(d) m(e) m(f) h h");
        // LRU keeps a at e (it was hit), but the scan flushes a and b.
        assert_eq!(
            run_sequence(crate::policy::Lru::new(4), &seq),
            "m m m m h m(b) h m(c) m(d) m(e) m(a) m(b) m(f)"
        );
    }

    #[test]
    fn kout_bounds_history_and_am_is_reclaimed_once_a1in_is_small() {
        // Capacity 4 (Kin 1, Kout 2). a b c d fill A1in; e f g page out a b
        // c: A1out [a b c] is over Kout and drops a, so A1out [b c], A1in
        // d e f g.
        // a: A1out has forgotten a: a stranger again. Page out d; A1out
        //    [b c d] drops b: [c d]. A1in e f g a.
        // b: a stranger too. Page out e; A1out [d e]. A1in f g a b.
        // d: remembered: it leaves A1out ([e]) for Am; page out f, A1out
        //    [e f]. A1in g a b, Am d.
        let seq = Sequence::new(4, "a b c d e f g a b d");
        assert_eq!(run_sequence(TwoQ::new(4, 4), &seq), "m m m m m(a) m(b) m(c) m(d) m(e) m(f)");

        // Capacity 4 again. a b c d fill; e f page out a b: A1out [a b].
        // b: leaves A1out for Am; page out c. A1in d e f, Am b, A1out [a c].
        // c: likewise, page out d. A1in e f, Am (LRU..MRU) b c, A1out [a d].
        // d: likewise, page out e. A1in f, Am b c d, A1out [a e].
        // b: hit in Am moves it to the MRU end: Am c d b.
        // g: A1in holds 1, not above Kin: reclaim Am's LRU, c.
        let seq = Sequence::new(4, "a b c d e f b c d b g");
        assert_eq!(run_sequence(TwoQ::new(4, 4), &seq), "m m m m m(a) m(b) m(c) m(d) m(e) h m(c)");
    }
}
