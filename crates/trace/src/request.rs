//! The one request model every reader produces and every consumer reads.

/// Index of a volume (a VM disk) inside one trace; names live in [`VolumeTable`].
pub type VolumeId = u32;

/// MD5 (or other 128-bit) digest of one 4 KiB block of data, as FIU traces carry.
pub type ContentHash = [u8; 16];

/// Granularity of [`Request::content`]: one hash per this many bytes.
pub const CONTENT_BLOCK_BYTES: u64 = 4096;

/// What a request does to its byte range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// Read the range.
    Read,
    /// Overwrite the range.
    Write,
    /// Discard the range (TRIM/UNMAP/DISCARD): its content becomes unspecified.
    Trim,
}

impl Op {
    /// Lower-case name used in reports and the binary format docs.
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Trim => "trim",
        }
    }
}

/// One block I/O request.
///
/// Offsets and lengths are in bytes whatever unit the source format used, so
/// every later stage can split requests at any cache block size exactly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// Time of issue in nanoseconds. The origin is the format's own (Unix epoch
    /// where the format says so); only differences are meaningful. Zero for
    /// formats without timestamps (see [`crate::TraceReader::has_timestamps`]).
    pub time_ns: u64,
    /// Volume (VM disk) the request addresses.
    pub volume: VolumeId,
    /// Read, write or trim.
    pub op: Op,
    /// First byte addressed.
    pub offset: u64,
    /// Number of bytes addressed.
    pub len: u64,
    /// Content hashes of the data, one per [`CONTENT_BLOCK_BYTES`] starting at
    /// `offset`, when the format records them; empty otherwise.
    pub content: Vec<ContentHash>,
}

impl Default for Request {
    fn default() -> Self {
        Request { time_ns: 0, volume: 0, op: Op::Read, offset: 0, len: 0, content: Vec::new() }
    }
}

impl Request {
    /// Byte one past the end of the range, saturating so a hostile trace cannot wrap.
    pub fn end(&self) -> u64 {
        self.offset.saturating_add(self.len)
    }
}

/// Names of the volumes a trace addresses, interned to dense [`VolumeId`]s in
/// order of first appearance.
#[derive(Clone, Debug, Default)]
pub struct VolumeTable {
    names: Vec<String>,
    ids: hashbrown::HashMap<String, VolumeId>,
}

impl VolumeTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// The id of `name`, adding it if it is new.
    pub fn intern(&mut self, name: &str) -> VolumeId {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as VolumeId;
        self.names.push(name.to_owned());
        self.ids.insert(name.to_owned(), id);
        id
    }

    /// The name of volume `id`, or its number when the table does not know it.
    pub fn name(&self, id: VolumeId) -> String {
        self.names.get(id as usize).cloned().unwrap_or_else(|| id.to_string())
    }

    /// All names, indexed by id.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Number of volumes.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// True when no volume has been seen.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}
