//! Loading traces into memory once, in a compact form every replay job
//! shares read-only.

use std::path::{Path, PathBuf};

use cloudcache_trace::{Op, OpenOptions, Request, RequestSource, TraceError, TraceReader, VolumeId};

/// Largest read or write a trace may hold: 4 GiB, beyond any real transfer
/// (NBD and SCSI lengths are 32-bit). Trims may be larger: discarding a
/// whole device is real, and the engine handles it without per-block work.
pub const MAX_IO_BYTES: u64 = 1 << 32;

/// A request as replay needs it: 32 bytes, no content hashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompactRequest {
    /// Issue time in nanoseconds.
    pub time_ns: u64,
    /// First byte.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
    /// Volume id (index into [`LoadedTrace::volume_names`]).
    pub volume: VolumeId,
    /// Read, write or trim.
    pub op: Op,
}

impl From<&Request> for CompactRequest {
    fn from(r: &Request) -> Self {
        CompactRequest { time_ns: r.time_ns, offset: r.offset, len: r.len, volume: r.volume, op: r.op }
    }
}

/// Where the requests came from.
#[derive(Clone, Debug)]
pub struct SourceInfo {
    /// The file.
    pub path: PathBuf,
    /// Format read.
    pub format: String,
    /// Compression found.
    pub compression: String,
    /// Requests read from it.
    pub requests: u64,
    /// Bad lines skipped under `--skip-bad-lines`.
    pub skipped_lines: u64,
}

/// One or more traces in memory, merged by time.
#[derive(Clone, Debug, Default)]
pub struct LoadedTrace {
    /// All requests, in time order (ties keep file order).
    pub requests: Vec<CompactRequest>,
    /// Volume names by id.
    pub volume_names: Vec<String>,
    /// Whether every source had timestamps.
    pub has_timestamps: bool,
    /// The files read.
    pub sources: Vec<SourceInfo>,
}

impl LoadedTrace {
    /// Read every request of an opened trace file into memory, reporting
    /// progress in requests.
    pub fn read(path: &Path, reader: &mut TraceReader, progress: &dyn Fn(u64)) -> Result<Self, TraceError> {
        let (format, compression) = (reader.format().name(), reader.compression());
        LoadedTrace::read_source(reader, &path.display().to_string(), format, compression, progress)
    }

    /// Read every request of any source (a trace file, the synthetic
    /// generator) into memory; `label`, `format` and `compression` describe it
    /// in reports.
    pub fn read_source(
        source: &mut dyn RequestSource,
        label: &str,
        format: &str,
        compression: &str,
        progress: &dyn Fn(u64),
    ) -> Result<Self, TraceError> {
        const STEP: usize = 1 << 16;
        let mut requests = Vec::new();
        let mut req = Request::default();
        while source.next_request(&mut req)? {
            if req.len > MAX_IO_BYTES && req.op != Op::Trim {
                // Replaying it would take block-by-block work for nothing real.
                return Err(TraceError::file(
                    label,
                    format!(
                        "request {} is a {} of {} bytes at offset {}: larger than any real I/O ({} bytes); \
                         the length field is probably corrupt",
                        requests.len() + 1,
                        req.op.name(),
                        req.len,
                        req.offset,
                        MAX_IO_BYTES
                    ),
                ));
            }
            requests.push(CompactRequest::from(&req));
            if requests.len() % STEP == 0 {
                progress(STEP as u64);
            }
        }
        progress((requests.len() % STEP) as u64);
        let info = SourceInfo {
            path: PathBuf::from(label),
            format: format.to_owned(),
            compression: compression.to_owned(),
            requests: requests.len() as u64,
            skipped_lines: source.skipped(),
        };
        Ok(LoadedTrace {
            requests,
            volume_names: source.volumes().names().to_vec(),
            has_timestamps: source.has_timestamps(),
            sources: vec![info],
        })
    }

    /// Open and load several traces and merge them into one by time; each
    /// keeps its own volumes (names that clash get a `#n` suffix).
    pub fn load(
        paths: &[PathBuf],
        options: &OpenOptions,
        progress: &dyn Fn(u64),
    ) -> Result<Self, TraceError> {
        LoadedTrace::load_shifted(paths, &[], options, progress)
    }

