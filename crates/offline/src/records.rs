//! Insertion records: what each flash insertion of one run achieved, the
//! annotation later rounds filter and order by (seed 002 §6.2.6).
//!
//! A record is per insertion instance, identified by the position of the
//! access that inserted it (ambiguity 2 of the digest: the seed indexes by
//! key, but one key is inserted many times with different outcomes).
//! Insertions happen at increasing positions, so records are sorted by
//! position and later rounds read them with a cursor, no hashing.

use crate::blocks::INF;

/// One insertion and its fate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InsertRecord {
    /// Position of the inserting access.
    pub position: u32,
    /// Flash read hits it absorbed (reads DRAM did not serve).
    pub hits: u32,
    /// Position at which it left flash (evicted, overwritten, dead), or
    /// [`INF`] if still cached at the end.
    pub end: u32,
    /// Position of its last flash read hit, or [`INF`] if it had none.
    pub last_hit: u32,
}

impl InsertRecord {
    /// A fresh insertion at `position`.
    pub fn new(position: u32) -> Self {
        InsertRecord { position, hits: 0, end: INF, last_hit: INF }
    }

    /// Whether it absorbed any hit.
    pub fn had_hit(&self) -> bool {
        self.hits > 0
    }
}

/// Reads records in position order.
#[derive(Clone, Debug)]
pub struct RecordCursor<'a> {
    records: &'a [InsertRecord],
    next: usize,
}

impl<'a> RecordCursor<'a> {
    /// A cursor at the start of `records` (sorted by position).
    pub fn new(records: &'a [InsertRecord]) -> Self {
        RecordCursor { records, next: 0 }
    }

    /// The record of the insertion at `position`, if there was one. Calls
    /// must come in non-decreasing position order.
    pub fn find(&mut self, position: u32) -> Option<&'a InsertRecord> {
        while self.next < self.records.len() && self.records[self.next].position < position {
            self.next += 1;
        }
        self.records.get(self.next).filter(|r| r.position == position)
    }
}

/// Positions at which a run must not insert, sorted; read with a cursor.
#[derive(Clone, Debug, Default)]
pub struct DenyList {
    positions: Vec<u32>,
}

impl DenyList {
    /// Deny the insertions of `records` that absorbed fewer than `n` hits
    /// (R_N; n = 1 is M+'s "inserted and evicted without a read").
    pub fn fewer_hits_than(records: &[InsertRecord], n: u32) -> Self {
        DenyList { positions: records.iter().filter(|r| r.hits < n).map(|r| r.position).collect() }
    }

    /// H_T (seed 002 §6.2.6): from a run's records, deny the lowest-reuse
    /// insertions until only `allowed` remain: every insertion with fewer
    /// than R hits and the first L with exactly R, R chosen so that
    /// I - CI = I'. Returns the list and (R, L).
    pub fn budget(records: &[InsertRecord], allowed: u64) -> (Self, u32, u64) {
        let total = records.len() as u64;
        if allowed >= total {
            return (DenyList::default(), 0, 0);
        }
        let mut to_remove = total - allowed;
        // A_i: insertions that absorbed i hits.
        let max_hits = records.iter().map(|r| r.hits).max().unwrap_or(0);
        let mut counts = vec![0u64; max_hits as usize + 1];
        for r in records {
            counts[r.hits as usize] += 1;
        }
        let mut reuse = 0u32;
        while counts[reuse as usize] <= to_remove && (reuse as usize) < counts.len() - 1 {
            to_remove -= counts[reuse as usize];
            reuse += 1;
        }
        let leftover = to_remove.min(counts[reuse as usize]);
        let mut taken = 0u64;
        let positions = records
            .iter()
            .filter(|r| {
                r.hits < reuse
                    || (r.hits == reuse && taken < leftover && {
                        taken += 1;
                        true
                    })
            })
            .map(|r| r.position)
            .collect();
        (DenyList { positions }, reuse, leftover)
    }

    /// Both lists' positions.
    pub fn union(&self, other: &DenyList) -> DenyList {
        let mut positions: Vec<u32> = self.positions.iter().chain(&other.positions).copied().collect();
        positions.sort_unstable();
        positions.dedup();
        DenyList { positions }
    }

    /// Number of positions denied.
    pub fn len(&self) -> usize {
        self.positions.len()
    }

    /// True when nothing is denied.
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// The sorted positions.
    pub fn positions(&self) -> &[u32] {
        &self.positions
    }
}
