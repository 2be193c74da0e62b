//! MSR Cambridge block traces (SNIA IOTTA 388):
//! `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`.
//!
//! Timestamps are Windows FILETIME (100 ns ticks since 1601), converted here
//! to nanoseconds since the Unix epoch. Offset and Size are bytes. Each
//! (Hostname, DiskNumber) is one volume, named `hostname_disk` as the trace
//! files are (`hm_0`).

use std::fmt::Write as _;

use crate::error::FieldError;
use crate::request::{Op, Request, VolumeTable};
use crate::text::sniff_lines;
use crate::text::{field, LineParser};

/// FILETIME ticks between 1601-01-01 and 1970-01-01.
const FILETIME_UNIX_EPOCH: u64 = 116_444_736_000_000_000;

/// Parser for MSR Cambridge lines.
#[derive(Default)]
pub struct MsrParser {
    volume_name: String,
}

impl MsrParser {
    /// A new parser.
    pub fn new() -> Self {
        Self::default()
    }
}

/// True when the lines look like MSR Cambridge records (the rule of
/// [`sniff_lines`]; a header line may come first).
pub fn sniff(lines: &[&str]) -> bool {
    let mut parser = MsrParser::new();
    let mut volumes = VolumeTable::new();
    let mut req = Request::default();
    sniff_lines(lines, |line| parser.parse_line(line, &mut volumes, &mut req))
}

/// The column names, as some copies of the trace carry them on a first line.
fn is_header(line: &str) -> bool {
    line.trim().eq_ignore_ascii_case("Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime")
}

impl LineParser for MsrParser {
    fn parse_line(
        &mut self,
        line: &str,
        volumes: &mut VolumeTable,
        req: &mut Request,
    ) -> Result<bool, FieldError> {
        if is_header(line) {
            return Ok(false);
        }
        let mut fields = line.split(',');
        let ticks = field::u64(field::next(&mut fields, "Timestamp")?, "Timestamp")?;
        let host = field::next(&mut fields, "Hostname")?;
        let disk = field::u64(field::next(&mut fields, "DiskNumber")?, "DiskNumber")?;
        let op = match field::next(&mut fields, "Type")? {
            "Read" | "read" => Op::Read,
            "Write" | "write" => Op::Write,
            other => return Err(FieldError::new("Type", format!("expected Read or Write, found {other:?}"))),
        };
        let offset = field::u64(field::next(&mut fields, "Offset")?, "Offset")?;
        let len = field::u64(field::next(&mut fields, "Size")?, "Size")?;
        field::u64(field::next(&mut fields, "ResponseTime")?, "ResponseTime")?;
        if fields.next().is_some() {
            return Err(FieldError::new("ResponseTime", "more than 7 fields"));
        }
        if host.is_empty() {
            return Err(FieldError::new("Hostname", "empty"));
        }
        let since_unix = ticks
            .checked_sub(FILETIME_UNIX_EPOCH)
            .ok_or_else(|| FieldError::new("Timestamp", format!("FILETIME {ticks} is before 1970")))?;
        self.volume_name.clear();
        self.volume_name.push_str(host);
        self.volume_name.push('_');
        // Writing into a String cannot fail.
        let _ = write!(self.volume_name, "{disk}");
        req.time_ns = field::scaled(since_unix, 100, "Timestamp")?;
        req.volume = volumes.intern(&self.volume_name);
        req.op = op;
        req.offset = offset;
        req.len = len;
        Ok(true)
    }
}
