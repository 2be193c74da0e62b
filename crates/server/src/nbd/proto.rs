//! NBD wire constants (NetworkBlockDevice `doc/proto.md`), shared by the
//! server and the client. Everything on the wire is big-endian.

/// "NBDMAGIC": the first 8 bytes a server sends.
pub const NBD_MAGIC: u64 = 0x4e42_444d_4147_4943;
/// The oldstyle handshake magic (obsolete; recognised only to refuse it).
pub const OLDSTYLE_MAGIC: u64 = 0x0000_4202_8186_1253;
/// "IHAVEOPT": the newstyle magic, and the prefix of every client option.
pub const IHAVEOPT: u64 = 0x4948_4156_454F_5054;
/// Prefix of every option reply.
pub const OPTION_REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
/// Prefix of every transmission request.
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
/// Prefix of a simple reply.
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
/// Prefix of a structured reply chunk.
pub const STRUCTURED_REPLY_MAGIC: u32 = 0x668e_33ef;

/// Handshake flags (server, u16).
pub const FLAG_FIXED_NEWSTYLE: u16 = 1 << 0;
/// The server will omit the 124 zero bytes after EXPORT_NAME.
pub const FLAG_NO_ZEROES: u16 = 1 << 1;
/// Client flags (u32).
pub const FLAG_C_FIXED_NEWSTYLE: u32 = 1 << 0;
/// The client agrees to omit the zero padding.
pub const FLAG_C_NO_ZEROES: u32 = 1 << 1;

/// Options.
pub const OPT_EXPORT_NAME: u32 = 1;
/// Abort negotiation.
pub const OPT_ABORT: u32 = 2;
/// List exports.
pub const OPT_LIST: u32 = 3;
/// TLS (not supported).
pub const OPT_STARTTLS: u32 = 5;
/// Describe an export.
pub const OPT_INFO: u32 = 6;
/// Describe an export and enter transmission.
pub const OPT_GO: u32 = 7;
/// Use structured replies.
pub const OPT_STRUCTURED_REPLY: u32 = 8;
/// List metadata contexts.
pub const OPT_LIST_META_CONTEXT: u32 = 9;
/// Select metadata contexts for BLOCK_STATUS.
pub const OPT_SET_META_CONTEXT: u32 = 10;
/// Extended headers (experimental; refused).
pub const OPT_EXTENDED_HEADERS: u32 = 11;

/// Option reply types.
pub const REP_ACK: u32 = 1;
/// One export in a LIST reply.
pub const REP_SERVER: u32 = 2;
/// One information item in an INFO/GO reply.
pub const REP_INFO: u32 = 3;
/// One metadata context.
pub const REP_META_CONTEXT: u32 = 4;
/// Error replies have bit 31 set.
pub const REP_FLAG_ERROR: u32 = 1 << 31;
/// Option not supported.
pub const REP_ERR_UNSUP: u32 = REP_FLAG_ERROR | 1;
/// Forbidden by policy.
pub const REP_ERR_POLICY: u32 = REP_FLAG_ERROR | 2;
/// Syntactically invalid option.
pub const REP_ERR_INVALID: u32 = REP_FLAG_ERROR | 3;
/// Platform does not support it.
pub const REP_ERR_PLATFORM: u32 = REP_FLAG_ERROR | 4;
/// TLS required.
pub const REP_ERR_TLS_REQD: u32 = REP_FLAG_ERROR | 5;
/// No such export.
pub const REP_ERR_UNKNOWN: u32 = REP_FLAG_ERROR | 6;
/// The server is shutting down.
pub const REP_ERR_SHUTDOWN: u32 = REP_FLAG_ERROR | 7;
/// Block size negotiation required.
pub const REP_ERR_BLOCK_SIZE_REQD: u32 = REP_FLAG_ERROR | 8;
/// Option payload too large.
pub const REP_ERR_TOO_BIG: u32 = REP_FLAG_ERROR | 9;

/// Information types in INFO/GO.
pub const INFO_EXPORT: u16 = 0;
/// Export name.
pub const INFO_NAME: u16 = 1;
/// Description.
pub const INFO_DESCRIPTION: u16 = 2;
/// Minimum, preferred, maximum block sizes.
pub const INFO_BLOCK_SIZE: u16 = 3;

/// Transmission flags (u16).
pub const FLAG_HAS_FLAGS: u16 = 1 << 0;
/// Export is read-only.
pub const FLAG_READ_ONLY: u16 = 1 << 1;
/// FLUSH is supported.
pub const FLAG_SEND_FLUSH: u16 = 1 << 2;
/// FUA is supported.
pub const FLAG_SEND_FUA: u16 = 1 << 3;
/// Rotational media.
pub const FLAG_ROTATIONAL: u16 = 1 << 4;
/// TRIM is supported.
pub const FLAG_SEND_TRIM: u16 = 1 << 5;
/// WRITE_ZEROES is supported.
pub const FLAG_SEND_WRITE_ZEROES: u16 = 1 << 6;
/// The DF (don't fragment) read flag is supported.
pub const FLAG_SEND_DF: u16 = 1 << 7;
/// Flush on one connection covers all connections.
pub const FLAG_CAN_MULTI_CONN: u16 = 1 << 8;
/// CACHE (prefetch) is supported.
pub const FLAG_SEND_CACHE: u16 = 1 << 10;
/// FAST_ZERO is supported.
pub const FLAG_SEND_FAST_ZERO: u16 = 1 << 11;

