//! The validation report behind `cloudcache trace info`: what is in a trace
//! and whether it looks sane, in one pass.
//!
//! Memory is bounded except for the set of distinct 4 KiB blocks (the
//! footprint), which costs about 10 bytes per block touched. Everything is
//! counted in the units a cache operator thinks in: requests, bytes, 4 KiB
//! blocks and 512-byte sectors.

use serde::Serialize;

use crate::error::TraceError;
use crate::request::{Op, Request, VolumeId, VolumeTable};
use crate::TraceReader;

/// Block size of the footprint and alignment statistics.
pub const BLOCK_BYTES: u64 = 4096;
/// Sector size for offset remainders.
pub const SECTOR_BYTES: u64 = 512;
/// Per-volume detail is kept for this many volumes (the busiest).
pub const TOP_VOLUMES: usize = 20;
/// Requests larger than this many 4 KiB blocks (1 GiB) are counted but not
/// added block by block to the footprint: one corrupt length must not make
/// the report allocate for hours.
pub const MAX_FOOTPRINT_BLOCKS_PER_REQUEST: u64 = 1 << 18;
/// How often (in requests) the progress callback is called.
pub const PROGRESS_EVERY: u64 = 1 << 16;

const SECTORS_PER_BLOCK: usize = (BLOCK_BYTES / SECTOR_BYTES) as usize;

/// Everything `trace info` reports. Serialises to the JSON that
/// `trace info --json` writes; [`TraceInfo::render_text`] is the human view.
#[derive(Clone, Debug, Serialize)]
pub struct TraceInfo {
    /// Format name (`vscsi`, `msr`, ...).
    pub format: String,
    /// `gzip`, `zstd` or `none`.
    pub compression: String,
    /// Requests read.
    pub requests: u64,
    /// Malformed lines skipped (only with `--skip-bad-lines`).
    pub skipped_lines: u64,
    /// Time span.
    pub time: TimeSpan,
    /// Volumes and the busiest ones.
    pub volumes: Volumes,
    /// Read / write / trim mix.
    pub ops: OpMix,
    /// Request sizes.
    pub sizes: Sizes,
    /// Alignment to 4 KiB blocks.
    pub alignment: Alignment,
    /// Distinct 4 KiB blocks addressed.
    pub footprint: Footprint,
    /// Requests of length 0.
    pub zero_length_requests: u64,
    /// Requests carrying content hashes.
    pub content_requests: u64,
}

/// When the trace's requests were issued.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TimeSpan {
    /// False for formats without timestamps; the other fields are then empty.
    pub has_timestamps: bool,
    /// Time of the first request in file order (ns).
    pub first_ns: Option<u64>,
    /// Time of the last request in file order (ns).
    pub last_ns: Option<u64>,
    /// Earliest time (ns).
    pub min_ns: Option<u64>,
    /// Latest time (ns).
    pub max_ns: Option<u64>,
    /// `max_ns - min_ns`.
    pub duration_ns: Option<u64>,
    /// Mean request rate over the span.
    pub requests_per_second: Option<f64>,
    /// Requests issued earlier than the request before them.
    pub out_of_order: u64,
}

/// Volume count, names and the busiest volumes.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Volumes {
    /// Distinct volumes addressed.
    pub count: u64,
    /// Every volume name, by id.
    pub names: Vec<String>,
    /// Up to [`TOP_VOLUMES`] volumes with the most requests, busiest first.
    pub top: Vec<VolumeInfo>,
}

/// One volume's share of the trace.
#[derive(Clone, Debug, Default, Serialize)]
pub struct VolumeInfo {
    /// Volume id.
    pub id: VolumeId,
    /// Volume name.
    pub name: String,
    /// Requests.
    pub requests: u64,
    /// Read requests.
    pub reads: u64,
    /// Write requests.
    pub writes: u64,
    /// Bytes addressed by all requests.
    pub bytes: u64,
    /// Distinct 4 KiB blocks read or written.
    pub footprint_blocks: u64,
    /// `footprint_blocks` in bytes.
    pub footprint_bytes: u64,
}

