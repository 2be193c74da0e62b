//! `cloudcache serve` killed with SIGKILL in the middle of a write-back
//! workload with periodic flushes: after a restart on the same flash store,
//! every write acknowledged before a completed FLUSH reads back (from the
//! cache or the backend), and no block holds another block's data.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cloudcache_server::nbd::client::{Client, ClientOptions};
use cloudcache_server::nbd::uri::NbdUri;
use common::sigterm;

const BLOCK: usize = 4096;
const DISK_BLOCKS: u64 = 8192; // 32 MiB checked by the writers ...
const FIO_BYTES: u64 = 16 << 20; // ... and 16 MiB beyond it where fio adds load
const WRITERS: u64 = 4;

struct Dir(PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn start(dir: &Path) -> Child {
    start_logging(dir, Stdio::null())
}

fn start_logging(dir: &Path, stderr: Stdio) -> Child {
    let socket = dir.join("nbd.sock");
    let _ = std::fs::remove_file(&socket);
    let child = Command::new(env!("CARGO_BIN_EXE_cloudcache"))
        .args(["serve", "--listen"])
        .arg(format!("unix:{}", socket.display()))
        .arg("--flash")
        .arg(dir.join("flash.img"))
        .args(["--flash-size", "16MiB", "--volume"])
        .arg(format!("vm1={}:write-back", dir.join("disk.img").display()))
        // Clean often, so write-backs, evictions and flushes interleave.
        .args(["--dirty-high", "0.3", "--dirty-low", "0.1"])
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("start cloudcache serve");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        assert!(Instant::now() < deadline, "server did not start listening");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

fn connect(dir: &Path) -> Client {
    let uri: NbdUri = format!("nbd+unix:///vm1?socket={}", dir.join("nbd.sock").display()).parse().unwrap();
    Client::connect(&uri, &ClientOptions::default()).unwrap()
}

/// A block's content for `round`: its number and the round, repeated.
fn pattern(block: u64, round: u64) -> Vec<u8> {
    let mut data = Vec::with_capacity(BLOCK);
    while data.len() < BLOCK {
        data.extend_from_slice(&block.to_le_bytes());
        data.extend_from_slice(&round.to_le_bytes());
    }
    data
}

/// The round a block's content was written in (0: never written), or
/// `None` if it is not a whole pattern of this block.
fn decode(block: u64, data: &[u8]) -> Option<u64> {
    if data.iter().all(|&b| b == 0) {
        return Some(0);
    }
    let round = u64::from_le_bytes(data[8..16].try_into().unwrap());
    (data == pattern(block, round).as_slice()).then_some(round)
}

/// One writer's rounds: write a few of its blocks, then flush; returns
/// for each of its blocks the round that must survive (its last write
/// before the last completed flush) and the last round attempted.
fn writer(dir: PathBuf, id: u64, stop: Arc<AtomicBool>) -> (Vec<(u64, u64)>, u64) {
    let mut client = connect(&dir);
    let blocks: Vec<u64> = (0..DISK_BLOCKS).filter(|b| b % WRITERS == id).collect();
    let mut written: Vec<u64> = vec![0; blocks.len()];
    let mut durable: Vec<u64> = vec![0; blocks.len()];
    let mut x = 0x2545_f491_4f6c_dd1d_u64 ^ id;
    let mut round = 0;
    'rounds: while !stop.load(Ordering::Relaxed) {
        round += 1;
        for _ in 0..64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let i = (x % blocks.len() as u64) as usize;
            if client.write(&pattern(blocks[i], round), blocks[i] * BLOCK as u64, false).is_err() {
                break 'rounds;
            }
            written[i] = round;
        }
        if client.flush().is_err() {
            break;
        }
        durable.copy_from_slice(&written);
    }
    (blocks.into_iter().zip(durable).collect(), round)
}