/// Commands.
pub const CMD_READ: u16 = 0;
/// Write.
pub const CMD_WRITE: u16 = 1;
/// Disconnect.
pub const CMD_DISC: u16 = 2;
/// Flush.
pub const CMD_FLUSH: u16 = 3;
/// Trim (discard).
pub const CMD_TRIM: u16 = 4;
/// Prefetch hint.
pub const CMD_CACHE: u16 = 5;
/// Write zeroes.
pub const CMD_WRITE_ZEROES: u16 = 6;
/// Block status.
pub const CMD_BLOCK_STATUS: u16 = 7;

/// Command flags (u16).
pub const CMD_FLAG_FUA: u16 = 1 << 0;
/// WRITE_ZEROES must not punch a hole.
pub const CMD_FLAG_NO_HOLE: u16 = 1 << 1;
/// READ must come back as one chunk.
pub const CMD_FLAG_DF: u16 = 1 << 2;
/// BLOCK_STATUS: one extent is enough.
pub const CMD_FLAG_REQ_ONE: u16 = 1 << 3;
/// WRITE_ZEROES: fail fast if zeroing is not faster than writing.
pub const CMD_FLAG_FAST_ZERO: u16 = 1 << 4;

/// Structured reply chunk flags.
pub const REPLY_FLAG_DONE: u16 = 1 << 0;
/// Structured reply chunk types.
pub const REPLY_TYPE_NONE: u16 = 0;
/// Data at an offset.
pub const REPLY_TYPE_OFFSET_DATA: u16 = 1;
/// A hole (reads as zeros) at an offset.
pub const REPLY_TYPE_OFFSET_HOLE: u16 = 2;
/// Block status descriptors.
pub const REPLY_TYPE_BLOCK_STATUS: u16 = 5;
/// An error.
pub const REPLY_TYPE_ERROR: u16 = (1 << 15) + 1;
/// An error at an offset.
pub const REPLY_TYPE_ERROR_OFFSET: u16 = (1 << 15) + 2;

/// `base:allocation` state bits.
pub const STATE_HOLE: u32 = 1 << 0;
/// Reads as zeros.
pub const STATE_ZERO: u32 = 1 << 1;
/// The metadata context the server offers.
pub const BASE_ALLOCATION: &str = "base:allocation";

/// Error numbers on the wire (not the host's errno values).
pub const EPERM: u32 = 1;
/// I/O error.
pub const EIO: u32 = 5;
/// Out of memory.
pub const ENOMEM: u32 = 12;
/// Invalid argument.
pub const EINVAL: u32 = 22;
/// No space (write past the end).
pub const ENOSPC: u32 = 28;
/// Value too large.
pub const EOVERFLOW: u32 = 75;
/// Not supported.
pub const ENOTSUP: u32 = 95;
/// Server shutting down.
pub const ESHUTDOWN: u32 = 108;

/// The largest request payload the server accepts (the spec asks servers
/// not to treat up to 32 MiB as abuse).
pub const MAX_PAYLOAD: u32 = 32 << 20;
/// Option payloads beyond this are refused with `REP_ERR_TOO_BIG`.
pub const MAX_OPTION_LENGTH: u32 = 64 << 10;

/// Maps a host I/O error to the NBD error number sent to the client.
pub fn errno_of(error: &std::io::Error) -> u32 {
    match error.raw_os_error().or_else(|| crate::nbd::client::remote_errno(error)) {
        Some(libc::EPERM) | Some(libc::EACCES) | Some(libc::EROFS) => EPERM,
        Some(libc::ENOMEM) => ENOMEM,
        Some(libc::EINVAL) => EINVAL,
        Some(libc::ENOSPC) | Some(libc::EDQUOT) | Some(libc::EFBIG) => ENOSPC,
        Some(libc::EOVERFLOW) => EOVERFLOW,
        Some(libc::ENOTSUP) => ENOTSUP,
        Some(libc::ESHUTDOWN) => ESHUTDOWN,
        _ => EIO,
    }
}

/// A command's name, for logs and errors.
pub fn command_name(command: u16) -> &'static str {
    match command {
        CMD_READ => "READ",
        CMD_WRITE => "WRITE",
        CMD_DISC => "DISC",
        CMD_FLUSH => "FLUSH",
        CMD_TRIM => "TRIM",
        CMD_CACHE => "CACHE",
        CMD_WRITE_ZEROES => "WRITE_ZEROES",
        CMD_BLOCK_STATUS => "BLOCK_STATUS",
        _ => "unknown command",
    }
}
