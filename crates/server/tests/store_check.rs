//! `store::check` against real store files damaged on purpose: what it
//! reports, what `repair` changes, that the repaired store opens with
//! exactly the expected blocks, and that it agrees with `FlashStore::open`.
//! Also: a server over a store beyond repair passes through to its backend,
//! and fuzzing of the store's parsers and of `check`/`open` under damage.

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use cloudcache_engine::WritePolicy;
use cloudcache_server::config::{ServerConfig, VolumeConfig};
use cloudcache_server::core::Scratch;
use cloudcache_server::nbd::stream::ListenAddr;
use cloudcache_server::server::Server;
use cloudcache_server::store::layout::{
    DecodedEntry, SlotEntry, Superblock, ENTRY_BYTES, ENTRY_DIRTY, ENTRY_VALID, METADATA_OFFSET,
    SUPERBLOCK_BYTES,
};
use cloudcache_server::store::{check, FlashStore, SlotVerdict, StoreError};
use proptest::prelude::*;

const BLOCK: u64 = 4096;
const STORE_BYTES: u64 = 2 << 20;

/// A fresh directory for one test.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("cloudcache-store-check-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A block's recognisable content.
fn pattern(volume: u32, block: u64) -> Vec<u8> {
    (0..BLOCK)
        .map(|i| (i as u32).wrapping_mul(31).wrapping_add(volume * 7 + block as u32 * 13) as u8)
        .collect()
}

/// A block the test store holds: (slot, volume, block, dirty).
type Expected = (u32, u32, u64, bool);

/// The blocks [`make_store`] writes: volume 0 (`vm-a`) and volume 1 (`vm-b`), clean and dirty.
const BLOCKS: [Expected; 4] = [(0, 0, 0, false), (1, 0, 1, true), (2, 1, 5, false), (3, 1, 6, true)];

/// A store with [`BLOCKS`] persisted; closed cleanly, or left as after a
/// crash (metadata persisted, no clean-shutdown flag).
fn make_store(path: &Path, close_clean: bool) {
    let (store, restored) = FlashStore::open_or_create(path, STORE_BYTES, BLOCK).unwrap();
    assert!(restored.entries.is_empty());
    assert_eq!(store.register_volume("vm-a", 1 << 20).unwrap(), (0, false));
    assert_eq!(store.register_volume("vm-b", 1 << 20).unwrap(), (1, false));
    for (slot, volume, block, dirty) in BLOCKS {
        store.write(slot, volume, block, &pattern(volume, block), dirty).unwrap();
    }
    store.persist().unwrap();
    if close_clean {
        store.close_clean().unwrap();
    }
}

/// XORs `mask` into the byte at `offset`.
fn flip(path: &Path, offset: u64, mask: u8) {
    let file = std::fs::OpenOptions::new().read(true).write(true).open(path).unwrap();
    let mut byte = [0u8];
    file.read_exact_at(&mut byte, offset).unwrap();
    byte[0] ^= mask;
    file.write_all_at(&byte, offset).unwrap();
}

/// Byte offset of `slot`'s data in the test geometry.
fn data_offset(path: &Path, slot: u32) -> u64 {
    let (store, _) = FlashStore::open(&copy_of(path)).unwrap();
    store.layout().slot_offset(slot)
}

/// A copy of the store, for opening without touching the original.
fn copy_of(path: &Path) -> PathBuf {
    let copy = path.with_extension("copy");
    std::fs::copy(path, &copy).unwrap();
    copy
}

/// Opens the store and asserts it holds exactly `expected`, with its data.
fn assert_restores(path: &Path, expected: &[Expected]) {
    let (store, restored) = FlashStore::open(path).unwrap();
    let got: Vec<Expected> =
        restored.entries.iter().map(|&(slot, e)| (slot, e.volume, e.block, e.is_dirty())).collect();
    assert_eq!(got, expected);
    for &(slot, volume, block, _) in expected {
        let mut data = vec![0u8; BLOCK as usize];
        store.read(slot, 0, &mut data).unwrap();
        assert!(data == pattern(volume, block), "slot {slot} data");
    }
}

