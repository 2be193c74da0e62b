//! An index from block keys to slots, laid out for block traces.
//!
//! Keys live in groups of seven buckets, one 64-byte cache line per group:
//! each bucket holds a key's 32-bit hash and its slot, so a probe compares
//! seven hashes in one line (into a bit mask, with no branch per bucket)
//! and reads a key only when its hash matches. Two neighbouring blocks share a home group, so a run of blocks
//! costs a cache miss per two blocks, not per block. A full group passes keys
//! on to the next one and counts them in its overflow count; a lookup stops
//! at the first group whose count is 0 (the scheme of Facebook's F14 tables).
//! Each slot remembers its bucket, so removing a slot's key reads only that
//! bucket's line (and the overflow counts between it and its home group):
//! no probe and no key comparison.
//!
//! Measured against hashbrown with a run hash (the block mode's table
//! before) and against runs of one and four blocks: docs/benchmarks.md,
//! engine optimization log.

use crate::key::{Slot, NO_SLOT};

/// Buckets in a group: with the overflow count, eight 32-bit lanes.
const GROUP_BUCKETS: usize = 7;

/// Lane of a group that holds its occupancy (in `hashes`) and its
/// overflow count (in `slots`).
const META_LANE: usize = GROUP_BUCKETS;

/// log2 of the neighbouring blocks that share a home group.
const RUN_SHIFT: u32 = 1;

/// Most runs whose lines [`GroupTable::touch_run`] prefetches.
const TOUCH_RUNS: u64 = 8;

/// Fewest groups a table has.
const MIN_GROUPS: usize = 4;

/// Most groups a table has: bucket numbers are stored as `u32`, 8 per group.
const MAX_GROUPS: usize = 1 << 29;

/// Most keys a table holds (at most three quarters full); the cache
/// configuration refuses more blocks than this (about 2.8 G, 10 TiB of
/// 4 KiB blocks), as a full table would have no free bucket to probe to.
pub(crate) const MAX_KEYS: u64 = MAX_GROUPS as u64 * GROUP_BUCKETS as u64 * 3 / 4;

/// One cache line of the table.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Group {
    /// Hash of each bucket's key; lane [`META_LANE`] holds which buckets
    /// hold a key, one bit each.
    hashes: [u32; 8],
    /// Slot of each bucket's key; lane [`META_LANE`] holds the overflow
    /// count: keys whose home is this group or an earlier one but which sit
    /// in a later group.
    slots: [u32; 8],
}

impl Group {
    const EMPTY: Group = Group { hashes: [0; 8], slots: [0; 8] };
    const BUCKET_LANES: u32 = (1 << GROUP_BUCKETS) - 1;

    /// Buckets holding a key whose hash is `hash`, one bit each (a loop
    /// over all eight lanes without branches, which the compiler partly
    /// vectorizes).
    #[inline(always)]
    fn matching(&self, hash: u32) -> u32 {
        let mut lanes = 0;
        for (lane, &h) in self.hashes.iter().enumerate() {
            lanes |= u32::from(h == hash) << lane;
        }
        lanes & self.occupied()
    }

    /// Buckets holding a key, one bit each.
    #[inline(always)]
    fn occupied(&self) -> u32 {
        self.hashes[META_LANE]
    }

    #[inline(always)]
    fn overflow(&self) -> u32 {
        self.slots[META_LANE]
    }
}

/// Keys (identified by their slots) indexed by a 32-bit hash; the caller
/// holds the keys and compares them.
pub(crate) struct GroupTable {
    groups: Vec<Group>,
    /// Keys the groups hold at most three quarters full.
    capacity: usize,
    /// Bucket of each slot's key, as group * 8 + lane (stale for slots not
    /// in the table).
    bucket_of: Vec<u32>,
    len: usize,
}

impl GroupTable {
    /// A table able to hold `capacity` keys without growing.
    pub fn with_capacity(capacity: usize) -> Self {
        let groups = Self::groups_for(capacity);
        GroupTable {
            groups: vec![Group::EMPTY; groups],
            capacity: Self::capacity_of(groups),
            bucket_of: Vec::with_capacity(capacity),
            len: 0,
        }
    }

