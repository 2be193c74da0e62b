//! Online comparison points under the same DRAM-over-flash hierarchy and
//! flash model: LRU (on FTL slots or on whole containers) and a RIPQ-like
//! container-based segmented LRU with insertion points.

use std::collections::VecDeque;

use cloudcache_flash::{FlashStats, Geometry, NONE};
use cloudcache_trace::Op;

use crate::blocks::BlockTrace;
use crate::dram::Dram;
use crate::family::{remaining_progress, RunCounters};
use crate::lru_list::LruList;
use crate::placement::Placement;

/// LRU flash under LRU DRAM: every read miss and every write is inserted.
pub fn run_lru(
    trace: &BlockTrace,
    flash_blocks: u32,
    dram_blocks: u32,
    mut placement: Placement,
    progress: &dyn Fn(u64),
) -> RunCounters {
    let blocks = trace.distinct_blocks();
    let mut dram = Dram::lru(dram_blocks, blocks);
    let mut flash = LruList::new(blocks);
    let mut c = RunCounters::default();
    let mut seq = 0u64;
    for (i, access) in trace.accesses().iter().enumerate() {
        if i % 65_536 == 0 && i > 0 {
            progress(65_536);
        }
        let (b, op) = (access.block(), access.op());
        let dram_hit = dram.access(b, op, 0);
        match op {
            Op::Read => {
                c.reads += 1;
                c.dram_hits += u64::from(dram_hit);
                if flash.contains(b) {
                    if !dram_hit {
                        c.flash_hits += 1;
                        c.ghost_hits += u64::from(!placement.read(b));
                    }
                    flash.touch(b);
                    continue;
                }
            }
            Op::Trim => {
                if flash.remove(b) {
                    placement.remove(b);
                }
                continue;
            }
            Op::Write => {}
        }
        // A read miss, or a write (new version in place when cached).
        if !flash.contains(b) && flash.len() >= flash_blocks {
            if let Some(victim) = flash.pop_tail() {
                placement.remove(victim);
            }
        }
        flash.touch(b);
        c.insertions += 1;
        seq += 1;
        placement.write(b, seq, NONE, i as u32);
    }
    progress(remaining_progress(trace.accesses().len()));
    c.flash = placement.stats();
    c
}

/// RIPQ's shape (Tang et al., FAST'15, as seed 002 configures it):
/// `sections` insertion points over a queue of sealed containers.
#[derive(Clone, Copy, Debug)]
pub struct RipqConfig {
    /// Insertion points (8 in the seed).
    pub sections: u32,
}

/// Where a RIPQ block is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Home {
    Absent,
    /// In the DRAM buffer of a section's active container.
    Active(u32),
    /// In a sealed container (id), at an index.
    Sealed(u32),
}

