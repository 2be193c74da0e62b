//! The cache's index from keys to slots.
//!
//! Every access looks its key up, and every miss removes the victim's key
//! and inserts the new one, so this index is most of a miss's work. The two
//! modes get different tables, each measured faster for its keys
//! (docs/benchmarks.md, engine optimization log):
//!
//! * Block mode ([`GroupTable`]): requests are runs of neighbouring blocks,
//!   and the table puts neighbours in one cache line with their slots, so a
//!   run costs about one cache miss per two blocks, and removing a victim's
//!   key reads only its own bucket.
//! * Object mode ([`OpenTable`]): keys have no such locality, and the number
//!   of objects is small, so what counts is instructions per operation: open
//!   addressing with linear probing over 8-byte buckets, removal by the
//!   slot's remembered bucket, no tombstones.
//!
//! The caller hashes a key once ([`SlotMap::hash`]) and passes the hash to
//! the lookup and the insertion that follows a miss.

use crate::group_table::GroupTable;
use crate::key::{BlockKey, Slot, NO_SLOT};

/// An empty bucket.
const EMPTY: u64 = u64::MAX;

/// Fewest buckets a map has.
const MIN_BUCKETS: usize = 16;

/// Most buckets a map has: bucket numbers are stored as `u32` (a cache of
/// 2^31 slots is past any real one; beyond it the table just fills up).
const MAX_BUCKETS: usize = (u32::MAX as usize).saturating_add(1);

/// Keys of cached items and the slots holding them.
pub(crate) enum SlotMap {
    /// Block mode.
    Groups(GroupTable),
    /// Object mode.
    Open(OpenTable),
}

impl SlotMap {
    /// A block-mode map able to hold `capacity` keys without growing.
    pub fn for_blocks(capacity: usize) -> Self {
        SlotMap::Groups(GroupTable::with_capacity(capacity))
    }

    /// An object-mode map sized for `capacity` keys (it grows as needed).
    pub fn for_objects(capacity: usize) -> Self {
        SlotMap::Open(OpenTable::with_capacity(capacity))
    }

    /// The hash of `key`, for [`SlotMap::get`] and [`SlotMap::insert_new`].
    #[inline(always)]
    pub fn hash(&self, key: BlockKey) -> u64 {
        match self {
            SlotMap::Groups(_) => u64::from(GroupTable::hash(key.volume, key.block)),
            SlotMap::Open(_) => u64::from(OpenTable::hash(key)),
        }
    }

    /// The slot holding `key`, whose hash is `hash`; `keys` is the cache's
    /// key of each slot.
    #[inline(always)]
    pub fn get(&self, key: BlockKey, hash: u64, keys: &[BlockKey]) -> Option<Slot> {
        match self {
            SlotMap::Groups(table) => table.find(hash as u32, |slot| keys[slot as usize] == key),
            SlotMap::Open(table) => table.get(key, hash as u32, keys),
        }
    }

    /// The slot holding `key`.
    #[inline]
    pub fn lookup(&self, key: BlockKey, keys: &[BlockKey]) -> Option<Slot> {
        self.get(key, self.hash(key), keys)
    }

    /// Record that `slot` holds the key whose hash is `hash` (from
    /// [`SlotMap::hash`]), which must not be in the map.
    #[inline]
    pub fn insert_new(&mut self, hash: u64, slot: Slot) {
        match self {
            SlotMap::Groups(table) => table.insert_new(hash as u32, slot),
            SlotMap::Open(table) => table.insert_new(hash as u32, slot),
        }
    }

    /// Forget `key`, held by `slot`.
    #[inline]
    pub fn remove(&mut self, key: BlockKey, slot: Slot) {
        match self {
            SlotMap::Groups(table) => table.remove(GroupTable::hash(key.volume, key.block), slot),
            SlotMap::Open(table) => table.remove(slot),
        }
    }

