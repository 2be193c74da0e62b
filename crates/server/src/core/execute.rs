//! Carrying out the engine's decisions: the actions of one request, in the
//! engine's order, against the flash store and the backends.

use std::io;
use std::sync::atomic::Ordering;

use cloudcache_engine::{Action, BlockKey, WritePolicy};

use super::{CacheCore, Request, Scratch, TRIM_LANE_LIMIT};
use crate::lanes::{all_key_lanes, key_lane, slot_lane, Lane};
use crate::store::FlashStore;
use crate::volume::Volume;

impl CacheCore {
    pub(super) fn execute(
        &self,
        volume: &Volume,
        first: u64,
        request: Request,
        s: &mut Scratch,
    ) -> io::Result<()> {
        let bs = self.block_size;
        let store = self.store.as_ref().expect("execute needs a store");
        s.block.resize(bs as usize, 0);
        s.backend_writes.clear();
        s.failed.clear();
        let mut error: Option<io::Error> = None;
        let mut flash_writes = 0;
        // Partial edge blocks of a write whose old data has been merged in.
        let mut merged = [false; 2];
        s.done_early.clear();
        s.done_early.resize(s.actions.len(), false);
        self.release_persisted_victims(store, s);
        if let Request::Read = request {
            if let Some(e) = self.read_misses_together(volume, first, s) {
                error.get_or_insert(e);
            }
        }
        for i in 0..s.actions.len() {
            if s.done_early[i] {
                continue;
            }
            match s.actions[i] {
                Action::FlashRead { key, slot } => {
                    let at = ((key.block - first) * bs) as usize;
                    // Neighbouring blocks in neighbouring slots (blocks admitted
                    // together) are read with one call.
                    let mut run = 1;
                    while let Some(Action::FlashRead { key: k, slot: t }) = s.actions.get(i + run) {
                        if k.block != key.block + run as u64
                            || *t != slot + run as u32
                            || !self.slot_holds(store, *t, *k)
                        {
                            break;
                        }
                        run += 1;
                    }
                    if run > 1 && self.slot_holds(store, slot, key) {
                        let blocks = &mut s.blocks[at..at + run * bs as usize];
                        if store.read_slots(slot, blocks).is_ok() {
                            s.done_early[i + 1..i + run].fill(true);
                            continue;
                        }
                    }
                    if !self.slot_holds(store, slot, key) {
                        // An earlier fill of this slot failed after the engine
                        // counted on it: the backend has the data.
                        if let Err(e) =
                            self.backend_read_block(volume, key.block, &mut s.blocks[at..at + bs as usize])
                        {
                            error.get_or_insert(e);
                        }
                    } else if let Err(e) = store.read(slot, 0, &mut s.blocks[at..at + bs as usize]) {
                        self.flash_failed(&e);
                        // A clean block can still come from the backend.
                        let dirty = self.engine.lock().unwrap().cache.lookup(key).is_some_and(|(_, d)| d);
                        if dirty {
                            error.get_or_insert(e);
                        } else if let Err(e) =
                            self.backend_read_block(volume, key.block, &mut s.blocks[at..at + bs as usize])
                        {
                            error.get_or_insert(e);
                        }
                    }
                }
                Action::BackendRead { key } | Action::StagedRead { key } => {
                    let at = ((key.block - first) * bs) as usize;
                    let result = match request {
                        Request::Write { offset, len } => {
                            // Read-modify-write: the old data around the client's bytes.
                            let r = self.backend_read_block(volume, key.block, &mut s.block);
                            if r.is_ok() {
                                merge_around(
                                    &mut s.blocks[at..at + bs as usize],
                                    &s.block,
                                    key.block,
                                    bs,
                                    offset,
                                    len,
                                );
                                merged[usize::from(key.block != first)] = true;
                            }
                            r
                        }
                        _ => self.backend_read_block(volume, key.block, &mut s.blocks[at..at + bs as usize]),
                    };
                    if let Err(e) = result {
                        s.failed.push(key.block);
                        error.get_or_insert(e);
                    }
                }
                Action::Stage { .. } => {}
                Action::FlashWrite { key, slot } => {
                    let dirty = s.flash_dirty[flash_writes];
                    flash_writes += 1;
                    if s.failed.contains(&key.block) {
                        self.forget(key, slot, store);
                        continue;
                    }
                    let at = ((key.block - first) * bs) as usize;
                    if let Request::Write { offset, len } = request {
                        let edge = usize::from(key.block != first);
                        if !covers_block(key.block, bs, offset, len) && !merged[edge] {
                            // A partial write hit: the rest of the block is on
                            // flash (or, if its fill failed, on the backend).
                            let old = if self.slot_holds(store, slot, key) {
                                store.read(slot, 0, &mut s.block).inspect_err(|e| self.flash_failed(e))
                            } else {
                                self.backend_read_block(volume, key.block, &mut s.block)
                            };
                            if let Err(e) = old {
                                self.forget(key, slot, store);
                                error.get_or_insert(e);
                                continue;
                            }
                            merge_around(
                                &mut s.blocks[at..at + bs as usize],
                                &s.block,
                                key.block,
                                bs,
                                offset,
                                len,
                            );
                            merged[edge] = true;
                        }
                    }
                    // A held block cached again (its held data read back, or
                    // newer data written) is still newer than the backend:
                    // the new copy is dirty, and it replaces the held one.
                    let mut dirty = dirty;
                    let held_elsewhere = self.held.slot_of(key);
                    if held_elsewhere.is_some() && !dirty {
                        dirty = true;
                        self.engine.lock().unwrap().cache.mark_dirty_again(key);
                    }
                    match self.held.key_in(slot) {
                        Some(held) if held == key => {
                            self.held.release(key);
                        }
                        // The slot keeps another block's only copy: this one
                        // is not cached (a dirty one goes to the backend now).
                        Some(_) => {
                            self.forget(key, slot, store);
                            if dirty {
                                if let Err(e) = self.backend_write_block(
                                    volume,
                                    key.block,
                                    &s.blocks[at..at + bs as usize],
                                ) {
                                    error.get_or_insert(e);
                                }
                            }
                            continue;
                        }
                        None => {}
                    }
                    let written =
                        store.write(slot, key.volume, key.block, &s.blocks[at..at + bs as usize], dirty);
                    if let (Ok(()), Some(pinned)) = (&written, held_elsewhere.filter(|&p| p != slot)) {
                        if self.held.release(key).is_some() && self.slot_holds(store, pinned, key) {
                            store.invalidate(pinned);
                        }
                    }
                    if let Err(e) = written {
                        self.flash_failed(&e);
                        self.forget(key, slot, store);
                        if dirty {
                            // The only copy would be lost: send it to the backend now.
                            if let Err(e) =
                                self.backend_write_block(volume, key.block, &s.blocks[at..at + bs as usize])
                            {
                                error.get_or_insert(e);
                            }
                        }
                    }
                }
                Action::WriteBack { key, slot } => {
                    if s.done_early.get(i).copied().unwrap_or(false) {
                        continue;
                    }
                    let evicting = s.actions[i + 1..]
                        .iter()
                        .any(|a| matches!(a, Action::Evict { slot: s2, .. } if *s2 == slot));
                    // The victim's failure is not this request's: its data is kept.
                    let _ = self.write_back(key, slot, evicting, &mut s.block);
                }
                Action::Evict { slot, key } | Action::Invalidate { slot, key } => {
                    if let Err(e) = self.release_slot(key, slot, store) {
                        error.get_or_insert(e);
                    }
                }
                Action::BackendWrite { key } => {
                    let Request::Write { offset, len } = request else { continue };
                    let block_start = key.block * bs;
                    let from = offset.max(block_start);
                    let to = (offset + len).min(block_start + bs);
                    match s.backend_writes.last_mut() {
                        Some((_, end)) if *end == from => *end = to,
                        _ => s.backend_writes.push((from, to)),
                    }
                }
                Action::BackendTrim { offset, len, .. } => {
                    let Request::Discard { zero } = request else { continue };
                    volume.backend_unflushed.store(true, Ordering::Relaxed);
                    let result = if zero {
                        volume.backend.write_zeroes(offset, len)
                    } else {
                        volume.backend.trim(offset, len)
                    };
                    if let Err(e) = result {
                        self.stats.backend_errors.fetch_add(1, Ordering::Relaxed);
                        error.get_or_insert(e);
                    }
                }
            }
        }
        if let Request::Write { .. } = request {
            self.drop_held_copies(store, volume.id, first, s);
            for &(from, to) in &s.backend_writes {
                let at = (from - first * bs) as usize;
                volume.backend_unflushed.store(true, Ordering::Relaxed);
                if let Err(e) = volume.backend.write_at(&s.blocks[at..at + (to - from) as usize], from) {
                    self.stats.backend_errors.fetch_add(1, Ordering::Relaxed);
                    error.get_or_insert(e);
                }
            }
        }
        error.map_or(Ok(()), Err)
    }

