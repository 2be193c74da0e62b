//! CloudPhysics / VMware vscsiStats binary traces, versions 1 and 2.
//!
//! Little-endian C structs with natural alignment (libCacheSim's
//! `vscsi.h`): version 1 is 32 bytes `u32 sn, u32 len, u32 n_sg, u16 cmd,
//! u16 ver, u64 lbn, u64 ts_us`; version 2 is 40 bytes `u16 cmd, u16 ver, u32
//! sn, u32 len, u32 n_sg, u64 lbn, u64 ts_us, u64 response_time`. The version
//! is `ver >> 8`, checked on the first two records. `len` is bytes, `lbn` is
//! 512-byte sectors, `ts` is microseconds. SCSI opcodes other than
//! READ/WRITE/UNMAP (control commands such as cmd 0) carry no data and are
//! skipped.

use std::io::BufRead;
use std::path::PathBuf;

use crate::error::TraceError;
use crate::request::{Op, Request, VolumeTable};
use crate::source::read_record;
use crate::RequestSource;

const V1_RECORD_BYTES: usize = 32;
const V2_RECORD_BYTES: usize = 40;
const SECTOR_BYTES: u64 = 512;
/// Records checked by [`sniff`], as libCacheSim does.
const SNIFF_RECORDS: usize = 2;

/// Which layout a file uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// 32-byte records.
    V1,
    /// 40-byte records with a response time.
    V2,
}

impl Version {
    fn record_bytes(self) -> usize {
        match self {
            Version::V1 => V1_RECORD_BYTES,
            Version::V2 => V2_RECORD_BYTES,
        }
    }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The version of a vscsi stream from its first records, if it is one.
pub fn detect_version(head: &[u8]) -> Option<Version> {
    let version_of = |v: Version, ver_at: usize| {
        let n = v.record_bytes();
        if head.len() < n {
            return false;
        }
        let records = (head.len() / n).min(SNIFF_RECORDS);
        (0..records).all(|i| u16_at(head, i * n + ver_at) >> 8 == v as u16 + 1)
    };
    if version_of(Version::V1, 14) {
        Some(Version::V1)
    } else if version_of(Version::V2, 2) {
        Some(Version::V2)
    } else {
        None
    }
}

/// True when `head` starts with vscsi records.
pub fn sniff(head: &[u8]) -> bool {
    detect_version(head).is_some()
}

/// SCSI opcode to operation; `None` for commands that move no data.
fn op_of(cmd: u16) -> Option<Op> {
    match cmd {
        // READ(6), READ(10), READ(12), READ(16)
        0x08 | 0x28 | 0xa8 | 0x88 => Some(Op::Read),
        // WRITE(6/10/12/16), WRITE AND VERIFY(10/12/16), WRITE SAME(10/16)
        0x0a | 0x2a | 0xaa | 0x8a | 0x2e | 0xae | 0x8e | 0x41 | 0x93 => Some(Op::Write),
        // UNMAP
        0x42 => Some(Op::Trim),
        _ => None,
    }
}

/// Streaming reader of vscsi records.
pub struct VscsiReader {
    reader: Box<dyn BufRead + Send>,
    path: PathBuf,
    version: Version,
    record: [u8; V2_RECORD_BYTES],
    offset: u64,
    volumes: VolumeTable,
}

impl VscsiReader {
    /// Read `reader` (the whole file `path`), whose first bytes are `head`.
    pub fn new(reader: Box<dyn BufRead + Send>, head: &[u8], path: PathBuf) -> Result<Self, TraceError> {
        let version = detect_version(head).ok_or_else(|| {
            TraceError::at_byte(
                &path,
                0,
                Some("ver"),
                "not a vscsi trace: version byte (ver >> 8) is neither 1 nor 2",
            )
        })?;
        let mut volumes = VolumeTable::new();
        // A vscsi file is one virtual disk; name it after the file.
        let name = path.file_stem().map_or_else(|| "vscsi".to_owned(), |s| s.to_string_lossy().into_owned());
        volumes.intern(&name);
        Ok(VscsiReader { reader, path, version, record: [0; V2_RECORD_BYTES], offset: 0, volumes })
    }

    /// The layout in use.
    pub fn version(&self) -> Version {
        self.version
    }
}

impl RequestSource for VscsiReader {
    fn next_request(&mut self, req: &mut Request) -> Result<bool, TraceError> {
        let n = self.version.record_bytes();
        loop {
            let at = self.offset;
            let record = &mut self.record[..n];
            match read_record(&mut *self.reader, record) {
                Ok(true) => {}
                Ok(false) => return Ok(false),
                Err(e) => return Err(TraceError::at_byte(&self.path, at, None, e.to_string())),
            }
            self.offset += n as u64;
            let (cmd, ver, len, lbn, ts) = match self.version {
                Version::V1 => (
                    u16_at(record, 12),
                    u16_at(record, 14),
                    u32_at(record, 4),
                    u64_at(record, 16),
                    u64_at(record, 24),
                ),
                Version::V2 => (
                    u16_at(record, 0),
                    u16_at(record, 2),
                    u32_at(record, 8),
                    u64_at(record, 16),
                    u64_at(record, 24),
                ),
            };
            let expected = self.version as u16 + 1;
            if ver >> 8 != expected {
                let ver_at = if self.version == Version::V1 { 14 } else { 2 };
                return Err(TraceError::at_byte(
                    &self.path,
                    at + ver_at,
                    Some("ver"),
                    format!("record version {} (0x{ver:04x}) in a version {expected} trace", ver >> 8),
                ));
            }
            let Some(op) = op_of(cmd) else { continue };
            let offset = lbn.checked_mul(SECTOR_BYTES).ok_or_else(|| {
                TraceError::at_byte(
                    &self.path,
                    at + 16,
                    Some("lbn"),
                    format!("sector {lbn} overflows a 64-bit byte offset"),
                )
            })?;
            let time_ns = ts.checked_mul(1000).ok_or_else(|| {
                TraceError::at_byte(
                    &self.path,
                    at + 24,
                    Some("ts"),
                    format!("timestamp {ts} us overflows 64-bit nanoseconds"),
                )
            })?;
            req.time_ns = time_ns;
            req.volume = 0;
            req.op = op;
            req.offset = offset;
            req.len = u64::from(len);
            req.content.clear();
            return Ok(true);
        }
    }

    fn volumes(&self) -> &VolumeTable {
        &self.volumes
    }
}