    /// Start loading the line a lookup of `key` reads first.
    #[inline]
    pub fn prefetch_key(&self, key: BlockKey) {
        if let SlotMap::Open(table) = self {
            let home = OpenTable::hash(key) as usize & (table.buckets.len() - 1);
            cloudcache_trace::prefetch::prefetch(&table.buckets[home]);
        }
    }

    /// Start loading what removing `slot`'s key will read first (its
    /// bucket's number).
    #[inline]
    pub fn prefetch_slot(&self, slot: Slot) {
        let bucket_of = match self {
            SlotMap::Groups(table) => table.bucket_of(),
            SlotMap::Open(table) => &table.bucket_of,
        };
        if let Some(bucket) = bucket_of.get(slot as usize) {
            cloudcache_trace::prefetch::prefetch(bucket);
        }
    }

    /// Start loading `slot`'s bucket, which removing its key will change
    /// (reads the bucket's number: prefetch it first with
    /// [`SlotMap::prefetch_slot`]).
    #[inline]
    pub fn prefetch_bucket(&self, slot: Slot) {
        match self {
            SlotMap::Groups(table) => table.prefetch_bucket(slot),
            SlotMap::Open(table) => {
                if let Some(&bucket) = table.bucket_of.get(slot as usize) {
                    if let Some(line) = table.buckets.get(bucket as usize) {
                        cloudcache_trace::prefetch::prefetch(line);
                    }
                }
            }
        }
    }

    /// Start loading the lines that lookups of blocks `first..=last` of
    /// `volume` will read, all at once, so that their cache misses overlap
    /// instead of following one another block by block.
    #[inline]
    pub fn touch_run(&self, volume: u32, first: u64, last: u64) {
        if let SlotMap::Groups(table) = self {
            table.touch_run(volume, first, last);
        }
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        match self {
            SlotMap::Groups(table) => table.len(),
            SlotMap::Open(table) => table.len(),
        }
    }
}

/// Object mode's index: open addressing with linear probing, at most half
/// full. A bucket is one `u64`, the slot in the low half and the key's 32-bit
/// hash in the high half, so probing compares hashes without touching the
/// keys, and a key (in the cache's slot table) is read only when its hash
/// matches. Each slot remembers its bucket, so removing a slot's key needs
/// neither its hash nor a probe; removal shifts the rest of the probe run
/// back, so no tombstones build up.
pub(crate) struct OpenTable {
    /// `hash << 32 | slot`, or [`EMPTY`].
    buckets: Vec<u64>,
    /// Bucket of each slot's key (stale for slots not in the map).
    bucket_of: Vec<u32>,
    len: usize,
}

impl OpenTable {
    /// A table able to hold `capacity` keys without growing.
    pub fn with_capacity(capacity: usize) -> Self {
        OpenTable {
            buckets: vec![EMPTY; Self::buckets_for(capacity)],
            bucket_of: Vec::with_capacity(capacity),
            len: 0,
        }
    }

