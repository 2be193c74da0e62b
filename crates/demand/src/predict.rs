//! Predicting the next window's demand from the windows seen so far.
//!
//! Seed 001 (section 3.4.2) compares last-value, exponential smoothing and
//! double exponential smoothing, fixed and self-tuning, behind an outlier
//! filter, and settles on self-tuning exponential smoothing. The seed leaves
//! the tuning method and several details open; the choices are:
//!
//! * **Double exponential** is Holt's linear method: level
//!   `L = a*x + (1-a)*(L + B)`, trend `B = b*(L - L_prev) + (1-b)*B`,
//!   forecast `L + B`, started at `L = x_0, B = 0`.
//! * **Self-tuning** runs one smoother per parameter value on a grid
//!   (alpha, and beta for Holt, each in 0.1..=0.9 by 0.1) side by side and
//!   forecasts with the one whose absolute error summed over the last
//!   [`TUNING_WINDOWS`] windows is smallest; ties go to the fixed default
//!   (0.3), so with too little history it behaves as the fixed predictor.
//! * **Outlier filter**: an observation more than `lambda` times the mean of
//!   the last `n` observations (the current one included, as the seed says)
//!   is replaced by that mean before it reaches the predictor. The *raw*
//!   observation stays in the filter's history: a one-window spike (a
//!   backup) is filtered, while a lasting change of level stops being an
//!   outlier after a few windows (at most `lambda` of them, however large
//!   the step) instead of being damped for ever. Only upward outliers are
//!   filtered (the seed names only those); while fewer than `lambda`
//!   observations exist nothing can exceed `lambda` times a mean that
//!   includes itself, so the filter starts acting by itself.
//! * Forecasts are never negative (a falling Holt trend is cut at zero).

use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;

/// Windows over which a self-tuning predictor compares its candidates.
pub const TUNING_WINDOWS: usize = 10;

/// Smoothing factor of the fixed predictors (the seed's 0.3).
pub const DEFAULT_ALPHA: f64 = 0.3;

/// Trend factor of fixed double exponential smoothing (the seed's 0.3).
pub const DEFAULT_BETA: f64 = 0.3;

/// Parameter grid of the self-tuning predictors, the default first so it
/// wins ties.
const GRID: [f64; 9] = [0.3, 0.1, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];

/// The predictors by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PredictorKind {
    /// The last observation.
    LastValue,
    /// Exponential smoothing, alpha 0.3.
    Exp,
    /// Self-tuning exponential smoothing (the default).
    ExpSelfTuning,
    /// Holt's double exponential smoothing, alpha = beta = 0.3.
    DoubleExp,
    /// Self-tuning double exponential smoothing.
    DoubleExpSelfTuning,
}

impl PredictorKind {
    /// Every predictor.
    pub const ALL: [PredictorKind; 5] = [
        PredictorKind::LastValue,
        PredictorKind::Exp,
        PredictorKind::ExpSelfTuning,
        PredictorKind::DoubleExp,
        PredictorKind::DoubleExpSelfTuning,
    ];

    /// Name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            PredictorKind::LastValue => "last",
            PredictorKind::Exp => "exp",
            PredictorKind::ExpSelfTuning => "exp-self",
            PredictorKind::DoubleExp => "dexp",
            PredictorKind::DoubleExpSelfTuning => "dexp-self",
        }
    }
}

impl fmt::Display for PredictorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PredictorKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PredictorKind::ALL.into_iter().find(|k| k.name() == s.to_ascii_lowercase()).ok_or_else(|| {
            format!("unknown predictor {s:?}; expected one of last, exp, exp-self, dexp, dexp-self")
        })
    }
}

/// Replaces upward outliers by the recent mean (see the module notes).
#[derive(Clone, Debug)]
pub struct OutlierFilter {
    history_len: usize,
    factor: f64,
    /// The last `history_len - 1` raw observations.
    history: VecDeque<f64>,
    history_sum: f64,
}

