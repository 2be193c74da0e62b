//! The transmission phase: requests read in order, carried out concurrently
//! by the worker pool, replies written as they finish (the protocol allows
//! any order; the cookie pairs them).

use std::io::{self, BufReader, BufWriter, Read, Write};
use std::sync::{Arc, Condvar, Mutex};

use super::handshake::Negotiated;
use super::proto::*;
use super::stream::Stream;
use crate::core::{CacheCore, Scratch};
use crate::volume::{Volume, VolumeStats};
use crate::workers::WorkerPool;

/// One request header.
#[derive(Clone, Copy, Debug)]
struct RequestHeader {
    flags: u16,
    command: u16,
    cookie: u64,
    offset: u64,
    length: u32,
}

/// The reply side of a connection, shared by the workers.
struct Connection {
    writer: Mutex<BufWriter<Stream>>,
    structured: bool,
    allocation_context: Option<u32>,
    volume: Arc<Volume>,
    in_flight: Mutex<usize>,
    idle: Condvar,
}

/// Serves requests on a negotiated connection until the client disconnects
/// (or breaks the protocol); in-flight requests finish first.
pub fn serve(
    reader: BufReader<Stream>,
    writer: Stream,
    negotiated: Negotiated,
    core: Arc<CacheCore>,
    pool: &WorkerPool,
) -> io::Result<()> {
    let connection = Arc::new(Connection {
        writer: Mutex::new(BufWriter::with_capacity(256 << 10, writer)),
        structured: negotiated.structured,
        allocation_context: negotiated.allocation_context,
        volume: negotiated.volume,
        in_flight: Mutex::new(0),
        idle: Condvar::new(),
    });
    let result = read_requests(reader, &connection, &core, pool);
    // DISC, EOF or a broken request: finish what was accepted, then close.
    let mut in_flight = connection.in_flight.lock().unwrap();
    while *in_flight > 0 {
        in_flight = connection.idle.wait(in_flight).unwrap();
    }
    drop(in_flight);
    let writer = connection.writer.lock().unwrap();
    writer.get_ref().shutdown();
    result
}

fn read_requests(
    mut reader: BufReader<Stream>,
    connection: &Arc<Connection>,
    core: &Arc<CacheCore>,
    pool: &WorkerPool,
) -> io::Result<()> {
    let mut header = [0u8; 28];
    // For the hits this thread serves itself.
    let scratch = &mut Scratch::default();
    loop {
        match reader.read_exact(&mut header) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
        let magic = u32::from_be_bytes(header[0..4].try_into().unwrap());
        if magic != REQUEST_MAGIC {
            // Without a valid header there is no way to find the next one.
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("request with bad magic {magic:#x}; closing the connection"),
            ));
        }
        let request = RequestHeader {
            flags: u16::from_be_bytes(header[4..6].try_into().unwrap()),
            command: u16::from_be_bytes(header[6..8].try_into().unwrap()),
            cookie: u64::from_be_bytes(header[8..16].try_into().unwrap()),
            offset: u64::from_be_bytes(header[16..24].try_into().unwrap()),
            length: u32::from_be_bytes(header[24..28].try_into().unwrap()),
        };
        let mut payload = Vec::new();
        if request.command == CMD_WRITE {
            if request.length > MAX_PAYLOAD {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "WRITE of {} bytes is over the {MAX_PAYLOAD}-byte limit; closing",
                        request.length
                    ),
                ));
            }
            payload.resize(request.length as usize, 0);
            reader.read_exact(&mut payload)?;
        }
        if request.command == CMD_DISC {
            return Ok(());
        }
        if let Err(errno) = validate(&request, connection) {
            VolumeStats::bump(&connection.volume.stats.errors, 1);
            connection.reply_error(request, errno, &format!("{} refused", command_name(request.command)))?;
            continue;
        }
        if request.command == CMD_READ {
            let volume = &connection.volume;
            if let Some(result) = core.read_if_cached(volume, request.offset, request.length as u64, scratch)
            {
                VolumeStats::bump(&volume.stats.reads, 1);
                VolumeStats::bump(&volume.stats.read_bytes, request.length as u64);
                match result {
                    Ok(data) => connection.reply_data(request, data)?,
                    Err(e) => connection.fail(request, &e)?,
                }
                continue;
            }
        }
        *connection.in_flight.lock().unwrap() += 1;
        let job_connection = connection.clone();
        let job_core = core.clone();
        let submitted = pool.submit(Box::new(move |scratch: &mut Scratch| {
            job_connection.carry_out(&job_core, request, payload, scratch);
            let mut in_flight = job_connection.in_flight.lock().unwrap();
            *in_flight -= 1;
            if *in_flight == 0 {
                job_connection.idle.notify_all();
            }
        }));
        if !submitted {
            *connection.in_flight.lock().unwrap() -= 1;
            connection.reply_error(request, ESHUTDOWN, "server is shutting down")?;
        }
    }
}

