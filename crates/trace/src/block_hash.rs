//! A hash for block numbers that keeps runs of neighbouring blocks together.
//!
//! The per-block hash tables on the hot path (staging areas, the demand
//! windows) are probed once per block access, and block
//! requests are mostly runs of consecutive blocks. A random hash costs one
//! cache miss per block; this one sends the 16 blocks of a run to 16
//! adjacent buckets, so a run costs about one miss. It lives here, in the
//! crate every other one builds on, so that all those tables share it.

/// Blocks per run that hash to adjacent buckets.
const RUN_BLOCKS: u64 = 16;

/// Hash `block` of `volume` (pass 0 where a table holds one volume).
///
/// One multiply spreads the run number (and the volume, mixed in first so
/// that volumes using the same block numbers do not collide) towards the high
/// bits; folding the high half down makes the bucket index depend on every
/// input bit. The position in the run, rotated by a per-run amount, fills the
/// low bits (a dense run covers its 16 buckets exactly once; keys that are
/// all multiples of 16, such as object mode's byte offsets, still spread) and
/// is folded into the top seven bits, hashbrown's tag.
#[inline]
pub fn hash_block(volume: u64, block: u64) -> u64 {
    let run = block / RUN_BLOCKS;
    let m = (run ^ volume.wrapping_mul(0x9e37_79b9_7f4a_7c15)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let h = m ^ (m >> 31);
    let position = block.wrapping_add(h >> 40) % RUN_BLOCKS;
    ((h & !(RUN_BLOCKS - 1)) | position) ^ (position << 57)
}
