//! The offline MIN family over one flash cache: MIN, M+, M_N, M_T and, with
//! container placement, C, C_N and C_T (seed 002 §6.2, Fig. 6.3).
//!
//! One routine runs them all; they differ only in what they are given:
//!
//! - a [`DenyList`] of insertion positions to skip, built from an earlier
//!   run's [`InsertRecord`]s (none for MIN; "no hit" for M+; fewer than N
//!   hits for M_N; the budget cut for M_T);
//! - TRIM: MIN runs without it, the rest with it;
//! - the [`Placement`]: slots on a page-mapped FTL (the M family), or
//!   containers written whole by the host, ordered by the time the same
//!   decisions evict each block (C: the records of the M run it mirrors).
//!
//! The block-level decisions are Belady's with read-around: a block is
//! inserted (on a read miss or a write) only if it will be read again
//! before being overwritten, and sooner than the furthest-read cached block,
//! which it then evicts. A block whose next access is not a read leaves the
//! cache at once (it is dead; MIN would pick it first anyway, so hits do not
//! change). Those decisions do not depend on the placement, so C makes
//! exactly M+'s decisions and reaches exactly its hit ratio; what it changes
//! is what reaches the flash and what GC copies. Copy-forward reduction
//! (CFR) drops a block at GC when the mirrored run has no flash hit left for
//! it; because the decisions are the mirrored run's, that plan is exact,
//! and one pass suffices (the seed's reruns chase a moving target because
//! its CFR changes later decisions).

use cloudcache_flash::FlashStats;
use cloudcache_trace::Op;

use crate::blocks::{BlockTrace, INF};
use crate::dram::Dram;
use crate::min_queue::MinQueue;
use crate::placement::Placement;
use crate::records::{DenyList, InsertRecord, RecordCursor};
use crate::OfflineError;

/// What one run is given.
#[derive(Debug)]
pub struct FamilyRun<'a> {
    /// Name for errors and reports.
    pub name: &'a str,
    /// Flash capacity in blocks (the MIN queue's size).
    pub flash_blocks: u32,
    /// DRAM capacity in blocks.
    pub dram_blocks: u32,
    /// Insertions to skip.
    pub deny: Option<&'a DenyList>,
    /// Records of the run whose decisions this one repeats, for container
    /// order (eviction time) and copy-forward reduction.
    pub mirror: Option<&'a [InsertRecord]>,
    /// Where blocks go.
    pub placement: Placement,
}

/// What a run counted.
#[derive(Clone, Debug, Default)]
pub struct RunCounters {
    /// Block reads.
    pub reads: u64,
    /// Reads DRAM served.
    pub dram_hits: u64,
    /// Reads flash served (DRAM missed).
    pub flash_hits: u64,
    /// Flash insertions made.
    pub insertions: u64,
    /// Insertions the deny list skipped.
    pub denied: u64,
    /// Flash hits on blocks the device no longer held (a copy-forward plan
    /// that did not match the decisions); 0 unless something is wrong.
    pub ghost_hits: u64,
    /// The device's counters.
    pub flash: FlashStats,
}

/// A finished run: counters plus the records of its insertions.
#[derive(Debug)]
pub struct FamilyOutcome {
    /// Counters.
    pub counters: RunCounters,
    /// One record per insertion, in position order.
    pub records: Vec<InsertRecord>,
}

/// Replay `trace` under `run`. Refuses an unannotated trace: every decision
/// here needs each access's next read.
pub fn run_family(
    trace: &BlockTrace,
    mut run: FamilyRun<'_>,
    progress: &dyn Fn(u64),
) -> Result<FamilyOutcome, OfflineError> {
    if !trace.is_annotated() {
        return Err(OfflineError::NotAnnotated(run.name.to_owned()));
    }
    let blocks = trace.distinct_blocks();
    let mut flash = MinQueue::new(run.flash_blocks, blocks);
    let mut dram = Dram::min(run.dram_blocks, blocks);
    // Index into `records` of each cached block's insertion.
    let mut current = vec![u32::MAX; blocks as usize];
    let mut records: Vec<InsertRecord> = Vec::new();
    let mut deny = run.deny.map(|d| d.positions()).unwrap_or(&[]).iter().peekable();
    let mut mirror = run.mirror.map(RecordCursor::new);
    let mut c = RunCounters::default();

    for (i, access) in trace.accesses().iter().enumerate() {
        let i = i as u32;
        if i % 65_536 == 0 && i > 0 {
            progress(65_536);
        }
        let (b, op, next) = (access.block(), access.op(), access.next_read());
        let dram_hit = dram.access(b, op, next);
        if op == Op::Read {
            c.reads += 1;
            c.dram_hits += u64::from(dram_hit);
        }
        if flash.contains(b) {
            if op == Op::Read {
                if !dram_hit {
                    c.flash_hits += 1;
                    c.ghost_hits += u64::from(!run.placement.read(b));
                    let rec = &mut records[current[b as usize] as usize];
                    rec.hits += 1;
                    rec.last_hit = i;
                }
                if next == INF {
                    leave(&mut flash, &mut run.placement, &mut records, &current, b, i);
                } else {
                    flash.update(b, next);
                }
                continue;
            }
            // A write or trim: the cached version is dead.
            leave(&mut flash, &mut run.placement, &mut records, &current, b, i);
        }
        if op == Op::Trim || next == INF {
            continue;
        }
        // Insertion candidate (a read miss or a write with a future read).
        while deny.next_if(|&&p| p < i).is_some() {}
        if deny.next_if(|&&p| p == i).is_some() {
            c.denied += 1;
            continue;
        }
        if flash.is_full() {
            match flash.victim() {
                Some((victim, key)) if next < key => {
                    leave(&mut flash, &mut run.placement, &mut records, &current, victim, i)
                }
                _ => continue,
            }
        }
        flash.insert(b, next);
        current[b as usize] = records.len() as u32;
        records.push(InsertRecord::new(i));
        c.insertions += 1;
        let (order, last_hit) = match mirror.as_mut().and_then(|m| m.find(i)) {
            Some(r) => (u64::from(r.end), r.last_hit),
            // Not mirrored (or a decision the mirror did not make): order
            // last, never dropped at GC.
            None => (u64::from(INF), INF),
        };
        run.placement.write(b, order, last_hit, i);
    }
    progress(remaining_progress(trace.accesses().len()));
    c.flash = run.placement.stats();
    Ok(FamilyOutcome { counters: c, records })
}

/// `block` leaves flash at position `now` (evicted, overwritten or dead).
fn leave(
    flash: &mut MinQueue,
    placement: &mut Placement,
    records: &mut [InsertRecord],
    current: &[u32],
    block: u32,
    now: u32,
) {
    flash.remove(block);
    records[current[block as usize] as usize].end = now;
    placement.remove(block);
}

/// Accesses not yet reported by a loop that reports 65,536 at every
/// position that is a positive multiple of 65,536.
pub(crate) fn remaining_progress(accesses: usize) -> u64 {
    let n = accesses as u64;
    n - 65_536 * (n.max(1) - 1).div_euclid(65_536)
}
