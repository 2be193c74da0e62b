//! Any delimited text trace, read through a user-given column mapping
//! (`--format csv --columns SPEC`).
//!
//! # The mapping string
//!
//! `SPEC` is a comma-separated list of `key=value` items, in any order:
//!
//! | key | value | meaning |
//! |---|---|---|
//! | `time` | `COL[:UNIT]` | issue time; `UNIT` is `s` (default), `ms`, `us` or `ns`; decimals allowed (`1487685742.383634`) |
//! | `volume` | `COL` | volume name (any text); without it every request is on volume `0` |
//! | `op` | `COL` | operation, matched against the `read`/`write`/`trim`/`ignore` values |
//! | `offset` | `COL[:UNIT]` | first byte; `UNIT` is `bytes` (default), `sectors` (512 B), `4k` (4096 B) or a number of bytes |
//! | `len` | `COL[:UNIT]` | length, units as for `offset` |
//! | `read` | `V1\|V2...` | op values meaning read |
//! | `write` | `V1\|V2...` | op values meaning write |
//! | `trim` | `V1\|V2...` | op values meaning trim (discard) |
//! | `ignore` | `V1\|V2...` | op values whose lines carry no request (flushes, say) |
//! | `delimiter` | `comma` (default), `tab`, `space`, `semicolon`, `pipe` or one character | field separator; `space` means any run of blanks |
//! | `header` | `true`, `false` (default) or a number | header lines to skip at the top |
//! | `comment` | one character | lines starting with it are skipped |
//!
//! `COL` is a 0-based column index. `op`, `offset` and `len` are required;
//! without `time` the trace has no timestamps (`time_ns` is 0).
//!
//! Op values are compared ignoring ASCII case. The defaults are
//! `read=R|Read`, `write=W|Write`, `trim=T|Trim|D|Discard`; giving `read`,
//! `write` or `trim` replaces that default (and an explicit value is never
//! shadowed by a default one), `ignore` has no default. Numeric codes have
//! no default because datasets disagree on them (Tencent CBS writes 0 for
//! read, some replayers 1 for read and 0 for write): give them explicitly.
//! Any other op value is an error.
//!
//! Example (Tencent-like): `time=0:s,offset=1:sectors,len=2:sectors,op=3,read=0,write=1,volume=4`.
//!
//! Fields are trimmed of blanks and of one pair of surrounding double
//! quotes; a delimiter inside quotes is not supported.

use std::fmt;

use crate::error::FieldError;
use crate::formats::fio::TimeUnit;
use crate::request::{Op, Request, VolumeTable};
use crate::text::{field, LineParser};

/// How fields are separated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delimiter {
    /// Any run of blanks (spaces and tabs).
    Whitespace,
    /// One character.
    Char(char),
}

/// One mapped column and its unit multiplier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column<U> {
    /// 0-based column index.
    pub index: usize,
    /// Unit of the values.
    pub unit: U,
}

/// The parsed `--columns` mapping of a generic CSV trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnMap {
    /// Issue time column, if any.
    pub time: Option<Column<TimeUnit>>,
    /// Volume name column, if any.
    pub volume: Option<usize>,
    /// Operation column.
    pub op: usize,
    /// Offset column; the unit is bytes per value.
    pub offset: Column<u64>,
    /// Length column; the unit is bytes per value.
    pub len: Column<u64>,
    /// Op values (lower-cased) and what they mean; `None` = no request.
    pub op_values: Vec<(String, Option<Op>)>,
    /// Field separator.
    pub delimiter: Delimiter,
    /// Header lines to skip.
    pub header_lines: u64,
    /// Comment marker.
    pub comment: Option<char>,
}

