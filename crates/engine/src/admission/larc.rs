//! LARC's admission (Huang et al., MSST'13): a ghost LRU of recently missed
//! addresses; a block is admitted when it misses again while still in the
//! ghost. The ghost's size adapts to the hit ratio: each cache hit shrinks
//! it by `C / (C - c)`, each miss grows it by `C / c`, within
//! `[0.1 C, 2 C]`, where `C` is the cache size in blocks and `c` the ghost
//! size. With on-demand allocation `C` is the volume's share.

use super::staging::{StagingArea, StagingKind, ADDRESS_ENTRY_BYTES};

/// One volume's LARC state.
pub struct LarcState {
    ghost: StagingArea,
    /// Ghost size target, in entries.
    ghost_entries: f64,
    cache_blocks: f64,
}

impl LarcState {
    /// LARC for a volume with `cache_blocks` of cache.
    /// `expected_blocks` sizes the ghost's index as for [`StagingArea::new`].
    pub fn new(cache_blocks: u64, block_size: u64, expected_blocks: usize) -> Self {
        let mut state = LarcState {
            ghost: StagingArea::new(StagingKind::Address, block_size, expected_blocks),
            ghost_entries: 0.0,
            cache_blocks: 0.0,
        };
        state.set_cache_blocks(cache_blocks);
        state
    }

    /// The volume's cache size changed.
    pub fn set_cache_blocks(&mut self, cache_blocks: u64) {
        self.cache_blocks = cache_blocks as f64;
        self.ghost_entries = self.ghost_entries.clamp(0.1 * self.cache_blocks, 2.0 * self.cache_blocks);
        self.apply_size();
    }

    /// A cache hit: the ghost shrinks.
    pub fn hit(&mut self) {
        let room = self.cache_blocks - self.ghost_entries;
        let shrunk =
            if room > 0.0 { self.ghost_entries - self.cache_blocks / room } else { 0.1 * self.cache_blocks };
        self.ghost_entries = shrunk.max(0.1 * self.cache_blocks);
        self.apply_size();
    }

    /// A miss of `block`: the ghost grows; true if the block was in the
    /// ghost (it is then admitted and leaves the ghost).
    pub fn miss(&mut self, block: u64) -> bool {
        if self.ghost_entries > 0.0 {
            let grown = self.ghost_entries + self.cache_blocks / self.ghost_entries;
            self.ghost_entries = grown.min(2.0 * self.cache_blocks);
        }
        self.apply_size();
        self.ghost.access(block, false, 2).admit
    }

    /// Memory the ghost uses, in bytes.
    pub fn used_bytes(&self) -> u64 {
        self.ghost.used_bytes()
    }

    fn apply_size(&mut self) {
        self.ghost.set_budget(self.ghost_entries as u64 * ADDRESS_ENTRY_BYTES);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_on_a_miss_in_the_ghost_and_adapts_its_size() {
        let mut l = LarcState::new(100, 4096, 0);
        assert_eq!(l.ghost_entries, 10.0);
        assert!(!l.miss(7));
        // 10 + 100/10 = 20 entries after one miss.
        assert_eq!(l.ghost_entries, 20.0);
        assert!(l.miss(7), "second miss while in the ghost admits");
        for _ in 0..100 {
            l.hit();
        }
        assert_eq!(l.ghost_entries, 10.0, "hits shrink it to 0.1 C");
        for block in 100..1000 {
            l.miss(block);
        }
        assert_eq!(l.ghost_entries, 200.0, "misses grow it to 2 C");
        assert_eq!(l.used_bytes(), 200 * ADDRESS_ENTRY_BYTES);
    }
}
