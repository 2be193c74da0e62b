//! FIU SRCMap and I/O Deduplication traces (SNIA IOTTA 414), blank-separated:
//!
//! `ts pid process lba size op [major minor [md5 ...]]`
//!
//! | field | meaning |
//! |---|---|
//! | `ts` | time in nanoseconds (the trace's own origin) |
//! | `pid` | process id (checked, not kept) |
//! | `process` | process name (not kept; may contain blanks, see below) |
//! | `lba` | first 512-byte sector |
//! | `size` | length in 512-byte sectors |
//! | `op` | `R` or `W` |
//! | `major`, `minor` | device numbers; the volume is named `major,minor` (`6,0`) |
//! | `md5` | one MD5 per 4096 bytes of data, 32 hex digits each |
//!
//! The I/O Deduplication traces carry every column; SRCMap lines may stop
//! after `op`, and then the volume is `0`. A line with `major` but no
//! `minor` is an error.
//!
//! The process name is a kernel `comm`, which may contain blanks (or be
//! empty, two blanks in a row). The op is the sixth token when that token is
//! `R`/`W` preceded by two integers (a one-word name, by far the common
//! case); otherwise it is the last such token, searched from the right, since
//! nothing after the op (device numbers, 32-digit hashes) is a lone letter.
//!
//! MD5s: a line either has none, or exactly one per 4096 bytes of its range
//! (`ceil(size * 512 / 4096)`); they are kept in `Request::content`. Any
//! other count is an error naming `md5`, because the hashes cannot be mapped
//! to 4 KiB blocks without guessing their granularity (some FIU traces are
//! said to hash 512 or 8192 bytes); `--skip-bad-lines` drops such lines.

use std::fmt::Write as _;

use crate::error::FieldError;
use crate::request::{Op, Request, VolumeTable, CONTENT_BLOCK_BYTES};
use crate::text::sniff_lines;
use crate::text::{field, LineParser};

const SECTOR_BYTES: u64 = 512;
/// Index of the op token when the process name is one word.
const STANDARD_OP: usize = 5;
/// Index of the earliest token that can be the op: `ts pid lba size op`
/// with an empty process name.
const EARLIEST_OP: usize = 4;

/// Parser for FIU lines.
#[derive(Default)]
pub struct FiuParser {
    volume_name: String,
    /// Byte ranges of the current line's tokens, reused across lines.
    spans: Vec<(usize, usize)>,
}

impl FiuParser {
    /// A new parser.
    pub fn new() -> Self {
        Self::default()
    }
}

/// True when the lines look like FIU records (the rule of
/// [`sniff_lines`]).
pub fn sniff(lines: &[&str]) -> bool {
    let mut parser = FiuParser::new();
    let mut volumes = VolumeTable::new();
    let mut req = Request::default();
    sniff_lines(lines, |line| parser.parse_line(line, &mut volumes, &mut req))
}

fn op_letter(token: &str) -> Option<Op> {
    match token {
        "R" | "r" => Some(Op::Read),
        "W" | "w" => Some(Op::Write),
        _ => None,
    }
}

impl LineParser for FiuParser {
    fn parse_line(
        &mut self,
        line: &str,
        volumes: &mut VolumeTable,
        req: &mut Request,
    ) -> Result<bool, FieldError> {
        self.spans.clear();
        let base = line.as_ptr() as usize;
        for word in line.split_whitespace() {
            let start = word.as_ptr() as usize - base;
            self.spans.push((start, start + word.len()));
        }
        let spans = &self.spans;
        let token = |i: usize| spans.get(i).and_then(|&(s, e)| line.get(s..e));

        let ts = field::u64(token(0).ok_or_else(|| FieldError::new("ts", "missing"))?, "ts")?;
        field::u64(token(1).ok_or_else(|| FieldError::new("pid", "missing"))?, "pid")?;
        let missing = |name: &str| FieldError::new(name, "missing");
        let is_number =
            |i: usize| token(i).is_some_and(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()));
        let is_op_at =
            |i: usize| token(i).and_then(op_letter).is_some() && is_number(i - 1) && is_number(i - 2);
        let op_at = if is_op_at(STANDARD_OP) {
            Some(STANDARD_OP)
        } else {
            (EARLIEST_OP..spans.len()).rev().find(|&i| i != STANDARD_OP && is_op_at(i))
        };
        let Some(op_at) = op_at else {
            // No reading fits: report the first bad field of the common
            // layout (a one-word process name).
            field::u64(token(3).ok_or_else(|| missing("lba"))?, "lba")?;
            field::u64(token(4).ok_or_else(|| missing("size"))?, "size")?;
            let text = token(5).ok_or_else(|| missing("op"))?;
            return Err(FieldError::new("op", format!("expected R or W, found {text:?}")));
        };
        let op = token(op_at).and_then(op_letter).unwrap_or(Op::Read);
        let lba = field::u64(token(op_at - 2).unwrap_or(""), "lba")?;
        let sectors = field::u64(token(op_at - 1).unwrap_or(""), "size")?;
        let offset = field::scaled(lba, SECTOR_BYTES, "lba")?;
        let len = field::scaled(sectors, SECTOR_BYTES, "size")?;

