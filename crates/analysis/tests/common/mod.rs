//! Helpers shared by the analysis crate's integration tests.
#![allow(dead_code)] // each test binary uses a different subset

use std::path::{Path, PathBuf};

use cloudcache_analysis::Workload;
use cloudcache_trace::{Op, OpenOptions, Request};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// The real CloudPhysics sample trace, when `shared/` is beside the clone;
/// `None` (and a message saying the test is skipped) otherwise.
pub fn sample() -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/cloudPhysicsIO.vscsi");
    if path.exists() {
        Some(path)
    } else {
        eprintln!("skipped: sample trace {} not found", path.display());
        None
    }
}

/// The sample trace loaded, if present.
pub fn sample_workload() -> Option<Workload> {
    let path = sample()?;
    let mut reader = cloudcache_trace::open(&path, &OpenOptions::default()).expect("open sample");
    Some(Workload::read(&mut reader, "sample", &|_| {}).expect("read sample"))
}

/// A random multi-volume trace with skewed reuse, unaligned requests of 1 to
/// 9 blocks, reads and writes (and trims when `trims`).
pub fn synthetic(seed: u64, requests: usize, volumes: u32, blocks: u64, trims: bool) -> Vec<Request> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..requests)
        .map(|i| {
            // Squaring a uniform number skews accesses toward low blocks.
            let u: f64 = rng.gen();
            let block = (u * u * blocks as f64) as u64;
            let offset = block * 4096 + if rng.gen_bool(0.2) { rng.gen_range(1..8) * 512 } else { 0 };
            let len = rng.gen_range(1..=9u64) * 4096 - if rng.gen_bool(0.2) { 512 } else { 0 };
            let op = match rng.gen_range(0..100) {
                0..=2 if trims => Op::Trim,
                0..=64 => Op::Read,
                _ => Op::Write,
            };
            Request {
                time_ns: i as u64 * 1_000_000,
                volume: rng.gen_range(0..volumes),
                op,
                offset,
                len,
                content: Vec::new(),
            }
        })
        .collect()
}
