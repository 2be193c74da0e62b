//! Tests of the synthetic workload generator: determinism, statistics of a
//! small workload against its config, config errors, and the embedded demo.

use std::collections::HashMap;

use cloudcache_trace::synth::{self, SynthConfig, SynthSource, DEMO_CONFIG};
use cloudcache_trace::{Op, Request, RequestSource};

const SEC: u64 = 1_000_000_000;
const HOUR: u64 = 3_600 * SEC;
const DAY: u64 = 24 * HOUR;

fn source(toml: &str) -> SynthSource {
    let config = SynthConfig::from_toml_str(toml).unwrap_or_else(|e| panic!("config rejected: {e}"));
    synth::open(&config).unwrap()
}

fn collect(src: &mut SynthSource, limit: usize) -> Vec<Request> {
    let mut out = Vec::new();
    let mut req = Request::default();
    while out.len() < limit && src.next_request(&mut req).unwrap() {
        out.push(req.clone());
    }
    out
}

/// FNV-1a over every field, so the value is the same on every platform.
fn digest(reqs: &[Request]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |x: u64| {
        for b in x.to_le_bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for r in reqs {
        eat(r.time_ns);
        eat(u64::from(r.volume));
        eat(r.op as u64);
        eat(r.offset);
        eat(r.len);
    }
    h
}

fn with_seed(seed: u64) -> String {
    DEMO_CONFIG.replacen("seed = 1", &format!("seed = {seed}"), 1)
}

#[test]
fn same_seed_same_requests_different_seed_different() {
    let a = digest(&collect(&mut source(&with_seed(7)), 100_000));
    let b = digest(&collect(&mut source(&with_seed(7)), 100_000));
    let c = digest(&collect(&mut source(&with_seed(8)), 100_000));
    assert_eq!(a, b);
    assert_ne!(a, c);
}

/// Pins the demo's first requests, so a platform or dependency change that
/// alters the trace is caught. If you changed the generator on purpose,
/// update the value (and say so: old result files no longer reproduce).
#[test]
fn demo_trace_is_pinned() {
    let reqs = collect(&mut source(DEMO_CONFIG), 10_000);
    assert_eq!(reqs.len(), 10_000);
    assert_eq!(digest(&reqs), 14_925_767_118_723_555_631, "demo trace changed; see the comment on this test");
}

#[test]
fn editing_one_vm_leaves_the_others_alone() {
    let base = "seed = 3\nduration = \"1d\"\n\
        [[vm]]\nname = \"a\"\ndisk = \"1GiB\"\niops = 0.5\n\
        [[vm]]\nname = \"b\"\ndisk = \"1GiB\"\niops = 0.5\n";
    let edited = base.replacen("iops = 0.5", "iops = 2.0", 1);
    let only_b = |toml: &str| {
        let reqs = collect(&mut source(toml), usize::MAX);
        reqs.into_iter().filter(|r| r.volume == 1).collect::<Vec<_>>()
    };
    assert_eq!(only_b(base), only_b(&edited));
}

const SMALL: &str = r#"
seed = 11
duration = "2d"

[[vm]]
name = "web"
disk = "2GiB"
iops = 5
read_ratio = 0.3
request_size = [{ size = "4KiB", weight = 3 }, { size = "16KiB", weight = 1 }]
[vm.hot]
size = "5%"
exponent = 0.9
share = 0.8

[[vm]]
name = "flat"
disk = "1GiB"
iops = 2
read_ratio = 0.9
"#;

#[test]
fn small_workload_matches_its_config() {
    let mut src = source(SMALL);
    let reqs = collect(&mut src, usize::MAX);
    let disks = src.disk_sizes();
    assert_eq!(src.volumes().names(), ["web", "flat"]);

    let mut count = [0u64; 2];
    let mut reads = [0u64; 2];
    let mut hot = 0u64;
    let mut small = 0u64;
    let mut last = 0;
    for r in &reqs {
        assert!(r.time_ns >= last, "requests out of time order");
        last = r.time_ns;
        assert!(r.time_ns < 2 * DAY);
        assert!(r.len > 0 && r.offset % 4096 == 0 && r.len % 4096 == 0);
        assert!(r.end() <= disks[r.volume as usize], "request past the disk: {r:?}");
        let v = r.volume as usize;
        count[v] += 1;
        reads[v] += u64::from(r.op == Op::Read);
        if v == 0 {
            hot += u64::from(src.in_hot_set(0, r.time_ns, r.offset));
            small += u64::from(r.len == 4096);
        }
    }
    // Poisson counts: mean rate x duration, sd = sqrt(mean) (~900 and ~590).
    let expect = [5.0 * 172_800.0, 2.0 * 172_800.0];
    for v in 0..2 {
        let n = count[v] as f64;
        assert!(
            (n - expect[v]).abs() < 5.0 * expect[v].sqrt(),
            "vm {v}: {n} requests, expected {}",
            expect[v]
        );
    }
    let ratio = |a: u64, b: u64| a as f64 / b as f64;
    assert!((ratio(reads[0], count[0]) - 0.3).abs() < 0.01);
    assert!((ratio(reads[1], count[1]) - 0.9).abs() < 0.01);
    assert!((ratio(hot, count[0]) - 0.8).abs() < 0.01, "hot share {}", ratio(hot, count[0]));
    assert!((ratio(small, count[0]) - 0.75).abs() < 0.01);
    // No hot set: never hot.
    assert!(!src.in_hot_set(1, 0, 0));
    let expected = SynthConfig::from_toml_str(SMALL).unwrap().expected_requests();
    assert!((expected - (expect[0] + expect[1])).abs() < 1.0);
}

#[test]
fn hot_set_is_scattered_and_skewed() {
    let toml = r#"
        duration = "1d"
        [[vm]]
        name = "v"
        disk = "1GiB"
        iops = 20
        [vm.hot]
        size = "64MiB"
        extent = "64KiB"
        exponent = 1.0
        share = 1.0
    "#;
    let mut src = source(toml);
    let reqs = collect(&mut src, usize::MAX);
    let mut per_extent: HashMap<u64, u64> = HashMap::new();
    for r in &reqs {
        assert!(src.in_hot_set(0, r.time_ns, r.offset));
        *per_extent.entry(r.offset / 65_536).or_default() += 1;
    }
    // Scattered: hot extents spread over the whole disk, not one run.
    let hot: Vec<u64> = (0..16_384).filter(|&e| src.in_hot_set(0, 0, e * 65_536)).collect();
    assert_eq!(hot.len(), 1024);
    assert!(hot.iter().filter(|&&e| e < 8192).count().abs_diff(512) < 80);
    let runs = hot.windows(2).filter(|w| w[1] != w[0] + 1).count();
    assert!(runs > 800, "hot extents look contiguous ({runs} breaks)");
    // Skewed: with s = 1 over 1024 extents the hottest gets 1/H(1024) = 13%.
    let top = *per_extent.values().max().unwrap() as f64 / reqs.len() as f64;
    assert!((top - 0.133).abs() < 0.01, "top extent share {top}");
}

#[test]
fn hot_set_shifts_by_the_configured_fraction() {
    let toml = r#"
        duration = "2d"
        [[vm]]
        name = "v"
        disk = "1GiB"
        iops = 1
        [vm.hot]
        size = "128MiB"
        extent = "64KiB"
        shift_every = "12h"
        shift_fraction = 0.25
    "#;
    let src = source(toml);
    let hot_at = |t: u64| -> Vec<bool> { (0..16_384).map(|e| src.in_hot_set(0, t, e * 65_536)).collect() };
    let (a, b, c) = (hot_at(HOUR), hot_at(11 * HOUR), hot_at(13 * HOUR));
    assert_eq!(a, b, "hot set moved inside one epoch");
    let kept = a.iter().zip(&c).filter(|(x, y)| **x && **y).count();
    assert_eq!(c.iter().filter(|&&x| x).count(), 2048);
    assert_eq!(kept, 2048 - 512);
}

#[test]
fn backups_run_on_schedule_over_their_range_in_order() {
    let toml = r#"
        duration = "3d"
        [[vm]]
        name = "b"
        disk = "4GiB"
        iops = 0
        [[vm.backup]]
        every = "1d"
        at = "2h"
        start = "1GiB"
        size = "1GiB"
        request_size = "256KiB"
        throughput = "100MiB/s"
    "#;
    let reqs = collect(&mut source(toml), usize::MAX);
    let per_run = 4096;
    assert_eq!(reqs.len(), 3 * per_run);
    for (run, chunk) in reqs.chunks(per_run).enumerate() {
        let t0 = (run as u64 * 24 + 2) * HOUR;
        assert_eq!(chunk[0].time_ns, t0, "run {run} starts late or early");
        for (i, r) in chunk.iter().enumerate() {
            assert_eq!(r.op, Op::Read);
            assert_eq!(r.offset, (1 << 30) + i as u64 * 262_144);
            assert_eq!(r.len, 262_144);
            // 256 KiB at 100 MiB/s = 2.5 ms apart.
            assert_eq!(r.time_ns, t0 + i as u64 * 2_500_000);
        }
    }
}

#[test]
fn partial_and_poisson_scans() {
    let toml = r#"
        duration = "20d"
        [[vm]]
        name = "s"
        disk = "8GiB"
        iops = 0
        [[vm.scan]]
        every = "4h"
        poisson = true
        size = "50%"
        length = "64MiB"
        request_size = "1MiB"
        throughput = "1GiB/s"
    "#;
    let reqs = collect(&mut source(toml), usize::MAX);
    assert_eq!(reqs.len() % 64, 0);
    let runs = reqs.len() / 64;
    // 120 runs expected, Poisson sd ~11.
    assert!((runs as i64 - 120).abs() < 40, "{runs} runs");
    let mut starts = Vec::new();
    for run in reqs.chunks(64) {
        for w in run.windows(2) {
            assert_eq!(w[1].offset, w[0].offset + (1 << 20));
        }
        assert!(run[63].end() <= 4 << 30);
        starts.push(run[0].offset);
    }
    starts.sort_unstable();
    starts.dedup();
    assert!(starts.len() > runs * 9 / 10, "partial scans should start at random places");
}

#[test]
fn diurnal_peak_and_trough() {
    let toml = r#"
        duration = "6d"
        [[vm]]
        name = "d"
        disk = "1GiB"
        iops = 4
        [vm.diurnal]
        amplitude = 0.5
        peak_hour = 14
    "#;
    let reqs = collect(&mut source(toml), usize::MAX);
    let (mut peak, mut trough) = (0u64, 0u64);
    for r in &reqs {
        let hour = (r.time_ns % DAY) / HOUR;
        peak += u64::from((13..15).contains(&hour));
        trough += u64::from((1..3).contains(&hour));
    }
    // Mean of cos over +-15 degrees is 0.9886: ratio (1 + 0.494) / (1 - 0.494).
    let ratio = peak as f64 / trough as f64;
    assert!((ratio - 2.955).abs() < 0.25, "peak/trough {ratio}");
    // The daily mean is the configured rate.
    let n = reqs.len() as f64;
    let expect = 4.0 * 6.0 * 86_400.0;
    assert!((n - expect).abs() < 5.0 * expect.sqrt(), "{n} vs {expect}");
}

#[test]
fn start_time_shifts_the_clock() {
    let toml = r#"
        duration = "1h"
        start_time = 2016-01-04T00:00:00Z
        [[vm]]
        name = "v"
        disk = "1GiB"
        iops = 1
    "#;
    let reqs = collect(&mut source(toml), usize::MAX);
    let t0 = 1_451_865_600 * SEC;
    assert!(reqs.iter().all(|r| r.time_ns >= t0 && r.time_ns < t0 + HOUR));
}

fn error_of(toml: &str) -> String {
    match SynthConfig::from_toml_str(toml) {
        Ok(_) => panic!("config accepted:\n{toml}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn config_errors_name_the_key() {
    let vm = "duration = \"1d\"\n[[vm]]\nname = \"web1\"\ndisk = \"1GiB\"\niops = 1\n";
    let cases: &[(String, &[&str])] = &[
        (format!("{vm}iopz = 3\n"), &["iopz", "line 6"]),
        (vm.replace("\"1GiB\"", "\"12XB\""), &["XB", "line 4"]),
        (vm.replace("\"1d\"", "\"3 fortnights\""), &["fortnights", "line 1"]),
        (vm.replace("duration = \"1d\"", "seed = 1"), &["duration"]),
        (format!("{vm}read_ratio = 1.5\n"), &["web1", "read_ratio"]),
        (vm.replace("iops = 1", "iops = -2"), &["web1", "iops"]),
        (vm.replace("\"1GiB\"", "0"), &["web1", "disk"]),
        (format!("{vm}[vm.hot]\nsize = \"2GiB\"\n"), &["web1", "hot.size"]),
        (format!("{vm}[vm.hot]\nsize = 1.5\n"), &["fraction", "line 7"]),
        (format!("{vm}[vm.hot]\nsize = \"1MiB\"\nshare = 2\n"), &["web1", "hot.share"]),
        (format!("{vm}[vm.diurnal]\namplitude = 0.5\npeak_hour = 25\n"), &["web1", "peak_hour"]),
        (format!("{vm}[[vm.scan]]\nlength = \"1MiB\"\n"), &["web1", "scan #1", "every"]),
        (format!("{vm}[[vm.backup]]\nstart = \"2GiB\"\n"), &["web1", "backup #1", "start"]),
        (format!("{vm}request_size = \"6KiB\"\n"), &["web1", "request_size", "multiple"]),
        (format!("{vm}[[vm.scan]]\nevery = \"1h\"\nop = \"erase\"\n"), &["erase", "line 8"]),
        (format!("{vm}[[vm]]\nname = \"web1\"\ndisk = \"1GiB\"\niops = 1\n"), &["web1", "twice"]),
        ("duration = \"1d\"\n".to_string(), &["no VMs"]),
        (vm.replace("\"1d\"", "\"0s\""), &["duration"]),
        (format!("block_size = 1000\n{vm}"), &["block_size"]),
        ("duration = [1d]".to_string(), &["line 1"]),
    ];
    for (toml, needles) in cases {
        let e = error_of(toml);
        for needle in *needles {
            assert!(e.contains(needle), "error for\n{toml}\nis\n{e}\nand does not mention {needle:?}");
        }
    }
}

#[test]
fn hand_built_configs_are_validated_too() {
    let mut config = SynthConfig::from_toml_str(DEMO_CONFIG).unwrap();
    config.vms[0].read_ratio = f64::NAN;
    assert!(synth::open(&config).err().unwrap().to_string().contains("read_ratio"));
}

#[test]
fn demo_parses_and_generates() {
    let config = SynthConfig::from_toml_str(DEMO_CONFIG).unwrap();
    assert_eq!(config.vms.len(), 12);
    let expected = config.expected_requests();
    assert!((2.0e6..4.0e6).contains(&expected), "demo expects {expected} requests");
    let mut src = synth::open(&config).unwrap();
    assert_eq!(src.volumes().len(), 12);
    let disks = src.disk_sizes();
    let mut req = Request::default();
    let mut last = 0;
    let mut per_volume = [0u64; 12];
    for _ in 0..300_000 {
        assert!(src.next_request(&mut req).unwrap());
        assert!(req.time_ns >= last);
        last = req.time_ns;
        assert!(req.end() <= disks[req.volume as usize]);
        per_volume[req.volume as usize] += 1;
    }
    assert!(per_volume.iter().all(|&n| n > 0), "{per_volume:?}");
    assert!(src.progress() > 0.0 && src.progress() < 1.0);
}

/// The whole demo, timed. Run it in release mode:
/// `cargo test -p cloudcache-trace --release --test synth -- --ignored --nocapture whole_demo`
#[test]
#[ignore = "generates the whole 14-day demo; run on demand in release mode"]
fn whole_demo() {
    let config = SynthConfig::from_toml_str(DEMO_CONFIG).unwrap();
    let started = std::time::Instant::now();
    let mut src = synth::open(&config).unwrap();
    let mut req = Request::default();
    let mut per_volume = vec![(0u64, 0u64); 12];
    let mut last = 0;
    while src.next_request(&mut req).unwrap() {
        assert!(req.time_ns >= last);
        last = req.time_ns;
        let v = &mut per_volume[req.volume as usize];
        v.0 += 1;
        v.1 += req.len;
    }
    let elapsed = started.elapsed();
    let total: u64 = per_volume.iter().map(|v| v.0).sum();
    for (name, (n, bytes)) in src.volumes().names().iter().zip(&per_volume) {
        println!("{name:>10} {n:>9} requests {:>8.1} GiB", *bytes as f64 / (1u64 << 30) as f64);
    }
    println!(
        "demo: {total} requests (config expects {:.0}) in {:.2?}, {:.1} M requests/s",
        config.expected_requests(),
        elapsed,
        total as f64 / elapsed.as_secs_f64() / 1e6
    );
    assert!((2_000_000..4_000_000).contains(&total));
}