    /// Victims whose dirty entry is on flash cost a backend flush and a
    /// metadata persist before their slot may be reused ([`Self::release_slot`]).
    /// Doing that once per request rather than once per victim: write them
    /// all back first, then flush and persist once. Only victims whose slot
    /// no earlier action of the request touches are moved ahead, so every
    /// slot still sees its operations in the engine's order.
    pub(super) fn release_persisted_victims(&self, store: &FlashStore, s: &mut Scratch) {
        let victims = s
            .actions
            .iter()
            .filter(|a| matches!(a, Action::Evict { slot, .. } if store.persisted_dirty(*slot)))
            .count();
        if victims < 2 {
            return;
        }
        index_actions(
            &s.actions,
            |action| match *action {
                Action::FlashWrite { slot, .. }
                | Action::Evict { slot, .. }
                | Action::Invalidate { slot, .. } => Some(slot),
                _ => None,
            },
            &mut s.slot_uses,
        );
        let mut volumes: Vec<u32> = Vec::new();
        let mut released = 0;
        for i in 0..s.actions.len() {
            let Action::Evict { key, slot } = s.actions[i] else { continue };
            if !store.persisted_dirty(slot) {
                continue;
            }
            // The engine emits a victim's write-back right before its
            // eviction; a slot filled or freed earlier in the request keeps
            // its place in line.
            let write_back = i
                .checked_sub(1)
                .filter(|&j| matches!(s.actions[j], Action::WriteBack { slot: t, .. } if t == slot));
            let touched_before = appears_before(&s.slot_uses, slot, i);
            let Some(write_back) = write_back.filter(|_| !touched_before) else { continue };
            let _ = self.write_back(key, slot, true, &mut s.block);
            s.done_early[write_back] = true;
            if self.held.key_in(slot).is_some() {
                continue;
            }
            store.invalidate(slot);
            if !volumes.contains(&key.volume) {
                volumes.push(key.volume);
            }
            released += 1;
        }
        if released == 0 {
            return;
        }
        let flushed =
            volumes.iter().all(|&v| self.volume(v).is_none_or(|volume| volume.backend.flush().is_ok()));
        // If this fails, release_slot tries again slot by slot.
        if flushed {
            let _ = store.persist();
        }
    }

