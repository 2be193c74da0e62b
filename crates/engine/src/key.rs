//! Cache keys and slots.

use cloudcache_trace::VolumeId;

/// Index of a cached item in the cache's slot table (a cache block on the
/// flash device in block mode).
pub type Slot = u32;

/// Marks "no slot" in intrusive lists.
pub const NO_SLOT: Slot = Slot::MAX;

/// What a cached item is: a block of a volume (block mode), or an object
/// keyed by its starting byte offset (object mode).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct BlockKey {
    /// The volume (VM disk).
    pub volume: VolumeId,
    /// Block number (block mode) or byte offset (object mode).
    pub block: u64,
}

impl std::hash::Hash for BlockKey {
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        state.write_u32(self.volume);
        state.write_u64(self.block);
    }
}

impl BlockKey {
    /// A key.
    pub fn new(volume: VolumeId, block: u64) -> Self {
        BlockKey { volume, block }
    }
}

/// Builds [`BlockKeyHasher`]s for key maps.
pub type KeyHasher = std::hash::BuildHasherDefault<BlockKeyHasher>;

pub use cloudcache_trace::block_hash::hash_block;

/// A hasher for [`BlockKey`] that keeps neighbouring blocks together.
///
/// Block requests are mostly runs of consecutive blocks, and a random hash
/// costs one cache miss per block. This one hashes the run of 16 blocks a
/// block belongs to, then puts the block's position in the run (rotated by
/// a per-run amount) in the low bits, so the run fills adjacent buckets of
/// one control group (one miss per run), and in the top seven bits, which
/// hashbrown keeps as the tag, so the run's blocks do not match each
/// other's tags.
#[derive(Clone, Copy, Debug, Default)]
pub struct BlockKeyHasher {
    volume: u64,
    block: u64,
}

impl std::hash::Hasher for BlockKeyHasher {
    #[inline]
    fn finish(&self) -> u64 {
        hash_block(self.volume, self.block)
    }

    #[inline]
    fn write_u32(&mut self, volume: u32) {
        self.volume = u64::from(volume);
    }

    #[inline]
    fn write_u64(&mut self, block: u64) {
        self.block = block;
    }

    fn write(&mut self, bytes: &[u8]) {
        // Not used by BlockKey; mix anything else in rather than fail.
        for &b in bytes {
            self.block = self.block.rotate_left(8) ^ u64::from(b);
        }
    }
}

/// Map from keys to slots, used by the cache and by policies' ghost lists.
pub type KeyMap<V> = hashbrown::HashMap<BlockKey, V, KeyHasher>;

/// A key map able to hold `capacity` entries without growing.
pub fn key_map_with_capacity<V>(capacity: usize) -> KeyMap<V> {
    KeyMap::with_capacity_and_hasher(capacity, KeyHasher::default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn a_run_of_blocks_fills_adjacent_buckets_with_distinct_tags() {
        let hasher = KeyHasher::default();
        let hashes: Vec<u64> = (32..48).map(|b| hasher.hash_one(BlockKey::new(7, b))).collect();
        for h in &hashes {
            assert_eq!(h >> 4 & 0xfff, hashes[0] >> 4 & 0xfff, "same run, same bucket group");
        }
        let positions: std::collections::HashSet<u64> = hashes.iter().map(|h| h & 15).collect();
        assert_eq!(positions.len(), 16, "each bucket of the group once");
        let tags: std::collections::HashSet<u64> = hashes.iter().map(|h| h >> 57).collect();
        assert_eq!(tags.len(), 16);
        // Other runs and other volumes land elsewhere.
        assert_ne!(hasher.hash_one(BlockKey::new(7, 48)) >> 4, hashes[0] >> 4);
        assert_ne!(hasher.hash_one(BlockKey::new(8, 32)) >> 4, hashes[0] >> 4);
    }

    #[test]
    fn keys_that_are_multiples_of_the_run_spread_over_every_position() {
        // Object mode keys are byte offsets: all multiples of 512.
        let hasher = KeyHasher::default();
        let mut per_position = [0u32; 16];
        for i in 0..16_000u64 {
            per_position[(hasher.hash_one(BlockKey::new(0, i * 512)) & 15) as usize] += 1;
        }
        assert!(per_position.iter().all(|&n| (700..1300).contains(&n)), "{per_position:?}");
    }
}
