//! Every replacement policy, through `PolicyKind::build`, driven by a small
//! weight-aware reference cache: random sequences must never make a policy
//! evict something uncached, lose track of an item, overfill the cache or
//! behave differently twice; and on fixed workloads the hit counts must land
//! where the policies' known behaviour puts them.

use std::collections::HashMap;

use cloudcache_engine::{AnyPolicy, BlockKey, PolicyKind, ReplacementPolicy, Slot};
use proptest::prelude::*;

/// What happened on one operation, for determinism checks.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Event {
    Hit,
    /// A miss that evicted these keys (in order).
    Miss(Vec<u64>),
    /// Too heavy to cache at all.
    Bypass,
    Removed,
    Absent,
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Access(u64),
    Remove(u64),
}

/// A reference cache: a slot table, a key map and the capacity rule, with
/// every replacement decision left to the policy. Slots are handed out from
/// a free list and the table grows through `reserve_slots`, as the engine's
/// object mode does.
struct Driver {
    policy: AnyPolicy,
    capacity: u64,
    used: u64,
    keys: Vec<BlockKey>,
    weights: Vec<u64>,
    cached: Vec<bool>,
    map: HashMap<BlockKey, Slot>,
    free: Vec<Slot>,
    hits: u64,
}

fn key(k: u64) -> BlockKey {
    BlockKey::new((k % 3) as u32, k)
}

impl Driver {
    fn new(kind: PolicyKind, capacity: u64, initial_slots: usize) -> Self {
        let mut d = Driver {
            policy: kind.build(capacity, initial_slots),
            capacity,
            used: 0,
            keys: Vec::new(),
            weights: Vec::new(),
            cached: Vec::new(),
            map: HashMap::new(),
            free: Vec::new(),
            hits: 0,
        };
        for _ in 0..initial_slots {
            d.new_slot();
        }
        d.free.reverse();
        d
    }

    fn new_slot(&mut self) -> Slot {
        let slot = self.keys.len() as Slot;
        self.keys.push(BlockKey::default());
        self.weights.push(0);
        self.cached.push(false);
        self.free.push(slot);
        slot
    }

    fn cached_items(&self) -> usize {
        self.map.len()
    }

    fn evict_one(&mut self, incoming: BlockKey) -> u64 {
        let victim = self.policy.evict(incoming, &self.keys);
        let v = victim as usize;
        assert!(v < self.cached.len() && self.cached[v], "evicted slot {victim} is not cached");
        assert_ne!(self.keys[v], incoming, "evicted the incoming key");
        self.cached[v] = false;
        self.used -= self.weights[v];
        self.map.remove(&self.keys[v]);
        self.free.push(victim);
        self.keys[v].block
    }

    fn access(&mut self, k: u64, weight: u64) -> Event {
        let bk = key(k);
        if let Some(&slot) = self.map.get(&bk) {
            self.policy.hit(slot);
            self.hits += 1;
            return Event::Hit;
        }
        if weight > self.capacity {
            return Event::Bypass;
        }
        let mut evicted = Vec::new();
        while self.used + weight > self.capacity {
            evicted.push(self.evict_one(bk));
        }
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.new_slot();
                self.policy.reserve_slots(self.keys.len());
                self.free.pop().unwrap()
            }
        };
        let s = slot as usize;
        self.keys[s] = bk;
        self.weights[s] = weight;
        self.cached[s] = true;
        self.map.insert(bk, slot);
        self.policy.insert(slot, bk, weight);
        self.used += weight;
        assert!(self.used <= self.capacity);
        Event::Miss(evicted)
    }

    fn remove(&mut self, k: u64) -> Event {
        match self.map.remove(&key(k)) {
            Some(slot) => {
                self.policy.remove(slot);
                self.cached[slot as usize] = false;
                self.used -= self.weights[slot as usize];
                self.free.push(slot);
                Event::Removed
            }
            None => Event::Absent,
        }
    }

    fn check_policy_state(&self) {
        if let AnyPolicy::Arc(arc) = &self.policy {
            let p = arc.target();
            assert!((0.0..=self.capacity as f64).contains(&p), "ARC target {p} outside [0, c]");
        }
    }

    /// Evict everything: the policy must give up exactly the cached slots,
    /// each once, and then nothing more is cached.
    fn drain(&mut self) {
        let n = self.cached_items();
        for _ in 0..n {
            self.evict_one(key(u64::MAX));
        }
        assert_eq!(self.used, 0);
        assert!(self.map.is_empty());
    }
}