    /// A read's misses, fetched from the backend in as few calls as
    /// possible: runs of neighbouring blocks are read at once into the
    /// request's buffer (a 128 KiB miss is one backend read, not 32). Only
    /// misses that no earlier action of the request touches (as a victim
    /// written back or evicted) are moved ahead. Returns the first error.
    pub(super) fn read_misses_together(
        &self,
        volume: &Volume,
        first: u64,
        s: &mut Scratch,
    ) -> Option<io::Error> {
        // Held blocks are read one by one from their pinned slots.
        if !self.held.is_empty() {
            return None;
        }
        let bs = self.block_size;
        let mut error = None;
        let mut run: Option<(u64, u64)> = None;
        let mut read_run = |run: (u64, u64), s: &mut Scratch| {
            let (from, to) = run;
            let start = from * bs;
            let end = ((to + 1) * bs).min(volume.size.max(start));
            let at = ((from - first) * bs) as usize;
            let buf = &mut s.blocks[at..at + ((to - from + 1) * bs) as usize];
            let n = (end - start) as usize;
            buf[n..].fill(0);
            if let Err(e) = volume.backend.read_at(&mut buf[..n], start) {
                self.stats.backend_errors.fetch_add(1, Ordering::Relaxed);
                s.failed.extend(from..=to);
                error.get_or_insert(e);
            }
        };
        // Where each victim first appears, to find in O(log n) whether a
        // miss's block was written back or evicted earlier in the request.
        index_actions(
            &s.actions,
            |action| match *action {
                Action::WriteBack { key, .. }
                | Action::Evict { key, .. }
                | Action::Invalidate { key, .. } => Some(key),
                _ => None,
            },
            &mut s.victims,
        );
        for i in 0..s.actions.len() {
            let (Action::BackendRead { key } | Action::StagedRead { key }) = s.actions[i] else { continue };
            if appears_before(&s.victims, key, i) {
                continue;
            }
            s.done_early[i] = true;
            run = match run {
                Some((from, to)) if key.block == to + 1 => Some((from, key.block)),
                Some(previous) => {
                    read_run(previous, s);
                    Some((key.block, key.block))
                }
                None => Some((key.block, key.block)),
            };
        }
        if let Some(last) = run {
            read_run(last, s);
        }
        error
    }