#[test]
fn an_undamaged_store_is_clean() {
    let dir = temp_dir("undamaged");
    let path = dir.join("flash.img");
    make_store(&path, true);
    let report = check(&path, false).unwrap();
    assert!(report.clean, "{report:?}");
    assert!(report.problems.is_empty() && report.warnings.is_empty(), "{report:?}");
    assert_eq!(report.superblock_used, Some(1));
    assert!(report.superblocks.iter().all(|s| s.valid));
    assert_eq!(report.clean_shutdown, Some(true));
    let s = report.slots;
    assert_eq!((s.clean, s.dirty, s.torn_dirty), (2, 2, 0));
    assert_eq!(s.empty, s.total - 4);
    let volumes: Vec<(&str, u64, u64)> =
        report.volumes.iter().map(|v| (v.name.as_str(), v.clean_blocks, v.dirty_blocks)).collect();
    assert_eq!(volumes, [("vm-a", 1, 1), ("vm-b", 1, 1)]);
    let geometry = report.geometry.unwrap();
    assert_eq!(geometry.block_size, BLOCK);
    assert!(geometry.end <= STORE_BYTES);
    // Nothing to repair: repair changes nothing.
    let before = std::fs::read(&path).unwrap();
    let repaired = check(&path, true).unwrap();
    assert!(repaired.clean && repaired.repairs.is_empty(), "{repaired:?}");
    assert!(std::fs::read(&path).unwrap() == before);
}

#[test]
fn a_damaged_superblock_copy_is_rewritten_from_the_other() {
    let dir = temp_dir("superblock");
    let path = dir.join("flash.img");
    make_store(&path, true);
    // Copy 1 holds the newest generation (closed cleanly); damage copy 0.
    flip(&path, 300, 0x40);
    let report = check(&path, false).unwrap();
    assert!(!report.clean);
    assert!(!report.superblocks[0].valid);
    assert_eq!(report.superblocks[0].error.as_deref(), Some("checksum mismatch"));
    assert!(report.superblocks[1].valid);
    assert_eq!(report.superblock_used, Some(1));
    assert_eq!(report.problems.len(), 1, "{report:?}");
    assert!(report.problems[0].what.contains("superblock copy 0"), "{:?}", report.problems);
    assert!(report.problems[0].repairable && !report.problems[0].repaired);

    let repaired = check(&path, true).unwrap();
    assert!(repaired.clean, "{repaired:?}");
    assert!(repaired.problems[0].repaired);
    assert!(repaired.repairs[0].contains("rewrote superblock copy 0 from copy 1"), "{:?}", repaired.repairs);
    let again = check(&path, false).unwrap();
    assert!(again.clean && again.problems.is_empty(), "{again:?}");
    assert!(again.superblocks.iter().all(|s| s.valid));
    // The repaired copy is one generation older, so the used copy stays.
    assert_eq!(again.superblocks[0].generation.unwrap() + 1, again.superblocks[1].generation.unwrap());
    assert_restores(&path, &BLOCKS);
}

#[test]
fn a_damaged_magic_in_copy_0_recovers_from_copy_1_instead_of_reformatting() {
    let dir = temp_dir("magic");
    let path = dir.join("flash.img");
    make_store(&path, true);
    flip(&path, 0, 0xff);
    let report = check(&path, false).unwrap();
    assert_eq!(report.superblocks[0].error.as_deref(), Some("no cloudcache magic"));
    // What the server does at start: must find the blocks, not format.
    let (_store, restored) = FlashStore::open_or_create(&path, STORE_BYTES, BLOCK).unwrap();
    assert_eq!(restored.entries.len(), BLOCKS.len());
}

