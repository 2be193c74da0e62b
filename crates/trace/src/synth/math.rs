//! Deterministic numerics for the generator: `exp`, `ln`, `cos` and friends
//! written with basic IEEE operations only, a bounded-memory Zipf sampler, a
//! keyed permutation of an integer range, and uniform draws from raw
//! ChaCha8 output.
//!
//! The platform `f64::exp`/`ln`/`cos` come from the system libm, which is not
//! required to round identically everywhere; a one-ulp difference would
//! eventually flip a rejection test and fork the whole trace. Basic
//! arithmetic, `sqrt` and `round` are exactly rounded by IEEE 754, so the
//! functions below return the same bits on every platform (Rust never fuses
//! multiply-adds on its own). Their accuracy (about 1e-15 relative) is far
//! beyond what a workload model needs.

use rand::RngCore;

// The fdlibm split of ln 2 (bits 0x3fe62e42fee00000 and 0x3dea39ef35793c76):
// LN2_HI has its low bits zero, so k * LN2_HI is exact for |k| < 2^11.
const LN2_HI: f64 = 0.693_147_180_369_123_8;
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
const LOG2_E: f64 = std::f64::consts::LOG2_E;
const TAU: f64 = std::f64::consts::TAU;

/// 2^k for a normal-range exponent.
fn pow2(k: i64) -> f64 {
    f64::from_bits(((k + 1023) as u64) << 52)
}

/// e^x.
pub fn exp(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x > 709.0 {
        return f64::INFINITY;
    }
    if x < -745.0 {
        return 0.0;
    }
    let k = (x * LOG2_E).round();
    let r = (x - k * LN2_HI) - k * LN2_LO;
    // |r| <= 0.35, so the Taylor series to r^14/14! is exact to double precision.
    let mut p = 1.0;
    for inv in INV_INT[1..=14].iter().rev() {
        p = 1.0 + r * p * inv;
    }
    let k = k as i64;
    if k < -1022 {
        p * pow2(-1022) * pow2(k + 1022)
    } else {
        p * pow2(k)
    }
}

/// 1/i for i in 0..=20 (index 0 unused); tables avoid divisions in the
/// series loops, which dominate the generator's time otherwise.
const INV_INT: [f64; 21] = [
    0.0,
    1.0,
    1.0 / 2.0,
    1.0 / 3.0,
    1.0 / 4.0,
    1.0 / 5.0,
    1.0 / 6.0,
    1.0 / 7.0,
    1.0 / 8.0,
    1.0 / 9.0,
    1.0 / 10.0,
    1.0 / 11.0,
    1.0 / 12.0,
    1.0 / 13.0,
    1.0 / 14.0,
    1.0 / 15.0,
    1.0 / 16.0,
    1.0 / 17.0,
    1.0 / 18.0,
    1.0 / 19.0,
    1.0 / 20.0,
];

/// 1/(2k+1) for k in 0..12.
const INV_ODD: [f64; 12] = [
    1.0,
    1.0 / 3.0,
    1.0 / 5.0,
    1.0 / 7.0,
    1.0 / 9.0,
    1.0 / 11.0,
    1.0 / 13.0,
    1.0 / 15.0,
    1.0 / 17.0,
    1.0 / 19.0,
    1.0 / 21.0,
    1.0 / 23.0,
];

/// 2 atanh(f) = ln((1 + f) / (1 - f)) for |f| <= 0.172 (f^24 < 1e-18).
fn two_atanh(f: f64) -> f64 {
    let f2 = f * f;
    let mut s = 0.0;
    for inv in INV_ODD.iter().rev() {
        s = s * f2 + inv;
    }
    2.0 * f * s
}

/// Natural logarithm.
pub fn ln(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x.is_infinite() {
        return x;
    }
    let mut e: i64 = 0;
    let mut bits = x.to_bits();
    if bits >> 52 == 0 {
        // Subnormal: scale into the normal range first.
        bits = (x * pow2(54)).to_bits();
        e -= 54;
    }
    e += ((bits >> 52) & 0x7ff) as i64 - 1023;
    let mut m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    if m > std::f64::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    let e = e as f64;
    two_atanh((m - 1.0) / (m + 1.0)) + e * LN2_LO + e * LN2_HI
}

/// ln(1 + x), accurate near zero.
pub fn ln_1p(x: f64) -> f64 {
    // |x| < 0.25 keeps |x / (2 + x)| <= 1/7 inside two_atanh's range.
    if x.abs() < 0.25 {
        two_atanh(x / (2.0 + x))
    } else {
        ln(1.0 + x)
    }
}

/// e^x - 1, accurate near zero.
pub fn exp_m1(x: f64) -> f64 {
    if x.abs() < 0.5 {
        let mut p = 1.0;
        for inv in INV_INT[2..=20].iter().rev() {
            p = 1.0 + x * p * inv;
        }
        x * p
    } else {
        exp(x) - 1.0
    }
}

