//! A running server: the store, the core, the exports, the listeners, the
//! cleaner, and a graceful shutdown.

use std::collections::{BTreeMap, HashMap};
use std::io::BufReader;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

use cloudcache_demand::{ControllerConfig, DemandMeasure, PredictorKind, Spare};
use cloudcache_engine::{Admission, BlockKey, CacheConfig, StagingKind, WritePolicy};

use crate::backend::{Backend, FileBackend, NbdBackend};
use crate::config::{ServerConfig, ShutdownMode, VolumeConfig};
use crate::core::{CacheCore, CoreConfig, Scratch};
use crate::nbd::handshake::{self, Exports, HandshakeEnd};
use crate::nbd::stream::{Listener, Stream};
use crate::nbd::transmission;
use crate::store::{FlashStore, RecoveryReport, StoreError};
use crate::volume::Volume;
use crate::workers::WorkerPool;

/// How often the cleaner looks at the dirty level.
const CLEANER_TICK: Duration = Duration::from_millis(50);
/// Staging memory for RWS admission, at most (the seed's 256 MiB; a
/// quarter of the cache if that is less).
const DEFAULT_STAGING_BYTES: u64 = 256 << 20;
/// Most blocks the cleaner writes back per step.
const CLEANER_BATCH: u64 = 256;

/// An attached volume and how it caches.
#[derive(Clone)]
pub struct Export {
    /// The volume.
    pub volume: Arc<Volume>,
    /// Its write policy.
    pub write_policy: WritePolicy,
}

/// A running cloudcache server.
pub struct Server {
    core: Arc<CacheCore>,
    config: ServerConfig,
    exports: RwLock<BTreeMap<String, Export>>,
    /// The export a client gets when it names none.
    default_export: RwLock<Option<String>>,
    pool: WorkerPool,
    shutting_down: AtomicBool,
    stopped: (Mutex<bool>, Condvar),
    /// Open connections (a handle each, to close them on shutdown), by id.
    connections: Mutex<(u64, HashMap<u64, Stream>)>,
    bound: Mutex<Vec<String>>,
    recovery: Option<RecoveryReport>,
    store_error: Option<String>,
}

impl Server {
    /// Opens the flash store, restores what it holds, attaches the
    /// configured volumes and starts listening.
    pub fn start(config: ServerConfig) -> Result<Arc<Server>, String> {
        config.validate()?;
        let (store, restored, store_error) =
            match FlashStore::open_or_create(&config.flash, config.flash_size, config.block_size) {
                Ok((store, restored)) => (Some(store), Some(restored), None),
                Err(e @ StoreError::Corrupt { .. }) => {
                    // Serving from the backend is right; guessing at metadata is not.
                    log::error!("{e}; every volume passes through to its backend until it is repaired");
                    (None, None, Some(e.to_string()))
                }
                Err(e) => return Err(e.to_string()),
            };
        let cache_bytes =
            store.as_ref().map_or(config.flash_size, |s| s.layout().slot_count * s.layout().block_size);
        let mut cache = CacheConfig {
            block_size: config.block_size,
            sequential_cutoff_bytes: config.sequential_cutoff,
            ..CacheConfig::default()
        };
        let allocation = config.allocation_window_ms.map(|_| {
            // RWS staging admission as in the simulator: a block enters the
            // cache on its (N+1)-th access while its address is staged.
            cache.admission = Admission::Staging {
                reuses: config.rws_n,
                kind: StagingKind::Address,
                total_bytes: DEFAULT_STAGING_BYTES.min(cache_bytes / 4),
            };
            ControllerConfig {
                measure: DemandMeasure::Rws { n: config.rws_n },
                predictor: PredictorKind::ExpSelfTuning,
                outlier_filter: true,
                spare: Spare::Proportional,
                follow_demand: true,
            }
        });
        let core = Arc::new(CacheCore::new(CoreConfig { cache, allocation }, store)?);
        let recovery = restored.map(|restored| {
            for &(slot, entry) in &restored.entries {
                core.restore(BlockKey::new(entry.volume, entry.block), slot, entry.is_dirty());
            }
            log::info!("flash store restored: {:?}", restored.report);
            restored.report
        });
        let server = Arc::new(Server {
            pool: WorkerPool::new(config.workers),
            core,
            exports: RwLock::new(BTreeMap::new()),
            default_export: RwLock::new(None),
            shutting_down: AtomicBool::new(false),
            stopped: (Mutex::new(false), Condvar::new()),
            connections: Mutex::new((0, HashMap::new())),
            bound: Mutex::new(Vec::new()),
            recovery,
            store_error,
            config: config.clone(),
        });
        for volume in &config.volumes {
            server.attach(volume)?;
        }
        for addr in &config.listen {
            let listener = Listener::bind(addr).map_err(|e| e.to_string())?;
            server.bound.lock().unwrap().push(listener.local_addr());
            let s = server.clone();
            std::thread::Builder::new()
                .name(format!("cc-listen-{addr}"))
                .spawn(move || s.accept_loop(listener))
                .map_err(|e| e.to_string())?;
        }
        let s = server.clone();
        std::thread::Builder::new()
            .name("cc-cleaner".into())
            .spawn(move || s.cleaner())
            .map_err(|e| e.to_string())?;
        Ok(server)
    }

