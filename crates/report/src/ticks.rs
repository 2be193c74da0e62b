//! Tick placement: "nice" round numbers for linear axes, whole powers for logarithmic ones,
//! and unit-aware steps for bytes (powers of two) and durations (seconds, minutes, hours, days).
//!
//! Every function returns ticks in increasing order that cover the requested interval (the
//! first tick is at or below `min`, the last at or above `max`), so the caller can use the
//! first and last tick as the axis ends. Degenerate input (NaN, `min == max`, reversed bounds)
//! gives a small sensible interval instead of an empty or endless list.

/// Upper bound on the ticks any function here returns, whatever the input.
pub const MAX_TICKS: usize = 64;

/// Round ticks `m·10^e` with `m` in {1, 2, 5} covering `[min, max]`, about `target` intervals.
///
/// `nice_ticks(0.0, 97.0, 5)` is `[0, 20, 40, 60, 80, 100]`.
pub fn nice_ticks(min: f64, max: f64, target: usize) -> Vec<f64> {
    let Some((min, max)) = widen(min, max) else {
        return vec![0.0, 1.0];
    };
    let raw = (max - min) / target.max(1) as f64;
    let exponent = raw.log10().floor() as i32;
    let base = 10f64.powi(exponent);
    let mantissa = [1.0, 2.0, 5.0, 10.0].into_iter().find(|m| m * base >= raw * (1.0 - 1e-9)).unwrap_or(10.0);
    // Ticks are built as integer multiples of the mantissa, scaled by an exact power of ten,
    // so that 0.1-steps print as 0.3 and not 0.30000000000000004.
    let (mantissa, exponent) = if mantissa == 10.0 { (1.0, exponent + 1) } else { (mantissa, exponent) };
    let scale = |k: f64| {
        let units = k * mantissa;
        if exponent >= 0 {
            units * 10f64.powi(exponent)
        } else {
            units / 10f64.powi(-exponent)
        }
    };
    let step = scale(1.0);
    stepped(min, max, step, scale)
}

/// Ticks for byte quantities on a linear axis: steps are powers of two (…, 256 MiB, 512 MiB,
/// 1 GiB, …) so that labels read as round binary sizes. Steps never go below one byte.
pub fn byte_ticks(min: f64, max: f64, target: usize) -> Vec<f64> {
    let Some((min, max)) = widen(min, max) else {
        return vec![0.0, 1.0];
    };
    let raw = (max - min) / target.max(1) as f64;
    let step = 2f64.powi(raw.log2().ceil().clamp(0.0, 1000.0) as i32);
    stepped(min, max, step, |k| k * step)
}

/// Ticks for durations in nanoseconds: steps of 1/2/5 below a second, then 1, 2, 5, 10, 15,
/// 30 s or min, 1, 2, 3, 6, 12 h, 1, 2, 7, 14 d, and round numbers of days above that.
pub fn duration_ticks(min: f64, max: f64, target: usize) -> Vec<f64> {
    let Some((min, max)) = widen(min, max) else {
        return vec![0.0, 1e9];
    };
    const S: f64 = 1e9;
    const MIN: f64 = 60.0 * S;
    const H: f64 = 60.0 * MIN;
    const D: f64 = 24.0 * H;
    const STEPS: [f64; 19] = [
        S,
        2.0 * S,
        5.0 * S,
        10.0 * S,
        15.0 * S,
        30.0 * S,
        MIN,
        2.0 * MIN,
        5.0 * MIN,
        10.0 * MIN,
        15.0 * MIN,
        30.0 * MIN,
        H,
        2.0 * H,
        3.0 * H,
        6.0 * H,
        12.0 * H,
        D,
        2.0 * D,
    ];
    let raw = (max - min) / target.max(1) as f64;
    if raw < S {
        return nice_ticks(min, max, target);
    }
    let step = match STEPS.iter().find(|&&s| s >= raw) {
        Some(&s) => s,
        None if raw <= 7.0 * D => 7.0 * D,
        None if raw <= 14.0 * D => 14.0 * D,
        None => {
            // Whole days from here on, rounded like any other number.
            let days = nice_ticks(0.0, raw / D, 1);
            days.get(1).copied().unwrap_or(1.0).max(1.0) * D
        }
    };
    stepped(min, max, step, |k| k * step)
}

