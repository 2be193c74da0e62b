//! Cache-optimized RAID (seed 001 §2.9) against RAID-0 and RAID-1, over two
//! flash devices under a write-back LRU cache.
//!
//! Clean cached blocks have a copy on the server, so the cache-optimized
//! layout keeps one copy of them, striped over the devices (RAID-0); dirty
//! blocks exist nowhere else, so it mirrors them on both devices (RAID-1).
//! The seed's replacement rules are followed exactly: a read miss takes the
//! least recently used block of the whole group, a write takes the least
//! recently used block of each device. RAID-0 keeps one copy of everything
//! (twice the capacity, and dirty data on a lost device is lost); RAID-1
//! mirrors everything (half the capacity, twice the flash writes).
//!
//! The engine has one slot table and no notion of copies, so this module
//! keeps its own per-device LRU lists (the engine's intrusive `List`); a test
//! checks that its RAID-0 and RAID-1 reproduce the engine's LRU exactly.

use std::fmt::Write as _;

use cloudcache_engine::list::{Links, List};
use cloudcache_engine::{BlockKey, ConfigError, Slot};
use cloudcache_trace::Op;
use hashbrown::HashMap;
use rayon::prelude::*;
use serde::Serialize;

use crate::load::LoadedTrace;
use crate::raid_timing::{RaidLatency, RaidTimer, RaidTiming};

/// Devices in the group (the seed implemented two).
pub const DEVICES: usize = 2;
const NONE: Slot = Slot::MAX;

/// How cached blocks are laid out over the devices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RaidLayout {
    /// Every block once, striped.
    Raid0,
    /// Every block on every device.
    Raid1,
    /// Clean blocks striped, dirty blocks mirrored.
    CacheOptimized,
}

impl RaidLayout {
    /// Every layout, in report order.
    pub const ALL: [RaidLayout; 3] = [RaidLayout::Raid0, RaidLayout::Raid1, RaidLayout::CacheOptimized];

    /// Name in reports.
    pub fn name(self) -> &'static str {
        match self {
            RaidLayout::Raid0 => "raid-0",
            RaidLayout::Raid1 => "raid-1",
            RaidLayout::CacheOptimized => "cache-optimized",
        }
    }

    fn copies(self, dirty: bool) -> usize {
        match self {
            RaidLayout::Raid0 => 1,
            RaidLayout::Raid1 => DEVICES,
            RaidLayout::CacheOptimized => {
                if dirty {
                    DEVICES
                } else {
                    1
                }
            }
        }
    }
}

#[derive(Clone, Copy)]
struct Entry {
    dirty: bool,
    slots: [Slot; DEVICES],
}

impl Entry {
    fn copies(&self) -> usize {
        self.slots.iter().filter(|&&s| s != NONE).count()
    }
}

struct Device {
    links: Links,
    lru: List,
    keys: Vec<BlockKey>,
    /// Last access time of each slot, to find the group's LRU block.
    stamps: Vec<u64>,
    free: Vec<Slot>,
}

/// Counts of one replay.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RaidCounters {
    /// Block reads.
    pub read_blocks: u64,
    /// Of those, hits.
    pub read_hits: u64,
    /// Block writes.
    pub write_blocks: u64,
    /// Blocks written to flash, every copy counted.
    pub flash_write_blocks: u64,
    /// Blocks read from flash.
    pub flash_read_blocks: u64,
    /// Blocks read from the server.
    pub backend_read_blocks: u64,
    /// Blocks written to the server (dirty evictions).
    pub backend_write_blocks: u64,
    /// Blocks evicted.
    pub evictions: u64,
}

/// What one request did to the devices, in order (for the timing model).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RaidAction {
    /// A read hit served by flash device `device`.
    FlashRead {
        /// Device read.
        device: usize,
        /// Block.
        key: BlockKey,
    },
    /// A copy stored on flash device `device` (fill, client write, mirror).
    FlashWrite {
        /// Device written.
        device: usize,
        /// Block.
        key: BlockKey,
    },
    /// A block read from the server (a miss, or the old data of a partly
    /// written block).
    BackendRead {
        /// Block.
        key: BlockKey,
    },
    /// A dirty victim read from flash device `device` and written to the
    /// server before its slot is reused.
    WriteBack {
        /// Device the victim is read from.
        device: usize,
        /// Block.
        key: BlockKey,
    },
}