#[test]
fn a_corrupt_slot_entry_is_reported_and_cleared() {
    let dir = temp_dir("entry");
    let path = dir.join("flash.img");
    make_store(&path, true);
    flip(&path, METADATA_OFFSET + 2 * ENTRY_BYTES + 5, 0x01);
    let report = check(&path, false).unwrap();
    assert!(!report.clean);
    assert_eq!(report.slots.corrupt_entries, 1);
    assert_eq!((report.slots.clean, report.slots.dirty), (1, 2));
    assert_eq!(report.damaged_slots.len(), 1);
    let damaged = report.damaged_slots[0];
    assert_eq!((damaged.slot, damaged.verdict, damaged.volume), (2, SlotVerdict::CorruptEntry, None));
    // Opening agrees with check.
    let (_, restored) = FlashStore::open(&copy_of(&path)).unwrap();
    assert_eq!(restored.report.corrupt_entries, 1);

    let repaired = check(&path, true).unwrap();
    assert!(repaired.clean, "{repaired:?}");
    assert!(repaired.repairs[0].contains("cleared 1 slot entries"), "{:?}", repaired.repairs);
    let again = check(&path, false).unwrap();
    assert!(again.clean && again.problems.is_empty(), "{again:?}");
    assert_eq!(again.slots.corrupt_entries, 0);
    assert_restores(&path, &[BLOCKS[0], BLOCKS[1], BLOCKS[3]]);
}

#[test]
fn after_a_crash_damaged_clean_data_is_dropped_and_torn_dirty_data_kept() {
    let dir = temp_dir("crash");
    let path = dir.join("flash.img");
    make_store(&path, false);
    flip(&path, data_offset(&path, 0) + 100, 0x08); // clean block of vm-a
    flip(&path, data_offset(&path, 3) + 4000, 0x80); // dirty block of vm-b
    let report = check(&path, false).unwrap();
    assert_eq!(report.clean_shutdown, Some(false));
    let s = report.slots;
    assert_eq!((s.checksum_dropped, s.torn_dirty, s.clean, s.dirty), (1, 1, 1, 2), "{s:?}");
    let vm_b = &report.volumes[1];
    assert_eq!((vm_b.clean_blocks, vm_b.dirty_blocks, vm_b.torn_dirty), (1, 1, 1));
    assert!(report.warnings.iter().any(|w| w.contains("not closed cleanly")), "{:?}", report.warnings);
    assert!(report.warnings.iter().any(|w| w.contains("1 dirty block(s)")), "{:?}", report.warnings);
    // A torn dirty block is kept (a warning); the dropped clean block is the problem.
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    let (_, restored) = FlashStore::open(&copy_of(&path)).unwrap();
    assert_eq!((restored.report.checksum_dropped, restored.report.torn_dirty), (1, 1));

    let repaired = check(&path, true).unwrap();
    assert!(repaired.clean, "{repaired:?}");
    let again = check(&path, false).unwrap();
    assert!(again.clean && again.problems.is_empty(), "{again:?}");
    assert_eq!((again.slots.checksum_dropped, again.slots.torn_dirty), (0, 1));
    let (_, restored) = FlashStore::open(&path).unwrap();
    let kept: Vec<u32> = restored.entries.iter().map(|&(slot, _)| slot).collect();
    assert_eq!(kept, [1, 2, 3]);
    assert_eq!(restored.report.torn_dirty, 1);
}

#[test]
fn damaged_clean_data_in_a_cleanly_closed_store_is_caught_by_check() {
    let dir = temp_dir("clean-data");
    let path = dir.join("flash.img");
    make_store(&path, true);
    flip(&path, data_offset(&path, 2) + 7, 0x10);
    // Opening a cleanly closed store trusts the data: it would keep the block.
    let (_, restored) = FlashStore::open(&copy_of(&path)).unwrap();
    assert_eq!(restored.entries.len(), 4);
    let report = check(&path, false).unwrap();
    assert_eq!(report.slots.checksum_dropped, 1);
    assert!(report.problems[0].what.contains("would serve"), "{:?}", report.problems);
    assert!(check(&path, true).unwrap().clean);
    assert_restores(&path, &[BLOCKS[0], BLOCKS[1], BLOCKS[3]]);
}

