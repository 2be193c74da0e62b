//! The DRAM cache above flash (5 % of the flash size by default): MIN for
//! offline policies, LRU for online ones (seed 002 §6). It holds any block
//! read or written, independently of what flash holds; a read it serves is
//! a hit that never reaches flash.

use cloudcache_trace::Op;

use crate::blocks::INF;
use crate::lru_list::LruList;
use crate::min_queue::MinQueue;

/// A DRAM cache level.
#[derive(Clone, Debug)]
pub enum Dram {
    /// Belady's MIN with bypass: a block is kept only if it is read again
    /// sooner than the furthest-read block held.
    Min(MinQueue),
    /// Least recently used, inserting every access.
    Lru {
        /// Recency order.
        list: LruList,
        /// Blocks it may hold.
        capacity: u32,
    },
}

impl Dram {
    /// MIN DRAM of `capacity` blocks.
    pub fn min(capacity: u32, blocks: u32) -> Self {
        Dram::Min(MinQueue::new(capacity, blocks))
    }

    /// LRU DRAM of `capacity` blocks.
    pub fn lru(capacity: u32, blocks: u32) -> Self {
        Dram::Lru { list: LruList::new(blocks), capacity }
    }

    /// Carry out one access; returns whether a read was served from DRAM.
    /// `next_read` is used by MIN only.
    pub fn access(&mut self, block: u32, op: Op, next_read: u32) -> bool {
        match self {
            Dram::Min(queue) => {
                let hit = op == Op::Read && queue.contains(block);
                if op == Op::Trim || next_read == INF || queue.capacity() == 0 {
                    queue.remove(block);
                } else if queue.contains(block) {
                    queue.update(block, next_read);
                } else if !queue.is_full() {
                    queue.insert(block, next_read);
                } else if let Some((victim, key)) = queue.victim() {
                    if next_read < key {
                        queue.remove(victim);
                        queue.insert(block, next_read);
                    }
                }
                hit
            }
            Dram::Lru { list, capacity } => {
                let hit = op == Op::Read && list.contains(block);
                if op == Op::Trim || *capacity == 0 {
                    list.remove(block);
                } else {
                    list.touch(block);
                    if list.len() > *capacity {
                        list.pop_tail();
                    }
                }
                hit
            }
        }
    }
}
