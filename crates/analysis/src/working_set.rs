//! Working sets over time (seed 001, chapter 3): per volume and tumbling
//! window of trace time, the working set size WSS (distinct blocks accessed)
//! and the reuse working set size RWSS_N (distinct blocks accessed at least
//! N + 1 times in the window, i.e. reused at least N times); and the
//! knee-point choice of the window length.
//!
//! The counting is the `demand` crate's [`DemandTracker`], the same code
//! that drives on-demand allocation in the simulator.

use std::collections::BTreeMap;

use cloudcache_demand::{DemandMeasure, DemandTracker};
use cloudcache_trace::Op;
use serde::Serialize;

use crate::mrc::{Counted, ExactMrc};
use crate::workload::Workload;

/// One volume in one window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WindowRow {
    /// Window number from the trace start.
    pub window: u64,
    /// Window start (ns, trace time).
    pub start_ns: u64,
    /// Volume id.
    pub volume: u32,
    /// Block accesses in the window.
    pub accesses: u64,
    /// Distinct blocks accessed (WSS, blocks).
    pub wss_blocks: u64,
    /// Distinct blocks accessed at least `n + 1` times (RWSS_N, blocks).
    pub rws_blocks: u64,
}

/// WSS and RWSS_N of every volume in every window of `window_ns` (windows
/// with no access to a volume have no row for it). Requests are taken in
/// file order; one whose time falls in an earlier window than the current
/// one (out of order) is counted in the current window.
pub fn working_sets(w: &Workload, window_ns: u64, n: u32, block_size: u64) -> Vec<WindowRow> {
    let shift = block_size.trailing_zeros();
    let window_ns = window_ns.max(1);
    let start = w.time_span_ns().map_or(0, |(a, _)| a);
    // Per volume, in id order: its tracker and its block accesses this window.
    let mut volumes: BTreeMap<u32, (DemandTracker, u64)> = BTreeMap::new();
    let mut rows = Vec::new();
    let mut current: Option<u64> = None;
    let close =
        |window: u64, volumes: &mut BTreeMap<u32, (DemandTracker, u64)>, rows: &mut Vec<WindowRow>| {
            for (&volume, (tracker, accesses)) in volumes.iter_mut() {
                let demand = tracker.end_window();
                if *accesses > 0 {
                    rows.push(WindowRow {
                        window,
                        start_ns: start + window * window_ns,
                        volume,
                        accesses: *accesses,
                        wss_blocks: demand.working_set_blocks,
                        rws_blocks: demand.demand_blocks,
                    });
                }
                *accesses = 0;
            }
        };
    for r in &w.requests {
        if r.op == Op::Trim {
            continue;
        }
        let Some((first, last)) = r.blocks(shift) else { continue };
        let window = (r.time_ns.saturating_sub(start) / window_ns).max(current.unwrap_or(0));
        if current != Some(window) {
            if let Some(done) = current {
                close(done, &mut volumes, &mut rows);
            }
            current = Some(window);
        }
        let (tracker, accesses) =
            volumes.entry(r.volume).or_insert_with(|| (DemandTracker::new(DemandMeasure::Rws { n }), 0));
        *accesses += last - first + 1;
        tracker.access(first, last - first + 1);
    }
    if let Some(done) = current {
        close(done, &mut volumes, &mut rows);
    }
    rows
}

/// One candidate window of the knee-point analysis.
#[derive(Clone, Debug, Serialize)]
pub struct KneeRow {
    /// Window length (ns).
    pub window_ns: u64,
    /// Complete windows of the trace at this length.
    pub windows: u64,
    /// Mean over windows of the total RWSS_N of all volumes (bytes).
    pub mean_rwss_bytes: u64,
    /// Hit ratio of an LRU cache of that size over the whole trace.
    pub hit_ratio: Option<f64>,
}

/// The knee-point window analysis (seed 001, 3.4.1): for each candidate
/// window, size the cache by the mean RWSS_N measured with it and take the
/// hit ratio such a cache gets (from the exact whole-trace curve); the knee
/// is where the hit ratio stops rising quickly as the window grows.
#[derive(Clone, Debug, Serialize)]
pub struct KneeAnalysis {
    /// N of RWS_N.
    pub n: u32,
    /// One row per candidate window.
    pub candidates: Vec<KneeRow>,
    /// The window at the knee (None with fewer than three candidates).
    pub knee_window_ns: Option<u64>,
}

/// Candidate windows: 1 min to 2 days, those that fit at least twice in the
/// trace.
pub const KNEE_CANDIDATES_NS: [u64; 11] = {
    const MIN: u64 = 60_000_000_000;
    [
        MIN,
        5 * MIN,
        15 * MIN,
        30 * MIN,
        60 * MIN,
        120 * MIN,
        360 * MIN,
        720 * MIN,
        1440 * MIN,
        2880 * MIN,
        5760 * MIN,
    ]
};