        self.volume_name.clear();
        match (token(op_at + 1), token(op_at + 2)) {
            (None, _) => self.volume_name.push('0'),
            (Some(_), None) => return Err(missing("minor")),
            (Some(major), Some(minor)) => {
                let major = field::u64(major, "major")?;
                let minor = field::u64(minor, "minor")?;
                let _ = write!(self.volume_name, "{major},{minor}");
            }
        }
        let hashes = spans.len().saturating_sub(op_at + 3);
        if hashes > 0 {
            let expected = len.div_ceil(CONTENT_BLOCK_BYTES);
            if hashes as u64 != expected {
                return Err(FieldError::new(
                    "md5",
                    format!(
                        "{hashes} hash(es) for {sectors} sectors ({len} bytes); expected {expected}, one per {CONTENT_BLOCK_BYTES} bytes"
                    ),
                ));
            }
            req.content.reserve(hashes);
            for i in op_at + 3..spans.len() {
                req.content.push(field::md5(token(i).unwrap_or(""), "md5")?);
            }
        }
        req.time_ns = ts;
        req.volume = volumes.intern(&self.volume_name);
        req.op = op;
        req.offset = offset;
        req.len = len;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<(Request, String), FieldError> {
        let mut parser = FiuParser::new();
        let mut volumes = VolumeTable::new();
        let mut req = Request::default();
        assert!(parser.parse_line(line, &mut volumes, &mut req)?);
        let name = volumes.name(req.volume);
        Ok((req, name))
    }

    #[test]
    fn process_names_with_blanks_and_srcmap_lines() {
        let (req, volume) = parse("89968195792462 20782 Web Content 283193184 8 R 6 0").unwrap();
        assert_eq!((req.offset, req.len, req.op, volume.as_str()), (283193184 * 512, 4096, Op::Read, "6,0"));
        let (req, volume) = parse("1 2 R 10 16 W").unwrap();
        assert_eq!((req.offset, req.len, req.op, volume.as_str()), (5120, 8192, Op::Write, "0"));
        let (req, _) = parse("1 2  10 8 W 8 1").unwrap();
        assert_eq!(req.offset, 5120);
        let (req, _) = parse("1 2 a b R 10 8 W 8 1").unwrap();
        assert_eq!((req.offset, req.op), (5120, Op::Write));
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(parse("1 2 gzip 10 8 X 6 0").unwrap_err().field, "op");
        assert_eq!(parse("1 2 gzip 10 8 R 6").unwrap_err().field, "minor");
        assert_eq!(parse("1 2 gzip x 8 R 6 0").unwrap_err().field, "lba");
        assert_eq!(parse("1 2 gzip 10 8").unwrap_err().field, "op");
        assert_eq!(parse("1 2 gzip 10").unwrap_err().field, "size");
        // The one-word reading wins, so a stray letter at the end is a bad hash.
        assert_eq!(parse("1 2 gzip 10 8 R 6 0 R").unwrap_err().field, "md5");
        assert_eq!(parse("t 2 gzip 10 8 R").unwrap_err().field, "ts");
        let md5 = "3df1244f6143869f52abf2a1d73d0c0f";
        assert_eq!(parse(&format!("1 2 gzip 10 16 R 6 0 {md5}")).unwrap_err().field, "md5");
        assert_eq!(parse("1 2 gzip 10 8 R 6 0 nothex").unwrap_err().field, "md5");
        assert_eq!(parse(&format!("1 2 gzip 10 16 R 6 0 {md5} {md5}")).unwrap().0.content.len(), 2);
    }
}
