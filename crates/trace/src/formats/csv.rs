//! PLACEHOLDER: to be written.
use crate::error::FieldError;
use crate::request::{Request, VolumeTable};
use crate::text::LineParser;
/// Placeholder column map.
pub struct ColumnMap;
impl ColumnMap {
    /// Parse a mapping.
    pub fn parse(_spec: &str) -> Result<Self, String> {
        Err("not implemented".into())
    }
}
/// Placeholder parser.
pub struct CsvParser;
impl CsvParser {
    /// A new parser.
    pub fn new(_columns: ColumnMap) -> Self {
        Self
    }
}
impl LineParser for CsvParser {
    fn parse_line(
        &mut self,
        _line: &str,
        _volumes: &mut VolumeTable,
        _req: &mut Request,
    ) -> Result<bool, FieldError> {
        Err(FieldError::new("line", "not implemented"))
    }
}
