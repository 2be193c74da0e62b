//! Where a flash cache's blocks go on the device: cache slots on a
//! page-mapped FTL, or whole containers written by the host.

use cloudcache_flash::container_log::BufferOrder;
use cloudcache_flash::{ContainerLog, FlashDevice, FlashStats, Ftl, Geometry, NONE};

use crate::OfflineError;

/// A cache's flash, seen through block ids.
#[derive(Debug)]
pub enum Placement {
    /// Cache slots on an FTL: a block takes a free slot (logical page) when
    /// inserted and gives it back when it leaves; with `trim` the slot is
    /// trimmed then, otherwise its old content stays live to the FTL until
    /// the slot is reused.
    Ftl {
        /// The device.
        ftl: Ftl,
        /// Block -> slot.
        slot_of: Vec<u32>,
        /// Free slots, reused last-freed first.
        free: Vec<u32>,
        /// Trim slots whose block left the cache.
        trim: bool,
    },
    /// Host-managed containers keyed by block id. `plan` holds, per block,
    /// the position of its last flash read hit (copy-forward reduction: a
    /// block with no hit left is not copied); `None` copies every live block.
    Log {
        /// The device.
        log: ContainerLog,
        /// Last planned flash hit per block, for copy-forward reduction.
        plan: Option<Vec<u32>>,
    },
}

impl Placement {
    /// Slots on an FTL.
    pub fn ftl(geometry: Geometry, blocks: u32, trim: bool) -> Result<Self, OfflineError> {
        Ok(Placement::Ftl {
            ftl: Ftl::new(geometry)?,
            slot_of: vec![NONE; blocks as usize],
            free: (0..geometry.logical_pages).rev().collect(),
            trim,
        })
    }

    /// Whole containers with a write buffer of `buffer_units` erase units.
    pub fn log(
        geometry: Geometry,
        blocks: u32,
        buffer_units: u32,
        order: BufferOrder,
        cfr: bool,
    ) -> Result<Self, OfflineError> {
        Ok(Placement::Log {
            log: ContainerLog::new(geometry, buffer_units, order, blocks)?,
            plan: cfr.then(|| vec![NONE; blocks as usize]),
        })
    }

    /// Store `block` (new, or a new version of a held block). `order` ranks
    /// it in a container write buffer; `last_hit` is its last planned flash
    /// hit; `now` is the current position.
    pub fn write(&mut self, block: u32, order: u64, last_hit: u32, now: u32) {
        match self {
            Placement::Ftl { ftl, slot_of, free, .. } => {
                let mut slot = slot_of[block as usize];
                if slot == NONE {
                    slot = free.pop().expect("the cache holds no more blocks than slots");
                    slot_of[block as usize] = slot;
                }
                ftl.write(slot, order);
            }
            Placement::Log { log, plan } => {
                if let Some(plan) = plan {
                    plan[block as usize] = last_hit;
                }
                let plan = plan.as_deref();
                log.write_filtered(block, order, &mut |b| plan.is_none_or(|p| p[b as usize] > now));
            }
        }
    }

    /// `block` left the cache.
    pub fn remove(&mut self, block: u32) {
        match self {
            Placement::Ftl { ftl, slot_of, free, trim } => {
                let slot = std::mem::replace(&mut slot_of[block as usize], NONE);
                if slot != NONE {
                    if *trim {
                        ftl.trim(slot);
                    }
                    free.push(slot);
                }
            }
            // The host knows its own containers: a block that left is never copied.
            Placement::Log { log, .. } => log.trim(block),
        }
    }

    /// Read `block` from flash; false when the device does not hold it.
    pub fn read(&mut self, block: u32) -> bool {
        match self {
            Placement::Ftl { ftl, slot_of, .. } => {
                let slot = slot_of[block as usize];
                slot != NONE && ftl.read(slot)
            }
            Placement::Log { log, .. } => log.read(block),
        }
    }

    /// Device counters.
    pub fn stats(&self) -> FlashStats {
        match self {
            Placement::Ftl { ftl, .. } => ftl.stats(),
            Placement::Log { log, .. } => log.stats(),
        }
    }

    /// Device shape.
    pub fn geometry(&self) -> &Geometry {
        match self {
            Placement::Ftl { ftl, .. } => ftl.geometry(),
            Placement::Log { log, .. } => log.geometry(),
        }
    }

    /// Short name for reports.
    pub fn name(&self) -> &'static str {
        match self {
            Placement::Ftl { .. } => "ftl",
            Placement::Log { .. } => "container",
        }
    }
}
