//! Hand-worked sequences for MIN, M+ and C, the annotation pass, and the
//! refusal to run offline policies without it.

use cloudcache_flash::container_log::BufferOrder;
use cloudcache_flash::{FlashConfig, Geometry};
use cloudcache_offline::family::{run_family, FamilyRun};
use cloudcache_offline::placement::Placement;
use cloudcache_offline::records::DenyList;
use cloudcache_offline::{run_offline, Algorithm, BlockTrace, CacheSize, OfflineError, OfflineSpec, INF};
use cloudcache_trace::Op::{self, Read, Write};

const BLOCK: u64 = 4096;
const DAY_NS: u64 = 86_400_000_000_000;

fn trace(accesses: &[(u32, Op)]) -> BlockTrace {
    let mut t = BlockTrace::from_accesses(accesses, BLOCK, Some(DAY_NS));
    t.annotate();
    t
}

fn reads(blocks: &str) -> Vec<(u32, Op)> {
    blocks.bytes().map(|c| (u32::from(c - b'A'), Read)).collect()
}

/// One-page erase units, so FTL slots and containers are easy to follow.
fn geometry(blocks: u64) -> Geometry {
    FlashConfig {
        capacity_bytes: blocks * BLOCK,
        page_bytes: BLOCK,
        erase_unit_bytes: BLOCK,
        over_provisioning: 0.75,
    }
    .geometry()
    .unwrap()
}

fn run(
    t: &BlockTrace,
    cap: u32,
    dram: u32,
    deny: Option<&DenyList>,
    trim: bool,
) -> cloudcache_offline::family::FamilyOutcome {
    let g = geometry(u64::from(cap));
    let placement = Placement::ftl(g, t.distinct_blocks(), trim).unwrap();
    run_family(
        t,
        FamilyRun { name: "test", flash_blocks: cap, dram_blocks: dram, deny, mirror: None, placement },
        &|_| {},
    )
    .unwrap()
}

#[test]
fn annotation_points_at_the_next_read_or_inf() {
    // A B A(w) A B : A's next access after 0 is a write -> INF.
    let t = trace(&[(0, Read), (1, Read), (0, Write), (0, Read), (1, Read)]);
    let next: Vec<u32> = t.accesses().iter().map(|a| a.next_read()).collect();
    assert_eq!(next, vec![INF, 4, 3, INF, INF]);
}

#[test]
fn read_around_beats_demand_fetch_on_the_seeds_example() {
    // Seed 002 §6.1: two slots, A,B,C,A,B,D repeated. Demand fetch (LRU)
    // misses every time; read-around MIN never inserts C or D and hits A
    // and B every time after the first: 2/3 in the steady state.
    let seq = reads(&"ABCABD".repeat(10));
    let t = trace(&seq);
    let min = run(&t, 2, 0, None, false);
    assert_eq!(min.counters.reads, 60);
    // Misses: first A and B, every C and D (20).
    assert_eq!(min.counters.flash_hits, 38);
    assert_eq!(min.counters.insertions, 2, "only A and B are ever inserted");

    let mut spec = OfflineSpec {
        algorithms: vec![Algorithm::Lru, Algorithm::Min],
        cache_sizes: vec![CacheSize::Bytes(2 * BLOCK)],
        erase_unit_bytes: BLOCK,
        over_provisioning: 0.6,
        dram_fraction: 0.0,
        ..OfflineSpec::default()
    };
    let report = run_offline(&t, &spec, &|_| {}).unwrap();
    assert_eq!(report.results[0].algorithm, "lru");
    assert_eq!(report.results[0].read_hit_ratio, 0.0, "LRU with 2 slots on a 3-cycle never hits");
    assert!((report.results[1].read_hit_ratio - 38.0 / 60.0).abs() < 1e-12);
    spec.algorithms = vec![Algorithm::C];
    spec.write_buffer_units = 1;
    let c = run_offline(&t, &spec, &|_| {}).unwrap();
    assert!((c.results[0].read_hit_ratio - 38.0 / 60.0).abs() < 1e-12, "C reaches MIN's hit ratio");
}