#[test]
fn unknown_volumes_and_stale_duplicates_are_cleared() {
    let dir = temp_dir("entries");
    let path = dir.join("flash.img");
    make_store(&path, false);
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    let data_crc = crc32fast::hash(&pattern(0, 0));
    let put = |slot: u64, entry: SlotEntry| {
        let mut bytes = [0u8; ENTRY_BYTES as usize];
        entry.encode_into(&mut bytes);
        file.write_all_at(&bytes, METADATA_OFFSET + slot * ENTRY_BYTES).unwrap();
    };
    // Volume 9 is in no volume table.
    put(10, SlotEntry { volume: 9, block: 3, seq: 50, flags: ENTRY_VALID, data_crc });
    // An older entry (lower seq) of vm-a block 0, which slot 0 holds.
    put(11, SlotEntry { volume: 0, block: 0, seq: 0, flags: ENTRY_VALID | ENTRY_DIRTY, data_crc });
    let report = check(&path, false).unwrap();
    let s = report.slots;
    assert_eq!((s.unknown_volume, s.stale_duplicates, s.clean, s.dirty), (1, 1, 2, 2), "{s:?}");
    let verdicts: Vec<(u32, SlotVerdict)> =
        report.damaged_slots.iter().map(|d| (d.slot, d.verdict)).collect();
    assert_eq!(verdicts, [(10, SlotVerdict::UnknownVolume), (11, SlotVerdict::StaleDuplicate)]);
    let (_, restored) = FlashStore::open(&copy_of(&path)).unwrap();
    assert_eq!((restored.report.unknown_volume, restored.report.stale_duplicates), (1, 1));
    let repaired = check(&path, true).unwrap();
    assert!(repaired.clean, "{repaired:?}");
    assert!(check(&path, false).unwrap().problems.is_empty());
    assert_restores(&path, &BLOCKS);
}

/// Damages both superblock copies past their magic.
fn ruin_superblocks(path: &Path) {
    flip(path, 100, 0x01);
    flip(path, SUPERBLOCK_BYTES + 100, 0x01);
}

#[test]
fn both_superblocks_damaged_is_a_clear_unrepairable_error() {
    let dir = temp_dir("both");
    let path = dir.join("flash.img");
    make_store(&path, true);
    ruin_superblocks(&path);
    let before = std::fs::read(&path).unwrap();
    for repair in [false, true] {
        let report = check(&path, repair).unwrap();
        assert!(!report.clean);
        assert_eq!(report.superblock_used, None);
        assert!(report.geometry.is_none());
        assert_eq!(report.problems.len(), 1);
        let what = &report.problems[0].what;
        assert!(what.contains("neither superblock copy is valid"), "{what}");
        assert!(what.contains("checksum mismatch"), "{what}");
        assert!(what.contains("remove the file"), "{what}");
        assert!(!report.problems[0].repairable && !report.problems[0].repaired);
        assert!(report.repairs.is_empty());
    }
    assert!(std::fs::read(&path).unwrap() == before, "repair changed a store it cannot repair");
    // Opening (as the server does at start) is a clear error, never a re-format.
    for result in [
        FlashStore::open(&path).map(|_| ()),
        FlashStore::open_or_create(&path, STORE_BYTES, BLOCK).map(|_| ()),
    ] {
        match result {
            Err(StoreError::Corrupt { first, second, .. }) => {
                assert_eq!((first.as_str(), second.as_str()), ("checksum mismatch", "checksum mismatch"))
            }
            other => panic!("expected a corrupt-metadata error, got {other:?}"),
        }
    }
    assert!(std::fs::read(&path).unwrap() == before);
}