/// Requests and bytes of one operation.
#[derive(Clone, Debug, Default, Serialize)]
pub struct OpCount {
    /// Requests.
    pub requests: u64,
    /// Bytes addressed.
    pub bytes: u64,
    /// Share of all requests (0..1).
    pub request_fraction: f64,
    /// Share of all bytes (0..1).
    pub byte_fraction: f64,
}

/// The operation mix.
#[derive(Clone, Debug, Default, Serialize)]
pub struct OpMix {
    /// Reads.
    pub read: OpCount,
    /// Writes.
    pub write: OpCount,
    /// Trims (discards).
    pub trim: OpCount,
}

/// One power-of-two size bucket: `from_bytes <= len < to_bytes`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SizeBucket {
    /// Lower bound (inclusive).
    pub from_bytes: u64,
    /// Upper bound (exclusive); `u64::MAX` for the last bucket.
    pub to_bytes: u64,
    /// Requests in the bucket.
    pub requests: u64,
    /// Share of all requests (0..1).
    pub fraction: f64,
}

/// Request sizes.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Sizes {
    /// Smallest request (bytes); 0 for an empty trace.
    pub min_bytes: u64,
    /// Mean request size (bytes).
    pub mean_bytes: f64,
    /// Largest request (bytes).
    pub max_bytes: u64,
    /// Non-empty power-of-two buckets, smallest first.
    pub buckets: Vec<SizeBucket>,
}

/// Requests whose offset has one remainder modulo 4 KiB.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Remainder {
    /// `offset % 4096 / 512`.
    pub sectors: u64,
    /// `offset % 4096`.
    pub bytes: u64,
    /// Requests with this remainder.
    pub requests: u64,
    /// Share of all requests (0..1).
    pub fraction: f64,
}

/// How requests sit on 4 KiB block boundaries.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Alignment {
    /// Requests whose offset is a multiple of 4 KiB.
    pub offset_aligned: u64,
    /// `offset_aligned` as a share of all requests.
    pub offset_aligned_fraction: f64,
    /// Requests whose offset and length are both multiples of 4 KiB.
    pub fully_aligned: u64,
    /// `fully_aligned` as a share of all requests.
    pub fully_aligned_fraction: f64,
    /// Requests whose offset or length is not a multiple of 512 bytes.
    pub not_sector_aligned: u64,
    /// Sector-aligned offsets by remainder modulo 4 KiB (non-empty ones, by sector).
    pub remainders: Vec<Remainder>,
    /// The most common remainder, if any request is sector-aligned.
    pub dominant: Option<Remainder>,
    /// Requests whose range crosses at least one 4 KiB boundary (touches two or more blocks).
    pub crossing: u64,
    /// `crossing` as a share of all requests.
    pub crossing_fraction: f64,
    /// Requests that touch more 4 KiB blocks than their length needs,
    /// because they are misaligned: each costs a 4 KiB cache an extra block.
    pub extra_block: u64,
    /// `extra_block` as a share of all requests.
    pub extra_block_fraction: f64,
    /// One sentence on what the remainders mean.
    pub finding: String,
}

/// Distinct 4 KiB blocks addressed by reads and writes (trims excluded:
/// they bring no data into a cache).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Footprint {
    /// Distinct (volume, 4 KiB block) pairs read or written.
    pub blocks: u64,
    /// `blocks` in bytes.
    pub bytes: u64,
    /// Blocks read and never written.
    pub read_only_blocks: u64,
    /// `read_only_blocks` in bytes.
    pub read_only_bytes: u64,
    /// Blocks written at least once.
    pub written_blocks: u64,
    /// `written_blocks` in bytes.
    pub written_bytes: u64,
    /// Requests larger than [`MAX_FOOTPRINT_BLOCKS_PER_REQUEST`] blocks,
    /// left out of the footprint.
    pub oversized_requests: u64,
}

