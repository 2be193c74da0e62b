//! The client side of NBD: one blocking connection to a remote export, used
//! by [`crate::backend::NbdBackend`] to reach the network storage.
//!
//! [`Client::connect`] does the fixed-newstyle handshake: it asks for
//! structured replies and the `base:allocation` metadata context (both
//! optional: a server that refuses them gets simple replies and no block
//! status), then `NBD_OPT_GO` with a block-size request, falling back to
//! `NBD_OPT_EXPORT_NAME` for servers without GO. The handshake runs under a
//! read timeout, so a peer that is not an NBD server gives an error instead
//! of a hang.
//!
//! A `Client` has one request in flight at a time (its methods take
//! `&mut self`); parallelism comes from several connections. Requests larger
//! than the server's maximum block size are split; alignment to a minimum
//! block size above 1 is the caller's job (the cache issues whole blocks),
//! and a misaligned request gets the server's EINVAL. An error the server
//! reports (an NBD errno) comes back as an [`io::Error`] carrying a
//! [`ServerError`] and leaves the connection usable; anything else (a
//! dropped connection, a timeout, a protocol violation) marks it broken, and
//! every later call fails fast so the owner can replace it.

use std::fmt;
use std::io::{self, BufReader, IoSlice, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use super::proto::*;
use super::stream::Stream;
use super::uri::{Address, NbdUri};
use crate::backend::Extent;

/// Timeouts for a connection.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// Connecting and the whole option haggling; a silent peer fails after this.
    pub handshake_timeout: Duration,
    /// How long one request may wait for its reply (`None`: forever). When it
    /// expires the connection is broken and replaced.
    pub io_timeout: Option<Duration>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            handshake_timeout: Duration::from_secs(10),
            io_timeout: Some(Duration::from_secs(120)),
        }
    }
}

/// What the handshake learned about the export.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportInfo {
    /// Size in bytes.
    pub size: u64,
    /// Transmission flags (`FLAG_*`).
    pub flags: u16,
    /// Minimum block size: offsets and lengths must be multiples of it.
    pub min_block: u32,
    /// Preferred block size.
    pub preferred_block: u32,
    /// Maximum payload of one READ or WRITE.
    pub max_block: u32,
    /// Whether structured replies were negotiated.
    pub structured_replies: bool,
    /// The id of the `base:allocation` context, if negotiated.
    pub allocation_context: Option<u32>,
}

impl ExportInfo {
    fn has(&self, flag: u16) -> bool {
        self.flags & flag != 0
    }
    /// Writes are refused.
    pub fn read_only(&self) -> bool {
        self.has(FLAG_READ_ONLY)
    }
    /// The server has a write cache that FLUSH empties.
    pub fn can_flush(&self) -> bool {
        self.has(FLAG_SEND_FLUSH)
    }
    /// Writes may carry FUA.
    pub fn can_fua(&self) -> bool {
        self.has(FLAG_SEND_FUA)
    }
    /// TRIM is accepted.
    pub fn can_trim(&self) -> bool {
        self.has(FLAG_SEND_TRIM)
    }
    /// WRITE_ZEROES is accepted.
    pub fn can_write_zeroes(&self) -> bool {
        self.has(FLAG_SEND_WRITE_ZEROES)
    }
    /// FLUSH on one connection covers writes completed on every connection.
    pub fn can_multi_conn(&self) -> bool {
        self.has(FLAG_CAN_MULTI_CONN)
    }
}

/// An error the server reported for one command (the connection is fine).
#[derive(Debug)]
pub struct ServerError {
    /// The NBD error number from the wire (`EIO`, `EINVAL`, ...).
    pub errno: u32,
    /// The command that failed.
    pub command: u16,
    /// Its offset.
    pub offset: u64,
    /// Its length.
    pub len: u64,
    /// The server's own message (structured replies only; may be empty).
    pub message: String,
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "NBD server failed {} of {} bytes at offset {}: {}",
            command_name(self.command),
            self.len,
            self.offset,
            errno_name(self.errno)
        )?;
        if !self.message.is_empty() {
            write!(f, " ({})", self.message)?;
        }
        Ok(())
    }
}

impl std::error::Error for ServerError {}

impl ServerError {
    /// The host errno the wire error stands for.
    pub fn host_errno(&self) -> i32 {
        match self.errno {
            EPERM => libc::EPERM,
            ENOMEM => libc::ENOMEM,
            EINVAL => libc::EINVAL,
            ENOSPC => libc::ENOSPC,
            EOVERFLOW => libc::EOVERFLOW,
            ENOTSUP => libc::ENOTSUP,
            ESHUTDOWN => libc::ESHUTDOWN,
            _ => libc::EIO,
        }
    }

    fn into_io(self) -> io::Error {
        io::Error::new(io::Error::from_raw_os_error(self.host_errno()).kind(), self)
    }
}

