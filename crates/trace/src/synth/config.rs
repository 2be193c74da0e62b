//! The TOML schema of a synthetic workload, its unit types and its
//! validation. Every key, its unit and its default is documented here and in
//! `docs/synthetic.md`; keep the two in step.

use serde::{Deserialize, Deserializer};

use super::SynthError;
use crate::units::{self, show_bytes, NS_PER_SEC};

/// A byte count. In TOML: an integer (bytes) or a string with a unit,
/// `"4KiB"`, `"1.5GiB"`, `"20GB"` (`K`/`M`/`G`/`T` alone are binary).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(pub u64);

/// A length of time, held in nanoseconds. In TOML: a string of number-unit
/// pairs (`"14d"`, `"1d12h"`, `"1.5h"`, `"90s"`, `"250ms"`; units ns, us,
/// ms, s, m, h, d, w) or a number of seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span(pub u64);

/// A transfer rate in bytes per second. In TOML: `"100MiB/s"` (the `/s` is
/// optional) or an integer of bytes per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Throughput(pub u64);

/// A part of a disk: absolute bytes or a fraction of the disk size.
/// In TOML: a size (`"256MiB"`, or an integer of bytes), a percentage string
/// (`"5%"`) or a float fraction in [0, 1] (`0.05`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Portion {
    /// This many bytes.
    Bytes(u64),
    /// This fraction of the disk, in [0, 1].
    Fraction(f64),
}

impl Portion {
    /// Bytes of a disk of `disk` bytes, rounded down to a multiple of `unit`.
    pub fn resolve(self, disk: u64, unit: u64) -> u64 {
        let bytes = match self {
            Portion::Bytes(b) => b,
            Portion::Fraction(f) => (f * disk as f64) as u64,
        };
        bytes / unit * unit
    }
}

impl std::fmt::Display for Portion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Portion::Bytes(b) => f.write_str(&show_bytes(b)),
            Portion::Fraction(x) => write!(f, "{}%", x * 100.0),
        }
    }
}

/// The origin of trace time, in nanoseconds since the Unix epoch. In TOML: a
/// date-time (`2016-01-04T00:00:00Z`, bare or quoted; no offset means UTC),
/// a date (`2016-01-04`), or an integer of Unix seconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StartTime(pub u64);

/// Direction of a sequential stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SeqOp {
    /// Sequential reads (scans, backups).
    #[default]
    Read,
    /// Sequential writes (logs, restores, bulk loads).
    Write,
}

/// One request size of a distribution, with its relative weight.
#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizeWeight {
    /// Request length in bytes (a multiple of `block_size`).
    pub size: ByteSize,
    /// Relative weight (any non-negative number; weights need not sum to 1).
    pub weight: f64,
}

/// Request sizes of a VM's random workload. In TOML: one size
/// (`request_size = "4KiB"`) or a list of weighted sizes
/// (`request_size = [{ size = "4KiB", weight = 8 }, { size = "64KiB", weight = 1 }]`).
#[derive(Clone, Debug, PartialEq)]
pub enum RequestSize {
    /// Every request has this length.
    Fixed(ByteSize),
    /// Lengths drawn with these weights.
    Mix(Vec<SizeWeight>),
}

impl RequestSize {
    /// (length, weight) pairs.
    pub fn entries(&self) -> Vec<(u64, f64)> {
        match self {
            RequestSize::Fixed(s) => vec![(s.0, 1.0)],
            RequestSize::Mix(v) => v.iter().map(|e| (e.size.0, e.weight)).collect(),
        }
    }

    /// The largest length.
    pub fn max(&self) -> u64 {
        self.entries().iter().map(|e| e.0).max().unwrap_or(0)
    }
}

/// A synthetic multi-VM workload (the whole TOML file).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SynthConfig {
    /// Seed of every random choice (default 0). The same seed and config give
    /// the same trace on every platform.
    #[serde(default)]
    pub seed: u64,
    /// Length of trace time to generate (required), e.g. `"14d"`.
    pub duration: Span,
    /// Granularity of offsets and lengths (default `"4KiB"`): every request
    /// starts on and spans whole blocks of this size. Sizes in the config must
    /// be multiples of it (disk sizes are rounded down to one).
    #[serde(default = "default_block_size")]
    pub block_size: ByteSize,
    /// Time of the first instant of the trace (default 1970-01-01T00:00:00Z).
    /// `Request::time_ns` counts from the Unix epoch, and diurnal peaks are
    /// hours of the UTC day of this clock.
    #[serde(default)]
    pub start_time: StartTime,
    /// The VMs (`[[vm]]` tables; at least one). Each is one volume of the trace.
    #[serde(rename = "vm", default)]
    pub vms: Vec<VmConfig>,
}

