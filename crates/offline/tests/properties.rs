//! Properties of the offline family on random block streams: MIN (with
//! read-around, no DRAM) hits at least as often as any online policy; C and
//! its ablations make exactly the decisions of the M run they mirror (same
//! hit ratio, and never a hit on a block the device dropped); counters add up.

use cloudcache_offline::{run_offline, Algorithm, BlockTrace, CacheSize, OfflineSpec};
use cloudcache_trace::Op;
use proptest::prelude::*;

const BLOCK: u64 = 4096;

fn stream() -> impl Strategy<Value = Vec<(u32, Op)>> {
    let op = prop_oneof![6 => Just(Op::Read), 3 => Just(Op::Write), 1 => Just(Op::Trim)];
    // Skewed block choice: a small hot set and a wider cold range.
    let block = prop_oneof![3 => 0u32..12, 2 => 0u32..120];
    prop::collection::vec((block, op), 50..1500)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn c_mirrors_m_plus_and_min_bounds_online(accesses in stream(), cap in 8u64..40, dram in prop::bool::ANY) {
        let mut t = BlockTrace::from_accesses(&accesses, BLOCK, Some(86_400_000_000_000));
        t.annotate();
        let spec = OfflineSpec {
            algorithms: vec![
                Algorithm::Lru, Algorithm::Ripq, Algorithm::LruLog, Algorithm::Min, Algorithm::MinTrim,
                Algorithm::MPlus, Algorithm::C, Algorithm::CArrival, Algorithm::CNoCfr,
                Algorithm::MN(2), Algorithm::CN(2), Algorithm::MT, Algorithm::CT,
            ],
            cache_sizes: vec![CacheSize::Bytes(cap * BLOCK)],
            erase_unit_bytes: 2 * BLOCK,
            over_provisioning: 0.5,
            write_buffer_units: 2,
            dram_fraction: if dram { 0.2 } else { 0.0 },
            erasure_budget: Some(0.5),
            ..OfflineSpec::default()
        };
        let report = run_offline(&t, &spec, &|_| {}).unwrap();
        let by = |name: &str| report.results.iter().find(|r| r.algorithm == name).unwrap();
        for r in &report.results {
            prop_assert_eq!(r.ghost_hits, 0, "{} hit a block its device dropped", r.algorithm);
            prop_assert!(r.write_amplification >= 1.0);
            prop_assert!(r.read_hit_ratio >= 0.0 && r.read_hit_ratio <= 1.0);
        }
        for (c, m) in [("c", "m+"), ("c-arrival", "m+"), ("c-nocfr", "m+"), ("c2", "m2"), ("ct", "mt")] {
            prop_assert_eq!(by(c).read_hit_ratio, by(m).read_hit_ratio, "{} mirrors {}", c, m);
            prop_assert_eq!(by(c).insertions, by(m).insertions);
        }
        prop_assert_eq!(by("min").read_hit_ratio, by("min-trim").read_hit_ratio);
        if !dram {
            for online in ["lru", "ripq", "lru-log"] {
                prop_assert!(by("min").read_hit_ratio >= by(online).read_hit_ratio, "min vs {}", online);
            }
        }
    }
}