#[test]
fn a_truncated_store_is_extended_and_its_lost_blocks_dropped() {
    let dir = temp_dir("truncated");
    let path = dir.join("flash.img");
    make_store(&path, false);
    // Keep slots 0 and 1; slots 2 (clean) and 3 (dirty) lose their data.
    let end_of_slot_1 = data_offset(&path, 2);
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(end_of_slot_1).unwrap();
    let report = check(&path, false).unwrap();
    let s = report.slots;
    assert_eq!((s.checksum_dropped, s.torn_dirty), (1, 1), "{s:?}");
    assert!(report.problems.iter().any(|p| p.what.contains("data region ends at byte") && p.repairable));
    let repaired = check(&path, true).unwrap();
    assert!(repaired.clean, "{repaired:?}");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), repaired.geometry.unwrap().end);
    assert!(check(&path, false).unwrap().problems.is_empty());
    // Cut into the metadata region: beyond repair.
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(METADATA_OFFSET + 100).unwrap();
    let report = check(&path, true).unwrap();
    assert!(!report.clean);
    let problem = report.problems.iter().find(|p| p.what.contains("slot metadata ends at byte")).unwrap();
    assert!(!problem.repairable && !problem.repaired);
}

#[test]
fn a_file_that_is_not_a_store_is_named_so() {
    let dir = temp_dir("not-a-store");
    let path = dir.join("disk.img");
    std::fs::write(&path, vec![7u8; 200_000]).unwrap();
    let report = check(&path, false).unwrap();
    assert!(!report.clean);
    assert!(report.problems[0].what.contains("not a cloudcache flash store"), "{:?}", report.problems);
    std::fs::write(&path, b"short").unwrap();
    let report = check(&path, false).unwrap();
    assert!(report.problems[0].what.contains("the file ends before this copy"), "{:?}", report.problems);
    assert!(matches!(check(&dir.join("missing.img"), false), Err(StoreError::Io { .. })));
    let err = check(&dir, false).unwrap_err().to_string();
    assert!(err.contains("is a directory"), "{err}");
}

#[test]
fn a_server_over_a_ruined_store_passes_through_to_the_backend() {
    let dir = temp_dir("passthrough");
    let flash = dir.join("flash.img");
    make_store(&flash, true);
    ruin_superblocks(&flash);
    let flash_before = std::fs::read(&flash).unwrap();
    let disk = dir.join("disk.img");
    let disk_bytes: Vec<u8> = (0..(1u32 << 20)).map(|i| (i % 251) as u8).collect();
    std::fs::write(&disk, &disk_bytes).unwrap();
    let config = ServerConfig {
        listen: vec![ListenAddr::Unix(dir.join("nbd.sock"))],
        flash: flash.clone(),
        flash_size: STORE_BYTES,
        block_size: BLOCK,
        workers: 2,
        volumes: vec![VolumeConfig {
            name: "vm-a".into(),
            backend: disk.display().to_string(),
            write_policy: WritePolicy::WriteBack,
        }],
        ..ServerConfig::default()
    };
    let server = Server::start(config).unwrap();
    assert!(server.store_error().unwrap().contains("metadata is corrupt"), "{:?}", server.store_error());
    assert!(server.core().store().is_none());
    let volume = server.exports()[0].volume.clone();
    let mut scratch = Scratch::default();
    // The store's vm-a block 0 held other data: the read must come from the disk.
    let read = server.core().read(&volume, 0, 3 * BLOCK + 17, &mut scratch).unwrap().to_vec();
    assert!(read == disk_bytes[..(3 * BLOCK + 17) as usize], "read did not come from the backend");
    let written = vec![0xa5u8; 5000];
    server.core().write(&volume, 8192 + 3, &written, true, &mut scratch).unwrap();
    let on_disk = std::fs::read(&disk).unwrap();
    assert!(on_disk[8195..8195 + 5000] == written[..], "write did not reach the backend");
    assert!(on_disk[..8195] == disk_bytes[..8195] && on_disk[13195..] == disk_bytes[13195..]);
    let read = server.core().read(&volume, 8192, 6000, &mut scratch).unwrap().to_vec();
    assert!(read == on_disk[8192..14192]);
    server.shutdown().unwrap();
    // The ruined store is left as it was, for check or removal.
    assert!(std::fs::read(&flash).unwrap() == flash_before);
}

