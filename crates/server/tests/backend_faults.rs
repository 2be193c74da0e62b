//! A backend that errors or stalls (nbdkit's `error` and `delay` filters in
//! front of a file): errors reach the client, dirty data is kept and
//! retried, nothing acknowledged is lost, and a stalled miss does not hold
//! up hits.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cloudcache_engine::WritePolicy;
use cloudcache_server::config::{ServerConfig, VolumeConfig};
use cloudcache_server::core::Scratch;
use cloudcache_server::nbd::stream::ListenAddr;
use cloudcache_server::server::Server;
use cloudcache_server::volume::Volume;
use common::{have, random_bytes, TempDir};

const MIB: u64 = 1 << 20;

/// nbdkit serving `disk` through `filters` on a Unix socket.
struct Nbdkit {
    child: Child,
    socket: PathBuf,
}

impl Nbdkit {
    fn start(dir: &TempDir, disk: &Path, filter_args: &[String]) -> Nbdkit {
        let socket = dir.join("backend.sock");
        let pidfile = dir.join("nbdkit.pid");
        let mut command = Command::new("nbdkit");
        command.args(["-f", "-U"]).arg(&socket).arg("-P").arg(&pidfile);
        for arg in filter_args.iter().filter(|a| a.starts_with("--filter")) {
            command.arg(arg);
        }
        command.arg("file").arg(disk);
        for arg in filter_args.iter().filter(|a| !a.starts_with("--filter")) {
            command.arg(arg);
        }
        let child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("start nbdkit");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !pidfile.exists() {
            assert!(Instant::now() < deadline, "nbdkit did not start");
            std::thread::sleep(Duration::from_millis(10));
        }
        Nbdkit { child, socket }
    }

    fn uri(&self) -> String {
        format!("nbd+unix:///?socket={}", self.socket.display())
    }
}

impl Drop for Nbdkit {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Setup {
    server: Arc<Server>,
    volume: Arc<Volume>,
    disk: PathBuf,
    read_errors: PathBuf,
    write_errors: PathBuf,
    _nbdkit: Nbdkit,
    _dir: TempDir,
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.read_errors);
        let _ = std::fs::remove_file(&self.write_errors);
        let _ = self.server.shutdown();
    }
}