impl ColumnMap {
    /// Parse a mapping string (grammar in the [module docs](self)).
    pub fn parse(spec: &str) -> Result<ColumnMap, String> {
        let mut time = None;
        let mut volume = None;
        let mut op = None;
        let mut offset = None;
        let mut len = None;
        let mut values: [Option<Vec<String>>; 4] = Default::default();
        let mut delimiter = Delimiter::Char(',');
        let mut header_lines = 0;
        let mut comment = None;
        let mut seen: Vec<&str> = Vec::new();
        for item in spec.split(',').map(str::trim).filter(|item| !item.is_empty()) {
            let (key, value) = item
                .split_once('=')
                .map(|(k, v)| (k.trim(), v.trim()))
                .ok_or_else(|| format!("column mapping item {item:?} is not key=value"))?;
            if seen.contains(&key) {
                return Err(format!("column mapping gives {key:?} twice"));
            }
            seen.push(key);
            match key {
                "time" => {
                    let (index, unit) = column_and_unit(key, value)?;
                    let unit = match unit {
                        None => TimeUnit::Seconds,
                        Some(unit) => unit.parse::<TimeUnit>().map_err(|e| format!("time: {e}"))?,
                    };
                    time = Some(Column { index, unit });
                }
                "volume" => volume = Some(column_only(key, value)?),
                "op" => op = Some(column_only(key, value)?),
                "offset" => offset = Some(byte_column(key, value)?),
                "len" => len = Some(byte_column(key, value)?),
                "read" | "write" | "trim" | "ignore" => {
                    let list: Vec<String> = value.split('|').map(|v| v.trim().to_ascii_lowercase()).collect();
                    if list.iter().any(String::is_empty) {
                        return Err(format!("{key}: empty op value in {value:?}"));
                    }
                    let slot = ["read", "write", "trim", "ignore"].iter().position(|k| *k == key).unwrap_or(0);
                    values[slot] = Some(list);
                }
                "delimiter" => {
                    delimiter = match value {
                        "comma" => Delimiter::Char(','),
                        "tab" => Delimiter::Char('\t'),
                        "space" | "whitespace" => Delimiter::Whitespace,
                        "semicolon" => Delimiter::Char(';'),
                        "pipe" => Delimiter::Char('|'),
                        other => {
                            let mut chars = other.chars();
                            match (chars.next(), chars.next()) {
                                (Some(c), None) => Delimiter::Char(c),
                                _ => {
                                    return Err(format!(
                                        "delimiter: expected comma, tab, space, semicolon, pipe or one character, found {other:?}"
                                    ))
                                }
                            }
                        }
                    }
                }
                "header" => {
                    header_lines = match value {
                        "true" | "yes" => 1,
                        "false" | "no" => 0,
                        n => n.parse().map_err(|_| {
                            format!("header: expected true, false or a number of lines, found {n:?}")
                        })?,
                    }
                }
                "comment" => {
                    let mut chars = value.chars();
                    comment = match (chars.next(), chars.next()) {
                        (Some(c), None) => Some(c),
                        _ => return Err(format!("comment: expected one character, found {value:?}")),
                    };
                }
                other => {
                    return Err(format!(
                        "unknown column mapping key {other:?}; expected time, volume, op, offset, len, read, write, trim, ignore, delimiter, header or comment"
                    ))
                }
            }
        }
        let missing = |what: &str| format!("column mapping has no {what}=COLUMN (required: op, offset, len)");
        let op = op.ok_or_else(|| missing("op"))?;
        let offset = offset.ok_or_else(|| missing("offset"))?;
        let len = len.ok_or_else(|| missing("len"))?;

        // Explicit values first, so a default never shadows one.
        let mut op_values: Vec<(String, Option<Op>)> = Vec::new();
        let meanings = [Some(Op::Read), Some(Op::Write), Some(Op::Trim), None];
        for (list, meaning) in values.iter().zip(meanings) {
            for value in list.iter().flatten() {
                if op_values.iter().any(|(v, _)| v == value) {
                    return Err(format!("op value {value:?} is given two meanings"));
                }
                op_values.push((value.clone(), meaning));
            }
        }
        let defaults: [&[&str]; 3] = [&["r", "read"], &["w", "write"], &["t", "trim", "d", "discard"]];
        for ((list, meaning), given) in defaults.into_iter().zip(meanings).zip(&values) {
            if given.is_none() {
                for value in list {
                    if !op_values.iter().any(|(v, _)| v == value) {
                        op_values.push((value.to_string(), meaning));
                    }
                }
            }
        }

        let map = ColumnMap { time, volume, op, offset, len, op_values, delimiter, header_lines, comment };
        let mut used: Vec<(&str, usize)> =
            vec![("op", map.op), ("offset", map.offset.index), ("len", map.len.index)];
        used.extend(map.time.map(|t| ("time", t.index)));
        used.extend(map.volume.map(|v| ("volume", v)));
        for (i, (name, index)) in used.iter().enumerate() {
            if let Some((other, _)) = used[..i].iter().find(|(_, j)| j == index) {
                return Err(format!("{other} and {name} both map to column {index}"));
            }
        }
        Ok(map)
    }

    /// The largest column index the mapping reads.
    fn last_column(&self) -> usize {
        let mut last = self.op.max(self.offset.index).max(self.len.index);
        if let Some(time) = self.time {
            last = last.max(time.index);
        }
        if let Some(volume) = self.volume {
            last = last.max(volume);
        }
        last
    }
}

