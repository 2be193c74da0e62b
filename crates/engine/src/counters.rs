//! Event counters, kept per volume; whole-cache figures are their sums.

use serde::Serialize;

/// Counts of what happened. In object mode a "block" is an object.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    /// Read and write requests (trims and zero-length requests are counted apart).
    pub requests: u64,
    /// Requests whose every block hit (object mode: the object hit).
    pub request_hits: u64,
    /// Read requests.
    pub read_requests: u64,
    /// Write requests.
    pub write_requests: u64,
    /// Trim requests.
    pub trim_requests: u64,
    /// Zero-length read or write requests (they touch no block).
    pub empty_requests: u64,
    /// Block accesses by reads and writes.
    pub block_accesses: u64,
    /// Of those, blocks found in the cache.
    pub block_hits: u64,
    /// Block accesses by reads.
    pub read_block_accesses: u64,
    /// Read block accesses that hit.
    pub read_block_hits: u64,
    /// Block accesses by writes.
    pub write_block_accesses: u64,
    /// Write block accesses whose block was cached when written.
    pub write_block_hits: u64,
    /// Bytes addressed by reads and writes.
    pub bytes_accessed: u64,
    /// Of those, bytes in blocks that hit.
    pub byte_hits: u64,
    /// Blocks read from the backend (misses and read-modify-write).
    pub backend_read_blocks: u64,
    /// Blocks written to the backend (write-through, write-around, write-back).
    pub backend_write_blocks: u64,
    /// Blocks read from flash (read hits).
    pub flash_read_blocks: u64,
    /// Blocks written to flash (admissions and write hits).
    pub flash_write_blocks: u64,
    /// Blocks evicted by replacement.
    pub evictions: u64,
    /// Evicted blocks that were dirty (each cost one backend write).
    pub dirty_evictions: u64,
    /// Dirty blocks written back by the dirty watermarks or a flush.
    pub cleaned_blocks: u64,
    /// Cached blocks dropped because a write or trim superseded them.
    pub invalidations: u64,
    /// Missed blocks not admitted to flash: refused by admission control
    /// (staging, touch count, LARC), by a volume's full share, or (object
    /// mode) objects larger than the whole cache.
    pub not_admitted: u64,
    /// Read blocks served from data held in the staging area (memory);
    /// counted among the hits.
    pub staging_hits: u64,
}

impl Counters {
    /// Add `other` into `self`.
    pub fn add(&mut self, other: &Counters) {
        macro_rules! add_fields {
            ($($f:ident),*) => { $( self.$f += other.$f; )* };
        }
        add_fields!(
            requests,
            request_hits,
            read_requests,
            write_requests,
            trim_requests,
            empty_requests,
            block_accesses,
            block_hits,
            read_block_accesses,
            read_block_hits,
            write_block_accesses,
            write_block_hits,
            bytes_accessed,
            byte_hits,
            backend_read_blocks,
            backend_write_blocks,
            flash_read_blocks,
            flash_write_blocks,
            evictions,
            dirty_evictions,
            cleaned_blocks,
            invalidations,
            not_admitted,
            staging_hits
        );
    }

    /// The derived ratios, each named for what it divides.
    pub fn ratios(&self) -> Ratios {
        let ratio = |num: u64, den: u64| (den > 0).then(|| num as f64 / den as f64);
        Ratios {
            request_hit_ratio: ratio(self.request_hits, self.requests),
            request_miss_ratio: ratio(self.requests - self.request_hits, self.requests),
            block_hit_ratio: ratio(self.block_hits, self.block_accesses),
            block_miss_ratio: ratio(self.block_accesses - self.block_hits, self.block_accesses),
            read_block_hit_ratio: ratio(self.read_block_hits, self.read_block_accesses),
            write_block_hit_ratio: ratio(self.write_block_hits, self.write_block_accesses),
            byte_hit_ratio: ratio(self.byte_hits, self.bytes_accessed),
            flash_write_ratio: ratio(self.flash_write_blocks, self.block_accesses),
            backend_read_ratio: ratio(self.backend_read_blocks, self.block_accesses),
            backend_write_ratio: ratio(self.backend_write_blocks, self.block_accesses),
        }
    }
}

/// Ratios derived from [`Counters`]; `None` where the denominator is zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Ratios {
    /// request_hits / requests.
    pub request_hit_ratio: Option<f64>,
    /// (requests - request_hits) / requests.
    pub request_miss_ratio: Option<f64>,
    /// block_hits / block_accesses.
    pub block_hit_ratio: Option<f64>,
    /// (block_accesses - block_hits) / block_accesses.
    pub block_miss_ratio: Option<f64>,
    /// read_block_hits / read_block_accesses.
    pub read_block_hit_ratio: Option<f64>,
    /// write_block_hits / write_block_accesses.
    pub write_block_hit_ratio: Option<f64>,
    /// byte_hits / bytes_accessed.
    pub byte_hit_ratio: Option<f64>,
    /// flash_write_blocks / block_accesses.
    pub flash_write_ratio: Option<f64>,
    /// backend_read_blocks / block_accesses.
    pub backend_read_ratio: Option<f64>,
    /// backend_write_blocks / block_accesses.
    pub backend_write_ratio: Option<f64>,
}

/// One volume's counters and its current footprint in the cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct VolumeState {
    /// What happened to this volume's requests and blocks.
    pub counters: Counters,
    /// Items of this volume now cached (blocks, or objects in object mode).
    pub cached_items: u64,
    /// Weight of those items: blocks, or bytes in object mode.
    pub cached_weight: u64,
    /// Of the cached blocks, those dirty.
    pub dirty_blocks: u64,
}
