//! Dirty blocks whose write-back failed while they were being evicted.
//!
//! The engine has let such a block go, but its flash slot still holds the
//! only current copy, and its metadata entry still says dirty. So the slot
//! is *pinned*: it keeps the block (through flushes, shutdowns and crashes:
//! the entry is persisted like any other) until the cleaner gets the block
//! to the backend or a newer write supersedes it. Reads of the block come
//! from the pinned slot; a new block the engine puts in that slot is not
//! cached there.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use cloudcache_engine::BlockKey;
use hashbrown::HashMap;

/// The pinned slots, by block and by slot.
#[derive(Default)]
pub struct Held {
    maps: Mutex<(HashMap<BlockKey, u32>, HashMap<u32, BlockKey>)>,
    /// How many, readable without the lock (the common case is none).
    count: AtomicUsize,
}

impl Held {
    /// Pins `slot`, which holds `key`'s only current copy.
    pub fn hold(&self, key: BlockKey, slot: u32) {
        let mut maps = self.maps.lock().unwrap();
        if maps.0.insert(key, slot).is_none() {
            self.count.fetch_add(1, Ordering::Relaxed);
        }
        maps.1.insert(slot, key);
    }

    /// The slot holding `key`'s held copy.
    pub fn slot_of(&self, key: BlockKey) -> Option<u32> {
        if self.is_empty() {
            return None;
        }
        self.maps.lock().unwrap().0.get(&key).copied()
    }

    /// The block `slot` is pinned for.
    pub fn key_in(&self, slot: u32) -> Option<BlockKey> {
        if self.is_empty() {
            return None;
        }
        self.maps.lock().unwrap().1.get(&slot).copied()
    }

    /// Unpins `key`'s slot (written back, or superseded); returns the slot.
    pub fn release(&self, key: BlockKey) -> Option<u32> {
        if self.is_empty() {
            return None;
        }
        let mut maps = self.maps.lock().unwrap();
        let slot = maps.0.remove(&key)?;
        maps.1.remove(&slot);
        self.count.fetch_sub(1, Ordering::Relaxed);
        Some(slot)
    }

    /// Every held block and its slot.
    pub fn all(&self) -> Vec<(BlockKey, u32)> {
        if self.is_empty() {
            return Vec::new();
        }
        self.maps.lock().unwrap().0.iter().map(|(&k, &s)| (k, s)).collect()
    }

    /// Held blocks of `volume`.
    pub fn count_of(&self, volume: u32) -> usize {
        if self.is_empty() {
            return 0;
        }
        self.maps.lock().unwrap().0.keys().filter(|k| k.volume == volume).count()
    }

    /// How many blocks are held.
    pub fn len(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
