//! PLACEHOLDER: to be written.
use crate::error::FieldError;
use crate::request::{Request, VolumeTable};
use crate::text::LineParser;
/// Placeholder parser.
#[derive(Default)]
pub struct SystorParser;
impl SystorParser {
    /// A new parser.
    pub fn new() -> Self {
        Self
    }
}
/// Placeholder sniffer.
pub fn sniff(_lines: &[&str]) -> bool {
    false
}
impl LineParser for SystorParser {
    fn parse_line(
        &mut self,
        _line: &str,
        _volumes: &mut VolumeTable,
        _req: &mut Request,
    ) -> Result<bool, FieldError> {
        Err(FieldError::new("line", "not implemented"))
    }
}
