//! The flash store's on-disk format (all integers little-endian).
//!
//! ```text
//! [0, 64 KiB)        superblock copy 0  \  written alternately (the newer
//! [64 KiB, 128 KiB)  superblock copy 1  /  valid generation wins)
//! [128 KiB, ...)     slot metadata: one 32-byte entry per slot
//! [data_offset, ...) cache blocks, slot i at data_offset + i * block_size
//! ```
//!
//! A superblock copy: magic `CCFLASH1`, format version, CRC-32 of the whole
//! 64 KiB copy (computed with the field zeroed), generation, block size,
//! flags (`CLEAN_SHUTDOWN`), slot count, metadata and data offsets, and the
//! volume table (id, disk size, name) that gives metadata entries' volume
//! ids their meaning across restarts.
//!
//! A slot entry: block number u64, sequence number u64, volume id u32,
//! flags u32 (`VALID`, `DIRTY`), CRC-32 of the block's data, CRC-32 of the
//! entry's first 28 bytes. An all-zero entry is an empty slot.

use std::fmt;

/// Bytes of one superblock copy.
pub const SUPERBLOCK_BYTES: u64 = 64 << 10;
/// Where slot metadata starts.
pub const METADATA_OFFSET: u64 = 2 * SUPERBLOCK_BYTES;
/// Bytes of one slot entry.
pub const ENTRY_BYTES: u64 = 32;
/// Metadata is written in pages of this size.
pub const PAGE_BYTES: u64 = 4096;
/// Entries per metadata page.
pub const ENTRIES_PER_PAGE: u64 = PAGE_BYTES / ENTRY_BYTES;
/// The data region starts on this boundary.
const DATA_ALIGNMENT: u64 = 1 << 20;
/// Superblock magic.
pub const MAGIC: [u8; 8] = *b"CCFLASH1";
/// Format version written and understood.
pub const FORMAT_VERSION: u32 = 1;
/// Superblock flag: the store was closed cleanly (metadata complete).
pub const FLAG_CLEAN_SHUTDOWN: u32 = 1;
/// Slot entry flag: the slot holds the block.
pub const ENTRY_VALID: u32 = 1;
/// Slot entry flag: the block is newer than the backend's copy.
pub const ENTRY_DIRTY: u32 = 2;
/// Where the volume table starts inside a superblock copy.
const VOLUME_TABLE_OFFSET: usize = 256;
/// Bytes per volume table record.
const VOLUME_RECORD_BYTES: usize = 256;
/// Longest volume name, in bytes.
pub const MAX_VOLUME_NAME: usize = VOLUME_RECORD_BYTES - 16;
/// Most volumes one store knows.
pub const MAX_VOLUMES: usize = (SUPERBLOCK_BYTES as usize - VOLUME_TABLE_OFFSET) / VOLUME_RECORD_BYTES;

/// Where things are in a store of a given size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Cache block size in bytes.
    pub block_size: u64,
    /// Number of cache blocks.
    pub slot_count: u64,
    /// Byte offset of the data region.
    pub data_offset: u64,
}

impl Layout {
    /// The layout that fits a store of `total_bytes` with `block_size`
    /// blocks, or `None` if not even one block fits.
    pub fn for_size(total_bytes: u64, block_size: u64) -> Option<Layout> {
        // Each slot costs its block plus its entry; the entries' pages and
        // the data alignment are paid for out of the same budget.
        let usable = total_bytes.checked_sub(METADATA_OFFSET + DATA_ALIGNMENT)?;
        let mut slot_count = usable / (block_size + ENTRY_BYTES);
        loop {
            let layout = Layout::with_slots(slot_count, block_size);
            if layout.end() <= total_bytes || slot_count == 0 {
                return (slot_count > 0).then_some(layout);
            }
            slot_count -= 1;
        }
    }

    /// The layout of a store with exactly `slot_count` blocks.
    pub fn with_slots(slot_count: u64, block_size: u64) -> Layout {
        let metadata_bytes = (slot_count * ENTRY_BYTES).div_ceil(PAGE_BYTES) * PAGE_BYTES;
        let data_offset = (METADATA_OFFSET + metadata_bytes).div_ceil(DATA_ALIGNMENT) * DATA_ALIGNMENT;
        Layout { block_size, slot_count, data_offset }
    }

    /// Bytes of the metadata region.
    pub fn metadata_bytes(&self) -> u64 {
        (self.slot_count * ENTRY_BYTES).div_ceil(PAGE_BYTES) * PAGE_BYTES
    }

    /// One past the last byte the store uses.
    pub fn end(&self) -> u64 {
        self.data_offset + self.slot_count * self.block_size
    }

