//! A server on a temporary directory for tests, and the real NBD clients
//! they drive (qemu-io, nbdcopy, nbdinfo, fio from Debian's packages).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use cloudcache_engine::WritePolicy;
use cloudcache_server::config::{ServerConfig, VolumeConfig};
use cloudcache_server::nbd::stream::ListenAddr;
use cloudcache_server::server::Server;

/// Whether every named program is installed; if not, says which is missing
/// (the test then passes without checking: CI installs them).
pub fn have(programs: &[&str]) -> bool {
    for program in programs {
        let found = Command::new("sh").arg("-c").arg(format!("command -v {program}")).output();
        if !found.is_ok_and(|o| o.status.success()) {
            eprintln!("skipping: {program} is not installed (Debian: nbdkit qemu-utils libnbd-bin fio)");
            return false;
        }
    }
    true
}

/// A temporary directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A fresh directory named after `tag`.
    pub fn new(tag: &str) -> TempDir {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("cc-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    /// A path inside.
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A server in this process over a sparse disk image.
pub struct TestServer {
    pub server: Arc<Server>,
    pub dir: TempDir,
    pub disk: PathBuf,
    pub socket: PathBuf,
}

impl TestServer {
    /// One volume `vm1` of `disk_bytes` with `policy`, a flash store of
    /// `flash_bytes`.
    pub fn start(tag: &str, policy: WritePolicy, disk_bytes: u64, flash_bytes: u64) -> TestServer {
        let dir = TempDir::new(tag);
        let disk = dir.join("disk.img");
        std::fs::File::create(&disk).unwrap().set_len(disk_bytes).unwrap();
        let socket = dir.join("nbd.sock");
        let server = Server::start(TestServer::config(&dir, &disk, &socket, policy, flash_bytes)).unwrap();
        TestServer { server, dir, disk, socket }
    }

    /// The configuration `start` uses.
    pub fn config(
        dir: &TempDir,
        disk: &Path,
        socket: &Path,
        policy: WritePolicy,
        flash_bytes: u64,
    ) -> ServerConfig {
        ServerConfig {
            listen: vec![ListenAddr::Unix(socket.to_path_buf())],
            flash: dir.join("flash.img"),
            flash_size: flash_bytes,
            volumes: vec![VolumeConfig {
                name: "vm1".into(),
                backend: disk.display().to_string(),
                write_policy: policy,
            }],
            workers: 8,
            ..ServerConfig::default()
        }
    }

    /// The NBD URI of export `name`.
    pub fn uri(&self, name: &str) -> String {
        format!("nbd+unix:///{name}?socket={}", self.socket.display())
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.server.shutdown();
    }
}

/// Runs a command, failing the test with its output if it fails.
pub fn run(command: &mut Command) -> Output {
    let output = command.output().unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    assert!(
        output.status.success(),
        "{command:?} failed ({}):\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// qemu-io with `commands` against `uri`; returns stdout.
pub fn qemu_io(uri: &str, commands: &[&str]) -> String {
    let mut command = Command::new("qemu-io");
    command.args(["-f", "raw"]);
    for c in commands {
        command.args(["-c", c]);
    }
    command.arg(uri);
    let output = run(&mut command);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    // qemu-io reports a failed pattern check on stdout and still exits 0.
    assert!(!stdout.contains("Pattern verification failed"), "qemu-io: {stdout}");
    assert!(!stdout.contains("error"), "qemu-io: {stdout}");
    stdout
}

/// Deterministic pseudo-random bytes.
pub fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