/// Replay `ops` (weights by key) and return the event log.
fn replay(kind: PolicyKind, capacity: u64, slots: usize, ops: &[Op], weights: &[u64]) -> Vec<Event> {
    let mut d = Driver::new(kind, capacity, slots);
    let mut log = Vec::with_capacity(ops.len());
    for &op in ops {
        log.push(match op {
            Op::Access(k) => d.access(k, weights[k as usize]),
            Op::Remove(k) => d.remove(k),
        });
        d.check_policy_state();
    }
    // The policy still works after everything, then gives everything back.
    for k in 0..weights.len() as u64 {
        d.access(k, weights[k as usize]);
    }
    d.drain();
    // And fills again from empty.
    for k in 0..weights.len() as u64 {
        d.access(k, weights[k as usize]);
    }
    log
}

const KEYS: u64 = 40;

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        9 => (0..KEYS).prop_map(Op::Access),
        1 => (0..KEYS).prop_map(Op::Remove),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// Block mode: unit weights, capacity = slots. A miss in a full cache
    /// evicts exactly one item, a miss with room evicts none, hits never.
    #[test]
    fn unit_weights(capacity in 1u64..24, ops in prop::collection::vec(op_strategy(), 0..400)) {
        let weights = vec![1; KEYS as usize];
        for kind in PolicyKind::ALL {
            let mut d = Driver::new(kind, capacity, capacity as usize);
            for &op in &ops {
                match op {
                    Op::Access(k) => {
                        let full = d.cached_items() as u64 == capacity;
                        let cached = d.map.contains_key(&key(k));
                        match d.access(k, 1) {
                            Event::Hit => prop_assert!(cached),
                            Event::Miss(evicted) => {
                                prop_assert!(!cached);
                                prop_assert_eq!(evicted.len(), usize::from(full), "{}", kind);
                            }
                            other => prop_assert!(false, "{kind}: unexpected {other:?}"),
                        }
                    }
                    Op::Remove(k) => {
                        d.remove(k);
                    }
                }
                d.check_policy_state();
            }
            // No slot beyond the capacity was ever needed.
            prop_assert_eq!(d.keys.len(), capacity as usize);
            d.drain();
            prop_assert_eq!(
                replay(kind, capacity, capacity as usize, &ops, &weights),
                replay(kind, capacity, capacity as usize, &ops, &weights)
            );
        }
    }

    /// Object mode: weights vary, the capacity is in weight units, the slot
    /// table starts small and grows.
    #[test]
    fn varying_weights(
        capacity in 1u64..60,
        slots in 0usize..4,
        weights in prop::collection::vec(1u64..12, KEYS as usize),
        ops in prop::collection::vec(op_strategy(), 0..400),
    ) {
        for kind in PolicyKind::ALL {
            let a = replay(kind, capacity, slots, &ops, &weights);
            let b = replay(kind, capacity, slots, &ops, &weights);
            prop_assert_eq!(a, b, "{} is not deterministic", kind);
        }
    }
}

/// splitmix64: a fixed, dependency-free pseudo-random sequence.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `len` draws from a Zipf(`alpha`) distribution over `items` keys, with
/// ranks scattered over the key space so popularity is not key order.
fn zipf(items: usize, alpha: f64, len: usize, seed: u64) -> Vec<u64> {
    let mut cdf: Vec<f64> = (1..=items).map(|r| 1.0 / (r as f64).powf(alpha)).collect();
    let total: f64 = cdf.iter().sum();
    let mut acc = 0.0;
    for c in &mut cdf {
        acc += *c / total;
        *c = acc;
    }
    let mut rng = Rng(seed);
    (0..len)
        .map(|_| {
            let u = rng.unit();
            let rank = cdf.partition_point(|&c| c < u).min(items - 1) as u64;
            rank.wrapping_mul(0x9e37_79b9) % (1 << 40)
        })
        .collect()
}

fn hits(kind: PolicyKind, capacity: u64, seq: &[u64]) -> u64 {
    let mut d = Driver::new(kind, capacity, capacity as usize);
    for &k in seq {
        d.access(k, 1);
    }
    d.hits
}

/// Belady's MIN: the most hits any policy can get.
fn optimal_hits(capacity: usize, seq: &[u64]) -> u64 {
    let mut next_use = vec![usize::MAX; seq.len()];
    let mut last: HashMap<u64, usize> = HashMap::new();
    for (i, &k) in seq.iter().enumerate().rev() {
        next_use[i] = last.get(&k).copied().unwrap_or(usize::MAX);
        last.insert(k, i);
    }
    let mut cached: HashMap<u64, usize> = HashMap::new();
    let mut by_next = std::collections::BTreeSet::new();
    let mut hits = 0;
    for (i, &k) in seq.iter().enumerate() {
        if let Some(n) = cached.get_mut(&k) {
            hits += 1;
            by_next.remove(&(*n, k));
            *n = next_use[i];
            by_next.insert((*n, k));
            continue;
        }
        if cached.len() == capacity {
            let &(n, victim) = by_next.iter().next_back().unwrap();
            by_next.remove(&(n, victim));
            cached.remove(&victim);
        }
        cached.insert(k, next_use[i]);
        by_next.insert((next_use[i], k));
    }
    hits
}

