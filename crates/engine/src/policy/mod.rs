//! Replacement policies, one file each, behind one small trait.
//!
//! The cache owns keys, slots and data; a policy only decides order: which
//! cached slot to give up next. Every policy works in *weight* units: one per
//! block in block mode, bytes in object mode, so the same code serves both.

mod arc;
mod clock;
mod fifo;
mod ghost;
mod lru;
mod s3fifo;
mod sieve;
mod two_q;
mod volume_lru;

pub use arc::Arc;
pub use clock::Clock;
pub use fifo::Fifo;
pub use lru::Lru;
pub use s3fifo::S3Fifo;
pub use sieve::Sieve;
pub use two_q::TwoQ;
pub use volume_lru::VolumeLru;

use std::fmt;
use std::str::FromStr;

use crate::key::{BlockKey, Slot};

/// What a cache tells its replacement policy.
///
/// Call order for a miss in a full cache: `evict` (as often as needed), then
/// `insert`. A slot index is reused only after the policy gave it up through
/// `evict` or was told of its removal through `remove`.
pub trait ReplacementPolicy {
    /// `slot` now holds `key` (a newly admitted item) weighing `weight`.
    fn insert(&mut self, slot: Slot, key: BlockKey, weight: u64);
    /// The item in `slot` was accessed again.
    fn hit(&mut self, slot: Slot);
    /// The item in `slot` leaves the cache for a reason other than this
    /// policy's choice (invalidation, trim); no history of it is kept.
    fn remove(&mut self, slot: Slot);
    /// Choose the item to evict to make room for `incoming` (which is not
    /// cached), forget it, and return its slot. `keys[slot]` is the key held
    /// by each slot. Called only while at least one item is cached.
    fn evict(&mut self, incoming: BlockKey, keys: &[BlockKey]) -> Slot;
    /// Make slot indices below `slots` valid (object mode grows its table).
    fn reserve_slots(&mut self, slots: usize);
    /// The slots this policy will evict next and after that, where it knows
    /// them without work ([`crate::key::NO_SLOT`] where not), having
    /// prefetched what it will read to evict the second: a hint, so that the
    /// cache can start loading the victims' records long before it needs
    /// them.
    fn prefetch_coming_victims(&self) -> (Slot, Slot) {
        (crate::key::NO_SLOT, crate::key::NO_SLOT)
    }
}

/// The replacement policies by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PolicyKind {
    /// Least recently used.
    Lru,
    /// First in, first out.
    Fifo,
    /// CLOCK (second chance, one reference bit).
    Clock,
    /// Adaptive Replacement Cache (Megiddo and Modha, FAST'03).
    Arc,
    /// 2Q, full version (Johnson and Shasha, VLDB'94): Kin 25 %, Kout 50 %.
    TwoQ,
    /// S3-FIFO (Yang et al., SOSP'23): small FIFO 10 %, ghost as large as main.
    S3Fifo,
    /// SIEVE (Zhang et al., NSDI'24).
    Sieve,
}

impl PolicyKind {
    /// Every policy.
    pub const ALL: [PolicyKind; 7] = [
        PolicyKind::Lru,
        PolicyKind::Fifo,
        PolicyKind::Clock,
        PolicyKind::Arc,
        PolicyKind::TwoQ,
        PolicyKind::S3Fifo,
        PolicyKind::Sieve,
    ];

    /// Name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::Lru => "lru",
            PolicyKind::Fifo => "fifo",
            PolicyKind::Clock => "clock",
            PolicyKind::Arc => "arc",
            PolicyKind::TwoQ => "2q",
            PolicyKind::S3Fifo => "s3fifo",
            PolicyKind::Sieve => "sieve",
        }
    }

    /// A policy for a cache of `capacity` weight units expected to use up to
    /// `slots` slots.
    pub fn build(self, capacity: u64, slots: usize) -> AnyPolicy {
        match self {
            PolicyKind::Lru => AnyPolicy::Lru(Lru::new(slots)),
            PolicyKind::Fifo => AnyPolicy::Fifo(Fifo::new(slots)),
            PolicyKind::Clock => AnyPolicy::Clock(Clock::new(slots)),
            PolicyKind::Arc => AnyPolicy::Arc(Arc::new(capacity, slots)),
            PolicyKind::TwoQ => AnyPolicy::TwoQ(TwoQ::new(capacity, slots)),
            PolicyKind::S3Fifo => AnyPolicy::S3Fifo(S3Fifo::new(capacity, slots)),
            PolicyKind::Sieve => AnyPolicy::Sieve(Sieve::new(slots)),
        }
    }
}