/// The host errno of an error a remote NBD server reported, so a caching
/// server can pass the same error on to its own client.
pub fn remote_errno(error: &io::Error) -> Option<i32> {
    error.get_ref()?.downcast_ref::<ServerError>().map(ServerError::host_errno)
}

fn errno_name(errno: u32) -> &'static str {
    match errno {
        EPERM => "EPERM (operation not permitted)",
        EIO => "EIO (input/output error)",
        ENOMEM => "ENOMEM (out of memory)",
        EINVAL => "EINVAL (invalid argument)",
        ENOSPC => "ENOSPC (no space left)",
        EOVERFLOW => "EOVERFLOW (value too large)",
        ENOTSUP => "ENOTSUP (not supported)",
        ESHUTDOWN => "ESHUTDOWN (server shutting down)",
        _ => "unknown NBD error (treated as EIO)",
    }
}

fn protocol_error(what: impl fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("NBD protocol error: {what}"))
}

/// Opens a connection to `address` (TCP with a connect timeout and no
/// Nagle delay: requests are small and latency-bound).
fn connect(address: &Address, timeout: Duration) -> io::Result<Stream> {
    match address {
        Address::Unix(path) => Ok(Stream::Unix(UnixStream::connect(path)?)),
        Address::Tcp { host, port } => {
            let mut last = None;
            for addr in (host.as_str(), *port).to_socket_addrs()? {
                match TcpStream::connect_timeout(&addr, timeout) {
                    Ok(stream) => {
                        stream.set_nodelay(true)?;
                        return Ok(Stream::Tcp(stream));
                    }
                    Err(e) => last = Some(e),
                }
            }
            Err(last.unwrap_or_else(|| io::Error::other(format!("{host} resolves to no address"))))
        }
    }
}

fn read_u16(r: &mut impl Read) -> io::Result<u16> {
    let mut b = [0u8; 2];
    r.read_exact(&mut b)?;
    Ok(u16::from_be_bytes(b))
}

fn read_u32(r: &mut impl Read) -> io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

fn read_u64(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}

