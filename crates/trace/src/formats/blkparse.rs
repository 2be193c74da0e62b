//! `blkparse` default text output (blktrace's `blkparse_fmt.c`):
//!
//! `device cpu sequence seconds.nanoseconds pid action RWBS payload`
//!
//! for example `8,0    1        1     0.000000000  1234  Q   R 123 + 8 [fio]`.
//!
//! blktrace records several actions for one I/O (Q queued, G get request,
//! I inserted, D issued, C completed, M/F merged, ...). Only one action is
//! kept so that each I/O counts once: Q by default
//! ([`BlkparseParser::new`]), any other by [`BlkparseParser::with_action`]
//! (C gives completion times). Lines of other actions are checked for a
//! well-formed header (device, CPU, sequence, time, pid, action) and skipped.
//!
//! For a kept line:
//!
//! - `RWBS` decides the operation: `D` (discard) is a trim, `W` a write, `R`
//!   a read; `F` (flush / FUA), `A` (read-ahead), `S` (sync), `M` (metadata),
//!   `E` (secure erase) and `B` (barrier, in traces from old kernels) only
//!   modify. `N` lines (no data, which includes write-zeroes) and
//!   flush-only lines carry no request.
//! - The payload `sector + sectors [process]` gives the range in 512-byte
//!   sectors. Flush requests (an `F` in RWBS) without that payload, SCSI
//!   pass-through payloads (`bytes (cdb) [process]`) and zero-length ranges
//!   carry no data and are skipped.
//! - The volume is the device as blkparse prints it (`8,0`); the time is
//!   `seconds.nanoseconds` since the trace started.
//!
//! blkparse ends its output with a summary block (`CPU0 (8,0):`,
//! `Total (8,0):`, `Throughput (R/W): ...`, `Events (8,0): ...`). From the
//! first summary heading on, lines that are not event lines are skipped;
//! before it, such a line is an error. A leading `Input file ... added` line
//! (blkparse's notice, when stderr was captured too) is skipped as well.

use crate::error::FieldError;
use crate::request::{Op, Request, VolumeTable};
use crate::text::sniff_lines;
use crate::text::{field, LineParser};

const SECTOR_BYTES: u64 = 512;

/// Parser for blkparse text output.
pub struct BlkparseParser {
    action: String,
    in_summary: bool,
    event_lines: u64,
}

impl Default for BlkparseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl BlkparseParser {
    /// A parser that keeps the Q (queue) action of each I/O.
    pub fn new() -> Self {
        Self::with_action('Q')
    }

    /// A parser that keeps `action` (one of blkparse's action letters; Q,
    /// G, I, D and C are the ones every I/O passes through).
    pub fn with_action(action: char) -> Self {
        BlkparseParser { action: action.to_string(), in_summary: false, event_lines: 0 }
    }

    /// Event lines (of any action) seen so far.
    pub fn event_lines(&self) -> u64 {
        self.event_lines
    }
}

/// True when the lines look like blkparse output (the rule of
/// [`sniff_lines`]), counting event lines of any action as records, since
/// the first lines of a trace need not be queue events.
pub fn sniff(lines: &[&str]) -> bool {
    let mut parser = BlkparseParser::new();
    let mut volumes = VolumeTable::new();
    let mut req = Request::default();
    sniff_lines(lines, |line| {
        let before = parser.event_lines;
        parser.parse_line(line, &mut volumes, &mut req).map(|_| parser.event_lines > before)
    })
}

/// `major,minor` with both numbers decimal.
fn is_device(text: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    text.split_once(',').is_some_and(|(major, minor)| digits(major) && digits(minor))
}

