//! The flash store: cache blocks and their crash-consistent metadata in one
//! file or block device (format in [`layout`]).
//!
//! Metadata lives in memory and mirrors the engine's view; [`FlashStore::persist`]
//! makes it durable in an order that keeps every persisted entry truthful:
//! snapshot the changed pages, sync the device (the data those entries
//! describe was written before the snapshot, so it is now durable), write
//! the pages, sync again. So a persisted entry never describes data that did
//! not reach the device. What happened after the last persist is sorted out
//! on restart: clean blocks whose data no longer matches their checksum are
//! dropped, and of two entries for one block the higher sequence number
//! wins. The driver keeps the other half of the contract: a slot whose
//! *persisted* entry says dirty is not reused before that entry is
//! persisted as invalid ([`FlashStore::persisted_dirty`]).

pub mod check;
pub mod layout;
mod recover;

pub use check::{check, CheckReport};
pub use layout::{Layout, SlotEntry, Superblock, VolumeRecord};
pub use recover::{RecoveryReport, Restored, SlotVerdict};

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use layout::{
    ENTRIES_PER_PAGE, ENTRY_BYTES, ENTRY_DIRTY, ENTRY_VALID, FLAG_CLEAN_SHUTDOWN, MAX_VOLUMES,
    MAX_VOLUME_NAME, METADATA_OFFSET, PAGE_BYTES, SUPERBLOCK_BYTES,
};

/// Errors opening or formatting a store, each naming the file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// An I/O error on the store.
    #[error("flash store {path}: {source}")]
    Io {
        /// The store.
        path: PathBuf,
        /// What failed.
        source: io::Error,
    },
    /// Neither superblock copy is usable.
    #[error("flash store {path}: metadata is corrupt (superblock 0: {first}; superblock 1: {second}); run `cloudcache check {path}` for details, or remove the file to start cold")]
    Corrupt {
        /// The store.
        path: PathBuf,
        /// Why copy 0 was rejected.
        first: String,
        /// Why copy 1 was rejected.
        second: String,
    },
    /// Another process (a running server) has the store open.
    #[error("flash store {path} is in use by another process (a running cloudcache serve?)")]
    InUse {
        /// The store.
        path: PathBuf,
    },
    /// The store exists with another geometry than asked for.
    #[error("flash store {path}: {what}")]
    Mismatch {
        /// The store.
        path: PathBuf,
        /// What differs.
        what: String,
    },
}

/// Metadata kept in memory, written in pages.
struct MetaTable {
    /// The metadata region's bytes as they should be on flash.
    bytes: Vec<u8>,
    /// Pages changed since the last snapshot.
    changed: Vec<bool>,
    changed_list: Vec<u32>,
    /// Per slot: the persisted entry says dirty.
    persisted_dirty: Vec<bool>,
}

impl MetaTable {
    fn entry(&self, slot: u32) -> Option<SlotEntry> {
        let at = slot as usize * ENTRY_BYTES as usize;
        match SlotEntry::decode(&self.bytes[at..at + ENTRY_BYTES as usize]) {
            layout::DecodedEntry::Entry(e) => Some(e),
            _ => None,
        }
    }

    fn set(&mut self, slot: u32, entry: SlotEntry) {
        let at = slot as usize * ENTRY_BYTES as usize;
        entry.encode_into(&mut self.bytes[at..at + ENTRY_BYTES as usize]);
        let page = (slot as u64 / ENTRIES_PER_PAGE) as usize;
        if !self.changed[page] {
            self.changed[page] = true;
            self.changed_list.push(page as u32);
        }
    }
}

/// A cache device: blocks plus metadata.
pub struct FlashStore {
    file: File,
    path: PathBuf,
    layout: Layout,
    meta: Mutex<MetaTable>,
    next_seq: AtomicU64,
    /// Serialises persists and superblock writes.
    persist_lock: Mutex<SuperState>,
}

struct SuperState {
    superblock: Superblock,
}

