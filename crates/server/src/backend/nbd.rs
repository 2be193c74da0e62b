//! A remote NBD export as the backend: the network storage.
//!
//! **Concurrency: a pool of blocking connections.** Each request checks a
//! [`Client`] out of the pool, runs on it with the caller's buffer (no copy,
//! no per-request allocation) and checks it back in; when every open
//! connection is busy and fewer than [`NbdBackendOptions::connections`] are
//! open, a new one is made, otherwise the caller waits. So up to that many
//! misses are in flight at once, and the backend server sees them on
//! separate connections, which every NBD server runs in parallel (nbdkit
//! also runs one connection's requests in parallel, but many servers do
//! not). The default, 16, matches a queue depth of 16 in front of the cache.
//! A multiplexed connection with a reader thread would allow unbounded
//! depth, but would have to copy every reply into the caller's buffer from
//! another thread; a pool keeps the code and the data path simple.
//!
//! **Flush.** With `CAN_MULTI_CONN` a FLUSH on any one connection covers
//! every write completed on every connection. Without it, each connection
//! that carried a write since its last flush must be flushed itself: the
//! flush waits for all connections to come back (new requests wait behind
//! it), flushes the dirty ones and releases the pool. If a connection with
//! unflushed writes was lost, that flush fails, because the server gives no
//! guarantee for them.
//!
//! **Failures.** An error the server reports (an NBD errno) is returned and
//! the connection stays in the pool. A transport failure (dropped
//! connection, timeout, protocol violation) is returned for that request,
//! the connection is discarded, and the next request opens a fresh one, so
//! a restarted backend server is picked up without restarting the cache.
//! A replacement connection must report the same export size.

use std::io;
use std::sync::{Condvar, Mutex, MutexGuard};

use super::{Backend, Extent};
use crate::nbd::client::{Client, ClientOptions, ExportInfo};
use crate::nbd::uri::NbdUri;

/// How to reach a remote export.
#[derive(Clone, Debug)]
pub struct NbdBackendOptions {
    /// Most connections open at once = most requests in flight.
    pub connections: usize,
    /// Per-connection timeouts.
    pub client: ClientOptions,
}

impl Default for NbdBackendOptions {
    fn default() -> Self {
        NbdBackendOptions { connections: 16, client: ClientOptions::default() }
    }
}

/// A pooled connection and whether it carried writes since its last flush.
struct Pooled {
    client: Client,
    dirty: bool,
}

struct PoolState {
    idle: Vec<Pooled>,
    /// Connections in existence (idle, checked out, or being opened).
    open: usize,
    /// A flush without multi-conn holds the whole pool.
    flushing: bool,
    /// A connection with unflushed writes was lost since the last flush.
    lost_dirty: bool,
}

/// An NBD export used as a volume's backend.
pub struct NbdBackend {
    uri: NbdUri,
    options: NbdBackendOptions,
    info: ExportInfo,
    pool: Mutex<PoolState>,
    changed: Condvar,
}

impl NbdBackend {
    /// Parses `uri` (`nbd://...` or `nbd+unix://...`) and connects with the
    /// default options.
    pub fn open(uri: &str) -> io::Result<Self> {
        let uri: NbdUri = uri.parse().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        Self::connect(uri, NbdBackendOptions::default())
    }

    /// Connects once (so a bad address or export fails here, not on the
    /// first miss) and keeps that connection as the first of the pool.
    pub fn connect(uri: NbdUri, options: NbdBackendOptions) -> io::Result<Self> {
        let options = NbdBackendOptions { connections: options.connections.max(1), ..options };
        let client = Client::connect(&uri, &options.client)?;
        let info = client.info().clone();
        log::info!(
            "NBD backend {uri}: {} bytes, flags {:#x}, blocks {}/{}/{}, structured replies {}, base:allocation {}",
            info.size,
            info.flags,
            info.min_block,
            info.preferred_block,
            info.max_block,
            info.structured_replies,
            info.allocation_context.is_some()
        );
        let pool = PoolState {
            idle: vec![Pooled { client, dirty: false }],
            open: 1,
            flushing: false,
            lost_dirty: false,
        };
        Ok(NbdBackend { uri, options, info, pool: Mutex::new(pool), changed: Condvar::new() })
    }

    /// What the first connection negotiated.
    pub fn info(&self) -> &ExportInfo {
        &self.info
    }

    /// Connections currently open (idle or in use), for stats.
    pub fn connections_open(&self) -> usize {
        self.lock().open
    }