/// Whole powers of `base` covering `[min, max]` (both must be positive; others give `[1, base]`),
/// keeping every k-th power so that at most `max_ticks` remain.
///
/// When the interval spans at most one power of ten on a base-10 axis, the 2× and 5× multiples
/// are added so that the axis has more than two labels.
pub fn log_ticks(min: f64, max: f64, base: f64, max_ticks: usize) -> Vec<f64> {
    let base = if base.is_finite() && base > 1.0 { base } else { 10.0 };
    let (min, max) = if min <= max { (min, max) } else { (max, min) };
    if !(min.is_finite() && max.is_finite() && min > 0.0) {
        return vec![1.0, base];
    }
    let log = |v: f64| {
        let l = v.ln() / base.ln();
        // ln(1000)/ln(10) is 2.9999999999999996: snap near-integers before floor/ceil.
        if (l - l.round()).abs() < 1e-9 {
            l.round()
        } else {
            l
        }
    };
    let lo = log(min).floor().max(-1000.0) as i32;
    let mut hi = log(max).ceil().min(1000.0) as i32;
    if hi <= lo {
        hi = lo + 1;
    }
    let count = (hi - lo + 1) as usize;
    let max_ticks = max_ticks.clamp(2, MAX_TICKS);
    // Keep every k-th power, aligned to multiples of k so that 2^24, 2^26, … rather than
    // 2^25, 2^27 …; alignment can add a tick at either end, so grow k until it all fits.
    // When no alignment fits (a range around 10^0 with room for two ticks needs three), the
    // two ends alone are used.
    let first_try = count.div_ceil(max_ticks).max(1) as i32;
    let (every, lo, hi) = (first_try..=hi - lo)
        .find_map(|every| {
            let aligned_lo = lo.div_euclid(every) * every;
            let aligned_hi = hi + (every - hi.rem_euclid(every)) % every;
            let ticks = ((aligned_hi - aligned_lo) / every + 1) as usize;
            (ticks <= max_ticks).then_some((every, aligned_lo, aligned_hi))
        })
        .unwrap_or((hi - lo, lo, hi));
    let power = |e: i32| base.powi(e);
    let mut ticks: Vec<f64> = (lo..=hi).step_by(every as usize).map(power).collect();
    if base == 10.0 && hi - lo <= 1 {
        let mut extra: Vec<f64> = (lo..hi).flat_map(|e| [2.0 * power(e), 5.0 * power(e)]).collect();
        ticks.append(&mut extra);
        ticks.sort_by(f64::total_cmp);
    }
    ticks.retain(|t| t.is_finite() && *t > 0.0);
    if ticks.len() < 2 {
        return vec![1.0, base];
    }
    ticks
}

/// Orders the bounds and widens an empty interval; `None` when nothing usable is left.
fn widen(min: f64, max: f64) -> Option<(f64, f64)> {
    let (min, max) = match (min.is_finite(), max.is_finite()) {
        (true, true) => (min.min(max), min.max(max)),
        (true, false) => (min, min),
        (false, true) => (max, max),
        (false, false) => return None,
    };
    if max - min > max.abs().max(min.abs()) * 1e-12 && (max - min).is_finite() {
        return Some((min, max));
    }
    // All values equal: show them in the middle of a unit-sized (or proportionate) interval.
    let half = if min == 0.0 { 0.5 } else { min.abs() * 0.1 };
    let (lo, hi) = (min - half, max + half);
    (lo.is_finite() && hi.is_finite() && hi > lo).then_some((lo, hi))
}