impl OutlierFilter {
    /// A filter over the last `history_len` observations (n) that replaces
    /// values above `factor` (lambda) times their mean.
    pub fn new(history_len: usize, factor: f64) -> Self {
        let history_len = history_len.max(1);
        OutlierFilter { history_len, factor, history: VecDeque::with_capacity(history_len), history_sum: 0.0 }
    }

    /// The seed's filter: n = 20, lambda = 5.
    pub fn seed_default() -> Self {
        Self::new(20, 5.0)
    }

    /// Filter one observation: returns it, or the mean if it is an outlier.
    pub fn filter(&mut self, observed: f64) -> f64 {
        let count = self.history.len() + 1;
        let mean = (self.history_sum + observed) / count as f64;
        let kept = if observed > self.factor * mean { mean } else { observed };
        if self.history.len() + 1 == self.history_len {
            if let Some(oldest) = self.history.pop_front() {
                self.history_sum -= oldest;
            }
        }
        if self.history_len > 1 {
            self.history.push_back(observed);
            self.history_sum += observed;
        }
        kept
    }
}

/// One smoothing model with fixed parameters.
trait Smoother: Clone {
    fn observe(&mut self, x: f64);
    fn forecast(&self) -> Option<f64>;
}

#[derive(Clone, Debug, Default)]
struct Last(Option<f64>);

impl Smoother for Last {
    fn observe(&mut self, x: f64) {
        self.0 = Some(x);
    }
    fn forecast(&self) -> Option<f64> {
        self.0
    }
}

#[derive(Clone, Debug)]
struct Exponential {
    alpha: f64,
    level: Option<f64>,
}

impl Smoother for Exponential {
    fn observe(&mut self, x: f64) {
        self.level = Some(match self.level {
            None => x,
            Some(level) => self.alpha * x + (1.0 - self.alpha) * level,
        });
    }
    fn forecast(&self) -> Option<f64> {
        self.level
    }
}

#[derive(Clone, Debug)]
struct Holt {
    alpha: f64,
    beta: f64,
    level_trend: Option<(f64, f64)>,
}

impl Smoother for Holt {
    fn observe(&mut self, x: f64) {
        self.level_trend = Some(match self.level_trend {
            None => (x, 0.0),
            Some((level, trend)) => {
                let new_level = self.alpha * x + (1.0 - self.alpha) * (level + trend);
                let new_trend = self.beta * (new_level - level) + (1.0 - self.beta) * trend;
                (new_level, new_trend)
            }
        });
    }
    fn forecast(&self) -> Option<f64> {
        self.level_trend.map(|(level, trend)| level + trend)
    }
}

/// Candidates side by side; forecasts with the recently most accurate.
#[derive(Clone, Debug)]
struct SelfTuning<S> {
    candidates: Vec<S>,
    /// Absolute errors of each candidate over the last windows (ring).
    errors: Vec<[f64; TUNING_WINDOWS]>,
    next_error: usize,
    best: usize,
}

impl<S: Smoother> SelfTuning<S> {
    fn new(candidates: Vec<S>) -> Self {
        let errors = vec![[0.0; TUNING_WINDOWS]; candidates.len()];
        SelfTuning { candidates, errors, next_error: 0, best: 0 }
    }
}

impl<S: Smoother> Smoother for SelfTuning<S> {
    fn observe(&mut self, x: f64) {
        for (candidate, errors) in self.candidates.iter_mut().zip(&mut self.errors) {
            errors[self.next_error] = candidate.forecast().map_or(0.0, |f| (f.max(0.0) - x).abs());
            candidate.observe(x);
        }
        self.next_error = (self.next_error + 1) % TUNING_WINDOWS;
        let total = |e: &[f64; TUNING_WINDOWS]| e.iter().sum::<f64>();
        let mut best = 0;
        for (i, errors) in self.errors.iter().enumerate() {
            if total(errors) < total(&self.errors[best]) {
                best = i;
            }
        }
        self.best = best;
    }
    fn forecast(&self) -> Option<f64> {
        self.candidates[self.best].forecast()
    }
}