/// Read every remaining request of `reader` and report on them. `progress`
/// gets the number of requests read so far every [`PROGRESS_EVERY`]
/// requests and at the end.
pub fn analyze(reader: &mut TraceReader, mut progress: impl FnMut(u64)) -> Result<TraceInfo, TraceError> {
    let mut analyzer = Analyzer::new();
    let mut req = Request::default();
    while reader.next_request(&mut req)? {
        analyzer.observe(&req);
        if analyzer.requests % PROGRESS_EVERY == 0 {
            progress(analyzer.requests);
        }
    }
    progress(analyzer.requests);
    Ok(analyzer.finish(
        reader.volumes(),
        reader.has_timestamps(),
        reader.format().name(),
        reader.compression(),
        reader.skipped(),
    ))
}

#[derive(Clone, Copy, Default)]
struct OpAcc {
    requests: u64,
    bytes: u64,
}

#[derive(Clone, Copy, Default)]
struct VolumeAcc {
    requests: u64,
    reads: u64,
    writes: u64,
    bytes: u64,
    blocks: u64,
}

/// Volume ids below this index a vector; rarer, larger ones a map (every
/// reader hands out dense ids, but nothing forces a source to).
const DENSE_VOLUMES: VolumeId = 1 << 20;

/// The set of distinct (volume, block) pairs, with a "written" mark.
///
/// Most pairs pack into one `u64` (19 bits of volume, 44 bits of block,
/// 1 bit "written") so the set costs about 10 bytes per block; the rest go
/// to a plain map.
struct BlockSet {
    packed: hashbrown::HashSet<u64>,
    wide: hashbrown::HashMap<(VolumeId, u64), bool>,
    read_only: u64,
}

enum Touch {
    /// First time the block is seen.
    New,
    /// Seen before (possibly now marked written).
    Seen,
}

impl BlockSet {
    fn new() -> Self {
        BlockSet {
            packed: hashbrown::HashSet::with_capacity(1 << 16),
            wide: hashbrown::HashMap::new(),
            read_only: 0,
        }
    }

    fn len(&self) -> u64 {
        (self.packed.len() + self.wide.len()) as u64
    }

    fn touch(&mut self, volume: VolumeId, block: u64, write: bool) -> Touch {
        if volume < (1 << 19) && block < (1 << 44) {
            let base = (u64::from(volume) << 45) | (block << 1);
            if write {
                if !self.packed.insert(base | 1) {
                    return Touch::Seen;
                }
                if self.packed.remove(&base) {
                    self.read_only -= 1;
                    return Touch::Seen;
                }
                Touch::New
            } else {
                if self.packed.contains(&(base | 1)) || !self.packed.insert(base) {
                    return Touch::Seen;
                }
                self.read_only += 1;
                Touch::New
            }
        } else {
            match self.wide.get_mut(&(volume, block)) {
                Some(written) => {
                    if write && !*written {
                        *written = true;
                        self.read_only -= 1;
                    }
                    Touch::Seen
                }
                None => {
                    self.wide.insert((volume, block), write);
                    if !write {
                        self.read_only += 1;
                    }
                    Touch::New
                }
            }
        }
    }
}

/// The single-pass accumulator behind [`analyze`], for callers that already
/// walk a trace for another reason.
pub struct Analyzer {
    requests: u64,
    first_ns: Option<u64>,
    last_ns: u64,
    min_ns: u64,
    max_ns: u64,
    out_of_order: u64,
    ops: [OpAcc; 3],
    min_len: u64,
    max_len: u64,
    total_bytes: u128,
    /// Index 0: length 0; index i > 0: `2^(i-1) <= len < 2^i`.
    size_buckets: [u64; 65],
    offset_aligned: u64,
    fully_aligned: u64,
    not_sector_aligned: u64,
    remainders: [u64; SECTORS_PER_BLOCK],
    crossing: u64,
    extra_block: u64,
    zero_length: u64,
    content: u64,
    oversized: u64,
    dense: Vec<VolumeAcc>,
    sparse: hashbrown::HashMap<VolumeId, VolumeAcc>,
    blocks: BlockSet,
}

