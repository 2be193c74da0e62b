//! The shared machinery of line-oriented trace formats: line numbering,
//! comment and header skipping, `--skip-bad-lines`, and field parsing helpers
//! whose errors name the field.

use std::io::BufRead;
use std::path::PathBuf;

use crate::error::{FieldError, Location, TraceError};
use crate::request::{Request, VolumeTable};
use crate::RequestSource;

/// One text format: turns a line into a request.
pub trait LineParser: Send {
    /// Parse `line` (without its line terminator) into `req`.
    ///
    /// Returns `Ok(false)` for a line that carries no request (a header, a
    /// comment, a control record, an action the format repeats for one I/O).
    /// `req.content` arrives cleared; every other field must be set.
    fn parse_line(
        &mut self,
        line: &str,
        volumes: &mut VolumeTable,
        req: &mut Request,
    ) -> Result<bool, FieldError>;

    /// Whether the format's requests carry timestamps.
    fn has_timestamps(&self) -> bool {
        true
    }
}

/// A [`RequestSource`] over any [`LineParser`].
pub struct TextReader<P> {
    parser: P,
    reader: Box<dyn BufRead + Send>,
    path: PathBuf,
    line: String,
    line_number: u64,
    skip_bad_lines: bool,
    skipped: u64,
    volumes: VolumeTable,
}

impl<P: LineParser> TextReader<P> {
    /// Read lines of `reader` (the file `path`) with `parser`.
    pub fn new(parser: P, reader: Box<dyn BufRead + Send>, path: PathBuf, skip_bad_lines: bool) -> Self {
        TextReader {
            parser,
            reader,
            path,
            line: String::with_capacity(256),
            line_number: 0,
            skip_bad_lines,
            skipped: 0,
            volumes: VolumeTable::new(),
        }
    }
}

impl<P: LineParser> RequestSource for TextReader<P> {
    fn next_request(&mut self, req: &mut Request) -> Result<bool, TraceError> {
        loop {
            self.line.clear();
            let read = self.reader.read_line(&mut self.line);
            self.line_number += 1;
            match read {
                Ok(0) => return Ok(false),
                Ok(_) => {}
                Err(e) => {
                    // Invalid UTF-8 is a bad line, not the end of the trace.
                    let error = TraceError {
                        path: self.path.clone(),
                        location: Location::Line(self.line_number),
                        field: None,
                        message: format!("cannot read line: {e}"),
                    };
                    if self.skip_bad_lines && e.kind() == std::io::ErrorKind::InvalidData {
                        // read_line has consumed the bad line through its newline.
                        self.skipped += 1;
                        continue;
                    }
                    return Err(error);
                }
            }
            let line = self.line.trim_end_matches(['\n', '\r']);
            if line.trim().is_empty() {
                continue;
            }
            req.content.clear();
            match self.parser.parse_line(line, &mut self.volumes, req) {
                Ok(true) => return Ok(true),
                Ok(false) => continue,
                Err(_) if self.skip_bad_lines => self.skipped += 1,
                Err(e) => {
                    return Err(TraceError {
                        path: self.path.clone(),
                        location: Location::Line(self.line_number),
                        field: Some(e.field),
                        message: e.message,
                    })
                }
            }
        }
    }

    fn volumes(&self) -> &VolumeTable {
        &self.volumes
    }

    fn skipped(&self) -> u64 {
        self.skipped
    }

    fn has_timestamps(&self) -> bool {
        self.parser.has_timestamps()
    }
}

/// The detection rule shared by the line formats: `parse` is tried on each
/// sampled line and returns whether it was a record (`Ok(false)` for a
/// header or other line the format knows and skips).
///
/// The lines are taken for the format when at least one is a record and
/// none fails, or when at least three are records and exactly one fails.
/// Tolerating one failure lets a trace with one corrupt line, or a header
/// the format does not know, be detected and then reported line by line
/// instead of as an unknown format; requiring three records keeps a single
/// coincidental match from deciding.
pub fn sniff_lines(lines: &[&str], mut parse: impl FnMut(&str) -> Result<bool, FieldError>) -> bool {
    let mut records = 0;
    let mut failures = 0;
    for line in lines {
        match parse(line) {
            Ok(true) => records += 1,
            Ok(false) => {}
            Err(_) => failures += 1,
        }
        if failures > 1 {
            return false;
        }
    }
    (failures == 0 && records >= 1) || (failures == 1 && records >= 3)
}

/// Field parsing helpers whose errors name the field and quote the text.
pub mod field {
    use crate::error::FieldError;
    use crate::request::{ContentHash, Op};