/// One VM disk and the workload its guest puts on it (a `[[vm]]` table).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VmConfig {
    /// Volume name in the trace (required, unique).
    pub name: String,
    /// Disk size (required, at least one block), e.g. `"16GiB"`.
    pub disk: ByteSize,
    /// Mean rate of the random workload in requests per second, averaged over
    /// a day (required; 0 leaves only scans and backups). Scans and backups
    /// come on top of it.
    pub iops: f64,
    /// Fraction of random requests that are reads, in [0, 1] (default 0.7).
    #[serde(default = "default_read_ratio")]
    pub read_ratio: f64,
    /// Length of random requests (default: one block).
    #[serde(default)]
    pub request_size: Option<RequestSize>,
    /// The Zipf-popular hot set (default: none, all random requests uniform).
    #[serde(default)]
    pub hot: Option<HotConfig>,
    /// Day/night modulation of the random workload (default: flat).
    #[serde(default)]
    pub diurnal: Option<DiurnalConfig>,
    /// Sequential scans (`[[vm.scan]]` tables; default none).
    #[serde(default)]
    pub scan: Vec<SeqConfig>,
    /// Periodic backups (`[[vm.backup]]` tables; default none): sequential
    /// reads every week by default, the one-time-use traffic an admission
    /// policy should keep out of the cache.
    #[serde(default)]
    pub backup: Vec<SeqConfig>,
}

/// The hot set of a VM (a `[vm.hot]` table): extents scattered over the disk
/// by a keyed permutation, ranked by a Zipf law. Random requests not sent to
/// it go uniformly to the rest of the disk.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HotConfig {
    /// Size of the hot set (required): bytes (`"256MiB"`) or a fraction of the
    /// disk (`0.02`, `"2%"`). Rounded down to whole extents.
    pub size: Portion,
    /// Zipf exponent s >= 0 of extent popularity, P(rank k) ~ k^-s
    /// (default 1.0; 0 is uniform over the hot set).
    #[serde(default = "default_exponent")]
    pub exponent: f64,
    /// Fraction of random requests that start in the hot set, in [0, 1]
    /// (default 0.9).
    #[serde(default = "default_share")]
    pub share: f64,
    /// Unit of placement and popularity (default: the largest request size):
    /// the hot set is this many contiguous bytes at a time, each piece placed
    /// independently. A multiple of `block_size`.
    #[serde(default)]
    pub extent: Option<ByteSize>,
    /// Every this long, the hot set drifts (default: never): `shift_fraction`
    /// of it is replaced by new extents elsewhere on the disk.
    #[serde(default)]
    pub shift_every: Option<Span>,
    /// Fraction of the hot set replaced at each shift, in [0, 1] (default 1.0).
    /// New extents enter as the most popular and the least popular leave,
    /// as new content would.
    #[serde(default = "default_shift_fraction")]
    pub shift_fraction: f64,
}

/// Day/night intensity of a VM's random workload (a `[vm.diurnal]` table):
/// the rate is multiplied by `1 + amplitude * cos(2 pi (hour - peak_hour) / 24)`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiurnalConfig {
    /// Relative swing, in [0, 1] (required): peak/trough rate ratio is
    /// (1 + a) / (1 - a), e.g. 3 for 0.5.
    pub amplitude: f64,
    /// Hour of the UTC day with the highest rate, in [0, 24) (default 14.0).
    #[serde(default = "default_peak_hour")]
    pub peak_hour: f64,
}

