//! The cloudcache engine: a pure state machine that decides what a host-side
//! flash cache does with each block request. It splits requests into cache
//! blocks, looks them up, applies a replacement policy and a write policy,
//! keeps per-volume counters, and answers with the outcome and the ordered
//! actions a real cache must carry out (read the backend, write flash, write
//! back a dirty block, evict). It does no I/O, reads no clock and owns no
//! thread, so the simulator and the NBD server run exactly the same
//! decisions.

pub mod action;
pub mod admission;
pub mod cache;
pub mod config;
pub mod counters;
mod group_table;
pub mod key;
pub mod list;
pub mod policy;
mod slot_map;

pub use action::Action;
pub use admission::{Admission, StagingKind};
pub use cache::{Cache, Outcome, ShareMode};
pub use config::{CacheConfig, ConfigError, Mode, WritePolicy};
pub use counters::{Counters, Ratios, VolumeState};
pub use key::{BlockKey, Slot};
pub use policy::{AnyPolicy, PolicyKind, ReplacementPolicy};
