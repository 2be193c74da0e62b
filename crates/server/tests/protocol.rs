//! The NBD server byte by byte: malformed and unusual input gets the right
//! error, and the connection is kept or closed as the protocol says.

mod common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use cloudcache_engine::WritePolicy;
use cloudcache_server::nbd::proto::*;
use common::TestServer;

const MIB: u64 = 1 << 20;

struct Raw {
    s: UnixStream,
}

impl Raw {
    /// Connects and completes the greeting (fixed newstyle, no zeroes).
    fn connect(t: &TestServer) -> Raw {
        let s = UnixStream::connect(&t.socket).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut raw = Raw { s };
        assert_eq!(raw.u64(), NBD_MAGIC);
        assert_eq!(raw.u64(), IHAVEOPT);
        assert_eq!(raw.u16(), FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES);
        raw.send(&(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).to_be_bytes());
        raw
    }

    fn send(&mut self, b: &[u8]) {
        self.s.write_all(b).unwrap();
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut b = vec![0u8; n];
        self.s.read_exact(&mut b).unwrap();
        b
    }

    fn u16(&mut self) -> u16 {
        u16::from_be_bytes(self.bytes(2).try_into().unwrap())
    }

    fn u32(&mut self) -> u32 {
        u32::from_be_bytes(self.bytes(4).try_into().unwrap())
    }

    fn u64(&mut self) -> u64 {
        u64::from_be_bytes(self.bytes(8).try_into().unwrap())
    }

    fn option(&mut self, option: u32, data: &[u8]) {
        let mut b = IHAVEOPT.to_be_bytes().to_vec();
        b.extend_from_slice(&option.to_be_bytes());
        b.extend_from_slice(&(data.len() as u32).to_be_bytes());
        b.extend_from_slice(data);
        self.send(&b);
    }

    /// One option reply: (option, type, data).
    fn option_reply(&mut self) -> (u32, u32, Vec<u8>) {
        assert_eq!(self.u64(), OPTION_REPLY_MAGIC);
        let option = self.u32();
        let kind = self.u32();
        let len = self.u32() as usize;
        (option, kind, self.bytes(len))
    }

    /// NBD_OPT_GO for `name`; returns the export size after the ACK.
    fn go(&mut self, name: &str) -> u64 {
        let mut data = (name.len() as u32).to_be_bytes().to_vec();
        data.extend_from_slice(name.as_bytes());
        data.extend_from_slice(&0u16.to_be_bytes());
        self.option(OPT_GO, &data);
        let mut size = 0;
        loop {
            let (_, kind, data) = self.option_reply();
            match kind {
                REP_INFO if data[0..2] == INFO_EXPORT.to_be_bytes() => {
                    size = u64::from_be_bytes(data[2..10].try_into().unwrap());
                }
                REP_INFO => {}
                REP_ACK => return size,
                other => panic!("GO got reply type {other:#x}: {}", String::from_utf8_lossy(&data)),
            }
        }
    }

    fn request(&mut self, flags: u16, command: u16, cookie: u64, offset: u64, length: u32, payload: &[u8]) {
        let mut b = REQUEST_MAGIC.to_be_bytes().to_vec();
        b.extend_from_slice(&flags.to_be_bytes());
        b.extend_from_slice(&command.to_be_bytes());
        b.extend_from_slice(&cookie.to_be_bytes());
        b.extend_from_slice(&offset.to_be_bytes());
        b.extend_from_slice(&length.to_be_bytes());
        b.extend_from_slice(payload);
        self.send(&b);
    }

    /// A simple reply: (error, cookie).
    fn simple_reply(&mut self) -> (u32, u64) {
        assert_eq!(self.u32(), SIMPLE_REPLY_MAGIC);
        (self.u32(), self.u64())
    }

    fn closed(&mut self) -> bool {
        let mut b = [0u8; 1];
        matches!(self.s.read(&mut b), Ok(0) | Err(_))
    }
}

