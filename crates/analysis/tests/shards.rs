//! SHARDS against the exact curve: identical at rate 1, within an error
//! bound when sampling, and per-volume samples that combine into the curve
//! of a shared cache.

mod common;

use cloudcache_analysis::{
    dense_sizes, mean_absolute_error, Counted, CurvePoint, ExactBlockMrc, ShardsFixedSize, ShardsSample,
    Workload,
};

fn exact_curve(w: &Workload, sizes: &[u64], counted: Counted) -> Vec<CurvePoint> {
    let mut b = ExactBlockMrc::new(4096, true);
    w.requests.iter().for_each(|r| b.request(r));
    b.finish().curve(sizes, counted)
}

fn sample(w: &Workload, rate: f64) -> ShardsSample {
    let mut s = ShardsSample::new(4096, rate).unwrap();
    w.requests.iter().for_each(|r| s.request(r));
    s
}

#[test]
fn at_rate_one_shards_is_the_exact_curve() {
    let w = Workload::from_requests(&common::synthetic(3, 5000, 3, 400, true));
    let sizes: Vec<u64> = (1..=600).map(|b| b * 4096).collect();
    let s = sample(&w, 1.0);
    for counted in [Counted::All, Counted::Reads] {
        let exact = exact_curve(&w, &sizes, counted);
        let shards = s.curve(None, &sizes, counted);
        for (e, x) in exact.iter().zip(&shards) {
            assert!((e.miss_ratio.unwrap() - x.miss_ratio.unwrap()).abs() < 1e-12, "{e:?} {x:?}");
        }
    }
}

#[test]
fn combined_volume_samples_are_the_shared_cache_of_those_volumes() {
    let reqs = common::synthetic(5, 6000, 4, 300, false);
    let w = Workload::from_requests(&reqs);
    let s = sample(&w, 1.0);
    // Volumes 1 and 3 alone, in one cache: the exact curve of the trace
    // holding only their requests.
    let only: Vec<_> = reqs.iter().filter(|r| r.volume == 1 || r.volume == 3).cloned().collect();
    let sizes: Vec<u64> = (1..=700).step_by(7).map(|b| b * 4096).collect();
    let exact = exact_curve(&Workload::from_requests(&only), &sizes, Counted::All);
    let combined = s.curve(Some(&[1, 3]), &sizes, Counted::All);
    assert_eq!(mean_absolute_error(&exact, &combined), Some(0.0));
    // And it is not simply one volume's curve.
    assert!(mean_absolute_error(&exact, &s.curve(Some(&[1]), &sizes, Counted::All)).unwrap() > 0.01);
}

#[test]
fn sampled_curves_stay_close_to_the_exact_curve() {
    // 200 000 requests over 100 000 blocks: about a million block accesses.
    let w = Workload::from_requests(&common::synthetic(9, 200_000, 2, 100_000, false));
    let mut exact_builder = ExactBlockMrc::new(4096, false);
    w.requests.iter().for_each(|r| exact_builder.request(r));
    let exact = exact_builder.finish();
    let sizes = dense_sizes(exact.footprint_bytes(), 4096);
    let exact_curve = exact.curve(&sizes, Counted::All);

    let fixed_rate = sample(&w, 0.01).curve(None, &sizes, Counted::All);
    let mae = mean_absolute_error(&exact_curve, &fixed_rate).unwrap();
    assert!(mae < 0.02, "fixed-rate SHARDS at 1 %: mean absolute error {mae}");

    let mut fixed_size = ShardsFixedSize::new(4096, 4096);
    w.requests.iter().for_each(|r| fixed_size.request(r));
    assert!(fixed_size.rate() < 0.1, "the sample had to shrink: rate {}", fixed_size.rate());
    let mae = mean_absolute_error(&exact_curve, &fixed_size.curve(&sizes, Counted::All)).unwrap();
    assert!(mae < 0.02, "fixed-size SHARDS with 4096 blocks: mean absolute error {mae}");
}