// ---- fuzzing ---------------------------------------------------------------

/// A valid superblock's bytes, to mutate.
fn superblock_bytes() -> Vec<u8> {
    let dir = temp_dir("superblock-template");
    let path = dir.join("flash.img");
    make_store(&path, true);
    let mut bytes = vec![0u8; SUPERBLOCK_BYTES as usize];
    std::fs::File::open(&path).unwrap().read_exact_at(&mut bytes, SUPERBLOCK_BYTES).unwrap();
    bytes
}

/// Sets a superblock copy's checksum so it matches its bytes.
fn fix_superblock_crc(bytes: &mut [u8]) {
    bytes[12..16].fill(0);
    let crc = crc32fast::hash(bytes);
    bytes[12..16].copy_from_slice(&crc.to_le_bytes());
}

/// A decoded superblock encodes to bytes that decode to it again.
fn assert_superblock_round_trip(bytes: &[u8]) {
    if let Ok(sb) = Superblock::decode(bytes) {
        assert_eq!(Superblock::decode(&sb.encode()), Ok(sb));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn superblock_decode_takes_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..4096)) {
        assert_superblock_round_trip(&bytes);
    }

    /// Arbitrary header fields and volume records behind a matching
    /// checksum, so decoding gets past the checksum to the field checks.
    #[test]
    fn superblock_decode_checks_every_field(
        writes in prop::collection::vec((8usize..1024, any::<u64>()), 1..12),
        count in prop_oneof![Just(None), (0u32..300).prop_map(Some)],
    ) {
        let mut bytes = superblock_bytes_cached();
        for (at, value) in writes {
            bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
        }
        if let Some(count) = count {
            bytes[56..60].copy_from_slice(&count.to_le_bytes());
        }
        fix_superblock_crc(&mut bytes);
        assert_superblock_round_trip(&bytes);
    }

    #[test]
    fn slot_entry_decode_takes_any_bytes(mut bytes in any::<[u8; 32]>(), fix_crc in any::<bool>()) {
        if fix_crc {
            let crc = crc32fast::hash(&bytes[..28]);
            bytes[28..].copy_from_slice(&crc.to_le_bytes());
        }
        match SlotEntry::decode(&bytes) {
            DecodedEntry::Entry(entry) => {
                prop_assert!(entry.is_valid());
                let mut again = [0u8; 32];
                entry.encode_into(&mut again);
                prop_assert_eq!(again, bytes);
            }
            DecodedEntry::Empty => prop_assert!(bytes.iter().all(|&b| b == 0)),
            DecodedEntry::Corrupt => {}
        }
    }
}

/// [`superblock_bytes`], made once per test binary.
fn superblock_bytes_cached() -> Vec<u8> {
    static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BYTES.get_or_init(superblock_bytes).clone()
}

