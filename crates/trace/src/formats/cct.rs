//! cloudcache's own binary trace format, `.cct` (byte layout in
//! `docs/formats.md`, section "cloudcache binary trace (.cct)").
//!
//! A file is a header (magic, version, flags, request count, volume names),
//! a sequence of blocks of up to [`DEFAULT_BLOCK_RECORDS`] records, and an
//! end marker with the totals. Every block carries its own length, record
//! count and CRC32, so a streaming reader verifies each block before it
//! yields a single request from it, and a damaged or truncated file is
//! reported with the byte offset of the bad block instead of being misread.
//! The end marker is what tells a complete file from one cut at a block
//! boundary.
//!
//! Records are a tag byte plus LEB128 varints (times and offsets as deltas),
//! which keeps a typical record near 10 bytes and decodes at memory speed.
//!
//! Volume names travel with the data: names known when the writer starts go
//! in the header, and a name first declared later goes at the start of the
//! next block written, always before the first record that uses it. So the
//! writer streams in one pass (a trace's volume names are only complete at
//! its end), and a reader knows the name of every volume it has yielded.

use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::error::TraceError;
use crate::request::{ContentHash, Op, Request, VolumeId, VolumeTable};
use crate::source::read_full;
use crate::RequestSource;

/// The first eight bytes of every `.cct` file. The high first byte and the
/// CR LF / Ctrl-Z / LF tail (as in PNG) make text-mode mangling detectable
/// and keep text-format sniffers away.
pub const MAGIC: [u8; 8] = *b"\x89CCT\r\n\x1a\n";
/// Major version written; a reader rejects any other major version.
pub const VERSION_MAJOR: u16 = 1;
/// Minor version written; minor versions only add things an older reader
/// may ignore (flags in the upper 16 bits).
pub const VERSION_MINOR: u16 = 0;
/// Header flag: records carry a time field.
pub const FLAG_HAS_TIMESTAMPS: u32 = 1 << 0;
/// Header flag: records may carry content hashes (exact after
/// [`CctWriter::finish_seekable`] or [`convert`]: some record does).
pub const FLAG_HAS_CONTENT: u32 = 1 << 1;
/// Header `request_count` value meaning "not known when the header was written".
pub const UNKNOWN_COUNT: u64 = u64::MAX;
/// Records per block written unless configured otherwise.
pub const DEFAULT_BLOCK_RECORDS: u32 = 64 * 1024;
/// Largest record count a block may declare.
pub const MAX_BLOCK_RECORDS: u32 = 1 << 20;
/// Largest block payload a reader accepts, so a damaged length cannot make it
/// allocate without bound.
pub const MAX_BLOCK_PAYLOAD: u32 = 64 << 20;
/// Most content hashes one record may carry (those of a 4 GiB request).
pub const MAX_CONTENT_PER_RECORD: u32 = 1 << 20;

/// Flags a reader must understand (the low half); unknown ones are rejected.
const REQUIRED_FLAGS: u32 = 0xffff;
const KNOWN_FLAGS: u32 = FLAG_HAS_TIMESTAMPS | FLAG_HAS_CONTENT;
const FILE_HEADER_BYTES: usize = 32;
const BLOCK_HEADER_BYTES: usize = 20;
const TRAILER_BYTES: usize = 32;
const BLOCK_MARKER: [u8; 4] = *b"CCTB";
const END_MARKER: [u8; 4] = *b"CCTE";
/// Bound on the header's name table, for the same reason as [`MAX_BLOCK_PAYLOAD`].
const MAX_HEADER_NAMES_BYTES: u32 = 16 << 20;
/// A block is cut early once its payload passes this, so blocks with large
/// content hashes stay far below [`MAX_BLOCK_PAYLOAD`].
const SOFT_BLOCK_PAYLOAD: usize = 8 << 20;
/// Pending names are flushed (in a block of their own if need be) past this.
const SOFT_PENDING_NAMES: usize = 1 << 20;

const TAG_OP_MASK: u8 = 0b011;
const TAG_CONTENT: u8 = 0b100;
const TAG_RESERVED: u8 = !0b111;

/// True when `head` (the first bytes of a decompressed stream) is a `.cct` file.
pub fn sniff(head: &[u8]) -> bool {
    head.starts_with(&MAGIC)
}

fn op_code(op: Op) -> u8 {
    match op {
        Op::Read => 0,
        Op::Write => 1,
        Op::Trim => 2,
    }
}

fn zigzag(delta: i64) -> u64 {
    ((delta << 1) ^ (delta >> 63)) as u64
}

fn unzigzag(z: u64) -> i64 {
    ((z >> 1) as i64) ^ -((z & 1) as i64)
}

fn put_varint(buf: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        buf.push(value as u8 | 0x80);
        value >>= 7;
    }
    buf.push(value as u8);
}

fn le_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn le_u64(b: &[u8], at: usize) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(bytes)
}

/// Append one name-table entry (`u16 length, UTF-8 bytes`).
fn put_name(buf: &mut Vec<u8>, name: &str) -> io::Result<()> {
    let len = u16::try_from(name.len()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("volume name of {} bytes: at most 65535", name.len()),
        )
    })?;
    buf.extend_from_slice(&len.to_le_bytes());
    buf.extend_from_slice(name.as_bytes());
    Ok(())
}

