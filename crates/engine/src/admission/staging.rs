//! CloudCache's staging area (seed 001, section 3.4.3): recently accessed
//! addresses of one volume, kept in memory until they have been reused
//! often enough to be admitted into flash.
//!
//! Choices where the seed is silent (its ambiguity 10):
//! * Entries cost 24 bytes, plus one block of memory when they hold data.
//! * Only reads stage data; a write to a block whose data is staged makes
//!   that data stale, so the entry keeps its count and drops the data.
//! * In hybrid staging, an entry pushed out of the data partition keeps its
//!   address (and count) in the address partition; an entry pushed out of
//!   the address partition is forgotten, count and all.
//! * On admission the staged data (if any) is what is written to flash: no
//!   second backend read.

use hashbrown::HashTable;

use crate::key::{Slot, NO_SLOT};

/// Memory to track one address (the seed's figure, pointers included).
pub const ADDRESS_ENTRY_BYTES: u64 = 24;

/// Share of a hybrid staging area given to addresses (the seed's 1:7).
const HYBRID_ADDRESS_EIGHTHS: u64 = 1;

/// What a staging area holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StagingKind {
    /// Addresses only.
    Address,
    /// Addresses, and the data of blocks staged by reads.
    Data,
    /// An address partition and a data partition (1:7), separate LRUs.
    Hybrid,
}

impl StagingKind {
    /// Name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            StagingKind::Address => "address",
            StagingKind::Data => "data",
            StagingKind::Hybrid => "hybrid",
        }
    }
}

impl std::str::FromStr for StagingKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "address" => Ok(StagingKind::Address),
            "data" => Ok(StagingKind::Data),
            "hybrid" => Ok(StagingKind::Hybrid),
            _ => Err(format!("unknown staging {s:?}; expected address, data or hybrid")),
        }
    }
}

/// What staging decided about one access of an uncached block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StagingDecision {
    /// The block has now been accessed often enough: admit it to flash.
    pub admit: bool,
    /// A read found the block's data staged in memory (no backend read).
    pub data_hit: bool,
    /// This read's data (from the backend) is now held in the staging area.
    pub data_staged: bool,
}

/// Low bits of [`Entry::block_and_state`] that hold the state, not the block.
const STATE_BITS: u32 = 8;
/// State bit set while the entry holds the block's data.
const DATA_BIT: u64 = 1 << (STATE_BITS - 1);
/// State bits that count accesses (saturating).
const ACCESS_MASK: u64 = DATA_BIT - 1;

/// Smallest block size a staging area supports: the block numbers of 64-bit
/// byte offsets then leave room for an entry's state bits. (A cache block
/// smaller than a 512-byte sector has no use.)
pub const MIN_STAGED_BLOCK_SIZE: u64 = 1 << STATE_BITS;

/// One staged address with its LRU links, in one 16-byte record (four to a
/// cache line, none straddling two), so that probing and retiring entries
/// touch as few cache lines as possible.
#[derive(Clone, Copy, Debug)]
struct Entry {
    /// The block above [`STATE_BITS`]; below, whether the data is held
    /// ([`DATA_BIT`]) and the accesses so far ([`ACCESS_MASK`], saturating).
    block_and_state: u64,
    /// Towards the front (newer) of its list.
    prev: Slot,
    /// Towards the back (older) of its list.
    next: Slot,
}

impl Entry {
    fn new(block: u64) -> Self {
        debug_assert!(block <= u64::MAX >> STATE_BITS, "blocks smaller than MIN_STAGED_BLOCK_SIZE");
        Entry { block_and_state: block << STATE_BITS | 1, prev: NO_SLOT, next: NO_SLOT }
    }

    fn block(&self) -> u64 {
        self.block_and_state >> STATE_BITS
    }

    fn accesses(&self) -> u32 {
        (self.block_and_state & ACCESS_MASK) as u32
    }