fn all_hits(capacity: u64, seq: &[u64]) -> HashMap<PolicyKind, u64> {
    PolicyKind::ALL.into_iter().map(|kind| (kind, hits(kind, capacity, seq))).collect()
}

#[test]
fn zipf_hit_counts_are_plausible() {
    let seq = zipf(5_000, 0.9, 200_000, 7);
    for capacity in [50u64, 500] {
        let h = all_hits(capacity, &seq);
        let opt = optimal_hits(capacity as usize, &seq);
        let (fifo, lru) = (h[&PolicyKind::Fifo], h[&PolicyKind::Lru]);
        eprintln!("zipf capacity {capacity}: opt {opt} {h:?}");
        for (&kind, &n) in &h {
            assert!(n <= opt, "{kind} beat Belady: {n} > {opt}");
            // Nothing does markedly worse than FIFO on a skewed workload.
            assert!(n * 100 >= fifo * 97, "{kind}: {n} hits, FIFO {fifo}");
        }
        // Under independent references, recency beats pure arrival order,
        // and the frequency-aware policies beat plain recency.
        assert!(lru > fifo);
        for kind in [PolicyKind::Arc, PolicyKind::TwoQ, PolicyKind::S3Fifo, PolicyKind::Sieve] {
            assert!(h[&kind] > lru, "{kind}: {} hits, LRU {lru}", h[&kind]);
        }
    }
}

/// A hot set that fits, interrupted by one-time scans and by passes over a
/// loop larger than the cache.
fn scan_loop_mix(capacity: u64, seed: u64) -> Vec<u64> {
    let mut rng = Rng(seed);
    let hot = capacity / 2;
    let mut seq = Vec::new();
    let mut fresh = 1u64 << 32;
    for round in 0..200 {
        for _ in 0..(4 * capacity) {
            seq.push(rng.next() % hot);
        }
        if round % 2 == 0 {
            // A scan of never-again keys twice the cache.
            for _ in 0..(2 * capacity) {
                seq.push(fresh);
                fresh += 1;
            }
        } else {
            // A loop pass over 1.5 x the cache.
            for k in 0..(capacity * 3 / 2) {
                seq.push((1 << 20) + k);
            }
        }
    }
    seq
}

#[test]
fn scan_resistant_policies_beat_lru_on_scans_and_loops() {
    for capacity in [40u64, 400] {
        let seq = scan_loop_mix(capacity, 11);
        let h = all_hits(capacity, &seq);
        let opt = optimal_hits(capacity as usize, &seq);
        eprintln!("scan+loop capacity {capacity}: opt {opt} {h:?}");
        let lru = h[&PolicyKind::Lru];
        for (&kind, &n) in &h {
            assert!(n <= opt, "{kind} beat Belady");
        }
        for kind in [PolicyKind::Arc, PolicyKind::S3Fifo] {
            assert!(h[&kind] > lru, "{kind}: {} hits, LRU {lru}", h[&kind]);
        }
        // 2Q promotes only items re-referenced after they left A1in; here
        // the hot set is all reused while still in A1in, so it is no better
        // than LRU (see the interleaved test below), but no worse either.
        assert!(h[&PolicyKind::TwoQ] >= lru);
    }
}

/// A hot set of 3/4 of the cache, every hot access followed by a key never
/// seen again: LRU's reuse distance for a hot key exceeds the cache, while
/// 2Q, ARC and S3-FIFO keep the stream in their small recency queue.
#[test]
fn interleaved_one_time_stream_is_filtered() {
    for capacity in [40u64, 400] {
        let mut rng = Rng(5);
        let hot = capacity * 3 / 4;
        let mut seq = Vec::new();
        for i in 0..(500 * capacity) {
            seq.push(rng.next() % hot);
            seq.push((1 << 32) + i);
        }
        let h = all_hits(capacity, &seq);
        let opt = optimal_hits(capacity as usize, &seq);
        eprintln!("interleaved capacity {capacity}: opt {opt} {h:?}");
        let lru = h[&PolicyKind::Lru];
        for (&kind, &n) in &h {
            assert!(n <= opt, "{kind} beat Belady");
        }
        for kind in [PolicyKind::Arc, PolicyKind::TwoQ, PolicyKind::S3Fifo] {
            assert!(h[&kind] > lru, "{kind}: {} hits, LRU {lru}", h[&kind]);
        }
    }
}

#[test]
fn a_loop_larger_than_the_cache_defeats_lru_and_fifo() {
    let capacity = 10;
    let seq: Vec<u64> = (0..50).flat_map(|_| 0..11).collect();
    let h = all_hits(capacity, &seq);
    assert_eq!(h[&PolicyKind::Lru], 0);
    assert_eq!(h[&PolicyKind::Fifo], 0);
    let opt = optimal_hits(capacity as usize, &seq);
    for (&kind, &n) in &h {
        assert!(n <= opt, "{kind} beat Belady");
    }
}