/// Reads and discards `n` bytes.
fn skip(r: &mut impl Read, n: u64) -> io::Result<()> {
    let copied = io::copy(&mut r.take(n), &mut io::sink())?;
    if copied < n {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    Ok(())
}

/// Option replies longer than this are a protocol error (real ones are a
/// few hundred bytes at most).
const MAX_OPTION_REPLY: u32 = 1 << 20;
/// Largest READ/WRITE payload sent regardless of what the server allows.
const MAX_REQUEST: u32 = MAX_PAYLOAD;
/// Largest length of one TRIM / WRITE_ZEROES / BLOCK_STATUS request: a
/// power of two, so a multiple of any minimum block size.
const MAX_LENGTH_ONLY_REQUEST: u64 = 1 << 30;

/// One connection to an NBD export.
pub struct Client {
    reader: BufReader<Stream>,
    writer: Stream,
    info: ExportInfo,
    next_cookie: u64,
    broken: bool,
}

impl Client {
    /// Connects and negotiates; the error names the address and the step
    /// that failed.
    pub fn connect(uri: &NbdUri, options: &ClientOptions) -> io::Result<Client> {
        let stream = connect(&uri.address, options.handshake_timeout)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot connect to {uri}: {e}")))?;
        stream.set_timeouts(Some(options.handshake_timeout))?;
        let mut reader = BufReader::with_capacity(64 << 10, stream.try_clone()?);
        let mut writer = stream;
        let info = handshake(&mut reader, &mut writer, &uri.export).map_err(|e| {
            let e = match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("timed out after {:?}", options.handshake_timeout),
                ),
                io::ErrorKind::UnexpectedEof => io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("server closed the connection ({e})"),
                ),
                _ => e,
            };
            io::Error::new(e.kind(), format!("NBD handshake with {uri} failed: {e}"))
        })?;
        writer.set_timeouts(options.io_timeout)?;
        Ok(Client { reader, writer, info, next_cookie: 1, broken: false })
    }

    /// What the server said about the export.
    pub fn info(&self) -> &ExportInfo {
        &self.info
    }

    /// Whether a transport or protocol error has made this connection
    /// unusable.
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Fills `buf` from `offset`.
    pub fn read(&mut self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let step = self.max_request();
        let mut at = offset;
        for chunk in buf.chunks_mut(step) {
            let len = chunk.len() as u64;
            self.guarded(|c| c.command(CMD_READ, 0, at, len, &[], Reply::Read(chunk)))?;
            at += len;
        }
        Ok(())
    }

    /// Writes `buf` at `offset`; with `fua` the data is durable on return.
    pub fn write(&mut self, buf: &[u8], offset: u64, fua: bool) -> io::Result<()> {
        if self.info.read_only() {
            return Err(io::Error::new(io::ErrorKind::PermissionDenied, "NBD export is read-only"));
        }
        let flags = if fua && self.info.can_fua() { CMD_FLAG_FUA } else { 0 };
        let step = self.max_request();
        let mut at = offset;
        for chunk in buf.chunks(step) {
            let len = chunk.len() as u64;
            self.guarded(|c| c.command(CMD_WRITE, flags, at, len, chunk, Reply::None))?;
            at += len;
        }
        if fua && !self.info.can_fua() {
            self.flush()?;
        }
        Ok(())
    }

    /// Makes every completed write durable (a no-op if the server does not
    /// advertise FLUSH: it then has no volatile cache to empty).
    pub fn flush(&mut self) -> io::Result<()> {
        if !self.info.can_flush() {
            return self.guarded(|_| Ok(()));
        }
        self.guarded(|c| c.command(CMD_FLUSH, 0, 0, 0, &[], Reply::None))
    }

    /// Discards a range; `Unsupported` if the server does not advertise TRIM.
    pub fn trim(&mut self, offset: u64, len: u64) -> io::Result<()> {
        if !self.info.can_trim() {
            return Err(unsupported("TRIM"));
        }
        self.length_only(CMD_TRIM, offset, len)
    }

    /// Makes a range read as zeros; `Unsupported` if the server does not
    /// advertise WRITE_ZEROES.
    pub fn write_zeroes(&mut self, offset: u64, len: u64) -> io::Result<()> {
        if !self.info.can_write_zeroes() {
            return Err(unsupported("WRITE_ZEROES"));
        }
        self.length_only(CMD_WRITE_ZEROES, offset, len)
    }

    /// The `base:allocation` map from `offset`: covers a non-empty prefix
    /// of `[offset, offset + len)`. `Unsupported` if the context was not
    /// negotiated.
    pub fn block_status(&mut self, offset: u64, len: u64) -> io::Result<Vec<Extent>> {
        if self.info.allocation_context.is_none() {
            return Err(unsupported("BLOCK_STATUS base:allocation"));
        }
        let mut extents = Vec::new();
        let len = len.min(MAX_LENGTH_ONLY_REQUEST);
        if len == 0 {
            return Ok(extents);
        }
        self.guarded(|c| c.command(CMD_BLOCK_STATUS, 0, offset, len, &[], Reply::Extents(&mut extents)))?;
        if extents.is_empty() {
            return Err(protocol_error(format!("BLOCK_STATUS at {offset} returned no extents")));
        }
        Ok(extents)
    }

    fn length_only(&mut self, command: u16, offset: u64, len: u64) -> io::Result<()> {
        let end = offset + len;
        let mut at = offset;
        while at < end {
            let n = (end - at).min(MAX_LENGTH_ONLY_REQUEST);
            self.guarded(|c| c.command(command, 0, at, n, &[], Reply::None))?;
            at += n;
        }
        Ok(())
    }

    /// The largest READ/WRITE payload: the server's maximum, a multiple of
    /// its minimum block size.
    fn max_request(&self) -> usize {
        let max = self.info.max_block.min(MAX_REQUEST);
        let min = self.info.min_block.max(1);
        (max / min * min).max(min) as usize
    }

    /// Runs one exchange; anything but an error reported by the server
    /// leaves the stream in an unknown state, so the connection is retired.
    fn guarded<T>(&mut self, exchange: impl FnOnce(&mut Self) -> io::Result<T>) -> io::Result<T> {
        if self.broken {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "NBD connection was closed after an earlier error",
            ));
        }
        let result = exchange(self);
        if let Err(e) = &result {
            if remote_errno(e).is_none() {
                self.broken = true;
                self.writer.shutdown();
            }
        }
        result
    }

    /// Sends one request and reads its whole reply.
    fn command(
        &mut self,
        command: u16,
        flags: u16,
        offset: u64,
        len: u64,
        payload: &[u8],
        reply: Reply<'_>,
    ) -> io::Result<()> {
        let cookie = self.next_cookie;
        self.next_cookie += 1;
        let length = u32::try_from(len).map_err(|_| io::Error::other("NBD request length over 4 GiB"))?;
        send_request(&mut self.writer, command, flags, cookie, offset, length, payload).map_err(|e| {
            io::Error::new(e.kind(), format!("sending NBD {} request: {e}", command_name(command)))
        })?;
        let request = Request { command, cookie, offset, len };
        self.read_reply(&request, reply).map_err(|e| {
            if remote_errno(&e).is_some() {
                return e;
            }
            let what = match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => "timed out".to_string(),
                io::ErrorKind::UnexpectedEof => "server closed the connection".to_string(),
                _ => e.to_string(),
            };
            io::Error::new(
                e.kind(),
                format!("NBD {} of {len} bytes at offset {offset}: {what}", command_name(command)),
            )
        })
    }

    fn read_reply(&mut self, request: &Request, reply: Reply<'_>) -> io::Result<()> {
        let r = &mut self.reader;
        match read_u32(r)? {
            SIMPLE_REPLY_MAGIC => {
                let errno = read_u32(r)?;
                request.check_cookie(read_u64(r)?)?;
                if errno != 0 {
                    return Err(request.server_error(errno, String::new()));
                }
                match reply {
                    Reply::Read(buf) => r.read_exact(buf),
                    Reply::None => Ok(()),
                    Reply::Extents(_) => Err(protocol_error("simple reply to BLOCK_STATUS")),
                }
            }
            STRUCTURED_REPLY_MAGIC if self.info.structured_replies => {
                read_structured(r, request, reply, self.info.allocation_context)
            }
            magic => Err(protocol_error(format!("bad reply magic {magic:#010x}"))),
        }
    }
}