    /// Count one more access (saturating at [`ACCESS_MASK`]).
    fn count_access(&mut self) {
        if self.block_and_state & ACCESS_MASK < ACCESS_MASK {
            self.block_and_state += 1;
        }
    }

    fn has_data(&self) -> bool {
        self.block_and_state & DATA_BIT != 0
    }

    fn set_has_data(&mut self, has_data: bool) {
        self.block_and_state = self.block_and_state & !DATA_BIT | if has_data { DATA_BIT } else { 0 };
    }
}

/// Head and tail of one LRU list over entries.
#[derive(Clone, Copy, Debug)]
struct EntryList {
    head: Slot,
    tail: Slot,
}

impl EntryList {
    const EMPTY: EntryList = EntryList { head: NO_SLOT, tail: NO_SLOT };

    fn back(&self) -> Option<Slot> {
        (self.tail != NO_SLOT).then_some(self.tail)
    }
}

/// One volume's staging area.
pub struct StagingArea {
    kind: StagingKind,
    entry_data_bytes: u64,
    /// Distinct blocks the area may see (0: unknown), which bounds how far
    /// the index grows in one step.
    expected_blocks: usize,
    /// Entry index of each staged block, hashed by block: 4 bytes a bucket
    /// rather than 16, as every missed block probes it.
    index: HashTable<Slot>,
    entries: Vec<Entry>,
    free: Vec<Slot>,
    /// Address-only entries (the only list in address staging).
    address_list: EntryList,
    /// Entries holding data (and, in data staging, address-only ones too).
    data_list: EntryList,
    address_budget: u64,
    data_budget: u64,
    address_used: u64,
    data_used: u64,
}

impl StagingArea {
    /// An empty area of `kind` for blocks of `block_size` bytes, with no
    /// memory yet (see [`StagingArea::set_budget`]). `expected_blocks` is how
    /// many distinct blocks it may see (0 if unknown): when the area first
    /// fills its index, the index grows at once to what the budget can hold,
    /// up to that many, rather than doubling its way there (every doubling
    /// rehashes, reading each staged entry again from memory).
    pub fn new(kind: StagingKind, block_size: u64, expected_blocks: usize) -> Self {
        StagingArea {
            kind,
            entry_data_bytes: block_size,
            expected_blocks,
            index: HashTable::new(),
            entries: Vec::new(),
            free: Vec::new(),
            address_list: EntryList::EMPTY,
            data_list: EntryList::EMPTY,
            address_budget: 0,
            data_budget: 0,
            address_used: 0,
            data_used: 0,
        }
    }

    /// Give the area `bytes` of memory, dropping the oldest entries if it
    /// now holds more.
    pub fn set_budget(&mut self, bytes: u64) {
        (self.address_budget, self.data_budget) = match self.kind {
            StagingKind::Address => (bytes, 0),
            StagingKind::Data => (0, bytes),
            StagingKind::Hybrid => {
                let address = bytes * HYBRID_ADDRESS_EIGHTHS / 8;
                (address, bytes - address)
            }
        };
        self.shrink_to_budget();
    }

    /// Memory in use, in bytes.
    pub fn used_bytes(&self) -> u64 {
        self.address_used + self.data_used
    }

