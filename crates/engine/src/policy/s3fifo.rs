//! S3-FIFO: three static FIFO queues (J. Yang, Y. Zhang, Z. Qiu, Y. Yue and
//! K. V. Rashmi, "FIFO queues are all you need for cache eviction",
//! SOSP'23, Algorithm 1).

use super::ghost::Ghosts;
use super::ReplacementPolicy;
use crate::key::{BlockKey, Slot};
use crate::list::{Links, List};

/// G, the only ghost list.
const G: usize = 0;

/// Which resident queue a slot is on.
const NONE: u8 = 0;
const SMALL: u8 = 1;
const MAIN: u8 = 2;

/// The frequency counter saturates here (two bits).
const MAX_FREQ: u8 = 3;

/// An item leaving S moves to M if hit at least this often since insertion.
const MOVE_TO_MAIN: u8 = 1;

/// S3-FIFO: a small FIFO S (10 % of the weight), a main FIFO M (the rest),
/// and a ghost FIFO G of keys evicted from S, remembering as much weight as
/// M holds (90 %).
///
/// Each item has a 2-bit frequency, 0 on insertion, incremented on hit up to
/// 3. A miss whose key is in G goes to M, any other to S (also while the
/// cache is still filling, as in the paper; libCacheSim's current S3FIFO.c
/// differs there). Eviction takes S's tail while S holds at least 10 % of
/// the capacity (Algorithm 1's `S.size >= 0.1 * cache size`, compared
/// without rounding) or M is empty: if it was hit since insertion it moves
/// to M's head with its frequency reset to 0, else it is evicted and its key
/// goes to G. Otherwise M's tail is taken: with frequency above 0 it is
/// decremented and reinserted at M's head, else evicted. This repeats until
/// an item is evicted; the S-or-M choice is made again at every step, so a
/// promotion that brings S under 10 % lets M give up the item, which is how
/// the paper's "insert into M, evict from M if full" nets out in one cache.
///
/// **Promotion threshold:** an item moves from S to M when its frequency is
/// at least 1, that is when it was accessed again after the access that
/// inserted it. This is the paper's prose ("moved to M if it is accessed
/// more than once", counting the inserting access) and the threshold the
/// paper's figures and libCacheSim used at the time (`S3FIFO-0.1000-1`).
/// Algorithm 1 as printed says `t.freq > 1`, and libCacheSim now defaults
/// to `move-to-main-threshold=2`; both demand two hits in S.
///
/// A key found in G leaves it when its miss begins (the first `evict`, or
/// the `insert` if the cache had room), as libCacheSim's lookup does, so the
/// evictions of that miss cannot push it out of G first.
pub struct S3Fifo {
    capacity: u64,
    links: Links,
    small: List,
    main: List,
    small_weight: u64,
    weight: Vec<u64>,
    freq: Vec<u8>,
    queue: Vec<u8>,
    ghost: Ghosts<1>,
    /// A miss found in G when its first eviction ran, bound for M.
    to_main: Option<BlockKey>,
}

impl S3Fifo {
    /// An S3-FIFO for a cache of `capacity` weight units using up to `slots`
    /// slots; G has `slots` entries at most (with unit weights its 90 %
    /// bound is the tighter).
    pub fn new(capacity: u64, slots: usize) -> Self {
        S3Fifo {
            capacity,
            links: Links::with_slots(slots),
            small: List::new(),
            main: List::new(),
            small_weight: 0,
            weight: vec![0; slots],
            freq: vec![0; slots],
            queue: vec![NONE; slots],
            ghost: Ghosts::new(slots),
            to_main: None,
        }
    }

    /// S at or above 10 % of the capacity.
    fn small_full(&self) -> bool {
        u128::from(self.small_weight) * 10 >= u128::from(self.capacity)
    }

    /// G above M's nominal 90 % of the capacity.
    fn ghost_over(&self) -> bool {
        u128::from(self.ghost.weight(G)) * 10 > u128::from(self.capacity) * 9
    }

    fn unlink(&mut self, slot: Slot) {
        match self.queue[slot as usize] {
            SMALL => {
                self.links.unlink(&mut self.small, slot);
                self.small_weight -= self.weight[slot as usize];
            }
            MAIN => self.links.unlink(&mut self.main, slot),
            _ => debug_assert!(false, "slot {slot} is not cached"),
        }
        self.queue[slot as usize] = NONE;
    }

    fn push_main(&mut self, slot: Slot) {
        self.links.push_front(&mut self.main, slot);
        self.queue[slot as usize] = MAIN;
    }
}

impl ReplacementPolicy for S3Fifo {
    fn insert(&mut self, slot: Slot, key: BlockKey, weight: u64) {
        self.weight[slot as usize] = weight;
        self.freq[slot as usize] = 0;
        let from_ghost = self.to_main.take() == Some(key);
        if from_ghost || self.ghost.take(key).is_some() {
            self.push_main(slot);
        } else {
            self.links.push_front(&mut self.small, slot);
            self.small_weight += weight;
            self.queue[slot as usize] = SMALL;
        }
    }