fn invalid_input(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

/// How a [`CctWriter`] lays out its file.
#[derive(Clone, Debug)]
pub struct CctOptions {
    /// Store request times. When false, every request written must have
    /// `time_ns == 0` (the reader gives back 0).
    pub has_timestamps: bool,
    /// Allow content hashes. A record without hashes costs nothing extra
    /// either way; false only makes the header say "no content".
    pub has_content: bool,
    /// Number of requests that will be written, if known: stored in the
    /// header and enforced at [`CctWriter::finish`].
    pub request_count: Option<u64>,
    /// Records per block (1 to [`MAX_BLOCK_RECORDS`]).
    pub block_records: u32,
}

impl Default for CctOptions {
    fn default() -> Self {
        CctOptions {
            has_timestamps: true,
            has_content: true,
            request_count: None,
            block_records: DEFAULT_BLOCK_RECORDS,
        }
    }
}

/// What a finished writer wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CctSummary {
    /// Requests written.
    pub requests: u64,
    /// Requests that carried content hashes.
    pub content_requests: u64,
    /// Volumes named in the file.
    pub volumes: u64,
    /// Blocks written (including blocks that only carry names).
    pub blocks: u64,
    /// Bytes written, header to end marker.
    pub bytes: u64,
}

/// Streaming `.cct` writer.
///
/// Volumes must be named before a request uses them: pass the table known
/// at the start to [`CctWriter::new`], then [`CctWriter::declare_volume`] or
/// [`CctWriter::sync_volumes`] as new ones appear. Nothing written is a
/// valid file until [`CctWriter::finish`] writes the end marker, so a
/// writer that stops part-way never leaves a file that reads as complete.
pub struct CctWriter<W: Write> {
    out: W,
    options: CctOptions,
    /// The file header as written, kept so a seekable writer can patch it.
    header: Vec<u8>,
    declared: hashbrown::HashSet<String>,
    declared_count: u32,
    pending_names: Vec<u8>,
    pending_count: u32,
    payload: Vec<u8>,
    block_records: u32,
    prev_time: u64,
    prev_end: u64,
    summary: CctSummary,
    /// Set by an I/O error: the stream is then unusable.
    broken: bool,
}

impl<W: Write> CctWriter<W> {
    /// Start a file on `out` that names `volumes`, storing times when
    /// `has_timestamps` (the other options at their defaults).
    pub fn new(out: W, volumes: &VolumeTable, has_timestamps: bool) -> io::Result<Self> {
        Self::with_options(out, volumes, CctOptions { has_timestamps, ..CctOptions::default() })
    }

    /// Start a file on `out` with explicit options; writes the header now.
    pub fn with_options(out: W, volumes: &VolumeTable, options: CctOptions) -> io::Result<Self> {
        if options.block_records == 0 || options.block_records > MAX_BLOCK_RECORDS {
            return Err(invalid_input(format!(
                "block_records {} out of range 1..={MAX_BLOCK_RECORDS}",
                options.block_records
            )));
        }
        if options.request_count == Some(UNKNOWN_COUNT) {
            return Err(invalid_input("request_count u64::MAX is reserved for \"unknown\"".to_owned()));
        }
        let mut writer = CctWriter {
            out,
            options,
            header: Vec::new(),
            declared: hashbrown::HashSet::new(),
            declared_count: 0,
            pending_names: Vec::new(),
            pending_count: 0,
            payload: Vec::with_capacity(1 << 20),
            block_records: 0,
            prev_time: 0,
            prev_end: 0,
            summary: CctSummary::default(),
            broken: false,
        };
        let mut names = Vec::new();
        names.extend_from_slice(&(volumes.len() as u32).to_le_bytes());
        for name in volumes.names() {
            writer.check_new_name(name)?;
            put_name(&mut names, name)?;
            writer.declared.insert(name.clone());
        }
        if names.len() > MAX_HEADER_NAMES_BYTES as usize {
            return Err(invalid_input(format!(
                "{} bytes of volume names is too many for a header; declare them as they appear instead",
                names.len()
            )));
        }
        writer.declared_count = volumes.len() as u32;
        let mut flags = 0;
        if writer.options.has_timestamps {
            flags |= FLAG_HAS_TIMESTAMPS;
        }
        if writer.options.has_content {
            flags |= FLAG_HAS_CONTENT;
        }
        let count = writer.options.request_count.unwrap_or(UNKNOWN_COUNT);
        writer.header = build_header(flags, count, &names);
        writer.emit(&writer.header.clone())?;
        Ok(writer)
    }

    fn check_new_name(&self, name: &str) -> io::Result<()> {
        if self.declared.contains(name) {
            return Err(invalid_input(format!("volume name {name:?} declared twice")));
        }
        if self.declared_count == u32::MAX {
            return Err(invalid_input("more than 2^32 - 1 volumes".to_owned()));
        }
        Ok(())
    }

    /// Name the next volume id; returns the id.
    pub fn declare_volume(&mut self, name: &str) -> io::Result<VolumeId> {
        self.check_new_name(name)?;
        put_name(&mut self.pending_names, name)?;
        self.declared.insert(name.to_owned());
        let id = self.declared_count;
        self.declared_count += 1;
        self.pending_count += 1;
        if self.pending_names.len() > SOFT_PENDING_NAMES {
            self.flush_block()?;
        }
        Ok(id)
    }

    /// Declare the names of `table` beyond those already declared (the
    /// table of the source being copied, which only grows).
    pub fn sync_volumes(&mut self, table: &VolumeTable) -> io::Result<()> {
        let known = self.declared_count as usize;
        for name in table.names().iter().skip(known) {
            self.declare_volume(name)?;
        }
        Ok(())
    }

    /// Number of volumes named so far.
    pub fn volumes_declared(&self) -> u32 {
        self.declared_count
    }