/// A server whose one volume is a 16 MiB file behind nbdkit's error filter
/// (errors on while the trigger files exist) and optionally other filters.
fn setup(tag: &str, policy: WritePolicy, flash: u64, extra: &[&str]) -> Setup {
    let dir = TempDir::new(tag);
    let disk = dir.join("disk.img");
    std::fs::File::create(&disk).unwrap().set_len(16 * MIB).unwrap();
    let read_errors = dir.join("read-errors");
    let write_errors = dir.join("write-errors");
    let mut args: Vec<String> = vec![
        "--filter=error".into(),
        "error-pread-rate=1".into(),
        format!("error-pread-file={}", read_errors.display()),
        "error-pwrite-rate=1".into(),
        format!("error-pwrite-file={}", write_errors.display()),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let nbdkit = Nbdkit::start(&dir, &disk, &args);
    let config = ServerConfig {
        listen: vec![ListenAddr::Unix(dir.join("nbd.sock"))],
        flash: dir.join("flash.img"),
        flash_size: flash,
        volumes: vec![VolumeConfig { name: "vm1".into(), backend: nbdkit.uri(), write_policy: policy }],
        workers: 4,
        // The test decides when write-back happens.
        dirty_high: 1.0,
        dirty_low: 1.0,
        ..ServerConfig::default()
    };
    let server = Server::start(config).unwrap();
    let volume = server.exports()[0].volume.clone();
    Setup { server, volume, disk, read_errors, write_errors, _nbdkit: nbdkit, _dir: dir }
}

fn on(trigger: &Path) {
    std::fs::write(trigger, b"").unwrap();
}

fn off(trigger: &Path) {
    std::fs::remove_file(trigger).unwrap();
}

#[test]
fn backend_read_errors_reach_the_client_and_cache_nothing() {
    if !have(&["nbdkit"]) {
        return;
    }
    let t = setup("read-errors", WritePolicy::WriteThrough, 8 * MIB, &[]);
    let core = t.server.core();
    let mut s = Scratch::default();
    core.write(&t.volume, 0, &[0x61; 65536], false, &mut s).unwrap();
    on(&t.read_errors);
    let miss = core.read(&t.volume, MIB, 4096, &mut s).map(|d| d.to_vec());
    assert!(miss.is_err(), "a backend read error must reach the client");
    // Cached data is still served.
    assert_eq!(core.read(&t.volume, 0, 65536, &mut s).unwrap(), &[0x61; 65536][..]);
    off(&t.read_errors);
    // The failed miss left nothing behind: the real data comes back.
    assert_eq!(core.read(&t.volume, MIB, 4096, &mut s).unwrap(), &[0u8; 4096][..]);
    // A write-through write whose backend write fails is reported.
    on(&t.write_errors);
    assert!(core.write(&t.volume, 2 * MIB, &[1; 4096], false, &mut s).is_err());
    off(&t.write_errors);
}

/// Writes `data` at byte `at` in 64 KiB chunks; returns which chunks were
/// acknowledged.
fn write_chunks(t: &Setup, at: usize, data: &[u8], s: &mut Scratch) -> Vec<bool> {
    data.chunks(CHUNK)
        .enumerate()
        .map(|(i, chunk)| t.server.core().write(&t.volume, (at + i * CHUNK) as u64, chunk, false, s).is_ok())
        .collect()
}

/// The acknowledged chunks whose data the backend file does not hold.
fn missing_on_backend(t: &Setup, data: &[u8], acknowledged: &[bool]) -> usize {
    let disk = std::fs::read(&t.disk).unwrap();
    data.chunks(CHUNK)
        .enumerate()
        .filter(|&(i, chunk)| acknowledged[i] && disk[i * CHUNK..i * CHUNK + chunk.len()] != *chunk)
        .count()
}

const CHUNK: usize = 64 << 10;

#[test]
fn dirty_data_survives_backend_write_errors_and_is_retried() {
    if !have(&["nbdkit"]) {
        return;
    }
    // A small cache (about 700 blocks), so later writes evict dirty blocks
    // whose write-back fails.
    let t = setup("write-errors", WritePolicy::WriteBack, 4 * MIB, &[]);
    let core = t.server.core();
    let mut s = Scratch::default();
    let data = random_bytes((12 * MIB) as usize, 3);
    let mut acknowledged = write_chunks(&t, 0, &data[..(2 * MIB) as usize], &mut s);
    assert!(acknowledged.iter().all(|&a| a));
    on(&t.write_errors);
    let flushed = t.server.flush_volume("vm1");
    assert!(flushed.is_err(), "write-back to a failing backend cannot succeed");
    assert!(core.dirty_blocks() >= 512, "failed write-backs leave the blocks dirty");
    // More writes than the cache holds: evicted dirty blocks cannot be
    // written back and stay in their pinned slots; once every slot is
    // pinned, a write has no durable place left and fails.
    acknowledged.extend(write_chunks(&t, (2 * MIB) as usize, &data[(2 * MIB) as usize..], &mut s));
    assert!(core.held_blocks() > 0, "evicted dirty blocks are held for retry");
    assert!(acknowledged.iter().any(|&a| !a), "a full cache over a failing backend refuses writes");
    // Every acknowledged write reads back while the backend is failing.
    for (i, chunk) in data.chunks(CHUNK).enumerate().filter(|&(i, _)| acknowledged[i]) {
        let got = core.read(&t.volume, (i * CHUNK) as u64, CHUNK as u64, &mut s).map(|d| d.to_vec());
        if let Ok(got) = got {
            assert!(got == chunk, "wrong data in chunk {i}");
        }
    }
    off(&t.write_errors);
    assert!(t.server.flush_volume("vm1").is_ok());
    assert_eq!(core.held_blocks(), 0);
    assert_eq!(core.dirty_blocks(), 0);
    assert_eq!(missing_on_backend(&t, &data, &acknowledged), 0, "the backend has every acknowledged write");
}

#[test]
fn a_stalled_miss_does_not_hold_up_hits() {
    if !have(&["nbdkit"]) {
        return;
    }
    let t = setup("stall", WritePolicy::WriteBack, 8 * MIB, &["--filter=delay", "rdelay=3"]);
    let core = t.server.core().clone();
    let mut s = Scratch::default();
    core.write(&t.volume, 0, &[7; 4096], false, &mut s).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let miss = {
        let (core, volume, done) = (core.clone(), t.volume.clone(), done.clone());
        std::thread::spawn(move || {
            let mut s = Scratch::default();
            let ok = core.read(&volume, 8 * MIB, 4096, &mut s).is_ok();
            done.store(true, Ordering::SeqCst);
            ok
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    // The miss is waiting on the backend (3 s); a hit is served meanwhile.
    assert_eq!(core.read(&t.volume, 0, 4096, &mut s).unwrap(), &[7; 4096][..]);
    assert!(!done.load(Ordering::SeqCst), "the hit should not have waited for the stalled miss");
    assert!(miss.join().unwrap());
}

#[test]
fn held_blocks_survive_a_restart_and_reach_the_backend() {
    if !have(&["nbdkit"]) {
        return;
    }
    let t = setup("held-restart", WritePolicy::WriteBack, 4 * MIB, &[]);
    let core = t.server.core();
    let mut s = Scratch::default();
    let data = random_bytes((8 * MIB) as usize, 17);
    on(&t.write_errors);
    // More than the cache holds, with the backend refusing writes: evicted
    // dirty blocks stay in their pinned slots.
    let acknowledged = write_chunks(&t, 0, &data, &mut s);
    core.flush().unwrap();
    let held = core.held_blocks();
    assert!(held > 0, "no block was held");
    // A stop while the backend still fails: the held blocks stay on flash,
    // with their entries (a crash after the flush would leave the same).
    t.server.shutdown().unwrap();
    off(&t.write_errors);
    let server = Server::start(t.server.config().clone()).unwrap();
    let report = server.recovery().unwrap().clone();
    assert!(report.dirty_blocks as usize >= held, "{report:?} (held {held})");
    server.flush_volume("vm1").unwrap();
    server.shutdown().unwrap();
    assert_eq!(missing_on_backend(&t, &data, &acknowledged), 0, "an acknowledged write was lost");
}