/// A heading that opens blkparse's closing summary: `CPU0 (8,0):`,
/// `Total (8,0):`.
fn is_summary_heading(line: &str) -> bool {
    let line = line.trim();
    let Some(name) = line.strip_suffix("):").and_then(|l| l.split_once(" (")).map(|(name, _)| name) else {
        return false;
    };
    name == "Total"
        || name.strip_prefix("CPU").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The operation RWBS describes; `None` when it moves no data.
fn op_of_rwbs(rwbs: &str) -> Result<Option<Op>, FieldError> {
    let mut op = None;
    for letter in rwbs.chars() {
        match letter {
            'D' => op = Some(Op::Trim),
            'W' if op.is_none() => op = Some(Op::Write),
            'R' if op.is_none() => op = Some(Op::Read),
            'W' | 'R' | 'N' | 'F' | 'A' | 'S' | 'M' | 'E' | 'B' => {}
            _ => {
                return Err(FieldError::new(
                    "RWBS",
                    format!("expected letters of R, W, D, N, F, A, S, M, E, B, found {rwbs:?}"),
                ))
            }
        }
    }
    if rwbs.is_empty() {
        return Err(FieldError::new("RWBS", "empty"));
    }
    Ok(op)
}

impl LineParser for BlkparseParser {
    fn parse_line(
        &mut self,
        line: &str,
        volumes: &mut VolumeTable,
        req: &mut Request,
    ) -> Result<bool, FieldError> {
        let mut fields = line.split_whitespace();
        let device = field::next(&mut fields, "device")?;
        if !is_device(device) {
            if self.in_summary {
                return Ok(false);
            }
            if is_summary_heading(line) {
                self.in_summary = true;
                return Ok(false);
            }
            if line.starts_with("Input file ") && line.ends_with(" added") {
                return Ok(false);
            }
            return Err(FieldError::new("device", format!("expected major,minor, found {device:?}")));
        }
        field::u64(field::next(&mut fields, "cpu")?, "cpu")?;
        field::u64(field::next(&mut fields, "sequence")?, "sequence")?;
        let time_ns = field::seconds_to_ns(field::next(&mut fields, "time")?, "time")?;
        field::u64(field::next(&mut fields, "pid")?, "pid")?;
        let action = field::next(&mut fields, "action")?;
        if action.is_empty() || action.len() > 2 || !action.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(FieldError::new(
                "action",
                format!("expected an action letter such as Q or C, found {action:?}"),
            ));
        }
        self.event_lines += 1;
        if action != self.action {
            return Ok(false);
        }
        let rwbs = field::next(&mut fields, "RWBS")?;
        let Some(op) = op_of_rwbs(rwbs)? else {
            return Ok(false);
        };
        let sector_text = fields.next();
        let plus = fields.next();
        let (Some(sector_text), Some("+")) = (sector_text, plus) else {
            let pass_through = plus.is_some_and(|p| p.starts_with('('));
            if rwbs.contains('F') || pass_through {
                return Ok(false);
            }
            return Err(FieldError::new(
                "sector",
                format!(
                    "expected `sector + sectors`, found {:?}",
                    line.split_whitespace().skip(7).collect::<Vec<_>>().join(" ")
                ),
            ));
        };
        let sector = field::u64(sector_text, "sector")?;
        let sectors = field::u64(field::next(&mut fields, "sectors")?, "sectors")?;
        if sectors == 0 {
            // A zero-length queue event is a barrier or flush: no data.
            return Ok(false);
        }
        req.time_ns = time_ns;
        req.volume = volumes.intern(device);
        req.op = op;
        req.offset = field::scaled(sector, SECTOR_BYTES, "sector")?;
        req.len = field::scaled(sectors, SECTOR_BYTES, "sectors")?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(parser: &mut BlkparseParser, line: &str) -> Result<Option<Request>, FieldError> {
        let mut volumes = VolumeTable::new();
        let mut req = Request::default();
        Ok(parser.parse_line(line, &mut volumes, &mut req)?.then_some(req))
    }

    #[test]
    fn rwbs_letters() {
        assert_eq!(op_of_rwbs("R").unwrap(), Some(Op::Read));
        assert_eq!(op_of_rwbs("WS").unwrap(), Some(Op::Write));
        assert_eq!(op_of_rwbs("FWFS").unwrap(), Some(Op::Write));
        assert_eq!(op_of_rwbs("RA").unwrap(), Some(Op::Read));
        assert_eq!(op_of_rwbs("DS").unwrap(), Some(Op::Trim));
        assert_eq!(op_of_rwbs("WBS").unwrap(), Some(Op::Write));
        assert_eq!(op_of_rwbs("N").unwrap(), None);
        assert_eq!(op_of_rwbs("FN").unwrap(), None);
        assert!(op_of_rwbs("X").is_err());
    }

    #[test]
    fn keeps_only_the_chosen_action() {
        let mut q = BlkparseParser::new();
        let mut c = BlkparseParser::with_action('C');
        let queued = "  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kjournald]";
        let done = "  8,0    3        7     0.000303798     0  C   W 223490 + 8 [0]";
        let req = parse(&mut q, queued).unwrap().unwrap();
        assert_eq!((req.offset, req.len, req.op), (223490 * 512, 4096, Op::Write));
        assert!(parse(&mut q, done).unwrap().is_none());
        assert!(parse(&mut c, queued).unwrap().is_none());
        assert_eq!(parse(&mut c, done).unwrap().unwrap().time_ns, 303_798);
    }

    #[test]
    fn skips_flushes_and_pass_through_but_not_garbage() {
        let mut q = BlkparseParser::new();
        assert!(parse(&mut q, "8,0 1 5 0.1 123 Q FWS [kworker/1:1H]").unwrap().is_none());
        assert!(parse(&mut q, "8,0 1 5 0.1 123 Q R 36 (12 01 00) [scsi_id]").unwrap().is_none());
        assert_eq!(parse(&mut q, "8,0 1 5 0.1 123 Q R [fio]").unwrap_err().field, "sector");
        assert_eq!(parse(&mut q, "8,0 1 5 0.1 123 Q R 10 + x [fio]").unwrap_err().field, "sectors");
        assert_eq!(parse(&mut q, "8,0 1 5 0.1 123 Q Z 10 + 8 [fio]").unwrap_err().field, "RWBS");
        assert_eq!(parse(&mut q, "8,0 1 5 zero 123 Q R 10 + 8 [fio]").unwrap_err().field, "time");
        assert_eq!(parse(&mut q, "Reads Queued: 0").unwrap_err().field, "device");
        assert!(parse(&mut q, "CPU0 (8,0):").unwrap().is_none());
        assert!(parse(&mut q, " Reads Queued:           0,        0KiB").unwrap().is_none());
    }
}
