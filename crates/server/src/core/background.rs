//! The core's background work: the cleaner's write-backs, a volume's
//! write-back on demand, and retries of held blocks.

use std::sync::atomic::Ordering;

use cloudcache_engine::{Action, BlockKey, Cache};

use super::{collect_lanes, CacheCore, EngineState, Scratch};
use crate::lanes::{key_lane, slot_lane};

impl CacheCore {
    /// Gives the engine a block found on flash at start (slots in increasing
    /// order). Should the engine not take it, a dirty block is held in its
    /// slot (served from there and written back) and a clean one is
    /// dropped, so no entry outlives the engine's knowledge of it.
    pub fn restore(&self, key: BlockKey, slot: u32, dirty: bool) {
        if self.with_engine(|cache| cache.restore(key, slot, dirty)) {
            return;
        }
        log::warn!("volume {} block {} on flash slot {slot} could not be restored", key.volume, key.block);
        if dirty {
            self.held.hold(key, slot);
        } else if let Some(store) = &self.store {
            store.invalidate(slot);
        }
    }

    /// Writes back up to `limit` of the oldest dirty blocks and retries held
    /// write-backs; returns how many blocks reached the backend.
    pub fn clean_step(&self, limit: u64, s: &mut Scratch) -> u64 {
        let written = self.retry_held(s);
        if limit == 0 {
            return written;
        }
        written + self.run_write_backs(|cache| cache.write_back_oldest(limit), s)
    }

    /// Writes back every dirty block of one volume (or of all); returns how
    /// many reached the backend. Blocks whose write-back fails stay dirty.
    pub fn write_back_volume(&self, volume: Option<u32>, s: &mut Scratch) -> u64 {
        let written = self.retry_held(s);
        written + self.run_write_backs(|cache| cache.write_back_all(volume), s)
    }

    fn run_write_backs(&self, decide: impl FnOnce(&mut Cache) -> u64, s: &mut Scratch) -> u64 {
        if self.store.is_none() {
            return 0;
        }
        {
            let mut engine = self.engine.lock().unwrap();
            if decide(&mut engine.cache) == 0 {
                return 0;
            }
            s.actions.clear();
            s.actions.extend_from_slice(engine.cache.actions());
            collect_lanes(&s.actions, self.block_size, &mut s.lanes);
            let EngineState { dispenser, .. } = &mut *engine;
            dispenser.take(&s.lanes, &mut s.tickets);
        }
        let tickets = std::mem::take(&mut s.tickets);
        let mut written = 0;
        {
            let _turn = self.turn(&tickets);
            s.block.resize(self.block_size as usize, 0);
            for i in 0..s.actions.len() {
                if let Action::WriteBack { key, slot } = s.actions[i] {
                    if self.write_back(key, slot, false, &mut s.block).is_ok() {
                        written += 1;
                    }
                }
            }
        }
        s.tickets = tickets;
        written
    }

    /// Dirty blocks now cached.
    pub fn dirty_blocks(&self) -> u64 {
        self.engine.lock().unwrap().cache.dirty_blocks()
    }

    /// Blocks held in pinned slots after a failed write-back.
    pub fn held_blocks(&self) -> usize {
        self.held.len()
    }

    /// Held blocks of one volume.
    pub fn held_blocks_of(&self, volume: u32) -> usize {
        self.held.count_of(volume)
    }

    /// Flash and backend I/O errors so far.
    pub fn error_counts(&self) -> (usize, usize) {
        (self.stats.flash_errors.load(Ordering::Relaxed), self.stats.backend_errors.load(Ordering::Relaxed))
    }

    /// Tries again to write back the blocks held in pinned slots.
    fn retry_held(&self, s: &mut Scratch) -> u64 {
        let held = self.held.all();
        if held.is_empty() {
            return 0;
        }
        let Some(store) = &self.store else { return 0 };
        s.lanes.clear();
        for &(key, slot) in &held {
            s.lanes.push(key_lane(key));
            s.lanes.push(slot_lane(slot));
        }
        s.lanes.sort_unstable();
        s.lanes.dedup();
        self.engine.lock().unwrap().dispenser.take(&s.lanes, &mut s.tickets);
        let tickets = std::mem::take(&mut s.tickets);
        let mut written = 0;
        {
            let _turn = self.turn(&tickets);
            s.block.resize(self.block_size as usize, 0);
            for (key, slot) in held {
                // Superseded meanwhile?
                if self.held.slot_of(key) != Some(slot) {
                    continue;
                }
                let Some(volume) = self.volume(key.volume) else { continue };
                let copied = store
                    .read(slot, 0, &mut s.block)
                    .inspect_err(|e| self.flash_failed(e))
                    .and_then(|()| self.backend_write_block(&volume, key.block, &s.block));
                if copied.is_ok() {
                    self.held.release(key);
                    if self.slot_holds(store, slot, key) {
                        store.invalidate(slot);
                    }
                    written += 1;
                }
            }
        }
        s.tickets = tickets;
        written
    }
}