/// RIPQ-like segmented LRU on whole containers. The queue of sealed
/// containers is cut into `sections` of equal size, section 0 the most
/// recent; each section has an active container in DRAM, sealed into the
/// head of its section when full, and sections pass their oldest container
/// down when over size. A new block enters the last section's active
/// container. A hit promotes the block one section *virtually*: only its
/// target section is noted (or, in an active container, it moves in DRAM).
/// When the tail container is evicted (one erasure), its blocks with a
/// virtual promotion are copied forward into their target section's active
/// container and the rest leave the cache. Whole containers are written and
/// erased, so the device copies nothing itself; the policy's copies are the
/// copy-forward writes.
pub fn run_ripq(
    trace: &BlockTrace,
    geometry: &Geometry,
    dram_blocks: u32,
    config: RipqConfig,
    progress: &dyn Fn(u64),
) -> RunCounters {
    let blocks = trace.distinct_blocks();
    let k = config.sections.max(1) as usize;
    let per_unit = geometry.pages_per_unit as usize;
    // Sealed containers the cache may hold: its logical capacity in whole units.
    let capacity_units = (geometry.logical_pages as usize / per_unit).max(k);
    let target = capacity_units.div_ceil(k);
    let mut dram = Dram::lru(dram_blocks, blocks);
    let mut home = vec![Home::Absent; blocks as usize];
    let mut virtual_section = vec![NONE; blocks as usize];
    // Container id -> its blocks (NONE once invalid) and its section.
    let mut containers: Vec<Vec<u32>> = Vec::new();
    let mut section_of: Vec<u32> = Vec::new();
    let mut free_ids: Vec<u32> = Vec::new();
    let mut sections: Vec<VecDeque<u32>> = vec![VecDeque::new(); k];
    // Active containers: blocks and whether each entry is a copy.
    let mut active: Vec<Vec<(u32, bool)>> = vec![Vec::with_capacity(per_unit); k];
    let mut sealed_count = 0usize;
    let mut c = RunCounters::default();
    let mut stats = FlashStats::default();
    let mut erase_count = vec![0u64; capacity_units + k + 1];

    // Put `b` in section `s`'s active container, sealing and evicting as needed.
    fn place(b: u32, copied: bool, s: usize, st: &mut RipqState<'_>) {
        st.home[b as usize] = Home::Active(s as u32);
        st.active[s].push((b, copied));
        if st.active[s].len() < st.per_unit {
            return;
        }
        // Seal: one whole-unit write.
        let entries = std::mem::take(&mut st.active[s]);
        let id = st.free_ids.pop().unwrap_or_else(|| {
            st.containers.push(Vec::new());
            st.section_of.push(0);
            (st.containers.len() - 1) as u32
        });
        let mut list = Vec::with_capacity(entries.len());
        for &(blk, was_copy) in &entries {
            if was_copy {
                st.stats.copy_forward_writes += 1;
            } else {
                st.stats.host_writes += 1;
            }
            st.home[blk as usize] = Home::Sealed(id);
            list.push(blk);
        }
        st.stats.valid_pages += list.len() as u64;
        st.containers[id as usize] = list;
        st.section_of[id as usize] = s as u32;
        st.sections[s].push_front(id);
        *st.sealed_count += 1;
        // Keep sections at their size: pass the oldest container down.
        for sec in 0..st.sections.len() - 1 {
            while st.sections[sec].len() > st.target {
                let moved = st.sections[sec].pop_back().expect("non-empty");
                st.section_of[moved as usize] = (sec + 1) as u32;
                st.sections[sec + 1].push_front(moved);
            }
        }
        while *st.sealed_count > st.capacity_units {
            let victim = st.sections.iter_mut().rev().find_map(|q| q.pop_back()).expect("sealed");
            *st.sealed_count -= 1;
            st.stats.erasures += 1;
            let e = &mut st.erase_count[victim as usize];
            *e += 1;
            st.stats.max_unit_erasures = st.stats.max_unit_erasures.max(*e);
            let list = std::mem::take(&mut st.containers[victim as usize]);
            st.free_ids.push(victim);
            for blk in list.into_iter().filter(|&x| x != NONE) {
                st.stats.valid_pages -= 1;
                let to = std::mem::replace(&mut st.virtual_section[blk as usize], NONE);
                if to == NONE {
                    st.home[blk as usize] = Home::Absent;
                } else {
                    place(blk, true, to as usize, st);
                }
            }
        }
    }

    let mut st = RipqState {
        home: &mut home,
        virtual_section: &mut virtual_section,
        containers: &mut containers,
        section_of: &mut section_of,
        free_ids: &mut free_ids,
        sections: &mut sections,
        active: &mut active,
        sealed_count: &mut sealed_count,
        stats: &mut stats,
        erase_count: &mut erase_count,
        per_unit,
        target,
        capacity_units,
    };

    for (i, access) in trace.accesses().iter().enumerate() {
        if i % 65_536 == 0 && i > 0 {
            progress(65_536);
        }
        let (b, op) = (access.block(), access.op());
        let dram_hit = dram.access(b, op, 0);
        let at = st.home[b as usize];
        if op == Op::Read {
            c.reads += 1;
            c.dram_hits += u64::from(dram_hit);
            if at != Home::Absent {
                if !dram_hit {
                    c.flash_hits += 1;
                    st.stats.reads += 1;
                }
                promote(b, at, &mut st);
                continue;
            }
        }
        // Write or trim of a cached block: the old copy is invalid.
        let mut section = k - 1;
        if at != Home::Absent {
            section = invalidate(b, at, &mut st);
        }
        if op == Op::Trim {
            continue;
        }
        c.insertions += 1;
        place(b, false, section, &mut st);
    }
    progress(remaining_progress(trace.accesses().len()));
    c.flash = stats;
    c
}

/// Mutable state of a RIPQ run, borrowed by its helpers.
struct RipqState<'a> {
    home: &'a mut [Home],
    virtual_section: &'a mut [u32],
    containers: &'a mut Vec<Vec<u32>>,
    section_of: &'a mut Vec<u32>,
    free_ids: &'a mut Vec<u32>,
    sections: &'a mut [VecDeque<u32>],
    active: &'a mut [Vec<(u32, bool)>],
    sealed_count: &'a mut usize,
    stats: &'a mut FlashStats,
    erase_count: &'a mut Vec<u64>,
    per_unit: usize,
    target: usize,
    capacity_units: usize,
}

/// A hit: move up one section (virtually when sealed).
fn promote(b: u32, at: Home, st: &mut RipqState<'_>) {
    match at {
        Home::Active(s) => {
            let to = s.saturating_sub(1);
            // Moving into a full active container would overfill it: stay.
            if to != s && st.active[to as usize].len() + 1 < st.per_unit {
                let list = &mut st.active[s as usize];
                let index = list.iter().position(|&(x, _)| x == b).expect("block in its active container");
                let entry = list.swap_remove(index);
                st.home[b as usize] = Home::Active(to);
                st.active[to as usize].push(entry);
            }
        }
        Home::Sealed(id) => {
            let physical = st.section_of[id as usize];
            let current = match st.virtual_section[b as usize] {
                NONE => physical,
                v => v,
            };
            st.virtual_section[b as usize] = current.saturating_sub(1);
        }
        Home::Absent => {}
    }
}

/// Drop the cached copy of `b`; returns the section it belonged to.
fn invalidate(b: u32, at: Home, st: &mut RipqState<'_>) -> usize {
    st.home[b as usize] = Home::Absent;
    match at {
        Home::Active(s) => {
            let list = &mut st.active[s as usize];
            let index = list.iter().position(|&(x, _)| x == b).expect("block in its active container");
            list.swap_remove(index);
            s as usize
        }
        Home::Sealed(id) => {
            let list = &mut st.containers[id as usize];
            if let Some(slot) = list.iter_mut().find(|x| **x == b) {
                *slot = NONE;
                st.stats.valid_pages -= 1;
            }
            let v = std::mem::replace(&mut st.virtual_section[b as usize], NONE);
            if v == NONE {
                st.section_of[id as usize] as usize
            } else {
                v as usize
            }
        }
        Home::Absent => st.sections.len() - 1,
    }
}
