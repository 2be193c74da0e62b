//! `cloudcache check`: verifies a flash store offline, without a server,
//! and with `repair` puts it back into the state opening it would
//! (like dm-cache's `cache_check` / `cache_repair`).
//!
//! The verdict on each slot comes from the same function opening a store
//! uses (`recover::classify`), with every block's data re-read, so check
//! reports exactly what a restart after a crash would keep and drop. It
//! also flags what a restart after a *clean* shutdown would not notice: a
//! clean block whose data no longer matches its checksum (opening a cleanly
//! closed store trusts the data without re-reading it).

use std::fs::OpenOptions;
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::Path;

use hashbrown::HashMap;
use serde::Serialize;

use super::layout::{
    Layout, Superblock, ENTRY_BYTES, FLAG_CLEAN_SHUTDOWN, METADATA_OFFSET, PAGE_BYTES, SUPERBLOCK_BYTES,
};
use super::recover::{self, SlotVerdict};
use super::{newest_superblock, read_superblock_copies, StoreError};

/// Damaged slots listed individually in a report (the counts cover all).
pub const LISTED_SLOTS: usize = 100;

/// What `check` found in a store, and what `repair` changed.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CheckReport {
    /// The store checked.
    pub path: String,
    /// Its size in bytes (a block device's size for a device).
    pub device_bytes: u64,
    /// Both superblock copies.
    pub superblocks: Vec<SuperblockState>,
    /// The copy the store opens with (the valid one of the newer
    /// generation); `None` when neither is valid.
    pub superblock_used: Option<usize>,
    /// The store's geometry, from the copy used.
    pub geometry: Option<Geometry>,
    /// The copy used says the store was closed cleanly.
    pub clean_shutdown: Option<bool>,
    /// The volume table with each volume's surviving blocks.
    pub volumes: Vec<VolumeSummary>,
    /// Every slot's verdict, counted.
    pub slots: SlotCounts,
    /// The first [`LISTED_SLOTS`] slots that are dropped or torn.
    pub damaged_slots: Vec<DamagedSlot>,
    /// What is wrong; each says whether this run repaired it.
    pub problems: Vec<Problem>,
    /// Findings that need no repair (a crash, torn dirty writes).
    pub warnings: Vec<String>,
    /// What repair changed on the device.
    pub repairs: Vec<String>,
    /// No problem is left: none was found, or repair fixed all of them.
    pub clean: bool,
}

/// One superblock copy as read.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SuperblockState {
    /// 0 or 1.
    pub copy: usize,
    /// Byte offset of the copy.
    pub offset: u64,
    /// It decodes and its checksum matches.
    pub valid: bool,
    /// Why it was rejected, if it was.
    pub error: Option<String>,
    /// Its generation (valid copies only).
    pub generation: Option<u64>,
    /// Its clean-shutdown flag (valid copies only).
    pub clean_shutdown: Option<bool>,
    /// Volumes in its table (valid copies only).
    pub volumes: Option<usize>,
}

/// Where things are in the store.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Geometry {
    /// Cache block size in bytes.
    pub block_size: u64,
    /// Number of slots (cache blocks).
    pub slot_count: u64,
    /// Byte offset of the slot metadata.
    pub metadata_offset: u64,
    /// Bytes of slot metadata.
    pub metadata_bytes: u64,
    /// Byte offset of the data region.
    pub data_offset: u64,
    /// One past the last byte the store uses.
    pub end: u64,
}

/// A volume of the volume table and its blocks on flash.
#[derive(Clone, Debug, Default, Serialize)]
pub struct VolumeSummary {
    /// The id slot entries carry.
    pub id: u32,
    /// The export name.
    pub name: String,
    /// The disk's size when it was last attached.
    pub size: u64,
    /// Clean blocks kept (data verified).
    pub clean_blocks: u64,
    /// Dirty blocks kept (including torn ones).
    pub dirty_blocks: u64,
    /// Of the dirty blocks, those whose data does not match (kept).
    pub torn_dirty: u64,
}