    /// As [`LoadedTrace::load`], with the timestamps of trace `i` moved
    /// later by `shifts_ns[i]` (missing shifts are 0) before the merge, so
    /// traces recorded at different times can play side by side as VMs of
    /// one host.
    pub fn load_shifted(
        paths: &[PathBuf],
        shifts_ns: &[u64],
        options: &OpenOptions,
        progress: &dyn Fn(u64),
    ) -> Result<Self, TraceError> {
        let mut merged = LoadedTrace { has_timestamps: true, ..LoadedTrace::default() };
        for (i, path) in paths.iter().enumerate() {
            let mut reader = cloudcache_trace::open(path, options)?;
            let mut loaded = LoadedTrace::read(path, &mut reader, progress)?;
            if let Some(&shift) = shifts_ns.get(i).filter(|&&s| s > 0) {
                for r in &mut loaded.requests {
                    r.time_ns = r.time_ns.saturating_add(shift);
                }
            }
            merged.append(loaded);
        }
        if paths.len() > 1 {
            // Stable: requests of equal time keep their file order.
            merged.requests.sort_by_key(|r| r.time_ns);
        }
        Ok(merged)
    }

    fn append(&mut self, other: LoadedTrace) {
        if self.requests.is_empty() && self.volume_names.is_empty() {
            // The first (often only) trace: nothing to renumber or merge.
            let has_timestamps = self.has_timestamps && other.has_timestamps;
            let mut sources = std::mem::take(&mut self.sources);
            sources.extend(other.sources.iter().cloned());
            *self = LoadedTrace { has_timestamps, sources, ..other };
            return;
        }
        let base = self.volume_names.len() as VolumeId;
        for name in other.volume_names {
            let mut unique = name.clone();
            let mut n = 2;
            while self.volume_names.contains(&unique) {
                unique = format!("{name}#{n}");
                n += 1;
            }
            self.volume_names.push(unique);
        }
        self.requests.extend(other.requests.into_iter().map(|mut r| {
            r.volume += base;
            r
        }));
        self.has_timestamps &= other.has_timestamps;
        self.sources.extend(other.sources);
    }

    /// The same trace description with no requests (to build a subset).
    pub fn clone_without_requests(&self) -> LoadedTrace {
        LoadedTrace {
            requests: Vec::new(),
            volume_names: self.volume_names.clone(),
            has_timestamps: self.has_timestamps,
            sources: self.sources.clone(),
        }
    }

    /// Name of volume `id`.
    pub fn volume_name(&self, id: usize) -> String {
        self.volume_names.get(id).cloned().unwrap_or_else(|| id.to_string())
    }

    /// Block accesses at `block_size`: an upper bound on distinct blocks,
    /// used to size cache tables without a pass over a hash set.
    pub fn block_accesses(&self, block_size: u64) -> u64 {
        let shift = block_size.trailing_zeros();
        self.requests
            .iter()
            .filter(|r| r.len > 0 && r.op != Op::Trim)
            .map(|r| ((r.offset.saturating_add(r.len) - 1) >> shift) - (r.offset >> shift) + 1)
            .fold(0u64, u64::saturating_add)
    }

    /// The smallest positive gap between successive request times: the
    /// finest time step the trace can tell apart (`None` without
    /// timestamps or with fewer than two distinct times).
    pub fn time_resolution_ns(&self) -> Option<u64> {
        if !self.has_timestamps {
            return None;
        }
        self.requests
            .windows(2)
            .filter_map(|w| w[1].time_ns.checked_sub(w[0].time_ns))
            .filter(|&d| d > 0)
            .min()
    }

    /// Earliest and latest request time, when the trace has timestamps.
    pub fn time_span_ns(&self) -> Option<(u64, u64)> {
        if !self.has_timestamps {
            return None;
        }
        self.requests.iter().fold(None, |span, r| match span {
            None => Some((r.time_ns, r.time_ns)),
            Some((first, last)) => Some((first.min(r.time_ns), last.max(r.time_ns))),
        })
    }
}