impl fmt::Display for ColumnMap {
    /// The canonical mapping string, which [`ColumnMap::parse`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(time) = self.time {
            write!(f, "time={}:{},", time.index, time.unit)?;
        }
        if let Some(volume) = self.volume {
            write!(f, "volume={volume},")?;
        }
        write!(
            f,
            "op={},offset={}:{},len={}:{}",
            self.op, self.offset.index, self.offset.unit, self.len.index, self.len.unit
        )?;
        for (key, meaning) in
            [("read", Some(Op::Read)), ("write", Some(Op::Write)), ("trim", Some(Op::Trim)), ("ignore", None)]
        {
            let values: Vec<&str> =
                self.op_values.iter().filter(|(_, m)| *m == meaning).map(|(v, _)| v.as_str()).collect();
            if !values.is_empty() {
                write!(f, ",{key}={}", values.join("|"))?;
            }
        }
        match self.delimiter {
            Delimiter::Whitespace => write!(f, ",delimiter=space")?,
            Delimiter::Char(',') => {}
            Delimiter::Char('\t') => write!(f, ",delimiter=tab")?,
            Delimiter::Char(c) => write!(f, ",delimiter={c}")?,
        }
        if self.header_lines > 0 {
            write!(f, ",header={}", self.header_lines)?;
        }
        if let Some(c) = self.comment {
            write!(f, ",comment={c}")?;
        }
        Ok(())
    }
}

fn column_index(key: &str, text: &str) -> Result<usize, String> {
    text.parse::<usize>()
        .map_err(|_| format!("{key}: expected a 0-based column number, found {text:?}"))
        // Far beyond any real trace; keeps the per-line field buffer bounded.
        .and_then(|i| if i < 4096 { Ok(i) } else { Err(format!("{key}: column {i} is too large")) })
}

fn column_and_unit<'a>(key: &str, value: &'a str) -> Result<(usize, Option<&'a str>), String> {
    match value.split_once(':') {
        Some((col, unit)) => Ok((column_index(key, col.trim())?, Some(unit.trim()))),
        None => Ok((column_index(key, value)?, None)),
    }
}

fn column_only(key: &str, value: &str) -> Result<usize, String> {
    match column_and_unit(key, value)? {
        (index, None) => Ok(index),
        (_, Some(unit)) => Err(format!("{key}: takes no unit, found {unit:?}")),
    }
}

fn byte_column(key: &str, value: &str) -> Result<Column<u64>, String> {
    let (index, unit) = column_and_unit(key, value)?;
    let unit = match unit.map(str::to_ascii_lowercase).as_deref() {
        None | Some("bytes") | Some("byte") | Some("b") => 1,
        Some("sectors") | Some("sector") | Some("512") => 512,
        Some("4k") | Some("4kib") | Some("4096") => 4096,
        Some(other) => match other.parse::<u64>() {
            Ok(n) if n > 0 => n,
            _ => {
                return Err(format!(
                    "{key}: unknown unit {other:?}; expected bytes, sectors, 4k or a number of bytes"
                ))
            }
        },
    };
    Ok(Column { index, unit })
}

/// Parser for a generic CSV trace under a [`ColumnMap`].
pub struct CsvParser {
    map: ColumnMap,
    /// Byte ranges of the current line's fields, reused across lines.
    spans: Vec<(usize, usize)>,
    /// Lines seen, to skip the header and to hint at one.
    lines: u64,
}

impl CsvParser {
    /// A parser for traces laid out as `map` says.
    pub fn new(map: ColumnMap) -> Self {
        CsvParser { map, spans: Vec::new(), lines: 0 }
    }