    /// The hash of `key`.
    ///
    /// One multiply and a fold: keys are byte offsets (multiples of 512) that
    /// differ in few, low bits, and the fold brings the multiply's well-mixed
    /// high half down to the bits that pick the bucket.
    #[inline]
    pub fn hash(key: BlockKey) -> u32 {
        let mixed = (key.block ^ u64::from(key.volume).wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .wrapping_mul(0xbf58_476d_1ce4_e5b9);
        (mixed ^ (mixed >> 32)) as u32
    }

    /// The slot holding `key`, whose hash is `hash`; `keys` is the cache's
    /// key of each slot.
    #[inline]
    pub fn get(&self, key: BlockKey, hash: u32, keys: &[BlockKey]) -> Option<Slot> {
        let mask = self.buckets.len() - 1;
        let mut at = hash as usize & mask;
        loop {
            let bucket = self.buckets[at];
            if bucket == EMPTY {
                return None;
            }
            if (bucket >> 32) as u32 == hash && keys[bucket as u32 as usize] == key {
                return Some(bucket as u32);
            }
            at = (at + 1) & mask;
        }
    }

    /// Record that `slot` holds a key whose hash is `hash` and which is not
    /// in the map.
    #[inline]
    pub fn insert_new(&mut self, hash: u32, slot: Slot) {
        debug_assert!(slot != NO_SLOT);
        if (self.len + 1) * 2 > self.buckets.len() && self.buckets.len() < MAX_BUCKETS {
            self.grow();
        }
        if self.bucket_of.len() <= slot as usize {
            self.bucket_of.resize(slot as usize + 1, 0);
        }
        self.place(u64::from(hash) << 32 | u64::from(slot));
        self.len += 1;
    }

    /// Forget the key that `slot` holds.
    #[inline]
    pub fn remove(&mut self, slot: Slot) {
        let mask = self.buckets.len() - 1;
        let mut hole = self.bucket_of[slot as usize] as usize;
        debug_assert_eq!(self.buckets[hole] as u32, slot, "slot {slot} is not in the map");
        self.len -= 1;
        // Backward shift: a later bucket of the probe run moves into the
        // hole unless its home lies after the hole.
        let mut next = hole;
        loop {
            next = (next + 1) & mask;
            let bucket = self.buckets[next];
            if bucket == EMPTY {
                break;
            }
            let home = (bucket >> 32) as usize & mask;
            if next.wrapping_sub(home) & mask >= next.wrapping_sub(hole) & mask {
                self.buckets[hole] = bucket;
                self.bucket_of[bucket as u32 as usize] = hole as u32;
                hole = next;
            }
        }
        self.buckets[hole] = EMPTY;
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Put `bucket` at the first empty bucket from its home.
    #[inline]
    fn place(&mut self, bucket: u64) {
        let mask = self.buckets.len() - 1;
        let mut at = (bucket >> 32) as usize & mask;
        while self.buckets[at] != EMPTY {
            at = (at + 1) & mask;
        }
        self.buckets[at] = bucket;
        self.bucket_of[bucket as u32 as usize] = at as u32;
    }

    /// Double the buckets (object mode, whose item count is not known up
    /// front, starts small and grows).
    #[cold]
    fn grow(&mut self) {
        let doubled = (self.buckets.len() * 2).max(MIN_BUCKETS);
        let old = std::mem::replace(&mut self.buckets, vec![EMPTY; doubled]);
        for bucket in old.into_iter().filter(|&b| b != EMPTY) {
            self.place(bucket);
        }
    }

    /// Buckets for `capacity` keys at most half full.
    fn buckets_for(capacity: usize) -> usize {
        capacity.saturating_mul(2).next_power_of_two().clamp(MIN_BUCKETS, MAX_BUCKETS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A map and slot table built side by side, checked against a model.
    #[test]
    fn lookups_follow_inserts_and_removals_through_growth() {
        let mut map = OpenTable::with_capacity(0);
        let mut keys: Vec<BlockKey> = Vec::new();
        let mut model = std::collections::HashMap::new();
        let mut free: Vec<Slot> = Vec::new();
        // A deterministic mix of inserts and removals over clustered keys.
        let mut x: u64 = 12345;
        for step in 0..20_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let key = BlockKey::new((x >> 60) as u32 % 3, (x >> 33) % 512);
            match model.get(&key).copied() {
                Some(slot) if step % 3 != 0 => {
                    map.remove(slot);
                    model.remove(&key);
                    free.push(slot);
                }
                Some(_) => {}
                None => {
                    let slot = free.pop().unwrap_or_else(|| {
                        keys.push(BlockKey::default());
                        (keys.len() - 1) as Slot
                    });
                    keys[slot as usize] = key;
                    map.insert_new(OpenTable::hash(key), slot);
                    model.insert(key, slot);
                }
            }
            assert_eq!(map.len(), model.len());
        }
        for volume in 0..3 {
            for block in 0..512 {
                let key = BlockKey::new(volume, block);
                assert_eq!(map.get(key, OpenTable::hash(key), &keys), model.get(&key).copied(), "{key:?}");
            }
        }
    }
}
