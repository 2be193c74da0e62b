//! A page-mapped FTL with a greedy (fewest-valid-pages) garbage collector.
//!
//! Host and GC writes share one write frontier (the open erase unit). When
//! taking a new frontier leaves fewer than two free units, the collector
//! erases sealed units with the fewest valid pages, copying their valid
//! pages to the frontier, until two are free again: one to open next and
//! one for the copies of the unit being cleaned. [`Geometry::check_spare`]
//! guarantees some sealed unit has an invalid page, so cleaning always
//! gains space.

use std::collections::VecDeque;

use crate::geometry::{FlashError, Geometry};
use crate::stats::FlashStats;
use crate::{FlashDevice, NONE};

/// Free units the collector keeps: the next frontier plus room for copies.
const GC_RESERVE: u32 = 2;

/// The FTL's state.
#[derive(Clone, Debug)]
pub struct Ftl {
    geometry: Geometry,
    /// Logical page -> physical page.
    l2p: Vec<u32>,
    /// Physical page -> logical page, `NONE` when invalid or unwritten.
    p2l: Vec<u32>,
    /// Valid pages per unit.
    valid: Vec<u32>,
    /// Erasures per unit.
    erase_count: Vec<u32>,
    /// Whether a unit is sealed (full and not the frontier).
    sealed: Vec<bool>,
    /// Erased units, oldest erasure first (handing them out in FIFO order
    /// spreads wear a little without a wear-levelling policy).
    free: VecDeque<u32>,
    frontier: u32,
    /// Next page to program in the frontier.
    cursor: u32,
    stats: FlashStats,
}

impl Ftl {
    /// An empty (all-erased) device.
    pub fn new(geometry: Geometry) -> Result<Self, FlashError> {
        Self::check(&geometry)?;
        let units = geometry.erase_units;
        let mut free: VecDeque<u32> = (0..units).collect();
        let frontier = free.pop_front().expect("at least three units");
        Ok(Ftl {
            geometry,
            l2p: vec![NONE; geometry.logical_pages as usize],
            p2l: vec![NONE; geometry.physical_pages() as usize],
            valid: vec![0; units as usize],
            erase_count: vec![0; units as usize],
            sealed: vec![false; units as usize],
            free,
            frontier,
            cursor: 0,
            stats: FlashStats::default(),
        })
    }

    /// Whether an FTL of this shape can run (enough spare space for the
    /// collector), without building it.
    pub fn check(geometry: &Geometry) -> Result<(), FlashError> {
        geometry.check_spare(GC_RESERVE, "page-mapped FTL")
    }

    /// Physical unit holding physical page `ppn`.
    fn unit_of(&self, ppn: u32) -> u32 {
        ppn / self.geometry.pages_per_unit
    }

    fn invalidate(&mut self, page: u32) -> bool {
        let ppn = std::mem::replace(&mut self.l2p[page as usize], NONE);
        if ppn == NONE {
            return false;
        }
        self.p2l[ppn as usize] = NONE;
        let unit = self.unit_of(ppn);
        self.valid[unit as usize] -= 1;
        self.stats.valid_pages -= 1;
        true
    }

    /// Program `page` at the frontier, opening a new unit when it is full.
    fn program(&mut self, page: u32) {
        if self.cursor == self.geometry.pages_per_unit {
            self.sealed[self.frontier as usize] = true;
            self.frontier = self.free.pop_front().expect("the collector keeps a free unit");
            self.cursor = 0;
        }
        let ppn = self.frontier * self.geometry.pages_per_unit + self.cursor;
        self.cursor += 1;
        self.l2p[page as usize] = ppn;
        self.p2l[ppn as usize] = page;
        self.valid[self.frontier as usize] += 1;
        self.stats.valid_pages += 1;
    }

    fn collect(&mut self) {
        while (self.free.len() as u32) < GC_RESERVE {
            let victim = match (0..self.geometry.erase_units)
                .filter(|&u| self.sealed[u as usize])
                .min_by_key(|&u| self.valid[u as usize])
            {
                Some(victim) => victim,
                None => return,
            };
            let first = victim * self.geometry.pages_per_unit;
            for ppn in first..first + self.geometry.pages_per_unit {
                let page = self.p2l[ppn as usize];
                if page != NONE {
                    self.invalidate(page);
                    self.program(page);
                    self.stats.copy_forward_writes += 1;
                }
            }
            self.erase(victim);
        }
    }

    fn erase(&mut self, unit: u32) {
        debug_assert_eq!(self.valid[unit as usize], 0);
        self.sealed[unit as usize] = false;
        self.erase_count[unit as usize] += 1;
        self.stats.erasures += 1;
        self.stats.max_unit_erasures =
            self.stats.max_unit_erasures.max(u64::from(self.erase_count[unit as usize]));
        self.free.push_back(unit);
    }

    /// Erasures of each unit so far.
    pub fn erase_counts(&self) -> &[u32] {
        &self.erase_count
    }

    /// Valid pages of each unit (for invariant checks).
    pub fn valid_per_unit(&self) -> &[u32] {
        &self.valid
    }

    /// Whether logical page `page` is mapped (live).
    pub fn is_live(&self, page: u32) -> bool {
        self.l2p[page as usize] != NONE
    }
}

impl FlashDevice for Ftl {
    fn write(&mut self, page: u32, _order: u64) {
        assert!(page < self.geometry.logical_pages, "page {page} beyond the logical capacity");
        self.invalidate(page);
        let opens_unit = self.cursor == self.geometry.pages_per_unit;
        self.program(page);
        self.stats.host_writes += 1;
        if opens_unit {
            self.collect();
        }
    }

    fn trim(&mut self, page: u32) {
        if self.invalidate(page) {
            self.stats.trims += 1;
        }
    }

    fn read(&mut self, page: u32) -> bool {
        let live = self.is_live(page);
        self.stats.reads += u64::from(live);
        live
    }

    fn stats(&self) -> FlashStats {
        self.stats
    }

    fn geometry(&self) -> &Geometry {
        &self.geometry
    }
}
