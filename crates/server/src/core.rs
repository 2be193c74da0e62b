//! The cache core: the engine's decisions carried out against the flash
//! store and the backends.
//!
//! A request is decided under the engine's mutex (no I/O there), takes its
//! lane tickets ([`crate::lanes`]), and is then carried out with no global
//! lock held, so concurrent misses reach the backend in parallel while
//! operations on any one block or slot keep the engine's order.
//!
//! What the core promises (docs/server.md, "Durability"): a write is on the
//! flash device (or the backend) before it is acknowledged; [`CacheCore::flush`]
//! makes every acknowledged write durable (backend flush, then the store's
//! ordered metadata persist); a block is recorded clean only once its
//! write-back is durable on the backend; a failed write-back keeps the data
//! (the block is dirty again, or, if it was being evicted, held in its
//! pinned flash slot and retried) and a failed flash write falls back to the
//! backend.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use cloudcache_demand::controller::{Controller, ControllerConfig, VolumeWindow};
use cloudcache_engine::{Action, BlockKey, Cache, CacheConfig, ShareMode, WritePolicy};
use cloudcache_trace::Op;

use crate::backend::Extent;
use crate::held::Held;
use crate::lanes::{all_key_lanes, key_lane, slot_lane, Dispenser, Lane, Lanes};
use crate::store::FlashStore;
use crate::volume::Volume;

/// How shares are enforced: at replacement time, and free space is lent
/// (the owner of a share takes it back when it needs it).
const SHARE_MODE: ShareMode = ShareMode { lend_free_space: true, drop_excess: false };

/// Most bytes one block status reply describes (16,384 blocks of 4 KiB).
pub const BLOCK_STATUS_LIMIT: u64 = 64 << 20;

/// Largest read a connection's reader serves itself when it is all hits.
const INLINE_READ_LIMIT: u64 = 128 << 10;

/// Range sizes (in blocks) above which a trim takes every key lane instead
/// of listing its blocks.
const TRIM_LANE_LIMIT: u64 = 1024;

/// The engine and what must change with it atomically.
struct EngineState {
    cache: Cache,
    dispenser: Dispenser,
    /// On-demand allocation, when on.
    allocation: Option<Allocation>,
}

/// The demand controller and what the last window found.
struct Allocation {
    controller: Controller,
    finished: Vec<VolumeWindow>,
    windows_closed: u64,
}

/// The state of on-demand allocation, for the admin API.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct AllocationState {
    /// Windows closed so far (the first window is the equal-share warm-up).
    pub windows_closed: u64,
    /// Shares in force, blocks, by volume id.
    pub share_blocks: Vec<u64>,
    /// The last closed window, by volume id.
    pub last_window: Vec<WindowSummary>,
}

/// One volume's last closed window.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct WindowSummary {
    /// Distinct blocks accessed.
    pub working_set_blocks: u64,
    /// Its demand (RWS_N blocks).
    pub demand_blocks: u64,
    /// The demand predicted for it (none in the warm-up).
    pub predicted_demand_blocks: Option<u64>,
    /// The share it had.
    pub share_blocks: u64,
}

/// Per-worker buffers, reused from request to request.
#[derive(Default)]
pub struct Scratch {
    actions: Vec<Action>,
    /// For each `FlashWrite`, in order: whether the block is dirty after it.
    flash_dirty: Vec<bool>,
    lanes: Vec<Lane>,
    tickets: Vec<(Lane, u32)>,
    /// The request's blocks, block-aligned: what is read, or what is written.
    blocks: Vec<u8>,
    /// One block.
    block: Vec<u8>,
    /// Byte ranges to write to the backend at the end of a write.
    backend_writes: Vec<(u64, u64)>,
    /// Blocks whose backend read failed in this request.
    failed: Vec<u64>,
    /// Actions already carried out ahead of their turn.
    done_early: Vec<bool>,
    /// Victim keys with the index of their first action, sorted.
    victims: Vec<(BlockKey, usize)>,
    /// Slots filled or freed with the index of the action, sorted.
    slot_uses: Vec<(u32, usize)>,
}