fn server() -> TestServer {
    TestServer::start("protocol", WritePolicy::WriteBack, 16 * MIB, 8 * MIB)
}

#[test]
fn unknown_options_are_refused_and_negotiation_goes_on() {
    let t = server();
    let mut c = Raw::connect(&t);
    c.option(OPT_EXTENDED_HEADERS, &[]);
    assert_eq!(c.option_reply().1, REP_ERR_UNSUP);
    c.option(4242, b"whatever");
    assert_eq!(c.option_reply().1, REP_ERR_UNSUP);
    // A malformed INFO request, then an unknown export.
    c.option(OPT_INFO, &[0, 0, 0, 50, b'x']);
    assert_eq!(c.option_reply().1, REP_ERR_INVALID);
    c.option(OPT_GO, &[0, 0, 0, 4, b'n', b'o', b'p', b'e', 0, 0]);
    let (_, kind, message) = c.option_reply();
    assert_eq!(kind, REP_ERR_UNKNOWN);
    assert!(String::from_utf8_lossy(&message).contains("nope"));
    c.option(OPT_LIST, &[]);
    let (_, kind, data) = c.option_reply();
    assert_eq!((kind, &data[4..]), (REP_SERVER, &b"vm1"[..]));
    assert_eq!(c.option_reply().1, REP_ACK);
    // Still negotiating: GO works.
    assert_eq!(c.go("vm1"), 16 * MIB);
}

#[test]
fn bad_commands_get_errors_and_the_connection_stays() {
    let t = server();
    let mut c = Raw::connect(&t);
    c.go("");
    c.request(0, CMD_READ, 1, 16 * MIB - 512, 1024, &[]);
    assert_eq!(c.simple_reply(), (EINVAL, 1));
    c.request(0, CMD_WRITE, 2, 16 * MIB, 512, &[7u8; 512]);
    assert_eq!(c.simple_reply(), (ENOSPC, 2));
    c.request(0, 99, 3, 0, 0, &[]);
    assert_eq!(c.simple_reply(), (EINVAL, 3));
    c.request(1 << 9, CMD_READ, 4, 0, 512, &[]);
    assert_eq!(c.simple_reply(), (EINVAL, 4));
    c.request(0, CMD_BLOCK_STATUS, 5, 0, 4096, &[]);
    assert_eq!(c.simple_reply(), (EINVAL, 5), "no meta context was negotiated");
    c.request(CMD_FLAG_DF, CMD_READ, 6, 0, 512, &[]);
    assert_eq!(c.simple_reply(), (EINVAL, 6), "DF needs structured replies");
    c.request(0, CMD_TRIM, 7, u64::MAX - 10, 100, &[]);
    assert_eq!(c.simple_reply(), (EINVAL, 7), "offset + length overflows");
    // The connection still works.
    c.request(CMD_FLAG_FUA, CMD_WRITE, 8, 4096, 512, &[9u8; 512]);
    assert_eq!(c.simple_reply(), (0, 8));
    c.request(0, CMD_READ, 9, 4096, 512, &[]);
    assert_eq!(c.simple_reply(), (0, 9));
    assert_eq!(c.bytes(512), vec![9u8; 512]);
    c.request(0, CMD_DISC, 10, 0, 0, &[]);
    assert!(c.closed());
}

#[test]
fn a_bad_request_magic_closes_the_connection() {
    let t = server();
    let mut c = Raw::connect(&t);
    c.go("vm1");
    c.send(&[0xde; 28]);
    assert!(c.closed());
    // Other clients are unaffected.
    let mut d = Raw::connect(&t);
    d.go("vm1");
    d.request(0, CMD_FLUSH, 1, 0, 0, &[]);
    assert_eq!(d.simple_reply(), (0, 1));
}