    /// The core (engine, store, volumes).
    pub fn core(&self) -> &Arc<CacheCore> {
        &self.core
    }

    /// The configuration it started with.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// Addresses actually listened on (a TCP port 0 resolved).
    pub fn bound_addresses(&self) -> Vec<String> {
        self.bound.lock().unwrap().clone()
    }

    /// What opening the store found (`None` if it could not be opened).
    pub fn recovery(&self) -> Option<&RecoveryReport> {
        self.recovery.as_ref()
    }

    /// Why the store could not be opened, if it could not.
    pub fn store_error(&self) -> Option<&str> {
        self.store_error.as_deref()
    }

    /// Attached volumes, by name.
    pub fn exports(&self) -> Vec<Export> {
        self.exports.read().unwrap().values().cloned().collect()
    }

    /// Attaches a volume: opens its backend and gives it an export.
    pub fn attach(&self, config: &VolumeConfig) -> Result<(), String> {
        if self.exports.read().unwrap().contains_key(&config.name) {
            return Err(format!("volume {:?} is already attached", config.name));
        }
        let backend = open_backend(&config.backend).map_err(|e| format!("volume {}: {e}", config.name))?;
        let id = match self.core.store() {
            Some(store) => {
                let (id, resized) =
                    store.register_volume(&config.name, backend.size()).map_err(|e| e.to_string())?;
                if resized {
                    log::warn!(
                        "volume {} changed size since it was cached: dropping its cached blocks",
                        config.name
                    );
                    self.drop_cached(id);
                }
                id
            }
            None => self.exports.read().unwrap().values().map(|e| e.volume.id + 1).max().unwrap_or(0),
        };
        let volume = Arc::new(Volume::new(&config.name, id, backend));
        self.core.attach(volume.clone(), config.write_policy);
        log::info!(
            "attached volume {} ({} bytes, {}) over {}",
            config.name,
            volume.size,
            config.write_policy,
            volume.backend.describe()
        );
        self.default_export.write().unwrap().get_or_insert_with(|| config.name.clone());
        self.exports
            .write()
            .unwrap()
            .insert(config.name.clone(), Export { volume, write_policy: config.write_policy });
        Ok(())
    }

    /// Writes back a volume's dirty blocks and removes its export. Open
    /// connections keep working until they close.
    pub fn detach(&self, name: &str) -> Result<(), String> {
        let export = self.export(name)?;
        self.flush_volume(name)?;
        self.exports.write().unwrap().remove(name);
        let mut default = self.default_export.write().unwrap();
        if default.as_deref() == Some(name) {
            *default = self.exports.read().unwrap().keys().next().cloned();
        }
        drop(default);
        self.core.detach(export.volume.id);
        log::info!("detached volume {name}");
        Ok(())
    }

    /// Changes a volume's write policy. Leaving write-back writes its dirty
    /// blocks back first.
    pub fn set_write_policy(&self, name: &str, policy: WritePolicy) -> Result<(), String> {
        let export = self.export(name)?;
        self.core.with_engine(|cache| cache.set_write_policy(export.volume.id, policy));
        if policy != WritePolicy::WriteBack {
            self.flush_volume(name)?;
        }
        if let Some(e) = self.exports.write().unwrap().get_mut(name) {
            e.write_policy = policy;
        }
        log::info!("volume {name} is now {policy}");
        Ok(())
    }