/// Multiples `k` of the step from below `min` to above `max`, as given by `at(k)`.
fn stepped(min: f64, max: f64, step: f64, at: impl Fn(f64) -> f64) -> Vec<f64> {
    if !(step.is_finite() && step > 0.0) {
        return vec![min, max];
    }
    let first = (min / step).floor();
    let last = (max / step).ceil();
    if !(first.is_finite() && last.is_finite()) || last - first > MAX_TICKS as f64 {
        return vec![min, max];
    }
    let mut ticks: Vec<f64> = Vec::new();
    let mut k = first;
    while k <= last {
        let t = at(k);
        // Precision runs out when the span is tiny next to the magnitude.
        if !ticks.last().is_some_and(|&prev| t <= prev) {
            ticks.push(if t == 0.0 { 0.0 } else { t });
        }
        k += 1.0;
    }
    if ticks.len() < 2 {
        return vec![min, max];
    }
    ticks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_nice_numbers() {
        assert_eq!(nice_ticks(0.0, 97.0, 5), vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        assert_eq!(nice_ticks(0.0, 1.0, 5), vec![0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
        assert_eq!(nice_ticks(0.0, 0.3, 3), vec![0.0, 0.1, 0.2, 0.3]);
        assert_eq!(nice_ticks(-3.0, 7.0, 5), vec![-4.0, -2.0, 0.0, 2.0, 4.0, 6.0, 8.0]);
        assert_eq!(nice_ticks(97.0, 0.0, 5), nice_ticks(0.0, 97.0, 5));
        assert_eq!(nice_ticks(1e6, 5e6, 4), vec![1e6, 2e6, 3e6, 4e6, 5e6]);
    }

    #[test]
    fn linear_degenerate() {
        let equal = nice_ticks(5.0, 5.0, 5);
        assert!(equal.len() >= 2 && equal[0] <= 5.0 && *equal.last().unwrap() >= 5.0, "{equal:?}");
        let zero = nice_ticks(0.0, 0.0, 5);
        assert!(zero.len() >= 2 && zero[0] < 0.0 || zero[0] == 0.0, "{zero:?}");
        assert_eq!(nice_ticks(f64::NAN, f64::NAN, 5), vec![0.0, 1.0]);
        let one_sided = nice_ticks(f64::NAN, 3.0, 5);
        assert!(one_sided.len() >= 2);
        let tiny = nice_ticks(1e15, 1e15 + 1e-3, 5);
        assert!(tiny.len() >= 2 && tiny.len() <= MAX_TICKS);
        let huge = nice_ticks(-f64::MAX, f64::MAX, 5);
        assert!(huge.len() >= 2 && huge.iter().all(|t| t.is_finite()));
        assert!(nice_ticks(0.0, 1.0, 0).len() >= 2);
    }

    #[test]
    fn log2_ticks_are_powers_of_two() {
        let ticks = log_ticks((16u64 << 20) as f64, (1u64 << 30) as f64, 2.0, 10);
        let expected: Vec<f64> = (24..=30).map(|e| (1u64 << e) as f64).collect();
        assert_eq!(ticks, expected);
        // 16 MiB .. 4 GiB is nine powers; with room for five, every other one is kept.
        let thinned = log_ticks((16u64 << 20) as f64, (4u64 << 30) as f64, 2.0, 5);
        let expected: Vec<f64> = (24..=32).step_by(2).map(|e| (1u64 << e) as f64).collect();
        assert_eq!(thinned, expected);
        // Non-powers are enclosed by the neighbouring powers.
        assert_eq!(log_ticks(100.0, 150.0, 2.0, 10), vec![64.0, 128.0, 256.0]);
    }

    #[test]
    fn log10_ticks() {
        assert_eq!(log_ticks(1.0, 1000.0, 10.0, 10), vec![1.0, 10.0, 100.0, 1000.0]);
        assert_eq!(log_ticks(20.0, 80.0, 10.0, 10), vec![10.0, 20.0, 50.0, 100.0]);
        assert_eq!(log_ticks(0.0, 10.0, 10.0, 10), vec![1.0, 10.0]);
        assert_eq!(log_ticks(f64::NAN, 10.0, 10.0, 10), vec![1.0, 10.0]);
        // Around 10^0 with room for two ticks, no aligned set fits: the ends are used.
        assert_eq!(log_ticks(1e-3, 1e3, 10.0, 2), vec![1e-3, 1e3]);
        assert_eq!(log_ticks(1e-300, f64::MAX, 2.0, 2).len(), 2);
        let wide = log_ticks(1e-300, 1e300, 10.0, 8);
        assert!(wide.len() <= 8 && wide.len() >= 2, "{wide:?}");
    }

    #[test]
    fn byte_steps_are_binary() {
        let gib = (1u64 << 30) as f64;
        let ticks = byte_ticks(0.0, 1.5 * gib, 4);
        assert_eq!(ticks, vec![0.0, 0.5 * gib, gib, 1.5 * gib]);
        assert_eq!(byte_ticks(0.0, 3.0, 10), vec![0.0, 1.0, 2.0, 3.0]);
    }

    #[test]
    fn duration_steps_are_clock_units() {
        let h = 3600e9;
        assert_eq!(duration_ticks(0.0, 10.0 * h, 5), vec![0.0, 2.0 * h, 4.0 * h, 6.0 * h, 8.0 * h, 10.0 * h]);
        assert_eq!(duration_ticks(0.0, 10.0 * h, 4), vec![0.0, 3.0 * h, 6.0 * h, 9.0 * h, 12.0 * h]);
        let d = 24.0 * h;
        let weeks = duration_ticks(0.0, 30.0 * d, 5);
        assert_eq!(weeks, vec![0.0, 7.0 * d, 14.0 * d, 21.0 * d, 28.0 * d, 35.0 * d]);
        let sub_second = duration_ticks(0.0, 5e6, 5);
        assert_eq!(sub_second, vec![0.0, 1e6, 2e6, 3e6, 4e6, 5e6]);
        let years = duration_ticks(0.0, 3000.0 * d, 5);
        assert!(years.len() >= 2 && years.len() <= 10, "{years:?}");
    }
}