/// A write-back LRU cache over a group of flash devices.
pub struct RaidCache {
    layout: RaidLayout,
    block_shift: u32,
    devices: Vec<Device>,
    map: HashMap<BlockKey, Entry>,
    clock: u64,
    next_device: usize,
    /// Dirty blocks with their only copy on each device.
    unprotected_dirty: [u64; DEVICES],
    /// Largest of those over the replay.
    pub peak_unprotected_dirty: u64,
    /// What happened.
    pub counters: RaidCounters,
    /// The last request's actions, when recording.
    actions: Vec<RaidAction>,
    record: bool,
}

impl RaidCache {
    /// A cache of `layout` over two devices of `device_bytes` each.
    pub fn new(layout: RaidLayout, device_bytes: u64, block_size: u64) -> Result<Self, ConfigError> {
        if block_size == 0 || !block_size.is_power_of_two() {
            return Err(ConfigError(format!("block size {block_size} is not a power of two")));
        }
        let slots = device_bytes / block_size;
        if slots == 0 {
            return Err(ConfigError(format!(
                "flash device size {device_bytes} B is smaller than one block ({block_size} B)"
            )));
        }
        if slots >= u64::from(NONE) {
            return Err(ConfigError(format!("flash device size {device_bytes} B has too many blocks")));
        }
        let slots = slots as usize;
        let devices = (0..DEVICES)
            .map(|_| Device {
                links: Links::with_slots(slots),
                lru: List::new(),
                keys: vec![BlockKey::default(); slots],
                stamps: vec![0; slots],
                free: (0..slots as Slot).rev().collect(),
            })
            .collect();
        Ok(RaidCache {
            layout,
            block_shift: block_size.trailing_zeros(),
            devices,
            map: HashMap::with_capacity(slots * DEVICES),
            clock: 0,
            next_device: 0,
            unprotected_dirty: [0; DEVICES],
            peak_unprotected_dirty: 0,
            counters: RaidCounters::default(),
            actions: Vec::new(),
            record: false,
        })
    }

    /// Record each request's device actions (for [`RaidCache::actions`]).
    pub fn record_actions(&mut self, on: bool) {
        self.record = on;
    }

    /// What the last request did to the devices (empty unless recording).
    pub fn actions(&self) -> &[RaidAction] {
        &self.actions
    }

    fn note(&mut self, action: RaidAction) {
        if self.record {
            self.actions.push(action);
        }
    }

    /// Distinct blocks cached.
    pub fn cached_blocks(&self) -> u64 {
        self.map.len() as u64
    }

    /// Dirty blocks cached.
    pub fn dirty_blocks(&self) -> u64 {
        self.map.values().filter(|e| e.dirty).count() as u64
    }

    /// What losing device `d` now would lose: (clean blocks to refetch,
    /// dirty blocks whose data is gone).
    pub fn loss_of_device(&self, d: usize) -> (u64, u64) {
        let mut clean = 0;
        let mut dirty = 0;
        for e in self.map.values() {
            if e.slots[d] != NONE && e.copies() == 1 {
                if e.dirty {
                    dirty += 1;
                } else {
                    clean += 1;
                }
            }
        }
        (clean, dirty)
    }

    /// Handle one request.
    pub fn handle(&mut self, volume: u32, op: Op, offset: u64, len: u64) {
        self.actions.clear();
        let end = offset.saturating_add(len);
        if len == 0 || end == offset {
            return;
        }
        let block_size = 1u64 << self.block_shift;
        let first = offset >> self.block_shift;
        let last = (end - 1) >> self.block_shift;
        if op == Op::Trim {
            // Whole blocks only, as the engine does.
            let first_whole = if offset % block_size == 0 { first } else { first + 1 };
            let last_whole = if end % block_size == 0 { Some(last) } else { last.checked_sub(1) };
            if let Some(last_whole) = last_whole {
                for block in first_whole..=last_whole {
                    self.drop_block(BlockKey { volume, block }, false);
                }
            }
            return;
        }
        for block in first..=last {
            let key = BlockKey { volume, block };
            self.clock += 1;
            if op == Op::Read {
                self.read_block(key);
            } else {
                let start = block << self.block_shift;
                let covered = end.min(start + block_size) - offset.max(start);
                self.write_block(key, covered == block_size);
            }
        }
    }

