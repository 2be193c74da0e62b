//! Host-managed log-structured placement: whole erase units only.
//!
//! New pages collect in a DRAM write buffer of `buffer_units` erase units.
//! When it is full, its pages are sorted (by the caller's order key, or by
//! arrival) and written as whole units into free erase units, FlashStream's
//! rule (seed 000): the device never sees a partial-unit write and never
//! copies. The host cleans instead: after each flush it erases the sealed
//! units with the fewest valid pages until `buffer_units` units are free for
//! the next flush, moving their live pages back into the buffer (a
//! copy-forward), unless the caller's filter says a page will not be read
//! again (copy-forward reduction, seed 002 §6). Because the buffer is empty
//! after a flush and every victim has an invalid page, the copies of at most
//! `buffer_units` victims always fit in it.

use std::collections::VecDeque;

use crate::geometry::{FlashError, Geometry};
use crate::stats::FlashStats;
use crate::{FlashDevice, NONE};

/// Set in a location to mean "index in the write buffer".
const IN_BUFFER: u32 = 1 << 31;

/// How the write buffer is ordered when flushed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferOrder {
    /// Ascending caller-given order (e.g. the time the cache will evict the
    /// page: seed 002's "E", segregation by eviction time). Copies keep
    /// their key.
    ByKey,
    /// The order pages entered the buffer, copies included.
    Arrival,
}

#[derive(Clone, Copy, Debug)]
struct Buffered {
    order: u64,
    page: u32,
    copied: bool,
}

/// The log's state.
#[derive(Clone, Debug)]
pub struct ContainerLog {
    geometry: Geometry,
    buffer_units: u32,
    ordering: BufferOrder,
    /// Page -> `NONE`, `IN_BUFFER | index`, or physical page.
    loc: Vec<u32>,
    buffer: Vec<Buffered>,
    arrivals: u64,
    /// Physical page -> page, `NONE` when dead.
    p2l: Vec<u32>,
    /// Physical page -> its order key (kept for copies).
    p2order: Vec<u64>,
    valid: Vec<u32>,
    erase_count: Vec<u32>,
    sealed: Vec<bool>,
    free: VecDeque<u32>,
    stats: FlashStats,
}

impl ContainerLog {
    /// An empty device for pages `0..key_space` with a write buffer of
    /// `buffer_units` erase units.
    pub fn new(
        geometry: Geometry,
        buffer_units: u32,
        ordering: BufferOrder,
        key_space: u32,
    ) -> Result<Self, FlashError> {
        Self::check(&geometry, buffer_units)?;
        let units = geometry.erase_units as usize;
        Ok(ContainerLog {
            geometry,
            buffer_units,
            ordering,
            loc: vec![NONE; key_space as usize],
            buffer: Vec::with_capacity(buffer_units as usize * geometry.pages_per_unit as usize),
            arrivals: 0,
            p2l: vec![NONE; geometry.physical_pages() as usize],
            p2order: vec![0; geometry.physical_pages() as usize],
            valid: vec![0; units],
            erase_count: vec![0; units],
            sealed: vec![false; units],
            free: (0..geometry.erase_units).collect(),
            stats: FlashStats::default(),
        })
    }

    /// Whether a log of this shape and write buffer can run, without
    /// building it.
    pub fn check(geometry: &Geometry, buffer_units: u32) -> Result<(), FlashError> {
        if buffer_units == 0 {
            return Err(FlashError::Config("the write buffer must hold at least one erase unit".into()));
        }
        if geometry.physical_pages() >= u64::from(IN_BUFFER) {
            return Err(FlashError::Config("container log: more than 2^31 physical pages".into()));
        }
        // During cleaning fewer than `buffer_units` units are free, so at
        // least N - buffer_units + 1 are sealed; one of them must have an
        // invalid page.
        geometry.check_spare(buffer_units - 1, "container placement")?;
        Ok(())
    }

    fn capacity(&self) -> usize {
        self.buffer_units as usize * self.geometry.pages_per_unit as usize
    }

    /// Store a new version of `page`; `keep` is asked, for each live page
    /// the cleaner finds, whether it is worth copying forward.
    pub fn write_filtered(&mut self, page: u32, order: u64, keep: &mut dyn FnMut(u32) -> bool) {
        self.remove(page);
        if self.buffer.len() == self.capacity() {
            self.flush();
            self.clean(keep);
        }
        self.buffer_push(page, order, false);
    }

