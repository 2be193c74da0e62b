//! Fuzzing the NBD server with random handshakes and random requests: every
//! well-framed request gets exactly one reply with a protocol error number,
//! nothing panics, and the server keeps serving other clients.

mod common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once};
use std::time::Duration;

use cloudcache_engine::WritePolicy;
use cloudcache_server::nbd::proto::*;
use common::TestServer;
use proptest::prelude::*;

const SIZE: u64 = 4 << 20;

static PANICKED: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();

/// Records a panic on any thread (a connection or worker thread's panic
/// would otherwise only end that thread).
fn watch_panics() {
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICKED.store(true, Ordering::SeqCst);
            default(info);
        }));
    });
}

fn server() -> Arc<TestServer> {
    Arc::new(TestServer::start("fuzz", WritePolicy::WriteBack, SIZE, 4 << 20))
}

fn connect(t: &TestServer) -> UnixStream {
    let s = UnixStream::connect(&t.socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

/// Greeting, then NBD_OPT_GO for the default export, no structured replies.
fn negotiate(s: &mut UnixStream) {
    let mut greeting = [0u8; 18];
    s.read_exact(&mut greeting).unwrap();
    s.write_all(&(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).to_be_bytes()).unwrap();
    let mut go = IHAVEOPT.to_be_bytes().to_vec();
    go.extend_from_slice(&OPT_GO.to_be_bytes());
    go.extend_from_slice(&6u32.to_be_bytes());
    go.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    s.write_all(&go).unwrap();
    loop {
        let mut header = [0u8; 20];
        s.read_exact(&mut header).unwrap();
        let kind = u32::from_be_bytes(header[12..16].try_into().unwrap());
        let len = u32::from_be_bytes(header[16..20].try_into().unwrap()) as usize;
        let mut data = vec![0u8; len];
        s.read_exact(&mut data).unwrap();
        if kind == REP_ACK {
            return;
        }
        assert_eq!(kind, REP_INFO);
    }
}

/// The server still serves a fresh client.
fn still_serving(t: &TestServer) {
    let mut s = connect(t);
    negotiate(&mut s);
    let mut flush = REQUEST_MAGIC.to_be_bytes().to_vec();
    flush.extend_from_slice(&0u16.to_be_bytes());
    flush.extend_from_slice(&CMD_FLUSH.to_be_bytes());
    flush.extend_from_slice(&[0xcc; 8]);
    flush.extend_from_slice(&[0; 12]);
    s.write_all(&flush).unwrap();
    let mut reply = [0u8; 16];
    s.read_exact(&mut reply).unwrap();
    assert_eq!(u32::from_be_bytes(reply[4..8].try_into().unwrap()), 0);
}

/// One random request: (flags, command, offset, length).
fn request() -> impl Strategy<Value = (u16, u16, u64, u32)> {
    let offset = prop_oneof![0..SIZE, Just(SIZE - 512), Just(SIZE), any::<u64>()];
    let length = prop_oneof![0u32..70_000, Just(0), Just(u32::MAX)];
    (0u16..64, 0u16..10, offset, length)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_handshakes_never_hang_or_break_the_server(bytes in proptest::collection::vec(any::<u8>(), 0..400), valid_flags in any::<bool>()) {
        watch_panics();
        let t = server();
        let mut s = connect(&t);
        let mut greeting = [0u8; 18];
        s.read_exact(&mut greeting).unwrap();
        if valid_flags {
            s.write_all(&(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).to_be_bytes()).unwrap();
            // Well-framed options with random numbers and payloads.
            for chunk in bytes.chunks(37) {
                let mut option = IHAVEOPT.to_be_bytes().to_vec();
                option.extend_from_slice(&u32::from(chunk[0] % 14).to_be_bytes());
                option.extend_from_slice(&(chunk.len() as u32 - 1).to_be_bytes());
                option.extend_from_slice(&chunk[1..]);
                let _ = s.write_all(&option);
            }
        } else {
            let _ = s.write_all(&bytes);
        }
        // Whatever it answers, it answers within the timeout or hangs up;
        // then it goes on serving others.
        let _ = s.shutdown(std::net::Shutdown::Write);
        let mut sink = Vec::new();
        let _ = s.read_to_end(&mut sink);
        still_serving(&t);
        prop_assert!(!PANICKED.load(Ordering::SeqCst), "a server thread panicked");
    }

    #[test]
    fn every_framed_request_gets_one_valid_reply(requests in proptest::collection::vec(request(), 1..24)) {
        watch_panics();
        let t = server();
        let mut s = connect(&t);
        negotiate(&mut s);
        let mut expected = 0;
        for (i, &(flags, command, offset, length)) in requests.iter().enumerate() {
            if command == CMD_DISC {
                continue;
            }
            // A WRITE carries its payload (kept small enough to send).
            let length = if command == CMD_WRITE { length.min(70_000) } else { length };
            let mut b = REQUEST_MAGIC.to_be_bytes().to_vec();
            b.extend_from_slice(&flags.to_be_bytes());
            b.extend_from_slice(&command.to_be_bytes());
            b.extend_from_slice(&(i as u64).to_be_bytes());
            b.extend_from_slice(&offset.to_be_bytes());
            b.extend_from_slice(&length.to_be_bytes());
            if command == CMD_WRITE {
                b.resize(b.len() + length as usize, 0x5a);
            }
            s.write_all(&b).unwrap();
            expected += 1;
        }
        let mut seen = vec![false; requests.len()];
        for _ in 0..expected {
            let mut reply = [0u8; 16];
            s.read_exact(&mut reply).unwrap();
            prop_assert_eq!(u32::from_be_bytes(reply[0..4].try_into().unwrap()), SIMPLE_REPLY_MAGIC);
            let error = u32::from_be_bytes(reply[4..8].try_into().unwrap());
            let cookie = u64::from_be_bytes(reply[8..16].try_into().unwrap()) as usize;
            prop_assert!(cookie < requests.len() && !seen[cookie], "unknown or repeated cookie {}", cookie);
            seen[cookie] = true;
            prop_assert!([0, EINVAL, ENOSPC, EIO].contains(&error), "error {} for {:?}", error, requests[cookie]);
            let (_, command, offset, length) = requests[cookie];
            if error == 0 && command == CMD_READ {
                // A successful read carries exactly its data.
                prop_assert!(offset + length as u64 <= SIZE);
                let mut data = vec![0u8; length as usize];
                s.read_exact(&mut data).unwrap();
            }
        }
        still_serving(&t);
        prop_assert!(!PANICKED.load(Ordering::SeqCst), "a server thread panicked");
    }
}
