//! ARC: Adaptive Replacement Cache (N. Megiddo and D. S. Modha, "ARC: A
//! Self-Tuning, Low Overhead Replacement Cache", FAST'03, Fig. 4).

use super::ghost::Ghosts;
use super::ReplacementPolicy;
use crate::key::{BlockKey, Slot};
use crate::list::{Links, List};

/// Ghost list B1 (keys recently evicted from T1).
const B1: usize = 0;
/// Ghost list B2 (keys recently evicted from T2).
const B2: usize = 1;

/// Which resident list a slot is on.
const NONE: u8 = 0;
const T1: u8 = 1;
const T2: u8 = 2;

/// Adaptive Replacement Cache, exactly per the paper's pseudo-code but in
/// weight units.
///
/// T1 holds items seen once recently, T2 items seen at least twice; B1 and
/// B2 remember the keys (and weights) of items evicted from T1 and T2. The
/// target size `p` of T1 grows on a B1 hit by `w * max(1, |B2|/|B1|)` and
/// shrinks on a B2 hit by `w * max(1, |B1|/|B2|)`, where `w` is the weight
/// the ghost entry remembers and `|X|` is a list's total weight; with unit
/// weights this is exactly the paper's δ1/δ2. `p` is kept as a real number,
/// as in the paper, so the ratios are not truncated.
///
/// The trait splits the paper's single access step: on a miss in a full
/// cache `evict(x)` runs REPLACE (possibly several times in object mode) and
/// `insert(x)` then places x; on a miss in a non-full cache only `insert`
/// runs. The adaptation of `p` happens in whichever of the two comes first
/// for a given miss, and is remembered so it happens once per miss. The
/// directory bounds of case IV (|T1|+|B1| ≤ c, |T1|+|T2|+|B1|+|B2| ≤ 2c) are
/// enforced in `insert`, where the incoming weight is known, by dropping LRU
/// ghosts of B1, then of B2. With unit weights this drops exactly the ghosts
/// the paper drops; the paper's "delete the LRU page of T1" (case IV-A when
/// T1 alone fills c) falls out as REPLACE moving T1's LRU to B1 and the trim
/// dropping that ghost again.
pub struct Arc {
    /// c, in weight units.
    capacity: u64,
    /// Target weight of T1, 0 ≤ p ≤ c.
    p: f64,
    links: Links,
    t1: List,
    t2: List,
    t1_weight: u64,
    t2_weight: u64,
    weight: Vec<u64>,
    list_of: Vec<u8>,
    ghosts: Ghosts<2>,
    /// The miss whose ghost hit has already adapted `p`, so that the evicts
    /// and the insert of one miss adapt it once.
    pending: Option<PendingMiss>,
}

#[derive(Clone, Copy)]
struct PendingMiss {
    key: BlockKey,
    /// The ghost list the key was found on when the miss began.
    ghost: Option<usize>,
}

impl Arc {
    /// An ARC for a cache of `capacity` weight units using up to `slots`
    /// slots; B1 and B2 share a ghost arena of `slots` entries (the paper's
    /// bound of c entries in block mode).
    pub fn new(capacity: u64, slots: usize) -> Self {
        Arc {
            capacity,
            p: 0.0,
            links: Links::with_slots(slots),
            t1: List::new(),
            t2: List::new(),
            t1_weight: 0,
            t2_weight: 0,
            weight: vec![0; slots],
            list_of: vec![NONE; slots],
            ghosts: Ghosts::new(slots),
            pending: None,
        }
    }

    /// The current target weight of T1 (for tests and reports).
    pub fn target(&self) -> f64 {
        self.p
    }

    /// Start (or continue) the miss of `key`: on its first call for this
    /// miss, a ghost hit adapts `p` (cases II and III).
    fn begin_miss(&mut self, key: BlockKey) -> Option<usize> {
        if let Some(pending) = self.pending {
            if pending.key == key {
                return pending.ghost;
            }
        }
        let ghost = self.ghosts.lookup(key).map(|(list, w)| {
            let (b1, b2) = (self.ghosts.weight(B1) as f64, self.ghosts.weight(B2) as f64);
            let w = w as f64;
            // The key is on `list`, so that list's weight is positive.
            if list == B1 {
                let delta = if b1 >= b2 { w } else { w * b2 / b1 };
                self.p = (self.p + delta).min(self.capacity as f64);
            } else {
                let delta = if b2 >= b1 { w } else { w * b1 / b2 };
                self.p = (self.p - delta).max(0.0);
            }
            list
        });
        self.pending = Some(PendingMiss { key, ghost });
        ghost
    }