    /// The hash of `block` of `volume`: the mixed number of its run of
    /// neighbouring blocks in the high bits (which pick the home group), its
    /// place in the run in the low [`RUN_SHIFT`] bits.
    #[inline(always)]
    pub fn hash(volume: u32, block: u64) -> u32 {
        let run = block >> RUN_SHIFT;
        let mixed =
            (run ^ u64::from(volume).wrapping_mul(0x9e37_79b9_7f4a_7c15)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        let place_mask = (1 << RUN_SHIFT) - 1;
        ((mixed >> 32) as u32 & !place_mask) | (block as u32 & place_mask)
    }

    #[inline(always)]
    fn home(&self, hash: u32) -> usize {
        (hash >> RUN_SHIFT) as usize & (self.groups.len() - 1)
    }

    /// Prefetch the home groups of blocks `first..=last` of `volume` (up to
    /// [`TOUCH_RUNS`] runs), back to back, so that their misses overlap
    /// instead of following one another block by block.
    #[inline]
    pub fn touch_run(&self, volume: u32, first: u64, last: u64) {
        let runs = (last >> RUN_SHIFT) - (first >> RUN_SHIFT) + 1;
        if runs < 2 {
            return;
        }
        for run in (first >> RUN_SHIFT)..(first >> RUN_SHIFT) + runs.min(TOUCH_RUNS) {
            let home = self.home(Self::hash(volume, run << RUN_SHIFT));
            cloudcache_trace::prefetch::prefetch(&self.groups[home]);
        }
    }

    /// Bucket number of each slot's key.
    pub fn bucket_of(&self) -> &[u32] {
        &self.bucket_of
    }

    /// Prefetch the group holding `slot`'s key.
    #[inline]
    pub fn prefetch_bucket(&self, slot: Slot) {
        if let Some(&bucket) = self.bucket_of.get(slot as usize) {
            if let Some(group) = self.groups.get(bucket as usize / 8) {
                cloudcache_trace::prefetch::prefetch(group);
            }
        }
    }

    /// The slot whose key has hash `hash` and satisfies `is_key`.
    #[inline(always)]
    pub fn find(&self, hash: u32, mut is_key: impl FnMut(Slot) -> bool) -> Option<Slot> {
        let mask = self.groups.len() - 1;
        let mut at = self.home(hash);
        // After churn every group can have keys passing over it, so the
        // overflow counts alone need not end a search for an absent key: a
        // key is never further than one lap from its home.
        for _ in 0..self.groups.len() {
            let group = &self.groups[at];
            let mut lanes = group.matching(hash);
            while lanes != 0 {
                let slot = group.slots[lanes.trailing_zeros() as usize];
                if is_key(slot) {
                    return Some(slot);
                }
                lanes &= lanes - 1;
            }
            if group.overflow() == 0 {
                return None;
            }
            at = (at + 1) & mask;
        }
        None
    }

    /// Record that `slot` holds a key whose hash is `hash` and which is not
    /// in the table.
    #[inline(always)]
    pub fn insert_new(&mut self, hash: u32, slot: Slot) {
        debug_assert!(slot != NO_SLOT);
        if self.len >= self.capacity {
            self.reserve(self.len + 1);
        }
        if self.bucket_of.len() <= slot as usize {
            self.bucket_of.resize(slot as usize + 1, 0);
        }
        self.place(hash, slot);
        self.len += 1;
    }

    /// Forget the key that `slot` holds, whose hash is `hash`.
    #[inline(always)]
    pub fn remove(&mut self, hash: u32, slot: Slot) {
        let bucket = self.bucket_of[slot as usize] as usize;
        let (group, lane) = (bucket / 8, bucket % 8);
        debug_assert!(self.groups[group].occupied() & 1 << lane != 0, "slot {slot} is not in the table");
        debug_assert_eq!(self.groups[group].slots[lane], slot, "slot {slot} is not in the table");
        self.groups[group].hashes[META_LANE] &= !(1 << lane);
        // The groups the key passed over on its way in counted it.
        let mask = self.groups.len() - 1;
        let mut at = self.home(hash);
        while at != group {
            self.groups[at].slots[META_LANE] -= 1;
            at = (at + 1) & mask;
        }
        self.len -= 1;
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Keys the table holds without growing.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Make room for `capacity` keys in all (rehashing into more groups if
    /// needed).
    #[cold]
    fn reserve(&mut self, capacity: usize) {
        if capacity <= self.capacity() || self.groups.len() >= MAX_GROUPS {
            return;
        }
        let groups = Self::groups_for(capacity).max(self.groups.len() * 2).min(MAX_GROUPS);
        let old = std::mem::replace(&mut self.groups, vec![Group::EMPTY; groups]);
        self.capacity = Self::capacity_of(groups);
        for group in &old {
            for lane in 0..GROUP_BUCKETS {
                if group.occupied() & 1 << lane != 0 {
                    self.place(group.hashes[lane], group.slots[lane]);
                }
            }
        }
    }

    /// Put `slot`'s key, whose hash is `hash`, in the first empty bucket
    /// from its home group on.
    #[inline(always)]
    fn place(&mut self, hash: u32, slot: Slot) {
        let mask = self.groups.len() - 1;
        let mut at = self.home(hash);
        loop {
            let group = &mut self.groups[at];
            let empty = !group.occupied() & Group::BUCKET_LANES;
            if empty != 0 {
                let lane = empty.trailing_zeros() as usize;
                group.hashes[lane] = hash;
                group.slots[lane] = slot;
                group.hashes[META_LANE] |= 1 << lane;
                self.bucket_of[slot as usize] = (at * 8 + lane) as u32;
                return;
            }
            group.slots[META_LANE] += 1;
            at = (at + 1) & mask;
        }
    }

    /// Keys `groups` groups hold at most three quarters full.
    fn capacity_of(groups: usize) -> usize {
        groups * GROUP_BUCKETS * 3 / 4
    }

    /// Groups for `capacity` keys at most three quarters full.
    fn groups_for(capacity: usize) -> usize {
        (capacity.saturating_mul(4) / (3 * GROUP_BUCKETS) + 1)
            .next_power_of_two()
            .clamp(MIN_GROUPS, MAX_GROUPS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table and its keys built side by side, checked against a model,
    /// through growth and full groups (few groups for many clustered keys).
    #[test]
    fn finds_follow_inserts_and_removals_through_growth() {
        let mut table = GroupTable::with_capacity(0);
        let mut keys: Vec<(u32, u64)> = Vec::new();
        let mut model = std::collections::HashMap::new();
        let mut free: Vec<Slot> = Vec::new();
        let mut x: u64 = 12345;
        for step in 0..40_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let key = ((x >> 60) as u32 % 3, (x >> 33) % 700);
            let hash = GroupTable::hash(key.0, key.1);
            match model.get(&key).copied() {
                Some(slot) if step % 3 != 0 => {
                    table.remove(hash, slot);
                    model.remove(&key);
                    free.push(slot);
                }
                Some(_) => {}
                None => {
                    let slot = free.pop().unwrap_or_else(|| {
                        keys.push((0, 0));
                        (keys.len() - 1) as Slot
                    });
                    keys[slot as usize] = key;
                    table.insert_new(hash, slot);
                    model.insert(key, slot);
                }
            }
            assert_eq!(table.len(), model.len());
        }
        for volume in 0..3 {
            for block in 0..700 {
                let found =
                    table.find(GroupTable::hash(volume, block), |s| keys[s as usize] == (volume, block));
                assert_eq!(found, model.get(&(volume, block)).copied(), "{volume} {block}");
            }
        }
    }

    #[test]
    fn a_search_for_an_absent_key_ends_when_every_group_overflows() {
        // Four groups (21 keys at most); hash `2 * g` has home group `g`.
        let mut table = GroupTable::with_capacity(1);
        assert_eq!((table.groups.len(), table.capacity()), (4, 21));
        let home = |g: u32| g << RUN_SHIFT;
        // 21 keys homed at group 2 fill groups 2, 3 and 0.
        for slot in 0..21 {
            table.insert_new(home(2), slot);
        }
        // Empty groups 2 and 3; group 2 still counts the 7 keys in group 0.
        for slot in 0..14 {
            table.remove(home(2), slot);
        }
        // Keys homed at 0 pass over it into group 1, keys homed at 1 into group 2.
        for slot in 21..28 {
            table.insert_new(home(0), slot);
        }
        for slot in 28..35 {
            table.insert_new(home(1), slot);
        }
        assert!(table.groups.iter().all(|g| g.overflow() > 0));
        assert_eq!(table.find(home(3), |_| false), None);
        assert_eq!(table.find(home(1), |slot| slot == 30), Some(30));
    }

    #[test]
    fn overflow_counts_return_to_zero_when_keys_leave() {
        // One group's worth of home for 40 keys: most overflow.
        let mut table = GroupTable::with_capacity(64);
        let hash = GroupTable::hash(0, 0);
        for slot in 0..40 {
            table.insert_new(hash, slot);
        }
        assert!(table.groups.iter().any(|g| g.overflow() > 0));
        for slot in 0..40 {
            assert_eq!(table.find(hash, |s| s == slot), Some(slot));
            table.remove(hash, slot);
        }
        assert_eq!(table.len(), 0);
        assert!(table.groups.iter().all(|g| g.overflow() == 0 && g.occupied() == 0));
    }
}
