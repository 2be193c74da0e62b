//! Opening trace files: transparent gzip and zstd decompression, chosen by
//! the stream's magic bytes rather than the file name.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Read};
use std::path::Path;

use crate::error::TraceError;

/// How many decompressed bytes are kept for format detection.
pub const SNIFF_BYTES: usize = 64 * 1024;

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// An opened, decompressed byte stream plus its first bytes for sniffing.
pub struct Source {
    /// The whole decompressed stream, starting at byte 0.
    pub reader: Box<dyn BufRead + Send>,
    /// A copy of up to [`SNIFF_BYTES`] first decompressed bytes.
    pub head: Vec<u8>,
    /// Compression found on the file ("gzip", "zstd" or "none").
    pub compression: &'static str,
}

/// Open `path`, detect compression by magic bytes, and read the first bytes.
pub fn open_source(path: &Path) -> Result<Source, TraceError> {
    let file = File::open(path).map_err(|e| TraceError::file(path, format!("cannot open: {e}")))?;
    let mut raw = BufReader::with_capacity(256 * 1024, file);
    let magic = raw.fill_buf().map_err(|e| TraceError::file(path, format!("cannot read: {e}")))?;
    let (decoded, compression): (Box<dyn Read + Send>, &'static str) = if magic.starts_with(&GZIP_MAGIC) {
        (Box::new(flate2::read::MultiGzDecoder::new(raw)), "gzip")
    } else if magic.starts_with(&ZSTD_MAGIC) {
        let decoder = zstd::stream::read::Decoder::with_buffer(raw)
            .map_err(|e| TraceError::file(path, format!("cannot start zstd decoder: {e}")))?;
        (Box::new(decoder), "zstd")
    } else {
        (Box::new(raw), "none")
    };
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    let mut decoded = decoded;
    (&mut decoded)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| TraceError::file(path, format!("cannot read ({compression} stream): {e}")))?;
    let reader: Box<dyn BufRead + Send> =
        Box::new(BufReader::with_capacity(256 * 1024, Cursor::new(head.clone()).chain(decoded)));
    Ok(Source { reader, head, compression })
}

/// Read until `buf` is full or the stream ends; returns the bytes read.
pub fn read_full(reader: &mut dyn BufRead, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Read exactly `buf.len()` bytes, or report how many were there before the end.
///
/// Returns `Ok(true)` when the buffer was filled, `Ok(false)` at a clean end
/// of stream (no byte read), and `Err(UnexpectedEof)` with the count of bytes
/// read in the message when the stream ended part-way.
pub fn read_record(reader: &mut dyn BufRead, buf: &mut [u8]) -> io::Result<bool> {
    // Fast path: the whole record is already buffered.
    if let Ok(available) = reader.fill_buf() {
        if available.len() >= buf.len() {
            buf.copy_from_slice(&available[..buf.len()]);
            reader.consume(buf.len());
            return Ok(true);
        }
    }
    match read_full(reader, buf)? {
        0 if !buf.is_empty() => Ok(false),
        n if n == buf.len() => Ok(true),
        n => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("truncated record: {n} of {} bytes", buf.len()),
        )),
    }
}
