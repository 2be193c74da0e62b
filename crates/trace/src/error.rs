//! Errors that say which file, where in it, and which field is wrong.

use std::fmt;
use std::path::PathBuf;

/// Where in a trace file an error was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// The file as a whole (cannot open, unknown format, ...).
    File,
    /// A 1-based line of a text trace.
    Line(u64),
    /// A byte offset of a binary trace (of the decompressed stream).
    ByteOffset(u64),
}

/// A trace that cannot be read, with enough context to find the bad bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    /// The file being read.
    pub path: PathBuf,
    /// Where in it.
    pub location: Location,
    /// The field (column or record member) that is wrong, when one is.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl TraceError {
    /// An error about the whole file.
    pub fn file(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        TraceError { path: path.into(), location: Location::File, field: None, message: message.into() }
    }

    /// An error at a byte offset of a binary trace.
    pub fn at_byte(
        path: impl Into<PathBuf>,
        offset: u64,
        field: Option<&str>,
        message: impl Into<String>,
    ) -> Self {
        TraceError {
            path: path.into(),
            location: Location::ByteOffset(offset),
            field: field.map(str::to_owned),
            message: message.into(),
        }
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        match self.location {
            Location::File => {}
            Location::Line(line) => write!(f, ":{line}")?,
            Location::ByteOffset(offset) => write!(f, ": byte offset {offset}")?,
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for TraceError {}

/// A problem with one field of one line or record, before the reader adds
/// the file and position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// Name of the field, as the format's documentation calls it.
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

impl FieldError {
    /// A new field error.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError { field: field.into(), message: message.into() }
    }
}