#[test]
fn m_plus_drops_the_insertion_min_wastes() {
    // One slot: A B C B A. MIN inserts A (read at 4), then B (read at 3,
    // sooner) evicts A before A's read: A's insertion absorbed nothing.
    // M+ skips it: the same hit with one write fewer.
    let t = trace(&reads("ABCBA"));
    let min = run(&t, 1, 0, None, false);
    assert_eq!((min.counters.insertions, min.counters.flash_hits), (2, 1));
    assert_eq!(min.records[0].position, 0);
    assert_eq!((min.records[0].hits, min.records[0].end), (0, 1));
    assert_eq!((min.records[1].hits, min.records[1].last_hit), (1, 3));
    let deny = DenyList::fewer_hits_than(&min.records, 1);
    assert_eq!(deny.positions(), &[0]);
    let plus = run(&t, 1, 0, Some(&deny), true);
    assert_eq!((plus.counters.insertions, plus.counters.flash_hits, plus.counters.denied), (1, 1, 1));
    assert_eq!(plus.counters.flash.host_writes, 1);
}

#[test]
fn dead_writes_and_dram_hits_do_not_reach_flash() {
    // A written twice then read: the first write is dead (overwritten
    // before any read) and is not inserted; the second is.
    let t = trace(&[(0, Write), (0, Write), (0, Read)]);
    let min = run(&t, 1, 0, None, false);
    assert_eq!(min.counters.insertions, 1);
    assert_eq!(min.records[0].position, 1);
    // With one DRAM block, A A is served by DRAM the second time: MIN
    // still inserts A in flash, but the insertion absorbs no flash hit,
    // so M+ drops it (read-around into DRAM only).
    let t = trace(&reads("AA"));
    let min = run(&t, 1, 1, None, false);
    assert_eq!((min.counters.dram_hits, min.counters.flash_hits, min.counters.insertions), (1, 0, 1));
    let plus = run(&t, 1, 1, Some(&DenyList::fewer_hits_than(&min.records, 1)), true);
    assert_eq!((plus.counters.dram_hits, plus.counters.insertions), (1, 0));
}

#[test]
fn without_trim_the_ftl_copies_dead_blocks() {
    // Blocks read twice each, far apart, in a cache that never fills: every
    // block dies after its second read. Without TRIM the FTL still holds
    // them and GC copies them; with TRIM it copies nothing.
    let mut seq = Vec::new();
    for round in 0..50u32 {
        let base = round * 4;
        for b in base..base + 4 {
            seq.push((b, Read));
        }
        for b in base..base + 4 {
            seq.push((b, Read));
        }
    }
    let t = trace(&seq);
    let untrimmed = run(&t, 16, 0, None, false);
    let trimmed = run(&t, 16, 0, None, true);
    assert_eq!(untrimmed.counters.flash_hits, trimmed.counters.flash_hits);
    assert_eq!(trimmed.counters.flash.copy_forward_writes, 0);
    assert!(untrimmed.counters.flash.copy_forward_writes >= trimmed.counters.flash.copy_forward_writes);
}

#[test]
fn c_packs_by_eviction_time_and_copies_nothing_that_will_not_be_read() {
    // Two-block containers, a one-container write buffer. Blocks 0..7 are
    // read twice: block i again after 2i more accesses, so they die in
    // insertion order only if packed by eviction time.
    let mut seq = Vec::new();
    for round in 0..30u32 {
        let base = round * 8;
        // Interleave soon-read (even) and late-read (odd) blocks.
        for b in base..base + 8 {
            seq.push((b, Read));
        }
        for b in (base..base + 8).step_by(2) {
            seq.push((b, Read));
        }
        for b in (base + 1..base + 8).step_by(2) {
            seq.push((b, Read));
        }
    }
    let t = trace(&seq);
    let spec = |algorithms| OfflineSpec {
        algorithms,
        cache_sizes: vec![CacheSize::Bytes(8 * BLOCK)],
        erase_unit_bytes: 2 * BLOCK,
        over_provisioning: 0.5,
        write_buffer_units: 1,
        dram_fraction: 0.0,
        ..OfflineSpec::default()
    };
    let r =
        run_offline(&t, &spec(vec![Algorithm::MPlus, Algorithm::C, Algorithm::CArrival]), &|_| {}).unwrap();
    let (plus, c, arrival) = (&r.results[0], &r.results[1], &r.results[2]);
    assert_eq!(plus.read_hit_ratio, c.read_hit_ratio);
    assert_eq!(c.read_hit_ratio, arrival.read_hit_ratio);
    assert_eq!(c.ghost_hits, 0);
    assert_eq!(arrival.ghost_hits, 0);
    assert_eq!(c.copy_forward_blocks, 0, "eviction-time packing leaves whole containers dead");
    assert!(c.erasures <= arrival.erasures);
}

