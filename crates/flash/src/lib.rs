//! A model of the flash device under a cache, for trace-driven simulation.
//!
//! A cache decides *what* it keeps; this crate counts what keeping it costs
//! the flash: pages programmed, pages the garbage collector copies forward,
//! erase units erased, and from those the device write amplification, EPBPD
//! (erasures per erase unit per day) and the days until the device reaches
//! its P/E-cycle limit. Two placements share one interface ([`FlashDevice`]):
//!
//! - [`Ftl`]: a page-mapped flash translation layer. The host writes
//!   logical pages (cache slots) in any order; the FTL appends them to an
//!   open erase unit and, when free units run low, erases the unit with the
//!   fewest valid pages (greedy), copying its valid pages forward first.
//!   TRIM tells it a page is dead so it is not copied.
//! - [`ContainerLog`]: host-managed log-structured placement (FlashStream's
//!   rule, seed 000; the "container" placement of seed 002 chapter 6). Pages
//!   gather in a DRAM write buffer of whole erase units and are written as
//!   whole units only, so the device itself never copies; the host cleans
//!   the unit with the fewest valid pages and re-buffers its live pages. The
//!   buffer can be ordered by any key the caller gives (arrival order, or
//!   the time the cache will evict each page).
//!
//! The crate knows nothing about traces or policies: the simulator and the
//! offline policies drive it through `write`, `trim` and `read` with page
//! numbers, and read [`FlashStats`] back. It lives apart from both so that
//! either can use it without depending on the other.

pub mod container_log;
pub mod ftl;
pub mod geometry;
pub mod stats;

pub use container_log::{BufferOrder, ContainerLog};
pub use ftl::Ftl;
pub use geometry::{FlashConfig, FlashError, Geometry};
pub use stats::{Endurance, FlashStats};

/// Marks "no page / no unit" in the models' index arrays.
pub const NONE: u32 = u32::MAX;

/// What a cache does to its flash, whatever the placement.
pub trait FlashDevice {
    /// Store a new version of logical page `page` (a cache slot or block).
    /// `order` ranks pages for placements that group them (the container
    /// log packs its buffer in ascending `order`); the FTL ignores it.
    fn write(&mut self, page: u32, order: u64);
    /// The page's content is dead: it need not be copied forward again.
    fn trim(&mut self, page: u32);
    /// Count a read of `page`; returns whether the device holds it.
    fn read(&mut self, page: u32) -> bool;
    /// Counters so far.
    fn stats(&self) -> FlashStats;
    /// The device's shape.
    fn geometry(&self) -> &Geometry;
}