    /// A write supersedes any held (failed write-back) copy of its blocks:
    /// their old bytes were merged in by read-modify-write already. The
    /// pinned entry goes (persisted by the next flush, as the write is).
    pub(super) fn drop_held_copies(&self, store: &FlashStore, volume: u32, first: u64, s: &Scratch) {
        if self.held.is_empty() {
            return;
        }
        let blocks = s.blocks.len() as u64 / self.block_size;
        for block in first..first + blocks {
            let key = BlockKey::new(volume, block);
            if let Some(slot) = self.held.release(key) {
                if self.slot_holds(store, slot, key) {
                    store.invalidate(slot);
                }
            }
        }
    }

    /// Copies a dirty block to the backend. On success the block will be
    /// recorded clean at the next flush (unless it is being evicted); on
    /// failure it is dirty again, or, if it is being evicted, held in its
    /// pinned slot ([`crate::held::Held`]).
    pub(super) fn write_back(
        &self,
        key: BlockKey,
        slot: u32,
        evicting: bool,
        buf: &mut [u8],
    ) -> io::Result<()> {
        let store = self.store.as_ref().expect("write-back needs a store");
        let Some(entry) = store.entry(slot).filter(|e| e.volume == key.volume && e.block == key.block) else {
            // Its fill failed and the data went to the backend instead.
            return Ok(());
        };
        let seq = entry.seq;
        let result = store.read(slot, 0, buf).inspect_err(|e| self.flash_failed(e));
        let result = result.and_then(|()| match self.volume(key.volume) {
            Some(volume) => self.backend_write_block(&volume, key.block, buf),
            None => {
                Err(io::Error::new(io::ErrorKind::NotFound, format!("volume {} is not attached", key.volume)))
            }
        });
        match &result {
            Ok(()) if !evicting => self.pending_clean.lock().unwrap().push((slot, seq, key.volume)),
            Ok(()) => {}
            Err(e) => {
                log::warn!(
                    "write-back of volume {} block {} failed (kept for retry): {e}",
                    key.volume,
                    key.block
                );
                if evicting {
                    self.held.hold(key, slot);
                } else {
                    self.engine.lock().unwrap().cache.mark_dirty_again(key);
                }
            }
        }
        result
    }

    /// Frees a slot in the store. A slot whose dirty entry is on flash is
    /// not reused before an invalid entry is: otherwise a crash would bring
    /// back the old block's entry over the new block's data.
    pub(super) fn release_slot(&self, key: BlockKey, slot: u32, store: &FlashStore) -> io::Result<()> {
        if self.held.key_in(slot).is_some() {
            // Pinned: its entry and data stay.
            return Ok(());
        }
        store.invalidate(slot);
        if store.persisted_dirty(slot) {
            // Its write-back (if any) must be durable before the entry goes.
            if let Some(volume) = self.volume(key.volume) {
                volume.backend.flush()?;
            }
            store.persist()?;
        }
        Ok(())
    }

    /// Drops `key` from the engine if it is still in `slot` (a later
    /// decision may have moved it on already).
    pub(super) fn forget(&self, key: BlockKey, slot: u32, store: &FlashStore) {
        let mut engine = self.engine.lock().unwrap();
        if engine.cache.lookup(key).is_some_and(|(at, _)| at == slot) {
            engine.cache.forget(key);
        }
        if self.held.key_in(slot).is_none() {
            store.invalidate(slot);
        }
    }

    /// Whether the store's entry for `slot` is `key`.
    pub(super) fn slot_holds(&self, store: &FlashStore, slot: u32, key: BlockKey) -> bool {
        store.entry(slot).is_some_and(|e| e.volume == key.volume && e.block == key.block)
    }