    fn unlink(&mut self, slot: Slot) {
        let w = self.weight[slot as usize];
        match self.list_of[slot as usize] {
            T1 => {
                self.links.unlink(&mut self.t1, slot);
                self.t1_weight -= w;
            }
            T2 => {
                self.links.unlink(&mut self.t2, slot);
                self.t2_weight -= w;
            }
            _ => debug_assert!(false, "slot {slot} is not cached"),
        }
        self.list_of[slot as usize] = NONE;
    }

    fn push_t2(&mut self, slot: Slot) {
        self.links.push_front(&mut self.t2, slot);
        self.t2_weight += self.weight[slot as usize];
        self.list_of[slot as usize] = T2;
    }
}

impl ReplacementPolicy for Arc {
    fn insert(&mut self, slot: Slot, key: BlockKey, weight: u64) {
        let ghost = self.begin_miss(key);
        self.pending = None;
        if ghost.is_some() {
            self.ghosts.take(key);
        }
        let c = self.capacity;
        if ghost.is_none() {
            // Case IV: x joins L1, which must stay within c ...
            while self.t1_weight + weight + self.ghosts.weight(B1) > c && self.ghosts.pop_oldest(B1) {}
        }
        // ... and the whole directory within 2c.
        while self.t1_weight + self.t2_weight + weight + self.ghosts.weight(B1) + self.ghosts.weight(B2)
            > c.saturating_mul(2)
            && (self.ghosts.pop_oldest(B2) || self.ghosts.pop_oldest(B1))
        {}
        self.weight[slot as usize] = weight;
        if ghost.is_some() {
            self.push_t2(slot);
        } else {
            self.links.push_front(&mut self.t1, slot);
            self.t1_weight += weight;
            self.list_of[slot as usize] = T1;
        }
    }

    fn hit(&mut self, slot: Slot) {
        self.pending = None;
        // Case I: any hit makes the item frequent.
        self.unlink(slot);
        self.push_t2(slot);
    }

    fn remove(&mut self, slot: Slot) {
        self.unlink(slot);
    }

    fn evict(&mut self, incoming: BlockKey, keys: &[BlockKey]) -> Slot {
        let in_b2 = self.begin_miss(incoming) == Some(B2);
        // REPLACE(x, p); an empty T2 (or T1) leaves only the other choice.
        let t1 = self.t1_weight as f64;
        #[allow(clippy::float_cmp)] // the paper's |T1| = p test, exact on purpose
        let from_t1 = self.t2.is_empty() || (!self.t1.is_empty() && (t1 > self.p || (in_b2 && t1 == self.p)));
        let (victim, ghost) = if from_t1 { (self.t1.back(), B1) } else { (self.t2.back(), B2) };
        let victim = victim.expect("evict called on an empty cache");
        self.unlink(victim);
        self.ghosts.push(ghost, keys[victim as usize], self.weight[victim as usize]);
        victim
    }

    fn reserve_slots(&mut self, slots: usize) {
        self.links.ensure_slots(slots);
        if self.weight.len() < slots {
            self.weight.resize(slots, 0);
            self.list_of.resize(slots, NONE);
        }
        self.ghosts.grow(slots);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::tests::{run_sequence, Sequence};

    /// Forwards to an `Arc` the caller keeps, so a test can look at `p`.
    struct Probe<'a>(&'a mut Arc, &'a mut Vec<f64>);

    impl ReplacementPolicy for Probe<'_> {
        fn insert(&mut self, slot: Slot, key: BlockKey, weight: u64) {
            self.0.insert(slot, key, weight);
            self.1.push(self.0.target());
        }
        fn hit(&mut self, slot: Slot) {
            self.0.hit(slot);
            self.1.push(self.0.target());
        }
        fn remove(&mut self, slot: Slot) {
            self.0.remove(slot);
        }
        fn evict(&mut self, incoming: BlockKey, keys: &[BlockKey]) -> Slot {
            self.0.evict(incoming, keys)
        }
        fn reserve_slots(&mut self, slots: usize) {
            self.0.reserve_slots(slots);
        }
    }