impl fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PolicyKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.to_ascii_lowercase().replace(['-', '_'], "");
        let wanted = if wanted == "twoq" { "2q".to_owned() } else { wanted };
        PolicyKind::ALL.into_iter().find(|p| p.name() == wanted).ok_or_else(|| {
            let names: Vec<_> = PolicyKind::ALL.iter().map(|p| p.name()).collect();
            format!("unknown replacement policy {s:?}; known policies: {}", names.join(", "))
        })
    }
}

/// Any policy, dispatched by a `match` (cheaper and simpler than a trait
/// object on the per-block path).
#[allow(missing_docs)]
pub enum AnyPolicy {
    Lru(Lru),
    Fifo(Fifo),
    Clock(Clock),
    Arc(Arc),
    TwoQ(TwoQ),
    S3Fifo(S3Fifo),
    Sieve(Sieve),
    /// Per-volume LRU lists, for caches that enforce shares.
    VolumeLru(VolumeLru),
}

macro_rules! dispatch {
    ($self:ident, $p:ident => $e:expr) => {
        match $self {
            AnyPolicy::Lru($p) => $e,
            AnyPolicy::Fifo($p) => $e,
            AnyPolicy::Clock($p) => $e,
            AnyPolicy::Arc($p) => $e,
            AnyPolicy::TwoQ($p) => $e,
            AnyPolicy::S3Fifo($p) => $e,
            AnyPolicy::Sieve($p) => $e,
            AnyPolicy::VolumeLru($p) => $e,
        }
    };
}

impl ReplacementPolicy for AnyPolicy {
    #[inline]
    fn insert(&mut self, slot: Slot, key: BlockKey, weight: u64) {
        dispatch!(self, p => p.insert(slot, key, weight))
    }
    #[inline]
    fn hit(&mut self, slot: Slot) {
        dispatch!(self, p => p.hit(slot))
    }
    #[inline]
    fn remove(&mut self, slot: Slot) {
        dispatch!(self, p => p.remove(slot))
    }
    #[inline]
    fn evict(&mut self, incoming: BlockKey, keys: &[BlockKey]) -> Slot {
        dispatch!(self, p => p.evict(incoming, keys))
    }
    fn reserve_slots(&mut self, slots: usize) {
        dispatch!(self, p => p.reserve_slots(slots))
    }
    #[inline]
    fn prefetch_coming_victims(&self) -> (Slot, Slot) {
        dispatch!(self, p => p.prefetch_coming_victims())
    }
}

/// A tiny unit-weight cache driver for hand-worked policy tests.
#[cfg(test)]
pub(crate) mod tests {
    use super::ReplacementPolicy;
    use crate::key::{BlockKey, Slot};

    /// A capacity (in unit-weight items) and a space-separated access string;
    /// each name is one key.
    pub struct Sequence {
        pub capacity: usize,
        pub names: Vec<String>,
    }

    impl Sequence {
        pub fn new(capacity: usize, accesses: &str) -> Self {
            Sequence { capacity, names: accesses.split_whitespace().map(str::to_owned).collect() }
        }
    }

    fn key_of(name: &str) -> BlockKey {
        let mut block = 0u64;
        for b in name.bytes() {
            block = block * 256 + u64::from(b);
        }
        BlockKey::new(0, block)
    }

    /// Replay `seq` and describe each access: `h` for a hit, `m` for a miss
    /// into free space, `m(x)` for a miss that evicted `x`.
    pub fn run_sequence(mut policy: impl ReplacementPolicy, seq: &Sequence) -> String {
        let mut keys: Vec<BlockKey> = vec![BlockKey::default(); seq.capacity];
        let mut names: Vec<String> = vec![String::new(); seq.capacity];
        let mut cached: Vec<bool> = vec![false; seq.capacity];
        let mut out = Vec::new();
        for name in &seq.names {
            let key = key_of(name);
            if let Some(slot) = (0..seq.capacity).find(|&s| cached[s] && keys[s] == key) {
                policy.hit(slot as Slot);
                out.push("h".to_owned());
                continue;
            }
            let free = (0..seq.capacity).find(|&s| !cached[s]);
            let (slot, note) = match free {
                Some(slot) => (slot, "m".to_owned()),
                None => {
                    let victim = policy.evict(key, &keys) as usize;
                    assert!(cached[victim], "policy evicted an empty slot {victim}");
                    cached[victim] = false;
                    (victim, format!("m({})", names[victim]))
                }
            };
            keys[slot] = key;
            names[slot] = name.clone();
            cached[slot] = true;
            policy.insert(slot as Slot, key, 1);
            out.push(note);
        }
        out.join(" ")
    }
}