    /// Byte offset of `slot`'s data.
    pub fn slot_offset(&self, slot: u32) -> u64 {
        self.data_offset + slot as u64 * self.block_size
    }
}

/// One volume the store has seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolumeRecord {
    /// The id slot entries carry.
    pub id: u32,
    /// The disk's size when it was last attached.
    pub size: u64,
    /// The export name.
    pub name: String,
}

/// A decoded superblock copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Superblock {
    /// Incremented on every superblock write.
    pub generation: u64,
    /// `FLAG_*` bits.
    pub flags: u32,
    /// The store's geometry.
    pub layout: Layout,
    /// Volumes, by id.
    pub volumes: Vec<VolumeRecord>,
}

/// Why a superblock copy was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SuperblockError {
    /// No cloudcache magic: not a store (or never formatted).
    NoMagic,
    /// A format version this build does not read.
    Version(u32),
    /// The checksum does not match.
    Checksum,
    /// A field is out of range.
    Field(&'static str),
}

impl fmt::Display for SuperblockError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SuperblockError::NoMagic => write!(f, "no cloudcache magic"),
            SuperblockError::Version(v) => {
                write!(f, "format version {v} (this build reads {FORMAT_VERSION})")
            }
            SuperblockError::Checksum => write!(f, "checksum mismatch"),
            SuperblockError::Field(name) => write!(f, "field {name} out of range"),
        }
    }
}

fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl Superblock {
    /// Encodes into one 64 KiB copy.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = vec![0u8; SUPERBLOCK_BYTES as usize];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
        b[16..24].copy_from_slice(&self.generation.to_le_bytes());
        b[24..28].copy_from_slice(&(self.layout.block_size as u32).to_le_bytes());
        b[28..32].copy_from_slice(&self.flags.to_le_bytes());
        b[32..40].copy_from_slice(&self.layout.slot_count.to_le_bytes());
        b[40..48].copy_from_slice(&METADATA_OFFSET.to_le_bytes());
        b[48..56].copy_from_slice(&self.layout.data_offset.to_le_bytes());
        b[56..60].copy_from_slice(&(self.volumes.len() as u32).to_le_bytes());
        for (i, v) in self.volumes.iter().enumerate() {
            let at = VOLUME_TABLE_OFFSET + i * VOLUME_RECORD_BYTES;
            b[at..at + 4].copy_from_slice(&v.id.to_le_bytes());
            b[at + 4..at + 8].copy_from_slice(&(v.name.len() as u32).to_le_bytes());
            b[at + 8..at + 16].copy_from_slice(&v.size.to_le_bytes());
            b[at + 16..at + 16 + v.name.len()].copy_from_slice(v.name.as_bytes());
        }
        let crc = crc32fast::hash(&b);
        b[12..16].copy_from_slice(&crc.to_le_bytes());
        b
    }

    /// Decodes and validates one copy.
    pub fn decode(b: &[u8]) -> Result<Superblock, SuperblockError> {
        if b.len() < SUPERBLOCK_BYTES as usize || b[0..8] != MAGIC {
            return Err(SuperblockError::NoMagic);
        }
        let version = le_u32(b, 8);
        if version != FORMAT_VERSION {
            return Err(SuperblockError::Version(version));
        }
        let stored_crc = le_u32(b, 12);
        let mut copy = b[..SUPERBLOCK_BYTES as usize].to_vec();
        copy[12..16].fill(0);
        if crc32fast::hash(&copy) != stored_crc {
            return Err(SuperblockError::Checksum);
        }
        let block_size = le_u32(b, 24) as u64;
        if !block_size.is_power_of_two() || !(512..=1 << 20).contains(&block_size) {
            return Err(SuperblockError::Field("block_size"));
        }
        let slot_count = le_u64(b, 32);
        if slot_count == 0 || slot_count > u32::MAX as u64 {
            return Err(SuperblockError::Field("slot_count"));
        }
        if le_u64(b, 40) != METADATA_OFFSET {
            return Err(SuperblockError::Field("metadata_offset"));
        }
        let layout = Layout::with_slots(slot_count, block_size);
        if le_u64(b, 48) != layout.data_offset {
            return Err(SuperblockError::Field("data_offset"));
        }
        let count = le_u32(b, 56) as usize;
        if count > MAX_VOLUMES {
            return Err(SuperblockError::Field("volume_count"));
        }
        let mut volumes = Vec::with_capacity(count);
        for i in 0..count {
            let at = VOLUME_TABLE_OFFSET + i * VOLUME_RECORD_BYTES;
            let name_len = le_u32(b, at + 4) as usize;
            if name_len > MAX_VOLUME_NAME {
                return Err(SuperblockError::Field("volume name length"));
            }
            let name = std::str::from_utf8(&b[at + 16..at + 16 + name_len])
                .map_err(|_| SuperblockError::Field("volume name"))?
                .to_string();
            volumes.push(VolumeRecord { id: le_u32(b, at), size: le_u64(b, at + 8), name });
        }
        Ok(Superblock { generation: le_u64(b, 16), flags: le_u32(b, 28), layout, volumes })
    }
}

