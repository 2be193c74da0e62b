//! `sim` with a flash device model: every policy's flash writes, evictions
//! and invalidations reach the device, on the real sample trace and on a
//! hand-made one.

use std::path::{Path, PathBuf};

use cloudcache_demand::{PredictorKind, Spare};
use cloudcache_engine::{CacheConfig, Mode, PolicyKind, StagingKind, WritePolicy};
use cloudcache_sim::{
    run_sweep, AllocationMethod, AllocationSpec, CompactRequest, Enforcement, FlashModel, FlashPlacement,
    FlashSpec, LoadedTrace, SimResult, SweepSpec,
};
use cloudcache_trace::{Op, OpenOptions};

const KIB: u64 = 1024;
const MIB: u64 = 1 << 20;

fn sample() -> Option<LoadedTrace> {
    let path: PathBuf =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/cloudPhysicsIO.vscsi");
    if !path.exists() {
        eprintln!("skipped: sample trace {} not found", path.display());
        return None;
    }
    Some(LoadedTrace::load(&[path], &OpenOptions::default(), &|_| {}).expect("sample trace loads"))
}

/// 128 KiB erase units, so a 16 MiB cache has 138 of them.
fn flash(placement: FlashPlacement) -> FlashSpec {
    FlashSpec { erase_unit_bytes: 128 * KIB, ..FlashSpec::new(placement) }
}

fn sweep(policies: &[PolicyKind], write_policy: WritePolicy, flash: Option<FlashSpec>) -> SweepSpec {
    SweepSpec {
        policies: policies.to_vec(),
        cache_sizes: vec![16 * MIB],
        block_size: 4096,
        mode: Mode::Block,
        write_policy,
        dirty_high_watermark: None,
        dirty_low_watermark: None,
        allocations: Vec::new(),
        flash,
    }
}

fn run(trace: &LoadedTrace, spec: &SweepSpec) -> Vec<SimResult> {
    run_sweep(trace, spec, &|_| {}).expect("valid sweep")
}

#[test]
fn lru_and_s3fifo_report_wear_on_the_ftl() {
    let Some(trace) = sample() else { return };
    let policies = [PolicyKind::Lru, PolicyKind::S3Fifo];
    let with = run(&trace, &sweep(&policies, WritePolicy::WriteBack, Some(flash(FlashPlacement::Ftl))));
    let without = run(&trace, &sweep(&policies, WritePolicy::WriteBack, None));
    let (first, last) = trace.time_span_ns().unwrap();
    let days = (last - first) as f64 / 86_400e9;
    for (r, plain) in with.iter().zip(&without) {
        let f = r.flash.as_ref().expect("flash results with a model");
        assert!(plain.flash.is_none());
        // The model watches; it never changes the cache's decisions.
        assert_eq!(r.counters, plain.counters, "{}", r.policy);
        assert!(f.erasures > 0, "{}: a 16 MiB cache over a 1 GiB footprint erases", r.policy);
        assert!(f.write_amplification > 1.0, "{}: greedy GC copies on a full FTL", r.policy);
        // On the FTL every FlashWrite is programmed at once.
        assert_eq!(f.flash_programmed_blocks, r.counters.flash_write_blocks);
        assert_eq!(f.ghost_reads, 0, "{}: a flash hit on a page the device does not hold", r.policy);
        let epbpd = f.erasures as f64 / (f64::from(f.erase_units) * days);
        assert!((f.epbpd.unwrap() - epbpd).abs() < 1e-9 * epbpd);
        let fue =
            r.counters.flash_read_blocks as f64 / (f.flash_programmed_blocks + f.copy_forward_blocks) as f64;
        assert!((f.fue.unwrap() - fue).abs() < 1e-12);
        assert!((f.endurance_days.unwrap() - 3000.0 / epbpd).abs() < 1e-6 * f.endurance_days.unwrap());
    }
    let json = serde_json::to_value(&with[0]).unwrap();
    for field in ["erasures", "epbpd", "write_amplification", "fue", "endurance_days", "copy_forward_blocks"]
    {
        assert!(json.get(field).is_some(), "result JSON lacks {field}");
    }
    let plain_json = serde_json::to_value(&without[0]).unwrap();
    assert!(plain_json.get("erasures").is_none(), "no flash fields without a model");
    // S3-FIFO and LRU place blocks differently, so they wear the flash differently.
    assert_ne!(with[0].flash.as_ref().unwrap().erasures, with[1].flash.as_ref().unwrap().erasures);
}

#[test]
fn log_placement_wears_differently_from_the_ftl() {
    let Some(trace) = sample() else { return };
    let ftl =
        run(&trace, &sweep(&[PolicyKind::Lru], WritePolicy::WriteBack, Some(flash(FlashPlacement::Ftl))));
    let log =
        run(&trace, &sweep(&[PolicyKind::Lru], WritePolicy::WriteBack, Some(flash(FlashPlacement::Log))));
    let (ftl, log) = (ftl[0].flash.as_ref().unwrap(), log[0].flash.as_ref().unwrap());
    assert_eq!(log.flash_model, "log");
    assert_ne!(ftl.erasures, log.erasures);
    assert!(log.erasures > 0 && log.write_amplification >= 1.0);
    assert_eq!(log.ghost_reads, 0);
    // Blocks evicted while in the write buffer never reach flash.
    assert!(log.flash_programmed_blocks < ftl.flash_programmed_blocks);
}