    /// Append one request.
    pub fn write(&mut self, req: &Request) -> io::Result<()> {
        if self.broken {
            return Err(io::Error::other("an earlier write failed; the file is incomplete"));
        }
        if req.volume >= self.declared_count {
            return Err(invalid_input(format!(
                "volume id {} has no name ({} declared): declare it before writing its requests",
                req.volume, self.declared_count
            )));
        }
        if !self.options.has_timestamps && req.time_ns != 0 {
            return Err(invalid_input(format!(
                "request time {} ns in a file created without timestamps",
                req.time_ns
            )));
        }
        if !req.content.is_empty() {
            if !self.options.has_content {
                return Err(invalid_input("content hashes in a file created without content".to_owned()));
            }
            if req.content.len() > MAX_CONTENT_PER_RECORD as usize {
                return Err(invalid_input(format!(
                    "{} content hashes in one request; at most {MAX_CONTENT_PER_RECORD}",
                    req.content.len()
                )));
            }
        }
        if let Some(expected) = self.options.request_count {
            if self.summary.requests >= expected {
                return Err(invalid_input(format!("more requests than the {expected} the header promises")));
            }
        }
        let p = &mut self.payload;
        let mut tag = op_code(req.op);
        if !req.content.is_empty() {
            tag |= TAG_CONTENT;
        }
        p.push(tag);
        if self.options.has_timestamps {
            put_varint(p, zigzag(req.time_ns.wrapping_sub(self.prev_time) as i64));
            self.prev_time = req.time_ns;
        }
        put_varint(p, u64::from(req.volume));
        put_varint(p, zigzag(req.offset.wrapping_sub(self.prev_end) as i64));
        put_varint(p, req.len);
        self.prev_end = req.offset.wrapping_add(req.len);
        if !req.content.is_empty() {
            put_varint(p, req.content.len() as u64);
            for hash in &req.content {
                p.extend_from_slice(hash);
            }
            self.summary.content_requests += 1;
        }
        self.summary.requests += 1;
        self.block_records += 1;
        if self.block_records >= self.options.block_records || self.payload.len() >= SOFT_BLOCK_PAYLOAD {
            self.flush_block()?;
        }
        Ok(())
    }

    fn emit(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self.out.write_all(bytes) {
            Ok(()) => {
                self.summary.bytes += bytes.len() as u64;
                Ok(())
            }
            Err(e) => {
                self.broken = true;
                Err(e)
            }
        }
    }

    /// Write the buffered records and pending names as one block.
    fn flush_block(&mut self) -> io::Result<()> {
        if self.block_records == 0 && self.pending_count == 0 {
            return Ok(());
        }
        let payload_len = 4 + self.pending_names.len() + self.payload.len();
        let payload_len =
            u32::try_from(payload_len).ok().filter(|&n| n <= MAX_BLOCK_PAYLOAD).ok_or_else(|| {
                invalid_input(format!("block of {payload_len} bytes exceeds {MAX_BLOCK_PAYLOAD}"))
            })?;
        let count = self.pending_count.to_le_bytes();
        let mut crc = crc32fast::Hasher::new();
        crc.update(&count);
        crc.update(&self.pending_names);
        crc.update(&self.payload);
        let mut header = [0u8; BLOCK_HEADER_BYTES];
        header[0..4].copy_from_slice(&BLOCK_MARKER);
        header[4..8].copy_from_slice(&payload_len.to_le_bytes());
        header[8..12].copy_from_slice(&self.block_records.to_le_bytes());
        header[12..16].copy_from_slice(&crc.finalize().to_le_bytes());
        let header_crc = crc32fast::hash(&header[0..16]);
        header[16..20].copy_from_slice(&header_crc.to_le_bytes());
        self.emit(&header)?;
        self.emit(&count)?;
        let names = std::mem::take(&mut self.pending_names);
        let written = self.emit(&names);
        self.pending_names = names;
        written?;
        let payload = std::mem::take(&mut self.payload);
        let written = self.emit(&payload);
        self.payload = payload;
        written?;
        self.pending_names.clear();
        self.pending_count = 0;
        self.payload.clear();
        self.block_records = 0;
        self.prev_time = 0;
        self.prev_end = 0;
        self.summary.blocks += 1;
        Ok(())
    }

    /// Write the last block and the end marker, flush, and hand back the
    /// output with what was written.
    pub fn finish(mut self) -> io::Result<(W, CctSummary)> {
        self.finish_in_place()?;
        Ok((self.out, self.summary))
    }

    fn finish_in_place(&mut self) -> io::Result<()> {
        if self.broken {
            return Err(io::Error::other("an earlier write failed; the file is incomplete"));
        }
        if let Some(expected) = self.options.request_count {
            if self.summary.requests != expected {
                return Err(invalid_input(format!(
                    "the header promises {expected} requests but {} were written",
                    self.summary.requests
                )));
            }
        }
        self.flush_block()?;
        self.summary.volumes = u64::from(self.declared_count);
        let mut trailer = [0u8; TRAILER_BYTES];
        trailer[0..4].copy_from_slice(&END_MARKER);
        trailer[4..8].copy_from_slice(&self.declared_count.to_le_bytes());
        trailer[8..16].copy_from_slice(&self.summary.requests.to_le_bytes());
        trailer[16..24].copy_from_slice(&self.summary.content_requests.to_le_bytes());
        trailer[24..28].copy_from_slice(&0u32.to_le_bytes());
        let crc = crc32fast::hash(&trailer[0..28]);
        trailer[28..32].copy_from_slice(&crc.to_le_bytes());
        self.emit(&trailer)?;
        self.out.flush()
    }
}

