//! HEC's admission (Yang et al., SYSTOR'13, as seed 001 section 3.5
//! re-implements it): *touch count* admits a block only if its region
//! (4 MiB by default) was touched before, at any time in the volume's
//! history; *selective sequential rejection* refuses blocks of a sequential
//! run longer than a cutoff (4 MiB by default). The seed does not say how
//! runs are followed; here a request continues the run when it starts
//! where the volume's previous request ended.

use hashbrown::HashSet;
use rustc_hash::FxBuildHasher;

/// One volume's HEC state.
#[derive(Clone, Debug, Default)]
pub struct HecState {
    touched_regions: HashSet<u64, FxBuildHasher>,
    next_sequential_block: u64,
    run_blocks: u64,
}

impl HecState {
    /// A request for `blocks` blocks starting at `first` arrived.
    pub fn observe_request(&mut self, first: u64, blocks: u64) {
        if first == self.next_sequential_block && self.run_blocks > 0 {
            self.run_blocks += blocks;
        } else {
            self.run_blocks = blocks;
        }
        self.next_sequential_block = first.saturating_add(blocks);
    }

    /// Whether to admit uncached `block` (regions are `2^region_shift`
    /// blocks; runs longer than `cutoff_blocks` are rejected). Touches the
    /// block's region either way.
    pub fn admits(&mut self, block: u64, region_shift: u32, cutoff_blocks: u64) -> bool {
        let touched_before = !self.touched_regions.insert(block >> region_shift);
        touched_before && self.run_blocks <= cutoff_blocks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admits_reused_regions_and_rejects_long_runs() {
        let mut h = HecState::default();
        h.observe_request(0, 1);
        assert!(!h.admits(0, 2, 8), "first touch of region 0");
        h.observe_request(100, 1);
        assert!(!h.admits(100, 2, 8));
        h.observe_request(1, 1);
        assert!(h.admits(1, 2, 8), "region 0 was touched");
        // A sequential run over region 25 (blocks 100..): 1 + 4 + 4 = 9 > 8.
        h.observe_request(101, 4);
        assert!(h.admits(101, 2, 8));
        h.observe_request(105, 4);
        assert!(!h.admits(105, 2, 8));
        // A jump ends the run.
        h.observe_request(2, 1);
        assert!(h.admits(2, 2, 8));
    }
}
