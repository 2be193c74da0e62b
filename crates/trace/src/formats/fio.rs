//! fio I/O logs (`--write_iolog`), versions 2 and 3.
//!
//! The first line names the version: `fio version 2 iolog` or
//! `fio version 3 iolog`. Every other line is one of
//!
//! - v2: `filename action [offset length]`
//! - v3: `timestamp filename action [offset length]`
//!
//! with `offset` and `length` in bytes. `read`, `write` and `trim` become
//! requests; the file actions (`add`, `open`, `close`) and the actions that
//! move no data (`sync`, `datasync`, `sync_file_range`, `wait`) produce none.
//! The volume is the file name, so a log of several jobs on several devices
//! keeps them apart.
//!
//! v3 timestamps are microseconds since the log started when fio wrote the
//! log (`iolog.c: log_io_u` uses `utime_since_now()`); converters write other
//! units, so the unit is a parameter ([`TimeUnit`]). v2 logs carry no
//! timestamps: their requests get `time_ns` 0 and
//! [`LineParser::has_timestamps`] is false. (v2 `wait` lines do carry
//! relative delays; they are validated but not turned into times, because
//! they describe the replay pacing a user chose rather than observed issue
//! times.)
//!
//! A version line may appear again later (concatenated logs); it switches the
//! version from there on.

use std::str::FromStr;

use crate::error::FieldError;
use crate::request::{Op, Request, VolumeTable};
use crate::text::{field, LineParser};

/// The unit of a timestamp column: fio v3 timestamps, and the generic CSV
/// reader's `time=` column.
///
/// Values may be decimal (`12.5` ms); they are converted exactly to whole
/// nanoseconds (digits finer than a nanosecond are dropped).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TimeUnit {
    /// Nanoseconds (`ns`).
    Nanoseconds,
    /// Microseconds (`us`), what fio itself writes.
    #[default]
    Microseconds,
    /// Milliseconds (`ms`).
    Milliseconds,
    /// Seconds (`s`).
    Seconds,
}

impl TimeUnit {
    /// Nanoseconds in one unit.
    pub fn nanos(self) -> u64 {
        match self {
            TimeUnit::Nanoseconds => 1,
            TimeUnit::Microseconds => 1_000,
            TimeUnit::Milliseconds => 1_000_000,
            TimeUnit::Seconds => 1_000_000_000,
        }
    }

    /// The short name (`ns`, `us`, `ms`, `s`) used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            TimeUnit::Nanoseconds => "ns",
            TimeUnit::Microseconds => "us",
            TimeUnit::Milliseconds => "ms",
            TimeUnit::Seconds => "s",
        }
    }

    /// Convert `text`, a non-negative decimal number of this unit, to
    /// nanoseconds; errors name `name` and quote the text.
    ///
    /// Plain decimals are converted with integer arithmetic so that large
    /// epoch values keep nanosecond precision; exponent notation (`1.5e9`,
    /// as some tools write floats) falls back to `f64`.
    pub fn to_ns(self, text: &str, name: &str) -> Result<u64, FieldError> {
        let bad = || {
            FieldError::new(
                name,
                format!("expected a non-negative number of {}, found {text:?}", self.name()),
            )
        };
        let overflow =
            || FieldError::new(name, format!("time {text:?} {} overflows 64-bit nanoseconds", self.name()));
        if text.contains(['e', 'E']) {
            let value = field::non_negative_f64(text, name).map_err(|_| bad())?;
            let ns = value * self.nanos() as f64;
            // 2^64 as f64; anything at or above it does not fit.
            if ns >= 18_446_744_073_709_551_616.0 {
                return Err(overflow());
            }
            return Ok(ns as u64);
        }
        let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
        if whole.is_empty() && frac.is_empty() {
            return Err(bad());
        }
        if !whole.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let whole_ns = if whole.is_empty() {
            0
        } else {
            let value: u64 = whole.parse().map_err(|_| overflow())?;
            value.checked_mul(self.nanos()).ok_or_else(overflow)?
        };
        // At most nine fractional digits can matter (seconds to nanoseconds).
        let mut frac_value: u64 = 0;
        let mut frac_scale: u64 = 1;
        for digit in frac.bytes().take(9) {
            frac_value = frac_value * 10 + u64::from(digit - b'0');
            frac_scale *= 10;
        }
        let frac_ns = (u128::from(frac_value) * u128::from(self.nanos()) / u128::from(frac_scale)) as u64;
        whole_ns.checked_add(frac_ns).ok_or_else(overflow)
    }
}

impl FromStr for TimeUnit {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ns" | "nsec" | "nanosecond" | "nanoseconds" => Ok(TimeUnit::Nanoseconds),
            "us" | "usec" | "µs" | "microsecond" | "microseconds" => Ok(TimeUnit::Microseconds),
            "ms" | "msec" | "millisecond" | "milliseconds" => Ok(TimeUnit::Milliseconds),
            "s" | "sec" | "second" | "seconds" => Ok(TimeUnit::Seconds),
            _ => Err(format!("unknown time unit {s:?}; expected one of ns, us, ms, s")),
        }
    }
}

impl std::fmt::Display for TimeUnit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which iolog layout a file uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// `filename action [offset length]`, no timestamps.
    V2,
    /// `timestamp filename action [offset length]`.
    V3,
}