impl<W: Write + Seek> CctWriter<W> {
    /// [`CctWriter::finish`], then rewrite the header in place so that its
    /// request count and content flag are exact.
    pub fn finish_seekable(mut self) -> io::Result<(W, CctSummary)> {
        self.finish_in_place()?;
        let end = self.out.stream_position()?;
        let start = end.checked_sub(self.summary.bytes).ok_or_else(|| {
            io::Error::other("output position is before the bytes written; cannot patch the header")
        })?;
        let mut flags = le_u32(&self.header, 12);
        if self.summary.content_requests == 0 {
            flags &= !FLAG_HAS_CONTENT;
        }
        let names = self.header[FILE_HEADER_BYTES..].to_vec();
        let header = build_header(flags, self.summary.requests, &names);
        self.out.seek(SeekFrom::Start(start))?;
        self.out.write_all(&header[..FILE_HEADER_BYTES])?;
        self.out.seek(SeekFrom::Start(end))?;
        self.out.flush()?;
        Ok((self.out, self.summary))
    }
}

/// The file header: fixed 32 bytes, then the name table `names`.
fn build_header(flags: u32, request_count: u64, names: &[u8]) -> Vec<u8> {
    let mut h = Vec::with_capacity(FILE_HEADER_BYTES + names.len());
    h.extend_from_slice(&MAGIC);
    h.extend_from_slice(&VERSION_MAJOR.to_le_bytes());
    h.extend_from_slice(&VERSION_MINOR.to_le_bytes());
    h.extend_from_slice(&flags.to_le_bytes());
    h.extend_from_slice(&request_count.to_le_bytes());
    h.extend_from_slice(&(names.len() as u32).to_le_bytes());
    let mut crc = crc32fast::Hasher::new();
    crc.update(&h);
    crc.update(names);
    h.extend_from_slice(&crc.finalize().to_le_bytes());
    h.extend_from_slice(names);
    h
}

/// What the header of a `.cct` file says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CctHeader {
    /// Major format version (always [`VERSION_MAJOR`] once opened).
    pub version_major: u16,
    /// Minor format version.
    pub version_minor: u16,
    /// Raw flags word.
    pub flags: u32,
    /// Requests in the file, when the writer knew.
    pub request_count: Option<u64>,
}

impl CctHeader {
    /// Records carry times.
    pub fn has_timestamps(&self) -> bool {
        self.flags & FLAG_HAS_TIMESTAMPS != 0
    }
    /// Records may carry content hashes (some do, if the header was finalised).
    pub fn has_content(&self) -> bool {
        self.flags & FLAG_HAS_CONTENT != 0
    }
}

/// One decoded record; content lives in the reader's per-block arena.
#[derive(Clone, Copy)]
struct Record {
    time_ns: u64,
    offset: u64,
    len: u64,
    volume: VolumeId,
    op: Op,
    content_start: u32,
    content_len: u32,
}

/// Streaming `.cct` reader: verifies each block's checksum and decodes the
/// whole block into reused buffers before yielding any of its requests.
pub struct CctReader {
    reader: Box<dyn BufRead + Send>,
    path: PathBuf,
    header: CctHeader,
    volumes: VolumeTable,
    /// Byte offset of the next unread byte.
    offset: u64,
    payload: Vec<u8>,
    records: Vec<Record>,
    content: Vec<ContentHash>,
    next: usize,
    blocks: u64,
    requests: u64,
    content_requests: u64,
    done: bool,
    /// Once an error is reported it is repeated, never followed by data.
    failed: Option<TraceError>,
}

