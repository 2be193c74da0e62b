//! What a cache is: its size, granularity, and policies, validated once.

use std::fmt;
use std::str::FromStr;

use crate::admission::Admission;
use crate::policy::PolicyKind;

/// How requests map to cached items.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Requests are split into fixed-size cache blocks (the real cache's view).
    Block,
    /// Each request is one object keyed by (volume, offset) and sized by its
    /// length when first inserted: libCacheSim's model of block traces, kept
    /// so results can be checked side by side.
    Object,
}

impl Mode {
    /// Name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Block => "block",
            Mode::Object => "object",
        }
    }
}

impl FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "block" => Ok(Mode::Block),
            "object" => Ok(Mode::Object),
            _ => Err(format!("unknown mode {s:?}; expected block or object")),
        }
    }
}

/// What a write does (dm-cache / Open CAS vocabulary).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WritePolicy {
    /// Writes go to flash only and are written back later (on eviction, or
    /// by the dirty watermarks).
    WriteBack,
    /// Writes go to flash and to the backend; cached blocks stay clean.
    WriteThrough,
    /// Writes go to the backend only and drop any cached copy (write-around).
    WriteInvalidate,
    /// Writes go to the backend only; a cached copy is updated in place so
    /// it stays valid, but writes never admit blocks.
    ReadOnly,
}

impl WritePolicy {
    /// Every write policy.
    pub const ALL: [WritePolicy; 4] = [
        WritePolicy::WriteBack,
        WritePolicy::WriteThrough,
        WritePolicy::WriteInvalidate,
        WritePolicy::ReadOnly,
    ];

    /// Name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            WritePolicy::WriteBack => "write-back",
            WritePolicy::WriteThrough => "write-through",
            WritePolicy::WriteInvalidate => "write-invalidate",
            WritePolicy::ReadOnly => "read-only",
        }
    }
}

impl fmt::Display for WritePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for WritePolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "write-back" | "writeback" | "wb" => Ok(WritePolicy::WriteBack),
            "write-through" | "writethrough" | "wt" => Ok(WritePolicy::WriteThrough),
            "write-invalidate" | "write-around" | "wi" | "wa" => Ok(WritePolicy::WriteInvalidate),
            "read-only" | "readonly" | "ro" => Ok(WritePolicy::ReadOnly),
            _ => Err(format!(
                "unknown write policy {s:?}; expected write-back, write-through, write-invalidate (write-around) or read-only"
            )),
        }
    }
}

/// A cache's configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct CacheConfig {
    /// Flash space for cached data, in bytes.
    pub capacity_bytes: u64,
    /// Cache block size in bytes (block mode); a power of two.
    pub block_size: u64,
    /// Block or object mode.
    pub mode: Mode,
    /// Replacement policy.
    pub policy: PolicyKind,
    /// Write policy (block mode; object mode treats every request as a read).
    pub write_policy: WritePolicy,
    /// Start writing back when dirty blocks exceed this fraction of capacity
    /// (write-back only; `None` = dirty blocks leave by eviction only).
    pub dirty_high_watermark: Option<f64>,
    /// Write back the oldest dirty blocks until this fraction is reached.
    /// Defaults to half the high watermark.
    pub dirty_low_watermark: Option<f64>,
    /// Record the actions of each request for [`crate::Cache::actions`]
    /// (a server needs them; a counting simulator does not).
    pub record_actions: bool,
    /// Expected number of distinct items, to size tables up front (0 = derive
    /// from the capacity in block mode, grow as needed in object mode).
    pub expected_items: usize,
    /// Which missed blocks are admitted to flash (block mode).
    pub admission: Admission,
    /// Keep an LRU list per volume so per-volume shares can be enforced at
    /// replacement time ([`crate::Cache::set_shares`]); needs the LRU policy.
    pub partitioned: bool,
    /// Keep dirty blocks in write order even without dirty watermarks, so a
    /// driver's background cleaner can call
    /// [`crate::Cache::write_back_oldest`].
    pub keep_dirty_order: bool,
    /// Misses in a volume's sequential run longer than this many bytes are
    /// not admitted (bcache's sequential cutoff; 0 = off). A run is a chain
    /// of requests each starting where the previous one ended.
    pub sequential_cutoff_bytes: u64,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            capacity_bytes: 1 << 30,
            block_size: 4096,
            mode: Mode::Block,
            policy: PolicyKind::Lru,
            write_policy: WritePolicy::WriteBack,
            dirty_high_watermark: None,
            dirty_low_watermark: None,
            record_actions: false,
            expected_items: 0,
            admission: Admission::Always,
            partitioned: false,
            keep_dirty_order: false,
            sequential_cutoff_bytes: 0,
        }
    }
}