    fn lock(&self) -> MutexGuard<'_, PoolState> {
        // A panic elsewhere while holding the lock leaves the state
        // consistent (every update is a single assignment).
        self.pool.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'a>(&self, guard: MutexGuard<'a, PoolState>) -> MutexGuard<'a, PoolState> {
        self.changed.wait(guard).unwrap_or_else(|e| e.into_inner())
    }

    /// Takes an idle connection, opens a new one, or waits for one.
    fn checkout(&self) -> io::Result<Checkout<'_>> {
        let mut pool = self.lock();
        loop {
            if !pool.flushing {
                if let Some(pooled) = pool.idle.pop() {
                    return Ok(Checkout { backend: self, pooled: Some(pooled) });
                }
                if pool.open < self.options.connections {
                    pool.open += 1;
                    drop(pool);
                    return match self.new_connection() {
                        Ok(client) => {
                            Ok(Checkout { backend: self, pooled: Some(Pooled { client, dirty: false }) })
                        }
                        Err(e) => {
                            self.lock().open -= 1;
                            self.changed.notify_all();
                            Err(e)
                        }
                    };
                }
            }
            pool = self.wait(pool);
        }
    }

    fn new_connection(&self) -> io::Result<Client> {
        let client = Client::connect(&self.uri, &self.options.client)?;
        if client.info().size != self.info.size {
            return Err(io::Error::other(format!(
                "NBD export {} changed size from {} to {} bytes",
                self.uri,
                self.info.size,
                client.info().size
            )));
        }
        Ok(client)
    }

    /// Puts a connection back, or retires it if it broke.
    fn checkin(&self, pooled: Pooled) {
        let mut pool = self.lock();
        if pooled.client.is_broken() {
            pool.open -= 1;
            if pooled.dirty && !self.info.can_multi_conn() {
                pool.lost_dirty = true;
            }
            log::warn!("NBD backend {}: connection dropped; the next request reconnects", self.uri);
        } else {
            pool.idle.push(pooled);
        }
        drop(pool);
        self.changed.notify_all();
    }

    /// Flush for servers without multi-conn: every dirty connection.
    fn flush_every_connection(&self) -> io::Result<()> {
        let mut pool = self.lock();
        while pool.flushing {
            pool = self.wait(pool);
        }
        pool.flushing = true;
        while pool.idle.len() < pool.open {
            pool = self.wait(pool);
        }
        let mut all = std::mem::take(&mut pool.idle);
        let lost = std::mem::replace(&mut pool.lost_dirty, false);
        drop(pool);

        let mut result = Ok(());
        for pooled in all.iter_mut().filter(|p| p.dirty) {
            match pooled.client.flush() {
                Ok(()) => pooled.dirty = false,
                Err(e) => {
                    if result.is_ok() {
                        result = Err(e);
                    }
                }
            }
        }
        if lost && result.is_ok() {
            result = Err(io::Error::other(format!(
                "NBD backend {}: a connection with unflushed writes was lost; they may not be durable",
                self.uri
            )));
        }

        let mut pool = self.lock();
        for pooled in all {
            if pooled.client.is_broken() {
                pool.open -= 1;
            } else {
                pool.idle.push(pooled);
            }
        }
        pool.flushing = false;
        drop(pool);
        self.changed.notify_all();
        result
    }
}

/// A checked-out connection; returns itself to the pool when dropped.
struct Checkout<'a> {
    backend: &'a NbdBackend,
    pooled: Option<Pooled>,
}

impl Checkout<'_> {
    fn pooled(&mut self) -> &mut Pooled {
        // Only `drop` takes it out.
        self.pooled.as_mut().expect("checked-out connection present until drop")
    }

    fn client(&mut self) -> &mut Client {
        &mut self.pooled().client
    }

    /// Runs a modifying command, remembering that the connection needs a
    /// flush even if the command failed part-way.
    fn modify(&mut self, command: impl FnOnce(&mut Client) -> io::Result<()>) -> io::Result<()> {
        let pooled = self.pooled();
        pooled.dirty = true;
        command(&mut pooled.client)
    }
}

impl Drop for Checkout<'_> {
    fn drop(&mut self) {
        if let Some(pooled) = self.pooled.take() {
            self.backend.checkin(pooled);
        }
    }
}

impl Backend for NbdBackend {
    fn size(&self) -> u64 {
        self.info.size
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        self.checkout()?.client().read(buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        self.checkout()?.modify(|c| c.write(buf, offset, false))
    }

    fn flush(&self) -> io::Result<()> {
        if !self.info.can_flush() {
            // No volatile cache on the server: acknowledged writes are stable.
            return Ok(());
        }
        if self.info.can_multi_conn() {
            return self.checkout()?.client().flush();
        }
        self.flush_every_connection()
    }

    fn trim(&self, offset: u64, len: u64) -> io::Result<()> {
        if !self.info.can_trim() || len == 0 {
            return Ok(()); // Only a hint.
        }
        self.checkout()?.modify(|c| c.trim(offset, len))
    }

    fn write_zeroes(&self, offset: u64, len: u64) -> io::Result<()> {
        if len == 0 {
            return Ok(());
        }
        if self.info.can_write_zeroes() {
            return self.checkout()?.modify(|c| c.write_zeroes(offset, len));
        }
        super::write_zeroes_by_writing(self, offset, len)
    }

    fn extents(&self, offset: u64, len: u64) -> io::Result<Vec<Extent>> {
        if self.info.allocation_context.is_none() || len == 0 {
            return Ok(vec![Extent { len, flags: 0 }]);
        }
        self.checkout()?.client().block_status(offset, len)
    }

    fn describe(&self) -> String {
        self.uri.to_string()
    }
}
