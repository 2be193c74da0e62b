//! The latency model against closed-form queueing results: Poisson arrivals
//! of single-block reads sent straight to a server with a fixed mean service
//! time must show the mean response time of M/M/1, M/D/1 and M/M/2 queues.
//! The tolerance is four standard errors, estimated from the run itself by
//! batch means (the replay's time buckets), since successive response times
//! are correlated and the textbook i.i.d. error would be too small.

use std::path::PathBuf;

use cloudcache_sim::latency::{run_timed, Distribution, LatencyModel, Restart, TimedSpec};
use cloudcache_sim::{CompactRequest, LoadedTrace, SourceInfo};
use cloudcache_trace::Op;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const MS: f64 = 1e6;

/// `n` reads arriving as a Poisson process of `rate_per_ms`, at offsets far
/// apart so every one is a random access.
fn poisson_trace(n: usize, rate_per_ms: f64, seed: u64) -> LoadedTrace {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut t = 0.0;
    let requests = (0..n as u64)
        .map(|i| {
            t += -(1.0 - rng.gen::<f64>()).ln() / rate_per_ms * MS;
            CompactRequest { time_ns: t as u64, offset: i << 20, len: 4096, volume: 0, op: Op::Read }
        })
        .collect();
    LoadedTrace {
        requests,
        volume_names: vec!["poisson".into()],
        has_timestamps: true,
        sources: vec![SourceInfo {
            path: PathBuf::from("poisson"),
            format: "synthetic".into(),
            compression: "none".into(),
            requests: n as u64,
            skipped_lines: 0,
        }],
    }
}

/// Mean response time and its batch-means standard error, in milliseconds.
fn simulate(trace: &LoadedTrace, servers: u32, distribution: Distribution) -> (f64, f64) {
    let mut model = LatencyModel { network_rtt_us: 0.0, seed: 7, ..LatencyModel::default() };
    model.backend.servers = servers;
    model.backend.distribution = distribution;
    model.backend.read.random_us = 1000.0;
    model.backend.read.sequential_us = 1000.0;
    model.backend.read.per_4k_us = 0.0;
    let span = trace.requests.last().unwrap().time_ns;
    let batches = 50;
    let spec = TimedSpec {
        label: "queue".into(),
        cache: None,
        model,
        speedup: 1.0,
        bucket_ns: span / batches + 1,
        reboots: vec![],
        restart: Restart::Warm,
    };
    let result = run_timed(trace, &spec, &|_| {}).unwrap();
    assert_eq!(result.latency.requests, trace.requests.len() as u64);
    let means: Vec<f64> =
        result.buckets.iter().filter(|b| b.requests > 0).map(|b| b.mean_latency_us / 1000.0).collect();
    let k = means.len() as f64;
    let grand = means.iter().sum::<f64>() / k;
    let variance = means.iter().map(|m| (m - grand).powi(2)).sum::<f64>() / (k - 1.0);
    (result.latency.mean_us / 1000.0, (variance / k).sqrt())
}

fn check(name: &str, measured: (f64, f64), expected: f64) {
    let (mean, se) = measured;
    eprintln!("{name}: {mean:.4} ± {se:.4} (expected {expected:.4})");
    assert!(se > 0.0 && se < 0.05 * expected, "{name}: standard error {se} too large to test anything");
    assert!(
        (mean - expected).abs() <= 4.0 * se,
        "{name}: mean response {mean:.4} ms, expected {expected:.4} ms (4 standard errors = {:.4})",
        4.0 * se
    );
}

#[test]
fn mm1_mean_response_is_one_over_mu_minus_lambda() {
    // Service 1 ms (mu = 1/ms), lambda = 0.5/ms: rho = 0.5, E[T] = 1 / (mu - lambda) = 2 ms.
    let trace = poisson_trace(100_000, 0.5, 1);
    check("M/M/1", simulate(&trace, 1, Distribution::Exponential), 2.0);
}

#[test]
fn md1_mean_response_follows_pollaczek_khinchine() {
    // Deterministic 1 ms service, rho = 0.5: E[W] = rho / (2 mu (1 - rho)) = 0.5 ms, E[T] = 1.5 ms.
    let trace = poisson_trace(100_000, 0.5, 2);
    check("M/D/1", simulate(&trace, 1, Distribution::Deterministic), 1.5);
}

#[test]
fn mm2_mean_response_follows_erlang_c() {
    // Two servers, lambda = 1/ms, mu = 1/ms: a = 1, rho = 0.5, Erlang C = 1/3,
    // E[W] = C / (c mu - lambda) = 1/3 ms, E[T] = 4/3 ms.
    let trace = poisson_trace(100_000, 1.0, 3);
    check("M/M/2", simulate(&trace, 2, Distribution::Exponential), 4.0 / 3.0);
}

#[test]
fn a_wrong_formula_would_fail() {
    // The check has power: M/D/1 is not M/M/1 (1.5 ms against 2 ms).
    let trace = poisson_trace(100_000, 0.5, 2);
    let (mean, se) = simulate(&trace, 1, Distribution::Deterministic);
    assert!((mean - 2.0).abs() > 4.0 * se, "M/D/1 mean {mean} indistinguishable from M/M/1's 2 ms");
}
