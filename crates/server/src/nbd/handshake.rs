//! The fixed newstyle handshake: options until the client picks an export.

use std::io::{self, Read, Write};
use std::sync::Arc;

use super::proto::*;
use crate::volume::Volume;

/// What the server offers during negotiation.
pub trait Exports: Send + Sync {
    /// The export a client names (`""` is the default export).
    fn lookup(&self, name: &str) -> Option<Arc<Volume>>;
    /// Every export's name, for `NBD_OPT_LIST`.
    fn names(&self) -> Vec<String>;
    /// Whether new connections are refused (shutting down).
    fn shutting_down(&self) -> bool;
    /// Preferred block size to advertise.
    fn preferred_block_size(&self) -> u32;
}

/// What a finished negotiation agreed on.
pub struct Negotiated {
    /// The export chosen.
    pub volume: Arc<Volume>,
    /// Structured replies are on.
    pub structured: bool,
    /// `base:allocation` was selected (its context id).
    pub allocation_context: Option<u32>,
    /// Transmission flags sent to the client.
    pub flags: u16,
}

/// The context id the server gives `base:allocation`.
const ALLOCATION_CONTEXT_ID: u32 = 1;

/// Why negotiation ended without an export.
#[derive(Debug)]
pub enum HandshakeEnd {
    /// The client aborted or went away.
    Closed,
    /// The connection broke or the client broke the protocol.
    Failed(io::Error),
}

impl From<io::Error> for HandshakeEnd {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            HandshakeEnd::Closed
        } else {
            HandshakeEnd::Failed(e)
        }
    }
}

fn protocol_error(what: String) -> HandshakeEnd {
    HandshakeEnd::Failed(io::Error::new(io::ErrorKind::InvalidData, what))
}

