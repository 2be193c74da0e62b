//! Device shape: page and erase-unit sizes, over-provisioning, and the
//! checks that make a configuration usable.

use serde::Serialize;

/// What a user asks for.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct FlashConfig {
    /// Bytes the cache may hold (the logical capacity the host sees).
    pub capacity_bytes: u64,
    /// Page size: the cache block size.
    pub page_bytes: u64,
    /// Erase unit (container) size; a multiple of `page_bytes`.
    pub erase_unit_bytes: u64,
    /// Spare physical space as a fraction of the physical size, in (0, 1):
    /// physical = logical / (1 - over_provisioning), rounded up to whole
    /// erase units.
    pub over_provisioning: f64,
}

impl FlashConfig {
    /// The defaults of seed 002 chapter 6: 4 KiB pages, 2 MiB erase units, 7 % OP.
    pub fn new(capacity_bytes: u64) -> Self {
        FlashConfig { capacity_bytes, page_bytes: 4096, erase_unit_bytes: 2 << 20, over_provisioning: 0.07 }
    }

    /// Check the configuration and work out the device's shape.
    pub fn geometry(&self) -> Result<Geometry, FlashError> {
        if self.page_bytes == 0 {
            return Err(FlashError::Config("the page (cache block) size is zero".into()));
        }
        if self.erase_unit_bytes == 0 || self.erase_unit_bytes % self.page_bytes != 0 {
            return Err(FlashError::Config(format!(
                "the erase unit ({} bytes) is not a positive multiple of the block size ({} bytes)",
                self.erase_unit_bytes, self.page_bytes
            )));
        }
        let op = self.over_provisioning;
        if !(op > 0.0 && op < 1.0) {
            return Err(FlashError::Config(format!(
                "over-provisioning {op} is outside (0, 1); it is the spare fraction of the physical flash, \
                 e.g. 0.07 for 7 %"
            )));
        }
        let logical_pages = self.capacity_bytes / self.page_bytes;
        if logical_pages == 0 {
            return Err(FlashError::Config(format!(
                "flash capacity {} bytes holds no {}-byte block",
                self.capacity_bytes, self.page_bytes
            )));
        }
        let pages_per_unit = self.erase_unit_bytes / self.page_bytes;
        if pages_per_unit > u64::from(u32::MAX) {
            return Err(FlashError::Config("erase unit has more than 2^32 pages".into()));
        }
        let physical_pages = (logical_pages as f64 / (1.0 - op)).ceil() as u64;
        let erase_units = physical_pages.div_ceil(pages_per_unit);
        if erase_units * pages_per_unit >= u64::from(u32::MAX) {
            return Err(FlashError::Config(format!(
                "flash of {erase_units} erase units of {pages_per_unit} pages is larger than the model's \
                 2^32-page limit"
            )));
        }
        Ok(Geometry {
            page_bytes: self.page_bytes,
            pages_per_unit: pages_per_unit as u32,
            erase_units: erase_units as u32,
            logical_pages: logical_pages as u32,
            over_provisioning: op,
        })
    }
}

/// A checked device shape.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Geometry {
    /// Bytes per page.
    pub page_bytes: u64,
    /// Pages per erase unit.
    pub pages_per_unit: u32,
    /// Physical erase units.
    pub erase_units: u32,
    /// Pages the host may hold valid at once.
    pub logical_pages: u32,
    /// The requested over-provisioning.
    pub over_provisioning: f64,
}

impl Geometry {
    /// Physical pages.
    pub fn physical_pages(&self) -> u64 {
        u64::from(self.erase_units) * u64::from(self.pages_per_unit)
    }

    /// Check there is enough spare space for a cleaner that must keep
    /// `reserve_units` erase units free: with at most `logical_pages` valid
    /// pages spread over the units not held free, some unit must have an
    /// invalid page, or cleaning could not make progress.
    pub fn check_spare(&self, reserve_units: u32, what: &str) -> Result<(), FlashError> {
        let usable = u64::from(self.erase_units.saturating_sub(reserve_units));
        if u64::from(self.logical_pages) >= usable * u64::from(self.pages_per_unit) {
            return Err(FlashError::Config(format!(
                "{what}: {} blocks on {} erase units of {} blocks leave too little spare space for garbage \
                 collection, which keeps {reserve_units} units free (over-provisioning {:.1} %); use a \
                 larger cache, a smaller erase unit or more over-provisioning",
                self.logical_pages,
                self.erase_units,
                self.pages_per_unit,
                self.over_provisioning * 100.0
            )));
        }
        Ok(())
    }
}

/// A configuration the model cannot run.
#[derive(Debug, thiserror::Error)]
pub enum FlashError {
    /// Bad sizes or fractions.
    #[error("flash configuration: {0}")]
    Config(String),
}
