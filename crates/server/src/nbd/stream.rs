//! A connection over TCP or a Unix socket, and where to listen for them.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::str::FromStr;

/// Where a server listens: `unix:PATH` or `tcp:HOST:PORT`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(try_from = "String")]
pub enum ListenAddr {
    /// A Unix socket path.
    Unix(PathBuf),
    /// A TCP address, `HOST:PORT`.
    Tcp(String),
}

impl FromStr for ListenAddr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(path) = s.strip_prefix("unix:") {
            if path.is_empty() {
                return Err(format!("listen address {s:?}: empty socket path"));
            }
            return Ok(ListenAddr::Unix(PathBuf::from(path)));
        }
        if let Some(addr) = s.strip_prefix("tcp:") {
            if !addr.contains(':') {
                return Err(format!("listen address {s:?}: expected tcp:HOST:PORT"));
            }
            return Ok(ListenAddr::Tcp(addr.to_string()));
        }
        Err(format!("listen address {s:?}: expected unix:PATH or tcp:HOST:PORT"))
    }
}

impl TryFrom<String> for ListenAddr {
    type Error = String;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenAddr::Unix(path) => write!(f, "unix:{}", path.display()),
            ListenAddr::Tcp(addr) => write!(f, "tcp:{addr}"),
        }
    }
}

/// A bound listening socket.
pub enum Listener {
    /// TCP.
    Tcp(TcpListener),
    /// Unix.
    Unix(UnixListener, PathBuf),
}

impl Listener {
    /// Binds `addr`; a stale Unix socket file is replaced.
    pub fn bind(addr: &ListenAddr) -> io::Result<Listener> {
        let context = |e: io::Error| io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}"));
        match addr {
            ListenAddr::Tcp(a) => TcpListener::bind(a).map(Listener::Tcp).map_err(context),
            ListenAddr::Unix(path) => {
                if path.exists() && UnixStream::connect(path).is_err() {
                    std::fs::remove_file(path).map_err(context)?;
                }
                UnixListener::bind(path).map(|l| Listener::Unix(l, path.clone())).map_err(context)
            }
        }
    }

    /// Waits for the next client.
    pub fn accept(&self) -> io::Result<Stream> {
        match self {
            Listener::Tcp(l) => {
                let (stream, _) = l.accept()?;
                stream.set_nodelay(true)?;
                Ok(Stream::Tcp(stream))
            }
            Listener::Unix(l, _) => Ok(Stream::Unix(l.accept()?.0)),
        }
    }

    /// The address actually bound (a TCP port 0 becomes the real port).
    pub fn local_addr(&self) -> String {
        match self {
            Listener::Tcp(l) => l.local_addr().map(|a| format!("tcp:{a}")).unwrap_or_default(),
            Listener::Unix(_, path) => format!("unix:{}", path.display()),
        }
    }
}

/// One client connection.
pub enum Stream {
    /// TCP.
    Tcp(TcpStream),
    /// Unix.
    Unix(UnixStream),
}

impl Stream {
    /// A second handle on the same connection (one reads, one writes).
    pub fn try_clone(&self) -> io::Result<Stream> {
        match self {
            Stream::Tcp(s) => s.try_clone().map(Stream::Tcp),
            Stream::Unix(s) => s.try_clone().map(Stream::Unix),
        }
    }

    /// Closes both directions.
    pub fn shutdown(&self) {
        let _ = match self {
            Stream::Tcp(s) => s.shutdown(Shutdown::Both),
            Stream::Unix(s) => s.shutdown(Shutdown::Both),
        };
    }

    /// Limits how long a read or a write may block (`None`: forever).
    pub fn set_timeouts(&self, timeout: Option<std::time::Duration>) -> io::Result<()> {
        self.set_read_timeout(timeout)?;
        match self {
            Stream::Tcp(s) => s.set_write_timeout(timeout),
            Stream::Unix(s) => s.set_write_timeout(timeout),
        }
    }

    /// Limits how long a read may block (`None`: forever).
    pub fn set_read_timeout(&self, timeout: Option<std::time::Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(timeout),
            Stream::Unix(s) => s.set_read_timeout(timeout),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
        }
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write_vectored(bufs),
            Stream::Unix(s) => s.write_vectored(bufs),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
        }
    }
}