/// The version a line declares, if it is a version line.
pub fn version_line(line: &str) -> Option<Version> {
    let mut words = line.split_whitespace();
    if words.next() != Some("fio") || words.next() != Some("version") {
        return None;
    }
    let version = match words.next() {
        Some("2") => Version::V2,
        Some("3") => Version::V3,
        _ => return None,
    };
    (words.next() == Some("iolog") && words.next().is_none()).then_some(version)
}

/// Parser for fio iolog lines.
pub struct FioParser {
    unit: TimeUnit,
    version: Option<Version>,
}

impl FioParser {
    /// A parser that learns the version from the log's first line, reading
    /// v3 timestamps in `unit`.
    pub fn new(unit: TimeUnit) -> Self {
        FioParser { unit, version: None }
    }

    /// A parser for a log whose version is already known (for example from
    /// the sniffed head), so that [`LineParser::has_timestamps`] is right
    /// before the first line is read.
    pub fn with_version(version: Version, unit: TimeUnit) -> Self {
        FioParser { unit, version: Some(version) }
    }

    /// The version seen so far.
    pub fn version(&self) -> Option<Version> {
        self.version
    }
}

/// True when the first line is a fio iolog version line.
///
/// Only the version line is checked: it is unambiguous, and a log whose
/// later lines are broken is better reported line by line as fio than as
/// an unknown format.
pub fn sniff(lines: &[&str]) -> bool {
    lines.first().is_some_and(|line| version_line(line).is_some())
}

impl LineParser for FioParser {
    fn parse_line(
        &mut self,
        line: &str,
        volumes: &mut VolumeTable,
        req: &mut Request,
    ) -> Result<bool, FieldError> {
        if let Some(version) = version_line(line) {
            self.version = Some(version);
            return Ok(false);
        }
        let Some(version) = self.version else {
            return Err(FieldError::new(
                "version",
                format!("expected `fio version 2 iolog` or `fio version 3 iolog` first, found {line:?}"),
            ));
        };
        let mut fields = line.split_whitespace();
        let time_ns = match version {
            Version::V2 => 0,
            Version::V3 => self.unit.to_ns(field::next(&mut fields, "timestamp")?, "timestamp")?,
        };
        let filename = field::next(&mut fields, "filename")?;
        let action = field::next(&mut fields, "action")?;
        let op = match action {
            "read" => Some(Op::Read),
            "write" => Some(Op::Write),
            "trim" => Some(Op::Trim),
            "add" | "open" | "close" | "sync" | "datasync" | "sync_file_range" | "wait" => None,
            other => {
                return Err(FieldError::new(
                    "action",
                    format!(
                        "expected read, write, trim, sync, datasync, sync_file_range, wait, add, open or close, found {other:?}"
                    ),
                ))
            }
        };
        let Some(op) = op else {
            // Whatever follows a non-data action is fio's business, but it
            // must still be numbers, or the line is not what we think it is.
            for (name, text) in ["offset", "length"].into_iter().zip(&mut fields) {
                field::u64(text, name)?;
            }
            if let Some(extra) = fields.next() {
                return Err(FieldError::new(
                    "length",
                    format!("unexpected text after the length: {extra:?}"),
                ));
            }
            return Ok(false);
        };
        let offset = field::u64(field::next(&mut fields, "offset")?, "offset")?;
        let len = field::u64(field::next(&mut fields, "length")?, "length")?;
        if let Some(extra) = fields.next() {
            return Err(FieldError::new("length", format!("unexpected text after the length: {extra:?}")));
        }
        req.time_ns = time_ns;
        req.volume = volumes.intern(filename);
        req.op = op;
        req.offset = offset;
        req.len = len;
        Ok(true)
    }

    /// True only once a `fio version 3 iolog` line has been read: before the
    /// version is known nothing is claimed.
    fn has_timestamps(&self) -> bool {
        self.version == Some(Version::V3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_units_convert_exactly() {
        assert_eq!(TimeUnit::Microseconds.to_ns("1500", "t").unwrap(), 1_500_000);
        assert_eq!(TimeUnit::Milliseconds.to_ns("2.5", "t").unwrap(), 2_500_000);
        assert_eq!(TimeUnit::Seconds.to_ns("1538323200.123456789", "t").unwrap(), 1_538_323_200_123_456_789);
        assert_eq!(TimeUnit::Nanoseconds.to_ns("7.9", "t").unwrap(), 7);
        assert_eq!(TimeUnit::Seconds.to_ns("1.5e3", "t").unwrap(), 1_500_000_000_000);
        assert_eq!(TimeUnit::Seconds.to_ns(".5", "t").unwrap(), 500_000_000);
        for bad in ["", ".", "-1", "1.2.3", "x", "1e400", "99999999999999999999", "1e30", "+1"] {
            assert!(TimeUnit::Seconds.to_ns(bad, "t").is_err(), "{bad:?}");
        }
    }

    #[test]
    fn time_unit_names_round_trip() {
        for unit in [TimeUnit::Nanoseconds, TimeUnit::Microseconds, TimeUnit::Milliseconds, TimeUnit::Seconds]
        {
            assert_eq!(unit.name().parse::<TimeUnit>().unwrap(), unit);
        }
        assert_eq!(TimeUnit::default(), TimeUnit::Microseconds);
        assert!("hours".parse::<TimeUnit>().is_err());
    }

    #[test]
    fn version_lines() {
        assert_eq!(version_line("fio version 2 iolog"), Some(Version::V2));
        assert_eq!(version_line("fio version 3 iolog "), Some(Version::V3));
        assert_eq!(version_line("fio version 4 iolog"), None);
        assert_eq!(version_line("fio version 3 iolog extra"), None);
    }
}