/// A recurring sequential stream (a `[[vm.scan]]` or `[[vm.backup]]` table):
/// each run reads (or writes) `length` bytes of a region in order, in
/// requests of `request_size`, at `throughput`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeqConfig {
    /// Time between run starts. Scans: required. Backups: default `"7d"`.
    #[serde(default)]
    pub every: Option<Span>,
    /// Start of the first run, counted from the trace start (default `"0s"`;
    /// with the default `start_time`, `"1d2h"` is 02:00 on the second day).
    #[serde(default)]
    pub at: Option<Span>,
    /// When true, gaps between runs are exponential with mean `every`
    /// (random scans) instead of exactly `every` (default false).
    #[serde(default)]
    pub poisson: bool,
    /// First byte of the region (default 0): bytes or a fraction of the disk.
    #[serde(default)]
    pub start: Option<Portion>,
    /// Size of the region (default: from `start` to the end of the disk):
    /// bytes or a fraction of the disk.
    #[serde(default)]
    pub size: Option<Portion>,
    /// Bytes per run (default: the whole region): bytes or a fraction of the
    /// disk. When shorter than the region, each run starts at a random
    /// block of it, so partial scans wander over the region.
    #[serde(default)]
    pub length: Option<Portion>,
    /// Length of each request (default `"64KiB"` for scans, `"256KiB"` for
    /// backups); a multiple of `block_size`.
    #[serde(default)]
    pub request_size: Option<ByteSize>,
    /// Transfer rate while a run is active (default `"50MiB/s"` for scans,
    /// `"100MiB/s"` for backups); requests are evenly spaced at it.
    #[serde(default)]
    pub throughput: Option<Throughput>,
    /// `"read"` (default) or `"write"`.
    #[serde(default)]
    pub op: SeqOp,
}

/// Which list a [`SeqConfig`] came from: the two differ only in defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeqKind {
    /// A `[[vm.scan]]`.
    Scan,
    /// A `[[vm.backup]]`.
    Backup,
}

impl SeqKind {
    /// The TOML key of the list.
    pub fn key(self) -> &'static str {
        match self {
            SeqKind::Scan => "scan",
            SeqKind::Backup => "backup",
        }
    }
}

fn default_block_size() -> ByteSize {
    ByteSize(4096)
}
fn default_read_ratio() -> f64 {
    0.7
}
fn default_exponent() -> f64 {
    1.0
}
fn default_share() -> f64 {
    0.9
}
fn default_shift_fraction() -> f64 {
    1.0
}
fn default_peak_hour() -> f64 {
    14.0
}

/// Default period of a backup.
pub const BACKUP_EVERY: Span = Span(7 * 86_400 * NS_PER_SEC);

impl SeqConfig {
    /// `request_size` with the kind's default.
    pub fn request_size_or_default(&self, kind: SeqKind) -> u64 {
        self.request_size.map_or(
            match kind {
                SeqKind::Scan => 64 << 10,
                SeqKind::Backup => 256 << 10,
            },
            |s| s.0,
        )
    }

    /// `throughput` with the kind's default, in bytes per second.
    pub fn throughput_or_default(&self, kind: SeqKind) -> u64 {
        self.throughput.map_or(
            match kind {
                SeqKind::Scan => 50 << 20,
                SeqKind::Backup => 100 << 20,
            },
            |t| t.0,
        )
    }

    /// `every` with the kind's default (scans have none).
    pub fn every_or_default(&self, kind: SeqKind) -> Option<u64> {
        match (self.every, kind) {
            (Some(s), _) => Some(s.0),
            (None, SeqKind::Backup) => Some(BACKUP_EVERY.0),
            (None, SeqKind::Scan) => None,
        }
    }

    /// The region (first byte, length) on a disk of `disk` bytes, block-aligned.
    pub fn region(&self, disk: u64, block: u64) -> (u64, u64) {
        let start = self.start.map_or(0, |p| p.resolve(disk, block));
        let size = match self.size {
            Some(p) => p.resolve(disk, block),
            None => disk.saturating_sub(start) / block * block,
        };
        (start, size)
    }

    /// Bytes per run, block-aligned.
    pub fn run_length(&self, disk: u64, block: u64) -> u64 {
        let (_, size) = self.region(disk, block);
        self.length.map_or(size, |p| p.resolve(disk, block))
    }
}

impl SynthConfig {
    /// Parse and validate a TOML workload. Syntax and type errors carry the
    /// line, column and key (from the `toml` crate); validation errors name
    /// the VM and the key.
    pub fn from_toml_str(text: &str) -> Result<SynthConfig, SynthError> {
        let config: SynthConfig = toml::from_str(text).map_err(|e| SynthError(e.to_string()))?;
        config.validate()?;
        Ok(config)
    }