#[test]
fn flushed_writes_survive_kill_9() {
    let dir = Dir(std::env::temp_dir().join(format!("cc-crash-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    std::fs::create_dir_all(&dir.0).unwrap();
    std::fs::File::create(dir.0.join("disk.img"))
        .unwrap()
        .set_len(DISK_BLOCKS * BLOCK as u64 + FIO_BYTES)
        .unwrap();
    let have_fio = Command::new("fio").arg("--version").output().is_ok_and(|o| o.status.success());
    if !have_fio {
        eprintln!("fio is not installed: the crash test runs without its background load");
    }
    for cycle in 0..3 {
        let mut server = start(&dir.0);
        let stop = Arc::new(AtomicBool::new(false));
        // fio's write-back workload with periodic flushes (fsync = FLUSH)
        // beside the checked writers; it dies with the server.
        let fio = have_fio.then(|| {
            Command::new("fio")
                .args([
                    "--name=load",
                    "--ioengine=nbd",
                    "--rw=randwrite",
                    "--bs=4k",
                    "--iodepth=8",
                    "--fsync=16",
                ])
                .arg(format!("--uri=nbd+unix:///vm1?socket={}", dir.0.join("nbd.sock").display()))
                .arg(format!("--offset={}", DISK_BLOCKS * BLOCK as u64))
                .arg(format!("--size={FIO_BYTES}"))
                .args(["--time_based=1", "--runtime=30"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        });
        let writers: Vec<_> = (0..WRITERS)
            .map(|id| {
                let (dir, stop) = (dir.0.clone(), stop.clone());
                std::thread::spawn(move || writer(dir, id, stop))
            })
            .collect();
        // Kill mid-workload, at a different moment each cycle.
        std::thread::sleep(Duration::from_millis(700 + 400 * cycle));
        server.kill().unwrap();
        server.wait().unwrap();
        stop.store(true, Ordering::Relaxed);
        if let Some(mut fio) = fio {
            let _ = fio.kill();
            let _ = fio.wait();
        }
        let results: Vec<_> = writers.into_iter().map(|w| w.join().unwrap()).collect();
        let rounds: u64 = results.iter().map(|r| r.1).sum();
        assert!(rounds > WRITERS * 2, "the workload barely ran ({rounds} rounds)");

        let mut server = start(&dir.0);
        let mut client = connect(&dir.0);
        // Read the whole disk back in large requests, then check each block.
        let mut disk = vec![0u8; DISK_BLOCKS as usize * BLOCK];
        for (i, chunk) in disk.chunks_mut(256 * BLOCK).enumerate() {
            client.read(chunk, (i * 256 * BLOCK) as u64).unwrap();
        }
        let mut survived_from_later_rounds = 0;
        for (blocks, last_round) in &results {
            for &(block, durable) in blocks {
                let data = &disk[block as usize * BLOCK..(block as usize + 1) * BLOCK];
                let round = decode(block, data)
                    .unwrap_or_else(|| panic!("cycle {cycle}: block {block} holds data that is not its own"));
                assert!(
                    round >= durable && round <= *last_round,
                    "cycle {cycle}: block {block} reads round {round}, but round {durable} was flushed"
                );
                survived_from_later_rounds += usize::from(round > durable);
            }
        }
        eprintln!(
            "cycle {cycle}: {rounds} rounds; {survived_from_later_rounds} blocks kept unflushed later writes"
        );
        drop(client);
        // A clean stop this time, so the next cycle starts warm.
        sigterm(&server);
        let status = server.wait().unwrap();
        assert!(status.success(), "clean shutdown failed: {status}");
    }
}

#[test]
fn clean_blocks_survive_kill_9_verified() {
    let dir = Dir(std::env::temp_dir().join(format!("cc-crash-clean-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    std::fs::create_dir_all(&dir.0).unwrap();
    let disk: Vec<u8> = (0..DISK_BLOCKS).flat_map(|b| pattern(b, 1)).collect();
    std::fs::write(dir.0.join("disk.img"), &disk).unwrap();
    let mut server = start(&dir.0);
    let mut client = connect(&dir.0);
    let mut buf = vec![0u8; 512 * BLOCK];
    client.read(&mut buf, 0).unwrap();
    client.flush().unwrap();
    server.kill().unwrap();
    server.wait().unwrap();
    let log = std::fs::File::create(dir.0.join("serve.log")).unwrap();
    let mut server = start_logging(&dir.0, Stdio::from(log));
    let mut client = connect(&dir.0);
    client.read(&mut buf, 0).unwrap();
    assert!(buf == disk[..512 * BLOCK]);
    sigterm(&server);
    assert!(server.wait().unwrap().success());
    let log = std::fs::read_to_string(dir.0.join("serve.log")).unwrap();
    // Every block read before the flush was restored after checking its data.
    assert!(log.contains("clean_shutdown: false, blocks: 512, dirty_blocks: 0"), "{log}");
    assert!(log.contains("checksum_dropped: 0"), "{log}");
}
