//! Offline (future-knowledge) bounds for flash caching, and online
//! comparison points, under one DRAM-over-flash hierarchy and one flash
//! device model (seed 002 chapter 6, "Erasing Belady's Limitations").
//!
//! A trace becomes a stream of block accesses ([`BlockTrace`]); the
//! annotation pass gives every access its block's next read. Offline
//! policies refuse to run on a stream without it. MIN (Belady with
//! read-around) bounds the read hit ratio; M+, M_N and M_T drop insertions
//! an earlier run showed to be useless (or least useful, under an erasure
//! budget) and TRIM what leaves the cache; C, C_N and C_T make the same
//! decisions but write whole containers packed by eviction time and skip
//! copy-forwards of blocks with no hit left. LRU and a RIPQ-like segmented
//! LRU run under the same model. [`pipeline::run_offline`] runs a set of
//! algorithms at several cache sizes and reports hit ratio, erasures, EPBPD,
//! write amplification, FUE and WFUE per run. The flash model itself is the
//! `cloudcache-flash` crate.

pub mod blocks;
pub mod dram;
pub mod family;
pub mod lru_list;
pub mod min_queue;
pub mod online;
pub mod pipeline;
pub mod placement;
pub mod records;

pub use blocks::{BlockAccess, BlockTrace, INF};
pub use pipeline::{run_offline, Algorithm, AlgorithmResult, CacheSize, OfflineReport, OfflineSpec};

/// Why an offline run cannot proceed.
#[derive(Debug, thiserror::Error)]
pub enum OfflineError {
    /// An offline policy was given a trace without future knowledge.
    #[error(
        "{0} needs future knowledge: run the annotation pass (BlockTrace::annotate) first; refusing to \
         return a number computed without it"
    )]
    NotAnnotated(String),
    /// A bad setting.
    #[error("{0}")]
    Config(String),
    /// The flash model refused the configuration.
    #[error(transparent)]
    Flash(#[from] cloudcache_flash::FlashError),
    /// The trace could not be read.
    #[error(transparent)]
    Trace(#[from] cloudcache_trace::TraceError),
    /// The trace is beyond the model's 32-bit positions and ids.
    #[error("trace too large for the offline model: {0}")]
    TooLarge(String),
}