    /// Entries (tracked addresses).
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// True when nothing is staged.
    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// An access to uncached `block`; admission on the `admit_on`-th access.
    #[inline]
    pub fn access(&mut self, block: u64, is_read: bool, admit_on: u32) -> StagingDecision {
        // When a new block would push the oldest entry out, start loading
        // its record now, so the miss overlaps the index probe below instead
        // of following it (a plain load the CPU runs ahead with; no unsafe).
        let data_entry = ADDRESS_ENTRY_BYTES + self.entry_data_bytes;
        if self.address_used + ADDRESS_ENTRY_BYTES > self.address_budget {
            if let Some(oldest) = self.address_list.back() {
                std::hint::black_box(self.entries[oldest as usize].prev);
            }
        }
        if self.data_used + data_entry > self.data_budget {
            if let Some(oldest) = self.data_list.back() {
                std::hint::black_box(self.entries[oldest as usize].prev);
            }
        }
        // A read brings the data along (keeps or attaches it); a write makes
        // staged data stale.
        let wants_data = is_read && self.kind != StagingKind::Address;
        // One probe finds the block or the place to stage it.
        if self.index.len() == self.index.capacity() {
            self.grow();
        }
        let next_free = self.free.last().copied().unwrap_or(self.entries.len() as Slot);
        let entries = &self.entries;
        let at = match self.index.entry(
            hash_block(block),
            |&i| entries[i as usize].block() == block,
            |&i| hash_block(entries[i as usize].block()),
        ) {
            hashbrown::hash_table::Entry::Occupied(found) => {
                let at = *found.get();
                let entry = self.entries[at as usize];
                let data_hit = is_read && entry.has_data();
                if entry.accesses().saturating_add(1) >= admit_on {
                    found.remove();
                    self.release(at);
                    return StagingDecision { admit: true, data_hit, data_staged: false };
                }
                self.entries[at as usize].count_access();
                self.place(at, wants_data);
                self.shrink_to_budget();
                // `forget` clears `has_data`, so an entry the budget just dropped reads false.
                let data_staged = !data_hit && self.entries[at as usize].has_data();
                return StagingDecision { admit: false, data_hit, data_staged };
            }
            hashbrown::hash_table::Entry::Vacant(_) if admit_on <= 1 => {
                return StagingDecision { admit: true, ..StagingDecision::default() };
            }
            hashbrown::hash_table::Entry::Vacant(place) => {
                place.insert(next_free);
                next_free
            }
        };
        // `at` is the free record `next_free` named: reuse it or append it.
        let fresh = Entry::new(block);
        if self.free.pop().is_some() {
            self.entries[at as usize] = fresh;
        } else {
            self.entries.push(fresh);
        }
        self.link(at, wants_data);
        self.shrink_to_budget();
        StagingDecision { data_staged: self.entries[at as usize].has_data(), ..StagingDecision::default() }
    }

    /// Whether `block`'s data is staged.
    pub fn holds_data(&self, block: u64) -> bool {
        self.find(block).is_some_and(|at| self.entries[at as usize].has_data())
    }

    /// Forget `block` (it was admitted by another path, or trimmed).
    pub fn remove(&mut self, block: u64) {
        if let Some(at) = self.find(block) {
            self.forget(at);
        }
    }

    fn push_front(&mut self, data: bool, at: Slot) {
        let list = if data { &mut self.data_list } else { &mut self.address_list };
        let old_head = list.head;
        list.head = at;
        if old_head == NO_SLOT {
            list.tail = at;
        }
        let entry = &mut self.entries[at as usize];
        entry.prev = NO_SLOT;
        entry.next = old_head;
        if old_head != NO_SLOT {
            self.entries[old_head as usize].prev = at;
        }
    }

    fn take_out(&mut self, data: bool, at: Slot) {
        let Entry { prev, next, .. } = self.entries[at as usize];
        let list = if data { &mut self.data_list } else { &mut self.address_list };
        if prev == NO_SLOT {
            list.head = next;
        } else {
            self.entries[prev as usize].next = next;
        }
        if next == NO_SLOT {
            list.tail = prev;
        } else {
            self.entries[next as usize].prev = prev;
        }
    }

    /// Put entry `at` (unlinked) at the front of the list it belongs on.
    fn link(&mut self, at: Slot, with_data: bool) {
        let with_data = with_data && self.entry_cost(true) <= self.data_budget;
        self.entries[at as usize].set_has_data(with_data);
        let cost = self.entry_cost(with_data);
        let on_data_list = with_data || self.kind == StagingKind::Data;
        if on_data_list {
            self.data_used += cost;
        } else {
            self.address_used += cost;
        }
        self.push_front(on_data_list, at);
    }