impl CctReader {
    /// Read and verify the header of `reader` (the whole file `path`).
    pub fn new(mut reader: Box<dyn BufRead + Send>, path: PathBuf) -> Result<Self, TraceError> {
        let io_err = |e: io::Error| TraceError::at_byte(&path, 0, None, format!("cannot read: {e}"));
        let mut fixed = [0u8; FILE_HEADER_BYTES];
        let got = read_full(&mut *reader, &mut fixed).map_err(io_err)?;
        if got == 0 {
            return Err(TraceError::at_byte(&path, 0, None, "empty file: no cct header"));
        }
        if got < MAGIC.len() && MAGIC.starts_with(&fixed[..got]) {
            return Err(TraceError::at_byte(
                &path,
                0,
                None,
                format!("truncated header: {got} of {FILE_HEADER_BYTES} bytes"),
            ));
        }
        if !sniff(&fixed[..got]) {
            return Err(TraceError::at_byte(&path, 0, Some("magic"), "not a cct file: bad magic bytes"));
        }
        if got < FILE_HEADER_BYTES {
            return Err(TraceError::at_byte(
                &path,
                0,
                None,
                format!("truncated header: {got} of {FILE_HEADER_BYTES} bytes"),
            ));
        }
        let major = le_u16(&fixed, 8);
        let minor = le_u16(&fixed, 10);
        if major != VERSION_MAJOR {
            return Err(TraceError::at_byte(
                &path,
                8,
                Some("version_major"),
                format!(
                    "unsupported cct version {major}.{minor}: this build reads major version {VERSION_MAJOR} \
                     (written by a newer cloudcache, or the header is corrupt)"
                ),
            ));
        }
        let flags = le_u32(&fixed, 12);
        let count = le_u64(&fixed, 16);
        let names_len = le_u32(&fixed, 24);
        let stored_crc = le_u32(&fixed, 28);
        if names_len > MAX_HEADER_NAMES_BYTES {
            return Err(TraceError::at_byte(
                &path,
                24,
                Some("names_len"),
                format!(
                    "volume name table of {names_len} bytes exceeds {MAX_HEADER_NAMES_BYTES}: corrupt header"
                ),
            ));
        }
        let mut names = vec![0u8; names_len as usize];
        let got = read_full(&mut *reader, &mut names).map_err(io_err)?;
        if got < names.len() {
            return Err(TraceError::at_byte(
                &path,
                FILE_HEADER_BYTES as u64,
                Some("names"),
                format!("truncated header: volume name table of {names_len} bytes, file ends after {got}"),
            ));
        }
        let mut crc = crc32fast::Hasher::new();
        crc.update(&fixed[..28]);
        crc.update(&names);
        let computed = crc.finalize();
        if computed != stored_crc {
            return Err(TraceError::at_byte(
                &path,
                0,
                Some("header_crc"),
                format!("header checksum mismatch (stored {stored_crc:#010x}, computed {computed:#010x}): corrupt header"),
            ));
        }
        if flags & REQUIRED_FLAGS & !KNOWN_FLAGS != 0 {
            return Err(TraceError::at_byte(
                &path,
                12,
                Some("flags"),
                format!(
                    "unknown required flags {:#06x}: written by a newer cloudcache",
                    flags & REQUIRED_FLAGS & !KNOWN_FLAGS
                ),
            ));
        }
        let mut volumes = VolumeTable::new();
        let used = parse_names(&names, FILE_HEADER_BYTES as u64, &mut volumes)
            .map_err(|(at, field, message)| TraceError::at_byte(&path, at, Some(field), message))?;
        if used != names.len() {
            return Err(TraceError::at_byte(
                &path,
                (FILE_HEADER_BYTES + used) as u64,
                Some("names"),
                format!("{} bytes after the header's volume name table", names.len() - used),
            ));
        }
        let header = CctHeader {
            version_major: major,
            version_minor: minor,
            flags,
            request_count: (count != UNKNOWN_COUNT).then_some(count),
        };
        Ok(CctReader {
            reader,
            path,
            header,
            volumes,
            offset: (FILE_HEADER_BYTES + names.len()) as u64,
            payload: Vec::new(),
            records: Vec::new(),
            content: Vec::new(),
            next: 0,
            blocks: 0,
            requests: 0,
            content_requests: 0,
            done: false,
            failed: None,
        })
    }

    /// The file's header.
    pub fn header(&self) -> &CctHeader {
        &self.header
    }

    fn fail(&mut self, at: u64, field: Option<&str>, message: String) -> TraceError {
        let error = TraceError::at_byte(&self.path, at, field, message);
        self.failed = Some(error.clone());
        error
    }

    fn read_exact_at(&mut self, buf: &mut [u8], what: &str) -> Result<usize, TraceError> {
        let at = self.offset;
        match read_full(&mut *self.reader, buf) {
            Ok(n) => {
                self.offset += n as u64;
                Ok(n)
            }
            Err(e) => Err(self.fail(at, None, format!("cannot read {what}: {e}"))),
        }
    }

    /// Load the next block with records; `Ok(false)` after a verified end marker.
    fn load_block(&mut self) -> Result<bool, TraceError> {
        loop {
            let at = self.offset;
            let mut head = [0u8; BLOCK_HEADER_BYTES];
            let got = self.read_exact_at(&mut head[..4], "block header")?;
            if got == 0 {
                let message = format!(
                    "file ends after {} blocks ({} requests) without the end-of-trace marker: truncated",
                    self.blocks, self.requests
                );
                return Err(self.fail(at, None, message));
            }
            if got < 4 {
                let message = format!("truncated block header: {got} of {BLOCK_HEADER_BYTES} bytes");
                return Err(self.fail(at, None, message));
            }
            if head[..4] == END_MARKER {
                self.read_trailer(at, &head[..4])?;
                return Ok(false);
            }
            if head[..4] != BLOCK_MARKER {
                let message = format!(
                    "bad block marker {:02x} {:02x} {:02x} {:02x} (expected \"CCTB\" or \"CCTE\"): corrupt file",
                    head[0], head[1], head[2], head[3]
                );
                return Err(self.fail(at, Some("marker"), message));
            }
            let got = self.read_exact_at(&mut head[4..], "block header")?;
            if got < BLOCK_HEADER_BYTES - 4 {
                let message = format!("truncated block header: {} of {BLOCK_HEADER_BYTES} bytes", got + 4);
                return Err(self.fail(at, None, message));
            }
            let stored = le_u32(&head, 16);
            let computed = crc32fast::hash(&head[..16]);
            if stored != computed {
                let message = format!(
                    "block {}: block header checksum mismatch (stored {stored:#010x}, computed {computed:#010x})",
                    self.blocks
                );
                return Err(self.fail(at, Some("header_crc"), message));
            }
            let payload_len = le_u32(&head, 4);
            let record_count = le_u32(&head, 8);
            let payload_crc = le_u32(&head, 12);
            if !(4..=MAX_BLOCK_PAYLOAD).contains(&payload_len) {
                let message = format!(
                    "block {}: payload length {payload_len} out of range 4..={MAX_BLOCK_PAYLOAD}",
                    self.blocks
                );
                return Err(self.fail(at + 4, Some("payload_len"), message));
            }
            if record_count > MAX_BLOCK_RECORDS {
                let message =
                    format!("block {}: {record_count} records, at most {MAX_BLOCK_RECORDS}", self.blocks);
                return Err(self.fail(at + 8, Some("record_count"), message));
            }
            let len = payload_len as usize;
            if self.payload.len() < len {
                self.payload.resize(len, 0);
            }
            let mut payload = std::mem::take(&mut self.payload);
            let got = self.read_exact_at(&mut payload[..len], "block payload");
            let got = match got {
                Ok(n) => n,
                Err(e) => {
                    self.payload = payload;
                    return Err(e);
                }
            };
            if got < len {
                self.payload = payload;
                let message = format!(
                    "block {}: truncated block: payload of {len} bytes, file ends after {got}",
                    self.blocks
                );
                return Err(self.fail(at, None, message));
            }
            let computed = crc32fast::hash(&payload[..len]);
            if computed != payload_crc {
                self.payload = payload;
                let message = format!(
                    "block {}: checksum mismatch over its {len}-byte payload (stored {payload_crc:#010x}, \
                     computed {computed:#010x}): corrupt data",
                    self.blocks
                );
                return Err(self.fail(at, Some("payload_crc"), message));
            }
            let decoded = self.decode_block(&payload[..len], at + BLOCK_HEADER_BYTES as u64, record_count);
            self.payload = payload;
            if let Err((offset, field, message)) = decoded {
                let message = format!("block {} at byte {at}: {message}", self.blocks);
                return Err(self.fail(offset, Some(field), message));
            }
            self.blocks += 1;
            self.next = 0;
            if let Some(expected) = self.header.request_count {
                if self.requests > expected {
                    let message = format!("more requests than the {expected} the header announces");
                    return Err(self.fail(at, Some("record_count"), message));
                }
            }
            if !self.records.is_empty() {
                return Ok(true);
            }
        }
    }