#[test]
fn offline_policies_refuse_an_unannotated_trace() {
    let t = BlockTrace::from_accesses(&reads("ABAB"), BLOCK, Some(DAY_NS));
    let g = geometry(2);
    let placement = Placement::ftl(g, t.distinct_blocks(), false).unwrap();
    let err = run_family(
        &t,
        FamilyRun { name: "min", flash_blocks: 2, dram_blocks: 0, deny: None, mirror: None, placement },
        &|_| {},
    )
    .unwrap_err();
    assert!(matches!(err, OfflineError::NotAnnotated(_)));
    assert!(err.to_string().contains("min needs future knowledge"), "{err}");
    let spec = OfflineSpec {
        algorithms: vec![Algorithm::Lru, Algorithm::CN(5)],
        cache_sizes: vec![CacheSize::Bytes(2 * BLOCK)],
        erase_unit_bytes: BLOCK,
        over_provisioning: 0.6,
        ..OfflineSpec::default()
    };
    let err = run_offline(&t, &spec, &|_| {}).unwrap_err().to_string();
    assert!(err.contains("c5 needs future knowledge"), "{err}");
    // Online policies alone run without it.
    let spec = OfflineSpec { algorithms: vec![Algorithm::Lru, Algorithm::Ripq], ..spec };
    assert!(run_offline(&t, &spec, &|_| {}).is_ok());
}

#[test]
fn bad_settings_are_named() {
    let t = trace(&reads("ABAB"));
    let base = OfflineSpec { cache_sizes: vec![CacheSize::Bytes(64 << 20)], ..OfflineSpec::default() };
    let err = |spec: OfflineSpec| run_offline(&t, &spec, &|_| {}).unwrap_err().to_string();
    let e = err(OfflineSpec { algorithms: vec![Algorithm::MT], erasure_budget: Some(0.0), ..base.clone() });
    assert!(e.contains("erasure budget 0 EPBPD"), "{e}");
    let e = err(OfflineSpec { algorithms: vec![Algorithm::MT], ..base.clone() });
    assert!(e.contains("need an erasure budget"), "{e}");
    let e = err(OfflineSpec { over_provisioning: 1.5, ..base.clone() });
    assert!(e.contains("over-provisioning 1.5 is outside (0, 1)"), "{e}");
    let e = err(OfflineSpec { erase_unit_bytes: 3 * 1024, ..base.clone() });
    assert!(e.contains("not a positive multiple of the block size"), "{e}");
    let e = err(OfflineSpec { cache_sizes: vec![CacheSize::Bytes(4 << 20)], ..base.clone() });
    assert!(e.contains("too little spare space"), "{e}");
    assert!("m0".parse::<Algorithm>().is_err());
    assert_eq!("c_5".parse::<Algorithm>().unwrap(), Algorithm::CN(5));
    assert_eq!("M+".parse::<Algorithm>().unwrap(), Algorithm::MPlus);
}

#[test]
fn budget_cut_removes_lowest_reuse_first() {
    use cloudcache_offline::records::InsertRecord;
    let rec = |position, hits| InsertRecord { position, hits, end: INF, last_hit: INF };
    let records = [rec(0, 2), rec(1, 1), rec(2, 3), rec(3, 1), rec(4, 2), rec(5, 1)];
    // I = 6, I' = 2: remove the three 1-hit insertions (R = 2 after them) and
    // the first 2-hit one (L = 1).
    let (deny, r, l) = DenyList::budget(&records, 2);
    assert_eq!((r, l), (2, 1));
    assert_eq!(deny.positions(), &[0, 1, 3, 5]);
    let (deny, _, _) = DenyList::budget(&records, 6);
    assert!(deny.is_empty());
}

#[test]
fn log_placement_of_lru_writes_whole_containers() {
    let t = trace(&reads(&"ABCDEFGH".repeat(20)));
    let g = geometry(4);
    let p = Placement::log(g, t.distinct_blocks(), 1, BufferOrder::Arrival, false).unwrap();
    let c = cloudcache_offline::online::run_lru(&t, 4, 0, p, &|_| {});
    assert_eq!(c.flash_hits, 0);
    assert_eq!(c.flash.copy_forward_writes, 0, "FIFO-dying pages leave whole units dead");
}