    /// Writes back every dirty block of a volume and makes it durable.
    pub fn flush_volume(&self, name: &str) -> Result<u64, String> {
        let export = self.export(name)?;
        let mut scratch = Scratch::default();
        let written = self.core.write_back_volume(Some(export.volume.id), &mut scratch);
        self.core.flush().map_err(|e| format!("flushing {name}: {e}"))?;
        let left = self.core.with_engine(|cache| {
            cache.volumes().get(export.volume.id as usize).map_or(0, |v| v.dirty_blocks)
        });
        // Blocks held in pinned slots after a failed eviction are dirty too.
        let left = left + self.core.held_blocks_of(export.volume.id) as u64;
        if left > 0 {
            return Err(format!(
                "volume {name}: {left} dirty blocks could not be written back (backend errors)"
            ));
        }
        Ok(written)
    }

    fn export(&self, name: &str) -> Result<Export, String> {
        self.exports.read().unwrap().get(name).cloned().ok_or_else(|| format!("no volume named {name:?}"))
    }

    fn drop_cached(&self, volume: u32) {
        let store = self.core.store();
        self.core.with_engine(|cache| {
            let blocks: Vec<(BlockKey, u32)> = (0..cache.capacity_weight() as u32)
                .filter_map(|slot| {
                    store.and_then(|s| s.entry(slot)).map(|e| (BlockKey::new(e.volume, e.block), slot))
                })
                .filter(|(key, _)| key.volume == volume)
                .collect();
            for (key, slot) in blocks {
                cache.forget(key);
                if let Some(store) = store {
                    store.invalidate(slot);
                }
            }
        });
    }

    /// Stops accepting, finishes in-flight requests, then flushes (or
    /// writes back, as configured) and closes the store cleanly.
    pub fn shutdown(&self) -> Result<(), String> {
        if self.shutting_down.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        log::info!("shutting down");
        for addr in self.bound.lock().unwrap().iter() {
            if let Some(path) = addr.strip_prefix("unix:") {
                let _ = std::fs::remove_file(path);
            }
        }
        for (_, connection) in self.connections.lock().unwrap().1.drain() {
            connection.shutdown();
        }
        self.pool.shutdown();
        let mut result = Ok(());
        if self.config.shutdown == ShutdownMode::Flush {
            let mut scratch = Scratch::default();
            self.core.write_back_volume(None, &mut scratch);
        }
        if let Err(e) = self.core.flush() {
            result = Err(format!("final flush failed: {e}"));
        }
        if let Some(store) = self.core.store() {
            if result.is_ok() {
                if let Err(e) = store.close_clean() {
                    result = Err(format!("closing the flash store: {e}"));
                }
            }
        }
        let (lock, condvar) = &self.stopped;
        *lock.lock().unwrap() = true;
        condvar.notify_all();
        result
    }

    /// Blocks until [`Server::shutdown`] has finished.
    pub fn wait(&self) {
        let (lock, condvar) = &self.stopped;
        let mut stopped = lock.lock().unwrap();
        while !*stopped {
            stopped = condvar.wait(stopped).unwrap();
        }
    }