    /// Decode a checksum-verified payload that starts at byte `base` of the file.
    fn decode_block(
        &mut self,
        payload: &[u8],
        base: u64,
        record_count: u32,
    ) -> Result<(), (u64, &'static str, String)> {
        let names_len = parse_names(payload, base, &mut self.volumes)?;
        self.records.clear();
        self.content.clear();
        let has_timestamps = self.header.has_timestamps();
        let content_allowed = self.header.has_content();
        let volume_count = self.volumes.len() as u64;
        let mut cur = Cursor { buf: payload, pos: names_len };
        let mut prev_time = 0u64;
        let mut prev_end = 0u64;
        for index in 0..record_count {
            let record_at = cur.pos;
            let fail = |field: &'static str, message: String| {
                (base + record_at as u64, field, format!("record {index}: {message}"))
            };
            let tag = cur.byte().map_err(|m| fail("tag", m))?;
            let op = match tag & TAG_OP_MASK {
                0 => Op::Read,
                1 => Op::Write,
                2 => Op::Trim,
                code => return Err(fail("tag", format!("bad op code {code} (0 read, 1 write, 2 trim)"))),
            };
            if tag & TAG_RESERVED != 0 {
                return Err(fail("tag", format!("reserved tag bits set ({tag:#04x})")));
            }
            let time_ns = if has_timestamps {
                let delta = cur.varint().map_err(|m| fail("time_delta", m))?;
                prev_time.wrapping_add(unzigzag(delta) as u64)
            } else {
                0
            };
            let volume = cur.varint().map_err(|m| fail("volume", m))?;
            if volume >= volume_count {
                return Err(fail(
                    "volume",
                    format!("volume id {volume} not in the name table ({volume_count} names)"),
                ));
            }
            let delta = cur.varint().map_err(|m| fail("offset_delta", m))?;
            let offset = prev_end.wrapping_add(unzigzag(delta) as u64);
            let len = cur.varint().map_err(|m| fail("len", m))?;
            prev_time = time_ns;
            prev_end = offset.wrapping_add(len);
            let content_start = self.content.len() as u32;
            let mut content_len = 0;
            if tag & TAG_CONTENT != 0 {
                if !content_allowed {
                    return Err(fail(
                        "tag",
                        "content hashes in a file whose header says it has none".to_owned(),
                    ));
                }
                let n = cur.varint().map_err(|m| fail("content_count", m))?;
                if n == 0 || n > u64::from(MAX_CONTENT_PER_RECORD) {
                    return Err(fail(
                        "content_count",
                        format!("{n} content hashes (1..={MAX_CONTENT_PER_RECORD})"),
                    ));
                }
                let bytes = cur.take(n as usize * 16).map_err(|m| fail("content", m))?;
                for hash in bytes.chunks_exact(16) {
                    let mut h = [0u8; 16];
                    h.copy_from_slice(hash);
                    self.content.push(h);
                }
                content_len = n as u32;
                self.content_requests += 1;
            }
            self.records.push(Record {
                time_ns,
                offset,
                len,
                volume: volume as VolumeId,
                op,
                content_start,
                content_len,
            });
        }
        if cur.pos != payload.len() {
            return Err((
                base + cur.pos as u64,
                "payload",
                format!("{} bytes after the block's last record", payload.len() - cur.pos),
            ));
        }
        self.requests += u64::from(record_count);
        Ok(())
    }

    fn read_trailer(&mut self, at: u64, marker: &[u8]) -> Result<(), TraceError> {
        let mut trailer = [0u8; TRAILER_BYTES];
        trailer[..4].copy_from_slice(marker);
        let got = self.read_exact_at(&mut trailer[4..], "end marker")?;
        if got < TRAILER_BYTES - 4 {
            let message = format!("truncated end-of-trace marker: {} of {TRAILER_BYTES} bytes", got + 4);
            return Err(self.fail(at, None, message));
        }
        let stored = le_u32(&trailer, 28);
        let computed = crc32fast::hash(&trailer[..28]);
        if stored != computed {
            let message =
                format!("end marker checksum mismatch (stored {stored:#010x}, computed {computed:#010x})");
            return Err(self.fail(at, Some("end_crc"), message));
        }
        let volumes = le_u32(&trailer, 4);
        let requests = le_u64(&trailer, 8);
        let content_requests = le_u64(&trailer, 16);
        if u64::from(volumes) != self.volumes.len() as u64 {
            let message = format!(
                "end marker says {volumes} volumes but the file names {}: a block is missing",
                self.volumes.len()
            );
            return Err(self.fail(at + 4, Some("volume_count"), message));
        }
        if requests != self.requests || content_requests != self.content_requests {
            let message = format!(
                "end marker says {requests} requests ({content_requests} with content) but the blocks hold {} ({}): \
                 a block is missing",
                self.requests, self.content_requests
            );
            return Err(self.fail(at + 8, Some("request_count"), message));
        }
        if let Some(expected) = self.header.request_count {
            if expected != requests {
                let message = format!("header says {expected} requests but the file holds {requests}");
                return Err(self.fail(16, Some("request_count"), message));
            }
        }
        let end = self.offset;
        match self.reader.fill_buf() {
            Ok([]) => {}
            Ok(rest) => {
                let message = format!("{}+ bytes after the end-of-trace marker", rest.len());
                return Err(self.fail(end, None, message));
            }
            Err(e) => return Err(self.fail(end, None, format!("cannot read: {e}"))),
        }
        self.done = true;
        Ok(())
    }
}