impl Default for Analyzer {
    fn default() -> Self {
        Self::new()
    }
}

impl Analyzer {
    /// An analyzer that has seen nothing.
    pub fn new() -> Self {
        Analyzer {
            requests: 0,
            first_ns: None,
            last_ns: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            out_of_order: 0,
            ops: [OpAcc::default(); 3],
            min_len: u64::MAX,
            max_len: 0,
            total_bytes: 0,
            size_buckets: [0; 65],
            offset_aligned: 0,
            fully_aligned: 0,
            not_sector_aligned: 0,
            remainders: [0; SECTORS_PER_BLOCK],
            crossing: 0,
            extra_block: 0,
            zero_length: 0,
            content: 0,
            oversized: 0,
            dense: Vec::new(),
            sparse: hashbrown::HashMap::new(),
            blocks: BlockSet::new(),
        }
    }

    fn volume(&mut self, id: VolumeId) -> &mut VolumeAcc {
        if id < DENSE_VOLUMES {
            let index = id as usize;
            if self.dense.len() <= index {
                self.dense.resize(index + 1, VolumeAcc::default());
            }
            &mut self.dense[index]
        } else {
            self.sparse.entry(id).or_default()
        }
    }

    /// Account for one request.
    pub fn observe(&mut self, req: &Request) {
        self.requests += 1;
        let t = req.time_ns;
        if self.first_ns.is_none() {
            self.first_ns = Some(t);
        } else if t < self.last_ns {
            self.out_of_order += 1;
        }
        self.last_ns = t;
        self.min_ns = self.min_ns.min(t);
        self.max_ns = self.max_ns.max(t);

        let op_index = match req.op {
            Op::Read => 0,
            Op::Write => 1,
            Op::Trim => 2,
        };
        let op = &mut self.ops[op_index];
        op.requests += 1;
        op.bytes = op.bytes.saturating_add(req.len);

        let len = req.len;
        self.min_len = self.min_len.min(len);
        self.max_len = self.max_len.max(len);
        self.total_bytes += u128::from(len);
        self.size_buckets[(64 - len.leading_zeros()) as usize] += 1;
        if len == 0 {
            self.zero_length += 1;
        }
        if !req.content.is_empty() {
            self.content += 1;
        }

        let within = req.offset % BLOCK_BYTES;
        if within == 0 {
            self.offset_aligned += 1;
            if len % BLOCK_BYTES == 0 {
                self.fully_aligned += 1;
            }
        }
        if req.offset % SECTOR_BYTES != 0 || len % SECTOR_BYTES != 0 {
            self.not_sector_aligned += 1;
        }
        if req.offset % SECTOR_BYTES == 0 {
            self.remainders[(within / SECTOR_BYTES) as usize] += 1;
        }
        let (first_block, touched) = if len == 0 {
            (req.offset / BLOCK_BYTES, 0)
        } else {
            let first = req.offset / BLOCK_BYTES;
            let last = (req.end() - 1) / BLOCK_BYTES;
            (first, last - first + 1)
        };
        if touched >= 2 {
            self.crossing += 1;
        }
        if touched > len.div_ceil(BLOCK_BYTES) {
            self.extra_block += 1;
        }

        let write = req.op == Op::Write;
        let volume = self.volume(req.volume);
        volume.requests += 1;
        volume.bytes = volume.bytes.saturating_add(len);
        match req.op {
            Op::Read => volume.reads += 1,
            Op::Write => volume.writes += 1,
            Op::Trim => {}
        }
        if req.op == Op::Trim {
            return;
        }
        if touched > MAX_FOOTPRINT_BLOCKS_PER_REQUEST {
            self.oversized += 1;
            return;
        }
        let mut new_blocks = 0;
        for block in first_block..first_block + touched {
            if let Touch::New = self.blocks.touch(req.volume, block, write) {
                new_blocks += 1;
            }
        }
        self.volume(req.volume).blocks += new_blocks;
    }

