//! The NBD client and `NbdBackend` against real servers: nbdkit (with its
//! memory plugin and error / delay / blocksize-policy / multi-conn / log
//! filters) and qemu-nbd, over Unix sockets and TCP. Tests skip with a
//! message when nbdkit (or qemu-nbd) is not installed.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use cloudcache_server::backend::{Backend, NbdBackend, NbdBackendOptions};
use cloudcache_server::nbd::client::{remote_errno, Client, ClientOptions};
use cloudcache_server::nbd::proto::{self, STATE_HOLE, STATE_ZERO};
use cloudcache_server::nbd::uri::NbdUri;

const MIB: u64 = 1 << 20;

fn have(program: &str) -> bool {
    let ok = Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        eprintln!("skipping: {program} is not installed (Debian package nbdkit / qemu-utils)");
    }
    ok
}

/// A scratch directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        static SEQ: AtomicUsize = AtomicUsize::new(0);
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("cc-nbdc-{}-{name}-{seq}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A server process killed on drop.
struct Server {
    child: Child,
    uri: NbdUri,
    _dir: Option<TempDir>,
}

impl Server {
    /// `nbdkit -f -U SOCK ARGS...` in its own directory.
    fn nbdkit_unix(args: &[&str]) -> Server {
        let dir = TempDir::new("nbdkit");
        let socket = dir.path("nbd.sock");
        let mut server = Server::nbdkit_unix_at(&socket, args);
        server._dir = Some(dir);
        server
    }

    /// nbdkit writes its pid file once it accepts connections, so waiting
    /// for it needs no probe connection (which nbdkit would log as an error).
    fn nbdkit_unix_at(socket: &Path, args: &[&str]) -> Server {
        let pidfile = socket.with_extension("pid");
        let _ = std::fs::remove_file(&pidfile);
        let child = Command::new("nbdkit")
            .args(["-f", "--exit-with-parent"])
            .arg("-U")
            .arg(socket)
            .arg("-P")
            .arg(&pidfile)
            .args(args)
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn nbdkit");
        wait_for_pidfile(&pidfile);
        let uri = format!("nbd+unix:///?socket={}", socket.display()).parse().unwrap();
        Server { child, uri, _dir: None }
    }

    /// Spawns a server and probes its socket until it accepts.
    fn spawn_unix(command: &mut Command, socket: &Path) -> Server {
        let child = command.stdout(Stdio::null()).spawn().expect("spawn server");
        let uri: NbdUri = format!("nbd+unix:///?socket={}", socket.display()).parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::os::unix::net::UnixStream::connect(socket).is_err() {
            assert!(Instant::now() < deadline, "server did not create {}", socket.display());
            std::thread::sleep(Duration::from_millis(20));
        }
        Server { child, uri, _dir: None }
    }

    fn nbdkit_tcp(args: &[&str]) -> Server {
        let dir = TempDir::new("tcp");
        let pidfile = dir.path("nbdkit.pid");
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new("nbdkit")
            .args(["-f", "--exit-with-parent", "-i", "127.0.0.1", "-p", &port.to_string(), "-P"])
            .arg(&pidfile)
            .args(args)
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn nbdkit");
        wait_for_pidfile(&pidfile);
        let uri = format!("nbd://127.0.0.1:{port}/").parse().unwrap();
        Server { child, uri, _dir: Some(dir) }
    }

    fn client(&self) -> Client {
        Client::connect(&self.uri, &ClientOptions::default()).unwrap()
    }

    fn backend(&self, connections: usize) -> NbdBackend {
        NbdBackend::connect(self.uri.clone(), NbdBackendOptions { connections, ..Default::default() })
            .unwrap()
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn wait_for_pidfile(pidfile: &Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::metadata(pidfile).map(|m| m.len() == 0).unwrap_or(true) {
        assert!(Instant::now() < deadline, "nbdkit did not write {}", pidfile.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Deterministic pseudo-random bytes (xorshift64*).
fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect()
}

#[test]
fn random_data_round_trips_at_unaligned_offsets() {
    if !have("nbdkit") {
        return;
    }
    let server = Server::nbdkit_unix(&["memory", "64M"]);
    let backend = server.backend(4);
    assert_eq!(backend.size(), 64 * MIB);
    assert_eq!(backend.describe(), server.uri.to_string());
    let cases = [(0u64, 1usize), (1, 4095), (4097, 12_345), (3 * MIB + 511, 300_001), (64 * MIB - 7, 7)];
    for (i, &(offset, len)) in cases.iter().enumerate() {
        let data = random_bytes(len, i as u64 + 1);
        backend.write_at(&data, offset).unwrap();
        let mut back = vec![0u8; len];
        backend.read_at(&mut back, offset).unwrap();
        assert_eq!(back, data, "write/read at {offset}+{len}");
    }
    // Another connection sees the same data: it really is on the server.
    let mut other = server.client();
    let mut back = vec![0u8; 12_345];
    other.read(&mut back, 4097).unwrap();
    assert_eq!(back, random_bytes(12_345, 3));
}

#[test]
fn requests_above_the_servers_maximum_are_split() {
    if !have("nbdkit") {
        return;
    }
    // The filter advertises a 64 KiB maximum and fails anything larger.
    let server = Server::nbdkit_unix(&[
        "--filter=blocksize-policy",
        "memory",
        "64M",
        "blocksize-maximum=64K",
        "blocksize-error-policy=error",
    ]);
    let mut client = server.client();
    assert_eq!(client.info().max_block, 65536);
    let data = random_bytes(MIB as usize + 3, 7);
    client.write(&data, 12_345, false).unwrap();
    let mut back = vec![0u8; data.len()];
    client.read(&mut back, 12_345).unwrap();
    assert_eq!(back, data);
}

#[test]
fn flush_trim_and_write_zeroes() {
    if !have("nbdkit") {
        return;
    }
    let server = Server::nbdkit_unix(&["memory", "64M"]);
    let backend = server.backend(2);
    assert!(backend.info().can_flush() && backend.info().can_trim() && backend.info().can_write_zeroes());
    let data = random_bytes(2 * MIB as usize, 11);
    backend.write_at(&data, 4 * MIB).unwrap();
    backend.flush().unwrap();

    backend.write_zeroes(4 * MIB + 100, 300_000).unwrap();
    let mut back = vec![0xffu8; 2 * MIB as usize];
    backend.read_at(&mut back, 4 * MIB).unwrap();
    assert_eq!(&back[..100], &data[..100]);
    assert!(back[100..300_100].iter().all(|&b| b == 0), "zeroed range reads as zeros");
    assert_eq!(&back[300_100..], &data[300_100..]);

    // The memory plugin frees trimmed pages, which block status then shows.
    backend.trim(5 * MIB, MIB).unwrap();
    let extents = backend.extents(5 * MIB, MIB).unwrap();
    assert!(!extents.is_empty());
    assert!(extents.iter().all(|e| e.flags & STATE_HOLE != 0), "{extents:?}");
}

#[test]
fn write_zeroes_without_server_support_writes_zeros() {
    if !have("nbdkit") {
        return;
    }
    let server = Server::nbdkit_unix(&["--filter=nozero", "memory", "64M"]);
    let backend = server.backend(2);
    assert!(!backend.info().can_write_zeroes());
    backend.write_at(&random_bytes(3 * MIB as usize, 5), 0).unwrap();
    backend.write_zeroes(1000, 2 * MIB + 5).unwrap();
    let mut back = vec![0xffu8; 2 * MIB as usize + 5];
    backend.read_at(&mut back, 1000).unwrap();
    assert!(back.iter().all(|&b| b == 0));
}

#[test]
fn extents_show_holes_and_data() {
    if !have("nbdkit") {
        return;
    }
    let server = Server::nbdkit_unix(&["memory", "64M"]);
    let backend = server.backend(2);
    assert!(backend.info().allocation_context.is_some());
    backend.write_at(&[7u8; 65536], 2 * MIB).unwrap();
    // Walk the whole disk the way a copier does, one call per prefix.
    let mut map = Vec::new();
    let mut at = 0;
    while at < 8 * MIB {
        let extents = backend.extents(at, 8 * MIB - at).unwrap();
        assert!(!extents.is_empty());
        for e in extents {
            map.push((at, e));
            at += e.len;
        }
    }
    assert_eq!(at, 8 * MIB, "extents cover exactly the range asked for");
    for (start, e) in &map {
        let end = start + e.len;
        let has_data = *start < 2 * MIB + 65536 && end > 2 * MIB;
        if has_data {
            assert_eq!(e.flags & STATE_HOLE, 0, "written range reported as a hole: {map:?}");
        } else {
            assert_eq!(e.flags, STATE_HOLE | STATE_ZERO, "unwritten range reported as data: {map:?}");
        }
    }
}

#[test]
fn without_structured_replies_reads_use_simple_replies_and_extents_report_data() {
    if !have("nbdkit") {
        return;
    }
    let server = Server::nbdkit_unix(&["--no-sr", "memory", "64M"]);
    let backend = server.backend(2);
    assert!(!backend.info().structured_replies);
    assert_eq!(backend.info().allocation_context, None);
    let data = random_bytes(100_000, 9);
    backend.write_at(&data, 333).unwrap();
    let mut back = vec![0u8; data.len()];
    backend.read_at(&mut back, 333).unwrap();
    assert_eq!(back, data);
    assert_eq!(
        backend.extents(0, 64 * MIB).unwrap(),
        vec![cloudcache_server::backend::Extent { len: 64 * MIB, flags: 0 }]
    );
}

#[test]
fn structured_reads_of_holes_from_qemu_nbd() {
    if !have("qemu-nbd") {
        return;
    }
    // qemu-nbd answers reads of unallocated ranges with OFFSET_HOLE chunks.
    let dir = TempDir::new("qemu");
    let image = dir.path("disk.img");
    let file = std::fs::File::create(&image).unwrap();
    file.set_len(16 * MIB).unwrap();
    let data = random_bytes(65536, 13);
    std::os::unix::fs::FileExt::write_all_at(&file, &data, 4 * MIB).unwrap();
    drop(file);
    let socket = dir.path("q.sock");
    let mut server = Server::spawn_unix(
        Command::new("qemu-nbd").args(["-f", "raw", "--persistent", "-k"]).arg(&socket).arg(&image),
        &socket,
    );
    let mut client = server.client();
    assert!(client.info().structured_replies);
    let mut back = vec![0xeeu8; 8 * MIB as usize];
    client.read(&mut back, 0).unwrap();
    let at = 4 * MIB as usize;
    assert!(back[..at].iter().all(|&b| b == 0), "hole before the data reads as zeros");
    assert_eq!(&back[at..at + 65536], &data[..]);
    assert!(back[at + 65536..].iter().all(|&b| b == 0), "hole after the data reads as zeros");
    drop(client);
    server.stop();
}

#[test]
fn server_errors_arrive_as_io_errors_and_the_connection_stays_usable() {
    if !have("nbdkit") {
        return;
    }
    let dir = TempDir::new("err");
    let trigger = dir.path("fail-now");
    let trigger_arg = format!("error-file={}", trigger.display());
    let server = Server::nbdkit_unix(&[
        "--filter=error",
        "memory",
        "64M",
        "error-pread=EIO",
        "error-pread-rate=1",
        "error-pwrite=ENOSPC",
        "error-pwrite-rate=1",
        &trigger_arg,
    ]);
    let backend = server.backend(1);
    backend.write_at(&[1u8; 4096], 8192).unwrap();

    std::fs::write(&trigger, b"").unwrap();
    let mut buf = [0u8; 4096];
    let err = backend.read_at(&mut buf, 8192).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("READ") && text.contains("8192") && text.contains("EIO"), "{text}");
    assert_eq!(remote_errno(&err), Some(libc::EIO));
    assert_eq!(proto::errno_of(&err), proto::EIO);
    let err = backend.write_at(&[2u8; 100], 50).unwrap_err();
    assert!(err.to_string().contains("WRITE"), "{err}");
    assert_eq!(proto::errno_of(&err), proto::ENOSPC);

    std::fs::remove_file(&trigger).unwrap();
    backend.read_at(&mut buf, 8192).unwrap();
    assert_eq!(buf, [1u8; 4096]);
}

#[test]
fn tcp_round_trip() {
    if !have("nbdkit") {
        return;
    }
    let server = Server::nbdkit_tcp(&["memory", "16M"]);
    let backend = server.backend(2);
    let data = random_bytes(70_000, 21);
    backend.write_at(&data, 999).unwrap();
    let mut back = vec![0u8; data.len()];
    backend.read_at(&mut back, 999).unwrap();
    assert_eq!(back, data);
    backend.flush().unwrap();
}

#[test]
fn unknown_export_is_a_clear_error() {
    if !have("nbdkit") {
        return;
    }
    let server = Server::nbdkit_unix(&[
        "--filter=exportname",
        "memory",
        "16M",
        "exportname=disk1",
        "exportname-strict=true",
    ]);
    let mut uri = server.uri.clone();
    uri.export = "nope".into();
    let err =
        NbdBackend::connect(uri.clone(), NbdBackendOptions::default()).err().expect("unknown export refused");
    let text = err.to_string();
    assert!(text.contains("\"nope\"") && text.contains("nbd+unix"), "{text}");
    uri.export = "disk1".into();
    assert_eq!(NbdBackend::connect(uri, NbdBackendOptions::default()).unwrap().size(), 16 * MIB);
}

#[test]
fn concurrent_misses_use_several_connections() {
    if !have("nbdkit") {
        return;
    }
    // Each read takes 50 ms at the server, so eight threads released
    // together must overlap: the pool has to open more connections.
    let server = Server::nbdkit_unix(&["--filter=delay", "memory", "64M", "rdelay=50ms"]);
    let backend = Arc::new(server.backend(8));
    backend.write_at(&random_bytes(8 * 65536, 3), 0).unwrap();
    let barrier = Arc::new(Barrier::new(8));
    let threads: Vec<_> = (0..8u64)
        .map(|i| {
            let (backend, barrier) = (backend.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 65536];
                barrier.wait();
                backend.read_at(&mut buf, i * 65536).unwrap();
                buf
            })
        })
        .collect();
    let expected = random_bytes(8 * 65536, 3);
    for (i, t) in threads.into_iter().enumerate() {
        assert_eq!(t.join().unwrap(), expected[i * 65536..(i + 1) * 65536]);
    }
    assert!(backend.connections_open() > 1, "only {} connection(s) opened", backend.connections_open());
}

#[test]
fn without_multi_conn_flush_reaches_every_connection_that_wrote() {
    if !have("nbdkit") {
        return;
    }
    let dir = TempDir::new("log");
    let log = dir.path("nbdkit.log");
    let log_arg = format!("logfile={}", log.display());
    let mut server = Server::nbdkit_unix(&[
        "--filter=log",
        "--filter=multi-conn",
        "--filter=delay",
        "memory",
        "64M",
        "multi-conn-mode=disable",
        "wdelay=20ms",
        &log_arg,
    ]);
    let backend = Arc::new(server.backend(4));
    assert!(!backend.info().can_multi_conn());
    let barrier = Arc::new(Barrier::new(4));
    let threads: Vec<_> = (0..4u64)
        .map(|i| {
            let (backend, barrier) = (backend.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                backend.write_at(&[i as u8; 4096], i * 4096).unwrap();
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    backend.flush().unwrap();
    drop(backend);
    server.stop();

    // Every connection's last write is followed by a flush on it.
    let log = std::fs::read_to_string(&log).unwrap();
    let mut pending: std::collections::BTreeMap<String, bool> = Default::default();
    for line in log.lines() {
        let Some(conn) = line.split_whitespace().find(|w| w.starts_with("connection=")) else { continue };
        if line.contains(" Write id=") {
            pending.insert(conn.to_string(), true);
        } else if line.contains(" Flush id=") {
            pending.insert(conn.to_string(), false);
        }
    }
    assert!(pending.len() > 1, "writes ran on one connection only:\n{log}");
    assert!(pending.values().all(|unflushed| !unflushed), "unflushed connections {pending:?}:\n{log}");
}

#[test]
fn a_restarted_server_is_reconnected_after_one_failed_request() {
    if !have("nbdkit") {
        return;
    }
    let dir = TempDir::new("restart");
    let socket = dir.path("nbd.sock");
    let start = |socket: &Path| Server::nbdkit_unix_at(socket, &["memory", "16M"]);
    let mut server = start(&socket);
    let backend = server.backend(1);
    backend.write_at(&[5u8; 512], 0).unwrap();
    server.stop();
    let _ = std::fs::remove_file(&socket);
    let _server = start(&socket);

    let mut buf = [0u8; 512];
    let err = backend.read_at(&mut buf, 0).unwrap_err();
    assert!(err.to_string().contains("READ"), "{err}");
    // A fresh connection to the new (empty) server.
    backend.read_at(&mut buf, 0).unwrap();
    assert_eq!(buf, [0u8; 512]);
}

/// A listener that answers like something other than an NBD server.
fn fake_server(reply: &'static [u8], dir: &TempDir) -> (NbdUri, std::thread::JoinHandle<()>) {
    let socket = dir.path("fake.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    let handle = std::thread::spawn(move || {
        if let Ok((mut stream, _)) = listener.accept() {
            let _ = stream.write_all(reply);
            // Keep the connection open until the client gives up.
            let _ = stream.read(&mut [0u8; 64]);
        }
    });
    (format!("nbd+unix:///?socket={}", socket.display()).parse().unwrap(), handle)
}

#[test]
fn a_server_that_is_not_nbd_gives_a_clear_error() {
    let options = ClientOptions { handshake_timeout: Duration::from_millis(300), ..Default::default() };
    let cases: [(&'static [u8], &str); 4] = [
        (b"HTTP/1.1 400 Bad Request\r\n\r\n", "not an NBD server"),
        (b"", "timed out"),
        (b"NBDMAGIC\x00\x00\x42\x02\x81\x86\x12\x53", "oldstyle"),
        (b"NBDMAGICIHAVEOPT\x00\x03\x00\x03\xe8\x89\x04\x55\x65\xa9\x00\x00\x00\x09", "protocol error"),
    ];
    for (reply, needle) in cases {
        let dir = TempDir::new("fake");
        let (uri, handle) = fake_server(reply, &dir);
        let err = Client::connect(&uri, &options).err().expect("handshake must fail");
        let text = err.to_string();
        assert!(text.contains(needle) && text.contains("handshake"), "{needle}: {text}");
        handle.join().unwrap();
    }
    // Nothing listening at all.
    let dir = TempDir::new("none");
    let uri: NbdUri = format!("nbd+unix:///?socket={}", dir.path("absent.sock").display()).parse().unwrap();
    let err = Client::connect(&uri, &options).err().expect("no server");
    assert!(err.to_string().contains("cannot connect"), "{err}");
}

#[test]
fn bad_uris_are_refused_by_open() {
    let err = NbdBackend::open("nbd://host:99999/x").err().expect("bad port");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    assert!(err.to_string().contains("bad port"), "{err}");
}
