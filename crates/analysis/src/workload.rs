//! A trace in memory in the form every analysis pass reads: compact requests
//! (32 bytes each) and, for traces that carry them (FIU), the per-4 KiB
//! content hashes in one side array.

use cloudcache_trace::{ContentHash, Op, Request, RequestSource, TraceError, VolumeId};

/// Largest read or write accepted: 4 GiB (the simulator's rule; longer
/// lengths are corrupt, and expanding them block by block would take hours).
pub const MAX_IO_BYTES: u64 = 1 << 32;

/// Requests between progress callbacks while loading.
const PROGRESS_STEP: usize = 1 << 16;

/// One request without its content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkloadRequest {
    /// Issue time (ns).
    pub time_ns: u64,
    /// First byte.
    pub offset: u64,
    /// Bytes.
    pub len: u64,
    /// Volume id (index into [`Workload::volume_names`]).
    pub volume: VolumeId,
    /// Read, write or trim.
    pub op: Op,
}

impl WorkloadRequest {
    /// The blocks of `2^shift` bytes the request touches, `None` when it is
    /// empty.
    #[inline]
    pub fn blocks(&self, shift: u32) -> Option<(u64, u64)> {
        if self.len == 0 {
            return None;
        }
        let end = self.offset.saturating_add(self.len);
        if end == self.offset {
            return None;
        }
        Some((self.offset >> shift, (end - 1) >> shift))
    }

    /// The blocks wholly inside the request (what a trim discards), if any.
    pub fn whole_blocks(&self, shift: u32) -> Option<(u64, u64)> {
        let (first, last) = self.blocks(shift)?;
        let mask = (1u64 << shift) - 1;
        let end = self.offset.saturating_add(self.len);
        let first_whole = if self.offset & mask == 0 { first } else { first + 1 };
        let last_whole = if end & mask == 0 || end == u64::MAX { Some(last) } else { last.checked_sub(1) };
        last_whole.filter(|&l| l >= first_whole).map(|l| (first_whole, l))
    }
}

/// A whole trace in memory, in file order.
#[derive(Clone, Debug, Default)]
pub struct Workload {
    /// The requests.
    pub requests: Vec<WorkloadRequest>,
    /// Volume names by id.
    pub volume_names: Vec<String>,
    /// Whether the trace has real timestamps.
    pub has_timestamps: bool,
    /// Content hashes of all requests, concatenated (empty when the trace
    /// has none).
    content: Vec<ContentHash>,
    /// `content_starts[i]..content_starts[i + 1]` are request `i`'s hashes
    /// (empty when the trace has no content).
    content_starts: Vec<u64>,
}

impl Workload {
    /// Read every request of `source`; `label` names it in errors.
    /// `progress` is told how many requests were read since its last call.
    pub fn read(
        source: &mut dyn RequestSource,
        label: &str,
        progress: &dyn Fn(u64),
    ) -> Result<Self, TraceError> {
        let mut w = Workload::default();
        let mut req = Request::default();
        let mut starts = vec![0u64];
        while source.next_request(&mut req)? {
            if req.len > MAX_IO_BYTES && req.op != Op::Trim {
                return Err(TraceError::file(
                    label,
                    format!(
                        "request {} is a {} of {} bytes at offset {}: larger than any real I/O ({} bytes); \
                         the length field is probably corrupt",
                        w.requests.len() + 1,
                        req.op.name(),
                        req.len,
                        req.offset,
                        MAX_IO_BYTES
                    ),
                ));
            }
            w.push(&req);
            w.content.extend_from_slice(&req.content);
            starts.push(w.content.len() as u64);
            if w.requests.len() % PROGRESS_STEP == 0 {
                progress(PROGRESS_STEP as u64);
            }
        }
        progress((w.requests.len() % PROGRESS_STEP) as u64);
        if !w.content.is_empty() {
            w.content_starts = starts;
        }
        w.volume_names = source.volumes().names().to_vec();
        w.has_timestamps = source.has_timestamps();
        Ok(w)
    }

    /// A workload from requests built in code (tests, benchmarks); volumes
    /// are named by their ids.
    pub fn from_requests(requests: &[Request]) -> Self {
        let mut w = Workload { has_timestamps: true, ..Workload::default() };
        let mut starts = vec![0u64];
        for r in requests {
            w.push(r);
            w.content.extend_from_slice(&r.content);
            starts.push(w.content.len() as u64);
        }
        if !w.content.is_empty() {
            w.content_starts = starts;
        }
        let volumes = requests.iter().map(|r| r.volume as usize + 1).max().unwrap_or(0);
        w.volume_names = (0..volumes).map(|v| v.to_string()).collect();
        w
    }

    fn push(&mut self, r: &Request) {
        self.requests.push(WorkloadRequest {
            time_ns: r.time_ns,
            offset: r.offset,
            len: r.len,
            volume: r.volume,
            op: r.op,
        });
    }

    /// Number of volumes.
    pub fn volumes(&self) -> usize {
        let seen = self.requests.iter().map(|r| r.volume as usize + 1).max().unwrap_or(0);
        self.volume_names.len().max(seen)
    }

    /// Name of volume `id`.
    pub fn volume_name(&self, id: usize) -> String {
        self.volume_names.get(id).cloned().unwrap_or_else(|| id.to_string())
    }

    /// Whether any request carries content hashes.
    pub fn has_content(&self) -> bool {
        !self.content.is_empty()
    }

    /// Content hashes of request `i` (one per 4 KiB from its offset).
    pub fn content(&self, i: usize) -> &[ContentHash] {
        if self.content_starts.is_empty() {
            return &[];
        }
        &self.content[self.content_starts[i] as usize..self.content_starts[i + 1] as usize]
    }

    /// Earliest and latest timestamps (None without timestamps or requests).
    pub fn time_span_ns(&self) -> Option<(u64, u64)> {
        if !self.has_timestamps {
            return None;
        }
        let first = self.requests.iter().map(|r| r.time_ns).min()?;
        let last = self.requests.iter().map(|r| r.time_ns).max()?;
        Some((first, last))
    }

    /// Block accesses (reads and writes) at `2^shift`-byte blocks.
    pub fn block_accesses(&self, shift: u32) -> u64 {
        self.requests
            .iter()
            .filter(|r| r.op != Op::Trim)
            .filter_map(|r| r.blocks(shift))
            .map(|(first, last)| last - first + 1)
            .fold(0, u64::saturating_add)
    }
}