/// Parse a name table (`u32 count`, entries) at the start of `buf` into
/// `volumes`; the bytes used. `base` is the file offset of `buf`.
fn parse_names(
    buf: &[u8],
    base: u64,
    volumes: &mut VolumeTable,
) -> Result<usize, (u64, &'static str, String)> {
    let mut cur = Cursor { buf, pos: 0 };
    let count = cur.u32().map_err(|m| (base, "name_count", m))?;
    for _ in 0..count {
        let at = base + cur.pos as u64;
        let len = cur.u16().map_err(|m| (at, "name_len", m))?;
        let bytes = cur.take(usize::from(len)).map_err(|m| (at, "name", m))?;
        let name =
            std::str::from_utf8(bytes).map_err(|_| (at, "name", "volume name is not UTF-8".to_owned()))?;
        let expected = volumes.len();
        if volumes.intern(name) as usize != expected {
            return Err((at, "name", format!("volume name {name:?} appears twice")));
        }
    }
    Ok(cur.pos)
}

/// A bounds-checked little-endian reader over a verified payload.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or_else(|| format!("needs {n} bytes, {} left in the block", self.buf.len() - self.pos))?;
        let bytes = &self.buf[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    fn byte(&mut self) -> Result<u8, String> {
        let b = *self.buf.get(self.pos).ok_or_else(|| "record runs past the end of its block".to_owned())?;
        self.pos += 1;
        Ok(b)
    }

    fn u16(&mut self) -> Result<u16, String> {
        self.take(2).map(|b| le_u16(b, 0))
    }

    fn u32(&mut self) -> Result<u32, String> {
        self.take(4).map(|b| le_u32(b, 0))
    }

    #[inline(always)]
    fn varint(&mut self) -> Result<u64, String> {
        // Away from the block's end a varint's 10 possible bytes are all
        // there, so one bounds check serves the whole unrolled loop.
        if let Some(bytes) = self.buf.get(self.pos..).and_then(|b| b.first_chunk::<10>()) {
            let mut result = 0u64;
            for (i, &byte) in bytes.iter().enumerate() {
                result |= u64::from(byte & 0x7f) << (7 * i);
                if byte < 0x80 {
                    if i == 9 && byte > 1 {
                        break;
                    }
                    self.pos += i + 1;
                    return Ok(result);
                }
            }
            return Err("varint overflows 64 bits".to_owned());
        }
        self.varint_near_end()
    }

    #[cold]
    fn varint_near_end(&mut self) -> Result<u64, String> {
        let mut result = 0u64;
        let mut shift = 0u32;
        let mut pos = self.pos;
        loop {
            let Some(&byte) = self.buf.get(pos) else {
                return Err("record runs past the end of its block".to_owned());
            };
            pos += 1;
            if shift == 63 && byte > 1 {
                return Err("varint overflows 64 bits".to_owned());
            }
            result |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                self.pos = pos;
                return Ok(result);
            }
            shift += 7;
        }
    }
}

impl RequestSource for CctReader {
    fn next_request(&mut self, req: &mut Request) -> Result<bool, TraceError> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        if self.next >= self.records.len() && (self.done || !self.load_block()?) {
            return Ok(false);
        }
        let r = self.records[self.next];
        self.next += 1;
        req.time_ns = r.time_ns;
        req.volume = r.volume;
        req.op = r.op;
        req.offset = r.offset;
        req.len = r.len;
        req.content.clear();
        if r.content_len > 0 {
            let start = r.content_start as usize;
            req.content.extend_from_slice(&self.content[start..start + r.content_len as usize]);
        }
        Ok(true)
    }

    fn volumes(&self) -> &VolumeTable {
        &self.volumes
    }

    fn has_timestamps(&self) -> bool {
        self.header.has_timestamps()
    }
}