/// Slots by verdict.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SlotCounts {
    /// All slots.
    pub total: u64,
    /// Slots holding nothing.
    pub empty: u64,
    /// Clean blocks kept, data verified.
    pub clean: u64,
    /// Dirty blocks kept (including torn ones).
    pub dirty: u64,
    /// Dirty blocks whose data does not match: a write after the last
    /// flush was cut short. Kept, as opening the store keeps them.
    pub torn_dirty: u64,
    /// Entries whose own checksum fails (dropped).
    pub corrupt_entries: u64,
    /// Entries of volumes the volume table does not know (dropped).
    pub unknown_volume: u64,
    /// Older entries of a block a newer entry supersedes (dropped).
    pub stale_duplicates: u64,
    /// Clean blocks whose data does not match their checksum (dropped).
    pub checksum_dropped: u64,
}

/// One slot that is dropped or torn.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct DamagedSlot {
    /// The slot.
    pub slot: u32,
    /// What opening the store does with it.
    pub verdict: SlotVerdict,
    /// Its volume id (`None` for a corrupt entry).
    pub volume: Option<u32>,
    /// Its block number (`None` for a corrupt entry).
    pub block: Option<u64>,
}

/// Something wrong with the store.
#[derive(Clone, Debug, Serialize)]
pub struct Problem {
    /// What is wrong, and where.
    pub what: String,
    /// `cloudcache check --repair` can repair it.
    pub repairable: bool,
    /// This run repaired it.
    pub repaired: bool,
}

impl CheckReport {
    /// Records a problem; returns its index.
    fn problem(&mut self, what: String, repairable: bool) -> usize {
        self.problems.push(Problem { what, repairable, repaired: false });
        self.problems.len() - 1
    }
}

