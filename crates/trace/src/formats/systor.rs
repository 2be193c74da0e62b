//! SNIA SYSTOR'17 block traces (IOTTA trace 4964):
//! `Timestamp,Response,IOType,LUN,Offset,Size`.
//!
//! `Timestamp` is seconds (a decimal, Unix epoch), converted exactly to
//! nanoseconds. `Response` is the response time in seconds; it is checked
//! but not kept, and may be empty (some records lack it). `IOType` is `R` or
//! `W`. `LUN` names the volume. `Offset` and `Size` are bytes. The files
//! start with the header line above, which is skipped wherever it appears
//! (so concatenated files read too).

use crate::error::FieldError;
use crate::request::{Request, VolumeTable};
use crate::text::sniff_lines;
use crate::text::{field, LineParser};

const HEADER: &str = "Timestamp,Response,IOType,LUN,Offset,Size";

/// Parser for SYSTOR'17 lines.
#[derive(Default)]
pub struct SystorParser;

impl SystorParser {
    /// A new parser.
    pub fn new() -> Self {
        Self
    }
}

/// True when the lines look like SYSTOR'17 records (the rule of
/// [`sniff_lines`]; a header line may come first).
pub fn sniff(lines: &[&str]) -> bool {
    let mut parser = SystorParser::new();
    let mut volumes = VolumeTable::new();
    let mut req = Request::default();
    sniff_lines(lines, |line| parser.parse_line(line, &mut volumes, &mut req))
}

impl LineParser for SystorParser {
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
        let response = field::next(&mut fields, "Response")?;
        if !response.is_empty() {
            field::non_negative_f64(response, "Response")?;
        }
        let op = field::read_write_letter(field::next(&mut fields, "IOType")?, "IOType")?;
        let lun = field::next(&mut fields, "LUN")?;
        if lun.is_empty() {
            return Err(FieldError::new("LUN", "empty"));
        }
        let offset = field::u64(field::next(&mut fields, "Offset")?, "Offset")?;
        let len = field::u64(field::next(&mut fields, "Size")?, "Size")?;
        if let Some(extra) = fields.next() {
            return Err(FieldError::new("Size", format!("more than 6 fields (next is {extra:?})")));
        }
        req.time_ns = time_ns;
        req.volume = volumes.intern(lun);
        req.op = op;
        req.offset = offset;
        req.len = len;
        Ok(true)
    }
}
