//! Workload analytics for block traces: what a VM's I/O looks like to a
//! cache, measured the ways the seeds measure it. Exact LRU miss-ratio curves
//! from stack distances (Mattson's algorithm over a Fenwick tree, O(log n)
//! per block access), in block and object mode, per volume and for the whole
//! trace; SHARDS sampled curves at a fixed rate or in fixed memory, with
//! per-volume samples that combine into "these VMs share one cache" curves;
//! working sets (WSS, RWS_N) per time window and the knee-point window
//! choice (seed 001); request sizes, read/write mix, reuse distances, run
//! lengths, jump distances, block popularity, an LBA x time heat map and
//! content-sharing statistics (seed 004); and the files `cloudcache analyze`
//! writes (summary.json, CSVs, SVG plots, report.html). It never simulates a
//! cache policy: the engine does that; this crate measures the workload.

pub mod analyze;
pub mod block_stack;
pub mod characterize;
pub mod content;
pub mod curves;
pub mod fenwick;
pub mod heatmap_chart;
pub mod histogram;
pub mod mrc;
pub mod output;
pub mod shards;
pub mod stack;
pub mod working_set;
pub mod workload;

pub use mrc::{
    dense_sizes, mean_absolute_error, Counted, CurvePoint, ExactBlockMrc, ExactMrc, ExactObjectMrc,
};
pub use shards::{
    check_rate, default_rate, rate_for_blocks, ShardsFixedSize, ShardsSample, DEFAULT_MIN_SAMPLED_BLOCKS,
    DEFAULT_RATE,
};
pub use workload::{Workload, WorkloadRequest};
