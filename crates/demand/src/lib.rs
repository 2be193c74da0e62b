//! Cache demand: how much flash each volume should get, and when.
//!
//! CloudCache (seed 001, chapter 3) sizes each VM's share of a host's flash
//! cache by its *Reuse Working Set*: the distinct blocks it re-used in the
//! last time window. This crate measures that demand per volume over
//! tumbling windows ([`window`]), predicts the next window's demand with
//! smoothing predictors behind an outlier filter ([`predict`]), divides a
//! cache among volumes by predicted demand ([`allocate`]) and picks a window
//! length from a profiling run ([`knee`]); [`controller`] ties these into
//! the per-window loop every driver runs. It never touches block data and
//! knows nothing of the cache's internals: the simulator and the server feed
//! it block accesses and hand its shares to the engine.

pub mod allocate;
pub mod controller;
pub mod knee;
pub mod predict;
pub mod window;

pub use allocate::{allocate, equal_shares, Spare};
pub use controller::{Controller, ControllerConfig, VolumeWindow};
pub use knee::{choose_window, KneeChoice, KneeReason};
pub use predict::{Forecaster, OutlierFilter, PredictorKind};
pub use window::{DemandMeasure, DemandTracker, WindowDemand};
