//! On-demand allocation in the server: the demand controller divides the
//! flash by each volume's predicted reuse working set, and RWS staging
//! keeps a scanning volume's one-time data out of the cache.

mod common;

use cloudcache_engine::WritePolicy;
use cloudcache_server::config::{ServerConfig, VolumeConfig};
use cloudcache_server::core::Scratch;
use cloudcache_server::nbd::stream::ListenAddr;
use cloudcache_server::server::Server;
use common::TempDir;

const MIB: u64 = 1 << 20;
const BLOCK: u64 = 4096;

#[test]
fn shares_follow_reuse_and_scans_are_not_admitted() {
    let dir = TempDir::new("allocation");
    let mut volumes = Vec::new();
    for name in ["web", "backup"] {
        let disk = dir.join(&format!("{name}.img"));
        std::fs::File::create(&disk).unwrap().set_len(64 * MIB).unwrap();
        volumes.push(VolumeConfig {
            name: name.into(),
            backend: disk.display().to_string(),
            write_policy: WritePolicy::WriteBack,
        });
    }
    let server = Server::start(ServerConfig {
        listen: vec![ListenAddr::Unix(dir.join("nbd.sock"))],
        flash: dir.join("flash.img"),
        flash_size: 16 * MIB,
        volumes,
        workers: 2,
        // Windows are closed by the test, not the clock.
        allocation_window_ms: Some(3_600_000),
        rws_n: 1,
        ..ServerConfig::default()
    })
    .unwrap();
    let core = server.core();
    let exports = server.exports();
    let (backup, web) = (exports[0].volume.clone(), exports[1].volume.clone());
    assert_eq!((web.name.as_str(), backup.name.as_str()), ("web", "backup"));
    let mut s = Scratch::default();
    let mut scan_at = 0;
    for _window in 0..4 {
        // The web server re-reads 1 MiB (256 blocks) three times; the backup
        // streams 8 MiB it never reads again.
        for _ in 0..3 {
            for block in 0..256 {
                core.read(&web, block * BLOCK, BLOCK, &mut s).unwrap();
            }
        }
        for _ in 0..64 {
            core.read(&backup, scan_at, 128 << 10, &mut s).unwrap();
            scan_at = (scan_at + (128 << 10)) % (64 * MIB);
        }
        core.close_window();
    }
    let state = core.allocation().unwrap();
    assert_eq!(state.windows_closed, 4);
    let (w, b) = (web.id as usize, backup.id as usize);
    assert_eq!(state.last_window[w].demand_blocks, 256, "{state:?}");
    assert_eq!(state.last_window[b].demand_blocks, 0, "{state:?}");
    // All the cache beyond the web server's demand is spare, lent in
    // proportion to demand: none of it goes to the backup.
    assert_eq!(state.share_blocks[b], 0, "{state:?}");
    let counters =
        core.with_engine(|c| (c.volumes()[w].counters, c.volumes()[b].counters, c.volumes()[b].cached_items));
    let (web_counters, backup_counters, backup_cached) = counters;
    // The backup's one-time reads were staged, never admitted.
    assert_eq!(backup_counters.flash_write_blocks, 0);
    assert_eq!(backup_cached, 0);
    // The web server's set is admitted on its second access and then hits.
    assert!(web_counters.block_hits as f64 / web_counters.block_accesses as f64 > 0.6, "{web_counters:?}");
    server.shutdown().unwrap();
}
