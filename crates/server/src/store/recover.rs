//! Opening a store: deciding which slot entries can be trusted.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use hashbrown::HashMap;

use super::layout::{DecodedEntry, Layout, SlotEntry, ENTRIES_PER_PAGE, ENTRY_BYTES};

/// What a restart found, for the log, the admin API and `cloudcache check`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct RecoveryReport {
    /// The store was closed cleanly (data was not re-read).
    pub clean_shutdown: bool,
    /// Blocks kept.
    pub blocks: u64,
    /// Of those, dirty.
    pub dirty_blocks: u64,
    /// Entries whose own checksum failed (dropped).
    pub corrupt_entries: u64,
    /// Older entries of a block that a newer entry supersedes (dropped).
    pub stale_duplicates: u64,
    /// Clean blocks whose data no longer matched their checksum (dropped).
    pub checksum_dropped: u64,
    /// Dirty blocks whose data did not match: a write after the last flush
    /// was cut short. Kept (the data is the block's own, as on a disk after
    /// power loss); logged.
    pub torn_dirty: u64,
    /// Entries of volumes the superblock does not know (dropped).
    pub unknown_volume: u64,
}

/// The blocks a store still holds after opening.
#[derive(Debug, Default)]
pub struct Restored {
    /// `(slot, entry)` in increasing slot order.
    pub entries: Vec<(u32, SlotEntry)>,
    /// What recovery did.
    pub report: RecoveryReport,
    /// The largest sequence number seen.
    pub max_seq: u64,
    /// Metadata pages whose entries recovery cleared.
    pub rewritten_pages: Vec<u32>,
}

/// What opening a store makes of one non-empty slot entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SlotVerdict {
    /// Kept: the newest entry of its block, and its data matches its
    /// checksum (or the data was not re-read).
    Kept,
    /// Kept although its data does not match: a dirty block whose last
    /// write after the last flush was cut short.
    TornDirty,
    /// Dropped: the entry's own checksum fails.
    CorruptEntry,
    /// Dropped: the volume table does not know the entry's volume.
    UnknownVolume,
    /// Dropped: a newer entry of the same block supersedes it.
    StaleDuplicate,
    /// Dropped: a clean block whose data no longer matches its checksum.
    ChecksumDropped,
}

impl SlotVerdict {
    /// Whether opening the store keeps the slot's block.
    pub fn is_kept(self) -> bool {
        matches!(self, SlotVerdict::Kept | SlotVerdict::TornDirty)
    }

    /// The verdict's name, as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            SlotVerdict::Kept => "kept",
            SlotVerdict::TornDirty => "torn_dirty",
            SlotVerdict::CorruptEntry => "corrupt_entry",
            SlotVerdict::UnknownVolume => "unknown_volume",
            SlotVerdict::StaleDuplicate => "stale_duplicate",
            SlotVerdict::ChecksumDropped => "checksum_dropped",
        }
    }
}

/// One non-empty slot and its verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClassifiedSlot {
    /// The slot.
    pub slot: u32,
    /// Its entry (`None` when the entry is corrupt).
    pub entry: Option<SlotEntry>,
    /// What opening the store does with it.
    pub verdict: SlotVerdict,
}

/// Every non-empty slot of a metadata region, judged.
#[derive(Debug, Default)]
pub struct Classification {
    /// Non-empty slots in increasing slot order.
    pub slots: Vec<ClassifiedSlot>,
    /// The largest sequence number of any decodable entry.
    pub max_seq: u64,
}