/// Checks flags and range; the NBD error to send if the request is bad.
fn validate(request: &RequestHeader, connection: &Connection) -> Result<(), u32> {
    let allowed = CMD_FLAG_FUA
        | match request.command {
            CMD_READ if connection.structured => CMD_FLAG_DF,
            CMD_WRITE_ZEROES => CMD_FLAG_NO_HOLE,
            CMD_BLOCK_STATUS => CMD_FLAG_REQ_ONE,
            _ => 0,
        };
    if request.flags & !allowed != 0 {
        return Err(EINVAL);
    }
    let size = connection.volume.size;
    let end = request.offset.checked_add(request.length as u64);
    let in_range = end.is_some_and(|end| end <= size);
    match request.command {
        CMD_READ | CMD_CACHE if request.length > MAX_PAYLOAD => Err(EINVAL),
        CMD_READ | CMD_CACHE | CMD_TRIM if !in_range => Err(EINVAL),
        CMD_WRITE | CMD_WRITE_ZEROES if !in_range => Err(ENOSPC),
        CMD_BLOCK_STATUS if connection.allocation_context.is_none() || request.length == 0 || !in_range => {
            Err(EINVAL)
        }
        CMD_READ | CMD_WRITE | CMD_FLUSH | CMD_TRIM | CMD_CACHE | CMD_WRITE_ZEROES | CMD_BLOCK_STATUS => {
            Ok(())
        }
        _ => Err(EINVAL),
    }
}

impl Connection {
    /// Runs one request and sends its reply.
    fn carry_out(&self, core: &CacheCore, request: RequestHeader, payload: Vec<u8>, s: &mut Scratch) {
        let volume = &*self.volume;
        let stats = &volume.stats;
        let fua = request.flags & CMD_FLAG_FUA != 0;
        let (offset, length) = (request.offset, request.length as u64);
        let result = match request.command {
            CMD_READ => {
                VolumeStats::bump(&stats.reads, 1);
                VolumeStats::bump(&stats.read_bytes, length);
                if length == 0 {
                    self.reply_data(request, &[])
                } else {
                    match core.read(volume, offset, length, s) {
                        Ok(data) => self.reply_data(request, data),
                        Err(e) => self.fail(request, &e),
                    }
                }
            }
            CMD_CACHE => {
                let result =
                    if length == 0 { Ok(()) } else { core.read(volume, offset, length, s).map(|_| ()) };
                self.reply_result(request, result)
            }
            CMD_WRITE => {
                VolumeStats::bump(&stats.writes, 1);
                VolumeStats::bump(&stats.write_bytes, length);
                if fua {
                    VolumeStats::bump(&stats.flushes, 1);
                }
                let result = if length == 0 { Ok(()) } else { core.write(volume, offset, &payload, fua, s) };
                self.reply_result(request, result)
            }
            CMD_FLUSH => {
                VolumeStats::bump(&stats.flushes, 1);
                self.reply_result(request, core.flush())
            }
            CMD_TRIM => {
                VolumeStats::bump(&stats.trims, 1);
                self.reply_result(request, core.trim(volume, offset, length, fua, s))
            }
            CMD_WRITE_ZEROES => {
                VolumeStats::bump(&stats.zeroes, 1);
                let result =
                    if length == 0 { Ok(()) } else { core.write_zeroes(volume, offset, length, fua, s) };
                self.reply_result(request, result)
            }
            CMD_BLOCK_STATUS => match core.block_status(volume, offset, length) {
                Ok(extents) => self.reply_block_status(request, &extents),
                Err(e) => self.fail(request, &e),
            },
            _ => self.reply_error(request, EINVAL, "unknown command"),
        };
        if let Err(e) = result {
            // The client is gone; the reader sees it too.
            log::debug!("reply to {} failed: {e}", command_name(request.command));
            self.writer.lock().unwrap().get_ref().shutdown();
        }
    }

