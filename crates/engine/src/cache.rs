//! The cache state machine.
//!
//! [`Cache::handle`] takes one request and returns its [`Outcome`]; with
//! `record_actions` on, [`Cache::actions`] then lists what a real cache must
//! do, in order. Nothing here does I/O or reads a clock, and once the slot
//! table has grown to the cache's size nothing allocates per request.

use cloudcache_trace::{Op, Request, VolumeId};

use crate::action::Action;
use crate::admission::{Admission, StagingDecision, VolumeAdmission};
use crate::config::{CacheConfig, ConfigError, Mode, WritePolicy};
use crate::counters::{Counters, VolumeState};
use crate::key::{BlockKey, Slot};
use crate::list::{Links, List};
use crate::policy::{AnyPolicy, ReplacementPolicy, VolumeLru};
use crate::slot_map::SlotMap;

/// Table size to start with when the caller gives no expectation.
const DEFAULT_EXPECTED_ITEMS: u64 = 1 << 16;

/// What one request found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Blocks (objects) the request touched.
    pub blocks: u64,
    /// Of those, blocks found cached.
    pub hit_blocks: u64,
}

impl Outcome {
    /// Every touched block hit (a request hit).
    pub fn is_hit(&self) -> bool {
        self.blocks > 0 && self.hit_blocks == self.blocks
    }
}

/// How per-volume shares are enforced ([`Cache::set_shares`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShareMode {
    /// A volume at its share may still fill free space (reclaimed by the
    /// share's owner at replacement time); otherwise it replaces its own
    /// blocks and free space stays idle.
    pub lend_free_space: bool,
    /// Drop every volume's blocks beyond its new share at once (the seed's
    /// strict evaluation mode) instead of reclaiming them gradually.
    pub drop_excess: bool,
}

/// Per-volume shares in force.
struct Shares {
    blocks: Vec<u64>,
    mode: ShareMode,
}

/// A flash cache shared by many volumes.
pub struct Cache {
    config: CacheConfig,
    block_shift: u32,
    /// Capacity in weight units (blocks, or bytes in object mode).
    capacity: u64,
    used: u64,
    map: SlotMap,
    /// Key held by each slot (stale for free slots).
    keys: Vec<BlockKey>,
    /// Weight of each slot's item (object mode only; blocks weigh 1).
    weights: Vec<u64>,
    dirty: Vec<bool>,
    free: Vec<Slot>,
    policy: AnyPolicy,
    dirty_count: u64,
    /// Dirty slots, most recently written at the front, for the cleaner;
    /// kept only when the dirty watermarks are on (no one else needs the order).
    dirty_links: Links,
    dirty_list: List,
    dirty_high_blocks: Option<u64>,
    dirty_low_blocks: u64,
    volumes: Vec<VolumeState>,
    /// Write policy of each volume (the configured one until changed).
    write_policies: Vec<WritePolicy>,
    /// Admission state of each volume (empty when every miss is admitted).
    admission: Vec<VolumeAdmission>,
    /// Per volume: where its current sequential run would continue, and how
    /// long the run is in bytes (the sequential cutoff).
    sequential_runs: Vec<(u64, u64)>,
    /// The request being handled is deep in a sequential run: its misses
    /// are not admitted.
    bypass_misses: bool,
    shares: Option<Shares>,
    actions: Vec<Action>,
}