/// Checks the store at `path` without a server (which must not have it
/// open). With `repair`, rewrites a damaged or stale superblock copy from
/// the good one, clears every entry opening the store would drop (and clean
/// entries whose data fails its checksum), extends a truncated store file,
/// and syncs. Only I/O errors are `Err`: a store too damaged to use is a
/// report with an unrepaired problem.
pub fn check(path: &Path, repair: bool) -> Result<CheckReport, StoreError> {
    let io_err = |source: io::Error| StoreError::Io { path: path.to_path_buf(), source };
    let mut file = OpenOptions::new().read(true).write(repair).open(path).map_err(io_err)?;
    let file_type = file.metadata().map_err(io_err)?.file_type();
    if file_type.is_dir() {
        let e = io::Error::new(io::ErrorKind::InvalidInput, "is a directory, not a store file or device");
        return Err(io_err(e));
    }
    let is_regular_file = file_type.is_file();
    let in_use = match super::lock_exclusive(&file, path) {
        Ok(()) => false,
        Err(StoreError::InUse { .. }) if !repair => true,
        Err(e) => return Err(e),
    };
    let device_bytes = file.seek(SeekFrom::End(0)).map_err(io_err)?;
    let mut report = CheckReport { path: path.display().to_string(), device_bytes, ..CheckReport::default() };
    if in_use {
        report.warnings.push(
            "the store is in use by another process (a running server): what is read may be changing".into(),
        );
    }

    let copies = read_superblock_copies(&file);
    for (copy, decoded) in copies.iter().enumerate() {
        let mut state =
            SuperblockState { copy, offset: copy as u64 * SUPERBLOCK_BYTES, ..SuperblockState::default() };
        match decoded {
            Ok(sb) => {
                state.valid = true;
                state.generation = Some(sb.generation);
                state.clean_shutdown = Some(sb.flags & FLAG_CLEAN_SHUTDOWN != 0);
                state.volumes = Some(sb.volumes.len());
            }
            Err(e) => state.error = Some(e.clone()),
        }
        report.superblocks.push(state);
    }
    let Some(used) = newest_superblock(&copies) else {
        let what = match (&copies[0], &copies[1]) {
            (Err(a), Err(b))
                if a.starts_with("no cloudcache magic") && b.starts_with("no cloudcache magic") =>
            {
                "not a cloudcache flash store: neither superblock copy has the magic".to_string()
            }
            (Err(a), Err(b)) => format!("neither superblock copy is valid (copy 0: {a}; copy 1: {b})"),
            _ => "neither superblock copy is valid".to_string(),
        };
        report.problem(
            format!(
                "{what}; repair cannot rebuild the geometry and volume table without one: remove the file \
             (or re-create the store) to start with a cold cache; dirty blocks on it are lost"
            ),
            false,
        );
        return Ok(report);
    };
    let superblock = copies[used].clone().map_err(|e| io_err(io::Error::other(e)))?;
    let layout = superblock.layout;
    report.superblock_used = Some(used);
    report.clean_shutdown = Some(superblock.flags & FLAG_CLEAN_SHUTDOWN != 0);
    report.geometry = Some(Geometry {
        block_size: layout.block_size,
        slot_count: layout.slot_count,
        metadata_offset: METADATA_OFFSET,
        metadata_bytes: layout.metadata_bytes(),
        data_offset: layout.data_offset,
        end: layout.end(),
    });
    let other = 1 - used;
    let other_problem = match &copies[other] {
        Err(e) => Some(report.problem(
            format!(
                "superblock copy {other} (offset {}) is damaged: {e}; copy {used} (generation {}) is intact",
                other as u64 * SUPERBLOCK_BYTES,
                superblock.generation
            ),
            true,
        )),
        Ok(sb) if sb.layout != layout => Some(report.problem(
            format!(
            "superblock copy {other} (generation {}) describes another geometry than the newer copy {used}",
            sb.generation
        ),
            true,
        )),
        Ok(_) => None,
    };
    check_volume_table(&superblock, &mut report);

    let metadata_end = METADATA_OFFSET + layout.metadata_bytes();
    if metadata_end > device_bytes {
        report.problem(
            format!(
                "the store is {device_bytes} bytes but its slot metadata ends at byte {metadata_end}: \
             truncated; repair cannot restore lost metadata: remove the file to start cold"
            ),
            false,
        );
        return Ok(report);
    }
    let truncated_problem = (layout.end() > device_bytes).then(|| {
        report.problem(
            format!(
            "the store is {device_bytes} bytes but its data region ends at byte {}: blocks past the end are \
             unreadable",
            layout.end()
        ),
            is_regular_file,
        )
    });

    let mut metadata = vec![0u8; layout.metadata_bytes() as usize];
    file.read_exact_at(&mut metadata, METADATA_OFFSET).map_err(io_err)?;
    let known: Vec<u32> = superblock.volumes.iter().map(|v| v.id).collect();
    let classification = recover::classify(&file, &layout, &metadata, true, &known);
    tally(&superblock, &layout, &classification, &mut report);

    if report.clean_shutdown == Some(false) {
        report.warnings.push(
            "the store was not closed cleanly (a crash, or a server still has it open): \
             opening it re-reads every block, as this check did"
                .into(),
        );
    }
    if report.slots.torn_dirty > 0 {
        report.warnings.push(format!(
            "{} dirty block(s) do not match their checksum: writes after the last flush were cut short; \
             they are kept (the block holds its own data, as a disk does after power loss)",
            report.slots.torn_dirty
        ));
    }
    let dropped: Vec<u32> =
        classification.slots.iter().filter(|c| !c.verdict.is_kept()).map(|c| c.slot).collect();
    let mut dropped_problem = None;
    if !dropped.is_empty() {
        let s = report.slots;
        let mut what = format!(
            "{} slot entries cannot be trusted ({} corrupt, {} of unknown volumes, {} stale duplicates, {} \
             clean blocks failing their data checksum)",
            dropped.len(),
            s.corrupt_entries,
            s.unknown_volume,
            s.stale_duplicates,
            s.checksum_dropped
        );
        if s.checksum_dropped > 0 && report.clean_shutdown == Some(true) {
            what.push_str(
                "; the store was closed cleanly, so opening it would not re-read the data and would serve \
                 the damaged clean blocks",
            );
        }
        dropped_problem = Some(report.problem(what, true));
    }

    if !repair {
        report.clean = report.problems.is_empty();
        return Ok(report);
    }
    // Slot entries first, superblock last: the superblock copy written is
    // the one the store does not open with, so every step leaves a store
    // that opens.
    if let Some(problem) = dropped_problem {
        let mut pages: Vec<u64> = Vec::new();
        for &slot in &dropped {
            let at = slot as usize * ENTRY_BYTES as usize;
            metadata[at..at + ENTRY_BYTES as usize].fill(0);
            let page = slot as u64 * ENTRY_BYTES / PAGE_BYTES;
            if pages.last() != Some(&page) {
                pages.push(page);
            }
        }
        for &page in &pages {
            let at = (page * PAGE_BYTES) as usize;
            file.write_all_at(&metadata[at..at + PAGE_BYTES as usize], METADATA_OFFSET + page * PAGE_BYTES)
                .map_err(io_err)?;
        }
        file.sync_data().map_err(io_err)?;
        report.repairs.push(format!(
            "cleared {} slot entries (in {} metadata pages)",
            dropped.len(),
            pages.len()
        ));
        report.problems[problem].repaired = true;
    }
    if let Some(problem) = truncated_problem.filter(|&p| report.problems[p].repairable) {
        file.set_len(layout.end()).map_err(io_err)?;
        file.sync_all().map_err(io_err)?;
        report.repairs.push(format!("extended the file from {device_bytes} to {} bytes", layout.end()));
        report.problems[problem].repaired = true;
    }
    if let Some(problem) = other_problem {
        // One generation older than the copy used, so the copies keep
        // alternating by generation and the next superblock write (which
        // goes to the older copy) leaves the used copy untouched.
        let mut rewritten = superblock.clone();
        rewritten.generation = superblock.generation.saturating_sub(1);
        file.write_all_at(&rewritten.encode(), other as u64 * SUPERBLOCK_BYTES).map_err(io_err)?;
        file.sync_data().map_err(io_err)?;
        report.repairs.push(format!(
            "rewrote superblock copy {other} from copy {used} (as generation {})",
            rewritten.generation
        ));
        report.problems[problem].repaired = true;
    }
    report.clean = report.problems.iter().all(|p| p.repaired);
    Ok(report)
}