    fn reply_result(&self, request: RequestHeader, result: io::Result<()>) -> io::Result<()> {
        match result {
            Ok(()) => self.reply_data(request, &[]),
            Err(e) => self.fail(request, &e),
        }
    }

    fn fail(&self, request: RequestHeader, error: &io::Error) -> io::Result<()> {
        VolumeStats::bump(&self.volume.stats.errors, 1);
        log::warn!(
            "{} {} offset {} length {}: {error}",
            self.volume.name,
            command_name(request.command),
            request.offset,
            request.length
        );
        self.reply_error(request, errno_of(error), &error.to_string())
    }

    /// A successful reply, with data for a READ.
    fn reply_data(&self, request: RequestHeader, data: &[u8]) -> io::Result<()> {
        let mut w = self.writer.lock().unwrap();
        if self.structured && request.command == CMD_READ && !data.is_empty() {
            chunk_header(
                &mut *w,
                REPLY_FLAG_DONE,
                REPLY_TYPE_OFFSET_DATA,
                request.cookie,
                8 + data.len() as u32,
            )?;
            w.write_all(&request.offset.to_be_bytes())?;
        } else if self.structured && request.command == CMD_READ {
            chunk_header(&mut *w, REPLY_FLAG_DONE, REPLY_TYPE_NONE, request.cookie, 0)?;
            return w.flush();
        } else {
            simple_header(&mut *w, 0, request.cookie)?;
        }
        w.write_all(data)?;
        w.flush()
    }

    fn reply_error(&self, request: RequestHeader, errno: u32, message: &str) -> io::Result<()> {
        let mut w = self.writer.lock().unwrap();
        if self.structured {
            let message = &message.as_bytes()[..message.len().min(4096)];
            chunk_header(
                &mut *w,
                REPLY_FLAG_DONE,
                REPLY_TYPE_ERROR,
                request.cookie,
                6 + message.len() as u32,
            )?;
            w.write_all(&errno.to_be_bytes())?;
            w.write_all(&(message.len() as u16).to_be_bytes())?;
            w.write_all(message)?;
        } else {
            simple_header(&mut *w, errno, request.cookie)?;
        }
        w.flush()
    }

    fn reply_block_status(
        &self,
        request: RequestHeader,
        extents: &[crate::backend::Extent],
    ) -> io::Result<()> {
        let context = self.allocation_context.expect("validated");
        let mut descriptors: Vec<(u32, u32)> = Vec::new();
        let mut total = 0u64;
        for extent in extents {
            let len = extent.len.min(request.length as u64 - total);
            if len == 0 {
                break;
            }
            descriptors.push((len as u32, extent.flags));
            total += len;
            if request.flags & CMD_FLAG_REQ_ONE != 0 {
                break;
            }
        }
        if descriptors.is_empty() {
            descriptors.push((request.length, 0));
        }
        let mut w = self.writer.lock().unwrap();
        chunk_header(
            &mut *w,
            REPLY_FLAG_DONE,
            REPLY_TYPE_BLOCK_STATUS,
            request.cookie,
            4 + 8 * descriptors.len() as u32,
        )?;
        w.write_all(&context.to_be_bytes())?;
        for (len, flags) in descriptors {
            w.write_all(&len.to_be_bytes())?;
            w.write_all(&flags.to_be_bytes())?;
        }
        w.flush()
    }
}

fn simple_header<W: Write>(w: &mut W, error: u32, cookie: u64) -> io::Result<()> {
    let mut b = [0u8; 16];
    b[0..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    b[4..8].copy_from_slice(&error.to_be_bytes());
    b[8..16].copy_from_slice(&cookie.to_be_bytes());
    w.write_all(&b)
}

fn chunk_header<W: Write>(w: &mut W, flags: u16, kind: u16, cookie: u64, length: u32) -> io::Result<()> {
    let mut b = [0u8; 20];
    b[0..4].copy_from_slice(&STRUCTURED_REPLY_MAGIC.to_be_bytes());
    b[4..6].copy_from_slice(&flags.to_be_bytes());
    b[6..8].copy_from_slice(&kind.to_be_bytes());
    b[8..16].copy_from_slice(&cookie.to_be_bytes());
    b[16..20].copy_from_slice(&length.to_be_bytes());
    w.write_all(&b)
}
