//! A VM disk as the server knows it: its name, its backend and its counters.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use serde::Serialize;

use crate::backend::Backend;

/// One attached volume (one NBD export).
pub struct Volume {
    /// Export name (the VM's id).
    pub name: String,
    /// The engine's volume id (stable across restarts: the flash store's
    /// volume table maps names to ids).
    pub id: u32,
    /// Where its data lives.
    pub backend: Arc<dyn Backend>,
    /// Disk size in bytes.
    pub size: u64,
    /// Backend writes not yet covered by a backend flush.
    pub(crate) backend_unflushed: AtomicBool,
    /// Request counters.
    pub stats: VolumeStats,
}

impl Volume {
    /// A volume over `backend`.
    pub fn new(name: &str, id: u32, backend: Arc<dyn Backend>) -> Volume {
        Volume {
            name: name.to_string(),
            id,
            size: backend.size(),
            backend,
            backend_unflushed: AtomicBool::new(false),
            stats: VolumeStats::default(),
        }
    }
}

/// Counters of what clients asked of a volume.
#[derive(Default)]
pub struct VolumeStats {
    /// READ commands.
    pub reads: AtomicU64,
    /// Bytes read.
    pub read_bytes: AtomicU64,
    /// WRITE commands.
    pub writes: AtomicU64,
    /// Bytes written.
    pub write_bytes: AtomicU64,
    /// FLUSH commands (and FUA writes).
    pub flushes: AtomicU64,
    /// TRIM commands.
    pub trims: AtomicU64,
    /// WRITE_ZEROES commands.
    pub zeroes: AtomicU64,
    /// Commands that failed.
    pub errors: AtomicU64,
}

/// A copy of [`VolumeStats`] for reports.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct VolumeStatsSnapshot {
    /// READ commands.
    pub reads: u64,
    /// Bytes read.
    pub read_bytes: u64,
    /// WRITE commands.
    pub writes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// FLUSH commands (and FUA writes).
    pub flushes: u64,
    /// TRIM commands.
    pub trims: u64,
    /// WRITE_ZEROES commands.
    pub zeroes: u64,
    /// Commands that failed.
    pub errors: u64,
}

impl VolumeStats {
    /// Adds one to `counter`.
    pub fn bump(counter: &AtomicU64, by: u64) {
        counter.fetch_add(by, Ordering::Relaxed);
    }

    /// The counters now.
    pub fn snapshot(&self) -> VolumeStatsSnapshot {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        VolumeStatsSnapshot {
            reads: get(&self.reads),
            read_bytes: get(&self.read_bytes),
            writes: get(&self.writes),
            write_bytes: get(&self.write_bytes),
            flushes: get(&self.flushes),
            trims: get(&self.trims),
            zeroes: get(&self.zeroes),
            errors: get(&self.errors),
        }
    }
}