impl FlashStore {
    /// Opens the store at `path`, formatting it with `size` bytes of
    /// `block_size` blocks if it does not exist or is empty. An existing
    /// store keeps its geometry (a different `block_size` is an error; a
    /// different size is reported in the log and ignored). Returns the blocks
    /// it found still valid.
    pub fn open_or_create(
        path: &Path,
        size: u64,
        block_size: u64,
    ) -> Result<(FlashStore, Restored), StoreError> {
        let io_err = |source: io::Error| StoreError::Io { path: path.to_path_buf(), source };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io_err)?;
        lock_exclusive(&file, path)?;
        let existing = file.metadata().map_err(io_err)?.len();
        let is_block_device = !file.metadata().map_err(io_err)?.is_file();
        // Either copy's magic marks a store: a damaged copy 0 must lead to
        // recovery from copy 1 (or a clear error), never to a re-format.
        let has_magic = |copy: u64| {
            let mut head = [0u8; 8];
            file.read_exact_at(&mut head, copy * SUPERBLOCK_BYTES).is_ok() && head == layout::MAGIC
        };
        let formatted = (existing > 0 || is_block_device) && (has_magic(0) || has_magic(1));
        if !formatted {
            return FlashStore::format(file, path, size, block_size)
                .map(|store| (store, Restored::default()));
        }
        let (store, restored) = FlashStore::open_existing(file, path)?;
        if store.layout.block_size != block_size {
            return Err(StoreError::Mismatch {
                path: path.to_path_buf(),
                what: format!(
                    "was formatted with {} B blocks, not {block_size} B; remove it to re-format",
                    store.layout.block_size
                ),
            });
        }
        Ok((store, restored))
    }

    /// Opens an existing store, recovering its metadata.
    pub fn open(path: &Path) -> Result<(FlashStore, Restored), StoreError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|source| StoreError::Io { path: path.to_path_buf(), source })?;
        lock_exclusive(&file, path)?;
        FlashStore::open_existing(file, path)
    }

    fn format(file: File, path: &Path, size: u64, block_size: u64) -> Result<FlashStore, StoreError> {
        let io_err = |source: io::Error| StoreError::Io { path: path.to_path_buf(), source };
        let layout = Layout::for_size(size, block_size).ok_or_else(|| StoreError::Mismatch {
            path: path.to_path_buf(),
            what: format!("{size} bytes is too small for a flash store (at least 2 MiB)"),
        })?;
        if file.metadata().map_err(io_err)?.is_file() {
            file.set_len(0).map_err(io_err)?;
            // Reserve the space now, so a full file system is a clear error
            // at start rather than a failed write under load.
            reserve(&file, layout.end()).map_err(|e| {
                io_err(io::Error::new(e.kind(), format!("cannot reserve {} bytes: {e}", layout.end())))
            })?;
        }
        let metadata = vec![0u8; layout.metadata_bytes() as usize];
        file.write_all_at(&metadata, METADATA_OFFSET).map_err(io_err)?;
        let store = FlashStore::assemble(
            file,
            path,
            layout,
            metadata,
            1,
            Superblock { generation: 0, flags: 0, layout, volumes: Vec::new() },
        );
        // Both copies, so a torn first update still leaves a valid one.
        store.write_superblock(0).map_err(io_err)?;
        store.write_superblock(0).map_err(io_err)?;
        Ok(store)
    }

    fn open_existing(file: File, path: &Path) -> Result<(FlashStore, Restored), StoreError> {
        let io_err = |source: io::Error| StoreError::Io { path: path.to_path_buf(), source };
        let superblock = read_superblock(&file, path)?;
        let layout = superblock.layout;
        let mut metadata = vec![0u8; layout.metadata_bytes() as usize];
        file.read_exact_at(&mut metadata, METADATA_OFFSET).map_err(io_err)?;
        let clean = superblock.flags & FLAG_CLEAN_SHUTDOWN != 0;
        let known: Vec<u32> = superblock.volumes.iter().map(|v| v.id).collect();
        let restored = recover::recover(&file, &layout, &mut metadata, clean, &known).map_err(io_err)?;
        let next_seq = restored.max_seq + 1;
        let store = FlashStore::assemble(file, path, layout, metadata, next_seq, superblock);
        {
            let mut meta = store.meta.lock().unwrap();
            for &(slot, entry) in &restored.entries {
                meta.persisted_dirty[slot as usize] = entry.is_dirty();
            }
            // Recovery may have cleared entries: those pages must be rewritten.
            for page in restored.rewritten_pages.iter().copied() {
                if !meta.changed[page as usize] {
                    meta.changed[page as usize] = true;
                    meta.changed_list.push(page);
                }
            }
        }
        // From here until a clean close, a restart is a crash recovery. Both
        // copies: the older one still says "closed cleanly", and a damaged
        // newer copy must not bring it back.
        store.write_superblock(0).map_err(io_err)?;
        store.write_superblock(0).map_err(io_err)?;
        Ok((store, restored))
    }

    fn assemble(
        file: File,
        path: &Path,
        layout: Layout,
        bytes: Vec<u8>,
        next_seq: u64,
        superblock: Superblock,
    ) -> FlashStore {
        let pages = (layout.metadata_bytes() / PAGE_BYTES) as usize;
        FlashStore {
            file,
            path: path.to_path_buf(),
            layout,
            meta: Mutex::new(MetaTable {
                bytes,
                changed: vec![false; pages],
                changed_list: Vec::new(),
                persisted_dirty: vec![false; layout.slot_count as usize],
            }),
            next_seq: AtomicU64::new(next_seq),
            persist_lock: Mutex::new(SuperState { superblock }),
        }
    }

    /// The store's geometry.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// The store's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Volumes the store knows.
    pub fn volumes(&self) -> Vec<VolumeRecord> {
        self.persist_lock.lock().unwrap().superblock.volumes.clone()
    }

    /// The id of volume `name` with a disk of `size` bytes, adding it to the
    /// volume table if new. Returns whether the size changed since the
    /// volume was last attached (its cached blocks are then suspect).
    pub fn register_volume(&self, name: &str, size: u64) -> io::Result<(u32, bool)> {
        if name.len() > MAX_VOLUME_NAME {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("volume name {name:?} is longer than {MAX_VOLUME_NAME} bytes"),
            ));
        }
        let mut state = self.persist_lock.lock().unwrap();
        let volumes = &mut state.superblock.volumes;
        let (id, resized) = match volumes.iter_mut().find(|v| v.name == name) {
            Some(v) if v.size == size => return Ok((v.id, false)),
            Some(v) => {
                v.size = size;
                (v.id, true)
            }
            None => {
                if volumes.len() >= MAX_VOLUMES {
                    return Err(io::Error::other(format!(
                        "the flash store already knows {MAX_VOLUMES} volumes"
                    )));
                }
                let id = volumes.iter().map(|v| v.id + 1).max().unwrap_or(0);
                volumes.push(VolumeRecord { id, size, name: name.to_string() });
                (id, false)
            }
        };
        self.write_superblock_locked(&mut state, 0)?;
        Ok((id, resized))
    }

    /// Reads `buf.len()` bytes of `slot`'s block, from `offset` into it.
    pub fn read(&self, slot: u32, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        debug_assert!(offset + buf.len() as u64 <= self.layout.block_size);
        self.file.read_exact_at(buf, self.layout.slot_offset(slot) + offset)
    }

    /// Reads the blocks of consecutive slots from `slot` on (`buf` holds a
    /// whole number of blocks).
    pub fn read_slots(&self, slot: u32, buf: &mut [u8]) -> io::Result<()> {
        debug_assert_eq!(buf.len() as u64 % self.layout.block_size, 0);
        debug_assert!(slot as u64 + buf.len() as u64 / self.layout.block_size <= self.layout.slot_count);
        self.file.read_exact_at(buf, self.layout.slot_offset(slot))
    }

    /// Writes a whole block into `slot` and records it (in memory) as
    /// holding `block` of `volume`, dirty or clean.
    pub fn write(&self, slot: u32, volume: u32, block: u64, data: &[u8], dirty: bool) -> io::Result<()> {
        debug_assert_eq!(data.len() as u64, self.layout.block_size);
        let data_crc = crc32fast::hash(data);
        self.file.write_all_at(data, self.layout.slot_offset(slot))?;
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        let flags = ENTRY_VALID | if dirty { ENTRY_DIRTY } else { 0 };
        self.meta.lock().unwrap().set(slot, SlotEntry { volume, block, seq, flags, data_crc });
        Ok(())
    }

    /// Records that `slot`'s block is clean (its write-back is durable), if
    /// it still holds the write with sequence number `seq`.
    pub fn mark_clean(&self, slot: u32, seq: u64) {
        let mut meta = self.meta.lock().unwrap();
        if let Some(mut entry) = meta.entry(slot).filter(|e| e.seq == seq && e.is_dirty()) {
            entry.flags &= !ENTRY_DIRTY;
            meta.set(slot, entry);
        }
    }

    /// Records that `slot` holds nothing.
    pub fn invalidate(&self, slot: u32) {
        self.meta.lock().unwrap().set(slot, SlotEntry::default());
    }

    /// `slot`'s entry as it is in memory.
    pub fn entry(&self, slot: u32) -> Option<SlotEntry> {
        self.meta.lock().unwrap().entry(slot)
    }

    /// Whether `slot`'s entry on flash says dirty.
    pub fn persisted_dirty(&self, slot: u32) -> bool {
        self.meta.lock().unwrap().persisted_dirty[slot as usize]
    }

    /// Makes the metadata as it is now durable (see the module doc for the
    /// order). Returns the number of pages written.
    pub fn persist(&self) -> io::Result<usize> {
        let _serial = self.persist_lock.lock().unwrap();
        let snapshot: Vec<(u32, Vec<u8>)> = {
            let mut meta = self.meta.lock().unwrap();
            let pages = std::mem::take(&mut meta.changed_list);
            pages
                .into_iter()
                .map(|page| {
                    meta.changed[page as usize] = false;
                    let at = page as usize * PAGE_BYTES as usize;
                    (page, meta.bytes[at..at + PAGE_BYTES as usize].to_vec())
                })
                .collect()
        };
        // The data every snapshot entry describes was written before the
        // snapshot: this sync makes it durable before any entry is.
        self.file.sync_data()?;
        if snapshot.is_empty() {
            return Ok(0);
        }
        let written = (|| {
            for (page, bytes) in &snapshot {
                self.file.write_all_at(bytes, METADATA_OFFSET + *page as u64 * PAGE_BYTES)?;
            }
            self.file.sync_data()
        })();
        let mut meta = self.meta.lock().unwrap();
        if let Err(e) = written {
            // Write them again next time.
            for (page, _) in &snapshot {
                if !meta.changed[*page as usize] {
                    meta.changed[*page as usize] = true;
                    meta.changed_list.push(*page);
                }
            }
            return Err(e);
        }
        for (page, bytes) in &snapshot {
            let first_slot = *page as u64 * ENTRIES_PER_PAGE;
            for i in 0..ENTRIES_PER_PAGE {
                let slot = first_slot + i;
                if slot >= self.layout.slot_count {
                    break;
                }
                let at = (i * ENTRY_BYTES) as usize;
                let entry = SlotEntry::decode(&bytes[at..at + ENTRY_BYTES as usize]);
                meta.persisted_dirty[slot as usize] =
                    matches!(entry, layout::DecodedEntry::Entry(e) if e.is_dirty());
            }
        }
        Ok(snapshot.len())
    }

    /// Persists everything and marks the store cleanly closed, so the next
    /// open trusts the metadata without reading the data back.
    pub fn close_clean(&self) -> io::Result<()> {
        self.persist()?;
        self.write_superblock(FLAG_CLEAN_SHUTDOWN)?;
        // Closed: another process (a restart, `cloudcache check`) may open it.
        // SAFETY: flock on a valid descriptor has no memory-safety effects.
        unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_UN) };
        Ok(())
    }

    fn write_superblock(&self, flags: u32) -> io::Result<()> {
        let mut state = self.persist_lock.lock().unwrap();
        self.write_superblock_locked(&mut state, flags)
    }

    fn write_superblock_locked(&self, state: &mut SuperState, flags: u32) -> io::Result<()> {
        state.superblock.generation += 1;
        state.superblock.flags = flags;
        let copy = state.superblock.generation % 2;
        self.file.write_all_at(&state.superblock.encode(), copy * SUPERBLOCK_BYTES)?;
        self.file.sync_data()
    }
}

