//! On-demand allocation end to end on hand-made traces with hand-worked
//! answers: demand per window, predictions, shares, admission.

use cloudcache_demand::{PredictorKind, Spare};
use cloudcache_engine::{CacheConfig, StagingKind};
use cloudcache_sim::{
    replay_job, AllocationMethod, AllocationSpec, CompactRequest, Enforcement, Job, LoadedTrace, SimResult,
};
use cloudcache_trace::Op;

const BLOCK: u64 = 4096;
const SECOND: u64 = 1_000_000_000;

/// Three 10-second windows. Volume 0 reads blocks 0..10 twice per window;
/// volume 1 scans 50 new blocks once per window (a backup); volume 2 reads
/// two blocks in the first window only, then goes idle.
fn trace() -> LoadedTrace {
    let mut requests = Vec::new();
    let mut at = |t: u64, volume: u32, block: u64, op: Op| {
        requests.push(CompactRequest { time_ns: t, offset: block * BLOCK, len: BLOCK, volume, op });
    };
    for window in 0..3u64 {
        let base = window * 10 * SECOND;
        for pass in 0..2u64 {
            for b in 0..10 {
                at(base + pass * 4 * SECOND + b * 1000, 0, b, Op::Read);
            }
        }
        for b in 0..50 {
            at(base + 2 * SECOND + b * 1000, 1, 1000 + window * 100 + b, Op::Read);
        }
        if window == 0 {
            at(base + 3 * SECOND, 2, 7, Op::Write);
            at(base + 3 * SECOND + 1, 2, 8, Op::Read);
        }
    }
    requests.sort_by_key(|r| r.time_ns);
    LoadedTrace {
        requests,
        volume_names: vec!["hot".into(), "backup".into(), "idle".into()],
        has_timestamps: true,
        sources: Vec::new(),
    }
}

fn spec(method: AllocationMethod) -> AllocationSpec {
    AllocationSpec {
        method,
        rws_n: 1,
        window_ns: 10 * SECOND,
        predictor: PredictorKind::LastValue,
        outlier_filter: false,
        staging: StagingKind::Address,
        staging_bytes: 64 * 24,
        spare: Spare::Idle,
        enforcement: Enforcement::Strict,
    }
}

fn run(spec: AllocationSpec) -> SimResult {
    let mut config = CacheConfig { capacity_bytes: 100 * BLOCK, block_size: BLOCK, ..CacheConfig::default() };
    spec.configure(&mut config);
    config.validate().unwrap();
    replay_job(&trace(), Job { config, allocation: Some(spec), flash: None }, &|_| {})
}

#[test]
fn rwss_measures_reuse_predicts_it_and_allocates_by_it() {
    let r = run(spec(AllocationMethod::Rwss));
    assert_eq!(r.allocation, "rwss1");
    let hot = &r.volumes[0];
    assert_eq!(hot.windows.len(), 3);
    for w in &hot.windows {
        assert_eq!(w.working_set_bytes, 10 * BLOCK);
        assert_eq!(w.observed_demand_bytes, 10 * BLOCK);
    }
    // Warm-up: equal shares (100 blocks over 3 volumes: 34, 33, 33), no prediction.
    assert_eq!(hot.windows[0].predicted_demand_bytes, None);
    assert_eq!(hot.windows[0].allocated_bytes, 34 * BLOCK);
    // Then the share is the last window's RWSS (spare left idle).
    assert_eq!(hot.windows[1].predicted_demand_bytes, Some(10 * BLOCK));
    assert_eq!(hot.windows[1].allocated_bytes, 10 * BLOCK);
    // The backup's blocks are never reused: no demand, no share, nothing admitted.
    let backup = &r.volumes[1];
    assert!(backup.windows.iter().all(|w| w.observed_demand_bytes == 0));
    assert_eq!(backup.windows[1].allocated_bytes, 0);
    assert_eq!(backup.counters.flash_write_blocks, 0);
    assert_eq!(backup.counters.not_admitted, 150);
    // The hot set is admitted on its second access, then hits for good.
    assert_eq!(hot.counters.flash_write_blocks, 10);
    assert_eq!(hot.counters.block_hits, 60 - 20);
    // The idle volume keeps a sane share: zero, not negative or NaN.
    let idle = &r.volumes[2];
    assert_eq!(idle.windows[2].allocated_bytes, 0);
    assert!(idle.mean_allocated_bytes >= 0.0);
    // Mean allocation, weighted by window length (the last window ends at
    // the last request): 100 blocks in the warm-up, then 10 + 0 + 0.
    let durations: Vec<f64> = hot.windows.iter().map(|w| w.duration_seconds).collect();
    assert_eq!(&durations[..2], &[10.0, 10.0]);
    let expected_mean =
        (100.0 * 10.0 + 10.0 * 10.0 + 10.0 * durations[2]) / (20.0 + durations[2]) * BLOCK as f64;
    assert!((r.mean_allocated_bytes - expected_mean).abs() < 1.0, "{}", r.mean_allocated_bytes);
    assert_eq!(r.peak_allocated_bytes, 100 * BLOCK);
}