/// What a request is, for carrying out its actions.
#[derive(Clone, Copy)]
enum Request {
    Read,
    /// Byte range of the client's data (in `Scratch::blocks`).
    Write {
        offset: u64,
        len: u64,
    },
    /// Trim (or zero, when `zero` is set) a byte range.
    Discard {
        zero: bool,
    },
}

/// Settings of the core.
#[derive(Clone, Debug)]
pub struct CoreConfig {
    /// The engine's configuration (capacity from the store).
    pub cache: CacheConfig,
    /// On-demand allocation: the demand controller's settings (`None`: one
    /// shared cache without shares).
    pub allocation: Option<ControllerConfig>,
}

/// Counters of the core's own work.
#[derive(Default)]
struct CoreStats {
    flash_errors: AtomicUsize,
    backend_errors: AtomicUsize,
}

/// The engine, the store and the volumes, shared by every connection.
pub struct CacheCore {
    engine: Mutex<EngineState>,
    /// `None`: the store could not be opened; every volume passes through.
    store: Option<FlashStore>,
    lanes: Lanes,
    block_size: u64,
    volumes: RwLock<Vec<Option<Arc<Volume>>>>,
    /// Dirty blocks whose write-back failed while they were being evicted,
    /// kept in their (pinned) slots and retried by the cleaner.
    held: Held,
    /// Write-backs done but not yet covered by a backend flush:
    /// (slot, sequence number, volume id).
    pending_clean: Mutex<Vec<(u32, u64, u32)>>,
    /// A flash I/O error happened: new data no longer goes to flash.
    degraded: AtomicBool,
    flush_lock: Mutex<()>,
    stats: CoreStats,
}

/// Releases a request's lane tickets however it ends.
struct Turn<'a> {
    lanes: &'a Lanes,
    tickets: &'a [(Lane, u32)],
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.lanes.release(self.tickets);
    }
}

impl CacheCore {
    /// A core over `store` (or pass-through without one).
    pub fn new(config: CoreConfig, store: Option<FlashStore>) -> Result<CacheCore, String> {
        let mut cache_config = config.cache;
        cache_config.record_actions = true;
        cache_config.keep_dirty_order = true;
        if let Some(store) = &store {
            let layout = store.layout();
            cache_config.block_size = layout.block_size;
            cache_config.capacity_bytes = layout.slot_count * layout.block_size;
        }
        if config.allocation.is_some() {
            cache_config.partitioned = true;
        }
        let block_size = cache_config.block_size;
        let cache = Cache::new(cache_config).map_err(|e| e.0)?;
        let allocation = config.allocation.map(|controller| Allocation {
            controller: Controller::new(controller, 0, cache.capacity_weight()),
            finished: Vec::new(),
            windows_closed: 0,
        });
        Ok(CacheCore {
            engine: Mutex::new(EngineState { cache, dispenser: Dispenser::new(), allocation }),
            store,
            lanes: Lanes::new(),
            block_size,
            volumes: RwLock::new(Vec::new()),
            held: Held::default(),
            pending_clean: Mutex::new(Vec::new()),
            degraded: AtomicBool::new(false),
            flush_lock: Mutex::new(()),
            stats: CoreStats::default(),
        })
    }

    /// The flash store, if there is one.
    pub fn store(&self) -> Option<&FlashStore> {
        self.store.as_ref()
    }

    /// Cache block size.
    pub fn block_size(&self) -> u64 {
        self.block_size
    }

    /// Whether a flash error has turned caching of new data off.
    pub fn degraded(&self) -> bool {
        self.degraded.load(Ordering::Relaxed)
    }

    /// Runs `f` on the engine (under its lock).
    pub fn with_engine<T>(&self, f: impl FnOnce(&mut Cache) -> T) -> T {
        f(&mut self.engine.lock().unwrap().cache)
    }

    /// Makes `volume` known to the core (its id indexes the engine's
    /// volumes), with its write policy.
    pub fn attach(&self, volume: Arc<Volume>, policy: WritePolicy) {
        let id = volume.id as usize;
        let mut volumes = self.volumes.write().unwrap();
        if volumes.len() <= id {
            volumes.resize(id + 1, None);
        }
        volumes[id] = Some(volume);
        drop(volumes);
        let mut engine = self.engine.lock().unwrap();
        let EngineState { cache, allocation, .. } = &mut *engine;
        cache.set_write_policy(id as u32, policy);
        if let Some(allocation) = allocation {
            while allocation.controller.volumes() <= id {
                allocation.controller.add_volume();
            }
            cache.set_shares(allocation.controller.shares(), SHARE_MODE);
        }
    }