    fn unlink(&mut self, at: Slot) {
        let entry = self.entries[at as usize];
        let cost = self.entry_cost(entry.has_data());
        let on_data_list = entry.has_data() || self.kind == StagingKind::Data;
        if on_data_list {
            self.data_used -= cost;
        } else {
            self.address_used -= cost;
        }
        self.take_out(on_data_list, at);
    }

    /// Move a staged entry to the front, with or without data.
    fn place(&mut self, at: Slot, with_data: bool) {
        self.unlink(at);
        self.link(at, with_data);
    }

    fn forget(&mut self, at: Slot) {
        if let Ok(found) = self.index.find_entry(hash_block(self.entries[at as usize].block()), |&i| i == at)
        {
            found.remove();
        }
        self.release(at);
    }

    /// Unlink entry `at`, already out of the index, and free its record.
    fn release(&mut self, at: Slot) {
        self.unlink(at);
        self.entries[at as usize].set_has_data(false);
        self.free.push(at);
    }

    fn find(&self, block: u64) -> Option<Slot> {
        self.index.find(hash_block(block), |&i| self.entries[i as usize].block() == block).copied()
    }

    /// Make room in the index (full) for at least one more entry: straight
    /// to what the budget can hold when that is known and larger, else by
    /// hashbrown's own doubling.
    #[cold]
    fn grow(&mut self) {
        let address_entries = self.address_budget / ADDRESS_ENTRY_BYTES;
        let budget_entries = match self.kind {
            StagingKind::Address => address_entries,
            // Worst case: every entry holds an address only.
            StagingKind::Data => self.data_budget / ADDRESS_ENTRY_BYTES,
            StagingKind::Hybrid => address_entries + self.data_budget / self.entry_cost(true),
        };
        let room = usize::try_from(budget_entries).unwrap_or(usize::MAX).min(self.expected_blocks);
        let additional = room.saturating_sub(self.index.len()).max(1);
        let entries = &self.entries;
        self.index.reserve(additional, |&i| hash_block(entries[i as usize].block()));
        self.entries.reserve(additional.saturating_sub(self.free.len()));
    }

    fn entry_cost(&self, with_data: bool) -> u64 {
        ADDRESS_ENTRY_BYTES + if with_data { self.entry_data_bytes } else { 0 }
    }

    #[inline]
    fn shrink_to_budget(&mut self) {
        if self.data_used > self.data_budget || self.address_used > self.address_budget {
            self.drop_oldest_over_budget();
        }
    }

    #[cold]
    fn drop_oldest_over_budget(&mut self) {
        while self.data_used > self.data_budget {
            let Some(oldest) = self.data_list.back() else { break };
            if self.kind == StagingKind::Hybrid && self.address_budget >= ADDRESS_ENTRY_BYTES {
                self.place(oldest, false);
            } else {
                self.forget(oldest);
            }
        }
        while self.address_used > self.address_budget {
            let Some(oldest) = self.address_list.back() else { break };
            self.forget(oldest);
        }
    }
}