/// Judges every slot entry of `metadata` the one way both opening a store
/// and `cloudcache check` do: corrupt entries, entries of unknown volumes
/// and superseded duplicates (lower sequence number) are dropped; with
/// `verify_data`, each surviving block's data is re-read and a mismatch
/// drops a clean block but keeps a dirty one (torn). A data read error
/// counts as a mismatch.
pub fn classify(
    file: &File,
    layout: &Layout,
    metadata: &[u8],
    verify_data: bool,
    known_volumes: &[u32],
) -> Classification {
    let mut result = Classification::default();
    // Newest entry per block: index into `result.slots`.
    let mut newest: HashMap<(u32, u64), usize> = HashMap::new();
    let slot_count = (metadata.len() as u64 / ENTRY_BYTES).min(layout.slot_count) as u32;
    for slot in 0..slot_count {
        let at = slot as usize * ENTRY_BYTES as usize;
        let entry = match SlotEntry::decode(&metadata[at..at + ENTRY_BYTES as usize]) {
            DecodedEntry::Empty => continue,
            DecodedEntry::Corrupt => {
                result.slots.push(ClassifiedSlot { slot, entry: None, verdict: SlotVerdict::CorruptEntry });
                continue;
            }
            DecodedEntry::Entry(e) => e,
        };
        result.max_seq = result.max_seq.max(entry.seq);
        if !known_volumes.contains(&entry.volume) {
            result.slots.push(ClassifiedSlot {
                slot,
                entry: Some(entry),
                verdict: SlotVerdict::UnknownVolume,
            });
            continue;
        }
        let index = result.slots.len();
        result.slots.push(ClassifiedSlot { slot, entry: Some(entry), verdict: SlotVerdict::Kept });
        match newest.entry((entry.volume, entry.block)) {
            hashbrown::hash_map::Entry::Vacant(v) => {
                v.insert(index);
            }
            hashbrown::hash_map::Entry::Occupied(mut o) => {
                let held = *o.get();
                let held_seq = result.slots[held].entry.map_or(0, |e| e.seq);
                let loser = if held_seq < entry.seq { o.insert(index) } else { index };
                result.slots[loser].verdict = SlotVerdict::StaleDuplicate;
            }
        }
    }
    if verify_data {
        let mut data = vec![0u8; layout.block_size as usize];
        for classified in result.slots.iter_mut().filter(|c| c.verdict == SlotVerdict::Kept) {
            let Some(entry) = classified.entry else { continue };
            let intact = file.read_exact_at(&mut data, layout.slot_offset(classified.slot)).is_ok()
                && crc32fast::hash(&data) == entry.data_crc;
            if !intact {
                classified.verdict =
                    if entry.is_dirty() { SlotVerdict::TornDirty } else { SlotVerdict::ChecksumDropped };
            }
        }
    }
    result
}

/// Decodes the metadata region, drops what cannot be trusted (clearing it
/// in `metadata`), and returns what is left. After a crash
/// (`clean == false`) every block's data is re-read and checked.
pub fn recover(
    file: &File,
    layout: &Layout,
    metadata: &mut [u8],
    clean: bool,
    known_volumes: &[u32],
) -> io::Result<Restored> {
    let classification = classify(file, layout, metadata, !clean, known_volumes);
    let mut restored = Restored {
        report: RecoveryReport { clean_shutdown: clean, ..Default::default() },
        max_seq: classification.max_seq,
        ..Default::default()
    };
    let mut cleared = vec![false; (metadata.len() as u64 / (ENTRIES_PER_PAGE * ENTRY_BYTES)) as usize];
    let report = &mut restored.report;
    for classified in &classification.slots {
        let dropped = match classified.verdict {
            SlotVerdict::Kept => None,
            SlotVerdict::TornDirty => {
                report.torn_dirty += 1;
                None
            }
            SlotVerdict::CorruptEntry => Some(&mut report.corrupt_entries),
            SlotVerdict::UnknownVolume => Some(&mut report.unknown_volume),
            SlotVerdict::StaleDuplicate => Some(&mut report.stale_duplicates),
            SlotVerdict::ChecksumDropped => Some(&mut report.checksum_dropped),
        };
        if let Some(counter) = dropped {
            *counter += 1;
            let at = classified.slot as usize * ENTRY_BYTES as usize;
            metadata[at..at + ENTRY_BYTES as usize].fill(0);
            cleared[(classified.slot as u64 / ENTRIES_PER_PAGE) as usize] = true;
        } else if let Some(entry) = classified.entry {
            restored.entries.push((classified.slot, entry));
        }
    }
    restored.report.blocks = restored.entries.len() as u64;
    restored.report.dirty_blocks = restored.entries.iter().filter(|(_, e)| e.is_dirty()).count() as u64;
    restored.rewritten_pages =
        cleared.iter().enumerate().filter(|(_, &c)| c).map(|(page, _)| page as u32).collect();
    Ok(restored)
}
