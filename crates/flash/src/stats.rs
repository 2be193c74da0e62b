//! Counters a flash model keeps, and the figures derived from them.

use serde::Serialize;

/// What the device did, in pages and erase units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FlashStats {
    /// Pages programmed on behalf of the host (new data).
    pub host_writes: u64,
    /// Pages programmed to move live data out of a unit being erased.
    pub copy_forward_writes: u64,
    /// Live pages the cleaner dropped instead of copying (a copy-forward
    /// filter said they would not be read again).
    pub copy_forward_dropped: u64,
    /// Erase-unit erasures.
    pub erasures: u64,
    /// Most erasures of any one unit (wear is not levelled by greedy GC).
    pub max_unit_erasures: u64,
    /// Trims that found a live page.
    pub trims: u64,
    /// Reads that found the page.
    pub reads: u64,
    /// Pages live now.
    pub valid_pages: u64,
}

impl FlashStats {
    /// Device write amplification: pages programmed per page the host
    /// wrote; 1 when nothing was copied (and when nothing was written).
    pub fn write_amplification(&self) -> f64 {
        if self.host_writes == 0 {
            return 1.0;
        }
        (self.host_writes + self.copy_forward_writes) as f64 / self.host_writes as f64
    }

    /// Erasures per erase unit per day of trace.
    pub fn epbpd(&self, erase_units: u32, days: f64) -> Option<f64> {
        (days > 0.0 && erase_units > 0).then(|| self.erasures as f64 / (f64::from(erase_units) * days))
    }

    /// How long the device lasts at this rate.
    pub fn endurance(&self, erase_units: u32, days: f64, pe_limit: u64) -> Endurance {
        let mean = self.erasures as f64 / f64::from(erase_units.max(1));
        let per_day =
            |erasures: f64| (days > 0.0 && erasures > 0.0).then(|| pe_limit as f64 * days / erasures);
        Endurance {
            pe_limit,
            days_levelled: per_day(mean),
            days_worst_unit: per_day(self.max_unit_erasures as f64),
        }
    }
}

/// Days until the P/E limit is reached at the trace's erase rate.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Endurance {
    /// Program/erase cycles each unit survives.
    pub pe_limit: u64,
    /// If wear were spread evenly over all units (`pe_limit / EPBPD`);
    /// `None` when nothing was erased.
    pub days_levelled: Option<f64>,
    /// When the most-erased unit reaches the limit, wear as simulated.
    pub days_worst_unit: Option<f64>,
}
