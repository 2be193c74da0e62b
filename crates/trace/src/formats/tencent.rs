//! Tencent CBS 2018 block traces (SNIA IOTTA 27917, ATC'20 OSCA):
//! `Timestamp,Offset,Size,IOType,VolumeID`.
//!
//! `Timestamp` is Unix seconds (a decimal fraction is accepted and kept to
//! the nanosecond); `Offset` and `Size` are 512-byte sectors, converted to
//! bytes; `IOType` is `0` for read and `1` for write; `VolumeID` (an integer)
//! names the volume. The published files have no header; a header line
//! spelling the column names above is accepted and skipped.

use std::fmt::Write as _;

use crate::error::FieldError;
use crate::request::{Op, Request, VolumeTable};
use crate::text::sniff_lines;
use crate::text::{field, LineParser};

const SECTOR_BYTES: u64 = 512;
const HEADER: &str = "Timestamp,Offset,Size,IOType,VolumeID";

/// Parser for Tencent CBS lines.
#[derive(Default)]
pub struct TencentParser {
    volume_name: String,
}

impl TencentParser {
    /// A new parser.
    pub fn new() -> Self {
        Self::default()
    }
}

/// True when the lines look like Tencent CBS records (the rule of
/// [`sniff_lines`]; a header line may come first).
pub fn sniff(lines: &[&str]) -> bool {
    let mut parser = TencentParser::new();
    let mut volumes = VolumeTable::new();
    let mut req = Request::default();
    sniff_lines(lines, |line| parser.parse_line(line, &mut volumes, &mut req))
}

impl LineParser for TencentParser {
    fn parse_line(
        &mut self,
        line: &str,
        volumes: &mut VolumeTable,
        req: &mut Request,
    ) -> Result<bool, FieldError> {
        if line.trim().eq_ignore_ascii_case(HEADER) {
            return Ok(false);
        }
        let mut fields = line.split(',');
        let time_ns = field::seconds_to_ns(field::next(&mut fields, "Timestamp")?, "Timestamp")?;
        let offset = field::u64(field::next(&mut fields, "Offset")?, "Offset")?;
        let len = field::u64(field::next(&mut fields, "Size")?, "Size")?;
        let op = match field::next(&mut fields, "IOType")? {
            "0" => Op::Read,
            "1" => Op::Write,
            other => {
                return Err(FieldError::new(
                    "IOType",
                    format!("expected 0 (read) or 1 (write), found {other:?}"),
                ))
            }
        };
        let volume = field::u64(field::next(&mut fields, "VolumeID")?, "VolumeID")?;
        if let Some(extra) = fields.next() {
            return Err(FieldError::new("VolumeID", format!("more than 5 fields (next is {extra:?})")));
        }
        self.volume_name.clear();
        let _ = write!(self.volume_name, "{volume}");
        req.time_ns = time_ns;
        req.volume = volumes.intern(&self.volume_name);
        req.op = op;
        req.offset = field::scaled(offset, SECTOR_BYTES, "Offset")?;
        req.len = field::scaled(len, SECTOR_BYTES, "Size")?;
        Ok(true)
    }
}
