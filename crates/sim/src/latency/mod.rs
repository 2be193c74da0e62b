//! The latency and server-load model: the engine decides what each request
//! does to which block, and a discrete-event model of the flash device and
//! the storage server (service times, queues, concurrency limits) turns
//! those decisions into per-request latency and server I/O over time.

pub mod des;
pub mod model;
pub mod plan;
pub mod run;

pub use model::{DeviceModel, Distribution, LatencyModel, ModelError, OpCost};
pub use run::{run_timed, LatencyStats, Restart, ServerLoad, TimedResult, TimedSpec};
