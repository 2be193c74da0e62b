//! Format names, auto-detection and opening.
//!
//! Detection looks at content, never only at the file name: binary formats
//! by their magic or record structure, text formats by whether their parser
//! accepts the first data lines. An explicit `--format` always wins.

use std::path::Path;
use std::str::FromStr;

use crate::error::TraceError;
use crate::formats::{alibaba, blkparse, cct, csv, fio, fiu, msr, systor, tencent, vscsi};
use crate::source::{open_source, Source};
use crate::text::TextReader;
use crate::TraceReader;

/// A trace format cloudcache reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// cloudcache's own binary format (`docs/formats.md`).
    Cct,
    /// CloudPhysics / VMware vscsiStats binary, versions 1 and 2.
    Vscsi,
    /// MSR Cambridge CSV.
    Msr,
    /// FIU SRCMap / I/O Deduplication text, with MD5s.
    Fiu,
    /// SNIA SYSTOR'17 CSV.
    Systor,
    /// Alibaba block traces 2020 CSV.
    Alibaba,
    /// Tencent CBS 2018 CSV.
    Tencent,
    /// `blkparse` default text output.
    Blkparse,
    /// fio iolog, versions 2 and 3.
    Fio,
    /// Any CSV, with a user-given column mapping.
    Csv,
}

impl Format {
    /// Every format, in detection order (most specific first).
    pub const ALL: [Format; 10] = [
        Format::Cct,
        Format::Vscsi,
        Format::Fio,
        Format::Msr,
        Format::Systor,
        Format::Alibaba,
        Format::Tencent,
        Format::Blkparse,
        Format::Fiu,
        Format::Csv,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Format::Cct => "cct",
            Format::Vscsi => "vscsi",
            Format::Msr => "msr",
            Format::Fiu => "fiu",
            Format::Systor => "systor",
            Format::Alibaba => "alibaba",
            Format::Tencent => "tencent",
            Format::Blkparse => "blkparse",
            Format::Fio => "fio",
            Format::Csv => "csv",
        }
    }
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL.into_iter().find(|f| f.name().eq_ignore_ascii_case(s)).ok_or_else(|| {
            let names: Vec<_> = Format::ALL.iter().map(|f| f.name()).collect();
            format!("unknown trace format {s:?}; known formats: {}", names.join(", "))
        })
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How to open a trace.
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    /// Format to use; `None` detects it.
    pub format: Option<Format>,
    /// Skip (and count) malformed lines instead of failing.
    pub skip_bad_lines: bool,
    /// Column mapping for [`Format::Csv`] (see [`csv::ColumnMap`]).
    pub csv_columns: Option<String>,
    /// Unit of fio iolog v3 timestamps (default microseconds, fio's own).
    pub fio_time_unit: Option<fio::TimeUnit>,
}

/// Open a trace file, detecting compression and (unless given) its format.
pub fn open(path: impl AsRef<Path>, options: &OpenOptions) -> Result<TraceReader, TraceError> {
    let path = path.as_ref();
    let source = open_source(path)?;
    let format = match options.format {
        Some(format) => format,
        None => detect(path, &source)?,
    };
    let compression = source.compression;
    let reader = open_as(format, path, source, options)?;
    Ok(TraceReader::new(reader, format, compression))
}

/// A text format's detector: does it accept these first lines?
type LineSniffer = fn(&[&str]) -> bool;

/// Detect the format of an opened source.
pub fn detect(path: &Path, source: &Source) -> Result<Format, TraceError> {
    let head = &source.head;
    if head.is_empty() {
        return Err(TraceError::file(path, "empty file: no trace records to detect a format from"));
    }
    if cct::sniff(head) {
        return Ok(Format::Cct);
    }
    if vscsi::sniff(head) {
        return Ok(Format::Vscsi);
    }
    let lines = sample_lines(head);
    if lines.is_empty() {
        return Err(TraceError::file(path, "unknown trace format: not a known binary format and not text"));
    }
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let text_formats: [(Format, LineSniffer); 7] = [
        (Format::Fio, fio::sniff),
        (Format::Msr, msr::sniff),
        (Format::Systor, systor::sniff),
        (Format::Alibaba, alibaba::sniff),
        (Format::Tencent, tencent::sniff),
        (Format::Blkparse, blkparse::sniff),
        (Format::Fiu, fiu::sniff),
    ];
    for (format, sniff) in text_formats {
        if sniff(&lines) {
            return Ok(format);
        }
    }
    Err(TraceError::file(
        path,
        format!(
            "unknown trace format (first line {:?}); name it with --format, or use --format csv --columns ...",
            lines[0].chars().take(80).collect::<String>()
        ),
    ))
}

/// Up to eight non-empty lines from the head of a text stream; empty if the
/// head is not text.
fn sample_lines(head: &[u8]) -> Vec<String> {
    // Drop a possibly cut last line, then require valid UTF-8 text.
    let cut = if head.len() >= crate::source::SNIFF_BYTES {
        head.iter().rposition(|&b| b == b'\n').map_or(head.len(), |p| p + 1)
    } else {
        head.len()
    };
    let Ok(text) = std::str::from_utf8(&head[..cut]) else {
        return Vec::new();
    };
    if text.bytes().any(|b| b == 0) {
        return Vec::new();
    }
    text.lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| !l.trim().is_empty())
        .take(8)
        .map(str::to_owned)
        .collect()
}

fn open_as(
    format: Format,
    path: &Path,
    source: Source,
    options: &OpenOptions,
) -> Result<Box<dyn crate::RequestSource>, TraceError> {
    let skip = options.skip_bad_lines;
    Ok(match format {
        Format::Cct => Box::new(cct::CctReader::new(source.reader, path.to_path_buf())?),
        Format::Vscsi => Box::new(vscsi::VscsiReader::new(source.reader, &source.head, path.to_path_buf())?),
        Format::Msr => {
            Box::new(TextReader::new(msr::MsrParser::new(), source.reader, path.to_path_buf(), skip))
        }
        Format::Fiu => {
            Box::new(TextReader::new(fiu::FiuParser::new(), source.reader, path.to_path_buf(), skip))
        }
        Format::Systor => {
            Box::new(TextReader::new(systor::SystorParser::new(), source.reader, path.to_path_buf(), skip))
        }
        Format::Alibaba => {
            Box::new(TextReader::new(alibaba::AlibabaParser::new(), source.reader, path.to_path_buf(), skip))
        }
        Format::Tencent => {
            Box::new(TextReader::new(tencent::TencentParser::new(), source.reader, path.to_path_buf(), skip))
        }
        Format::Blkparse => Box::new(TextReader::new(
            blkparse::BlkparseParser::new(),
            source.reader,
            path.to_path_buf(),
            skip,
        )),
        Format::Fio => {
            let unit = options.fio_time_unit.unwrap_or_default();
            // Knowing the version up front makes has_timestamps right from the start.
            let first_line = sample_lines(&source.head).into_iter().next();
            let parser = match first_line.as_deref().and_then(fio::version_line) {
                Some(version) => fio::FioParser::with_version(version, unit),
                None => fio::FioParser::new(unit),
            };
            Box::new(TextReader::new(parser, source.reader, path.to_path_buf(), skip))
        }
        Format::Csv => {
            let spec = options.csv_columns.as_deref().ok_or_else(|| {
                TraceError::file(path, "format csv needs a column mapping (--columns), see docs/formats.md")
            })?;
            let columns = csv::ColumnMap::parse(spec).map_err(|e| TraceError::file(path, e))?;
            Box::new(TextReader::new(csv::CsvParser::new(columns), source.reader, path.to_path_buf(), skip))
        }
    })
}