    #[test]
    fn p_adapts_to_ghost_hits() {
        // c = 4, p = 0. (Lists written LRU..MRU.)
        //  1-4  a b a b: T2 a b.          5-6  c d: T1 c d. Full.
        //  7 e: REPLACE, |T1| 2 > p 0: c to B1. T1 d e.                 m(c)
        //  8 c: B1 hit, |B1| 1 >= |B2| 0: p += 1 -> 1. |T1| 2 > 1: d to
        //       B1. c to T2 a b c. B1 d.                                 m(d)
        //  9 f: |T1| 1 = p (not > p, c not in B2): T2's LRU a to B2.
        //       T1 e f.                                                  m(a)
        // 10 e: hit in T1 -> T2 b c e. T1 f.                               h
        // 11 g: |T1| 1 = p: T2's LRU b to B2 (B2 a b). T1 f g.           m(b)
        // 12 d: B1 hit with |B1| 1 < |B2| 2: p += 2/1 -> 3. |T1| 2 <= 3:
        //       T2's LRU c to B2 (a b c). d to T2 e d. B1 empty.         m(c)
        // 13 a: B2 hit, |B2| 3 >= |B1| 0: p -= 1 -> 2. |T1| 2 = p and
        //       a is in B2: T1's LRU f to B1. a to T2 e d a.             m(f)
        // 14 f: B1 hit, |B1| 1 < |B2| 2 (b c): p += 2 -> 4 = c. |T1| 1:
        //       T2's LRU e to B2.                                        m(e)
        let seq = Sequence::new(4, "a b a b c d e c f e g d a f");
        let mut arc = Arc::new(4, 4);
        let mut p = Vec::new();
        let out = run_sequence(Probe(&mut arc, &mut p), &seq);
        assert_eq!(out, "m m h h m m m(c) m(d) m(a) h m(b) m(c) m(f) m(e)");
        assert_eq!(p, [0., 0., 0., 0., 0., 0., 0., 1., 1., 1., 1., 3., 2., 4.]);
        // T1 g; T2 d a f; B1 empty; B2 b c e.
        assert_eq!((arc.t1_weight, arc.t2_weight, arc.ghosts.len(B1), arc.ghosts.len(B2)), (1, 3, 0, 3));
    }

    #[test]
    fn frequent_items_survive_a_scan() {
        // c = 4. a b hit once each: T2 a b. c d fill T1. The scan e f g h
        // evicts T1's LRU each time (|T1| 2 > p 0); B1 never holds more
        // than c - |T1| = 2 ghosts (c, then d are dropped). a b still hit.
        let seq = Sequence::new(4, "a b a b c d e f g h a b");
        assert_eq!(run_sequence(Arc::new(4, 4), &seq), "m m h h m m m(c) m(d) m(e) m(f) h h");
        // LRU: a b are the oldest when the scan starts.
        assert_eq!(
            run_sequence(crate::policy::Lru::new(4), &seq),
            "m m h h m m m(a) m(b) m(c) m(d) m(e) m(f)"
        );
    }

    #[test]
    fn one_adaptation_per_miss_full_or_not() {
        let key = |b| BlockKey::new(0, b);
        let keys: Vec<BlockKey> = (0..4).map(key).collect();
        let mut arc = Arc::new(4, 4);
        for slot in 0..4 {
            arc.insert(slot, keys[slot as usize], 1);
        }
        arc.hit(0);
        arc.hit(1);
        // T1 2 3, T2 0 1. Miss of key 9: T1's LRU (slot 2, key 2) to B1.
        assert_eq!(arc.evict(key(9), &keys), 2);
        arc.insert(2, key(9), 1);
        assert_eq!(arc.target(), 0.0);
        // Key 2 comes back; object mode may evict twice for it: p moves
        // once (B1 hit, +1), and both victims go to ghosts: T1's LRU (slot
        // 3, |T1| 2 > p 1), then T2's LRU (slot 0, |T1| 1 = p).
        let mut keys = keys;
        keys[2] = key(9);
        assert_eq!(arc.evict(key(2), &keys), 3);
        assert_eq!(arc.target(), 1.0);
        assert_eq!(arc.evict(key(2), &keys), 0);
        assert_eq!(arc.target(), 1.0);
        arc.insert(3, key(2), 1);
        keys[3] = key(2);
        assert_eq!(arc.target(), 1.0);
        assert_eq!((arc.t1_weight, arc.t2_weight), (1, 2));
        // Not full (slot 0 free): the miss of key 3, a B1 ghost, only
        // inserts, and adapts p once: |B1| 1 >= |B2| 1 (key 0), +1.
        arc.insert(0, key(3), 1);
        assert_eq!(arc.target(), 2.0);
        assert_eq!((arc.t1_weight, arc.t2_weight), (1, 3));
        // A removed item leaves no ghost: key 3 comes back as new, to T1.
        arc.remove(0);
        assert_eq!(arc.ghosts.lookup(key(3)), None);
        arc.insert(0, key(3), 1);
        assert_eq!((arc.t1_weight, arc.t2_weight), (2, 2));
        assert_eq!(arc.target(), 2.0);
    }
}