/// A configuration that cannot work, with the setting named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

impl CacheConfig {
    /// Check every setting; the error names the one that is wrong.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |m: String| Err(ConfigError(m));
        if self.capacity_bytes == 0 {
            return err("cache size must be greater than zero".into());
        }
        if self.mode == Mode::Block {
            if self.block_size == 0 || !self.block_size.is_power_of_two() {
                return err(format!("block size {} is not a power of two", self.block_size));
            }
            if self.capacity_bytes < self.block_size {
                return err(format!(
                    "cache size {} B is smaller than one block ({} B)",
                    self.capacity_bytes, self.block_size
                ));
            }
            if self.capacity_bytes / self.block_size > u64::from(crate::key::NO_SLOT - 1) {
                return err(format!(
                    "cache size {} B has too many blocks for 32-bit slots",
                    self.capacity_bytes
                ));
            }
            if self.capacity_bytes / self.block_size > crate::group_table::MAX_KEYS {
                return err(format!(
                    "cache size {} B is more than {} blocks, the most the block index holds",
                    self.capacity_bytes,
                    crate::group_table::MAX_KEYS
                ));
            }
        }
        for (name, value) in [
            ("dirty high watermark", self.dirty_high_watermark),
            ("dirty low watermark", self.dirty_low_watermark),
        ] {
            if let Some(v) = value {
                if !(0.0..=1.0).contains(&v) {
                    return err(format!("{name} {v} is not a fraction between 0 and 1"));
                }
                if self.write_policy != WritePolicy::WriteBack || self.mode != Mode::Block {
                    return err(format!("{name} applies only to the write-back policy in block mode"));
                }
            }
        }
        if (self.partitioned || self.admission != Admission::Always) && self.mode != Mode::Block {
            return err("cache allocation and admission control work in block mode only".into());
        }
        if self.partitioned && self.policy != PolicyKind::Lru {
            return err(format!(
                "per-volume shares are enforced with an LRU list per volume (the seed's policy within a share); \
                 policy {} cannot be partitioned",
                self.policy
            ));
        }
        if matches!(self.admission, Admission::Staging { .. } | Admission::Larc)
            && self.block_size < crate::admission::MIN_STAGED_BLOCK_SIZE
        {
            return err(format!(
                "staging and LARC admission need blocks of at least {} B, not {} B",
                crate::admission::MIN_STAGED_BLOCK_SIZE,
                self.block_size
            ));
        }
        let staging = self.admission.staging_bytes();
        if staging > self.capacity_bytes {
            return err(format!(
                "staging area of {staging} B is larger than the cache ({} B)",
                self.capacity_bytes
            ));
        }
        if let Admission::TouchCount { region_bytes, .. } = self.admission {
            if region_bytes < self.block_size || !region_bytes.is_power_of_two() {
                return err(format!(
                    "touch-count region of {region_bytes} B must be a power of two of at least one block"
                ));
            }
        }
        match (self.dirty_high_watermark, self.dirty_low_watermark) {
            (None, Some(_)) => return err("a dirty low watermark needs a dirty high watermark".into()),
            (Some(high), Some(low)) if low > high => {
                return err(format!("dirty low watermark {low} is above the high watermark {high}"))
            }
            _ => {}
        }
        Ok(())
    }

    /// Capacity in weight units: blocks in block mode, bytes in object mode.
    pub fn capacity_units(&self) -> u64 {
        match self.mode {
            Mode::Block => self.capacity_bytes / self.block_size,
            Mode::Object => self.capacity_bytes,
        }
    }
}
