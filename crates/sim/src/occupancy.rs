//! How much of the cache is in use over a replay: samples of cached bytes,
//! whole and per volume, reduced to means and peaks.

use cloudcache_engine::Cache;

/// Running sums and peaks of sampled occupancy.
#[derive(Clone, Debug, Default)]
pub struct OccupancySampler {
    samples: u64,
    occupied_sum: f64,
    peak_occupied: u64,
    staging_sum: f64,
    volume_sums: Vec<f64>,
    volume_peaks: Vec<u64>,
}

/// Means and peaks of the samples.
#[derive(Clone, Debug, Default)]
pub struct Occupancy {
    /// Mean cached bytes.
    pub mean_bytes: f64,
    /// Largest sampled cached bytes.
    pub peak_bytes: u64,
    /// Mean staging memory in use.
    pub mean_staging_bytes: f64,
    /// Per volume: (mean, peak) cached bytes.
    pub volumes: Vec<(f64, u64)>,
}

impl OccupancySampler {
    /// A sampler for `volumes` volumes.
    pub fn new(volumes: usize) -> Self {
        OccupancySampler {
            volume_sums: vec![0.0; volumes],
            volume_peaks: vec![0; volumes],
            ..Default::default()
        }
    }

    /// Take one sample of `cache`, whose weight unit is `unit` bytes.
    pub fn sample(&mut self, cache: &Cache, unit: u64) {
        self.samples += 1;
        let used = cache.used_weight() * unit;
        self.occupied_sum += used as f64;
        self.peak_occupied = self.peak_occupied.max(used);
        self.staging_sum += cache.staging_used_bytes() as f64;
        for (v, (sum, peak)) in self.volume_sums.iter_mut().zip(&mut self.volume_peaks).enumerate() {
            let cached = cache.volumes().get(v).map_or(0, |s| s.cached_weight) * unit;
            *sum += cached as f64;
            *peak = (*peak).max(cached);
        }
    }

    /// The means and peaks so far.
    pub fn finish(&self) -> Occupancy {
        let n = self.samples.max(1) as f64;
        Occupancy {
            mean_bytes: self.occupied_sum / n,
            peak_bytes: self.peak_occupied,
            mean_staging_bytes: self.staging_sum / n,
            volumes: self.volume_sums.iter().zip(&self.volume_peaks).map(|(&s, &p)| (s / n, p)).collect(),
        }
    }
}