    /// Ends an allocation window: each volume's demand is measured and
    /// predicted, and the cache is divided by the predictions. No-op when
    /// allocation is off.
    pub fn close_window(&self) {
        let mut engine = self.engine.lock().unwrap();
        let EngineState { cache, allocation, .. } = &mut *engine;
        let Some(allocation) = allocation else { return };
        allocation.controller.close_window(&mut allocation.finished);
        allocation.windows_closed += 1;
        // Gradual enforcement: no data moves now; replacement takes space
        // from volumes over their new share as others need it.
        cache.set_shares(allocation.controller.shares(), SHARE_MODE);
        log::info!(
            "allocation window {} closed: shares {:?} blocks",
            allocation.windows_closed,
            allocation.controller.shares()
        );
    }

    /// On-demand allocation's state (`None` when it is off).
    pub fn allocation(&self) -> Option<AllocationState> {
        let engine = self.engine.lock().unwrap();
        let allocation = engine.allocation.as_ref()?;
        Some(AllocationState {
            windows_closed: allocation.windows_closed,
            share_blocks: allocation.controller.shares().to_vec(),
            last_window: allocation
                .finished
                .iter()
                .map(|w| WindowSummary {
                    working_set_blocks: w.demand.working_set_blocks,
                    demand_blocks: w.demand.demand_blocks,
                    predicted_demand_blocks: w.predicted_demand_blocks,
                    share_blocks: w.share_blocks,
                })
                .collect(),
        })
    }

    /// Forgets `volume` (after its dirty blocks were written back).
    pub fn detach(&self, id: u32) {
        if let Some(slot) = self.volumes.write().unwrap().get_mut(id as usize) {
            *slot = None;
        }
    }

    /// The attached volume with engine id `id`.
    pub fn volume(&self, id: u32) -> Option<Arc<Volume>> {
        self.volumes.read().unwrap().get(id as usize).cloned().flatten()
    }

    // ---- requests ---------------------------------------------------------