#[derive(Clone, Debug)]
enum Model {
    Last(Last),
    Exp(Exponential),
    ExpSelfTuning(SelfTuning<Exponential>),
    Holt(Holt),
    HoltSelfTuning(SelfTuning<Holt>),
}

/// One volume's demand predictor: an optional outlier filter in front of a
/// smoothing model.
#[derive(Clone, Debug)]
pub struct Forecaster {
    kind: PredictorKind,
    filter: Option<OutlierFilter>,
    model: Model,
}

impl Forecaster {
    /// A predictor of `kind`, with `filter` in front (or none).
    pub fn new(kind: PredictorKind, filter: Option<OutlierFilter>) -> Self {
        let exp = |alpha| Exponential { alpha, level: None };
        let holt = |alpha, beta| Holt { alpha, beta, level_trend: None };
        let model = match kind {
            PredictorKind::LastValue => Model::Last(Last::default()),
            PredictorKind::Exp => Model::Exp(exp(DEFAULT_ALPHA)),
            PredictorKind::ExpSelfTuning => {
                Model::ExpSelfTuning(SelfTuning::new(GRID.iter().map(|&a| exp(a)).collect()))
            }
            PredictorKind::DoubleExp => Model::Holt(holt(DEFAULT_ALPHA, DEFAULT_BETA)),
            PredictorKind::DoubleExpSelfTuning => Model::HoltSelfTuning(SelfTuning::new(
                GRID.iter().flat_map(|&a| GRID.iter().map(move |&b| holt(a, b))).collect(),
            )),
        };
        Forecaster { kind, filter, model }
    }

    /// Which predictor this is.
    pub fn kind(&self) -> PredictorKind {
        self.kind
    }

    /// Feed one window's observed demand; returns the value the model saw
    /// (the observation, or the filter's replacement).
    pub fn observe(&mut self, observed: f64) -> f64 {
        let value = match &mut self.filter {
            Some(filter) => filter.filter(observed),
            None => observed,
        };
        match &mut self.model {
            Model::Last(m) => m.observe(value),
            Model::Exp(m) => m.observe(value),
            Model::ExpSelfTuning(m) => m.observe(value),
            Model::Holt(m) => m.observe(value),
            Model::HoltSelfTuning(m) => m.observe(value),
        }
        value
    }

