//! The per-window control loop of on-demand allocation, shared by every
//! driver (the simulator in trace time, the server in wall-clock time):
//! feed it each volume's block accesses, close a window when the driver's
//! clock says so, and hand the shares it returns to the cache engine.

use crate::allocate::{allocate, equal_shares, Spare};
use crate::predict::{Forecaster, OutlierFilter, PredictorKind};
use crate::window::{DemandMeasure, DemandTracker, WindowDemand};

/// How a controller measures, predicts and divides.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ControllerConfig {
    /// What each volume's demand is.
    pub measure: DemandMeasure,
    /// Predictor of the next window's demand.
    pub predictor: PredictorKind,
    /// Whether the outlier filter (n = 20, lambda = 5) is in front of it.
    pub outlier_filter: bool,
    /// What spare capacity does.
    pub spare: Spare,
    /// Whether shares follow predicted demand; if not, they stay at the
    /// equal warm-up shares (static partitions) and demand is only measured.
    pub follow_demand: bool,
}

/// One volume's finished window, as the controller saw it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VolumeWindow {
    /// What was measured.
    pub demand: WindowDemand,
    /// What the predictor was fed (the observation or the filter's mean).
    pub filtered_demand_blocks: f64,
    /// The forecast that was in force for this window (none in the warm-up).
    pub predicted_demand_blocks: Option<u64>,
    /// The share that was in force for this window.
    pub share_blocks: u64,
}

/// Per-volume trackers and predictors and the shares they lead to.
#[derive(Clone, Debug)]
pub struct Controller {
    config: ControllerConfig,
    capacity_blocks: u64,
    trackers: Vec<DemandTracker>,
    forecasters: Vec<Forecaster>,
    /// Forecast in force for the current window.
    predicted: Vec<Option<u64>>,
    /// Shares in force, in blocks.
    shares: Vec<u64>,
    demands: Vec<u64>,
}

impl Controller {
    /// A controller for `volumes` volumes sharing `capacity_blocks`, starting
    /// with the warm-up window's equal shares.
    pub fn new(config: ControllerConfig, volumes: usize, capacity_blocks: u64) -> Self {
        let filter = || config.outlier_filter.then(OutlierFilter::seed_default);
        let mut shares = Vec::new();
        equal_shares(capacity_blocks, volumes, &mut shares);
        Controller {
            config,
            capacity_blocks,
            trackers: vec![DemandTracker::new(config.measure); volumes],
            forecasters: vec![Forecaster::new(config.predictor, filter()); volumes],
            predicted: vec![None; volumes],
            shares,
            demands: Vec::with_capacity(volumes),
        }
    }

    /// Volumes under control.
    pub fn volumes(&self) -> usize {
        self.trackers.len()
    }

    /// Shares in force, in blocks, by volume id.
    pub fn shares(&self) -> &[u64] {
        &self.shares
    }

    /// Adds a volume (a VM attached while running). Until the next window
    /// closes, every volume has an equal share, as in the warm-up window:
    /// the newcomer has no history to predict from.
    pub fn add_volume(&mut self) {
        let filter = self.config.outlier_filter.then(OutlierFilter::seed_default);
        self.trackers.push(DemandTracker::new(self.config.measure));
        self.forecasters.push(Forecaster::new(self.config.predictor, filter));
        self.predicted.push(None);
        equal_shares(self.capacity_blocks, self.trackers.len(), &mut self.shares);
    }

    /// `volume` accessed blocks `first .. first + count`.
    #[inline]
    pub fn access(&mut self, volume: usize, first: u64, count: u64) {
        self.trackers[volume].access(first, count);
    }

    /// End the window: measure, filter and predict each volume, write what
    /// happened in it to `finished` (one entry per volume), and set the next
    /// window's shares (see [`Controller::shares`]).
    pub fn close_window(&mut self, finished: &mut Vec<VolumeWindow>) {
        finished.clear();
        self.demands.clear();
        for v in 0..self.trackers.len() {
            let demand = self.trackers[v].end_window();
            let filtered = self.forecasters[v].observe(demand.demand_blocks as f64);
            let forecast = self.forecasters[v].forecast().map(|f| f.ceil() as u64);
            finished.push(VolumeWindow {
                demand,
                filtered_demand_blocks: filtered,
                predicted_demand_blocks: self.predicted[v],
                share_blocks: self.shares[v],
            });
            self.predicted[v] = forecast;
            self.demands.push(forecast.unwrap_or(0));
        }
        if self.config.follow_demand {
            allocate(self.capacity_blocks, &self.demands, self.config.spare, &mut self.shares);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(follow_demand: bool) -> ControllerConfig {
        ControllerConfig {
            measure: DemandMeasure::Rws { n: 1 },
            predictor: PredictorKind::LastValue,
            outlier_filter: false,
            spare: Spare::Idle,
            follow_demand,
        }
    }

    #[test]
    fn a_volume_added_later_gets_an_equal_share_until_the_next_window() {
        let mut c = Controller::new(config(true), 1, 90);
        c.access(0, 0, 10);
        c.access(0, 0, 10);
        let mut finished = Vec::new();
        c.close_window(&mut finished);
        assert_eq!(c.shares(), &[10]);
        c.add_volume();
        c.add_volume();
        assert_eq!((c.volumes(), c.shares()), (3, &[30, 30, 30][..]));
        c.access(0, 0, 10);
        c.access(0, 0, 10);
        c.access(2, 0, 5);
        c.access(2, 0, 5);
        c.close_window(&mut finished);
        assert_eq!(finished.len(), 3);
        assert_eq!(c.shares(), &[10, 0, 5]);
    }

    #[test]
    fn warm_up_then_shares_follow_the_last_window() {
        let mut c = Controller::new(config(true), 2, 100);
        assert_eq!(c.shares(), &[50, 50]);
        c.access(0, 0, 10);
        c.access(0, 0, 10); // volume 0 reuses 10 blocks
        c.access(1, 100, 30); // volume 1 scans 30
        let mut finished = Vec::new();
        c.close_window(&mut finished);
        assert_eq!(finished[0].demand, WindowDemand { working_set_blocks: 10, demand_blocks: 10 });
        assert_eq!((finished[0].predicted_demand_blocks, finished[0].share_blocks), (None, 50));
        assert_eq!(c.shares(), &[10, 0]);
        c.close_window(&mut finished);
        assert_eq!((finished[0].predicted_demand_blocks, finished[0].share_blocks), (Some(10), 10));
        // An idle window: demand and shares fall to 0, never below.
        assert_eq!(c.shares(), &[0, 0]);
    }

    #[test]
    fn static_shares_stay_put_but_demand_is_measured() {
        let mut c = Controller::new(config(false), 3, 10);
        c.access(2, 0, 4);
        c.access(2, 0, 4);
        let mut finished = Vec::new();
        c.close_window(&mut finished);
        assert_eq!(finished[2].demand.demand_blocks, 4);
        assert_eq!(c.shares(), &[4, 3, 3]);
    }
}