#[test]
fn unknown_client_flags_end_the_handshake() {
    let t = server();
    let s = UnixStream::connect(&t.socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut c = Raw { s };
    c.bytes(18);
    c.send(&0x8000_0001u32.to_be_bytes());
    assert!(c.closed());
}

#[test]
fn structured_replies_carry_data_errors_and_block_status() {
    let t = server();
    let mut c = Raw::connect(&t);
    c.option(OPT_STRUCTURED_REPLY, &[]);
    assert_eq!(c.option_reply().1, REP_ACK);
    let mut query = 3u32.to_be_bytes().to_vec();
    query.extend_from_slice(b"vm1");
    query.extend_from_slice(&1u32.to_be_bytes());
    query.extend_from_slice(&(BASE_ALLOCATION.len() as u32).to_be_bytes());
    query.extend_from_slice(BASE_ALLOCATION.as_bytes());
    c.option(OPT_SET_META_CONTEXT, &query);
    let (_, kind, data) = c.option_reply();
    assert_eq!(kind, REP_META_CONTEXT);
    let context = u32::from_be_bytes(data[0..4].try_into().unwrap());
    assert_eq!(&data[4..], BASE_ALLOCATION.as_bytes());
    assert_eq!(c.option_reply().1, REP_ACK);
    c.go("vm1");
    c.request(0, CMD_WRITE, 1, MIB, 8192, &[0x42; 8192]);
    assert_eq!(c.simple_reply(), (0, 1));
    // A read comes back as one data chunk.
    c.request(CMD_FLAG_DF, CMD_READ, 2, MIB + 100, 1000, &[]);
    assert_eq!(c.u32(), STRUCTURED_REPLY_MAGIC);
    assert_eq!((c.u16(), c.u16(), c.u64(), c.u32()), (REPLY_FLAG_DONE, REPLY_TYPE_OFFSET_DATA, 2, 1008));
    assert_eq!(c.u64(), MIB + 100);
    assert_eq!(c.bytes(1000), vec![0x42; 1000]);
    // An error is an error chunk with a message.
    c.request(0, CMD_READ, 3, 16 * MIB, 1, &[]);
    assert_eq!(c.u32(), STRUCTURED_REPLY_MAGIC);
    assert_eq!((c.u16(), c.u16(), c.u64()), (REPLY_FLAG_DONE, REPLY_TYPE_ERROR, 3));
    let len = c.u32() as usize;
    let payload = c.bytes(len);
    assert_eq!(u32::from_be_bytes(payload[0..4].try_into().unwrap()), EINVAL);
    // Block status: the cached (dirty) 8 KiB are data, the backend's hole
    // around them is a hole.
    c.request(0, CMD_BLOCK_STATUS, 4, 0, (4 * MIB) as u32, &[]);
    assert_eq!(c.u32(), STRUCTURED_REPLY_MAGIC);
    assert_eq!((c.u16(), c.u16(), c.u64()), (REPLY_FLAG_DONE, REPLY_TYPE_BLOCK_STATUS, 4));
    let len = c.u32() as usize;
    let payload = c.bytes(len);
    assert_eq!(u32::from_be_bytes(payload[0..4].try_into().unwrap()), context);
    let extents: Vec<(u32, u32)> = payload[4..]
        .chunks_exact(8)
        .map(|d| {
            (u32::from_be_bytes(d[0..4].try_into().unwrap()), u32::from_be_bytes(d[4..8].try_into().unwrap()))
        })
        .collect();
    assert_eq!(
        extents,
        [
            (MIB as u32, STATE_HOLE | STATE_ZERO),
            (8192, 0),
            ((3 * MIB - 8192) as u32, STATE_HOLE | STATE_ZERO)
        ]
    );
    // REQ_ONE: a single descriptor.
    c.request(CMD_FLAG_REQ_ONE, CMD_BLOCK_STATUS, 5, MIB, MIB as u32, &[]);
    c.bytes(20);
    assert_eq!(c.bytes(12)[4..8], 8192u32.to_be_bytes());
}