    /// Reads `len` bytes at `offset` of `volume`; the data is returned from
    /// the scratch buffers.
    pub fn read<'s>(
        &self,
        volume: &Volume,
        offset: u64,
        len: u64,
        s: &'s mut Scratch,
    ) -> io::Result<&'s [u8]> {
        let (first, span) = self.span(offset, len);
        s.blocks.resize(span, 0);
        let start = (offset - first * self.block_size) as usize;
        if self.store.is_none() || (self.degraded() && !self.any_cached(volume.id, offset, len)) {
            volume.backend.read_at(&mut s.blocks[start..start + len as usize], offset)?;
            return Ok(&s.blocks[start..start + len as usize]);
        }
        self.decide(volume.id, Op::Read, offset, len, s);
        let tickets = std::mem::take(&mut s.tickets);
        let result = {
            let _turn = self.turn(&tickets);
            self.execute(volume, first, Request::Read, s)
        };
        s.tickets = tickets;
        result.map(move |()| &s.blocks[start..start + len as usize])
    }

    /// Reads a range whose every block is cached and whose lanes are idle,
    /// so the caller (a connection's reader thread) can serve it at once
    /// without handing it to a worker; `None` if the range does not
    /// qualify (nothing was decided then). Hits are most requests of a warm
    /// cache, and a hand-off costs more than the hit itself.
    pub fn read_if_cached<'s>(
        &self,
        volume: &Volume,
        offset: u64,
        len: u64,
        s: &'s mut Scratch,
    ) -> Option<io::Result<&'s [u8]>> {
        if self.store.is_none() || len == 0 || len > INLINE_READ_LIMIT {
            return None;
        }
        let (first, span) = self.span(offset, len);
        let last = first + span as u64 / self.block_size - 1;
        {
            let mut engine = self.engine.lock().unwrap();
            for block in first..=last {
                let key = BlockKey::new(volume.id, block);
                let (slot, _) = engine.cache.lookup(key)?;
                let dispenser = &engine.dispenser;
                if !self.lanes.idle(key_lane(key), dispenser) || !self.lanes.idle(slot_lane(slot), dispenser)
                {
                    return None;
                }
            }
            self.decide_locked(&mut engine, volume.id, Op::Read, offset, len, s);
        }
        s.blocks.resize(span, 0);
        let start = (offset - first * self.block_size) as usize;
        let tickets = std::mem::take(&mut s.tickets);
        let result = {
            // Idle lanes: no waiting.
            let _turn = self.turn(&tickets);
            self.execute(volume, first, Request::Read, s)
        };
        s.tickets = tickets;
        Some(result.map(move |()| &s.blocks[start..start + len as usize]))
    }

    /// Writes `data` at `offset` of `volume`; with `fua`, durably.
    pub fn write(
        &self,
        volume: &Volume,
        offset: u64,
        data: &[u8],
        fua: bool,
        s: &mut Scratch,
    ) -> io::Result<()> {
        let len = data.len() as u64;
        if self.store.is_none() {
            volume.backend.write_at(data, offset)?;
            volume.backend_unflushed.store(true, Ordering::Relaxed);
            return if fua { self.flush() } else { Ok(()) };
        }
        let (first, span) = self.span(offset, len);
        s.blocks.resize(span, 0);
        let start = (offset - first * self.block_size) as usize;
        s.blocks[start..start + data.len()].copy_from_slice(data);
        self.decide(volume.id, Op::Write, offset, len, s);
        let tickets = std::mem::take(&mut s.tickets);
        let result = {
            let _turn = self.turn(&tickets);
            self.execute(volume, first, Request::Write { offset, len }, s)
        };
        s.tickets = tickets;
        result?;
        if fua {
            self.flush()?;
        }
        Ok(())
    }

    /// Discards a range: cached copies of whole blocks are dropped and the
    /// backend is told (a hint: the content becomes unspecified).
    pub fn trim(&self, volume: &Volume, offset: u64, len: u64, fua: bool, s: &mut Scratch) -> io::Result<()> {
        self.discard(volume, offset, len, false, s)?;
        if fua {
            self.flush()?;
        }
        Ok(())
    }

    /// Makes a range read as zeros: whole blocks are dropped from the cache
    /// and zeroed on the backend; partial blocks at the edges are written.
    pub fn write_zeroes(
        &self,
        volume: &Volume,
        offset: u64,
        len: u64,
        fua: bool,
        s: &mut Scratch,
    ) -> io::Result<()> {
        let bs = self.block_size;
        let end = offset + len;
        let whole_start = offset.div_ceil(bs) * bs;
        let whole_end = (end / bs * bs).max(whole_start);
        // The partial head and tail are ordinary writes of zeros.
        for (from, to) in [(offset, whole_start.min(end)), (whole_end.max(offset), end)] {
            if to > from {
                let zeros = vec![0u8; (to - from) as usize];
                self.write(volume, from, &zeros, false, s)?;
            }
        }
        if whole_end > whole_start {
            self.discard(volume, whole_start, whole_end - whole_start, true, s)?;
        }
        if fua {
            self.flush()?;
        }
        Ok(())
    }

    fn discard(&self, volume: &Volume, offset: u64, len: u64, zero: bool, s: &mut Scratch) -> io::Result<()> {
        if len == 0 {
            return Ok(());
        }
        if self.store.is_none() {
            volume.backend_unflushed.store(true, Ordering::Relaxed);
            return if zero {
                volume.backend.write_zeroes(offset, len)
            } else {
                volume.backend.trim(offset, len)
            };
        }
        let (first, _) = self.span(offset, len);
        self.decide(volume.id, Op::Trim, offset, len, s);
        let tickets = std::mem::take(&mut s.tickets);
        let result = {
            let _turn = self.turn(&tickets);
            self.execute(volume, first, Request::Discard { zero }, s)
        };
        s.tickets = tickets;
        result
    }

    /// Makes every acknowledged write durable: backends that took writes are
    /// flushed, write-backs they now cover are recorded clean, and the
    /// store's metadata is persisted. Flushes are global (they cover every
    /// connection and volume), which is what lets exports advertise
    /// multi-connection consistency.
    pub fn flush(&self) -> io::Result<()> {
        let _serial = self.flush_lock.lock().unwrap();
        let pending = std::mem::take(&mut *self.pending_clean.lock().unwrap());
        let volumes: Vec<Arc<Volume>> = self.volumes.read().unwrap().iter().flatten().cloned().collect();
        for volume in &volumes {
            let written_back = pending.iter().any(|&(_, _, v)| v == volume.id);
            if volume.backend_unflushed.swap(false, Ordering::AcqRel) || written_back {
                if let Err(e) = volume.backend.flush() {
                    volume.backend_unflushed.store(true, Ordering::Relaxed);
                    self.pending_clean.lock().unwrap().extend_from_slice(&pending);
                    self.stats.backend_errors.fetch_add(1, Ordering::Relaxed);
                    return Err(io::Error::new(
                        e.kind(),
                        format!("flushing backend of {}: {e}", volume.name),
                    ));
                }
            }
        }
        if let Some(store) = &self.store {
            for &(slot, seq, _) in &pending {
                store.mark_clean(slot, seq);
            }
            store.persist().inspect_err(|_| {
                self.stats.flash_errors.fetch_add(1, Ordering::Relaxed);
            })?;
        }
        Ok(())
    }

    /// The allocation map of a range as a client should see it: cached
    /// blocks (clean or dirty) are data whatever the backend says, so a
    /// copy that skips holes never skips data that lives only in the cache.
    ///
    /// Answers for at most [`BLOCK_STATUS_LIMIT`] bytes from `offset` (a
    /// reply may cover less than asked; the client asks again from where it
    /// ends), so one request never holds the engine long.
    pub fn block_status(&self, volume: &Volume, offset: u64, len: u64) -> io::Result<Vec<Extent>> {
        let len = len.min(BLOCK_STATUS_LIMIT);
        let backend = volume.backend.extents(offset, len)?;
        let bs = self.block_size;
        let end = offset + backend.iter().map(|e| e.len).sum::<u64>().min(len);
        // Which blocks of the range are cached (or held for retry).
        let first = offset / bs;
        let last = (end.max(offset + 1) - 1) / bs;
        let cached: Vec<bool> = {
            let engine = self.engine.lock().unwrap();
            (first..=last)
                .map(|block| {
                    let key = BlockKey::new(volume.id, block);
                    engine.cache.lookup(key).is_some() || self.held.slot_of(key).is_some()
                })
                .collect()
        };
        // Split the backend's extents at cached blocks and merge neighbours.
        let mut out: Vec<Extent> = Vec::new();
        let mut push = |len: u64, flags: u32| match out.last_mut() {
            Some(last) if last.flags == flags => last.len += len,
            _ => out.push(Extent { len, flags }),
        };
        let mut at = offset;
        for extent in backend {
            let extent_end = (at + extent.len).min(end);
            while at < extent_end {
                let block = at / bs;
                let piece_end = ((block + 1) * bs).min(extent_end);
                let flags = if cached[(block - first) as usize] { 0 } else { extent.flags };
                push(piece_end - at, flags);
                at = piece_end;
            }
        }
        Ok(out)
    }

    // ---- background work --------------------------------------------------

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

    // ---- carrying out decisions -------------------------------------------

    fn span(&self, offset: u64, len: u64) -> (u64, usize) {
        let bs = self.block_size;
        let first = offset / bs;
        let last = (offset + len.max(1) - 1) / bs;
        (first, ((last - first + 1) * bs) as usize)
    }

    fn turn<'a>(&'a self, tickets: &'a [(Lane, u32)]) -> Turn<'a> {
        self.lanes.wait(tickets);
        Turn { lanes: &self.lanes, tickets }
    }

    fn any_cached(&self, volume: u32, offset: u64, len: u64) -> bool {
        let bs = self.block_size;
        let engine = self.engine.lock().unwrap();
        (offset / bs..=(offset + len.max(1) - 1) / bs)
            .any(|b| engine.cache.lookup(BlockKey::new(volume, b)).is_some())
    }

    /// Has the engine decide a request, copies out its actions and takes
    /// its lane tickets.
    fn decide(&self, volume: u32, op: Op, offset: u64, len: u64, s: &mut Scratch) {
        let mut engine = self.engine.lock().unwrap();
        self.decide_locked(&mut engine, volume, op, offset, len, s);
    }

    fn decide_locked(
        &self,
        engine: &mut EngineState,
        volume: u32,
        op: Op,
        offset: u64,
        len: u64,
        s: &mut Scratch,
    ) {
        let EngineState { cache, dispenser, allocation } = engine;
        cache.handle(volume, op, offset, len);
        if let Some(allocation) = allocation {
            if op != Op::Trim && len > 0 && (volume as usize) < allocation.controller.volumes() {
                let first = offset / self.block_size;
                let last = (offset + len - 1) / self.block_size;
                allocation.controller.access(volume as usize, first, last - first + 1);
            }
        }
        s.actions.clear();
        s.actions.extend_from_slice(cache.actions());
        s.flash_dirty.clear();
        for action in &s.actions {
            if let Action::FlashWrite { key, .. } = action {
                s.flash_dirty.push(cache.lookup(*key).is_some_and(|(_, dirty)| dirty));
            }
        }
        collect_lanes(&s.actions, self.block_size, &mut s.lanes);
        dispenser.take(&s.lanes, &mut s.tickets);
    }

    fn execute(&self, volume: &Volume, first: u64, request: Request, s: &mut Scratch) -> io::Result<()> {
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
    fn release_persisted_victims(&self, store: &FlashStore, s: &mut Scratch) {
        let victims = s
            .actions
            .iter()
            .filter(|a| matches!(a, Action::Evict { slot, .. } if store.persisted_dirty(*slot)))
            .count();
        if victims < 2 {
            return;
        }
        s.slot_uses.clear();
        for (i, action) in s.actions.iter().enumerate() {
            if let Action::FlashWrite { slot, .. }
            | Action::Evict { slot, .. }
            | Action::Invalidate { slot, .. } = *action
            {
                s.slot_uses.push((slot, i));
            }
        }
        s.slot_uses.sort_unstable();
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
            let first_use = s.slot_uses.partition_point(|&(t, _)| t < slot);
            let touched_before = s.slot_uses.get(first_use).is_some_and(|&(t, j)| t == slot && j < i);
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
    fn read_misses_together(&self, volume: &Volume, first: u64, s: &mut Scratch) -> Option<io::Error> {
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
        s.victims.clear();
        for (i, action) in s.actions.iter().enumerate() {
            if let Action::WriteBack { key, .. }
            | Action::Evict { key, .. }
            | Action::Invalidate { key, .. } = *action
            {
                s.victims.push((key, i));
            }
        }
        s.victims.sort_unstable();
        for i in 0..s.actions.len() {
            let (Action::BackendRead { key } | Action::StagedRead { key }) = s.actions[i] else { continue };
            let at = s.victims.partition_point(|&(k, _)| k < key);
            if s.victims.get(at).is_some_and(|&(k, j)| k == key && j < i) {
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
    fn drop_held_copies(&self, store: &FlashStore, volume: u32, first: u64, s: &Scratch) {
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
    /// pinned slot ([`Held`]).
    fn write_back(&self, key: BlockKey, slot: u32, evicting: bool, buf: &mut [u8]) -> io::Result<()> {
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
    fn release_slot(&self, key: BlockKey, slot: u32, store: &FlashStore) -> io::Result<()> {
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
    fn forget(&self, key: BlockKey, slot: u32, store: &FlashStore) {
        let mut engine = self.engine.lock().unwrap();
        if engine.cache.lookup(key).is_some_and(|(at, _)| at == slot) {
            engine.cache.forget(key);
        }
        if self.held.key_in(slot).is_none() {
            store.invalidate(slot);
        }
    }

    /// Whether the store's entry for `slot` is `key`.
    fn slot_holds(&self, store: &FlashStore, slot: u32, key: BlockKey) -> bool {
        store.entry(slot).is_some_and(|e| e.volume == key.volume && e.block == key.block)
    }

    fn flash_failed(&self, error: &io::Error) {
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
    fn backend_read_block(&self, volume: &Volume, block: u64, buf: &mut [u8]) -> io::Result<()> {
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

    fn backend_write_block(&self, volume: &Volume, block: u64, data: &[u8]) -> io::Result<()> {
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
fn collect_lanes(actions: &[Action], block_size: u64, lanes: &mut Vec<Lane>) {
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