/// A decoded slot entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SlotEntry {
    /// Volume id (see the superblock's volume table).
    pub volume: u32,
    /// Block number within the volume.
    pub block: u64,
    /// Order of writes: on restart, of two entries for one block the higher
    /// sequence number wins.
    pub seq: u64,
    /// `ENTRY_*` bits.
    pub flags: u32,
    /// CRC-32 of the block's data as written.
    pub data_crc: u32,
}

/// What an entry's bytes say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodedEntry {
    /// All zeros: the slot was never used or was invalidated.
    Empty,
    /// A valid entry.
    Entry(SlotEntry),
    /// The entry's own checksum does not match (a torn or corrupt page).
    Corrupt,
}

impl SlotEntry {
    /// Whether the slot holds a block.
    pub fn is_valid(&self) -> bool {
        self.flags & ENTRY_VALID != 0
    }

    /// Whether the block is dirty.
    pub fn is_dirty(&self) -> bool {
        self.flags & ENTRY_DIRTY != 0
    }

    /// Writes the entry's 32 bytes.
    pub fn encode_into(&self, b: &mut [u8]) {
        if !self.is_valid() {
            b[..ENTRY_BYTES as usize].fill(0);
            return;
        }
        b[0..8].copy_from_slice(&self.block.to_le_bytes());
        b[8..16].copy_from_slice(&self.seq.to_le_bytes());
        b[16..20].copy_from_slice(&self.volume.to_le_bytes());
        b[20..24].copy_from_slice(&self.flags.to_le_bytes());
        b[24..28].copy_from_slice(&self.data_crc.to_le_bytes());
        let crc = crc32fast::hash(&b[0..28]);
        b[28..32].copy_from_slice(&crc.to_le_bytes());
    }

    /// Reads an entry's 32 bytes.
    pub fn decode(b: &[u8]) -> DecodedEntry {
        let b = &b[..ENTRY_BYTES as usize];
        if b.iter().all(|&x| x == 0) {
            return DecodedEntry::Empty;
        }
        if crc32fast::hash(&b[0..28]) != le_u32(b, 28) {
            return DecodedEntry::Corrupt;
        }
        let entry = SlotEntry {
            block: le_u64(b, 0),
            seq: le_u64(b, 8),
            volume: le_u32(b, 16),
            flags: le_u32(b, 20),
            data_crc: le_u32(b, 24),
        };
        if !entry.is_valid() {
            return DecodedEntry::Corrupt;
        }
        DecodedEntry::Entry(entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_fits_the_size() {
        let layout = Layout::for_size(1 << 30, 4096).unwrap();
        assert!(layout.end() <= 1 << 30);
        // 99 % of the space holds blocks (32 B of metadata per 4 KiB block).
        assert!(layout.slot_count * 4096 > (1 << 30) / 100 * 99, "{layout:?}");
        assert_eq!(layout.data_offset % DATA_ALIGNMENT, 0);
        assert!(layout.data_offset >= METADATA_OFFSET + layout.metadata_bytes());
        assert_eq!(Layout::for_size(1 << 20, 4096), None);
    }

    #[test]
    fn superblock_round_trip_and_damage() {
        let sb = Superblock {
            generation: 7,
            flags: FLAG_CLEAN_SHUTDOWN,
            layout: Layout::with_slots(1000, 4096),
            volumes: vec![VolumeRecord { id: 0, size: 1 << 30, name: "vm-1".into() }],
        };
        let mut bytes = sb.encode();
        assert_eq!(Superblock::decode(&bytes), Ok(sb));
        bytes[300] ^= 1;
        assert_eq!(Superblock::decode(&bytes), Err(SuperblockError::Checksum));
        assert_eq!(Superblock::decode(&[0u8; 65536]), Err(SuperblockError::NoMagic));
    }

    #[test]
    fn entry_round_trip_and_damage() {
        let e = SlotEntry { volume: 3, block: 99, seq: 12, flags: ENTRY_VALID | ENTRY_DIRTY, data_crc: 5 };
        let mut b = [0u8; 32];
        e.encode_into(&mut b);
        assert_eq!(SlotEntry::decode(&b), DecodedEntry::Entry(e));
        b[3] ^= 0x10;
        assert_eq!(SlotEntry::decode(&b), DecodedEntry::Corrupt);
        SlotEntry::default().encode_into(&mut b);
        assert_eq!(SlotEntry::decode(&b), DecodedEntry::Empty);
    }
}