/// Staging areas hold one volume's blocks.
#[inline]
fn hash_block(block: u64) -> u64 {
    cloudcache_trace::block_hash::hash_block(0, block)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOCK: u64 = 4096;
    const DATA_ENTRY: u64 = ADDRESS_ENTRY_BYTES + BLOCK;

    fn area(kind: StagingKind, budget: u64) -> StagingArea {
        let mut a = StagingArea::new(kind, BLOCK, 0);
        a.set_budget(budget);
        a
    }

    #[test]
    fn admits_on_the_nth_access_and_forgets_the_entry() {
        let mut a = area(StagingKind::Address, 10 * ADDRESS_ENTRY_BYTES);
        assert!(!a.access(1, true, 2).admit);
        assert_eq!(a.len(), 1);
        assert!(a.access(1, false, 2).admit);
        assert!(a.is_empty());
        // N + 1 = 3: two misses staged, the third admits.
        assert!(!a.access(2, true, 3).admit);
        assert!(!a.access(2, true, 3).admit);
        assert!(a.access(2, true, 3).admit);
        // Admission on the first access needs no staging.
        assert!(a.access(3, true, 1).admit);
        assert!(a.is_empty());
    }

    #[test]
    fn address_staging_is_an_lru_of_addresses() {
        let mut a = area(StagingKind::Address, 2 * ADDRESS_ENTRY_BYTES);
        a.access(1, true, 2);
        a.access(2, true, 2);
        a.access(3, true, 2); // pushes 1 out
        assert_eq!(a.used_bytes(), 2 * ADDRESS_ENTRY_BYTES);
        assert!(!a.access(1, true, 2).admit, "1 was forgotten, count and all");
        assert!(a.access(3, true, 2).admit);
    }

    #[test]
    fn data_staging_serves_staged_reads_and_writes_stage_addresses_only() {
        let mut a = area(StagingKind::Data, 2 * DATA_ENTRY);
        a.access(1, true, 3);
        assert_eq!(a.used_bytes(), DATA_ENTRY);
        assert_eq!(
            a.access(1, true, 3),
            StagingDecision { admit: false, data_hit: true, data_staged: false }
        );
        a.access(2, false, 3);
        assert_eq!(a.used_bytes(), DATA_ENTRY + ADDRESS_ENTRY_BYTES);
        // A write to block 1 makes its staged data stale.
        a.access(1, false, 4);
        assert_eq!(a.used_bytes(), 2 * ADDRESS_ENTRY_BYTES);
        assert_eq!(
            a.access(1, true, 5),
            StagingDecision { admit: false, data_hit: false, data_staged: true }
        );
        assert_eq!(a.access(1, true, 5), StagingDecision { admit: true, data_hit: true, data_staged: false });
    }

    #[test]
    fn hybrid_demotes_data_entries_to_addresses() {
        // 1:7 of 8 data entries' worth: the data partition holds 7.
        let mut a = area(StagingKind::Hybrid, 8 * DATA_ENTRY);
        for block in 0..8 {
            a.access(block, true, 2);
        }
        // Block 0 was pushed out of the data partition but is still tracked.
        assert_eq!(a.len(), 8);
        assert!(!a.holds_data(0));
        // Read again: it is back in the data partition, data attached.
        assert_eq!(
            a.access(0, true, 4),
            StagingDecision { admit: false, data_hit: false, data_staged: true }
        );
        assert_eq!(
            a.access(0, true, 4),
            StagingDecision { admit: false, data_hit: true, data_staged: false }
        );
        assert!(a.used_bytes() <= 8 * DATA_ENTRY);
    }

    #[test]
    fn access_counts_saturate_without_losing_the_entry() {
        let mut a = area(StagingKind::Address, 10 * ADDRESS_ENTRY_BYTES);
        // Writes that bypass the cache count but never admit.
        for _ in 0..200 {
            assert!(!a.access(5, false, u32::MAX).admit);
        }
        assert_eq!(a.len(), 1);
        assert!(a.access(5, true, 2).admit);
    }

    #[test]
    fn shrinking_the_budget_drops_the_oldest() {
        let mut a = area(StagingKind::Address, 100 * ADDRESS_ENTRY_BYTES);
        for block in 0..100 {
            a.access(block, true, 2);
        }
        a.set_budget(10 * ADDRESS_ENTRY_BYTES);
        assert_eq!(a.len(), 10);
        assert!(a.access(99, true, 2).admit);
        assert!(!a.access(0, true, 2).admit);
        a.set_budget(0);
        assert!(a.is_empty());
        assert_eq!(a.used_bytes(), 0);
    }
}