    fn buffer_push(&mut self, page: u32, order: u64, copied: bool) {
        let order = match self.ordering {
            BufferOrder::ByKey => order,
            BufferOrder::Arrival => self.arrivals,
        };
        self.arrivals += 1;
        self.loc[page as usize] = IN_BUFFER | self.buffer.len() as u32;
        self.buffer.push(Buffered { order, page, copied });
    }

    /// Forget `page` wherever it is; true if it was on flash.
    fn remove(&mut self, page: u32) -> bool {
        let at = std::mem::replace(&mut self.loc[page as usize], NONE);
        if at == NONE {
            false
        } else if at & IN_BUFFER != 0 {
            let index = (at & !IN_BUFFER) as usize;
            self.buffer.swap_remove(index);
            if let Some(moved) = self.buffer.get(index) {
                self.loc[moved.page as usize] = IN_BUFFER | index as u32;
            }
            false
        } else {
            self.p2l[at as usize] = NONE;
            self.valid[(at / self.geometry.pages_per_unit) as usize] -= 1;
            self.stats.valid_pages -= 1;
            true
        }
    }

    /// Write the whole buffer, sorted, as whole erase units.
    fn flush(&mut self) {
        self.buffer.sort_unstable_by_key(|b| (b.order, b.page));
        let per_unit = self.geometry.pages_per_unit as usize;
        for chunk in self.buffer.chunks(per_unit) {
            let unit = self.free.pop_front().expect("cleaning keeps a buffer's worth of units free");
            for (i, b) in chunk.iter().enumerate() {
                let ppn = unit * self.geometry.pages_per_unit + i as u32;
                self.p2l[ppn as usize] = b.page;
                self.p2order[ppn as usize] = b.order;
                self.loc[b.page as usize] = ppn;
                if b.copied {
                    self.stats.copy_forward_writes += 1;
                } else {
                    self.stats.host_writes += 1;
                }
            }
            self.valid[unit as usize] = chunk.len() as u32;
            self.stats.valid_pages += chunk.len() as u64;
            self.sealed[unit as usize] = true;
        }
        self.buffer.clear();
    }

    /// Erase fewest-valid units until a buffer's worth is free.
    fn clean(&mut self, keep: &mut dyn FnMut(u32) -> bool) {
        while (self.free.len() as u32) < self.buffer_units {
            let victim = (0..self.geometry.erase_units)
                .filter(|&u| self.sealed[u as usize])
                .min_by_key(|&u| self.valid[u as usize])
                .expect("a unit is sealed when fewer than a buffer's worth are free");
            let first = victim * self.geometry.pages_per_unit;
            for ppn in first..first + self.geometry.pages_per_unit {
                let page = self.p2l[ppn as usize];
                if page == NONE {
                    continue;
                }
                let order = self.p2order[ppn as usize];
                self.remove(page);
                if keep(page) {
                    self.buffer_push(page, order, true);
                } else {
                    self.stats.copy_forward_dropped += 1;
                }
            }
            debug_assert_eq!(self.valid[victim as usize], 0);
            self.sealed[victim as usize] = false;
            self.erase_count[victim as usize] += 1;
            self.stats.erasures += 1;
            self.stats.max_unit_erasures =
                self.stats.max_unit_erasures.max(u64::from(self.erase_count[victim as usize]));
            self.free.push_back(victim);
        }
    }

    /// Whether `page` is held (on flash or in the write buffer).
    pub fn is_live(&self, page: u32) -> bool {
        self.loc[page as usize] != NONE
    }

    /// Whether `page` is in the write buffer (DRAM), not yet on flash.
    pub fn is_buffered(&self, page: u32) -> bool {
        let at = self.loc[page as usize];
        at != NONE && at & IN_BUFFER != 0
    }

    /// Pages waiting in the write buffer.
    pub fn buffered_pages(&self) -> usize {
        self.buffer.len()
    }

    /// Valid pages of each unit (for invariant checks).
    pub fn valid_per_unit(&self) -> &[u32] {
        &self.valid
    }

    /// Erasures of each unit so far.
    pub fn erase_counts(&self) -> &[u32] {
        &self.erase_count
    }
}

impl FlashDevice for ContainerLog {
    fn write(&mut self, page: u32, order: u64) {
        self.write_filtered(page, order, &mut |_| true);
    }

    fn trim(&mut self, page: u32) {
        if self.remove(page) {
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
