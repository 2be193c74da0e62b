//! PLACEHOLDER: to be written.
use crate::error::TraceError;
use crate::request::{Request, VolumeTable};
use crate::RequestSource;
use std::io::BufRead;
use std::path::PathBuf;
/// Placeholder sniffer.
pub fn sniff(_head: &[u8]) -> bool {
    false
}
/// Placeholder reader.
pub struct CctReader {
    volumes: VolumeTable,
}
impl CctReader {
    /// Open.
    pub fn new(_reader: Box<dyn BufRead + Send>, path: PathBuf) -> Result<Self, TraceError> {
        Err(TraceError::file(path, "not implemented"))
    }
}
impl RequestSource for CctReader {
    fn next_request(&mut self, _req: &mut Request) -> Result<bool, TraceError> {
        Ok(false)
    }
    fn volumes(&self) -> &VolumeTable {
        &self.volumes
    }
}
