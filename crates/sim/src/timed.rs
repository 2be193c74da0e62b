//! Timed replay: when each request of a trace arrives, honouring its
//! timestamp and a speed-up factor (seed 001 replays its traces with
//! btreplay at 20x), and the checks that a timed study needs from a trace.

use std::fmt;

use cloudcache_report::format::format_duration_ns;

use crate::load::LoadedTrace;

/// Why a trace cannot be replayed in time, naming what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimedError(pub String);

impl fmt::Display for TimedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TimedError {}

/// Maps trace time to replay time: `(t - first) / speedup`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Schedule {
    first_ns: u64,
    last_ns: u64,
    speedup: f64,
}

impl Schedule {
    /// The schedule of `trace` replayed `speedup` times faster than it was
    /// recorded. Refuses a trace without timestamps, an empty trace, and a
    /// speed-up that is not a positive number.
    pub fn new(trace: &LoadedTrace, speedup: f64) -> Result<Self, TimedError> {
        if !(speedup.is_finite() && speedup > 0.0) {
            return Err(TimedError(format!("speed-up {speedup} is not a positive number")));
        }
        if !trace.has_timestamps {
            let sources: Vec<String> =
                trace.sources.iter().map(|s| format!("{} ({})", s.path.display(), s.format)).collect();
            return Err(TimedError(format!(
                "timed replay needs request timestamps, but {} has none; \
                 convert the trace from a format that records issue times",
                if sources.is_empty() { "the trace".to_owned() } else { sources.join(", ") }
            )));
        }
        let (first_ns, last_ns) =
            trace.time_span_ns().ok_or_else(|| TimedError("the trace has no requests".into()))?;
        Ok(Schedule { first_ns, last_ns, speedup })
    }

    /// The speed-up factor.
    pub fn speedup(&self) -> f64 {
        self.speedup
    }

    /// Trace time of the first request.
    pub fn first_ns(&self) -> u64 {
        self.first_ns
    }

    /// Trace time from the first to the last request.
    pub fn duration_ns(&self) -> u64 {
        self.last_ns - self.first_ns
    }

    /// Replay time of a request issued at trace time `trace_ns`.
    pub fn replay_ns(&self, trace_ns: u64) -> u64 {
        self.offset_to_replay(trace_ns.saturating_sub(self.first_ns))
    }

    /// Replay time of an offset from the start of the trace.
    pub fn offset_to_replay(&self, offset_ns: u64) -> u64 {
        (offset_ns as f64 / self.speedup).round() as u64
    }

    /// Trace offset (from the first request) of a replay time.
    pub fn replay_to_offset(&self, replay_ns: u64) -> u64 {
        (replay_ns as f64 * self.speedup).round() as u64
    }

    /// Check that events at these offsets from the start of the trace (e.g.
    /// host reboots) fall inside it; `what` names them in the error.
    pub fn check_offsets(&self, what: &str, offsets_ns: &[u64]) -> Result<(), TimedError> {
        for &offset in offsets_ns {
            if offset >= self.duration_ns() {
                return Err(TimedError(format!(
                    "{what} at {} is past the end of the trace, which lasts {}",
                    format_duration_ns(offset),
                    format_duration_ns(self.duration_ns())
                )));
            }
            if offset == 0 {
                return Err(TimedError(format!("{what} at 0 s: the cache is empty at the start anyway")));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::{CompactRequest, SourceInfo};
    use cloudcache_trace::Op;
    use std::path::PathBuf;

    fn trace(times: &[u64], has_timestamps: bool) -> LoadedTrace {
        LoadedTrace {
            requests: times
                .iter()
                .map(|&t| CompactRequest { time_ns: t, offset: 0, len: 4096, volume: 0, op: Op::Read })
                .collect(),
            volume_names: vec!["vm".into()],
            has_timestamps,
            sources: vec![SourceInfo {
                path: PathBuf::from("t.csv"),
                format: "csv".into(),
                compression: "none".into(),
                requests: times.len() as u64,
                skipped_lines: 0,
            }],
        }
    }

    #[test]
    fn speedup_divides_time_since_the_first_request() {
        let s = Schedule::new(&trace(&[5_000, 25_000, 45_000], true), 20.0).unwrap();
        assert_eq!(s.duration_ns(), 40_000);
        assert_eq!(s.replay_ns(5_000), 0);
        assert_eq!(s.replay_ns(45_000), 2_000);
        assert_eq!(s.replay_to_offset(2_000), 40_000);
    }

    #[test]
    fn refuses_what_cannot_be_timed() {
        let err = Schedule::new(&trace(&[0, 1], false), 1.0).unwrap_err();
        assert!(err.0.contains("needs request timestamps") && err.0.contains("t.csv (csv)"), "{err}");
        assert!(Schedule::new(&trace(&[], true), 1.0).unwrap_err().0.contains("no requests"));
        for bad in [0.0, -2.0, f64::NAN, f64::INFINITY] {
            assert!(Schedule::new(&trace(&[0, 1], true), bad).unwrap_err().0.contains("speed-up"));
        }
    }

    #[test]
    fn events_past_the_end_are_refused() {
        let hour = 3_600_000_000_000;
        let s = Schedule::new(&trace(&[0, 2 * hour], true), 1.0).unwrap();
        s.check_offsets("reboot", &[hour]).unwrap();
        let err = s.check_offsets("reboot", &[hour, 6 * hour]).unwrap_err();
        assert!(err.0.contains("reboot at 6 h") && err.0.contains("past the end"), "{err}");
    }
}