/// Run the knee-point analysis of `w` with RWS_N, using its exact curve.
pub fn knee_analysis(w: &Workload, exact: &ExactMrc, n: u32) -> KneeAnalysis {
    let span = w.time_span_ns().map_or(0, |(a, b)| b - a);
    let mut candidates = Vec::new();
    for &window_ns in KNEE_CANDIDATES_NS.iter().filter(|&&t| t.saturating_mul(2) <= span) {
        let rows = working_sets(w, window_ns, n, exact.block_size);
        let windows = span / window_ns + 1;
        let total: u64 = rows.iter().map(|r| r.rws_blocks).sum();
        let mean_rwss_bytes = total / windows * exact.block_size;
        let hit_ratio = if mean_rwss_bytes == 0 {
            Some(0.0)
        } else {
            exact.curve(&[mean_rwss_bytes], Counted::All)[0].hit_ratio
        };
        candidates.push(KneeRow { window_ns, windows, mean_rwss_bytes, hit_ratio });
    }
    let knee_window_ns = knee(&candidates);
    KneeAnalysis { n, candidates, knee_window_ns }
}

/// Kneedle on (log window, hit ratio): both normalized to [0, 1], the knee
/// is the candidate furthest above the straight line from the first to the
/// last; None when there are fewer than three candidates or no rise.
fn knee(rows: &[KneeRow]) -> Option<u64> {
    if rows.len() < 3 {
        return None;
    }
    let xs: Vec<f64> = rows.iter().map(|r| (r.window_ns as f64).ln()).collect();
    let ys: Vec<f64> = rows.iter().map(|r| r.hit_ratio.unwrap_or(0.0)).collect();
    let (x0, x1) = (xs[0], xs[xs.len() - 1]);
    let (y0, y1) = ys.iter().fold((f64::MAX, f64::MIN), |(lo, hi), &y| (lo.min(y), hi.max(y)));
    if y1 - y0 < 1e-9 {
        return None;
    }
    let gain = |i: usize| (ys[i] - y0) / (y1 - y0) - (xs[i] - x0) / (x1 - x0);
    let best = (0..rows.len()).max_by(|&a, &b| gain(a).total_cmp(&gain(b)))?;
    (gain(best) > 0.0).then(|| rows[best].window_ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cloudcache_trace::Request;

    #[test]
    fn wss_and_rws_per_window_and_volume() {
        let r = |t: u64, volume: u32, block: u64, blocks: u64| Request {
            time_ns: t,
            volume,
            op: Op::Read,
            offset: block * 4096,
            len: blocks * 4096,
            content: vec![],
        };
        // Window 0 (t < 100): volume 0 reads 0..=2, then 1 again; volume 1 reads 5 twice.
        // Window 1: volume 0 reads 0 once. Window 3: volume 0 reads 7, 7, 7.
        let w = Workload::from_requests(&[
            r(0, 0, 0, 3),
            r(10, 0, 1, 1),
            r(20, 1, 5, 1),
            r(30, 1, 5, 1),
            r(150, 0, 0, 1),
            r(300, 0, 7, 1),
            r(310, 0, 7, 1),
            r(320, 0, 7, 1),
        ]);
        let rows = working_sets(&w, 100, 1, 4096);
        let got: Vec<(u64, u32, u64, u64, u64)> =
            rows.iter().map(|x| (x.window, x.volume, x.accesses, x.wss_blocks, x.rws_blocks)).collect();
        assert_eq!(got, [(0, 0, 4, 3, 1), (0, 1, 2, 1, 1), (1, 0, 1, 1, 0), (3, 0, 3, 1, 1)]);
        // RWS_2: only block 7 (3 accesses) qualifies.
        let rows = working_sets(&w, 100, 2, 4096);
        assert_eq!(rows.iter().map(|x| x.rws_blocks).collect::<Vec<_>>(), [0, 0, 0, 1]);
        // N = 0 is the WSS.
        assert!(working_sets(&w, 100, 0, 4096).iter().all(|x| x.rws_blocks == x.wss_blocks));
    }

    #[test]
    fn knee_of_a_saturating_curve() {
        let rows: Vec<KneeRow> = [0.1, 0.6, 0.8, 0.82, 0.83, 0.835]
            .iter()
            .enumerate()
            .map(|(i, &h)| KneeRow { window_ns: 1 << i, windows: 1, mean_rwss_bytes: 0, hit_ratio: Some(h) })
            .collect();
        assert_eq!(knee(&rows), Some(1 << 2));
        assert_eq!(knee(&rows[..2]), None);
    }
}