    /// The text of column `index`, trimmed and unquoted.
    fn column<'a>(&self, line: &'a str, index: usize, name: &str) -> Result<&'a str, FieldError> {
        let &(start, end) = self.spans.get(index).ok_or_else(|| {
            FieldError::new(
                name,
                format!("column {index} missing: the line has {} column(s)", self.spans.len()),
            )
        })?;
        let text = line.get(start..end).unwrap_or("").trim();
        Ok(text.strip_prefix('"').and_then(|t| t.strip_suffix('"')).unwrap_or(text))
    }

    fn split(&mut self, line: &str) {
        self.spans.clear();
        let last = self.map.last_column();
        match self.map.delimiter {
            Delimiter::Whitespace => {
                let base = line.as_ptr() as usize;
                for word in line.split_whitespace() {
                    let start = word.as_ptr() as usize - base;
                    self.spans.push((start, start + word.len()));
                    if self.spans.len() > last {
                        break;
                    }
                }
            }
            Delimiter::Char(c) => {
                let mut start = 0;
                for (at, _) in line.match_indices(c) {
                    self.spans.push((start, at));
                    start = at + c.len_utf8();
                    if self.spans.len() > last {
                        return;
                    }
                }
                self.spans.push((start, line.len()));
            }
        }
    }

    fn parse_fields(
        &mut self,
        line: &str,
        volumes: &mut VolumeTable,
        req: &mut Request,
    ) -> Result<bool, FieldError> {
        self.split(line);
        let map = &self.map;
        let op_text = self.column(line, map.op, "op")?;
        let op = match map.op_values.iter().find(|(v, _)| v.eq_ignore_ascii_case(op_text)) {
            Some((_, Some(op))) => *op,
            Some((_, None)) => return Ok(false),
            None => {
                let known: Vec<&str> = map.op_values.iter().map(|(v, _)| v.as_str()).collect();
                return Err(FieldError::new(
                    "op",
                    format!("unknown op value {op_text:?}; the mapping knows {}", known.join(", ")),
                ));
            }
        };
        let offset = field::u64(self.column(line, map.offset.index, "offset")?, "offset")?;
        let offset = field::scaled(offset, map.offset.unit, "offset")?;
        let len = field::u64(self.column(line, map.len.index, "len")?, "len")?;
        let len = field::scaled(len, map.len.unit, "len")?;
        let time_ns = match map.time {
            Some(time) => time.unit.to_ns(self.column(line, time.index, "time")?, "time")?,
            None => 0,
        };
        let volume = match map.volume {
            Some(index) => {
                let name = self.column(line, index, "volume")?;
                if name.is_empty() {
                    return Err(FieldError::new("volume", "empty"));
                }
                volumes.intern(name)
            }
            None => volumes.intern("0"),
        };
        req.time_ns = time_ns;
        req.volume = volume;
        req.op = op;
        req.offset = offset;
        req.len = len;
        Ok(true)
    }
}

impl LineParser for CsvParser {
    fn parse_line(
        &mut self,
        line: &str,
        volumes: &mut VolumeTable,
        req: &mut Request,
    ) -> Result<bool, FieldError> {
        self.lines += 1;
        if self.lines <= self.map.header_lines {
            return Ok(false);
        }
        if self.map.comment.is_some_and(|c| line.trim_start().starts_with(c)) {
            return Ok(false);
        }
        let result = self.parse_fields(line, volumes, req);
        match result {
            Err(mut e) if self.lines == 1 => {
                e.message.push_str(" (is the first line a header? add header=true to the column mapping)");
                Err(e)
            }
            other => other,
        }
    }

    fn has_timestamps(&self) -> bool {
        self.map.time.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_example() {
        let map = ColumnMap::parse(
            "time=0:us,volume=1,op=2,offset=3:sectors,len=4:bytes,delimiter=comma,header=true",
        )
        .unwrap();
        assert_eq!(map.time, Some(Column { index: 0, unit: TimeUnit::Microseconds }));
        assert_eq!(map.volume, Some(1));
        assert_eq!(map.offset, Column { index: 3, unit: 512 });
        assert_eq!(map.len, Column { index: 4, unit: 1 });
        assert_eq!(map.header_lines, 1);
        assert_eq!(ColumnMap::parse(&map.to_string()).unwrap(), map);
    }

    #[test]
    fn rejects_bad_mappings_with_reasons() {
        for (spec, needle) in [
            ("op=0,offset=1", "no len"),
            ("op=0,offset=1,len=1", "both map to column 1"),
            ("op=0,offset=1,len=2,colour=3", "unknown column mapping key"),
            ("op=0,offset=1:furlongs,len=2", "unknown unit"),
            ("op=x,offset=1,len=2", "0-based column number"),
            ("op=0,offset=1,len=2,time=3:hours", "unknown time unit"),
            ("op=0,offset=1,len=2,read=1,write=1", "two meanings"),
            ("op=0,offset=1,len=2,op=3", "twice"),
            ("op=0,offset=1,len=2,delimiter=ab", "delimiter"),
            ("op=0,offset=1,len=2,volume=3:s", "takes no unit"),
            ("op,offset=1,len=2", "not key=value"),
        ] {
            let err = ColumnMap::parse(spec).unwrap_err();
            assert!(err.contains(needle), "{spec}: {err}");
        }
    }

    #[test]
    fn explicit_op_values_replace_the_defaults() {
        let map = ColumnMap::parse("op=0,offset=1,len=2,read=0,write=1,ignore=2").unwrap();
        let mut parser = CsvParser::new(map);
        let mut volumes = VolumeTable::new();
        let mut req = Request::default();
        assert!(parser.parse_line("1,8,8", &mut volumes, &mut req).unwrap());
        assert_eq!(req.op, Op::Write);
        assert!(!parser.parse_line("2,8,8", &mut volumes, &mut req).unwrap());
        assert!(parser.parse_line("R,8,8", &mut volumes, &mut req).is_err());
    }
}
