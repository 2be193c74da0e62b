//! The exact LRU curve must be what the engine's LRU cache reports, at every
//! size: block mode, write-back, counting block hits.

mod common;

use cloudcache_analysis::{dense_sizes, Counted, ExactBlockMrc, ExactObjectMrc, Workload};
use cloudcache_engine::{Cache, CacheConfig, Mode, PolicyKind, WritePolicy};
use cloudcache_trace::Op;

fn engine_block(w: &Workload, capacity_bytes: u64) -> (u64, u64, u64, u64) {
    let mut cache = Cache::new(CacheConfig {
        capacity_bytes,
        block_size: 4096,
        mode: Mode::Block,
        policy: PolicyKind::Lru,
        write_policy: WritePolicy::WriteBack,
        ..CacheConfig::default()
    })
    .unwrap();
    for r in &w.requests {
        cache.handle(r.volume, r.op, r.offset, r.len);
    }
    let c = cache.counters();
    (c.block_hits, c.block_accesses, c.read_block_hits, c.read_block_accesses)
}

fn exact(w: &Workload) -> cloudcache_analysis::ExactMrc {
    let mut b = ExactBlockMrc::new(4096, false);
    for r in &w.requests {
        b.request(r);
    }
    b.finish()
}

/// Compare at each size: hits = hit ratio x accesses must be the engine's
/// integer counts exactly.
fn assert_equal_at(w: &Workload, sizes: &[u64]) {
    let m = exact(w);
    let all = m.curve(sizes, Counted::All);
    let reads = m.curve(sizes, Counted::Reads);
    for (i, &size) in sizes.iter().enumerate() {
        let (hits, accesses, read_hits, read_accesses) = engine_block(w, size);
        assert_eq!(accesses, m.whole.all.accesses(), "block accesses");
        let curve_hits = (all[i].hit_ratio.unwrap() * accesses as f64).round() as u64;
        assert_eq!(curve_hits, hits, "all accesses, cache of {size} bytes");
        // No reads: no read ratio.
        assert_eq!(reads[i].hit_ratio.is_none(), read_accesses == 0);
        let curve_read_hits = (reads[i].hit_ratio.unwrap_or(0.0) * read_accesses as f64).round() as u64;
        assert_eq!(curve_read_hits, read_hits, "reads, cache of {size} bytes");
    }
}

#[test]
fn exact_lru_equals_the_engine_at_every_capacity_of_a_small_trace() {
    let w = Workload::from_requests(&common::synthetic(7, 3000, 3, 150, false));
    let footprint = exact(&w).whole.footprint_blocks();
    assert!(footprint > 100);
    // Every capacity from one block to past the footprint.
    let sizes: Vec<u64> = (1..=footprint + 2).map(|b| b * 4096).collect();
    assert_equal_at(&w, &sizes);
}

#[test]
fn exact_lru_equals_the_engine_on_the_sample_trace() {
    let Some(w) = common::sample_workload() else { return };
    assert!(!w.requests.iter().any(|r| r.op == Op::Trim), "the sample has no trims");
    let m = exact(&w);
    // The dense curve's sizes, thinned to keep the test short, plus odd sizes
    // that are not whole blocks.
    let mut sizes: Vec<u64> = dense_sizes(m.footprint_bytes(), 4096).into_iter().step_by(9).collect();
    sizes.extend([4096 * 3 + 1, 1_000_000, 33_333_333]);
    assert_equal_at(&w, &sizes);
}

#[test]
fn with_trims_the_trimmed_block_is_a_miss_and_untouched_traces_agree() {
    // A trim empties a slot: the next access to the trimmed block misses in
    // both. Here no eviction happens between, so the models agree exactly.
    use cloudcache_trace::Request;
    let r = |op, block: u64| Request {
        time_ns: 0,
        volume: 0,
        op,
        offset: block * 4096,
        len: 4096,
        content: vec![],
    };
    let reqs =
        vec![r(Op::Read, 1), r(Op::Read, 2), r(Op::Trim, 1), r(Op::Read, 2), r(Op::Read, 1), r(Op::Read, 2)];
    let w = Workload::from_requests(&reqs);
    assert_equal_at(&w, &[4096, 2 * 4096, 3 * 4096]);
}

#[test]
fn object_mode_equals_the_engine_when_objects_have_one_size() {
    // Object mode is exact when every request of a key has the same length
    // and none is larger than the cache (docs/analysis.md).
    let mut reqs = common::synthetic(11, 4000, 2, 300, false);
    for r in &mut reqs {
        r.offset = r.offset / 4096 * 4096;
        r.len = 4096;
    }
    let w = Workload::from_requests(&reqs);
    let mut b = ExactObjectMrc::new();
    for r in &w.requests {
        b.request(r);
    }
    let sizes: Vec<u64> = (1..=320).map(|k| k * 4096).collect();
    let curve = b.curve(&sizes, Counted::All);
    for (p, &size) in curve.iter().zip(&sizes) {
        let mut cache = Cache::new(CacheConfig {
            capacity_bytes: size,
            mode: Mode::Object,
            policy: PolicyKind::Lru,
            ..CacheConfig::default()
        })
        .unwrap();
        for r in &w.requests {
            cache.handle(r.volume, r.op, r.offset, r.len);
        }
        let c = cache.counters();
        let hits = (p.hit_ratio.unwrap() * c.block_accesses as f64).round() as u64;
        assert_eq!(hits, c.block_hits, "object cache of {size} bytes");
    }
}

mod property {
    use super::*;
    use cloudcache_trace::Request;
    use proptest::prelude::*;

    fn request() -> impl Strategy<Value = Request> {
        (0u32..3, any::<bool>(), 0u64..40, 0u64..4096, 1u64..3 * 4096).prop_map(
            |(volume, read, block, skew, len)| Request {
                time_ns: 0,
                volume,
                op: if read { Op::Read } else { Op::Write },
                offset: block * 4096 + skew,
                len,
                content: vec![],
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Any trace without trims: the curve is the engine at every capacity.
        #[test]
        fn exact_lru_is_the_engine_at_every_capacity(reqs in prop::collection::vec(request(), 1..150)) {
            let w = Workload::from_requests(&reqs);
            let footprint = exact(&w).whole.footprint_blocks();
            let sizes: Vec<u64> = (1..=footprint + 1).map(|b| b * 4096).collect();
            assert_equal_at(&w, &sizes);
        }
    }
}
