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
use crate::lanes::{key_lane, slot_lane, Dispenser, Lane, Lanes};
use crate::store::FlashStore;
use crate::volume::Volume;
use execute::collect_lanes;

mod background;
mod execute;

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
}