fn unsupported(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, format!("NBD server does not support {what}"))
}

/// Where a reply's data goes.
enum Reply<'a> {
    None,
    Read(&'a mut [u8]),
    Extents(&'a mut Vec<Extent>),
}

/// The request a reply answers, for checks and error messages.
struct Request {
    command: u16,
    cookie: u64,
    offset: u64,
    len: u64,
}

impl Request {
    fn check_cookie(&self, cookie: u64) -> io::Result<()> {
        if cookie != self.cookie {
            return Err(protocol_error(format!("reply for cookie {cookie}, expected {}", self.cookie)));
        }
        Ok(())
    }

    fn server_error(&self, errno: u32, message: String) -> io::Error {
        ServerError { errno, command: self.command, offset: self.offset, len: self.len, message }.into_io()
    }

    /// `[offset, offset + n)` as an index range into the request's buffer.
    fn slice_of(&self, offset: u64, n: u64) -> io::Result<std::ops::Range<usize>> {
        if offset < self.offset || offset + n > self.offset + self.len {
            return Err(protocol_error(format!(
                "reply chunk [{offset}, +{n}) outside the request [{}, +{}]",
                self.offset, self.len
            )));
        }
        let start = (offset - self.offset) as usize;
        Ok(start..start + n as usize)
    }
}

/// Reads structured chunks up to the one flagged DONE.
fn read_structured(
    r: &mut impl Read,
    request: &Request,
    mut reply: Reply<'_>,
    context: Option<u32>,
) -> io::Result<()> {
    let mut error = None;
    let mut covered = 0u64;
    let mut first = true;
    loop {
        if !first && read_u32(r)? != STRUCTURED_REPLY_MAGIC {
            return Err(protocol_error("bad structured reply magic"));
        }
        first = false;
        let flags = read_u16(r)?;
        let kind = read_u16(r)?;
        request.check_cookie(read_u64(r)?)?;
        let length = read_u32(r)? as u64;
        match (kind, &mut reply) {
            (REPLY_TYPE_NONE, _) if length == 0 => {}
            (REPLY_TYPE_OFFSET_DATA, Reply::Read(buf)) if length >= 8 => {
                let offset = read_u64(r)?;
                let range = request.slice_of(offset, length - 8)?;
                r.read_exact(&mut buf[range])?;
                covered += length - 8;
            }
            (REPLY_TYPE_OFFSET_HOLE, Reply::Read(buf)) if length == 12 => {
                let offset = read_u64(r)?;
                let size = read_u32(r)? as u64;
                let range = request.slice_of(offset, size)?;
                buf[range].fill(0);
                covered += size;
            }
            (REPLY_TYPE_BLOCK_STATUS, Reply::Extents(extents)) if length >= 4 && (length - 4) % 8 == 0 => {
                let id = read_u32(r)?;
                for _ in 0..(length - 4) / 8 {
                    let len = read_u32(r)? as u64;
                    let state = read_u32(r)?;
                    // Keep only our context, and clip to the request: the
                    // last extent may run past it.
                    if Some(id) == context && covered < request.len && len > 0 {
                        let len = len.min(request.len - covered);
                        extents.push(Extent { len, flags: state });
                        covered += len;
                    }
                }
            }
            (kind, _) if kind & 0x8000 != 0 && length >= 6 => {
                let errno = read_u32(r)?;
                let message_len = read_u16(r)? as u64;
                if message_len > length - 6 {
                    return Err(protocol_error("error chunk message longer than the chunk"));
                }
                let mut message = vec![0u8; message_len as usize];
                r.read_exact(&mut message)?;
                skip(r, length - 6 - message_len)?;
                // The first error wins; the rest of the chunks are drained.
                if error.is_none() {
                    let errno = if errno == 0 { EIO } else { errno };
                    error = Some(request.server_error(errno, String::from_utf8_lossy(&message).into_owned()));
                }
            }
            (kind, _) => {
                return Err(protocol_error(format!(
                    "unexpected reply chunk type {kind} (length {length}) to {}",
                    command_name(request.command)
                )))
            }
        }
        if flags & REPLY_FLAG_DONE != 0 {
            break;
        }
    }
    if let Some(error) = error {
        return Err(error);
    }
    if matches!(reply, Reply::Read(_)) && covered != request.len {
        return Err(protocol_error(format!("READ reply covered {covered} of {} bytes", request.len)));
    }
    Ok(())
}

fn send_request(
    w: &mut impl Write,
    command: u16,
    flags: u16,
    cookie: u64,
    offset: u64,
    length: u32,
    payload: &[u8],
) -> io::Result<()> {
    let mut header = [0u8; 28];
    header[0..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
    header[4..6].copy_from_slice(&flags.to_be_bytes());
    header[6..8].copy_from_slice(&command.to_be_bytes());
    header[8..16].copy_from_slice(&cookie.to_be_bytes());
    header[16..24].copy_from_slice(&offset.to_be_bytes());
    header[24..28].copy_from_slice(&length.to_be_bytes());
    if payload.is_empty() {
        return w.write_all(&header);
    }
    // One syscall for header and payload where the kernel takes both.
    let mut slices = [IoSlice::new(&header), IoSlice::new(payload)];
    let mut slices = &mut slices[..];
    while !slices.is_empty() {
        match w.write_vectored(slices) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut slices, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

impl Drop for Client {
    fn drop(&mut self) {
        if !self.broken {
            // DISC has no reply; a failure to send it changes nothing.
            let cookie = self.next_cookie;
            let _ = send_request(&mut self.writer, CMD_DISC, 0, cookie, 0, 0, &[]);
        }
        self.writer.shutdown();
    }
}

// ---------------------------------------------------------------------------
// Handshake

/// Fixed newstyle negotiation up to transmission.
fn handshake(r: &mut impl Read, w: &mut impl Write, export: &str) -> io::Result<ExportInfo> {
    let magic = read_u64(r)?;
    if magic != NBD_MAGIC {
        return Err(protocol_error(format!(
            "not an NBD server (greeting {:?} instead of \"NBDMAGIC\")",
            String::from_utf8_lossy(&magic.to_be_bytes())
        )));
    }
    let style = read_u64(r)?;
    if style == OLDSTYLE_MAGIC {
        return Err(protocol_error("the server speaks oldstyle NBD, which is not supported"));
    }
    if style != IHAVEOPT {
        return Err(protocol_error(format!("unknown handshake style {style:#018x}")));
    }
    let server_flags = read_u16(r)?;
    let no_zeroes = server_flags & FLAG_NO_ZEROES != 0;
    let fixed = server_flags & FLAG_FIXED_NEWSTYLE != 0;
    let mut client_flags = 0;
    if fixed {
        client_flags |= FLAG_C_FIXED_NEWSTYLE;
    }
    if no_zeroes {
        client_flags |= FLAG_C_NO_ZEROES;
    }
    w.write_all(&client_flags.to_be_bytes())?;
    if !fixed {
        // Plain newstyle servers cannot refuse options gracefully: go
        // straight to the export.
        return export_name(r, w, export, no_zeroes, false, None);
    }

    let structured = match send_option(r, w, OPT_STRUCTURED_REPLY, &[])? {
        (REP_ACK, _) => true,
        (kind, payload) if kind & REP_FLAG_ERROR != 0 => {
            log::debug!("NBD server refused structured replies: {}", option_error_text(kind, &payload));
            false
        }
        (kind, _) => return Err(protocol_error(format!("reply type {kind} to STRUCTURED_REPLY"))),
    };
    let context = if structured { set_meta_context(r, w, export)? } else { None };

    let mut go = Vec::with_capacity(export.len() + 8);
    go.extend_from_slice(&(export.len() as u32).to_be_bytes());
    go.extend_from_slice(export.as_bytes());
    go.extend_from_slice(&1u16.to_be_bytes());
    go.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
    write_option(w, OPT_GO, &go)?;
    let mut export_info: Option<(u64, u16)> = None;
    let mut sizes = (1u32, 4096u32, MAX_PAYLOAD);
    loop {
        let (kind, payload) = read_option_reply(r, OPT_GO)?;
        match kind {
            REP_INFO if payload.len() >= 2 => {
                let info = u16::from_be_bytes([payload[0], payload[1]]);
                let body = &payload[2..];
                match info {
                    INFO_EXPORT if body.len() >= 10 => {
                        export_info = Some((be_u64(&body[0..8]), u16::from_be_bytes([body[8], body[9]])));
                    }
                    INFO_BLOCK_SIZE if body.len() >= 12 => {
                        sizes = (be_u32(&body[0..4]), be_u32(&body[4..8]), be_u32(&body[8..12]));
                    }
                    _ => {} // Information we did not ask for or do not use.
                }
            }
            REP_ACK => break,
            REP_ERR_UNSUP => {
                // A fixed-newstyle server without GO: the old way.
                return export_name(r, w, export, no_zeroes, structured, context);
            }
            kind if kind & REP_FLAG_ERROR != 0 => {
                return Err(io::Error::other(format!(
                    "server refused export {export:?}: {}",
                    option_error_text(kind, &payload)
                )));
            }
            _ => {} // Unknown non-error replies are ignored, as the spec asks.
        }
    }
    let (size, flags) =
        export_info.ok_or_else(|| protocol_error("GO acknowledged without NBD_INFO_EXPORT"))?;
    let (min_block, preferred_block, max_block) = sizes;
    if min_block == 0 || !min_block.is_power_of_two() || max_block < min_block {
        return Err(protocol_error(format!(
            "nonsensical block sizes min {min_block} preferred {preferred_block} max {max_block}"
        )));
    }
    Ok(ExportInfo {
        size,
        flags,
        min_block,
        preferred_block,
        max_block,
        structured_replies: structured,
        allocation_context: context,
    })
}

/// Asks for `base:allocation`; `None` if the server offers no such context.
fn set_meta_context(r: &mut impl Read, w: &mut impl Write, export: &str) -> io::Result<Option<u32>> {
    let mut payload = Vec::new();
    payload.extend_from_slice(&(export.len() as u32).to_be_bytes());
    payload.extend_from_slice(export.as_bytes());
    payload.extend_from_slice(&1u32.to_be_bytes());
    payload.extend_from_slice(&(BASE_ALLOCATION.len() as u32).to_be_bytes());
    payload.extend_from_slice(BASE_ALLOCATION.as_bytes());
    write_option(w, OPT_SET_META_CONTEXT, &payload)?;
    let mut context = None;
    loop {
        let (kind, payload) = read_option_reply(r, OPT_SET_META_CONTEXT)?;
        match kind {
            REP_META_CONTEXT if payload.len() >= 4 => {
                if &payload[4..] == BASE_ALLOCATION.as_bytes() {
                    context = Some(be_u32(&payload[0..4]));
                }
            }
            REP_ACK => return Ok(context),
            kind if kind & REP_FLAG_ERROR != 0 => {
                log::debug!("NBD server refused base:allocation: {}", option_error_text(kind, &payload));
                return Ok(None);
            }
            kind => return Err(protocol_error(format!("reply type {kind} to SET_META_CONTEXT"))),
        }
    }
}

/// `NBD_OPT_EXPORT_NAME`: no reply header; a refusal is a disconnect.
fn export_name(
    r: &mut impl Read,
    w: &mut impl Write,
    export: &str,
    no_zeroes: bool,
    structured: bool,
    context: Option<u32>,
) -> io::Result<ExportInfo> {
    write_option(w, OPT_EXPORT_NAME, export.as_bytes())?;
    let size = read_u64(r).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("server dropped the connection at EXPORT_NAME {export:?} (no such export?)"),
        )
    })?;
    let flags = read_u16(r)?;
    if !no_zeroes {
        skip(r, 124)?;
    }
    Ok(ExportInfo {
        size,
        flags,
        min_block: 1,
        preferred_block: 4096,
        max_block: MAX_PAYLOAD,
        structured_replies: structured,
        allocation_context: context,
    })
}

fn write_option(w: &mut impl Write, option: u32, payload: &[u8]) -> io::Result<()> {
    let mut message = Vec::with_capacity(16 + payload.len());
    message.extend_from_slice(&IHAVEOPT.to_be_bytes());
    message.extend_from_slice(&option.to_be_bytes());
    message.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    message.extend_from_slice(payload);
    w.write_all(&message)
}

fn send_option(
    r: &mut impl Read,
    w: &mut impl Write,
    option: u32,
    payload: &[u8],
) -> io::Result<(u32, Vec<u8>)> {
    write_option(w, option, payload)?;
    read_option_reply(r, option)
}

fn read_option_reply(r: &mut impl Read, option: u32) -> io::Result<(u32, Vec<u8>)> {
    let magic = read_u64(r)?;
    if magic != OPTION_REPLY_MAGIC {
        return Err(protocol_error(format!("bad option reply magic {magic:#018x}")));
    }
    let echoed = read_u32(r)?;
    if echoed != option {
        return Err(protocol_error(format!("reply to option {echoed} while waiting for option {option}")));
    }
    let kind = read_u32(r)?;
    let length = read_u32(r)?;
    if length > MAX_OPTION_REPLY {
        return Err(protocol_error(format!("option reply of {length} bytes")));
    }
    let mut payload = vec![0u8; length as usize];
    r.read_exact(&mut payload)?;
    Ok((kind, payload))
}

fn option_error_text(kind: u32, payload: &[u8]) -> String {
    let name = match kind {
        REP_ERR_UNSUP => "unsupported",
        REP_ERR_POLICY => "forbidden by policy",
        REP_ERR_INVALID => "invalid",
        REP_ERR_PLATFORM => "not available on this platform",
        REP_ERR_TLS_REQD => "TLS required (not supported by this client)",
        REP_ERR_UNKNOWN => "no such export",
        REP_ERR_SHUTDOWN => "server shutting down",
        REP_ERR_BLOCK_SIZE_REQD => "block size negotiation required",
        REP_ERR_TOO_BIG => "request too big",
        _ => "error",
    };
    let message = String::from_utf8_lossy(payload);
    if message.is_empty() {
        name.to_string()
    } else {
        format!("{name}: {message}")
    }
}

fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn be_u64(b: &[u8]) -> u64 {
    u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A structured chunk as a server would send it.
    fn chunk(out: &mut Vec<u8>, first: bool, flags: u16, kind: u16, cookie: u64, payload: &[u8]) {
        if !first {
            out.extend_from_slice(&STRUCTURED_REPLY_MAGIC.to_be_bytes());
        }
        out.extend_from_slice(&flags.to_be_bytes());
        out.extend_from_slice(&kind.to_be_bytes());
        out.extend_from_slice(&cookie.to_be_bytes());
        out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        out.extend_from_slice(payload);
    }

    fn data(offset: u64, bytes: &[u8]) -> Vec<u8> {
        [&offset.to_be_bytes()[..], bytes].concat()
    }

    fn hole(offset: u64, size: u32) -> Vec<u8> {
        [&offset.to_be_bytes()[..], &size.to_be_bytes()[..]].concat()
    }

    fn error(errno: u32, message: &str, offset: Option<u64>) -> Vec<u8> {
        let mut p = errno.to_be_bytes().to_vec();
        p.extend_from_slice(&(message.len() as u16).to_be_bytes());
        p.extend_from_slice(message.as_bytes());
        if let Some(offset) = offset {
            p.extend_from_slice(&offset.to_be_bytes());
        }
        p
    }

    fn read_request() -> Request {
        Request { command: CMD_READ, cookie: 7, offset: 1000, len: 8 }
    }

    #[test]
    fn read_assembles_data_and_hole_chunks_out_of_order() {
        let mut wire = Vec::new();
        chunk(&mut wire, true, 0, REPLY_TYPE_OFFSET_DATA, 7, &data(1004, &[5, 6, 7, 8]));
        chunk(&mut wire, false, REPLY_FLAG_DONE, REPLY_TYPE_OFFSET_HOLE, 7, &hole(1000, 4));
        let mut buf = [0xffu8; 8];
        read_structured(&mut &wire[..], &read_request(), Reply::Read(&mut buf), None).unwrap();
        assert_eq!(buf, [0, 0, 0, 0, 5, 6, 7, 8]);
    }

    #[test]
    fn error_chunks_become_server_errors_after_draining_the_reply() {
        let mut wire = Vec::new();
        chunk(&mut wire, true, 0, REPLY_TYPE_OFFSET_DATA, 7, &data(1000, &[1, 2, 3, 4]));
        chunk(&mut wire, false, 0, REPLY_TYPE_ERROR_OFFSET, 7, &error(ENOSPC, "disk full", Some(1004)));
        chunk(&mut wire, false, REPLY_FLAG_DONE, REPLY_TYPE_ERROR, 7, &error(EIO, "", None));
        let mut reader = &wire[..];
        let mut buf = [0u8; 8];
        let err = read_structured(&mut reader, &read_request(), Reply::Read(&mut buf), None).unwrap_err();
        assert!(reader.is_empty(), "the whole reply was consumed");
        assert_eq!(remote_errno(&err), Some(libc::ENOSPC));
        let text = err.to_string();
        assert!(text.contains("READ of 8 bytes at offset 1000") && text.contains("disk full"), "{text}");
    }

    #[test]
    fn malformed_read_replies_are_protocol_errors() {
        let cases: Vec<(Vec<u8>, &str)> = vec![
            // Data outside the requested range.
            (
                {
                    let mut w = Vec::new();
                    chunk(&mut w, true, REPLY_FLAG_DONE, REPLY_TYPE_OFFSET_DATA, 7, &data(1004, &[0; 8]));
                    w
                },
                "outside the request",
            ),
            // Not the whole range.
            (
                {
                    let mut w = Vec::new();
                    chunk(&mut w, true, REPLY_FLAG_DONE, REPLY_TYPE_OFFSET_HOLE, 7, &hole(1000, 4));
                    w
                },
                "covered 4 of 8",
            ),
            // Someone else's cookie.
            (
                {
                    let mut w = Vec::new();
                    chunk(&mut w, true, REPLY_FLAG_DONE, REPLY_TYPE_NONE, 8, &[]);
                    w
                },
                "cookie 8",
            ),
            // An unknown non-error chunk type.
            (
                {
                    let mut w = Vec::new();
                    chunk(&mut w, true, REPLY_FLAG_DONE, 77, 7, &[1, 2]);
                    w
                },
                "unexpected reply chunk type 77",
            ),
            // Truncated mid-chunk.
            (
                {
                    let mut w = Vec::new();
                    chunk(&mut w, true, REPLY_FLAG_DONE, REPLY_TYPE_OFFSET_DATA, 7, &data(1000, &[0; 8]));
                    w.truncate(w.len() - 3);
                    w
                },
                "",
            ),
        ];
        for (wire, needle) in cases {
            let mut buf = [0u8; 8];
            let err =
                read_structured(&mut &wire[..], &read_request(), Reply::Read(&mut buf), None).unwrap_err();
            assert!(remote_errno(&err).is_none(), "not a server error: {err}");
            assert!(err.to_string().contains(needle), "{needle}: {err}");
        }
    }

    #[test]
    fn block_status_keeps_our_context_and_clips_to_the_request() {
        let descriptors = |id: u32, list: &[(u32, u32)]| {
            let mut p = id.to_be_bytes().to_vec();
            for &(len, flags) in list {
                p.extend_from_slice(&len.to_be_bytes());
                p.extend_from_slice(&flags.to_be_bytes());
            }
            p
        };
        let mut wire = Vec::new();
        chunk(&mut wire, true, 0, REPLY_TYPE_BLOCK_STATUS, 3, &descriptors(9, &[(1 << 20, 0)]));
        chunk(
            &mut wire,
            false,
            REPLY_FLAG_DONE,
            REPLY_TYPE_BLOCK_STATUS,
            3,
            &descriptors(2, &[(4096, 0), (1 << 20, 3)]),
        );
        let request = Request { command: CMD_BLOCK_STATUS, cookie: 3, offset: 0, len: 65536 };
        let mut extents = Vec::new();
        read_structured(&mut &wire[..], &request, Reply::Extents(&mut extents), Some(2)).unwrap();
        assert_eq!(extents, vec![Extent { len: 4096, flags: 0 }, Extent { len: 61440, flags: 3 }]);
    }

    /// Reads one client option and returns its number.
    fn expect_option(r: &mut impl Read) -> u32 {
        assert_eq!(read_u64(r).unwrap(), IHAVEOPT);
        let option = read_u32(r).unwrap();
        let len = read_u32(r).unwrap();
        skip(r, len as u64).unwrap();
        option
    }

    fn option_reply(w: &mut impl Write, option: u32, kind: u32) {
        let mut m = OPTION_REPLY_MAGIC.to_be_bytes().to_vec();
        m.extend_from_slice(&option.to_be_bytes());
        m.extend_from_slice(&kind.to_be_bytes());
        m.extend_from_slice(&0u32.to_be_bytes());
        w.write_all(&m).unwrap();
    }

    #[test]
    fn old_servers_get_simple_replies_and_export_name() {
        // A fixed-newstyle server that knows neither structured replies nor
        // GO and still sends the 124 zero bytes.
        let (mut ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let server = std::thread::spawn(move || {
            let mut s = theirs;
            let mut hello = NBD_MAGIC.to_be_bytes().to_vec();
            hello.extend_from_slice(&IHAVEOPT.to_be_bytes());
            hello.extend_from_slice(&FLAG_FIXED_NEWSTYLE.to_be_bytes());
            s.write_all(&hello).unwrap();
            assert_eq!(read_u32(&mut s).unwrap(), FLAG_C_FIXED_NEWSTYLE);
            assert_eq!(expect_option(&mut s), OPT_STRUCTURED_REPLY);
            option_reply(&mut s, OPT_STRUCTURED_REPLY, REP_ERR_UNSUP);
            assert_eq!(expect_option(&mut s), OPT_GO);
            option_reply(&mut s, OPT_GO, REP_ERR_UNSUP);
            assert_eq!(expect_option(&mut s), OPT_EXPORT_NAME);
            let mut reply = (5u64 << 20).to_be_bytes().to_vec();
            reply.extend_from_slice(&(FLAG_HAS_FLAGS | FLAG_SEND_FLUSH).to_be_bytes());
            reply.extend_from_slice(&[0u8; 124]);
            s.write_all(&reply).unwrap();
        });
        let mut reader = ours.try_clone().unwrap();
        let info = handshake(&mut reader, &mut ours, "disk").unwrap();
        server.join().unwrap();
        assert_eq!(info.size, 5 << 20);
        assert!(info.can_flush() && !info.can_trim());
        assert!(!info.structured_replies);
        assert_eq!(info.allocation_context, None);
        assert_eq!((info.min_block, info.max_block), (1, MAX_PAYLOAD));
    }
}
