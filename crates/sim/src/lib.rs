//! The trace-driven simulator: loads traces into memory once, replays them
//! through the cloudcache engine at several cache sizes and policies in
//! parallel, and collects per-cache and per-volume results for the text
//! summary, JSON and HTML reports. It counts; every decision is the
//! engine's.

pub mod allocation;
pub mod flash;
pub mod latency;
pub mod load;
pub mod occupancy;
pub mod profile;
pub mod raid;
pub mod raid_timing;
pub mod replay;
pub mod report;
pub mod study;
pub mod timed;

pub use allocation::{AllocationMethod, AllocationSpec, Enforcement, WindowPoint};
pub use flash::{FlashModel, FlashPlacement, FlashResult, FlashSpec};
pub use load::{CompactRequest, LoadedTrace, SourceInfo};
pub use replay::{replay_job, replay_one, run_sweep, Job, SimResult, SweepSpec, VolumeResult};
pub mod html;