/// Runs the handshake on a fresh connection.
pub fn negotiate<R: Read, W: Write>(
    reader: &mut R,
    writer: &mut W,
    exports: &dyn Exports,
) -> Result<Negotiated, HandshakeEnd> {
    writer.write_all(&NBD_MAGIC.to_be_bytes())?;
    writer.write_all(&IHAVEOPT.to_be_bytes())?;
    writer.write_all(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes())?;
    writer.flush()?;
    let client_flags = read_u32(reader)?;
    if client_flags & !(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES) != 0 {
        return Err(protocol_error(format!("client sent unknown handshake flags {client_flags:#x}")));
    }
    let no_zeroes = client_flags & FLAG_C_NO_ZEROES != 0;
    let mut structured = false;
    let mut allocation_context = None;
    loop {
        let magic = read_u64(reader)?;
        if magic != IHAVEOPT {
            return Err(protocol_error(format!("option without the IHAVEOPT magic (got {magic:#x})")));
        }
        let option = read_u32(reader)?;
        let length = read_u32(reader)?;
        if length > MAX_OPTION_LENGTH {
            // Skip it to stay in step, then refuse.
            io::copy(&mut reader.take(length as u64), &mut io::sink())?;
            reply(writer, option, REP_ERR_TOO_BIG, b"option too large")?;
            continue;
        }
        let mut data = vec![0u8; length as usize];
        reader.read_exact(&mut data)?;
        if exports.shutting_down() {
            reply(writer, option, REP_ERR_SHUTDOWN, b"server is shutting down")?;
            continue;
        }
        match option {
            OPT_EXPORT_NAME => {
                let name = String::from_utf8_lossy(&data).into_owned();
                // No way to report an error here but hanging up.
                let Some(volume) = exports.lookup(&name) else {
                    return Err(protocol_error(format!("EXPORT_NAME of unknown export {name:?}")));
                };
                let flags = transmission_flags(structured);
                writer.write_all(&volume.size.to_be_bytes())?;
                writer.write_all(&flags.to_be_bytes())?;
                if !no_zeroes {
                    writer.write_all(&[0u8; 124])?;
                }
                writer.flush()?;
                return Ok(Negotiated { volume, structured, allocation_context, flags });
            }
            OPT_ABORT => {
                let _ = reply(writer, option, REP_ACK, &[]);
                return Err(HandshakeEnd::Closed);
            }
            OPT_LIST => {
                if !data.is_empty() {
                    reply(writer, option, REP_ERR_INVALID, b"LIST takes no data")?;
                    continue;
                }
                for name in exports.names() {
                    let mut payload = (name.len() as u32).to_be_bytes().to_vec();
                    payload.extend_from_slice(name.as_bytes());
                    reply(writer, option, REP_SERVER, &payload)?;
                }
                reply(writer, option, REP_ACK, &[])?;
            }
            OPT_STRUCTURED_REPLY => {
                if !data.is_empty() {
                    reply(writer, option, REP_ERR_INVALID, b"STRUCTURED_REPLY takes no data")?;
                    continue;
                }
                structured = true;
                reply(writer, option, REP_ACK, &[])?;
            }
            OPT_INFO | OPT_GO => {
                let Some((name, requests)) = parse_info_request(&data) else {
                    reply(writer, option, REP_ERR_INVALID, b"malformed INFO/GO request")?;
                    continue;
                };
                let Some(volume) = exports.lookup(&name) else {
                    let message = format!("no export named {name:?}");
                    reply(writer, option, REP_ERR_UNKNOWN, message.as_bytes())?;
                    continue;
                };
                let flags = transmission_flags(structured);
                let mut export = INFO_EXPORT.to_be_bytes().to_vec();
                export.extend_from_slice(&volume.size.to_be_bytes());
                export.extend_from_slice(&flags.to_be_bytes());
                reply(writer, option, REP_INFO, &export)?;
                let mut sizes = INFO_BLOCK_SIZE.to_be_bytes().to_vec();
                sizes.extend_from_slice(&1u32.to_be_bytes());
                sizes.extend_from_slice(&exports.preferred_block_size().to_be_bytes());
                sizes.extend_from_slice(&MAX_PAYLOAD.to_be_bytes());
                reply(writer, option, REP_INFO, &sizes)?;
                if requests.contains(&INFO_NAME) {
                    let mut info = INFO_NAME.to_be_bytes().to_vec();
                    info.extend_from_slice(volume.name.as_bytes());
                    reply(writer, option, REP_INFO, &info)?;
                }
                if requests.contains(&INFO_DESCRIPTION) {
                    let mut info = INFO_DESCRIPTION.to_be_bytes().to_vec();
                    info.extend_from_slice(
                        format!("cloudcache over {}", volume.backend.describe()).as_bytes(),
                    );
                    reply(writer, option, REP_INFO, &info)?;
                }
                reply(writer, option, REP_ACK, &[])?;
                if option == OPT_GO {
                    return Ok(Negotiated { volume, structured, allocation_context, flags });
                }
            }
            OPT_LIST_META_CONTEXT | OPT_SET_META_CONTEXT => {
                if option == OPT_SET_META_CONTEXT && !structured {
                    reply(writer, option, REP_ERR_INVALID, b"SET_META_CONTEXT needs structured replies")?;
                    continue;
                }
                let Some((name, queries)) = parse_meta_context_request(&data) else {
                    reply(writer, option, REP_ERR_INVALID, b"malformed meta context request")?;
                    continue;
                };
                if exports.lookup(&name).is_none() {
                    let message = format!("no export named {name:?}");
                    reply(writer, option, REP_ERR_UNKNOWN, message.as_bytes())?;
                    continue;
                }
                let listing_all = option == OPT_LIST_META_CONTEXT && queries.is_empty();
                let wanted = listing_all
                    || queries
                        .iter()
                        .any(|q| q == BASE_ALLOCATION || (option == OPT_LIST_META_CONTEXT && q == "base:"));
                if option == OPT_SET_META_CONTEXT {
                    allocation_context = wanted.then_some(ALLOCATION_CONTEXT_ID);
                }
                if wanted {
                    let mut payload = ALLOCATION_CONTEXT_ID.to_be_bytes().to_vec();
                    payload.extend_from_slice(BASE_ALLOCATION.as_bytes());
                    reply(writer, option, REP_META_CONTEXT, &payload)?;
                }
                reply(writer, option, REP_ACK, &[])?;
            }
            _ => {
                let message = format!("option {option} is not supported");
                reply(writer, option, REP_ERR_UNSUP, message.as_bytes())?;
            }
        }
    }
}