    fn accept_loop(self: Arc<Self>, listener: Listener) {
        loop {
            let stream = match listener.accept() {
                Ok(stream) => stream,
                Err(e) => {
                    if self.shutting_down.load(Ordering::Relaxed) {
                        return;
                    }
                    log::warn!("accept failed: {e}");
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
            };
            if self.shutting_down.load(Ordering::Relaxed) {
                stream.shutdown();
                return;
            }
            let s = self.clone();
            let _ = std::thread::Builder::new().name("cc-conn".into()).spawn(move || s.connection(stream));
        }
    }

    fn connection(self: Arc<Self>, stream: Stream) {
        let id = {
            let mut connections = self.connections.lock().unwrap();
            connections.0 += 1;
            let id = connections.0;
            if let Ok(handle) = stream.try_clone() {
                connections.1.insert(id, handle);
            }
            id
        };
        self.converse(&stream);
        // However it ended, the socket closes now (the handle kept for
        // shutdown would otherwise keep it open).
        stream.shutdown();
        self.connections.lock().unwrap().1.remove(&id);
    }

    /// Negotiation, then transmission, on one connection.
    fn converse(&self, stream: &Stream) {
        let (Ok(reader), Ok(writer)) = (stream.try_clone(), stream.try_clone()) else { return };
        // A client that stalls mid-handshake does not hold a thread forever.
        let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
        let mut reader = BufReader::with_capacity(256 << 10, reader);
        let mut handshake_writer = std::io::BufWriter::new(writer);
        let negotiated = match handshake::negotiate(&mut reader, &mut handshake_writer, self) {
            Ok(n) => n,
            Err(HandshakeEnd::Closed) => return,
            Err(HandshakeEnd::Failed(e)) => {
                log::warn!("handshake failed: {e}");
                return;
            }
        };
        let _ = stream.set_read_timeout(None);
        let Ok(writer) = handshake_writer.into_inner() else { return };
        let name = negotiated.volume.name.clone();
        log::debug!("client connected to {name}");
        if let Err(e) = transmission::serve(reader, writer, negotiated, self.core.clone(), &self.pool) {
            log::warn!("connection to {name} ended: {e}");
        }
    }

    /// Background work: close allocation windows on time; above the high
    /// watermark, write back the oldest dirty blocks at the configured rate
    /// until the low watermark; retry held write-backs; persist what was
    /// cleaned.
    fn cleaner(self: Arc<Self>) {
        let capacity = self.core.with_engine(|cache| cache.capacity_weight());
        let high = (self.config.dirty_high * capacity as f64) as u64;
        let low = (self.config.dirty_low * capacity as f64) as u64;
        let block_size = self.core.block_size();
        let blocks_per_tick = match self.config.writeback_rate {
            0 => u64::MAX,
            rate => (rate / block_size * CLEANER_TICK.as_millis() as u64 / 1000).max(1),
        };
        let mut scratch = Scratch::default();
        let mut cleaning = false;
        let mut last_persist = Instant::now();
        let mut unpersisted = 0u64;
        let window = self.config.allocation_window_ms.map(Duration::from_millis);
        let mut window_start = Instant::now();
        while !self.shutting_down.load(Ordering::Relaxed) {
            std::thread::sleep(CLEANER_TICK);
            if window.is_some_and(|w| window_start.elapsed() >= w) {
                self.core.close_window();
                window_start = Instant::now();
            }
            let dirty = self.core.dirty_blocks();
            cleaning = if cleaning { dirty > low } else { dirty > high };
            let mut budget = if cleaning { blocks_per_tick } else { 0 };
            loop {
                let step = budget.min(CLEANER_BATCH);
                let written = self.core.clean_step(step, &mut scratch);
                unpersisted += written;
                budget -= step.min(budget);
                if budget == 0 || written == 0 || self.core.dirty_blocks() <= low {
                    break;
                }
            }
            if unpersisted > 0 && last_persist.elapsed() >= Duration::from_secs(1) {
                if let Err(e) = self.core.flush() {
                    log::warn!("cleaner flush failed: {e}");
                }
                unpersisted = 0;
                last_persist = Instant::now();
            }
        }
    }
}

impl Exports for Server {
    fn lookup(&self, name: &str) -> Option<Arc<Volume>> {
        let exports = self.exports.read().unwrap();
        let name =
            if name.is_empty() { self.default_export.read().unwrap().clone()? } else { name.to_string() };
        exports.get(&name).map(|e| e.volume.clone())
    }

    fn names(&self) -> Vec<String> {
        self.exports.read().unwrap().keys().cloned().collect()
    }

    fn shutting_down(&self) -> bool {
        self.shutting_down.load(Ordering::Relaxed)
    }

    fn preferred_block_size(&self) -> u32 {
        self.core.block_size() as u32
    }
}

/// Opens a backend from a path or an NBD URI.
pub fn open_backend(spec: &str) -> Result<Arc<dyn Backend>, String> {
    if spec.contains("://") {
        return NbdBackend::open(spec).map(|b| Arc::new(b) as Arc<dyn Backend>).map_err(|e| e.to_string());
    }
    FileBackend::open(Path::new(spec)).map(|b| Arc::new(b) as Arc<dyn Backend>).map_err(|e| e.to_string())
}