    fn read_block(&mut self, key: BlockKey) {
        self.counters.read_blocks += 1;
        if let Some(entry) = self.map.get(&key) {
            // A mirrored block is read from the device its block number
            // picks, so reads of a sequential run alternate (RAID-1 read
            // balancing); a single copy is read where it is.
            let preferred = key.block as usize % DEVICES;
            let device = if entry.slots[preferred] != NONE {
                preferred
            } else {
                entry.slots.iter().position(|&s| s != NONE).expect("a cached block has a copy")
            };
            self.counters.read_hits += 1;
            self.counters.flash_read_blocks += 1;
            self.note(RaidAction::FlashRead { device, key });
            self.touch(key);
            return;
        }
        self.counters.backend_read_blocks += 1;
        self.note(RaidAction::BackendRead { key });
        self.insert(key, false);
    }

    fn write_block(&mut self, key: BlockKey, whole: bool) {
        self.counters.write_blocks += 1;
        let wanted = self.layout.copies(true);
        match self.map.get(&key).copied() {
            Some(entry) => {
                // A clean block turning dirty gains its mirror copy.
                for d in 0..DEVICES {
                    let have = self.map[&key].copies();
                    if have >= wanted {
                        break;
                    }
                    if entry.slots[d] == NONE {
                        let slot = self.alloc_on(d);
                        self.map.get_mut(&key).expect("still cached").slots[d] = slot;
                        self.place(d, slot, key);
                    }
                }
                self.set_dirty(key);
                self.counters.flash_write_blocks += wanted as u64;
                if self.record {
                    let slots = self.map[&key].slots;
                    for (device, &slot) in slots.iter().enumerate() {
                        if slot != NONE {
                            self.actions.push(RaidAction::FlashWrite { device, key });
                        }
                    }
                }
                self.touch(key);
            }
            None => {
                if !whole {
                    self.counters.backend_read_blocks += 1;
                    self.note(RaidAction::BackendRead { key });
                }
                self.insert(key, true);
            }
        }
    }

    /// Cache a block that is not cached, with the copies its state needs.
    fn insert(&mut self, key: BlockKey, dirty: bool) {
        let copies = self.layout.copies(dirty);
        let mut slots = [NONE; DEVICES];
        if copies == 1 {
            let (d, slot) = self.alloc_any();
            slots[d] = slot;
        } else {
            for (d, s) in slots.iter_mut().enumerate() {
                *s = self.alloc_on(d);
            }
        }
        self.map.insert(key, Entry { dirty: false, slots });
        for (d, &slot) in slots.iter().enumerate() {
            if slot != NONE {
                self.place(d, slot, key);
                self.note(RaidAction::FlashWrite { device: d, key });
            }
        }
        if dirty {
            self.set_dirty(key);
        }
        self.counters.flash_write_blocks += copies as u64;
    }

    fn set_dirty(&mut self, key: BlockKey) {
        let entry = self.map.get_mut(&key).expect("cached");
        if entry.dirty {
            return;
        }
        entry.dirty = true;
        if entry.copies() == 1 {
            let d = entry.slots.iter().position(|&s| s != NONE).expect("one copy");
            self.unprotected_dirty[d] += 1;
            self.peak_unprotected_dirty = self.peak_unprotected_dirty.max(self.unprotected_dirty[d]);
        }
    }

    fn place(&mut self, d: usize, slot: Slot, key: BlockKey) {
        let dev = &mut self.devices[d];
        dev.keys[slot as usize] = key;
        dev.stamps[slot as usize] = self.clock;
        dev.links.push_front(&mut dev.lru, slot);
    }

    fn touch(&mut self, key: BlockKey) {
        let entry = self.map[&key];
        for (d, &slot) in entry.slots.iter().enumerate() {
            if slot != NONE {
                let dev = &mut self.devices[d];
                dev.links.move_to_front(&mut dev.lru, slot);
                dev.stamps[slot as usize] = self.clock;
            }
        }
    }

    /// A slot on any device: a free one (devices in turn), else the one of
    /// the group's least recently used block.
    fn alloc_any(&mut self) -> (usize, Slot) {
        for i in 0..DEVICES {
            let d = (self.next_device + i) % DEVICES;
            if let Some(slot) = self.devices[d].free.pop() {
                self.next_device = (d + 1) % DEVICES;
                return (d, slot);
            }
        }
        let oldest = (0..DEVICES)
            .min_by_key(|&d| {
                let dev = &self.devices[d];
                dev.lru.back().map_or(u64::MAX, |s| dev.stamps[s as usize])
            })
            .expect("devices exist");
        (oldest, self.alloc_on(oldest))
    }