    pub(super) fn flash_failed(&self, error: &io::Error) {
        self.stats.flash_errors.fetch_add(1, Ordering::Relaxed);
        if !self.degraded.swap(true, Ordering::Relaxed) {
            log::error!(
                "flash I/O error ({error}): new data now bypasses the cache (write-invalidate); cached data is still served"
            );
            let mut engine = self.engine.lock().unwrap();
            for id in 0..engine.cache.volumes().len() as u32 {
                engine.cache.set_write_policy(id, WritePolicy::WriteInvalidate);
            }
        }
    }

    /// Reads one block from the backend (or its held copy), zero-filling
    /// past the end of the disk.
    pub(super) fn backend_read_block(&self, volume: &Volume, block: u64, buf: &mut [u8]) -> io::Result<()> {
        if let Some(slot) = self.held.slot_of(BlockKey::new(volume.id, block)) {
            if let Some(store) = &self.store {
                return store.read(slot, 0, buf);
            }
        }
        let start = block * self.block_size;
        let n = volume.size.saturating_sub(start).min(self.block_size) as usize;
        buf[n..].fill(0);
        volume.backend.read_at(&mut buf[..n], start).inspect_err(|_| {
            self.stats.backend_errors.fetch_add(1, Ordering::Relaxed);
        })
    }

    pub(super) fn backend_write_block(&self, volume: &Volume, block: u64, data: &[u8]) -> io::Result<()> {
        let start = block * self.block_size;
        let n = volume.size.saturating_sub(start).min(self.block_size) as usize;
        volume.backend_unflushed.store(true, Ordering::Relaxed);
        volume.backend.write_at(&data[..n], start).inspect_err(|_| {
            self.stats.backend_errors.fetch_add(1, Ordering::Relaxed);
        })
    }
}

/// Whether a write of `[offset, offset + len)` covers all of `block`.
fn covers_block(block: u64, block_size: u64, offset: u64, len: u64) -> bool {
    offset <= block * block_size && offset + len >= (block + 1) * block_size
}

/// Copies the bytes of `old` that the write does not cover into `block`.
fn merge_around(block: &mut [u8], old: &[u8], index: u64, block_size: u64, offset: u64, len: u64) {
    let start = index * block_size;
    let from = offset.max(start) - start;
    let to = (offset + len).min(start + block_size) - start;
    block[..from as usize].copy_from_slice(&old[..from as usize]);
    block[to as usize..].copy_from_slice(&old[to as usize..]);
}

/// The lanes a request's actions touch, sorted and without duplicates.
pub(super) fn collect_lanes(actions: &[Action], block_size: u64, lanes: &mut Vec<Lane>) {
    lanes.clear();
    for action in actions {
        match *action {
            Action::FlashRead { key, slot }
            | Action::FlashWrite { key, slot }
            | Action::WriteBack { key, slot }
            | Action::Evict { key, slot }
            | Action::Invalidate { key, slot } => {
                lanes.push(key_lane(key));
                lanes.push(slot_lane(slot));
            }
            Action::StagedRead { key }
            | Action::Stage { key }
            | Action::BackendRead { key }
            | Action::BackendWrite { key } => lanes.push(key_lane(key)),
            Action::BackendTrim { volume, offset, len } => {
                let first = offset / block_size;
                let last = (offset + len.max(1) - 1) / block_size;
                if last - first < TRIM_LANE_LIMIT {
                    lanes.extend((first..=last).map(|block| key_lane(BlockKey::new(volume, block))));
                } else {
                    lanes.extend(all_key_lanes());
                }
            }
        }
    }
    lanes.sort_unstable();
    lanes.dedup();
}

/// Where each item `pick` finds among `actions` appears, as (item, action
/// index) sorted, for [`appears_before`].
fn index_actions<T: Ord>(
    actions: &[Action],
    pick: impl Fn(&Action) -> Option<T>,
    index: &mut Vec<(T, usize)>,
) {
    index.clear();
    index.extend(actions.iter().enumerate().filter_map(|(i, action)| pick(action).map(|item| (item, i))));
    index.sort_unstable();
}

/// Whether `item` appears in `index` (from [`index_actions`]) at an action
/// before action `before`, found in O(log n).
fn appears_before<T: Ord>(index: &[(T, usize)], item: T, before: usize) -> bool {
    let first = index.partition_point(|(t, _)| *t < item);
    index.get(first).is_some_and(|(t, j)| *t == item && *j < before)
}
