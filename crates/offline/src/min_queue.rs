//! Belady's MIN queue: the cached blocks keyed by the position of their
//! next read; the victim is the block read furthest in the future.
//!
//! A binary max-heap with lazy deletion: a key change pushes a new entry
//! and leaves the old one to be discarded when it surfaces (an entry is
//! current iff it matches the block's key). Keys are positions of distinct
//! accesses, so no two current entries are equal. The heap is compacted
//! when stale entries outnumber live ones, which bounds its memory.

use std::collections::BinaryHeap;

/// Key of a block that is not in the queue.
const ABSENT: u32 = u32::MAX;

/// A MIN-ordered set of blocks with a capacity.
#[derive(Clone, Debug)]
pub struct MinQueue {
    capacity: u32,
    len: u32,
    key: Vec<u32>,
    heap: BinaryHeap<(u32, u32)>,
}

impl MinQueue {
    /// An empty queue of `capacity` blocks over block ids `0..blocks`.
    pub fn new(capacity: u32, blocks: u32) -> Self {
        MinQueue {
            capacity,
            len: 0,
            key: vec![ABSENT; blocks as usize],
            heap: BinaryHeap::with_capacity(2 * capacity as usize + 64),
        }
    }

    /// Blocks held.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether no block can be added without evicting one.
    pub fn is_full(&self) -> bool {
        self.len >= self.capacity
    }

    /// Capacity in blocks.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Whether `block` is held.
    pub fn contains(&self, block: u32) -> bool {
        self.key[block as usize] != ABSENT
    }

    /// Add `block` (not held) with next read `key` (finite).
    pub fn insert(&mut self, block: u32, key: u32) {
        debug_assert!(!self.contains(block) && key != ABSENT);
        self.key[block as usize] = key;
        self.len += 1;
        self.push(block, key);
    }

    /// Change the key of a held block.
    pub fn update(&mut self, block: u32, key: u32) {
        debug_assert!(self.contains(block) && key != ABSENT);
        self.key[block as usize] = key;
        self.push(block, key);
    }

    /// Drop `block` if held; true if it was.
    pub fn remove(&mut self, block: u32) -> bool {
        if self.key[block as usize] == ABSENT {
            return false;
        }
        self.key[block as usize] = ABSENT;
        self.len -= 1;
        true
    }

    /// The held block read furthest in the future, and its key.
    pub fn victim(&mut self) -> Option<(u32, u32)> {
        while let Some(&(key, block)) = self.heap.peek() {
            if self.key[block as usize] == key {
                return Some((block, key));
            }
            self.heap.pop();
        }
        None
    }

    fn push(&mut self, block: u32, key: u32) {
        self.heap.push((key, block));
        if self.heap.len() > 2 * self.len as usize + 64 {
            let key = &self.key;
            self.heap.retain(|&(k, b)| key[b as usize] == k);
        }
    }
}
