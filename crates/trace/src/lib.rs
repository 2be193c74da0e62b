//! Block I/O traces for cloudcache: the one [`Request`] model, streaming
//! readers for the public block-trace formats (CloudPhysics vscsi, MSR
//! Cambridge, FIU, SNIA SYSTOR'17, Alibaba 2020, Tencent CBS 2018, blkparse
//! text, fio iolog, any CSV by column mapping), transparent gzip/zstd input,
//! format auto-detection, the project's own compact binary format (`.cct`),
//! a validation report (`trace info`), and a deterministic synthetic workload
//! generator. It knows nothing about caches: everything downstream consumes
//! `Request`s.

pub mod block_hash;
pub mod error;
pub mod format;
pub mod formats;
pub mod info;
pub mod prefetch;
pub mod request;
pub mod source;
pub mod synth;
pub mod text;
pub mod units;

pub use error::{FieldError, Location, TraceError};
pub use format::{open, Format, OpenOptions};
pub use request::{ContentHash, Op, Request, VolumeId, VolumeTable, CONTENT_BLOCK_BYTES};

/// A stream of requests from one trace file.
///
/// `next_request` fills a caller-owned [`Request`] so that a replay loop
/// reuses one buffer (and its content vector) for the whole trace.
pub trait RequestSource: Send {
    /// Read the next request into `req`. `Ok(false)` at the end of the trace.
    fn next_request(&mut self, req: &mut Request) -> Result<bool, TraceError>;
    /// Volume names seen so far (complete once the stream is exhausted).
    fn volumes(&self) -> &VolumeTable;
    /// Bad lines skipped under `--skip-bad-lines`.
    fn skipped(&self) -> u64 {
        0
    }
    /// Whether requests carry real timestamps (fio v2 logs, for one, do not).
    fn has_timestamps(&self) -> bool {
        true
    }
}

/// An opened trace: a boxed [`RequestSource`] plus what was detected.
pub struct TraceReader {
    source: Box<dyn RequestSource>,
    format: Format,
    compression: &'static str,
}

impl TraceReader {
    /// Wrap a source (used by [`open`]).
    pub fn new(source: Box<dyn RequestSource>, format: Format, compression: &'static str) -> Self {
        TraceReader { source, format, compression }
    }

    /// The format that was detected or requested.
    pub fn format(&self) -> Format {
        self.format
    }

    /// "gzip", "zstd" or "none".
    pub fn compression(&self) -> &'static str {
        self.compression
    }

    /// Read the next request into `req`; `Ok(false)` at the end.
    pub fn next_request(&mut self, req: &mut Request) -> Result<bool, TraceError> {
        self.source.next_request(req)
    }

    /// Volume names seen so far.
    pub fn volumes(&self) -> &VolumeTable {
        self.source.volumes()
    }

    /// Bad lines skipped so far.
    pub fn skipped(&self) -> u64 {
        self.source.skipped()
    }

    /// Whether requests carry real timestamps.
    pub fn has_timestamps(&self) -> bool {
        self.source.has_timestamps()
    }

    /// Read every remaining request into memory.
    pub fn read_all(&mut self) -> Result<Vec<Request>, TraceError> {
        let mut all = Vec::new();
        let mut req = Request::default();
        while self.next_request(&mut req)? {
            all.push(req.clone());
        }
        Ok(all)
    }
}

impl RequestSource for TraceReader {
    fn next_request(&mut self, req: &mut Request) -> Result<bool, TraceError> {
        self.source.next_request(req)
    }
    fn volumes(&self) -> &VolumeTable {
        self.source.volumes()
    }
    fn skipped(&self) -> u64 {
        self.source.skipped()
    }
    fn has_timestamps(&self) -> bool {
        self.source.has_timestamps()
    }
}

impl Iterator for TraceReader {
    type Item = Result<Request, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut req = Request::default();
        match self.next_request(&mut req) {
            Ok(true) => Some(Ok(req)),
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        }
    }
}
