//! Cache keys and slots.

use cloudcache_trace::VolumeId;

/// Index of a cached item in the cache's slot table (a cache block on the
/// flash device in block mode).
pub type Slot = u32;

/// Marks "no slot" in intrusive lists.
pub const NO_SLOT: Slot = Slot::MAX;

/// What a cached item is: a block of a volume (block mode), or an object
/// keyed by its starting byte offset (object mode).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlockKey {
    /// The volume (VM disk).
    pub volume: VolumeId,
    /// Block number (block mode) or byte offset (object mode).
    pub block: u64,
}

impl BlockKey {
    /// A key.
    pub fn new(volume: VolumeId, block: u64) -> Self {
        BlockKey { volume, block }
    }
}

/// The hasher used for key maps: cheap, and good enough for integer keys
/// (hashbrown takes both low and high bits of it).
pub type KeyHasher = rustc_hash::FxBuildHasher;

/// Map from keys to slots, used by the cache and by policies' ghost lists.
pub type KeyMap<V> = hashbrown::HashMap<BlockKey, V, KeyHasher>;

/// A key map able to hold `capacity` entries without growing.
pub fn key_map_with_capacity<V>(capacity: usize) -> KeyMap<V> {
    KeyMap::with_capacity_and_hasher(capacity, KeyHasher::default())
}
