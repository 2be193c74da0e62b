//! PLACEHOLDER: to be written.
use crate::error::FieldError;
use crate::request::{Request, VolumeTable};
use crate::text::LineParser;
/// Unit of v3 timestamps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TimeUnit {
    /// Microseconds (fio's own writer).
    #[default]
    Microseconds,
}
/// Placeholder parser.
pub struct FioParser;
impl FioParser {
    /// A new parser.
    pub fn new(_unit: TimeUnit) -> Self {
        Self
    }
}
/// Placeholder sniffer.
pub fn sniff(_lines: &[&str]) -> bool {
    false
}
impl LineParser for FioParser {
    fn parse_line(
        &mut self,
        _line: &str,
        _volumes: &mut VolumeTable,
        _req: &mut Request,
    ) -> Result<bool, FieldError> {
        Err(FieldError::new("line", "not implemented"))
    }
}