    /// Take the next field of `fields`, or report that `name` is missing.
    pub fn next<'a>(fields: &mut impl Iterator<Item = &'a str>, name: &str) -> Result<&'a str, FieldError> {
        fields.next().map(str::trim).ok_or_else(|| FieldError::new(name, "missing"))
    }

    /// An unsigned decimal integer.
    pub fn u64(text: &str, name: &str) -> Result<u64, FieldError> {
        text.parse::<u64>()
            .map_err(|_| FieldError::new(name, format!("expected an unsigned integer, found {text:?}")))
    }

    /// An unsigned integer in hexadecimal, with or without `0x`.
    pub fn hex_u64(text: &str, name: &str) -> Result<u64, FieldError> {
        let digits = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")).unwrap_or(text);
        u64::from_str_radix(digits, 16)
            .map_err(|_| FieldError::new(name, format!("expected a hexadecimal integer, found {text:?}")))
    }

    /// A finite, non-negative decimal number.
    pub fn non_negative_f64(text: &str, name: &str) -> Result<f64, FieldError> {
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
            _ => Err(FieldError::new(name, format!("expected a non-negative number, found {text:?}"))),
        }
    }

    /// Seconds (a decimal number) to nanoseconds, rejecting values that overflow.
    pub fn seconds_to_ns(text: &str, name: &str) -> Result<u64, FieldError> {
        // Split at the point so nanosecond precision survives large epoch values.
        let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
        if whole.is_empty() && frac.is_empty() {
            return Err(FieldError::new(name, format!("expected seconds, found {text:?}")));
        }
        let seconds = if whole.is_empty() { 0 } else { u64(whole, name)? };
        if !frac.bytes().all(|b| b.is_ascii_digit()) {
            return Err(FieldError::new(name, format!("expected seconds, found {text:?}")));
        }
        let mut nanos: u64 = 0;
        for (i, digit) in frac.bytes().take(9).enumerate() {
            nanos += u64::from(digit - b'0') * 10u64.pow(8 - i as u32);
        }
        seconds
            .checked_mul(1_000_000_000)
            .and_then(|ns| ns.checked_add(nanos))
            .ok_or_else(|| FieldError::new(name, format!("time {text:?} s overflows 64-bit nanoseconds")))
    }

    /// Multiply by a unit, reporting overflow against the field.
    pub fn scaled(value: u64, unit: u64, name: &str) -> Result<u64, FieldError> {
        value
            .checked_mul(unit)
            .ok_or_else(|| FieldError::new(name, format!("value {value} x {unit} overflows 64 bits")))
    }

    /// `R`/`W` style single-letter operation.
    pub fn read_write_letter(text: &str, name: &str) -> Result<Op, FieldError> {
        match text {
            "R" | "r" => Ok(Op::Read),
            "W" | "w" => Ok(Op::Write),
            _ => Err(FieldError::new(name, format!("expected R or W, found {text:?}"))),
        }
    }

    /// A 128-bit digest written as 32 hexadecimal digits.
    pub fn md5(text: &str, name: &str) -> Result<ContentHash, FieldError> {
        let bytes = text.as_bytes();
        if bytes.len() != 32 {
            return Err(FieldError::new(name, format!("expected 32 hex digits, found {text:?}")));
        }
        let mut hash = [0u8; 16];
        for (i, pair) in bytes.chunks_exact(2).enumerate() {
            let hi = (pair[0] as char).to_digit(16);
            let lo = (pair[1] as char).to_digit(16);
            match (hi, lo) {
                (Some(hi), Some(lo)) => hash[i] = (hi * 16 + lo) as u8,
                _ => return Err(FieldError::new(name, format!("expected 32 hex digits, found {text:?}"))),
            }
        }
        Ok(hash)
    }
}

#[cfg(test)]
mod tests {
    use super::field;

    #[test]
    fn seconds_keep_nanosecond_precision() {
        assert_eq!(field::seconds_to_ns("1538323200.123456789", "t").unwrap(), 1_538_323_200_123_456_789);
        assert_eq!(field::seconds_to_ns("0.5", "t").unwrap(), 500_000_000);
        assert_eq!(field::seconds_to_ns("7", "t").unwrap(), 7_000_000_000);
        assert!(field::seconds_to_ns("-1", "t").is_err());
        assert!(field::seconds_to_ns("1e5", "t").is_err());
        assert!(field::seconds_to_ns("99999999999999999999", "t").is_err());
        assert!(field::seconds_to_ns(".", "t").is_err());
    }

    #[test]
    fn md5_parses_and_rejects() {
        let h = field::md5("3df1244f6143869f52abf2a1d73d0c0f", "md5").unwrap();
        assert_eq!(h[0], 0x3d);
        assert_eq!(h[15], 0x0f);
        assert!(field::md5("3df1", "md5").is_err());
        assert!(field::md5("zzf1244f6143869f52abf2a1d73d0c0f", "md5").is_err());
    }
}