/// 1/((2i - 1) 2i) for i in 1..=16: the ratios of successive cosine terms.
const COS_COEF: [f64; 16] = [
    1.0 / 2.0,
    1.0 / 12.0,
    1.0 / 30.0,
    1.0 / 56.0,
    1.0 / 90.0,
    1.0 / 132.0,
    1.0 / 182.0,
    1.0 / 240.0,
    1.0 / 306.0,
    1.0 / 380.0,
    1.0 / 462.0,
    1.0 / 552.0,
    1.0 / 650.0,
    1.0 / 756.0,
    1.0 / 870.0,
    1.0 / 992.0,
];

/// cos(x), for the moderate arguments a day phase produces.
pub fn cos(x: f64) -> f64 {
    let t = x / TAU;
    let y = (t - t.round()) * TAU;
    let y2 = y * y;
    let mut p = 1.0;
    for inv in COS_COEF.iter().rev() {
        p = 1.0 - y2 * inv * p;
    }
    p
}

/// Uniform in [0, 1) with 53 random bits.
pub fn unit(rng: &mut impl RngCore) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Uniform integer in [0, n) (n > 0); the bias is at most n / 2^64.
pub fn below(rng: &mut impl RngCore, n: u64) -> u64 {
    ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as u64
}

/// An exponential variate with the given mean.
pub fn exponential(rng: &mut impl RngCore, mean: f64) -> f64 {
    // 1 - u is in (0, 1], so the logarithm is finite.
    -ln(1.0 - unit(rng)) * mean
}

/// The splitmix64 finaliser: a strong 64-bit mixer.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// FNV-1a of a string, to derive per-VM seeds from names (stable when VMs are
/// reordered or added).
pub fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// Zipf distribution over ranks 1..=n with P(k) proportional to k^-s, drawn
/// by rejection-inversion (Hörmann and Derflinger 1996, as in Apache Commons
/// RNG): O(1) memory and about one iteration per draw for any n and s >= 0.
#[derive(Clone, Debug)]
pub struct Zipf {
    n: f64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    cut: f64,
}

impl Zipf {
    /// Ranks 1..=n (n >= 1) with exponent s >= 0.
    pub fn new(n: u64, s: f64) -> Zipf {
        let mut z = Zipf { n: n as f64, s, h_x1: 0.0, h_n: 0.0, cut: 0.0 };
        z.h_x1 = z.h_integral(1.5) - 1.0;
        z.h_n = z.h_integral(z.n + 0.5);
        z.cut = 2.0 - z.h_integral_inv(z.h_integral(2.5) - z.h(2.0));
        z
    }

    fn h(&self, x: f64) -> f64 {
        exp(-self.s * ln(x))
    }

    fn h_integral(&self, x: f64) -> f64 {
        let log_x = ln(x);
        helper2((1.0 - self.s) * log_x) * log_x
    }

    fn h_integral_inv(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.s)).max(-1.0);
        exp(helper1(t) * x)
    }

    /// A rank in 1..=n.
    pub fn sample(&self, rng: &mut impl RngCore) -> u64 {
        if self.n <= 1.0 {
            return 1;
        }
        loop {
            let u = self.h_n + unit(rng) * (self.h_x1 - self.h_n);
            let x = self.h_integral_inv(u);
            let k = (x + 0.5).floor().clamp(1.0, self.n);
            if k - x <= self.cut || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }
}

/// ln(1 + x) / x, continuous at 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        ln_1p(x) / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// (e^x - 1) / x, continuous at 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        exp_m1(x) / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

/// A keyed pseudo-random permutation of [0, n): a balanced Feistel network
/// on the smallest even number of bits covering n, with cycle walking.
///
/// It scatters hot extents over a disk without storing a table, and its
/// inverse answers "is this offset hot?" in O(1).
#[derive(Clone, Debug)]
pub struct Permutation {
    n: u64,
    half: u32,
    mask: u64,
    key: u64,
}

const FEISTEL_ROUNDS: u64 = 4;

impl Permutation {
    /// A permutation of [0, n) (n >= 1) chosen by `key`.
    pub fn new(n: u64, key: u64) -> Permutation {
        let bits = (64 - n.saturating_sub(1).leading_zeros()).max(2);
        let half = bits.div_ceil(2);
        Permutation { n, half, mask: (1u64 << half) - 1, key }
    }

    fn round(&self, x: u64, i: u64) -> u64 {
        mix64(x ^ self.key.wrapping_add(i.wrapping_mul(0x9e37_79b9_7f4a_7c15))) & self.mask
    }

    fn encrypt(&self, x: u64) -> u64 {
        let (mut l, mut r) = (x >> self.half, x & self.mask);
        for i in 0..FEISTEL_ROUNDS {
            (l, r) = (r, l ^ self.round(r, i));
        }
        (l << self.half) | r
    }