/// What [`convert`] wrote.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ConvertStats {
    /// Requests written.
    pub requests: u64,
    /// Requests with content hashes.
    pub content_requests: u64,
    /// Volumes named.
    pub volumes: u64,
    /// Blocks written.
    pub blocks: u64,
    /// Size of the output file in bytes (compressed size for `.zst`).
    pub file_bytes: u64,
    /// Size of the uncompressed `.cct` stream.
    pub cct_bytes: u64,
    /// Whether the output is zstd-compressed.
    pub zstd: bool,
}

/// Deletes a temporary file unless it was renamed into place.
struct TempFile {
    path: PathBuf,
    keep: bool,
}

impl TempFile {
    fn beside(target: &Path, suffix: &str) -> TempFile {
        let name = target.file_name().map_or_else(|| "trace".into(), |n| n.to_string_lossy().into_owned());
        let tmp_name = format!(".{name}.{}{suffix}.tmp", std::process::id());
        TempFile { path: target.with_file_name(tmp_name), keep: false }
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !self.keep {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Copy every remaining request of `reader` into a new `.cct` file at
/// `out_path` (zstd-compressed when the name ends in `.zst`).
pub fn convert(reader: &mut dyn RequestSource, out_path: &Path) -> Result<ConvertStats, TraceError> {
    convert_with_progress(reader, out_path, |_| {})
}

/// [`convert`], calling `progress` with the number of requests copied so far
/// every 64 Ki requests and at the end.
///
/// The file is written under a temporary name beside `out_path` and renamed
/// into place only once complete, so `out_path` either holds a whole
/// verified trace or is left as it was. For `.zst` the plain file is written
/// first (its header is patched with the final request count, which a
/// compressed stream cannot be), then compressed.
pub fn convert_with_progress(
    reader: &mut dyn RequestSource,
    out_path: &Path,
    mut progress: impl FnMut(u64),
) -> Result<ConvertStats, TraceError> {
    let zstd_out = out_path.extension().is_some_and(|e| e.eq_ignore_ascii_case("zst"));
    let write_err = |tmp: &Path, e: io::Error| {
        TraceError::file(out_path, format!("cannot write (temporary file {}): {e}", tmp.display()))
    };
    let plain = TempFile::beside(out_path, "");
    let mut req = Request::default();
    // Read one request first: some sources learn whether they have
    // timestamps from their first lines.
    let mut have = reader.next_request(&mut req)?;
    let file = File::create(&plain.path).map_err(|e| write_err(&plain.path, e))?;
    let options = CctOptions { has_timestamps: reader.has_timestamps(), ..CctOptions::default() };
    let mut writer =
        CctWriter::with_options(BufWriter::with_capacity(1 << 20, file), reader.volumes(), options)
            .map_err(|e| write_err(&plain.path, e))?;
    let mut copied = 0u64;
    while have {
        if reader.volumes().len() > writer.volumes_declared() as usize {
            writer.sync_volumes(reader.volumes()).map_err(|e| write_err(&plain.path, e))?;
        }
        writer.write(&req).map_err(|e| write_err(&plain.path, e))?;
        copied += 1;
        if copied % (64 * 1024) == 0 {
            progress(copied);
        }
        have = reader.next_request(&mut req)?;
    }
    writer.sync_volumes(reader.volumes()).map_err(|e| write_err(&plain.path, e))?;
    let (out, summary) = writer.finish_seekable().map_err(|e| write_err(&plain.path, e))?;
    let file = out.into_inner().map_err(|e| write_err(&plain.path, e.into_error()))?;
    file.sync_all().map_err(|e| write_err(&plain.path, e))?;
    drop(file);
    progress(copied);
    let mut final_tmp = plain;
    if zstd_out {
        let packed = TempFile::beside(out_path, ".zst");
        let compress = || -> io::Result<()> {
            let input = BufReader::with_capacity(1 << 20, File::open(&final_tmp.path)?);
            let output = File::create(&packed.path)?;
            let mut encoder = zstd::stream::Encoder::new(BufWriter::with_capacity(1 << 20, output), 3)?;
            io::copy(&mut { input }, &mut encoder)?;
            let output = encoder.finish()?.into_inner().map_err(|e| e.into_error())?;
            output.sync_all()
        };
        compress().map_err(|e| write_err(&packed.path, e))?;
        final_tmp = packed;
    }
    fs::rename(&final_tmp.path, out_path).map_err(|e| {
        TraceError::file(out_path, format!("cannot rename {} into place: {e}", final_tmp.path.display()))
    })?;
    final_tmp.keep = true;
    let file_bytes = fs::metadata(out_path).map(|m| m.len()).unwrap_or(summary.bytes);
    Ok(ConvertStats {
        requests: summary.requests,
        content_requests: summary.content_requests,
        volumes: summary.volumes,
        blocks: summary.blocks,
        file_bytes,
        cct_bytes: summary.bytes,
        zstd: zstd_out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_round_trips_extremes() {
        for v in [0i64, 1, -1, i64::MAX, i64::MIN, 12345, -98765] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
    }

    #[test]
    fn varint_round_trips_and_rejects_overflow() {
        for v in [0u64, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let mut buf = Vec::new();
            put_varint(&mut buf, v);
            let mut cur = Cursor { buf: &buf, pos: 0 };
            assert_eq!(cur.varint().unwrap(), v);
            assert_eq!(cur.pos, buf.len());
        }
        let too_long = [0xffu8; 10];
        assert!(Cursor { buf: &too_long, pos: 0 }.varint().is_err());
        let cut = [0x80u8, 0x80];
        assert!(Cursor { buf: &cut, pos: 0 }.varint().is_err());
    }
}