#[test]
fn wss_admits_the_backup_and_allocates_for_it() {
    let r = run(spec(AllocationMethod::Wss));
    let backup = &r.volumes[1];
    assert_eq!(backup.windows[1].predicted_demand_bytes, Some(50 * BLOCK));
    assert_eq!(backup.windows[1].allocated_bytes, 50 * BLOCK);
    assert_eq!(backup.counters.flash_write_blocks, 150);
    // RWSS writes far less to flash for the same hot-set hits.
    let rwss = run(spec(AllocationMethod::Rwss));
    assert!(rwss.counters.flash_write_blocks * 5 < r.counters.flash_write_blocks);
    assert!(rwss.mean_allocated_bytes < r.mean_allocated_bytes);
}

#[test]
fn strict_mode_drops_excess_and_shares_never_exceed_the_cache() {
    for method in AllocationMethod::ALL {
        for (spare, enforcement) in [
            (Spare::Idle, Enforcement::Strict),
            (Spare::Proportional, Enforcement::Gradual),
            (Spare::Proportional, Enforcement::Strict),
        ] {
            let r = run(AllocationSpec { spare, enforcement, ..spec(method) });
            for w in 0..3 {
                if method == AllocationMethod::None {
                    // One shared cache: every volume may use all of it.
                    assert!(r.volumes.iter().all(|v| v.windows[w].allocated_bytes == 100 * BLOCK));
                    continue;
                }
                let allocated: u64 = r.volumes.iter().map(|v| v.windows[w].allocated_bytes).sum();
                assert!(allocated <= 100 * BLOCK, "{method} window {w}: {allocated}");
                if enforcement == Enforcement::Strict {
                    for v in &r.volumes {
                        let window = &v.windows[w];
                        assert!(window.occupied_bytes <= window.allocated_bytes, "{method}: {window:?}");
                    }
                }
            }
            assert!(r.mean_occupied_bytes <= (100 * BLOCK) as f64);
            assert!(r.mean_allocated_bytes <= (100 * BLOCK) as f64 + 1e-6);
        }
    }
}

#[test]
fn proportional_spare_gives_all_of_the_cache_out() {
    let r = run(AllocationSpec { spare: Spare::Proportional, ..spec(AllocationMethod::Rwss) });
    for w in 1..3 {
        let allocated: u64 = r.volumes.iter().map(|v| v.windows[w].allocated_bytes).sum();
        assert_eq!(allocated, 100 * BLOCK);
    }
    // Only the hot volume has demand, so it gets everything.
    assert_eq!(r.volumes[0].windows[2].allocated_bytes, 100 * BLOCK);
}

#[test]
fn hec_and_larc_run_and_reject_the_scan() {
    let hec = run(spec(AllocationMethod::Hec));
    // Touch count: the scan's first block of each 4 MiB region is refused,
    // the rest admitted (the region was touched); HEC demand follows.
    assert!(hec.volumes[1].counters.flash_write_blocks > 0);
    let larc = run(spec(AllocationMethod::Larc));
    assert_eq!(larc.volumes[1].counters.flash_write_blocks, 0, "a one-pass scan never hits LARC's ghost");
    assert_eq!(larc.allocation, "larc");
    let none = run(spec(AllocationMethod::None));
    assert_eq!(none.volumes[0].windows[1].allocated_bytes, 100 * BLOCK);
    assert_eq!(none.counters.not_admitted, 0);
}
