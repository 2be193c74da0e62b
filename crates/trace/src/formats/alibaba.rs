//! Alibaba block traces 2020 (`alibaba/block-traces`, `io_traces.csv`):
//! `device_id,opcode,offset,length,timestamp`.
//!
//! `device_id` (an integer, 0-999 in the published set) names the volume;
//! `opcode` is `R` or `W`; `offset` and `length` are bytes; `timestamp` is
//! microseconds (Unix epoch), converted to nanoseconds. The published files
//! have no header, but the README's header line (with its misspelling
//! `timestmap`, or spelled right) is accepted and skipped.

use std::fmt::Write as _;

use crate::error::FieldError;
use crate::request::{Request, VolumeTable};
use crate::text::sniff_lines;
use crate::text::{field, LineParser};

/// Parser for Alibaba 2020 lines.
#[derive(Default)]
pub struct AlibabaParser {
    volume_name: String,
}

impl AlibabaParser {
    /// A new parser.
    pub fn new() -> Self {
        Self::default()
    }
}

fn is_header(line: &str) -> bool {
    let line = line.trim();
    line.eq_ignore_ascii_case("device_id,opcode,offset,length,timestamp")
        || line.eq_ignore_ascii_case("device_id,opcode,offset,length,timestmap")
}

/// True when the lines look like Alibaba 2020 records (the rule of
/// [`sniff_lines`]; a header line may come first).
pub fn sniff(lines: &[&str]) -> bool {
    let mut parser = AlibabaParser::new();
    let mut volumes = VolumeTable::new();
    let mut req = Request::default();
    sniff_lines(lines, |line| parser.parse_line(line, &mut volumes, &mut req))
}

impl LineParser for AlibabaParser {
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
        let device = field::u64(field::next(&mut fields, "device_id")?, "device_id")?;
        let op = field::read_write_letter(field::next(&mut fields, "opcode")?, "opcode")?;
        let offset = field::u64(field::next(&mut fields, "offset")?, "offset")?;
        let len = field::u64(field::next(&mut fields, "length")?, "length")?;
        let micros = field::u64(field::next(&mut fields, "timestamp")?, "timestamp")?;
        if let Some(extra) = fields.next() {
            return Err(FieldError::new("timestamp", format!("more than 5 fields (next is {extra:?})")));
        }
        // Name the volume by its number, so `007` and `7` are one device.
        self.volume_name.clear();
        let _ = write!(self.volume_name, "{device}");
        req.time_ns = field::scaled(micros, 1_000, "timestamp")?;
        req.volume = volumes.intern(&self.volume_name);
        req.op = op;
        req.offset = offset;
        req.len = len;
        Ok(true)
    }
}