    /// The report, given what the source knows at its end.
    pub fn finish(
        self,
        volumes: &VolumeTable,
        has_timestamps: bool,
        format: &str,
        compression: &str,
        skipped_lines: u64,
    ) -> TraceInfo {
        let n = self.requests;
        let any = n > 0;
        let time = if has_timestamps && any {
            let duration = self.max_ns - self.min_ns;
            TimeSpan {
                has_timestamps: true,
                first_ns: self.first_ns,
                last_ns: Some(self.last_ns),
                min_ns: Some(self.min_ns),
                max_ns: Some(self.max_ns),
                duration_ns: Some(duration),
                requests_per_second: (duration > 0).then(|| n as f64 / (duration as f64 / 1e9)),
                out_of_order: self.out_of_order,
            }
        } else {
            TimeSpan { has_timestamps, ..TimeSpan::default() }
        };

        let total_bytes = u64::try_from(self.total_bytes).unwrap_or(u64::MAX);
        let op_count = |acc: OpAcc| OpCount {
            requests: acc.requests,
            bytes: acc.bytes,
            request_fraction: fraction(acc.requests, n),
            byte_fraction: fraction(acc.bytes, total_bytes),
        };
        let ops =
            OpMix { read: op_count(self.ops[0]), write: op_count(self.ops[1]), trim: op_count(self.ops[2]) };

        let buckets = self
            .size_buckets
            .iter()
            .enumerate()
            .filter(|(_, &count)| count > 0)
            .map(|(i, &count)| {
                let (from, to) = match i {
                    0 => (0, 1),
                    64 => (1 << 63, u64::MAX),
                    _ => (1u64 << (i - 1), 1u64 << i),
                };
                SizeBucket { from_bytes: from, to_bytes: to, requests: count, fraction: fraction(count, n) }
            })
            .collect();
        let sizes = Sizes {
            min_bytes: if any { self.min_len } else { 0 },
            mean_bytes: if any { self.total_bytes as f64 / n as f64 } else { 0.0 },
            max_bytes: self.max_len,
            buckets,
        };

        let remainders: Vec<Remainder> = self
            .remainders
            .iter()
            .enumerate()
            .filter(|(_, &count)| count > 0)
            .map(|(sectors, &count)| Remainder {
                sectors: sectors as u64,
                bytes: sectors as u64 * SECTOR_BYTES,
                requests: count,
                fraction: fraction(count, n),
            })
            .collect();
        // Ties go to the smaller remainder, so the answer does not depend on order.
        let dominant = remainders
            .iter()
            .max_by(|a, b| a.requests.cmp(&b.requests).then(b.sectors.cmp(&a.sectors)))
            .cloned();
        let finding = alignment_finding(dominant.as_ref(), n);
        let alignment = Alignment {
            offset_aligned: self.offset_aligned,
            offset_aligned_fraction: fraction(self.offset_aligned, n),
            fully_aligned: self.fully_aligned,
            fully_aligned_fraction: fraction(self.fully_aligned, n),
            not_sector_aligned: self.not_sector_aligned,
            remainders,
            dominant,
            crossing: self.crossing,
            crossing_fraction: fraction(self.crossing, n),
            extra_block: self.extra_block,
            extra_block_fraction: fraction(self.extra_block, n),
            finding,
        };

        let blocks = self.blocks.len();
        let read_only = self.blocks.read_only;
        let footprint = Footprint {
            blocks,
            bytes: blocks.saturating_mul(BLOCK_BYTES),
            read_only_blocks: read_only,
            read_only_bytes: read_only.saturating_mul(BLOCK_BYTES),
            written_blocks: blocks - read_only,
            written_bytes: (blocks - read_only).saturating_mul(BLOCK_BYTES),
            oversized_requests: self.oversized,
        };

        let mut per_volume: Vec<(VolumeId, VolumeAcc)> = self
            .dense
            .iter()
            .enumerate()
            .filter(|(_, acc)| acc.requests > 0)
            .map(|(id, acc)| (id as VolumeId, *acc))
            .chain(self.sparse.iter().map(|(&id, acc)| (id, *acc)))
            .collect();
        let count = per_volume.len() as u64;
        per_volume.sort_by(|a, b| b.1.requests.cmp(&a.1.requests).then(a.0.cmp(&b.0)));
        let top = per_volume
            .iter()
            .take(TOP_VOLUMES)
            .map(|&(id, acc)| VolumeInfo {
                id,
                name: volumes.name(id),
                requests: acc.requests,
                reads: acc.reads,
                writes: acc.writes,
                bytes: acc.bytes,
                footprint_blocks: acc.blocks,
                footprint_bytes: acc.blocks.saturating_mul(BLOCK_BYTES),
            })
            .collect();
        let volumes = Volumes { count, names: volumes.names().to_vec(), top };

        TraceInfo {
            format: format.to_owned(),
            compression: compression.to_owned(),
            requests: n,
            skipped_lines,
            time,
            volumes,
            ops,
            sizes,
            alignment,
            footprint,
            zero_length_requests: self.zero_length,
            content_requests: self.content,
        }
    }
}