/// Flags every export advertises: a flush is global, so multi-connection
/// clients may rely on one connection's flush.
fn transmission_flags(structured: bool) -> u16 {
    let mut flags = FLAG_HAS_FLAGS
        | FLAG_SEND_FLUSH
        | FLAG_SEND_FUA
        | FLAG_SEND_TRIM
        | FLAG_SEND_WRITE_ZEROES
        | FLAG_CAN_MULTI_CONN
        | FLAG_SEND_CACHE;
    if structured {
        flags |= FLAG_SEND_DF;
    }
    flags
}

/// `u32 name length, name, u16 count, count x u16`.
fn parse_info_request(data: &[u8]) -> Option<(String, Vec<u16>)> {
    let name_len = u32::from_be_bytes(data.get(0..4)?.try_into().ok()?) as usize;
    let name = std::str::from_utf8(data.get(4..4 + name_len)?).ok()?.to_string();
    let rest = data.get(4 + name_len..)?;
    let count = u16::from_be_bytes(rest.get(0..2)?.try_into().ok()?) as usize;
    let items = rest.get(2..)?;
    if items.len() != count * 2 {
        return None;
    }
    Some((name, items.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]])).collect()))
}

/// `u32 name length, name, u32 count, count x (u32 length, query)`.
fn parse_meta_context_request(data: &[u8]) -> Option<(String, Vec<String>)> {
    let name_len = u32::from_be_bytes(data.get(0..4)?.try_into().ok()?) as usize;
    let name = std::str::from_utf8(data.get(4..4 + name_len)?).ok()?.to_string();
    let mut at = 4 + name_len;
    let count = u32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?);
    at += 4;
    let mut queries = Vec::new();
    for _ in 0..count {
        let len = u32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?) as usize;
        at += 4;
        queries.push(std::str::from_utf8(data.get(at..at + len)?).ok()?.to_string());
        at += len;
    }
    (at == data.len()).then_some((name, queries))
}

fn reply<W: Write>(writer: &mut W, option: u32, reply_type: u32, data: &[u8]) -> io::Result<()> {
    writer.write_all(&OPTION_REPLY_MAGIC.to_be_bytes())?;
    writer.write_all(&option.to_be_bytes())?;
    writer.write_all(&reply_type.to_be_bytes())?;
    writer.write_all(&(data.len() as u32).to_be_bytes())?;
    writer.write_all(data)?;
    writer.flush()
}

fn read_u32<R: Read>(reader: &mut R) -> io::Result<u32> {
    let mut b = [0u8; 4];
    reader.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

fn read_u64<R: Read>(reader: &mut R) -> io::Result<u64> {
    let mut b = [0u8; 8];
    reader.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_requests_parse_and_reject_bad_lengths() {
        let mut data = 3u32.to_be_bytes().to_vec();
        data.extend_from_slice(b"vm1");
        data.extend_from_slice(&1u16.to_be_bytes());
        data.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
        assert_eq!(parse_info_request(&data), Some(("vm1".into(), vec![INFO_BLOCK_SIZE])));
        assert_eq!(parse_info_request(&data[..data.len() - 1]), None);
        assert_eq!(parse_info_request(&[0, 0, 0, 9, b'a']), None);
    }

    #[test]
    fn meta_context_requests_parse() {
        let mut data = 0u32.to_be_bytes().to_vec();
        data.extend_from_slice(&1u32.to_be_bytes());
        data.extend_from_slice(&(BASE_ALLOCATION.len() as u32).to_be_bytes());
        data.extend_from_slice(BASE_ALLOCATION.as_bytes());
        assert_eq!(
            parse_meta_context_request(&data),
            Some((String::new(), vec![BASE_ALLOCATION.to_string()]))
        );
        data.push(0);
        assert_eq!(parse_meta_context_request(&data), None);
    }
}