    fn decrypt(&self, y: u64) -> u64 {
        let (mut l, mut r) = (y >> self.half, y & self.mask);
        for i in (0..FEISTEL_ROUNDS).rev() {
            (l, r) = (r ^ self.round(l, i), l);
        }
        (l << self.half) | r
    }

    /// The image of x (x < n).
    pub fn apply(&self, x: u64) -> u64 {
        let mut y = self.encrypt(x);
        while y >= self.n {
            y = self.encrypt(y);
        }
        y
    }

    /// The preimage of y (y < n).
    pub fn invert(&self, y: u64) -> u64 {
        let mut x = self.decrypt(y);
        while x >= self.n {
            x = self.decrypt(x);
        }
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-300)
    }

    #[test]
    fn elementary_functions_match_std() {
        let mut x = -700.0;
        while x < 700.0 {
            assert!(close(exp(x), x.exp(), 1e-14), "exp({x})");
            x += 0.37;
        }
        for &x in &[1e-300, 1e-10, 0.1, 0.5, 0.9999, 1.0, 1.0001, 2.0, 10.0, 1e10, 1e300, 4e-320] {
            if x != 1.0 {
                assert!(close(ln(x), x.ln(), 1e-14), "ln({x}) = {} vs {}", ln(x), x.ln());
            }
        }
        assert_eq!(ln(1.0), 0.0);
        for &x in &[-0.9, -0.4, -1e-9, 1e-12, 0.3, 0.49, 3.0] {
            assert!(close(ln_1p(x), x.ln_1p(), 1e-14), "ln_1p({x})");
            assert!(close(exp_m1(x), x.exp_m1(), 1e-14), "exp_m1({x})");
        }
        let mut x = -20.0;
        while x < 20.0 {
            assert!((cos(x) - x.cos()).abs() < 1e-13, "cos({x})");
            x += 0.013;
        }
    }

    #[test]
    fn zipf_frequencies_follow_the_law() {
        for &s in &[0.0, 0.5, 1.0, 1.3] {
            let n = 1000;
            let z = Zipf::new(n, s);
            let mut rng = ChaCha8Rng::seed_from_u64(7);
            let mut counts = vec![0u64; n as usize + 1];
            let draws = 400_000;
            for _ in 0..draws {
                let k = z.sample(&mut rng);
                assert!((1..=n).contains(&k));
                counts[k as usize] += 1;
            }
            let norm: f64 = (1..=n).map(|k| (k as f64).powf(-s)).sum();
            for k in [1u64, 2, 10] {
                let expect = (k as f64).powf(-s) / norm;
                let got = counts[k as usize] as f64 / draws as f64;
                assert!((got - expect).abs() < 0.1 * expect + 0.002, "s={s} k={k}: {got} vs {expect}");
            }
        }
        assert_eq!(Zipf::new(1, 1.0).sample(&mut ChaCha8Rng::seed_from_u64(1)), 1);
    }

    #[test]
    fn zipf_extremes_terminate_in_range() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for &s in &[0.0, 1e-12, 1e-7, 0.999_999_99, 1.0, 1.000_000_01, 3.0, 10.0] {
            for n in [2u64, 3, 1 << 20, 1 << 50] {
                let z = Zipf::new(n, s);
                let mut top = 0;
                for _ in 0..2_000 {
                    let k = z.sample(&mut rng);
                    assert!((1..=n).contains(&k), "s={s} n={n}: {k}");
                    top += u32::from(k == 1);
                }
                if s >= 3.0 {
                    // 1/zeta(3) = 0.83 of the draws are rank 1.
                    assert!(top > 1_500, "s={s} n={n}: rank 1 drawn {top} times");
                }
            }
        }
    }

    #[test]
    fn permutation_is_a_bijection() {
        for n in [1u64, 2, 3, 5, 64, 1000, 4097] {
            let p = Permutation::new(n, 0xdead_beef ^ n);
            let mut seen = vec![false; n as usize];
            for x in 0..n {
                let y = p.apply(x);
                assert!(y < n);
                assert!(!seen[y as usize]);
                seen[y as usize] = true;
                assert_eq!(p.invert(y), x);
            }
        }
        // Large domains work without tables.
        let p = Permutation::new(1 << 40, 3);
        assert_eq!(p.invert(p.apply(123_456_789)), 123_456_789);
    }

    #[test]
    fn permutation_scatters() {
        let n = 10_000;
        let p = Permutation::new(n, 42);
        // The first 100 images should not be clustered in one corner.
        let first: Vec<u64> = (0..100).map(|x| p.apply(x)).collect();
        let low = first.iter().filter(|&&y| y < n / 2).count();
        assert!((30..70).contains(&low), "{low}");
    }
}
