//! A restarted server starts warm: the hit ratio after a clean restart
//! starts where it stopped.

mod common;

use cloudcache_engine::WritePolicy;
use cloudcache_server::config::ShutdownMode;
use cloudcache_server::core::Scratch;
use cloudcache_server::server::Server;
use common::{random_bytes, TempDir, TestServer};

const MIB: u64 = 1 << 20;
const BLOCK: u64 = 4096;

/// Reads 512 pseudo-random blocks of the first 4 MiB; returns the block hit
/// ratio of the pass from the engine's counters.
fn pass(server: &Server, seed: u64) -> f64 {
    let volume = server.exports()[0].volume.clone();
    let core = server.core();
    let counters = || core.with_engine(|c| c.volumes()[volume.id as usize].counters);
    let before = counters();
    let mut s = Scratch::default();
    let picks = random_bytes(512 * 2, seed);
    for pair in picks.chunks(2) {
        let block = (u16::from_le_bytes([pair[0], pair[1]]) as u64) % (4 * MIB / BLOCK);
        core.read(&volume, block * BLOCK, BLOCK, &mut s).unwrap();
    }
    let after = counters();
    (after.block_hits - before.block_hits) as f64 / (after.block_accesses - before.block_accesses) as f64
}

#[test]
fn hit_ratio_after_a_clean_restart_starts_where_it_stopped() {
    let dir = TempDir::new("restart");
    let disk = dir.join("disk.img");
    std::fs::write(&disk, random_bytes((16 * MIB) as usize, 11)).unwrap();
    let socket = dir.join("nbd.sock");
    let config = TestServer::config(&dir, &disk, &socket, WritePolicy::WriteThrough, 16 * MIB);
    let server = Server::start(config.clone()).unwrap();
    let cold = pass(&server, 1);
    for seed in 2..6 {
        pass(&server, seed);
    }
    let warm = pass(&server, 6);
    server.shutdown().unwrap();
    drop(server);
    let server = Server::start(config).unwrap();
    let report = server.recovery().unwrap().clone();
    assert!(report.clean_shutdown && report.blocks > 0, "{report:?}");
    let restarted = pass(&server, 7);
    server.shutdown().unwrap();
    assert!(cold < 0.5, "cold pass {cold}");
    assert!(warm > 0.95, "warm pass {warm}");
    assert!(restarted >= warm - 0.02, "after restart {restarted}, before {warm}");
    // And the data is right after the restart too.
    let server =
        Server::start(TestServer::config(&dir, &disk, &socket, WritePolicy::WriteThrough, 16 * MIB)).unwrap();
    let volume = server.exports()[0].volume.clone();
    let mut s = Scratch::default();
    let expected = std::fs::read(&disk).unwrap();
    let got = server.core().read(&volume, 0, 4 * MIB, &mut s).unwrap().to_vec();
    assert!(got == expected[..(4 * MIB) as usize]);
    server.shutdown().unwrap();
}

#[test]
fn a_store_in_use_is_not_opened_twice() {
    let dir = TempDir::new("in-use");
    let disk = dir.join("disk.img");
    std::fs::File::create(&disk).unwrap().set_len(16 * MIB).unwrap();
    let config =
        |socket: &str| TestServer::config(&dir, &disk, &dir.join(socket), WritePolicy::WriteBack, 8 * MIB);
    let first = Server::start(config("a.sock")).unwrap();
    let second = Server::start(config("b.sock")).err().expect("a second server on the same store");
    assert!(second.contains("in use"), "{second}");
    let flash = dir.join("flash.img");
    let report = cloudcache_server::store::check::check(&flash, false).unwrap();
    assert!(report.warnings.iter().any(|w| w.contains("in use")), "{report:?}");
    assert!(
        cloudcache_server::store::check::check(&flash, true).is_err(),
        "repair needs the store to itself"
    );
    first.shutdown().unwrap();
    // Closed cleanly: the store is free again.
    let again = Server::start(config("c.sock")).unwrap();
    again.shutdown().unwrap();
}

/// A server over `disk` whose flash is closed as `shutdown` says.
fn server_with(
    dir: &TempDir,
    disk: &std::path::Path,
    shutdown: ShutdownMode,
    dirty_high: f64,
) -> std::sync::Arc<Server> {
    let mut config = TestServer::config(dir, disk, &dir.join("nbd.sock"), WritePolicy::WriteBack, 64 * MIB);
    config.shutdown = shutdown;
    config.dirty_high = dirty_high;
    config.dirty_low = dirty_high / 2.0;
    Server::start(config).unwrap()
}

#[test]
fn shutdown_persists_or_flushes_dirty_blocks_as_configured() {
    for mode in [ShutdownMode::Persist, ShutdownMode::Flush] {
        let dir = TempDir::new("shutdown");
        let disk = dir.join("disk.img");
        std::fs::File::create(&disk).unwrap().set_len(16 * MIB).unwrap();
        let data = random_bytes(MIB as usize, 5);
        let server = server_with(&dir, &disk, mode, 1.0);
        let volume = server.exports()[0].volume.clone();
        server.core().write(&volume, 0, &data, false, &mut Scratch::default()).unwrap();
        server.shutdown().unwrap();
        drop(server);
        let on_backend = std::fs::read(&disk).unwrap()[..MIB as usize] == data[..];
        let server = server_with(&dir, &disk, mode, 1.0);
        let report = server.recovery().unwrap().clone();
        match mode {
            // Dirty blocks stay on flash, and come back dirty.
            ShutdownMode::Persist => assert!(!on_backend && report.dirty_blocks == 256, "{report:?}"),
            // Everything was written back first.
            ShutdownMode::Flush => assert!(on_backend && report.dirty_blocks == 0, "{report:?}"),
        }
        let volume = server.exports()[0].volume.clone();
        assert!(server.core().read(&volume, 0, MIB, &mut Scratch::default()).unwrap() == &data[..]);
        server.shutdown().unwrap();
    }
}

#[test]
fn the_cleaner_writes_back_down_to_the_low_watermark() {
    let dir = TempDir::new("cleaner");
    let disk = dir.join("disk.img");
    std::fs::File::create(&disk).unwrap().set_len(16 * MIB).unwrap();
    // About 15,800 blocks of cache: above 10 % dirty the cleaner starts,
    // and it stops at 5 % (give or take one step of 256 blocks).
    let server = server_with(&dir, &disk, ShutdownMode::Persist, 0.1);
    let volume = server.exports()[0].volume.clone();
    let capacity = server.core().with_engine(|c| c.capacity_weight());
    let data = random_bytes((8 * MIB) as usize, 9);
    // 2,048 dirty blocks, above the high watermark (the cleaner may start
    // while the write is still going on).
    server.core().write(&volume, 0, &data, false, &mut Scratch::default()).unwrap();
    assert!(2048 > capacity / 10);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while server.core().dirty_blocks() > capacity / 20 {
        assert!(std::time::Instant::now() < deadline, "the cleaner did not get below the low watermark");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // It writes the oldest first, and stops near the low watermark.
    let dirty = server.core().dirty_blocks();
    assert!(dirty > (capacity / 20).saturating_sub(256), "cleaned far past the low watermark: {dirty} left");
    let backend = std::fs::read(&disk).unwrap();
    assert!(backend[..4096] == data[..4096], "the oldest write was written back");
    server.shutdown().unwrap();
}