    /// A slot on device `d`: a free one, else its least recently used block's.
    fn alloc_on(&mut self, d: usize) -> Slot {
        if let Some(slot) = self.devices[d].free.pop() {
            return slot;
        }
        let victim = self.devices[d].lru.back().expect("a full device has blocks");
        let key = self.devices[d].keys[victim as usize];
        self.counters.evictions += 1;
        self.drop_block(key, true);
        self.devices[d].free.pop().expect("the eviction freed a slot")
    }

    /// Remove a block from every device; `write_back` says whether dirty
    /// data goes to the server (eviction) or is discarded (trim).
    fn drop_block(&mut self, key: BlockKey, write_back: bool) {
        let Some(entry) = self.map.remove(&key) else { return };
        if entry.dirty {
            if write_back {
                self.counters.backend_write_blocks += 1;
                let device = entry.slots.iter().position(|&s| s != NONE).expect("a cached block has a copy");
                self.note(RaidAction::WriteBack { device, key });
            }
            if entry.copies() == 1 {
                let d = entry.slots.iter().position(|&s| s != NONE).expect("one copy");
                self.unprotected_dirty[d] -= 1;
            }
        }
        for (d, &slot) in entry.slots.iter().enumerate() {
            if slot != NONE {
                let dev = &mut self.devices[d];
                dev.links.unlink(&mut dev.lru, slot);
                dev.free.push(slot);
            }
        }
    }
}

/// One layout's outcome.
#[derive(Clone, Debug, Serialize)]
pub struct RaidResult {
    /// Layout.
    pub layout: RaidLayout,
    /// Size of each device.
    pub device_bytes: u64,
    /// Least and most data the group can cache (bytes).
    pub capacity_min_bytes: u64,
    /// Most data the group can cache.
    pub capacity_max_bytes: u64,
    /// Distinct blocks cached, averaged over the requests.
    pub mean_cached_blocks: f64,
    /// Counters.
    #[serde(flatten)]
    pub counters: RaidCounters,
    /// Read hit ratio.
    pub read_hit_ratio: Option<f64>,
    /// Distinct blocks cached at the end.
    pub cached_blocks_at_end: u64,
    /// Dirty blocks at the end.
    pub dirty_blocks_at_end: u64,
    /// Losing device 0 at the end: clean blocks to refetch.
    pub loss_clean_blocks: u64,
    /// Losing device 0 at the end: dirty blocks whose data is lost.
    pub loss_dirty_blocks: u64,
    /// Most dirty blocks that losing one device would have lost, at any time.
    pub peak_loss_dirty_blocks: u64,
    /// Latency and device load (timed replays only).
    pub latency: Option<RaidLatency>,
}

/// The RAID study's document.
#[derive(Clone, Debug, Serialize)]
pub struct RaidStudy {
    /// Cache block size.
    pub block_size: u64,
    /// One result per layout.
    pub results: Vec<RaidResult>,
}