    /// Check every value that the types alone do not constrain.
    pub fn validate(&self) -> Result<(), SynthError> {
        let err = |msg: String| Err(SynthError(msg));
        let block = self.block_size.0;
        if block.checked_rem(512) != Some(0) || block == 0 {
            return err(format!("block_size = {block} bytes: must be a positive multiple of 512"));
        }
        if self.duration.0 == 0 {
            return err("duration must be positive, e.g. \"14d\"".into());
        }
        // Keeps start_time + duration inside u64 nanoseconds (year 2554).
        if self.start_time.0.checked_add(self.duration.0).is_none() {
            return err("start_time + duration is past the year 2554 (u64 nanoseconds)".into());
        }
        if self.vms.is_empty() {
            return err("no VMs: add at least one [[vm]] table".into());
        }
        let mut names = hashbrown::HashSet::new();
        for vm in &self.vms {
            if vm.name.trim().is_empty() {
                return err("a [[vm]] has an empty name".into());
            }
            if !names.insert(vm.name.as_str()) {
                return err(format!("vm {:?} is defined twice: names must be unique", vm.name));
            }
            vm.validate(block).map_err(|m| SynthError(format!("vm {:?}: {m}", vm.name)))?;
        }
        Ok(())
    }

    /// Approximate number of requests the workload generates: the mean of the
    /// random arrivals plus the scheduled sequential runs. Meant for progress
    /// bars and for sizing a config, not exact.
    pub fn expected_requests(&self) -> f64 {
        let dur = self.duration.0;
        let block = self.block_size.0.max(1);
        let mut total = 0.0;
        for vm in &self.vms {
            total += vm.iops * dur as f64 / NS_PER_SEC as f64;
            let disk = vm.disk.0 / block * block;
            for (kind, seqs) in [(SeqKind::Scan, &vm.scan), (SeqKind::Backup, &vm.backup)] {
                for s in seqs {
                    let (Some(every), at) = (s.every_or_default(kind), s.at.map_or(0, |a| a.0)) else {
                        continue;
                    };
                    if at >= dur || every == 0 {
                        continue;
                    }
                    let runs = if s.poisson {
                        (dur - at) as f64 / every as f64
                    } else {
                        ((dur - at - 1) / every + 1) as f64
                    };
                    let req = s.request_size_or_default(kind).max(1);
                    total += runs * s.run_length(disk, block).div_ceil(req) as f64;
                }
            }
        }
        total
    }
}

/// A probability-like value in [0, 1].
fn check_unit(key: &str, v: f64) -> Result<(), String> {
    if !(0.0..=1.0).contains(&v) {
        return Err(format!("{key} = {v} is outside [0, 1]"));
    }
    Ok(())
}

fn check_multiple(key: &str, bytes: u64, block: u64) -> Result<(), String> {
    if bytes == 0 || bytes.checked_rem(block) != Some(0) {
        return Err(format!(
            "{key} = {bytes} bytes must be a positive multiple of block_size ({})",
            show_bytes(block)
        ));
    }
    Ok(())
}

impl VmConfig {
    /// The disk size rounded down to whole blocks.
    pub fn disk_bytes(&self, block: u64) -> u64 {
        self.disk.0 / block * block
    }

    fn validate(&self, block: u64) -> Result<(), String> {
        let disk = self.disk_bytes(block);
        if disk == 0 {
            return Err(format!(
                "disk = {} is smaller than one block ({})",
                show_bytes(self.disk.0),
                show_bytes(block)
            ));
        }
        if !self.iops.is_finite() || self.iops < 0.0 {
            return Err(format!("iops = {} must be a non-negative number of requests per second", self.iops));
        }
        // More than a million requests per second per VM would make a trace
        // nobody can replay; it is almost surely a unit mistake.
        if self.iops > 1e6 {
            return Err(format!("iops = {} is above 1e6 requests per second", self.iops));
        }
        check_unit("read_ratio", self.read_ratio)?;
        let mut max_req = block;
        if let Some(sizes) = &self.request_size {
            let entries = sizes.entries();
            if entries.is_empty() {
                return Err("request_size is an empty list".into());
            }
            let mut total_weight = 0.0;
            for (len, w) in entries {
                check_multiple("request_size", len, block)?;
                if len > disk {
                    return Err(format!(
                        "request_size = {} is larger than the disk ({})",
                        show_bytes(len),
                        show_bytes(disk)
                    ));
                }
                if !w.is_finite() || w < 0.0 {
                    return Err(format!("request_size weight = {w} must be a non-negative number"));
                }
                total_weight += w;
                max_req = max_req.max(len);
            }
            if total_weight <= 0.0 {
                return Err("request_size weights are all zero".into());
            }
        }
        if let Some(hot) = &self.hot {
            hot.validate(disk, block, max_req).map_err(|m| format!("hot.{m}"))?;
        }
        if let Some(d) = &self.diurnal {
            check_unit("diurnal.amplitude", d.amplitude)?;
            if !(0.0..24.0).contains(&d.peak_hour) {
                return Err(format!("diurnal.peak_hour = {} is outside [0, 24)", d.peak_hour));
            }
        }
        for (kind, list) in [(SeqKind::Scan, &self.scan), (SeqKind::Backup, &self.backup)] {
            for (i, s) in list.iter().enumerate() {
                s.validate(kind, disk, block).map_err(|m| format!("{} #{}: {m}", kind.key(), i + 1))?;
            }
        }
        Ok(())
    }
}