/// Reads and decodes both superblock copies; an error says why a copy was
/// rejected.
pub fn read_superblock_copies(file: &File) -> [Result<Superblock, String>; 2] {
    [0u64, 1].map(|copy| {
        let mut bytes = vec![0u8; SUPERBLOCK_BYTES as usize];
        match file.read_exact_at(&mut bytes, copy * SUPERBLOCK_BYTES) {
            Ok(()) => Superblock::decode(&bytes).map_err(|e| e.to_string()),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                Err("the file ends before this copy (too short for a flash store)".to_string())
            }
            Err(e) => Err(format!("cannot read: {e}")),
        }
    })
}

/// The copy a store opens with: the valid one of the newer generation.
pub fn newest_superblock(copies: &[Result<Superblock, String>; 2]) -> Option<usize> {
    (0..2).filter(|&i| copies[i].is_ok()).max_by_key(|&i| copies[i].as_ref().map_or(0, |s| s.generation))
}

/// Reads both superblock copies and keeps the newer valid one.
pub fn read_superblock(file: &File, path: &Path) -> Result<Superblock, StoreError> {
    let copies = read_superblock_copies(file);
    match newest_superblock(&copies) {
        Some(i) => Ok(copies[i].clone().expect("a valid copy")),
        None => Err(StoreError::Corrupt {
            path: path.to_path_buf(),
            first: copies[0].clone().unwrap_err(),
            second: copies[1].clone().unwrap_err(),
        }),
    }
}

/// Takes the store's advisory lock, so two servers (or a server and
/// `cloudcache check --repair`) never work on one store at once.
pub(crate) fn lock_exclusive(file: &File, path: &Path) -> Result<(), StoreError> {
    // SAFETY: flock on a valid descriptor has no memory-safety effects.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(());
    }
    let error = io::Error::last_os_error();
    if error.raw_os_error() == Some(libc::EWOULDBLOCK) {
        return Err(StoreError::InUse { path: path.to_path_buf() });
    }
    Err(StoreError::Io { path: path.to_path_buf(), source: error })
}

/// Allocates `len` bytes of real space for `file`.
fn reserve(file: &File, len: u64) -> io::Result<()> {
    // SAFETY: posix_fallocate on a valid descriptor has no memory-safety effects.
    let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len as libc::off_t) };
    match rc {
        0 => Ok(()),
        // File systems without fallocate: a sparse file still works.
        libc::EOPNOTSUPP | libc::EINVAL => file.set_len(len),
        errno => Err(io::Error::from_raw_os_error(errno)),
    }
}