fn fraction(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// What the dominant offset remainder tells an operator.
fn alignment_finding(dominant: Option<&Remainder>, requests: u64) -> String {
    let Some(d) = dominant else {
        return if requests == 0 {
            "no requests".to_owned()
        } else {
            "no request offset is a multiple of 512 bytes".to_owned()
        };
    };
    let pct = percent(d.fraction);
    if d.fraction < 0.5 {
        return format!(
            "offsets mod 4 KiB are spread out; the most common is {} sectors ({} B) for {pct} of requests",
            d.sectors, d.bytes
        );
    }
    match d.sectors {
        0 => format!("offset mod 4 KiB = 0 for {pct} of requests: mostly 4 KiB-aligned"),
        7 => format!(
            "offset mod 4 KiB = 7 sectors (3584 B) for {pct} of requests: the 63-sector partition offset of \
             a legacy MBR disk; with the partition on a 4 KiB boundary these requests would be aligned"
        ),
        s => format!(
            "offset mod 4 KiB = {s} sectors ({} B) for {pct} of requests: consistently shifted, as by a \
             partition starting at a sector = {s} (mod 8); shifting offsets by -{} B would align them",
            d.bytes, d.bytes
        ),
    }
}

/// Split `text` at spaces into lines of at most `width` characters (longer
/// words stay whole).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

fn percent(f: f64) -> String {
    format!("{:.1} %", f * 100.0)
}

/// `1234567` as `1,234,567`.
fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Bytes in binary units: `512 B`, `4 KiB`, `1.5 GiB`.
fn bytes(n: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut unit = 0;
    let mut value = n as f64;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else if value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

fn duration(ns: u64) -> String {
    let total_s = ns / 1_000_000_000;
    let (d, h, m, s) = (total_s / 86_400, total_s / 3600 % 24, total_s / 60 % 60, total_s % 60);
    let frac = (ns % 1_000_000_000) as f64 / 1e9;
    if d > 0 {
        format!("{d} d {h} h {m} min")
    } else if h > 0 {
        format!("{h} h {m} min {s} s")
    } else if m > 0 {
        format!("{m} min {:.1} s", s as f64 + frac)
    } else {
        format!("{:.3} s", s as f64 + frac)
    }
}

/// A timestamp as a UTC date when it looks like one (1980 to 2100 since the
/// Unix epoch), else as seconds on the trace's own clock.
fn timestamp(ns: u64) -> String {
    const FROM: u64 = 315_532_800; // 1980-01-01
    const TO: u64 = 4_102_444_800; // 2100-01-01
    let secs = ns / 1_000_000_000;
    if (FROM..TO).contains(&secs) {
        let (y, mo, d) = civil_from_days((secs / 86_400) as i64);
        let rem = secs % 86_400;
        format!(
            "{y:04}-{mo:02}-{d:02} {:02}:{:02}:{:02}.{:03} UTC",
            rem / 3600,
            rem / 60 % 60,
            rem % 60,
            ns % 1_000_000_000 / 1_000_000
        )
    } else {
        format!("{}.{:06} s", secs, ns % 1_000_000_000 / 1000)
    }
}

/// Days since 1970-01-01 to (year, month, day), after Howard Hinnant's
/// `civil_from_days`.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

impl TraceInfo {
    /// A one-screen human summary.
    pub fn render_text(&self) -> String {
        use std::fmt::Write as _;
        let mut out = String::new();
        let n = self.requests;
        let compression = if self.compression == "none" { "uncompressed" } else { &self.compression };
        let _ = writeln!(out, "trace      {} ({compression}), {} requests", self.format, count(n));

        let t = &self.time;
        match (t.has_timestamps, t.min_ns, t.max_ns, t.duration_ns) {
            (false, ..) => {
                let _ = writeln!(out, "time       no timestamps");
            }
            (true, Some(min), Some(max), Some(span)) => {
                let rate = t.requests_per_second.map_or(String::new(), |r| format!(", {r:.1} req/s"));
                let _ = writeln!(
                    out,
                    "time       {} .. {}: {}{rate}, {} out of order",
                    timestamp(min),
                    timestamp(max),
                    duration(span),
                    count(t.out_of_order)
                );
            }
            _ => {
                let _ = writeln!(out, "time       (no requests)");
            }
        }

        let v = &self.volumes;
        let _ = writeln!(out, "volumes    {}", count(v.count));
        const SHOWN: usize = 5;
        let width = v.top.iter().take(SHOWN).map(|x| x.name.chars().count()).max().unwrap_or(0).min(24);
        for vol in v.top.iter().take(SHOWN) {
            let _ = writeln!(
                out,
                "             {:<width$}  {:>11} req ({}), {} read / {} write, footprint {}",
                vol.name,
                count(vol.requests),
                percent(fraction(vol.requests, n)),
                count(vol.reads),
                count(vol.writes),
                bytes(vol.footprint_bytes),
            );
        }
        if v.count as usize > SHOWN {
            let _ =
                writeln!(out, "             ... and {} more (all in --json)", count(v.count - SHOWN as u64));
        }

        for (name, op) in [("read", &self.ops.read), ("write", &self.ops.write), ("trim", &self.ops.trim)] {
            let label = if name == "read" { "ops" } else { "" };
            let _ = writeln!(
                out,
                "{label:<10} {name:<5} {:>11} ({:>7}), {:>10} ({:>7} of bytes)",
                count(op.requests),
                percent(op.request_fraction),
                bytes(op.bytes),
                percent(op.byte_fraction),
            );
        }

        let s = &self.sizes;
        let _ = writeln!(
            out,
            "sizes      min {}, mean {}, max {}",
            bytes(s.min_bytes),
            bytes(s.mean_bytes.round() as u64),
            bytes(s.max_bytes)
        );
        // The biggest buckets, in size order, so the histogram fits the screen.
        let mut shown: Vec<&SizeBucket> = s.buckets.iter().collect();
        shown.sort_by(|a, b| b.requests.cmp(&a.requests).then(a.from_bytes.cmp(&b.from_bytes)));
        shown.truncate(6);
        shown.sort_by_key(|b| b.from_bytes);
        for b in &shown {
            let bar = "#".repeat((b.fraction * 40.0).round() as usize);
            let label =
                if b.from_bytes == 0 { "0 B".to_owned() } else { format!(">= {}", bytes(b.from_bytes)) };
            let _ = writeln!(
                out,
                "             {label:>11} {:>11} {:>7} {bar}",
                count(b.requests),
                percent(b.fraction)
            );
        }
        if s.buckets.len() > shown.len() {
            let _ = writeln!(
                out,
                "             ({} rarer size buckets in --json)",
                s.buckets.len() - shown.len()
            );
        }

        let a = &self.alignment;
        let _ = writeln!(
            out,
            "alignment  4 KiB-aligned offset {}, offset and length {}, not 512-aligned {}",
            percent(a.offset_aligned_fraction),
            percent(a.fully_aligned_fraction),
            count(a.not_sector_aligned),
        );
        for line in wrap(&a.finding, 96) {
            let _ = writeln!(out, "           {line}");
        }
        let _ = writeln!(
            out,
            "           crossing a 4 KiB boundary {}, touching an extra 4 KiB block through misalignment {}",
            percent(a.crossing_fraction),
            percent(a.extra_block_fraction),
        );

        let f = &self.footprint;
        let _ = writeln!(
            out,
            "footprint  {} blocks of 4 KiB = {} (read-only {}, written {})",
            count(f.blocks),
            bytes(f.bytes),
            bytes(f.read_only_bytes),
            bytes(f.written_bytes),
        );
        if f.oversized_requests > 0 {
            let _ = writeln!(
                out,
                "           {} requests over {} left out of the footprint",
                count(f.oversized_requests),
                bytes(MAX_FOOTPRINT_BLOCKS_PER_REQUEST * BLOCK_BYTES)
            );
        }
        let _ = writeln!(
            out,
            "other      {} zero-length, {} with content hashes, {} bad lines skipped",
            count(self.zero_length_requests),
            count(self.content_requests),
            count(self.skipped_lines),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_numbers_for_people() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(113_872), "113,872");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(4096), "4 KiB");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(u64::MAX), "16 EiB");
        assert_eq!(duration(7_200_000_000_000), "2 h 0 min 0 s");
        assert_eq!(duration(1_500_000_000), "1.500 s");
        assert_eq!(wrap("aa bb cc", 5), ["aa bb", "cc"]);
        assert_eq!(wrap("toolongword x", 4), ["toolongword", "x"]);
        assert!(wrap("", 10).is_empty());
    }

    #[test]
    fn dates_only_for_epoch_like_times() {
        // MSR Cambridge's first request, 2007-02-22.
        assert_eq!(timestamp(1_172_163_600_000_000_000), "2007-02-22 17:00:00.000 UTC");
        assert_eq!(timestamp(5_633_898_368_802_000), "5633898.368802 s");
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }

    #[test]
    fn block_set_tracks_read_only_blocks() {
        let mut set = BlockSet::new();
        assert!(matches!(set.touch(1, 10, false), Touch::New));
        assert!(matches!(set.touch(1, 10, false), Touch::Seen));
        assert_eq!(set.read_only, 1);
        assert!(matches!(set.touch(1, 10, true), Touch::Seen));
        assert_eq!((set.len(), set.read_only), (1, 0));
        assert!(matches!(set.touch(1, 10, false), Touch::Seen));
        // Pairs that do not pack go to the wide map, with the same rules.
        assert!(matches!(set.touch(1 << 20, 1 << 50, false), Touch::New));
        assert!(matches!(set.touch(1 << 20, 1 << 50, true), Touch::Seen));
        assert!(matches!(set.touch(2, 1 << 45, true), Touch::New));
        assert_eq!((set.len(), set.read_only), (3, 0));
    }
}
