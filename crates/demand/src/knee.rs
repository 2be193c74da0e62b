//! Choosing the observation window from a profiling run (seed 001, 3.4.1).
//!
//! The seed profiles a workload's hit ratio under RWSS allocation at several
//! window lengths and takes the "knee", where the curve starts to flatten;
//! with no clear knee (slow, steady growth) it takes a small window. The
//! seed gives no number, so the rule here is:
//!
//! * `gain` = best hit ratio minus the hit ratio of the smallest window.
//!   Below [`FLAT_GAIN`] (one percentage point) the curve is flat: every
//!   window does as well, and the smallest adapts fastest.
//! * Otherwise the knee is the smallest window that reaches
//!   [`KNEE_FRACTION`] (90 %) of the gain.
//! * If that is the largest window profiled, the curve never flattened
//!   inside the range (steady growth): no knee, the smallest window.

/// Total gains below this (in hit ratio) count as a flat curve.
pub const FLAT_GAIN: f64 = 0.01;

/// Fraction of the total gain at which the curve has flattened.
pub const KNEE_FRACTION: f64 = 0.9;

/// Why a window was chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KneeReason {
    /// The hit ratio flattens at this window.
    Knee,
    /// Window length makes no difference: the smallest is taken.
    Flat,
    /// The hit ratio keeps growing over the whole range: the smallest is taken.
    NoKnee,
}

impl KneeReason {
    /// Name in reports.
    pub fn name(self) -> &'static str {
        match self {
            KneeReason::Knee => "knee",
            KneeReason::Flat => "flat",
            KneeReason::NoKnee => "no-knee",
        }
    }
}

/// The chosen window and why.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KneeChoice {
    /// Index into the profiled points (sorted by window length).
    pub index: usize,
    /// Why.
    pub reason: KneeReason,
}

/// Pick the window from `hit_ratios`, one per profiled window length in
/// increasing order of length. `None` when nothing was profiled.
pub fn choose_window(hit_ratios: &[f64]) -> Option<KneeChoice> {
    let first = *hit_ratios.first()?;
    let best = hit_ratios.iter().copied().fold(first, f64::max);
    let gain = best - first;
    if gain < FLAT_GAIN {
        return Some(KneeChoice { index: 0, reason: KneeReason::Flat });
    }
    let knee = hit_ratios.iter().position(|&h| h >= first + KNEE_FRACTION * gain).unwrap_or(0);
    if knee == hit_ratios.len() - 1 {
        Some(KneeChoice { index: 0, reason: KneeReason::NoKnee })
    } else {
        Some(KneeChoice { index: knee, reason: KneeReason::Knee })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_where_the_curve_flattens() {
        // Moodle-like: fast rise to 24 h (index 3), then flat.
        let h = [0.40, 0.55, 0.65, 0.71, 0.72, 0.725];
        assert_eq!(choose_window(&h), Some(KneeChoice { index: 3, reason: KneeReason::Knee }));
    }

    #[test]
    fn steady_growth_has_no_knee() {
        let h = [0.1, 0.2, 0.3, 0.4, 0.5];
        assert_eq!(choose_window(&h), Some(KneeChoice { index: 0, reason: KneeReason::NoKnee }));
    }

    #[test]
    fn flat_curve_takes_the_smallest_window() {
        let h = [0.5, 0.505, 0.502];
        assert_eq!(choose_window(&h), Some(KneeChoice { index: 0, reason: KneeReason::Flat }));
        assert_eq!(choose_window(&[]), None);
    }
}
