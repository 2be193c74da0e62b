//! A local file (or block device) as the backend: the embedded default.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use super::{Backend, Extent};
use crate::nbd::proto::{STATE_HOLE, STATE_ZERO};

/// A disk image file served through the cache.
pub struct FileBackend {
    file: File,
    path: PathBuf,
    size: u64,
}

impl FileBackend {
    /// Opens an existing file for reading and writing.
    pub fn open(path: &Path) -> io::Result<Self> {
        let file = OpenOptions::new().read(true).write(true).open(path).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot open backend file {}: {e}", path.display()))
        })?;
        let size = device_size(&file)?;
        Ok(FileBackend { file, path: path.to_path_buf(), size })
    }
}

/// Size of a regular file or a block device.
fn device_size(file: &File) -> io::Result<u64> {
    let meta = file.metadata()?;
    if meta.is_file() {
        return Ok(meta.len());
    }
    // A block device reports length 0 in its metadata; seeking to the end
    // gives its size.
    // SAFETY: lseek on a valid descriptor has no memory-safety effects.
    let end = unsafe { libc::lseek(file.as_raw_fd(), 0, libc::SEEK_END) };
    if end < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(end as u64)
}

impl Backend for FileBackend {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.file.write_all_at(buf, offset)
    }

    fn flush(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn trim(&self, offset: u64, len: u64) -> io::Result<()> {
        // Punching a hole keeps the size; a file system that cannot is fine:
        // trim is only a hint.
        let _ = punch_hole(&self.file, offset, len);
        Ok(())
    }

    fn write_zeroes(&self, offset: u64, len: u64) -> io::Result<()> {
        if punch_hole(&self.file, offset, len).is_ok() {
            return Ok(());
        }
        super::write_zeroes_by_writing(self, offset, len)
    }

    fn extents(&self, offset: u64, len: u64) -> io::Result<Vec<Extent>> {
        file_extents(&self.file, offset, len, self.size)
    }

    fn describe(&self) -> String {
        self.path.display().to_string()
    }
}

fn punch_hole(file: &File, offset: u64, len: u64) -> io::Result<()> {
    // SAFETY: fallocate on a valid descriptor has no memory-safety effects.
    let rc = unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            offset as libc::off_t,
            len as libc::off_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The data/hole map of a file from `SEEK_DATA` / `SEEK_HOLE`; a file
/// system without them reports all data.
fn file_extents(file: &File, offset: u64, len: u64, size: u64) -> io::Result<Vec<Extent>> {
    let end = (offset + len).min(size);
    let fd = file.as_raw_fd();
    let mut extents = Vec::new();
    let mut at = offset;
    while at < end {
        // SAFETY: lseek on a valid descriptor has no memory-safety effects.
        let data = unsafe { libc::lseek(fd, at as libc::off_t, libc::SEEK_DATA) };
        if data < 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() == Some(libc::ENXIO) {
                // No data after `at`: the rest is a hole.
                extents.push(Extent { len: end - at, flags: STATE_HOLE | STATE_ZERO });
                break;
            }
            return Ok(vec![Extent { len: end - offset, flags: 0 }]);
        }
        let data = (data as u64).min(end);
        if data > at {
            extents.push(Extent { len: data - at, flags: STATE_HOLE | STATE_ZERO });
            at = data;
            continue;
        }
        // SAFETY: as above.
        let hole = unsafe { libc::lseek(fd, at as libc::off_t, libc::SEEK_HOLE) };
        let hole = if hole < 0 { end } else { (hole as u64).min(end) };
        extents.push(Extent { len: hole - at, flags: 0 });
        at = hole;
    }
    Ok(extents)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extents_report_holes_and_data() {
        let dir = std::env::temp_dir().join(format!("cc-file-backend-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("disk.img");
        let file = File::create(&path).unwrap();
        file.set_len(4 << 20).unwrap();
        file.write_all_at(&[1u8; 65536], 1 << 20).unwrap();
        let backend = FileBackend::open(&path).unwrap();
        let extents = backend.extents(0, 4 << 20).unwrap();
        assert_eq!(extents.iter().map(|e| e.len).sum::<u64>(), 4 << 20);
        // Wherever the file system puts the boundaries, the written range is data.
        let mut at = 0;
        for e in &extents {
            if at <= (1 << 20) && (1 << 20) < at + e.len {
                assert_eq!(e.flags, 0);
            }
            at += e.len;
        }
        let mut buf = [0u8; 4];
        backend.read_at(&mut buf, 1 << 20).unwrap();
        assert_eq!(buf, [1; 4]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