impl HotConfig {
    /// The extent size: configured, or the largest request rounded to blocks.
    pub fn extent_bytes(&self, block: u64, max_request: u64) -> u64 {
        self.extent.map_or(max_request.div_ceil(block) * block, |e| e.0)
    }

    fn validate(&self, disk: u64, block: u64, max_req: u64) -> Result<(), String> {
        if let Portion::Bytes(b) = self.size {
            if b > disk {
                return Err(format!(
                    "size = {} is larger than the disk ({})",
                    show_bytes(b),
                    show_bytes(disk)
                ));
            }
        }
        let extent = self.extent_bytes(block, max_req);
        check_multiple("extent", extent, block)?;
        if extent > disk {
            return Err(format!("extent = {} is larger than the disk", show_bytes(extent)));
        }
        let bytes = self.size.resolve(disk, extent);
        if bytes == 0 {
            return Err(format!(
                "size = {} is smaller than one extent ({}); give bytes like \"256MiB\" or a fraction like 0.02",
                self.size,
                show_bytes(extent)
            ));
        }
        if !self.exponent.is_finite() || !(0.0..=10.0).contains(&self.exponent) {
            return Err(format!("exponent = {} is outside [0, 10]", self.exponent));
        }
        check_unit("share", self.share)?;
        check_unit("shift_fraction", self.shift_fraction)?;
        if self.shift_every == Some(Span(0)) {
            return Err("shift_every must be positive (leave it out for a static hot set)".into());
        }
        Ok(())
    }
}

impl SeqConfig {
    fn validate(&self, kind: SeqKind, disk: u64, block: u64) -> Result<(), String> {
        match self.every_or_default(kind) {
            None => return Err("every is required, e.g. every = \"12h\"".into()),
            Some(0) => return Err("every must be positive".into()),
            Some(_) => {}
        }
        for (key, p) in [("start", self.start), ("size", self.size), ("length", self.length)] {
            if let Some(Portion::Bytes(b)) = p {
                if b > disk {
                    return Err(format!(
                        "{key} = {} is past the end of the disk ({})",
                        show_bytes(b),
                        show_bytes(disk)
                    ));
                }
            }
        }
        let (start, size) = self.region(disk, block);
        if start.saturating_add(size) > disk {
            return Err(format!(
                "region start + size = {} is past the end of the disk ({})",
                show_bytes(start + size),
                show_bytes(disk)
            ));
        }
        if size == 0 {
            return Err("the region (start, size) is empty".into());
        }
        let length = self.run_length(disk, block);
        if length == 0 {
            return Err("length is smaller than one block".into());
        }
        if length > size {
            return Err(format!(
                "length = {} is larger than the region ({})",
                show_bytes(length),
                show_bytes(size)
            ));
        }
        check_multiple("request_size", self.request_size_or_default(kind), block)?;
        if self.throughput_or_default(kind) == 0 {
            return Err("throughput must be positive".into());
        }
        Ok(())
    }
}

// ---- Deserialisation of the unit types -------------------------------------
//
// Each goes through `toml::Value` so that one type accepts several TOML
// spellings (integer, float, string, date-time) and so errors raised here are
// placed by the toml crate at the offending value's line.

fn de_value<'de, D: Deserializer<'de>>(d: D) -> Result<toml::Value, D::Error> {
    toml::Value::deserialize(d)
}

fn kind_of(v: &toml::Value) -> &'static str {
    v.type_str()
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match de_value(d)? {
            toml::Value::Integer(i) if i >= 0 => Ok(ByteSize(i as u64)),
            toml::Value::String(s) => units::parse_size(&s).map(ByteSize).map_err(D::Error::custom),
            v => Err(D::Error::custom(format!(
                "expected a size like \"4KiB\" or a non-negative byte count, found {} {v}",
                kind_of(&v)
            ))),
        }
    }
}

