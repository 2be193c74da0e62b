//! The flash device under a simulated cache: the engine's flash writes,
//! evictions and invalidations fed to a `cloudcache_flash` model, whatever
//! the replacement policy or allocation.
//!
//! The engine names physical pages: a cache slot is a page of the flash,
//! taken by a `FlashWrite` and freed by an `Evict` or `Invalidate`. On the
//! page-mapped FTL a slot is a logical page, and freeing it is a TRIM unless
//! TRIM is switched off (then the old content stays valid to the FTL until
//! the slot is rewritten, as on a device that is never told). In the
//! log-structured placement the host owns the containers, so a freed slot is
//! always dead to it and is never copied forward.

use std::fmt;
use std::str::FromStr;

use cloudcache_engine::{Action, CacheConfig, Counters, Mode};
use cloudcache_flash::{
    BufferOrder, ContainerLog, FlashConfig, FlashDevice, FlashError, FlashStats, Ftl, Geometry,
};
use serde::Serialize;

/// Where a cache's blocks go on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlashPlacement {
    /// Slots on a page-mapped FTL with greedy GC.
    Ftl,
    /// Whole containers written by the host in arrival order (FlashStream's rule).
    Log,
}

impl FlashPlacement {
    /// Name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            FlashPlacement::Ftl => "ftl",
            FlashPlacement::Log => "log",
        }
    }
}

impl fmt::Display for FlashPlacement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for FlashPlacement {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "ftl" => Ok(FlashPlacement::Ftl),
            "log" => Ok(FlashPlacement::Log),
            _ => Err(format!("unknown flash model {s:?}; expected ftl, log or none")),
        }
    }
}

/// The device model every replay of a sweep runs on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlashSpec {
    /// FTL or host-managed log.
    pub placement: FlashPlacement,
    /// Erase unit (container) size; a multiple of the block size.
    pub erase_unit_bytes: u64,
    /// Spare fraction of the physical flash, in (0, 1).
    pub over_provisioning: f64,
    /// Whether freed slots are trimmed (FTL only; the log always knows).
    pub trim: bool,
    /// Write buffer of the log placement, in erase units.
    pub write_buffer_units: u32,
    /// P/E cycles per erase unit, for the endurance projection.
    pub pe_limit: u64,
}

impl FlashSpec {
    /// The defaults `cloudcache offline` uses: 2 MiB erase units, 7 % OP,
    /// TRIM on, a 4-unit write buffer, 3000 P/E cycles.
    pub fn new(placement: FlashPlacement) -> Self {
        FlashSpec {
            placement,
            erase_unit_bytes: 2 << 20,
            over_provisioning: 0.07,
            trim: true,
            write_buffer_units: 4,
            pe_limit: 3000,
        }
    }
}

enum Device {
    Ftl(Ftl),
    Log(ContainerLog),
}

/// A flash device fed by one cache's actions.
pub struct FlashModel {
    spec: FlashSpec,
    device: Device,
    /// Flash read hits on slots the device did not hold (0 unless the
    /// engine and the model disagree).
    ghost_reads: u64,
}

impl FlashModel {
    /// The device shape for `config`, checked as the placement needs, without
    /// building the device (cheap: for rejecting a sweep before it starts).
    /// Object mode has no fixed-size slots, so it is refused.
    pub fn check(spec: FlashSpec, config: &CacheConfig) -> Result<Geometry, FlashError> {
        if config.mode != Mode::Block {
            return Err(FlashError::Config(
                "the flash model needs block mode: object-mode slots hold objects of any size, not pages"
                    .into(),
            ));
        }
        let geometry = FlashConfig {
            capacity_bytes: config.capacity_bytes,
            page_bytes: config.block_size,
            erase_unit_bytes: spec.erase_unit_bytes,
            over_provisioning: spec.over_provisioning,
        }
        .geometry()?;
        match spec.placement {
            FlashPlacement::Ftl => Ftl::check(&geometry)?,
            FlashPlacement::Log => ContainerLog::check(&geometry, spec.write_buffer_units)?,
        }
        Ok(geometry)
    }

    /// An empty device of `config`'s capacity and block size, as `spec` says.
    pub fn new(spec: FlashSpec, config: &CacheConfig) -> Result<Self, FlashError> {
        let geometry = Self::check(spec, config)?;
        let device = match spec.placement {
            FlashPlacement::Ftl => Device::Ftl(Ftl::new(geometry)?),
            FlashPlacement::Log => Device::Log(ContainerLog::new(
                geometry,
                spec.write_buffer_units,
                BufferOrder::Arrival,
                geometry.logical_pages,
            )?),
        };
        Ok(FlashModel { spec, device, ghost_reads: 0 })
    }