/// Duplicate ids or names in the volume table: the encoder never writes
/// them, so they mean a bug or a forged superblock. Not repairable.
fn check_volume_table(superblock: &Superblock, report: &mut CheckReport) {
    for (i, v) in superblock.volumes.iter().enumerate() {
        if let Some(first) = superblock.volumes[..i].iter().find(|w| w.id == v.id || w.name == v.name) {
            report.problem(
                format!(
                    "the volume table lists volume {:?} (id {}) and {:?} (id {}) with the same id or name",
                    first.name, first.id, v.name, v.id
                ),
                false,
            );
        }
    }
}

/// Fills the report's counts, volumes and damaged-slot list.
fn tally(
    superblock: &Superblock,
    layout: &Layout,
    classification: &recover::Classification,
    report: &mut CheckReport,
) {
    report.volumes = superblock
        .volumes
        .iter()
        .map(|v| VolumeSummary { id: v.id, name: v.name.clone(), size: v.size, ..VolumeSummary::default() })
        .collect();
    let by_id: HashMap<u32, usize> = superblock.volumes.iter().enumerate().map(|(i, v)| (v.id, i)).collect();
    let counts = &mut report.slots;
    counts.total = layout.slot_count;
    counts.empty = layout.slot_count - classification.slots.len() as u64;
    for classified in &classification.slots {
        match classified.verdict {
            SlotVerdict::Kept | SlotVerdict::TornDirty => {}
            SlotVerdict::CorruptEntry => counts.corrupt_entries += 1,
            SlotVerdict::UnknownVolume => counts.unknown_volume += 1,
            SlotVerdict::StaleDuplicate => counts.stale_duplicates += 1,
            SlotVerdict::ChecksumDropped => counts.checksum_dropped += 1,
        }
        if classified.verdict != SlotVerdict::Kept && report.damaged_slots.len() < LISTED_SLOTS {
            report.damaged_slots.push(DamagedSlot {
                slot: classified.slot,
                verdict: classified.verdict,
                volume: classified.entry.map(|e| e.volume),
                block: classified.entry.map(|e| e.block),
            });
        }
        let Some(entry) = classified.entry.filter(|_| classified.verdict.is_kept()) else { continue };
        let torn = classified.verdict == SlotVerdict::TornDirty;
        let volume = by_id.get(&entry.volume).map(|&i| &mut report.volumes[i]);
        if entry.is_dirty() {
            counts.dirty += 1;
            counts.torn_dirty += torn as u64;
        } else {
            counts.clean += 1;
        }
        if let Some(volume) = volume {
            if entry.is_dirty() {
                volume.dirty_blocks += 1;
                volume.torn_dirty += torn as u64;
            } else {
                volume.clean_blocks += 1;
            }
        }
    }
}
