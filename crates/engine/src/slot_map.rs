//! The cache's index from keys to slots.
//!
//! A miss looks a key up and, after making room, inserts it: with a plain
//! map that hashes the key twice and probes twice. Here the caller hashes
//! once ([`SlotMap::hash`]) and passes the hash to both steps.

use hashbrown::HashTable;

use crate::key::{hash_block, BlockKey, Slot};

/// Keys of cached items and the slots holding them.
pub(crate) struct SlotMap {
    table: HashTable<(BlockKey, Slot)>,
}

impl SlotMap {
    /// A map able to hold `capacity` keys without growing.
    pub fn with_capacity(capacity: usize) -> Self {
        SlotMap { table: HashTable::with_capacity(capacity) }
    }

    /// The hash of `key`, for [`SlotMap::get`] and [`SlotMap::insert_new`].
    #[inline]
    pub fn hash(key: BlockKey) -> u64 {
        hash_block(u64::from(key.volume), key.block)
    }

    /// The slot holding `key`, whose hash is `hash`.
    #[inline]
    pub fn get(&self, key: BlockKey, hash: u64) -> Option<Slot> {
        self.table.find(hash, |e| e.0 == key).map(|e| e.1)
    }

    /// The slot holding `key`.
    #[inline]
    pub fn lookup(&self, key: BlockKey) -> Option<Slot> {
        self.get(key, Self::hash(key))
    }

    /// Record that `slot` holds `key`, which must not be in the map.
    #[inline]
    pub fn insert_new(&mut self, key: BlockKey, hash: u64, slot: Slot) {
        debug_assert!(self.get(key, hash).is_none(), "{key:?} inserted twice");
        self.table.insert_unique(hash, (key, slot), |e| Self::hash(e.0));
    }

    /// Forget `key`; returns the slot it was in.
    #[inline]
    pub fn remove(&mut self, key: BlockKey) -> Option<Slot> {
        self.table.find_entry(Self::hash(key), |e| e.0 == key).ok().map(|entry| entry.remove().0 .1)
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.table.len()
    }
}