    /// The forecast for the next window (`None` before any observation).
    pub fn forecast(&self) -> Option<f64> {
        let forecast = match &self.model {
            Model::Last(m) => m.forecast(),
            Model::Exp(m) => m.forecast(),
            Model::ExpSelfTuning(m) => m.forecast(),
            Model::Holt(m) => m.forecast(),
            Model::HoltSelfTuning(m) => m.forecast(),
        };
        forecast.map(|f| f.max(0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forecasts(kind: PredictorKind, series: &[f64]) -> Vec<f64> {
        let mut f = Forecaster::new(kind, None);
        series
            .iter()
            .map(|&x| {
                f.observe(x);
                f.forecast().unwrap()
            })
            .collect()
    }

    fn assert_close(got: &[f64], want: &[f64]) {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-9, "got {got:?}, want {want:?}");
        }
    }

    #[test]
    fn last_value() {
        assert_close(&forecasts(PredictorKind::LastValue, &[5.0, 9.0, 2.0]), &[5.0, 9.0, 2.0]);
    }

    #[test]
    fn exponential_smoothing_by_hand() {
        // 10; 0.3*20 + 0.7*10 = 13; 0.3*30 + 0.7*13 = 18.1.
        assert_close(&forecasts(PredictorKind::Exp, &[10.0, 20.0, 30.0]), &[10.0, 13.0, 18.1]);
    }

    #[test]
    fn holt_by_hand() {
        // x1 = 20: L = 0.3*20 + 0.7*10 = 13, B = 0.3*3 = 0.9 -> 13.9.
        // x2 = 30: L = 9 + 0.7*13.9 = 18.73, B = 0.3*5.73 + 0.7*0.9 = 2.349 -> 21.079.
        assert_close(&forecasts(PredictorKind::DoubleExp, &[10.0, 20.0, 30.0]), &[10.0, 13.9, 21.079]);
    }

    #[test]
    fn holt_forecast_is_never_negative() {
        let f = forecasts(PredictorKind::DoubleExp, &[100.0, 10.0, 0.0, 0.0]);
        assert!(f.iter().all(|&x| x >= 0.0), "{f:?}");
    }

    #[test]
    fn self_tuning_picks_the_parameter_that_tracks_best() {
        // A level that jumps and stays: the fastest smoother (0.9) has the
        // smallest error after the jump, so self-tuning follows it.
        let mut series = vec![10.0; 5];
        series.extend([100.0; 4]);
        let tuned = forecasts(PredictorKind::ExpSelfTuning, &series);
        let fixed = forecasts(PredictorKind::Exp, &series);
        // Before the jump every candidate is exact: the default is kept.
        assert_close(&tuned[..5], &fixed[..5]);
        // After: 0.9 -> 10 + 0.9*90 = 91 after the first 100, and so on.
        let alpha9 = {
            let mut level: f64 = 10.0;
            series[5..].iter().map(move |&x| {
                level = 0.9 * x + 0.1 * level;
                level
            })
        };
        let want: Vec<f64> = alpha9.collect();
        assert_close(&tuned[6..], &want[1..]);
        assert!(tuned[8] > fixed[8] + 10.0);
    }

    #[test]
    fn self_tuning_holt_follows_a_steady_trend() {
        let series: Vec<f64> = (0..15).map(|i| 100.0 + 10.0 * i as f64).collect();
        let tuned = forecasts(PredictorKind::DoubleExpSelfTuning, &series);
        let fixed = forecasts(PredictorKind::DoubleExp, &series);
        let next = 100.0 + 10.0 * 15.0;
        assert!((tuned[14] - next).abs() < (fixed[14] - next).abs(), "{} vs {}", tuned[14], fixed[14]);
    }

    #[test]
    fn outlier_filter_replaces_spikes_and_keeps_the_raw_history() {
        let mut f = OutlierFilter::seed_default();
        for _ in 0..19 {
            assert_eq!(f.filter(10.0), 10.0);
        }
        // (19*10 + 1000) / 20 = 59.5; 1000 > 5 * 59.5: replaced.
        assert_eq!(f.filter(1000.0), 59.5);
        // The raw 1000 is in the history: 18*10 + 1000 + 10 over 20 = 59.5.
        assert_eq!(f.filter(10.0), 10.0);
        // A lasting step from 10 to 1000 passes after a few windows.
        let passed = (0..10).position(|_| f.filter(1000.0) == 1000.0).unwrap();
        assert!(passed <= 5, "passed after {passed}");
    }

    #[test]
    fn outlier_filter_cannot_fire_on_short_history() {
        let mut f = OutlierFilter::seed_default();
        assert_eq!(f.filter(0.0), 0.0);
        assert_eq!(f.filter(1e9), 1e9);
    }

    #[test]
    fn filtered_forecaster_ignores_a_backup_spike() {
        let mut f = Forecaster::new(PredictorKind::Exp, Some(OutlierFilter::seed_default()));
        for _ in 0..19 {
            f.observe(100.0);
        }
        assert_eq!(f.observe(10_000.0), (1900.0 + 10_000.0) / 20.0);
        assert!(f.forecast().unwrap() < 300.0);
    }

    #[test]
    fn names_round_trip() {
        for kind in PredictorKind::ALL {
            assert_eq!(kind.name().parse::<PredictorKind>().unwrap(), kind);
        }
        assert!("holt".parse::<PredictorKind>().unwrap_err().contains("exp-self"));
    }
}