/// Replay `trace` through each layout over two devices of `device_bytes`,
/// timed by `timing` when given (the trace then needs timestamps).
pub fn raid_study(
    trace: &LoadedTrace,
    device_bytes: u64,
    block_size: u64,
    layouts: &[RaidLayout],
    timing: Option<&RaidTiming>,
) -> Result<RaidStudy, ConfigError> {
    // Refuse a bad size or an untimeable trace before any replay starts.
    RaidCache::new(RaidLayout::Raid0, device_bytes, block_size)?;
    if let Some(timing) = timing {
        RaidTimer::new(trace, timing, block_size).map_err(|e| ConfigError(e.0))?;
    }
    let results = layouts.par_iter().map(|&layout| {
        let mut cache = RaidCache::new(layout, device_bytes, block_size).expect("size checked above");
        let mut timer = timing.map(|t| RaidTimer::new(trace, t, block_size).expect("timing checked above"));
        cache.record_actions(timer.is_some());
        let mut cached_sum = 0u128;
        for r in &trace.requests {
            cache.handle(r.volume, r.op, r.offset, r.len);
            if let Some(timer) = timer.as_mut() {
                timer.request(r, cache.actions());
            }
            cached_sum += u128::from(cache.cached_blocks());
        }
        let (loss_clean_blocks, loss_dirty_blocks) = cache.loss_of_device(0);
        let device_blocks = device_bytes / block_size * block_size;
        let (capacity_min_bytes, capacity_max_bytes) = match layout {
            RaidLayout::Raid0 => (2 * device_blocks, 2 * device_blocks),
            RaidLayout::Raid1 => (device_blocks, device_blocks),
            RaidLayout::CacheOptimized => (device_blocks, 2 * device_blocks),
        };
        let c = cache.counters;
        RaidResult {
            layout,
            device_bytes: device_blocks,
            capacity_min_bytes,
            capacity_max_bytes,
            mean_cached_blocks: cached_sum as f64 / trace.requests.len().max(1) as f64,
            counters: c,
            read_hit_ratio: (c.read_blocks > 0).then(|| c.read_hits as f64 / c.read_blocks as f64),
            cached_blocks_at_end: cache.cached_blocks(),
            dirty_blocks_at_end: cache.dirty_blocks(),
            loss_clean_blocks,
            loss_dirty_blocks,
            peak_loss_dirty_blocks: cache.peak_unprotected_dirty,
            latency: timer.map(RaidTimer::finish),
        }
    });
    Ok(RaidStudy { block_size, results: results.collect() })
}