impl<'de> Deserialize<'de> for Span {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let bad = |v: &toml::Value| {
            D::Error::custom(format!(
                "expected a duration like \"14d\", \"2h\" or \"90s\" (or seconds), found {} {v}",
                kind_of(v)
            ))
        };
        match de_value(d)? {
            toml::Value::Integer(i) if i >= 0 => (i as u64)
                .checked_mul(NS_PER_SEC)
                .map(Span)
                .ok_or_else(|| D::Error::custom("duration is too large")),
            toml::Value::Float(f) if (0.0..1e9).contains(&f) => {
                Ok(Span((f * NS_PER_SEC as f64).round() as u64))
            }
            toml::Value::String(s) => units::parse_duration(&s).map(Span).map_err(D::Error::custom),
            v => Err(bad(&v)),
        }
    }
}

impl<'de> Deserialize<'de> for Throughput {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match de_value(d)? {
            toml::Value::Integer(i) if i >= 0 => Ok(Throughput(i as u64)),
            toml::Value::String(s) => units::parse_throughput(&s).map(Throughput).map_err(D::Error::custom),
            v => Err(D::Error::custom(format!(
                "expected a throughput like \"100MiB/s\", found {} {v}",
                kind_of(&v)
            ))),
        }
    }
}

impl<'de> Deserialize<'de> for Portion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match de_value(d)? {
            toml::Value::Integer(i) if i >= 0 => Ok(Portion::Bytes(i as u64)),
            toml::Value::Float(f) if (0.0..=1.0).contains(&f) => Ok(Portion::Fraction(f)),
            toml::Value::Float(f) => Err(D::Error::custom(format!(
                "fraction {f} is outside [0, 1]; for bytes give a size like \"256MiB\""
            ))),
            toml::Value::String(s) => match s.trim().strip_suffix('%') {
                Some(pct) => match pct.trim().parse::<f64>() {
                    Ok(p) if (0.0..=100.0).contains(&p) => Ok(Portion::Fraction(p / 100.0)),
                    _ => Err(D::Error::custom(format!("{s:?} is not a percentage in [0%, 100%]"))),
                },
                None => units::parse_size(&s).map(Portion::Bytes).map_err(D::Error::custom),
            },
            v => Err(D::Error::custom(format!(
                "expected a size like \"256MiB\", a fraction like 0.05 or a percentage like \"5%\", found {} {v}",
                kind_of(&v)
            ))),
        }
    }
}

impl<'de> Deserialize<'de> for StartTime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match de_value(d)? {
            toml::Value::Integer(i) if i >= 0 => (i as u64)
                .checked_mul(NS_PER_SEC)
                .map(StartTime)
                .ok_or_else(|| D::Error::custom("start_time is too large")),
            toml::Value::Datetime(dt) => {
                units::datetime_to_unix_ns(&dt).map(StartTime).map_err(D::Error::custom)
            }
            toml::Value::String(s) => {
                let dt: toml::value::Datetime = s.trim().parse().map_err(|_| {
                    D::Error::custom(format!(
                        "start_time {s:?} is not a date-time like 2016-01-04T00:00:00Z or a date like 2016-01-04"
                    ))
                })?;
                units::datetime_to_unix_ns(&dt).map(StartTime).map_err(D::Error::custom)
            }
            v => Err(D::Error::custom(format!(
                "expected a date-time like 2016-01-04T00:00:00Z or Unix seconds, found {} {v}",
                kind_of(&v)
            ))),
        }
    }
}

impl<'de> Deserialize<'de> for RequestSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match de_value(d)? {
            v @ (toml::Value::Integer(_) | toml::Value::String(_)) => {
                ByteSize::deserialize(v).map(RequestSize::Fixed).map_err(D::Error::custom)
            }
            toml::Value::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.into_iter().enumerate() {
                    let entry = SizeWeight::deserialize(item)
                        .map_err(|e| D::Error::custom(format!("request_size entry #{}: {e}", i + 1)))?;
                    out.push(entry);
                }
                Ok(RequestSize::Mix(out))
            }
            v => Err(D::Error::custom(format!(
                "expected a size like \"4KiB\" or a list like [{{ size = \"4KiB\", weight = 3 }}], found {} {v}",
                kind_of(&v)
            ))),
        }
    }
}