    /// Apply what the cache just did (its [`cloudcache_engine::Cache::actions`]).
    #[inline]
    pub fn apply(&mut self, actions: &[Action]) {
        for action in actions {
            match *action {
                Action::FlashWrite { slot, .. } => match &mut self.device {
                    Device::Ftl(ftl) => ftl.write(slot, 0),
                    Device::Log(log) => log.write(slot, 0),
                },
                Action::Evict { slot, .. } | Action::Invalidate { slot, .. } => match &mut self.device {
                    Device::Ftl(ftl) if self.spec.trim => ftl.trim(slot),
                    Device::Ftl(_) => {}
                    Device::Log(log) => log.trim(slot),
                },
                Action::FlashRead { slot, .. } => {
                    let held = match &mut self.device {
                        Device::Ftl(ftl) => ftl.read(slot),
                        Device::Log(log) => log.read(slot),
                    };
                    self.ghost_reads += u64::from(!held);
                }
                _ => {}
            }
        }
    }

    /// Device counters so far.
    pub fn stats(&self) -> FlashStats {
        match &self.device {
            Device::Ftl(ftl) => ftl.stats(),
            Device::Log(log) => log.stats(),
        }
    }

    /// What the device did over a trace of `days` (none without timestamps),
    /// with `counters` the cache's.
    pub fn result(&self, counters: &Counters, days: Option<f64>) -> FlashResult {
        let stats = self.stats();
        let geometry = match &self.device {
            Device::Ftl(ftl) => *ftl.geometry(),
            Device::Log(log) => *log.geometry(),
        };
        let units = geometry.erase_units;
        let days = days.filter(|&d| d > 0.0);
        let endurance = days.map(|d| stats.endurance(units, d, self.spec.pe_limit));
        let programmed = stats.host_writes + stats.copy_forward_writes;
        FlashResult {
            flash_model: self.spec.placement.name().to_owned(),
            erase_unit_bytes: self.spec.erase_unit_bytes,
            over_provisioning: self.spec.over_provisioning,
            trim: self.spec.placement == FlashPlacement::Log || self.spec.trim,
            erase_units: units,
            erasures: stats.erasures,
            epbpd: days.and_then(|d| stats.epbpd(units, d)),
            flash_programmed_blocks: stats.host_writes,
            copy_forward_blocks: stats.copy_forward_writes,
            write_amplification: stats.write_amplification(),
            fue: (programmed > 0).then(|| counters.flash_read_blocks as f64 / programmed as f64),
            max_unit_erasures: stats.max_unit_erasures,
            pe_limit: self.spec.pe_limit,
            endurance_days: endurance.and_then(|e| e.days_levelled),
            endurance_days_worst_unit: endurance.and_then(|e| e.days_worst_unit),
            flash_trims: stats.trims,
            ghost_reads: self.ghost_reads,
        }
    }
}

/// What the flash model adds to a result (`cloudcache sim --flash-model`).
/// Names follow `cloudcache offline`'s results where they mean the same.
#[derive(Clone, Debug, Serialize)]
pub struct FlashResult {
    /// "ftl" or "log".
    pub flash_model: String,
    /// Erase unit size.
    pub erase_unit_bytes: u64,
    /// Spare fraction of the physical flash.
    pub over_provisioning: f64,
    /// Whether freed slots were dead to the device (always so for "log").
    pub trim: bool,
    /// Physical erase units.
    pub erase_units: u32,
    /// Erase-unit erasures.
    pub erasures: u64,
    /// Erasures per erase unit per day of trace (null without timestamps).
    pub epbpd: Option<f64>,
    /// Blocks the device programmed as new data. With the FTL this is the
    /// cache's `flash_write_blocks`; the log programs fewer (blocks freed
    /// while in its write buffer never reach flash, and the buffer's
    /// content at the end is not written).
    pub flash_programmed_blocks: u64,
    /// Blocks programmed to move live data (FTL GC or host copy-forward).
    pub copy_forward_blocks: u64,
    /// (flash_programmed_blocks + copy_forward_blocks) / flash_programmed_blocks.
    pub write_amplification: f64,
    /// Flash read-hit blocks / (flash_programmed_blocks + copy_forward_blocks):
    /// flash read-hit bytes per byte written to flash.
    pub fue: Option<f64>,
    /// Most erasures of one unit.
    pub max_unit_erasures: u64,
    /// P/E cycles per unit assumed by the endurance projection.
    pub pe_limit: u64,
    /// Days until the P/E limit with wear levelled (pe_limit / EPBPD).
    pub endurance_days: Option<f64>,
    /// Days until the most-erased unit reaches the P/E limit.
    pub endurance_days_worst_unit: Option<f64>,
    /// Trims that found a live page.
    pub flash_trims: u64,
    /// Flash read hits on pages the device did not hold; 0 unless a model is wrong.
    pub ghost_reads: u64,
}