    #[inline]
    fn hit(&mut self, slot: Slot) {
        let f = &mut self.freq[slot as usize];
        *f = (*f + 1).min(MAX_FREQ);
    }

    fn remove(&mut self, slot: Slot) {
        self.unlink(slot);
    }

    fn evict(&mut self, incoming: BlockKey, keys: &[BlockKey]) -> Slot {
        if self.ghost.take(incoming).is_some() {
            self.to_main = Some(incoming);
        }
        // Terminates: each step from S shrinks S, each step in M lowers a
        // frequency, and a step that does neither evicts.
        loop {
            if let Some(tail) = self.small.back().filter(|_| self.small_full() || self.main.is_empty()) {
                self.unlink(tail);
                if self.freq[tail as usize] >= MOVE_TO_MAIN {
                    self.freq[tail as usize] = 0;
                    self.push_main(tail);
                    continue;
                }
                self.ghost.push(G, keys[tail as usize], self.weight[tail as usize]);
                while self.ghost_over() && self.ghost.pop_oldest(G) {}
                return tail;
            }
            // S is taken above whenever M is empty: both empty is an empty cache.
            let tail = self.main.back().expect("evict called on an empty cache");
            if self.freq[tail as usize] > 0 {
                self.freq[tail as usize] -= 1;
                self.links.move_to_front(&mut self.main, tail);
            } else {
                self.unlink(tail);
                return tail;
            }
        }
    }

    fn reserve_slots(&mut self, slots: usize) {
        self.links.ensure_slots(slots);
        if self.weight.len() < slots {
            self.weight.resize(slots, 0);
            self.freq.resize(slots, 0);
            self.queue.resize(slots, NONE);
        }
        self.ghost.grow(slots);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::tests::{run_sequence, Sequence};
    use crate::policy::Lru;

    #[test]
    fn one_hit_wonders_leave_quickly_and_ghosts_readmit() {
        // Capacity 4: S counts as full from one item on (10 % of 4 is 0.4),
        // G keeps at most 3 keys (90 % of 4 is 3.6).
        // a b c d fill S (tail..head a b c d). b hit: freq 1.
        // e: S tail a, never hit: evicted, G [a].
        // f: S tail b was hit: moves to M (freq reset). S tail c: evicted,
        //    G [a c]. S d e f, M b.
        // a: in G, so it leaves G (G [c]) and is bound for M. S tail d:
        //    evicted, G [c d]. a joins M: M (tail..head) b a. S e f.
        // g h: the one-hit wonders e and f go the same way; G [c d e f]
        //    exceeds 3 and drops c: G [d e f].
        // b a: both in M, hits.
        let seq = Sequence::new(4, "a b c d b e f a g h b a");
        assert_eq!(run_sequence(S3Fifo::new(4, 4), &seq), "m m m m h m(a) m(c) m(d) m(e) m(f) h h");
        // LRU lets the stream of new keys push b out before its reuse.
        assert_eq!(run_sequence(Lru::new(4), &seq), "m m m m h m(a) m(c) m(d) m(b) m(e) m(f) h");
    }

    #[test]
    fn main_reinserts_hit_items_and_only_small_evictions_leave_ghosts() {
        // Capacity 4. a b c d fill S and all four are hit (freq 1).
        // e: S's tail a moves to M, then b, c, d: S is empty, so M's tail a
        //    (freq reset to 0 by the move) is evicted. M b c d, S e.
        // b e: hits, freq 1 each.
        // f: S's tail e moves to M (M b c d e). S empty: M's tail b has
        //    freq 1: decremented and reinserted at the head (M c d e b);
        //    c has freq 0: evicted. No ghost: c left from M.
        // c: not in G, so into S; S's tail f, never hit, evicted to G [f].
        // f: in G: it leaves G and goes to M; S's tail c is evicted to G.
        let seq = Sequence::new(4, "a b c d a b c d e b e f c f");
        assert_eq!(run_sequence(S3Fifo::new(4, 4), &seq), "m m m m h h h h m(a) h h m(c) m(f) m(c)");
    }

    #[test]
    fn promotion_needs_one_hit_since_insertion() {
        let keys: Vec<BlockKey> = (0..3).map(|b| BlockKey::new(0, b)).collect();
        let new = BlockKey::new(0, 99);
        // Capacity 20: S counts as full from weight 2.
        let mut s = S3Fifo::new(20, 3);
        for slot in 0..3 {
            s.insert(slot, keys[slot as usize], 1);
        }
        s.hit(0);
        // S (tail..head) 0 1 2: 0 was hit once and moves to M; S 1 2 is
        // still full: 1 is evicted.
        assert_eq!(s.evict(new, &keys), 1);
        assert_eq!(s.queue[0], MAIN);
        assert_eq!(s.freq[0], 0);
        // S now holds 2 alone (weight 1 < 2): M's tail 0 goes, freq 0.
        assert_eq!(s.evict(new, &keys), 0);
    }
}
