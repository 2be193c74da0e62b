//! Where a volume's data really lives: the network storage behind the cache.
//! A backend is a byte-addressed disk shared by every connection and worker,
//! so its methods take `&self` and may run concurrently.

mod file;
mod nbd;

pub use file::FileBackend;
pub use nbd::{NbdBackend, NbdBackendOptions};

use std::io;

/// One run of a backend's allocation map (`base:allocation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    /// Bytes in the run.
    pub len: u64,
    /// `STATE_HOLE` / `STATE_ZERO` bits (0 = allocated data).
    pub flags: u32,
}

/// A volume's backing store.
pub trait Backend: Send + Sync {
    /// Size in bytes.
    fn size(&self) -> u64;
    /// Fill `buf` from byte `offset` (the range lies inside the disk).
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Write `buf` at byte `offset` (the range lies inside the disk).
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Make every completed write durable.
    fn flush(&self) -> io::Result<()>;
    /// Discard a range (a hint: its content becomes unspecified).
    fn trim(&self, offset: u64, len: u64) -> io::Result<()>;
    /// Make a range read as zeros.
    fn write_zeroes(&self, offset: u64, len: u64) -> io::Result<()>;
    /// The allocation map of `[offset, offset + len)`, in order, covering
    /// at least a prefix of the range. Reporting data everywhere is always
    /// correct.
    fn extents(&self, _offset: u64, len: u64) -> io::Result<Vec<Extent>> {
        Ok(vec![Extent { len, flags: 0 }])
    }
    /// What it is, for logs and the admin API (a path or a URI).
    fn describe(&self) -> String;
}

/// Writes `len` zero bytes at `offset` with ordinary writes, for backends
/// without a cheaper way.
pub(crate) fn write_zeroes_by_writing(backend: &dyn Backend, offset: u64, len: u64) -> io::Result<()> {
    const CHUNK: u64 = 1 << 20;
    let zeros = vec![0u8; CHUNK.min(len) as usize];
    let mut at = offset;
    while at < offset + len {
        let n = CHUNK.min(offset + len - at) as usize;
        backend.write_at(&zeros[..n], at)?;
        at += n as u64;
    }
    Ok(())
}
