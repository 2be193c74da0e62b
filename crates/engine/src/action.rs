//! What a real cache must do to carry out one request's decisions.

use crate::key::{BlockKey, Slot};
use cloudcache_trace::VolumeId;

/// One step a driver performs, in the order the engine emits them.
///
/// For a block, the order is always: read what is needed (backend or
/// flash), free a slot (write back the victim if dirty, then evict it),
/// fill the slot, and only then write the backend for write-through or
/// write-around.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Serve the block from flash.
    FlashRead {
        /// Block read.
        key: BlockKey,
        /// Where it is on flash.
        slot: Slot,
    },
    /// Serve a read from the block's data held in the staging area (memory):
    /// the block is not yet admitted to flash. If a `FlashWrite` of the same
    /// block follows, the staged data is what is written.
    StagedRead {
        /// Block read.
        key: BlockKey,
    },
    /// Keep the data that this request's `BackendRead` of the block returned
    /// in the staging area (memory); it serves later `StagedRead`s.
    Stage {
        /// Block staged.
        key: BlockKey,
    },
    /// Read the block from the backend (a miss, or the old data of a
    /// partially written block: read-modify-write).
    BackendRead {
        /// Block read.
        key: BlockKey,
    },
    /// Store the block in flash `slot` (an admission or a write hit).
    FlashWrite {
        /// Block stored.
        key: BlockKey,
        /// Where on flash.
        slot: Slot,
    },
    /// Copy the dirty block in `slot` to the backend; the block stays cached
    /// unless an `Evict` of the same slot follows.
    WriteBack {
        /// Block written back.
        key: BlockKey,
        /// Where on flash it is read from.
        slot: Slot,
    },
    /// `slot` no longer holds `key` (replacement). Any dirty data was
    /// written back by a preceding `WriteBack`.
    Evict {
        /// Block evicted.
        key: BlockKey,
        /// The slot now free.
        slot: Slot,
    },
    /// `slot` no longer holds `key` because its data was superseded or
    /// discarded (write-invalidate, trim).
    Invalidate {
        /// Block dropped.
        key: BlockKey,
        /// The slot now free.
        slot: Slot,
    },
    /// Write the client's data for this block to the backend.
    BackendWrite {
        /// Block written.
        key: BlockKey,
    },
    /// Forward a trim of the byte range to the backend.
    BackendTrim {
        /// Volume trimmed.
        volume: VolumeId,
        /// First byte.
        offset: u64,
        /// Bytes.
        len: u64,
    },
}