impl Cache {
    /// A cache as `config` describes it.
    pub fn new(config: CacheConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let capacity = config.capacity_units();
        // Tables start at the expected number of items (bounded by the
        // capacity) and grow if that was an underestimate.
        let expected = match config.mode {
            Mode::Block if config.expected_items == 0 => capacity.min(DEFAULT_EXPECTED_ITEMS),
            Mode::Block => capacity.min(config.expected_items as u64),
            // How many objects fit depends on their sizes, unknown up front:
            // start small and grow, so the tables stay dense (a sparse table
            // costs a cache miss per lookup).
            Mode::Object => (config.expected_items as u64).min(DEFAULT_EXPECTED_ITEMS),
        } as usize;
        let (dirty_high_blocks, dirty_low_blocks) = match config.dirty_high_watermark {
            Some(high) => {
                let low = config.dirty_low_watermark.unwrap_or(high / 2.0);
                (Some((high * capacity as f64) as u64), (low * capacity as f64) as u64)
            }
            None => (None, 0),
        };
        let policy = if config.partitioned {
            AnyPolicy::VolumeLru(VolumeLru::new(expected))
        } else {
            config.policy.build(capacity, expected)
        };
        Ok(Cache {
            block_shift: config.block_size.trailing_zeros(),
            capacity,
            used: 0,
            map: match config.mode {
                Mode::Block => SlotMap::for_blocks(expected),
                Mode::Object => SlotMap::for_objects(expected),
            },
            keys: Vec::with_capacity(expected),
            weights: Vec::with_capacity(if config.mode == Mode::Object { expected } else { 0 }),
            dirty: Vec::with_capacity(expected),
            free: Vec::new(),
            policy,
            dirty_count: 0,
            dirty_links: Links::with_slots(if dirty_high_blocks.is_some() { expected } else { 0 }),
            dirty_list: List::new(),
            dirty_high_blocks,
            dirty_low_blocks,
            volumes: Vec::new(),
            write_policies: Vec::new(),
            admission: Vec::new(),
            sequential_runs: Vec::new(),
            bypass_misses: false,
            shares: None,
            actions: Vec::new(),
            config,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &CacheConfig {
        &self.config
    }

    /// Handle one request (its `content` is ignored).
    pub fn handle_request(&mut self, req: &Request) -> Outcome {
        self.handle(req.volume, req.op, req.offset, req.len)
    }

    /// Handle one request of `len` bytes at byte `offset` of `volume`.
    pub fn handle(&mut self, volume: VolumeId, op: Op, offset: u64, len: u64) -> Outcome {
        self.actions.clear();
        if volume as usize >= self.volumes.len() {
            self.add_volumes(volume as usize + 1);
        }
        let outcome = match self.config.mode {
            Mode::Block => self.handle_blocks(volume, op, offset, len),
            Mode::Object => self.handle_object(volume, op, offset, len),
        };
        if let Some(high) = self.dirty_high_blocks {
            if self.dirty_count > high {
                self.clean_down_to(self.dirty_low_blocks);
            }
        }
        outcome
    }

    /// Actions of the last request, in order (empty unless `record_actions`).
    pub fn actions(&self) -> &[Action] {
        &self.actions
    }

    /// Per-volume counters and footprint, indexed by volume id.
    pub fn volumes(&self) -> &[VolumeState] {
        &self.volumes
    }

    /// Whole-cache counters (the sum over volumes).
    pub fn counters(&self) -> Counters {
        let mut total = Counters::default();
        for v in &self.volumes {
            total.add(&v.counters);
        }
        total
    }

    /// Items now cached.
    pub fn cached_items(&self) -> u64 {
        self.map.len() as u64
    }

    /// Weight now cached: blocks, or bytes in object mode.
    pub fn used_weight(&self) -> u64 {
        self.used
    }

    /// Capacity in weight units: blocks, or bytes in object mode.
    pub fn capacity_weight(&self) -> u64 {
        self.capacity
    }

    /// Dirty blocks now cached.
    pub fn dirty_blocks(&self) -> u64 {
        self.dirty_count
    }

    /// Set each volume's share of the cache, in blocks (index = volume id;
    /// volumes beyond the slice get none), enforced at replacement time as
    /// `mode` says. Staging memory is divided in proportion to the shares.
    /// With `drop_excess`, blocks beyond a share are evicted now and
    /// [`Cache::actions`] lists them. Needs a partitioned cache.
    pub fn set_shares(&mut self, blocks: &[u64], mode: ShareMode) {
        assert!(self.config.partitioned, "set_shares needs a cache configured as partitioned");
        self.actions.clear();
        if blocks.len() > self.volumes.len() {
            self.add_volumes(blocks.len());
        }
        self.shares = Some(Shares { blocks: blocks.to_vec(), mode });
        let total_share: u128 = blocks.iter().map(|&b| b as u128).sum();
        let staging_total = self.config.admission.staging_bytes();
        for (v, admission) in self.admission.iter_mut().enumerate() {
            let share = blocks.get(v).copied().unwrap_or(0);
            match admission {
                VolumeAdmission::Staging(area) => {
                    let budget =
                        (staging_total as u128 * share as u128).checked_div(total_share).unwrap_or(0) as u64;
                    area.set_budget(budget);
                }
                VolumeAdmission::Larc(larc) => larc.set_cache_blocks(share),
                _ => {}
            }
        }
        if mode.drop_excess {
            for v in 0..self.volumes.len() {
                let share = self.share_of(v as VolumeId);
                while self.volumes[v].cached_weight > share {
                    self.evict_from_volume(v as VolumeId);
                }
            }
        }
    }

    /// The share of `volume` in blocks (`None` while no shares are set).
    pub fn share(&self, volume: VolumeId) -> Option<u64> {
        self.shares.as_ref().map(|_| self.share_of(volume))
    }

    /// Memory the admission state (staging areas, ghosts) uses, in bytes.
    pub fn staging_used_bytes(&self) -> u64 {
        self.admission.iter().map(VolumeAdmission::staging_used_bytes).sum()
    }

    /// Memory `volume`'s admission state uses, in bytes.
    pub fn volume_staging_used_bytes(&self, volume: VolumeId) -> u64 {
        self.admission.get(volume as usize).map_or(0, VolumeAdmission::staging_used_bytes)
    }

    /// Whether `key` is cached, and if so whether it is dirty.
    pub fn lookup(&self, key: BlockKey) -> Option<(Slot, bool)> {
        self.map.lookup(key, &self.keys).map(|slot| (slot, self.dirty[slot as usize]))
    }

    /// Write back every dirty block (all volumes, or one); blocks stay
    /// cached and clean. The order is oldest write first when the dirty
    /// watermarks are on (the engine then keeps write order), slot order
    /// otherwise. Returns the number written back; with `record_actions`,
    /// [`Cache::actions`] lists the `WriteBack`s.
    pub fn write_back_all(&mut self, volume: Option<VolumeId>) -> u64 {
        self.actions.clear();
        let wanted = |cache: &Self, slot: Slot| volume.is_none_or(|v| cache.keys[slot as usize].volume == v);
        let mut written = 0;
        if self.tracks_dirty_order() {
            let mut at = self.dirty_list.back();
            while let Some(slot) = at {
                at = self.dirty_links.prev(slot);
                if wanted(self, slot) {
                    self.clean(slot);
                    written += 1;
                }
            }
        } else {
            for slot in 0..self.keys.len() as Slot {
                if self.dirty[slot as usize] && wanted(self, slot) {
                    self.clean(slot);
                    written += 1;
                }
            }
        }
        written
    }

    /// Write back up to `limit` of the oldest dirty blocks (they stay
    /// cached, clean): a background cleaner's step. Needs the dirty order
    /// (`keep_dirty_order` or the dirty watermarks). Returns how many;
    /// [`Cache::actions`] lists their `WriteBack`s.
    pub fn write_back_oldest(&mut self, limit: u64) -> u64 {
        assert!(self.tracks_dirty_order(), "write_back_oldest needs keep_dirty_order or dirty watermarks");
        self.actions.clear();
        let mut written = 0;
        while written < limit {
            let Some(slot) = self.dirty_list.back() else { break };
            self.clean(slot);
            written += 1;
        }
        written
    }

    /// Set `volume`'s write policy from now on. Blocks already dirty stay
    /// dirty (a driver that leaves write-back calls [`Cache::write_back_all`]
    /// for the volume); writes that bypass the cache settle them first.
    pub fn set_write_policy(&mut self, volume: VolumeId, policy: WritePolicy) {
        if volume as usize >= self.volumes.len() {
            self.add_volumes(volume as usize + 1);
        }
        self.write_policies[volume as usize] = policy;
    }

    /// `volume`'s write policy.
    pub fn write_policy(&self, volume: VolumeId) -> WritePolicy {
        self.write_policies.get(volume as usize).copied().unwrap_or(self.config.write_policy)
    }

    /// A write-back of `key` failed after the engine counted it clean: the
    /// cache still holds the only current copy, so it is dirty again. False
    /// if `key` is no longer cached (the driver must keep its data).
    pub fn mark_dirty_again(&mut self, key: BlockKey) -> bool {
        self.actions.clear();
        match self.map.lookup(key, &self.keys) {
            Some(slot) => {
                self.mark_dirty(slot);
                true
            }
            None => false,
        }
    }

    /// Forget a cached block whose flash copy is unusable (a failed flash
    /// write or a failed checksum). A dirty block stays counted dirty in the
    /// driver's hands: the caller must have its data. With
    /// `record_actions`, [`Cache::actions`] lists the `Invalidate`.
    pub fn forget(&mut self, key: BlockKey) -> bool {
        self.actions.clear();
        match self.map.lookup(key, &self.keys) {
            Some(slot) => {
                if self.dirty[slot as usize] {
                    self.unmark_dirty(slot);
                }
                self.drop_slot(slot);
                true
            }
            None => false,
        }
    }

    /// Put `key` into the cache as a driver found it on restart (a warm
    /// cache), in the slot it occupies on flash. Slots must come in
    /// increasing order, before any request; the restored blocks enter the
    /// replacement order in that order. False if the key is already cached
    /// or the slot is out of order or beyond the capacity.
    pub fn restore(&mut self, key: BlockKey, slot: Slot, dirty: bool) -> bool {
        if key.volume as usize >= self.volumes.len() {
            self.add_volumes(key.volume as usize + 1);
        }
        let in_order = slot as usize >= self.keys.len() && (slot as u64) < self.capacity;
        if !in_order || self.map.lookup(key, &self.keys).is_some() || self.config.mode != Mode::Block {
            return false;
        }
        while self.keys.len() < slot as usize {
            let skipped = self.grow_slots();
            self.free.push(skipped);
        }
        self.grow_slots();
        let s = slot as usize;
        self.keys[s] = key;
        let hash = self.map.hash(key);
        self.map.insert_new(hash, slot);
        self.policy.insert(slot, key, 1);
        self.used += 1;
        let state = &mut self.volumes[key.volume as usize];
        state.cached_items += 1;
        state.cached_weight += 1;
        if dirty {
            self.mark_dirty(slot);
        }
        true
    }

    /// Updates `volume`'s sequential run with a request and says whether the
    /// run, this request included, is now longer than the cutoff.
    fn continues_long_run(&mut self, volume: usize, offset: u64, len: u64) -> bool {
        let cutoff = self.config.sequential_cutoff_bytes;
        if cutoff == 0 {
            return false;
        }
        let (next, run) = &mut self.sequential_runs[volume];
        *run = if offset == *next { run.saturating_add(len) } else { len };
        *next = offset.saturating_add(len);
        *run > cutoff
    }

    fn tracks_dirty_order(&self) -> bool {
        self.dirty_high_blocks.is_some() || self.config.keep_dirty_order
    }

    fn add_volumes(&mut self, count: usize) {
        self.volumes.resize(count, VolumeState::default());
        self.sequential_runs.resize(count, (u64::MAX, 0));
        self.write_policies.resize(count, self.config.write_policy);
        if self.config.admission != Admission::Always {
            while self.admission.len() < count {
                let share = self.share_of(self.admission.len() as VolumeId);
                self.admission.push(VolumeAdmission::new(
                    self.config.admission,
                    self.config.block_size,
                    share,
                    self.expected_staged_blocks(),
                ));
            }
        }
    }

    /// How many distinct blocks a staging area should expect to see.
    fn expected_staged_blocks(&self) -> usize {
        match self.config.expected_items {
            0 => DEFAULT_EXPECTED_ITEMS as usize,
            expected => expected,
        }
    }

    /// A hint that a request of `volume` at `offset` comes next: in object
    /// mode, whose keys have no locality, start loading the index line its
    /// lookup will read, so that the miss overlaps the current request.
    /// (Block mode prefetches a request's runs when it starts.)
    #[inline]
    pub fn prefetch_request(&self, volume: VolumeId, offset: u64) {
        if self.config.mode == Mode::Object {
            self.map.prefetch_key(BlockKey { volume, block: offset });
        }
    }

    /// `volume`'s share in blocks: the whole cache while no shares are set.
    fn share_of(&self, volume: VolumeId) -> u64 {
        self.shares.as_ref().map_or(self.capacity, |s| s.blocks.get(volume as usize).copied().unwrap_or(0))
    }

    /// Whether admission control lets uncached `key` in on this access.
    #[inline]
    fn admission_decision(&mut self, key: BlockKey, is_read: bool) -> StagingDecision {
        let admit = match self.admission.get_mut(key.volume as usize) {
            None | Some(VolumeAdmission::Always) => true,
            Some(VolumeAdmission::Staging(area)) => {
                let Admission::Staging { reuses, .. } = self.config.admission else { unreachable!() };
                return area.access(key.block, is_read, reuses.saturating_add(1));
            }
            Some(VolumeAdmission::TouchCount(hec)) => {
                let Admission::TouchCount { region_bytes, sequential_cutoff_bytes } = self.config.admission
                else {
                    unreachable!()
                };
                let shift = (region_bytes / self.config.block_size).trailing_zeros();
                hec.admits(key.block, shift, sequential_cutoff_bytes / self.config.block_size)
            }
            Some(VolumeAdmission::Larc(larc)) => larc.miss(key.block),
        };
        StagingDecision { admit, ..StagingDecision::default() }
    }

    /// A write that cannot admit (write-invalidate, read-only) still counts
    /// as an access for staging and makes staged data stale.
    fn note_bypassing_write(&mut self, key: BlockKey) {
        if let Some(VolumeAdmission::Staging(area)) = self.admission.get_mut(key.volume as usize) {
            area.access(key.block, false, u32::MAX);
        }
    }

    /// A cache hit, for admission policies that adapt to the hit ratio.
    #[inline]
    fn note_hit(&mut self, volume: VolumeId) {
        if let Some(VolumeAdmission::Larc(larc)) = self.admission.get_mut(volume as usize) {
            larc.hit();
        }
    }

    // ---- block mode -------------------------------------------------------

    fn handle_blocks(&mut self, volume: VolumeId, op: Op, offset: u64, len: u64) -> Outcome {
        let v = volume as usize;
        let end = offset.saturating_add(len);
        if len == 0 || end == offset {
            if op == Op::Trim {
                self.volumes[v].counters.trim_requests += 1;
            } else {
                self.volumes[v].counters.empty_requests += 1;
            }
            return Outcome::default();
        }
        let block_size = self.config.block_size;
        let first = offset >> self.block_shift;
        let last = (end - 1) >> self.block_shift;
        if op == Op::Trim {
            self.trim(volume, offset, end, first, last);
            return Outcome::default();
        }
        if let Some(VolumeAdmission::TouchCount(hec)) = self.admission.get_mut(v) {
            hec.observe_request(first, last - first + 1);
        }
        self.bypass_misses = self.continues_long_run(v, offset, len);
        self.map.touch_run(volume, first, last);
        let mut outcome = Outcome::default();
        let mut byte_hits = 0;
        for block in first..=last {
            let block_start = block << self.block_shift;
            let covered = end.min(block_start.saturating_add(block_size)) - offset.max(block_start);
            let key = BlockKey { volume, block };
            let hit = match op {
                Op::Read => self.read_block(key),
                _ => self.write_block(key, covered == block_size),
            };
            outcome.blocks += 1;
            if hit {
                outcome.hit_blocks += 1;
                byte_hits += covered;
            }
        }
        // Counted once per request rather than per block: the per-block path
        // touches only what it must.
        let counters = &mut self.volumes[v].counters;
        counters.requests += 1;
        counters.request_hits += u64::from(outcome.is_hit());
        counters.block_accesses += outcome.blocks;
        counters.block_hits += outcome.hit_blocks;
        counters.bytes_accessed += len;
        counters.byte_hits += byte_hits;
        if op == Op::Read {
            counters.read_requests += 1;
            counters.read_block_accesses += outcome.blocks;
            counters.read_block_hits += outcome.hit_blocks;
        } else {
            counters.write_requests += 1;
            counters.write_block_accesses += outcome.blocks;
            counters.write_block_hits += outcome.hit_blocks;
        }
        outcome
    }

    /// One block of a read; true on a hit.
    #[inline]
    fn read_block(&mut self, key: BlockKey) -> bool {
        let v = key.volume as usize;
        let hash = self.map.hash(key);
        if let Some(slot) = self.map.get(key, hash, &self.keys) {
            self.policy.hit(slot);
            if !self.admission.is_empty() {
                self.note_hit(key.volume);
            }
            self.volumes[v].counters.flash_read_blocks += 1;
            self.record(Action::FlashRead { key, slot });
            return true;
        }
        let decision = if self.bypass_misses {
            StagingDecision::default()
        } else if self.admission.is_empty() {
            StagingDecision { admit: true, ..StagingDecision::default() }
        } else {
            self.admission_decision(key, true)
        };
        if decision.data_hit {
            self.volumes[v].counters.staging_hits += 1;
            self.record(Action::StagedRead { key });
        } else {
            self.volumes[v].counters.backend_read_blocks += 1;
            self.record(Action::BackendRead { key });
            if decision.data_staged {
                self.record(Action::Stage { key });
            }
        }
        match decision.admit.then(|| self.admit(key, hash, 1)).flatten() {
            Some(slot) => {
                self.volumes[v].counters.flash_write_blocks += 1;
                self.record(Action::FlashWrite { key, slot });
            }
            None => self.volumes[v].counters.not_admitted += 1,
        }
        decision.data_hit
    }

    /// One block of a write; true if the block was cached when written.
    #[inline]
    fn write_block(&mut self, key: BlockKey, whole_block: bool) -> bool {
        let v = key.volume as usize;
        let hash = self.map.hash(key);
        let cached = self.map.get(key, hash, &self.keys);
        let write_policy = self.write_policies[v];
        match write_policy {
            WritePolicy::WriteBack | WritePolicy::WriteThrough => {
                let slot = match cached {
                    Some(slot) => {
                        self.policy.hit(slot);
                        if !self.admission.is_empty() {
                            self.note_hit(key.volume);
                        }
                        slot
                    }
                    None => {
                        let admit = if self.bypass_misses {
                            false
                        } else if self.admission.is_empty() {
                            true
                        } else {
                            self.admission_decision(key, false).admit
                        };
                        let admitted = if admit {
                            if !whole_block {
                                // The rest of the block must come from the backend
                                // before the cache can hold a whole valid block.
                                self.volumes[v].counters.backend_read_blocks += 1;
                                self.record(Action::BackendRead { key });
                            }
                            self.admit(key, hash, 1)
                        } else {
                            None
                        };
                        let Some(slot) = admitted else {
                            // Not admitted: the write goes around the cache.
                            self.volumes[v].counters.not_admitted += 1;
                            self.volumes[v].counters.backend_write_blocks += 1;
                            self.record(Action::BackendWrite { key });
                            return false;
                        };
                        slot
                    }
                };
                self.volumes[v].counters.flash_write_blocks += 1;
                self.record(Action::FlashWrite { key, slot });
                if write_policy == WritePolicy::WriteBack {
                    self.mark_dirty(slot);
                } else {
                    self.volumes[v].counters.backend_write_blocks += 1;
                    self.record(Action::BackendWrite { key });
                }
            }
            WritePolicy::WriteInvalidate => {
                if !self.admission.is_empty() {
                    self.note_bypassing_write(key);
                }
                if let Some(slot) = cached {
                    self.settle_dirty_before_backend_write(slot, whole_block);
                    self.drop_slot(slot);
                }
                self.volumes[v].counters.backend_write_blocks += 1;
                self.record(Action::BackendWrite { key });
            }
            WritePolicy::ReadOnly => {
                if !self.admission.is_empty() {
                    self.note_bypassing_write(key);
                }
                if let Some(slot) = cached {
                    self.policy.hit(slot);
                    self.volumes[v].counters.flash_write_blocks += 1;
                    self.record(Action::FlashWrite { key, slot });
                    self.settle_dirty_before_backend_write(slot, whole_block);
                }
                self.volumes[v].counters.backend_write_blocks += 1;
                self.record(Action::BackendWrite { key });
            }
        }
        cached.is_some()
    }

    /// Drop cached blocks wholly inside a trimmed range, then forward the trim.
    ///
    /// Partly trimmed blocks stay cached: a trimmed range's content is
    /// unspecified, so keeping the old bytes is correct and loses nothing.
    fn trim(&mut self, volume: VolumeId, offset: u64, end: u64, first: u64, last: u64) {
        let v = volume as usize;
        self.volumes[v].counters.trim_requests += 1;
        let block_size = self.config.block_size;
        let first_whole = if offset % block_size == 0 { first } else { first + 1 };
        let last_whole =
            if end % block_size == 0 || end == u64::MAX { Some(last) } else { last.checked_sub(1) };
        if let Some(last_whole) = last_whole.filter(|&l| l >= first_whole) {
            let span = last_whole - first_whole + 1;
            if span <= self.map.len() as u64 {
                for block in first_whole..=last_whole {
                    if let Some(slot) = self.map.lookup(BlockKey { volume, block }, &self.keys) {
                        self.discard(slot);
                    }
                }
            } else {
                // A huge discard (mkfs, blkdiscard): scanning the cached slots
                // is cheaper than probing every block of the range.
                for slot in 0..self.keys.len() as Slot {
                    let key = self.keys[slot as usize];
                    if key.volume == volume
                        && (first_whole..=last_whole).contains(&key.block)
                        && self.map.lookup(key, &self.keys) == Some(slot)
                    {
                        self.discard(slot);
                    }
                }
            }
        }
        self.record(Action::BackendTrim { volume, offset, len: end - offset });
    }

    /// Drop a block whose data the client discarded (no write-back needed).
    fn discard(&mut self, slot: Slot) {
        if self.dirty[slot as usize] {
            self.unmark_dirty(slot);
        }
        self.drop_slot(slot);
    }

    // ---- object mode ------------------------------------------------------

    fn handle_object(&mut self, volume: VolumeId, op: Op, offset: u64, len: u64) -> Outcome {
        let v = volume as usize;
        let key = BlockKey { volume, block: offset };
        let hash = self.map.hash(key);
        let cached = self.map.get(key, hash, &self.keys);
        if op == Op::Trim {
            self.volumes[v].counters.trim_requests += 1;
            if let Some(slot) = cached {
                self.discard(slot);
            }
            return Outcome::default();
        }
        let hit = match cached {
            Some(slot) => {
                self.policy.hit(slot);
                self.volumes[v].counters.flash_read_blocks += 1;
                self.record(Action::FlashRead { key, slot });
                true
            }
            None => {
                self.volumes[v].counters.backend_read_blocks += 1;
                self.record(Action::BackendRead { key });
                if len > self.capacity {
                    self.volumes[v].counters.not_admitted += 1;
                } else if let Some(slot) = self.admit(key, hash, len) {
                    self.volumes[v].counters.flash_write_blocks += 1;
                    self.record(Action::FlashWrite { key, slot });
                }
                false
            }
        };
        let counters = &mut self.volumes[v].counters;
        counters.requests += 1;
        counters.block_accesses += 1;
        counters.bytes_accessed += len;
        let h = u64::from(hit);
        counters.request_hits += h;
        counters.block_hits += h;
        counters.byte_hits += if hit { len } else { 0 };
        if op == Op::Read {
            counters.read_requests += 1;
            counters.read_block_accesses += 1;
            counters.read_block_hits += h;
        } else {
            counters.write_requests += 1;
            counters.write_block_accesses += 1;
            counters.write_block_hits += h;
        }
        Outcome { blocks: 1, hit_blocks: h }
    }

    // ---- slots ------------------------------------------------------------

    /// Make room for `weight` and cache `key` (whose hash is `hash`);
    /// returns its slot, or `None` if the volume's share leaves no room.
    #[inline]
    fn admit(&mut self, key: BlockKey, hash: u64, weight: u64) -> Option<Slot> {
        if self.shares.is_some() {
            if !self.make_room_within_share(key.volume, weight) {
                return None;
            }
        } else {
            while self.used + weight > self.capacity {
                self.evict_one(key);
            }
        }
        let slot = self.take_free_slot();
        let s = slot as usize;
        self.keys[s] = key;
        if self.config.mode == Mode::Object {
            self.weights[s] = weight;
        }
        self.map.insert_new(hash, slot);
        self.policy.insert(slot, key, weight);
        self.used += weight;
        let state = &mut self.volumes[key.volume as usize];
        state.cached_items += 1;
        state.cached_weight += weight;
        Some(slot)
    }

    /// Replacement-time share enforcement: make room for `weight` more of
    /// `volume`. A volume under its share takes space from the volume most
    /// over its own share; a volume at its share replaces its own blocks
    /// (or fills free space, if lending is on). False if the volume's share
    /// cannot hold the block at all.
    fn make_room_within_share(&mut self, volume: VolumeId, weight: u64) -> bool {
        let lend = self.shares.as_ref().is_some_and(|s| s.mode.lend_free_space);
        let share = self.share_of(volume);
        loop {
            let occupied = self.volumes[volume as usize].cached_weight;
            let full = self.used + weight > self.capacity;
            if occupied + weight <= share {
                if !full {
                    return true;
                }
                let victim = self.most_over_share(volume).unwrap_or(volume);
                if !self.evict_from_volume(victim) && !self.evict_from_volume(volume) {
                    return false;
                }
            } else {
                if !full && lend {
                    return true;
                }
                if !self.evict_from_volume(volume) {
                    return false;
                }
            }
        }
    }

    /// The volume (other than `except`) whose occupancy exceeds its share by
    /// the most blocks; ties go to the lower id. A linear scan: the number of
    /// volumes on a host is small next to the work of a miss.
    fn most_over_share(&self, except: VolumeId) -> Option<VolumeId> {
        let mut best: Option<(u64, VolumeId)> = None;
        for (v, state) in self.volumes.iter().enumerate() {
            let excess = state.cached_weight.saturating_sub(self.share_of(v as VolumeId));
            if excess > 0 && v as VolumeId != except && best.is_none_or(|(e, _)| excess > e) {
                best = Some((excess, v as VolumeId));
            }
        }
        best.map(|(_, v)| v)
    }

    /// Evict `volume`'s least recently used block; false if it has none.
    fn evict_from_volume(&mut self, volume: VolumeId) -> bool {
        let AnyPolicy::VolumeLru(policy) = &mut self.policy else {
            unreachable!("shares need a partitioned cache")
        };
        match policy.evict_from(volume) {
            Some(slot) => {
                self.evicted(slot);
                self.prefetch_coming_victims();
                true
            }
            None => false,
        }
    }

    fn take_free_slot(&mut self) -> Slot {
        match self.free.pop() {
            Some(slot) => slot,
            None => self.grow_slots(),
        }
    }

    /// A new slot at the end of the slot table.
    fn grow_slots(&mut self) -> Slot {
        let slot = self.keys.len() as Slot;
        let slots = self.keys.len() + 1;
        self.keys.push(BlockKey::default());
        self.dirty.push(false);
        if self.config.mode == Mode::Object {
            self.weights.push(0);
        }
        self.policy.reserve_slots(slots);
        if self.tracks_dirty_order() {
            self.dirty_links.ensure_slots(slots);
        }
        slot
    }

    /// Evict the policy's victim, writing it back first if dirty.
    fn evict_one(&mut self, incoming: BlockKey) {
        let slot = self.policy.evict(incoming, &self.keys);
        self.evicted(slot);
        self.prefetch_coming_victims();
    }

    /// A victim's records (key, dirty flag, links, bucket) sit in unrelated
    /// places and were last touched long ago; with a policy that knows its
    /// next victims, start loading them now, in two steps: the one after
    /// next gets its slot records, the next (whose records the last
    /// eviction prefetched) its bucket line.
    #[inline]
    fn prefetch_coming_victims(&self) {
        let (next, after) = self.policy.prefetch_coming_victims();
        if let (Some(key), Some(dirty)) = (self.keys.get(after as usize), self.dirty.get(after as usize)) {
            cloudcache_trace::prefetch::prefetch(key);
            cloudcache_trace::prefetch::prefetch(dirty);
            self.map.prefetch_slot(after);
        }
        if next != crate::key::NO_SLOT {
            self.map.prefetch_bucket(next);
        }
    }

    /// Write back (if dirty) and free `slot`, which the policy gave up.
    fn evicted(&mut self, slot: Slot) {
        let key = self.keys[slot as usize];
        let v = key.volume as usize;
        if self.dirty[slot as usize] {
            self.record(Action::WriteBack { key, slot });
            self.unmark_dirty(slot);
            self.volumes[v].counters.backend_write_blocks += 1;
            self.volumes[v].counters.dirty_evictions += 1;
        }
        self.volumes[v].counters.evictions += 1;
        self.record(Action::Evict { key, slot });
        self.release(slot);
    }

    /// Remove a clean (or already handled) slot that the policy still tracks.
    fn drop_slot(&mut self, slot: Slot) {
        debug_assert!(!self.dirty[slot as usize], "dropping a dirty block without write-back");
        let key = self.keys[slot as usize];
        self.policy.remove(slot);
        self.volumes[key.volume as usize].counters.invalidations += 1;
        self.record(Action::Invalidate { key, slot });
        self.release(slot);
    }

    /// Forget `slot`'s item (the policy has already let go of it).
    fn release(&mut self, slot: Slot) {
        let s = slot as usize;
        let key = self.keys[s];
        let weight = if self.config.mode == Mode::Object { self.weights[s] } else { 1 };
        self.map.remove(key, slot);
        self.used -= weight;
        let state = &mut self.volumes[key.volume as usize];
        state.cached_items -= 1;
        state.cached_weight -= weight;
        self.free.push(slot);
    }

    fn mark_dirty(&mut self, slot: Slot) {
        let tracked = self.tracks_dirty_order();
        if self.dirty[slot as usize] {
            if tracked {
                // Rewritten: now the youngest dirty block, flushed last.
                self.dirty_links.move_to_front(&mut self.dirty_list, slot);
            }
        } else {
            self.dirty[slot as usize] = true;
            self.dirty_count += 1;
            if tracked {
                self.dirty_links.push_front(&mut self.dirty_list, slot);
            }
            self.volumes[self.keys[slot as usize].volume as usize].dirty_blocks += 1;
        }
    }

    fn unmark_dirty(&mut self, slot: Slot) {
        self.dirty[slot as usize] = false;
        self.dirty_count -= 1;
        if self.tracks_dirty_order() {
            self.dirty_links.unlink(&mut self.dirty_list, slot);
        }
        self.volumes[self.keys[slot as usize].volume as usize].dirty_blocks -= 1;
    }

    /// Write back a dirty block that stays cached.
    fn clean(&mut self, slot: Slot) {
        let key = self.keys[slot as usize];
        self.record(Action::WriteBack { key, slot });
        self.unmark_dirty(slot);
        let counters = &mut self.volumes[key.volume as usize].counters;
        counters.backend_write_blocks += 1;
        counters.cleaned_blocks += 1;
    }

    /// Before a write that bypasses the cache reaches the backend, a dirty
    /// cached copy (left by a policy change) must not be lost: if the write
    /// covers the whole block its data is superseded, otherwise the bytes it
    /// does not cover exist only in the cache and are written back first.
    fn settle_dirty_before_backend_write(&mut self, slot: Slot, whole_block: bool) {
        if self.dirty[slot as usize] {
            if whole_block {
                self.unmark_dirty(slot);
            } else {
                self.clean(slot);
            }
        }
    }

    /// Write back the oldest dirty blocks until at most `target` remain.
    fn clean_down_to(&mut self, target: u64) {
        while self.dirty_count > target {
            let Some(slot) = self.dirty_list.back() else { break };
            self.clean(slot);
        }
    }

    #[inline]
    fn record(&mut self, action: Action) {
        if self.config.record_actions {
            self.actions.push(action);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::PolicyKind;

    fn cache(blocks: u64, write_policy: WritePolicy) -> Cache {
        Cache::new(CacheConfig {
            capacity_bytes: blocks * 4096,
            block_size: 4096,
            write_policy,
            record_actions: true,
            ..CacheConfig::default()
        })
        .unwrap()
    }

    const K: u64 = 4096;

    #[test]
    fn misaligned_read_touches_every_overlapped_block() {
        let mut c = cache(8, WritePolicy::WriteBack);
        // 63-sector offset: bytes 32256..36352 overlap blocks 7 and 8.
        let o = c.handle(0, Op::Read, 63 * 512, 4096);
        assert_eq!(o, Outcome { blocks: 2, hit_blocks: 0 });
        let o = c.handle(0, Op::Read, 7 * K + 3584, 512);
        assert_eq!(o, Outcome { blocks: 1, hit_blocks: 1 });
        let n = c.counters();
        assert_eq!((n.requests, n.request_hits, n.block_accesses, n.block_hits), (2, 1, 3, 1));
        assert_eq!((n.bytes_accessed, n.byte_hits), (4096 + 512, 512));
        assert_eq!((n.backend_read_blocks, n.flash_write_blocks), (2, 2));
    }

    #[test]
    fn read_miss_actions_in_order_with_dirty_victim() {
        let mut c = cache(1, WritePolicy::WriteBack);
        c.handle(0, Op::Write, 0, K);
        assert_eq!(c.actions(), &[Action::FlashWrite { key: BlockKey::new(0, 0), slot: 0 }]);
        c.handle(0, Op::Read, K, K);
        let k0 = BlockKey::new(0, 0);
        let k1 = BlockKey::new(0, 1);
        assert_eq!(
            c.actions(),
            &[
                Action::BackendRead { key: k1 },
                Action::WriteBack { key: k0, slot: 0 },
                Action::Evict { key: k0, slot: 0 },
                Action::FlashWrite { key: k1, slot: 0 },
            ]
        );
        let n = c.counters();
        assert_eq!((n.evictions, n.dirty_evictions, n.backend_write_blocks), (1, 1, 1));
    }

    #[test]
    fn write_policy_is_per_volume() {
        let mut c = cache(8, WritePolicy::WriteBack);
        c.set_write_policy(1, WritePolicy::WriteThrough);
        c.handle(0, Op::Write, 0, K);
        c.handle(1, Op::Write, 0, K);
        assert_eq!(
            c.actions(),
            &[
                Action::FlashWrite { key: BlockKey::new(1, 0), slot: 1 },
                Action::BackendWrite { key: BlockKey::new(1, 0) },
            ]
        );
        assert_eq!((c.volumes()[0].dirty_blocks, c.volumes()[1].dirty_blocks), (1, 0));
        assert_eq!(c.write_policy(1), WritePolicy::WriteThrough);
    }

    #[test]
    fn background_cleaning_takes_the_oldest_dirty_blocks() {
        let mut c = Cache::new(CacheConfig {
            capacity_bytes: 8 * K,
            record_actions: true,
            keep_dirty_order: true,
            ..CacheConfig::default()
        })
        .unwrap();
        for block in [3, 1, 2] {
            c.handle(0, Op::Write, block * K, K);
        }
        c.handle(0, Op::Write, 3 * K, K); // rewritten: now the youngest
        assert_eq!(c.write_back_oldest(2), 2);
        let keys: Vec<u64> = c
            .actions()
            .iter()
            .map(|a| match a {
                Action::WriteBack { key, .. } => key.block,
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        assert_eq!(keys, [1, 2]);
        assert_eq!(c.dirty_blocks(), 1);
        // A failed write-back makes the block dirty again, flushed last.
        assert!(c.mark_dirty_again(BlockKey::new(0, 1)));
        assert_eq!(c.write_back_oldest(10), 2);
        assert!(matches!(c.actions()[1], Action::WriteBack { key, .. } if key.block == 1));
        assert!(!c.mark_dirty_again(BlockKey::new(0, 99)));
    }

    #[test]
    fn sequential_cutoff_bypasses_long_runs() {
        let mut c = Cache::new(CacheConfig {
            capacity_bytes: 64 * K,
            sequential_cutoff_bytes: 2 * K,
            record_actions: true,
            ..CacheConfig::default()
        })
        .unwrap();
        // A 16 KiB run in 4 KiB reads: the first 8 KiB are admitted.
        for block in 0..4 {
            c.handle(0, Op::Read, block * K, K);
        }
        assert_eq!(c.cached_items(), 2);
        assert_eq!(c.counters().not_admitted, 2);
        // Another volume's run is its own; a jump starts a new run.
        c.handle(1, Op::Read, 4 * K, K);
        c.handle(0, Op::Read, 40 * K, K);
        assert_eq!(c.cached_items(), 4);
        // A write deep in a run goes around the cache.
        c.handle(0, Op::Write, 41 * K, 2 * K);
        assert_eq!(
            c.actions(),
            &[
                Action::BackendWrite { key: BlockKey::new(0, 41) },
                Action::BackendWrite { key: BlockKey::new(0, 42) },
            ]
        );
        // Hits are still hits.
        assert!(c.handle(0, Op::Read, 0, 2 * K).is_hit());
    }

    #[test]
    fn forget_and_restore() {
        let mut c = cache(4, WritePolicy::WriteBack);
        assert!(c.restore(BlockKey::new(0, 7), 2, true));
        assert!(c.restore(BlockKey::new(1, 7), 3, false));
        assert!(!c.restore(BlockKey::new(0, 8), 1, false), "slots come in increasing order");
        assert!(!c.restore(BlockKey::new(0, 9), 4, false), "beyond capacity");
        assert_eq!(c.lookup(BlockKey::new(0, 7)), Some((2, true)));
        assert_eq!((c.cached_items(), c.dirty_blocks()), (2, 1));
        // The skipped slots are free for new blocks; nothing is evicted.
        c.handle(0, Op::Read, 0, 2 * K);
        assert_eq!(c.counters().evictions, 0);
        assert!(c.forget(BlockKey::new(0, 7)));
        assert_eq!(c.actions(), &[Action::Invalidate { key: BlockKey::new(0, 7), slot: 2 }]);
        assert_eq!((c.cached_items(), c.dirty_blocks()), (3, 0));
        assert!(!c.forget(BlockKey::new(0, 7)));
    }

    #[test]
    fn partial_write_miss_reads_then_writes() {
        let mut c = cache(4, WritePolicy::WriteBack);
        c.handle(0, Op::Write, 512, 1024);
        let k = BlockKey::new(0, 0);
        assert_eq!(c.actions(), &[Action::BackendRead { key: k }, Action::FlashWrite { key: k, slot: 0 }]);
        // A partial write of a cached block needs no backend read.
        c.handle(0, Op::Write, 0, 512);
        assert_eq!(c.actions(), &[Action::FlashWrite { key: k, slot: 0 }]);
        assert_eq!(c.dirty_blocks(), 1);
        assert_eq!(c.counters().backend_read_blocks, 1);
    }

    #[test]
    fn write_through_keeps_blocks_clean() {
        let mut c = cache(4, WritePolicy::WriteThrough);
        c.handle(0, Op::Write, 0, 2 * K);
        assert_eq!(c.dirty_blocks(), 0);
        let n = c.counters();
        assert_eq!((n.flash_write_blocks, n.backend_write_blocks, n.write_block_hits), (2, 2, 0));
        c.handle(0, Op::Read, 0, 2 * K);
        assert_eq!(c.counters().read_block_hits, 2);
    }

    #[test]
    fn write_invalidate_drops_cached_copy() {
        let mut c = cache(4, WritePolicy::WriteInvalidate);
        c.handle(0, Op::Read, 0, K);
        c.handle(0, Op::Write, 0, K);
        let k = BlockKey::new(0, 0);
        assert_eq!(c.actions(), &[Action::Invalidate { key: k, slot: 0 }, Action::BackendWrite { key: k }]);
        assert_eq!(c.cached_items(), 0);
        let n = c.counters();
        assert_eq!((n.write_block_hits, n.invalidations, n.flash_write_blocks), (1, 1, 1));
        // A write miss admits nothing.
        c.handle(0, Op::Write, K, K);
        assert_eq!(c.cached_items(), 0);
    }

    #[test]
    fn read_only_updates_cached_copy_and_never_admits_writes() {
        let mut c = cache(4, WritePolicy::ReadOnly);
        c.handle(0, Op::Read, 0, K);
        c.handle(0, Op::Write, 0, 2 * K);
        assert_eq!(c.cached_items(), 1);
        let n = c.counters();
        assert_eq!((n.flash_write_blocks, n.backend_write_blocks, n.write_block_hits), (2, 2, 1));
        assert_eq!(c.dirty_blocks(), 0);
    }

    #[test]
    fn watermarks_write_back_oldest_dirty_blocks() {
        let mut c = Cache::new(CacheConfig {
            capacity_bytes: 10 * K,
            dirty_high_watermark: Some(0.5),
            dirty_low_watermark: Some(0.2),
            record_actions: true,
            ..CacheConfig::default()
        })
        .unwrap();
        for b in 0..5 {
            c.handle(0, Op::Write, b * K, K);
        }
        assert_eq!(c.dirty_blocks(), 5);
        c.handle(0, Op::Write, 5 * K, K);
        // 6 > 5: clean blocks 0..4 (oldest first) down to 2 dirty.
        let written: Vec<u64> = c
            .actions()
            .iter()
            .filter_map(|a| match a {
                Action::WriteBack { key, .. } => Some(key.block),
                _ => None,
            })
            .collect();
        assert_eq!(written, vec![0, 1, 2, 3]);
        assert_eq!(c.dirty_blocks(), 2);
        assert_eq!(c.cached_items(), 6);
        assert_eq!(c.counters().cleaned_blocks, 4);
    }

    #[test]
    fn trim_drops_only_whole_blocks() {
        let mut c = cache(8, WritePolicy::WriteBack);
        c.handle(0, Op::Write, 0, 3 * K);
        c.handle(0, Op::Trim, 512, 2 * K);
        // Bytes 512..8704 wholly cover block 1 only.
        assert_eq!(c.lookup(BlockKey::new(0, 1)), None);
        assert!(c.lookup(BlockKey::new(0, 0)).is_some());
        assert!(c.lookup(BlockKey::new(0, 2)).is_some());
        assert_eq!(c.dirty_blocks(), 2);
        assert_eq!(c.actions().last(), Some(&Action::BackendTrim { volume: 0, offset: 512, len: 2 * K }));
        // A discard of the whole device scans the slots instead.
        c.handle(0, Op::Trim, 0, u64::MAX);
        assert_eq!(c.cached_items(), 0);
        assert_eq!(c.dirty_blocks(), 0);
    }

    #[test]
    fn per_volume_accounting() {
        let mut c = cache(4, WritePolicy::WriteBack);
        c.handle(0, Op::Write, 0, 2 * K);
        c.handle(3, Op::Read, 0, 3 * K);
        let v = c.volumes();
        assert_eq!(v.len(), 4);
        // Volume 3 read 3 blocks into a 4-block cache: one of volume 0's goes.
        assert_eq!((v[0].cached_items, v[0].dirty_blocks, v[0].counters.dirty_evictions), (1, 1, 1));
        assert_eq!((v[3].cached_items, v[3].counters.read_block_accesses), (3, 3));
        assert_eq!(c.counters().requests, 2);
    }

    #[test]
    fn object_mode_keeps_first_size_and_refuses_oversized_objects() {
        let mut c = Cache::new(CacheConfig {
            capacity_bytes: 10_000,
            mode: Mode::Object,
            policy: PolicyKind::Lru,
            ..CacheConfig::default()
        })
        .unwrap();
        assert!(!c.handle(0, Op::Read, 0, 4000).is_hit());
        assert!(!c.handle(0, Op::Read, 100, 4000).is_hit());
        // Same key, another length: a hit, stored size unchanged.
        assert!(c.handle(0, Op::Write, 0, 9000).is_hit());
        assert_eq!(c.used_weight(), 8000);
        // 3000 does not fit next to 8000: evict LRU (offset 100) only.
        c.handle(0, Op::Read, 200, 3000);
        assert_eq!(c.used_weight(), 7000);
        assert!(c.lookup(BlockKey::new(0, 100)).is_none());
        // Larger than the cache: a miss, not admitted, nothing evicted.
        assert!(!c.handle(0, Op::Read, 300, 20_000).is_hit());
        assert_eq!(c.used_weight(), 7000);
        let n = c.counters();
        assert_eq!((n.requests, n.request_hits, n.not_admitted, n.evictions), (5, 1, 1, 1));
    }

    #[test]
    fn object_mode_actions_name_the_object() {
        let mut c = Cache::new(CacheConfig {
            capacity_bytes: 10_000,
            mode: Mode::Object,
            record_actions: true,
            ..CacheConfig::default()
        })
        .unwrap();
        let a = BlockKey::new(0, 0);
        let b = BlockKey::new(0, 8192);
        c.handle(0, Op::Read, 0, 6000);
        assert_eq!(c.actions(), &[Action::BackendRead { key: a }, Action::FlashWrite { key: a, slot: 0 }]);
        c.handle(0, Op::Read, 8192, 6000);
        assert_eq!(
            c.actions(),
            &[
                Action::BackendRead { key: b },
                Action::Evict { key: a, slot: 0 },
                Action::FlashWrite { key: b, slot: 0 }
            ]
        );
        c.handle(0, Op::Read, 8192, 100);
        assert_eq!(c.actions(), &[Action::FlashRead { key: b, slot: 0 }]);
    }

    #[test]
    fn config_errors_name_the_setting() {
        let bad = |c: CacheConfig| Cache::new(c).err().unwrap().to_string();
        assert!(bad(CacheConfig { capacity_bytes: 0, ..Default::default() }).contains("greater than zero"));
        assert!(bad(CacheConfig { block_size: 3000, ..Default::default() }).contains("power of two"));
        assert!(
            bad(CacheConfig { capacity_bytes: 100, ..Default::default() }).contains("smaller than one block")
        );
        assert!(bad(CacheConfig {
            write_policy: WritePolicy::WriteThrough,
            dirty_high_watermark: Some(0.5),
            ..Default::default()
        })
        .contains("write-back"));
        assert!(bad(CacheConfig {
            dirty_high_watermark: Some(0.2),
            dirty_low_watermark: Some(0.5),
            ..Default::default()
        })
        .contains("above"));
        assert!(bad(CacheConfig { block_size: 128, admission: Admission::Larc, ..Default::default() })
            .contains("at least 256 B, not 128 B"));
        let past_the_index = (crate::group_table::MAX_KEYS + 1) * 4096;
        assert!(bad(CacheConfig { capacity_bytes: past_the_index, ..Default::default() })
            .contains("the most the block index holds"));
    }
}
