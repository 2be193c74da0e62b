//! Histograms of reuse distances, and the hit counts they imply at any cache
//! size.
//!
//! An LRU cache of capacity `C` hits an access exactly when the access's
//! stack distance fits in `C` (the inclusion property), so a histogram of
//! stack distances is the whole miss-ratio curve. Block distances are small
//! integers and are kept exactly ([`DenseHistogram`]); byte distances (object
//! mode) and SHARDS's scaled distances are kept in log-linear buckets
//! ([`LogHistogram`]).

/// Counts of block-mode stack distances: `counts[d]` accesses had `d`
/// distinct blocks above them (they hit in any cache of more than `d`
/// blocks); `cold` accesses were first accesses (or followed a discard).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DenseHistogram {
    /// Accesses by distance.
    pub counts: Vec<u64>,
    /// First accesses.
    pub cold: u64,
}

impl DenseHistogram {
    /// Record one access: `Some(distance)` or `None` for a cold miss.
    #[inline]
    pub fn record(&mut self, distance: Option<u32>) {
        match distance {
            Some(d) => {
                let d = d as usize;
                if d >= self.counts.len() {
                    self.counts.resize((d + 1).next_power_of_two(), 0);
                }
                self.counts[d] += 1;
            }
            None => self.cold += 1,
        }
    }

    /// All accesses recorded.
    pub fn accesses(&self) -> u64 {
        self.cold + self.counts.iter().sum::<u64>()
    }

    /// Add another histogram into this one.
    pub fn merge(&mut self, other: &DenseHistogram) {
        if other.counts.len() > self.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.cold += other.cold;
    }

    /// Hits at each capacity in blocks (`capacities` in any order).
    pub fn hits_at(&self, capacities: &[u64]) -> Vec<u64> {
        let mut cumulative = Vec::with_capacity(self.counts.len() + 1);
        let mut sum = 0;
        cumulative.push(0);
        for &c in &self.counts {
            sum += c;
            cumulative.push(sum);
        }
        capacities.iter().map(|&c| cumulative[(c as usize).min(self.counts.len())]).collect()
    }

    /// The distribution of distances (for plots): `(distance, accesses)` of
    /// the nonzero entries.
    pub fn nonzero(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.counts.iter().enumerate().filter(|(_, &c)| c > 0).map(|(d, &c)| (d as u64, c))
    }
}

/// Weights of u64 values in log-linear buckets: exact below `2^bits`, then
/// `2^bits` buckets per power of two (relative resolution `2^-bits`). Each
/// bucket stands for its lower bound, so values that are multiples of a
/// bucket width are kept exactly.
#[derive(Clone, Debug, PartialEq)]
pub struct LogHistogram {
    bits: u32,
    weights: Vec<f64>,
    /// Weight of cold (infinite-distance) entries.
    pub cold: f64,
}

impl LogHistogram {
    /// An empty histogram with `2^bits` buckets per power of two.
    pub fn new(bits: u32) -> Self {
        assert!((1..=20).contains(&bits));
        LogHistogram { bits, weights: Vec::new(), cold: 0.0 }
    }

    #[inline]
    fn index(&self, value: u64) -> usize {
        let sub = 1u64 << self.bits;
        if value < sub {
            return value as usize;
        }
        let exponent = 63 - value.leading_zeros();
        let shift = exponent - self.bits;
        let mantissa = value >> shift;
        ((u64::from(shift) + 1) * sub + (mantissa - sub)) as usize
    }

    /// Smallest value of bucket `index`.
    fn lower_bound(&self, index: usize) -> u64 {
        let sub = 1u64 << self.bits;
        let index = index as u64;
        if index < sub {
            return index;
        }
        let shift = index / sub - 1;
        let mantissa = index % sub + sub;
        mantissa << shift
    }

    /// Add `weight` at `value`.
    #[inline]
    pub fn record(&mut self, value: u64, weight: f64) {
        let i = self.index(value);
        if i >= self.weights.len() {
            self.weights.resize(i + 1, 0.0);
        }
        self.weights[i] += weight;
    }

    /// Add `weight` to the smallest bucket (SHARDS's count adjustment; may
    /// be negative).
    pub fn adjust_first(&mut self, weight: f64) {
        if self.weights.is_empty() {
            self.weights.push(0.0);
        }
        self.weights[0] += weight;
    }

    /// Total weight, cold included.
    pub fn total(&self) -> f64 {
        self.cold + self.weights.iter().sum::<f64>()
    }

    /// Weight of the values at most each limit (`limits` in any order).
    pub fn weight_at_most(&self, limits: &[u64]) -> Vec<f64> {
        let mut cumulative = Vec::with_capacity(self.weights.len() + 1);
        let mut sum = 0.0;
        cumulative.push(0.0);
        for &w in &self.weights {
            sum += w;
            cumulative.push(sum);
        }
        limits
            .iter()
            .map(|&limit| {
                // Buckets whose lower bound is <= limit count whole.
                let i = self.index(limit);
                let upto = if i < self.weights.len() { i + 1 } else { self.weights.len() };
                debug_assert!(upto == 0 || self.lower_bound(upto - 1) <= limit);
                cumulative[upto]
            })
            .collect()
    }

    /// `(bucket lower bound, weight)` of the nonzero buckets.
    pub fn nonzero(&self) -> impl Iterator<Item = (u64, f64)> + '_ {
        self.weights.iter().enumerate().filter(|(_, &w)| w != 0.0).map(|(i, &w)| (self.lower_bound(i), w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_hits() {
        let mut h = DenseHistogram::default();
        for d in [Some(0), Some(0), Some(3), None, Some(1)] {
            h.record(d);
        }
        assert_eq!(h.accesses(), 5);
        // A 1-block cache hits the two distance-0 accesses; 4 blocks hit all four reuses.
        assert_eq!(h.hits_at(&[1, 2, 4, 100, 0]), vec![2, 3, 4, 4, 0]);
    }

    #[test]
    fn log_buckets_are_exact_below_the_linear_range_and_monotone_above() {
        let h = LogHistogram::new(4);
        for v in 0..16u64 {
            assert_eq!(h.index(v), v as usize);
        }
        let mut last = 0;
        for v in (16u64..5000).chain([u64::MAX / 3, u64::MAX]) {
            let i = h.index(v);
            assert!(i >= last);
            assert!(h.lower_bound(i) <= v && v - h.lower_bound(i) <= v >> 4);
            last = i;
        }
        let mut h = LogHistogram::new(4);
        h.record(4096, 1.0);
        h.record(8192, 2.0);
        h.record(3, 0.5);
        assert_eq!(h.weight_at_most(&[4095, 4096, 8191, 8192, 1 << 40]), vec![0.5, 1.5, 1.5, 3.5, 3.5]);
    }
}