/// Two small stores (crash-style and cleanly closed) with more blocks than
/// [`make_store`], made once: (file bytes, data offset, blocks written).
fn fuzz_templates() -> &'static [(Vec<u8>, u64); 2] {
    static TEMPLATES: std::sync::OnceLock<[(Vec<u8>, u64); 2]> = std::sync::OnceLock::new();
    TEMPLATES.get_or_init(|| {
        let dir = temp_dir("fuzz-templates");
        [false, true].map(|close_clean| {
            let path = dir.join(format!("flash-{close_clean}.img"));
            let (store, _) = FlashStore::open_or_create(&path, STORE_BYTES, BLOCK).unwrap();
            store.register_volume("vm-a", 1 << 20).unwrap();
            store.register_volume("vm-b", 1 << 20).unwrap();
            for slot in 0..48u32 {
                let (volume, block) = (slot % 2, slot as u64 / 2);
                store.write(slot, volume, block, &pattern(volume, block), slot % 3 == 0).unwrap();
            }
            // Rewrite a few blocks into other slots: duplicates by seq.
            for slot in 48..52u32 {
                let block = (slot - 48) as u64;
                store.write(slot, 0, block, &pattern(0, block), false).unwrap();
            }
            store.persist().unwrap();
            if close_clean {
                store.close_clean().unwrap();
            }
            let data_offset = store.layout().data_offset;
            drop(store);
            (std::fs::read(&path).unwrap(), data_offset)
        })
    })
}

/// A byte to damage: in a superblock copy, the slot metadata, or block data.
fn damage_offset() -> impl Strategy<Value = (u8, u64)> {
    (0u8..3, any::<u64>())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    /// Random byte flips never make check or open panic; after a crash,
    /// open never returns a clean block whose data fails its checksum; any
    /// such block a cleanly closed store would serve, check reports; and
    /// after repair the store checks clean (unless beyond repair) and opens
    /// without one.
    #[test]
    fn check_and_open_survive_random_damage(
        close_clean in any::<bool>(),
        flips in prop::collection::vec((damage_offset(), 1u8..=255), 1..10),
    ) {
        let (template, data_offset) = &fuzz_templates()[close_clean as usize];
        let dir = temp_dir("fuzz-case");
        let path = dir.join("flash.img");
        let mut bytes = template.clone();
        let metadata_end = METADATA_OFFSET + 4096;
        for ((region, at), mask) in flips {
            let offset = match region {
                0 => at % METADATA_OFFSET,
                1 => METADATA_OFFSET + at % (metadata_end - METADATA_OFFSET),
                _ => data_offset + at % (52 * BLOCK),
            };
            bytes[offset as usize] ^= mask;
        }
        std::fs::write(&path, &bytes).unwrap();

        let report = check(&path, false).unwrap();
        let bad_clean_blocks = |path: &Path| -> Option<u64> {
            let (store, restored) = FlashStore::open(path).ok()?;
            let mut data = vec![0u8; BLOCK as usize];
            let mut bad = 0;
            for &(slot, entry) in &restored.entries {
                store.read(slot, 0, &mut data).unwrap();
                if !entry.is_dirty() && crc32fast::hash(&data) != entry.data_crc {
                    bad += 1;
                }
            }
            Some(bad)
        };
        let opened = bad_clean_blocks(&copy_of(&path));
        prop_assert_eq!(opened.is_some(), report.superblock_used.is_some());
        if let Some(bad) = opened {
            if report.clean_shutdown == Some(false) {
                prop_assert_eq!(bad, 0);
            }
            prop_assert!(report.slots.checksum_dropped >= bad);
            prop_assert_eq!(report.clean, report.problems.is_empty());
            if bad > 0 {
                prop_assert!(!report.clean);
            }
        }

        let repaired = check(&path, true).unwrap();
        let again = check(&path, false).unwrap();
        prop_assert_eq!(again.clean, repaired.clean);
        if repaired.clean {
            prop_assert!(again.problems.is_empty(), "{:?}", again.problems);
            prop_assert_eq!(bad_clean_blocks(&path), Some(0));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn entries_carry_the_verdict_names_json_uses() {
    for verdict in [
        SlotVerdict::Kept,
        SlotVerdict::TornDirty,
        SlotVerdict::CorruptEntry,
        SlotVerdict::UnknownVolume,
        SlotVerdict::StaleDuplicate,
        SlotVerdict::ChecksumDropped,
    ] {
        assert_eq!(serde_json::to_value(verdict).unwrap(), verdict.name());
    }
}