/// RWSS allocation with strict shares and idle spare space: shares below
/// the capacity leave slots free for whole windows, and without TRIM the FTL
/// keeps copying their dead content forward.
#[test]
fn allocation_runs_feed_the_model_and_trim_matters_there() {
    let Some(trace) = sample() else { return };
    let runs: Vec<SimResult> = [true, false]
        .into_iter()
        .map(|trim| {
            let model = FlashSpec { trim, ..flash(FlashPlacement::Ftl) };
            let mut spec = sweep(&[PolicyKind::Lru], WritePolicy::WriteBack, Some(model));
            spec.allocations = vec![AllocationSpec {
                method: AllocationMethod::Rwss,
                rws_n: 1,
                window_ns: 600 * 1_000_000_000,
                predictor: PredictorKind::ExpSelfTuning,
                outlier_filter: true,
                staging: StagingKind::Hybrid,
                staging_bytes: 4 * MIB,
                spare: Spare::Idle,
                enforcement: Enforcement::Strict,
            }];
            run(&trace, &spec).remove(0)
        })
        .collect();
    for r in &runs {
        let f = r.flash.as_ref().unwrap();
        assert_eq!(r.allocation, "rwss1");
        assert!(f.erasures > 0 && f.write_amplification >= 1.0);
        assert_eq!(f.ghost_reads, 0);
        assert_eq!(f.flash_programmed_blocks, r.counters.flash_write_blocks);
    }
    assert_eq!(runs[0].counters, runs[1].counters);
    let (with, without) = (runs[0].flash.as_ref().unwrap(), runs[1].flash.as_ref().unwrap());
    assert!(with.trim && !without.trim);
    assert!(with.flash_trims > 0 && without.flash_trims == 0);
    assert!(
        without.write_amplification > with.write_amplification,
        "no TRIM {} vs TRIM {}",
        without.write_amplification,
        with.write_amplification
    );
    assert!(without.erasures > with.erasures);
}

/// 64 blocks read into a 64-block cache, then all rewritten under
/// write-invalidate: 64 invalidations. With TRIM the device holds nothing
/// valid afterwards; without it, all 64 pages stay valid.
#[test]
fn invalidations_trim_the_slots_they_free() {
    let mut requests = Vec::new();
    for (i, op) in [Op::Read, Op::Write].into_iter().enumerate() {
        for b in 0..64u64 {
            let time_ns = (i as u64 * 64 + b) * 1_000_000;
            requests.push(CompactRequest { time_ns, offset: b * 4096, len: 4096, volume: 0, op });
        }
    }
    let trace =
        LoadedTrace { requests, volume_names: vec!["v".into()], has_timestamps: true, sources: Vec::new() };
    let config = CacheConfig {
        capacity_bytes: 64 * 4096,
        block_size: 4096,
        write_policy: WritePolicy::WriteInvalidate,
        record_actions: true,
        ..CacheConfig::default()
    };
    for trim in [true, false] {
        // 64 logical pages, 25 % spare: 86 pages = 11 units of 8.
        let spec = FlashSpec {
            erase_unit_bytes: 32 * KIB,
            over_provisioning: 0.25,
            trim,
            ..FlashSpec::new(FlashPlacement::Ftl)
        };
        let mut model = FlashModel::new(spec, &config).unwrap();
        let mut cache = cloudcache_engine::Cache::new(config.clone()).unwrap();
        for r in &trace.requests {
            cache.handle(r.volume, r.op, r.offset, r.len);
            model.apply(cache.actions());
        }
        let stats = model.stats();
        assert_eq!(stats.host_writes, 64);
        assert_eq!(stats.valid_pages, if trim { 0 } else { 64 });
        assert_eq!(stats.trims, if trim { 64 } else { 0 });
        assert_eq!(stats.erasures, 0, "64 pages fit in 8 of 11 units");
    }
}

#[test]
fn object_mode_and_cramped_devices_are_refused() {
    let mut spec =
        sweep(&[PolicyKind::Lru], WritePolicy::WriteBack, Some(FlashSpec::new(FlashPlacement::Ftl)));
    spec.mode = Mode::Object;
    let err = spec.jobs(0).unwrap_err().to_string();
    assert!(err.contains("block mode"), "{err}");
    // 8 MiB on 2 MiB erase units: 5 units, too few for GC.
    let mut spec =
        sweep(&[PolicyKind::Lru], WritePolicy::WriteBack, Some(FlashSpec::new(FlashPlacement::Ftl)));
    spec.cache_sizes = vec![8 * MIB];
    let err = spec.jobs(0).unwrap_err().to_string();
    assert!(err.contains("8MiB") && err.contains("spare space"), "{err}");
}
