//! Admission: which missed blocks go into flash. Plain caches admit every
//! miss; CloudCache admits only reused blocks through a staging area, and
//! the seed's baselines admit by HEC's touch count or LARC's ghost.

mod hec;
mod larc;
mod staging;

pub use hec::HecState;
pub use larc::LarcState;
pub use staging::{StagingArea, StagingDecision, StagingKind, ADDRESS_ENTRY_BYTES, MIN_STAGED_BLOCK_SIZE};

/// How a cache admits missed blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Admission {
    /// Every miss is admitted.
    Always,
    /// RWS staging: admit a block on access `reuses + 1` while it is staged.
    Staging {
        /// Reuses required (N of RWS_N); 0 admits on the first access.
        reuses: u32,
        /// What the staging area holds.
        kind: StagingKind,
        /// Staging memory of the whole cache, divided among volumes in
        /// proportion to their shares (each volume has all of it until
        /// shares are set).
        total_bytes: u64,
    },
    /// HEC: touch count over regions plus rejection of long sequential runs.
    TouchCount {
        /// Region size in bytes (4 MiB in HEC).
        region_bytes: u64,
        /// Longest sequential run still admitted, in bytes (4 MiB in HEC).
        sequential_cutoff_bytes: u64,
    },
    /// LARC: a ghost of recently missed addresses, sized by the hit ratio.
    Larc,
}

impl Admission {
    /// HEC with its defaults: 4 MiB regions, 4 MiB sequential cutoff.
    pub const HEC_DEFAULT: Admission =
        Admission::TouchCount { region_bytes: 4 << 20, sequential_cutoff_bytes: 4 << 20 };

    /// Staging memory of the whole cache, in bytes (0 when not staging).
    pub fn staging_bytes(&self) -> u64 {
        match self {
            Admission::Staging { total_bytes, .. } => *total_bytes,
            _ => 0,
        }
    }
}

/// One volume's admission state.
pub(crate) enum VolumeAdmission {
    Always,
    Staging(StagingArea),
    TouchCount(HecState),
    Larc(LarcState),
}

impl VolumeAdmission {
    pub(crate) fn new(
        admission: Admission,
        block_size: u64,
        cache_blocks: u64,
        expected_blocks: usize,
    ) -> Self {
        match admission {
            Admission::Always => VolumeAdmission::Always,
            Admission::Staging { kind, total_bytes, .. } => {
                let mut area = StagingArea::new(kind, block_size, expected_blocks);
                area.set_budget(total_bytes);
                VolumeAdmission::Staging(area)
            }
            Admission::TouchCount { .. } => VolumeAdmission::TouchCount(HecState::default()),
            Admission::Larc => {
                VolumeAdmission::Larc(LarcState::new(cache_blocks, block_size, expected_blocks))
            }
        }
    }

    /// Memory this volume's admission state takes, in bytes.
    pub(crate) fn staging_used_bytes(&self) -> u64 {
        match self {
            VolumeAdmission::Staging(area) => area.used_bytes(),
            VolumeAdmission::Larc(larc) => larc.used_bytes(),
            _ => 0,
        }
    }
}
