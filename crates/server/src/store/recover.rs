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
    let mut restored = Restored {
        report: RecoveryReport { clean_shutdown: clean, ..Default::default() },
        ..Default::default()
    };
    let mut cleared = vec![false; (metadata.len() as u64 / (ENTRIES_PER_PAGE * ENTRY_BYTES)) as usize];
    let mut clear = |metadata: &mut [u8], slot: u32| {
        let at = slot as usize * ENTRY_BYTES as usize;
        metadata[at..at + ENTRY_BYTES as usize].fill(0);
        cleared[(slot as u64 / ENTRIES_PER_PAGE) as usize] = true;
    };
    // Newest entry per block.
    let mut newest: HashMap<(u32, u64), (u32, SlotEntry)> = HashMap::new();
    for slot in 0..layout.slot_count as u32 {
        let at = slot as usize * ENTRY_BYTES as usize;
        let entry = match SlotEntry::decode(&metadata[at..at + ENTRY_BYTES as usize]) {
            DecodedEntry::Empty => continue,
            DecodedEntry::Corrupt => {
                restored.report.corrupt_entries += 1;
                clear(metadata, slot);
                continue;
            }
            DecodedEntry::Entry(e) => e,
        };
        restored.max_seq = restored.max_seq.max(entry.seq);
        if !known_volumes.contains(&entry.volume) {
            restored.report.unknown_volume += 1;
            clear(metadata, slot);
            continue;
        }
        match newest.entry((entry.volume, entry.block)) {
            hashbrown::hash_map::Entry::Vacant(v) => {
                v.insert((slot, entry));
            }
            hashbrown::hash_map::Entry::Occupied(mut o) => {
                restored.report.stale_duplicates += 1;
                let loser = if o.get().1.seq < entry.seq { o.insert((slot, entry)).0 } else { slot };
                clear(metadata, loser);
            }
        }
    }
    let mut entries: Vec<(u32, SlotEntry)> = newest.into_values().collect();
    entries.sort_unstable_by_key(|&(slot, _)| slot);
    if !clean {
        let mut data = vec![0u8; layout.block_size as usize];
        entries.retain(|&(slot, entry)| {
            let intact = file.read_exact_at(&mut data, layout.slot_offset(slot)).is_ok()
                && crc32fast::hash(&data) == entry.data_crc;
            if intact {
                return true;
            }
            if entry.is_dirty() {
                restored.report.torn_dirty += 1;
                return true;
            }
            restored.report.checksum_dropped += 1;
            clear(metadata, slot);
            false
        });
    }
    restored.report.blocks = entries.len() as u64;
    restored.report.dirty_blocks = entries.iter().filter(|(_, e)| e.is_dirty()).count() as u64;
    restored.entries = entries;
    restored.rewritten_pages =
        cleared.iter().enumerate().filter(|(_, &c)| c).map(|(page, _)| page as u32).collect();
    Ok(restored)
}