impl RaidStudy {
    /// A table: capacity, hit ratio, flash and server blocks, device-loss exposure.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        writeln!(
            out,
            "{:<16} {:>14} {:>12} {:>6} {:>12} {:>11} {:>11} {:>12} {:>12} {:>12}",
            "layout",
            "capacity MiB",
            "mean cached",
            "rhit%",
            "flash writes",
            "srv reads",
            "srv writes",
            "loss: clean",
            "loss: dirty",
            "peak dirty"
        )
        .unwrap();
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        for r in &self.results {
            let capacity = if r.capacity_min_bytes == r.capacity_max_bytes {
                format!("{:.0}", mib(r.capacity_max_bytes))
            } else {
                format!("{:.0}-{:.0}", mib(r.capacity_min_bytes), mib(r.capacity_max_bytes))
            };
            writeln!(
                out,
                "{:<16} {:>14} {:>12.0} {:>6} {:>12} {:>11} {:>11} {:>12} {:>12} {:>12}",
                r.layout.name(),
                capacity,
                r.mean_cached_blocks,
                r.read_hit_ratio.map_or("-".into(), |h| format!("{:.1}", h * 100.0)),
                r.counters.flash_write_blocks,
                r.counters.backend_read_blocks,
                r.counters.backend_write_blocks,
                r.loss_clean_blocks,
                r.loss_dirty_blocks,
                r.peak_loss_dirty_blocks
            )
            .unwrap();
        }
        if let Some(speedup) = self.results.iter().find_map(|r| r.latency.as_ref().map(|l| l.speedup)) {
            writeln!(
                out,
                "\nlatency in ms at {speedup}x; utilization in % (two flash devices, one server)\n"
            )
            .unwrap();
            writeln!(
                out,
                "{:<16} {:>9} {:>8} {:>8} {:>8} {:>9} {:>9} {:>10} {:>10} {:>7} {:>7} {:>7}",
                "layout",
                "mean",
                "p50",
                "p90",
                "p99",
                "read p90",
                "write p90",
                "flash0 ops",
                "flash1 ops",
                "flash0%",
                "flash1%",
                "server%"
            )
            .unwrap();
            for r in &self.results {
                let Some(l) = &r.latency else { continue };
                let ms = |us: f64| us / 1000.0;
                writeln!(
                    out,
                    "{:<16} {:>9.3} {:>8.3} {:>8.3} {:>8.1} {:>9.3} {:>9.3} {:>10} {:>10} {:>7.2} {:>7.2} {:>7.2}",
                    r.layout.name(),
                    ms(l.latency.mean_us),
                    ms(l.latency.p50_us),
                    ms(l.latency.p90_us),
                    ms(l.latency.p99_us),
                    ms(l.read_latency.p90_us),
                    ms(l.write_latency.p90_us),
                    l.flash_ops[0],
                    l.flash_ops[1],
                    l.flash_utilization[0] * 100.0,
                    l.flash_utilization[1] * 100.0,
                    l.server_utilization * 100.0
                )
                .unwrap();
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cloudcache_engine::{Cache, CacheConfig};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn workload() -> Vec<(Op, u64, u64)> {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        (0..20_000)
            .map(|_| {
                let op = match rng.gen_range(0..10) {
                    0..=5 => Op::Read,
                    6..=8 => Op::Write,
                    _ => Op::Trim,
                };
                // Skewed offsets, unaligned lengths: hits, misses, partial writes.
                let block = (rng.gen::<f64>().powi(3) * 2000.0) as u64;
                (op, block * 4096 + rng.gen_range(0..2) * 512, rng.gen_range(1..4) * 3000)
            })
            .collect()
    }

    fn engine(blocks: u64, ops: &[(Op, u64, u64)]) -> cloudcache_engine::Counters {
        let mut c =
            Cache::new(CacheConfig { capacity_bytes: blocks * 4096, ..CacheConfig::default() }).unwrap();
        for &(op, offset, len) in ops {
            c.handle(0, op, offset, len);
        }
        c.counters()
    }

    fn raid(layout: RaidLayout, device_blocks: u64, ops: &[(Op, u64, u64)]) -> RaidCache {
        let mut c = RaidCache::new(layout, device_blocks * 4096, 4096).unwrap();
        for &(op, offset, len) in ops {
            c.handle(0, op, offset, len);
        }
        c
    }

    #[test]
    fn raid0_is_the_engine_lru_at_twice_the_device_size() {
        let ops = workload();
        let e = engine(400, &ops);
        let r = raid(RaidLayout::Raid0, 200, &ops);
        assert_eq!(r.counters.read_hits, e.read_block_hits);
        assert_eq!(r.counters.backend_read_blocks, e.backend_read_blocks);
        assert_eq!(r.counters.backend_write_blocks, e.backend_write_blocks);
        assert_eq!(r.counters.flash_write_blocks, e.flash_write_blocks);
        assert!(r.peak_unprotected_dirty > 0);
    }

    #[test]
    fn raid1_is_the_engine_lru_at_the_device_size_with_every_write_twice() {
        let ops = workload();
        let e = engine(200, &ops);
        let r = raid(RaidLayout::Raid1, 200, &ops);
        assert_eq!(r.counters.read_hits, e.read_block_hits);
        assert_eq!(r.counters.backend_write_blocks, e.backend_write_blocks);
        assert_eq!(r.counters.flash_write_blocks, 2 * e.flash_write_blocks);
        assert_eq!(r.peak_unprotected_dirty, 0);
        assert_eq!(r.loss_of_device(0).1, 0);
    }

    #[test]
    fn cache_optimized_sits_between_and_never_exposes_dirty_data() {
        let ops = workload();
        let r0 = raid(RaidLayout::Raid0, 200, &ops);
        let r1 = raid(RaidLayout::Raid1, 200, &ops);
        let co = raid(RaidLayout::CacheOptimized, 200, &ops);
        assert_eq!(co.peak_unprotected_dirty, 0);
        assert_eq!(co.loss_of_device(0).1, 0);
        assert!(co.counters.read_hits > r1.counters.read_hits, "more capacity than mirroring");
        assert!(co.counters.read_hits <= r0.counters.read_hits);
        assert!(co.counters.flash_write_blocks < r1.counters.flash_write_blocks);
        // Every dirty block is on both devices, every clean one on one.
        for e in co.map.values() {
            assert_eq!(e.copies(), if e.dirty { 2 } else { 1 });
        }
        let cached: usize = co.devices.iter().map(|d| d.lru.len()).sum();
        assert_eq!(cached as u64, co.cached_blocks() + co.dirty_blocks());
    }

    #[test]
    fn a_read_only_workload_makes_cache_optimized_equal_raid0() {
        let ops: Vec<_> = workload().into_iter().map(|(_, o, l)| (Op::Read, o, l)).collect();
        let r0 = raid(RaidLayout::Raid0, 100, &ops);
        let co = raid(RaidLayout::CacheOptimized, 100, &ops);
        assert_eq!(co.counters, r0.counters);
    }

    #[test]
    fn bad_device_sizes_are_refused() {
        assert!(RaidCache::new(RaidLayout::Raid0, 100, 4096)
            .err()
            .unwrap()
            .0
            .contains("smaller than one block"));
        assert!(RaidCache::new(RaidLayout::Raid0, 1 << 20, 3000).err().unwrap().0.contains("power of two"));
    }
}
