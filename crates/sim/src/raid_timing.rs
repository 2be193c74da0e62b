//! Latency of the RAID layouts (seed 001 §2.9 compares them on latency):
//! each request's actions on the group become device operations for the
//! discrete-event model with two flash devices, each with its own queue and
//! servers (the `flash` section of the latency model, twice), and the
//! storage server behind the network.
//!
//! The phases are those of a write-back engine replay (`latency::plan`): a
//! read is answered once its hits and misses are read; a write once every
//! copy is stored, so a mirrored write waits for the slower device; dirty
//! victims are read from flash and written to the server before their slot
//! is refilled.

use serde::Serialize;

use crate::latency::des::{Observer, Simulator};
use crate::latency::plan::{phase, Device, Dir, Plan, PlannedOp, Purpose};
use crate::latency::{LatencyModel, LatencyStats};
use crate::load::{CompactRequest, LoadedTrace};
use crate::raid::{RaidAction, DEVICES};
use crate::timed::{Schedule, TimedError};
use cloudcache_trace::{Op, VolumeId};

/// How to time a RAID replay.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RaidTiming {
    /// Device timing (the flash section describes each of the two devices).
    pub model: LatencyModel,
    /// Replay this many times faster than the trace was recorded.
    pub speedup: f64,
}

/// Latency and device load of one layout.
#[derive(Clone, Debug, Serialize)]
pub struct RaidLatency {
    /// Replay speed-up.
    pub speedup: f64,
    /// Every read and write request.
    pub latency: LatencyStats,
    /// Reads.
    pub read_latency: LatencyStats,
    /// Writes.
    pub write_latency: LatencyStats,
    /// Operations the storage server served.
    pub server_ops: u64,
    /// Operations each flash device served.
    pub flash_ops: [u64; DEVICES],
    /// Busy fraction of the server.
    pub server_utilization: f64,
    /// Busy fraction of each flash device.
    pub flash_utilization: [f64; DEVICES],
}

#[derive(Default)]
struct Collector {
    reads: Vec<u64>,
    writes: Vec<u64>,
}

impl Observer for Collector {
    fn answered(&mut self, _volume: VolumeId, read: bool, _arrival_ns: u64, latency_ns: u64) {
        if read {
            self.reads.push(latency_ns);
        } else {
            self.writes.push(latency_ns);
        }
    }

    fn issued(&mut self, _now_ns: u64, _op: &PlannedOp) {}
}

/// The timed side of one RAID replay: feed it every request after the
/// cache handled it.
pub struct RaidTimer {
    sim: Simulator,
    schedule: Schedule,
    plan: Plan,
    clock: u64,
    block_size: u64,
    collector: Collector,
}

impl RaidTimer {
    /// A timer for `trace` (which needs timestamps).
    pub fn new(trace: &LoadedTrace, timing: &RaidTiming, block_size: u64) -> Result<Self, TimedError> {
        timing.model.validate().map_err(|e| TimedError(format!("latency model: {e}")))?;
        let schedule = Schedule::new(trace, timing.speedup)?;
        Ok(RaidTimer {
            sim: Simulator::new(&timing.model),
            schedule,
            plan: Plan::default(),
            clock: 0,
            block_size,
            collector: Collector {
                reads: Vec::with_capacity(trace.requests.len()),
                writes: Vec::with_capacity(trace.requests.len()),
            },
        })
    }

    /// Request `r` arrives; `actions` are what the cache did for it.
    pub fn request(&mut self, r: &CompactRequest, actions: &[RaidAction]) {
        // Out-of-order timestamps arrive "now": time never runs backwards.
        let at = self.schedule.replay_ns(r.time_ns).max(self.clock);
        self.sim.advance_to(at, &mut self.collector);
        self.clock = at;
        plan_actions(&mut self.plan, r.op, actions, self.block_size);
        let record = r.len > 0 && r.op != Op::Trim;
        self.sim.submit(r.volume, r.op == Op::Read, &self.plan, record, &mut self.collector);
    }

    /// Run the remaining work and report.
    pub fn finish(mut self) -> RaidLatency {
        let end_ns = self.sim.finish(&mut self.collector);
        let utilization = |device| {
            let t = self.sim.totals(device);
            if end_ns == 0 {
                0.0
            } else {
                t.busy_ns as f64 / (f64::from(t.servers) * end_ns as f64)
            }
        };
        let mut all: Vec<u64> = self.collector.reads.iter().chain(&self.collector.writes).copied().collect();
        RaidLatency {
            speedup: self.schedule.speedup(),
            latency: LatencyStats::of(&mut all),
            read_latency: LatencyStats::of(&mut self.collector.reads),
            write_latency: LatencyStats::of(&mut self.collector.writes),
            server_ops: self.sim.totals(Device::Backend).ops,
            flash_ops: [0, 1].map(|d| self.sim.totals(Device::flash(d)).ops),
            server_utilization: utilization(Device::Backend),
            flash_utilization: [0, 1].map(|d| utilization(Device::flash(d))),
        }
    }
}

/// Turn one request's RAID actions into phased device operations.
pub fn plan_actions(plan: &mut Plan, op: Op, actions: &[RaidAction], block_size: u64) {
    plan.clear();
    let block = |device, dir, purpose, key: cloudcache_engine::BlockKey| PlannedOp {
        device,
        dir,
        purpose,
        volume: key.volume,
        offset: key.block * block_size,
        len: block_size,
    };
    for &action in actions {
        match action {
            RaidAction::FlashRead { device, key } => {
                plan.push(phase::FETCH, block(Device::flash(device), Dir::Read, Purpose::ClientRead, key))
            }
            RaidAction::BackendRead { key } => {
                plan.push(phase::FETCH, block(Device::Backend, Dir::Read, Purpose::ClientRead, key))
            }
            RaidAction::WriteBack { device, key } => {
                plan.push(
                    phase::VICTIM_READ,
                    block(Device::flash(device), Dir::Read, Purpose::WriteBack, key),
                );
                plan.push(phase::VICTIM_WRITE, block(Device::Backend, Dir::Write, Purpose::WriteBack, key));
            }
            RaidAction::FlashWrite { device, key } => {
                let purpose = if op == Op::Read { Purpose::Fill } else { Purpose::ClientWrite };
                plan.push(phase::STORE, block(Device::flash(device), Dir::Write, purpose, key));
            }
        }
    }
    plan.ack_after = Some(match op {
        Op::Read | Op::Trim => phase::FETCH,
        _ => phase::STORE,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raid::{raid_study, RaidLayout};

    /// Eight one-block writes arrive together, then (much later) eight reads
    /// of the same blocks arrive together. Each flash device has one server
    /// and fixed service times W (write) and R (read), so the answers are
    /// closed-form queueing: n operations queued on one server finish at
    /// W, 2W, ..., nW.
    #[test]
    fn mirrored_writes_queue_on_both_devices_striped_ones_split() {
        let mut model = LatencyModel::default();
        model.flash.servers = 1;
        let w = model.flash.write.mean_ns(false, 4096) / 1000.0;
        let r = model.flash.read.mean_ns(false, 4096) / 1000.0;
        let mut requests = Vec::new();
        for (time_ns, op) in [(0, Op::Write), (1_000_000_000, Op::Read)] {
            for i in 0..8u64 {
                // Far-apart blocks (random accesses) of alternating parity.
                let offset = i * 1001 * 4096;
                requests.push(CompactRequest { time_ns, offset, len: 4096, volume: 0, op });
            }
        }
        let trace = LoadedTrace {
            requests,
            volume_names: vec!["v".into()],
            has_timestamps: true,
            sources: Vec::new(),
        };
        let timing = RaidTiming { model, speedup: 1.0 };
        let study = raid_study(&trace, 64 * 4096, 4096, &RaidLayout::ALL, Some(&timing)).unwrap();
        let mean = |layout: RaidLayout, reads: bool| {
            let result = study.results.iter().find(|x| x.layout == layout).unwrap();
            let l = result.latency.as_ref().unwrap();
            if reads {
                l.read_latency.mean_us
            } else {
                l.write_latency.mean_us
            }
        };
        // Striped: 4 writes per device, answered at W..4W on each: mean 2.5 W.
        assert!((mean(RaidLayout::Raid0, false) - 2.5 * w).abs() < 1e-9);
        // Mirrored (RAID-1; cache-optimized, since written blocks are dirty):
        // all 8 on both devices, answered at W..8W: mean 4.5 W.
        assert!((mean(RaidLayout::Raid1, false) - 4.5 * w).abs() < 1e-9);
        assert!((mean(RaidLayout::CacheOptimized, false) - 4.5 * w).abs() < 1e-9);
        // Reads are hits; mirrored blocks are read from the device their
        // block number picks, so every layout splits them 4 and 4: 2.5 R.
        for layout in RaidLayout::ALL {
            assert!((mean(layout, true) - 2.5 * r).abs() < 1e-9, "{layout:?}");
            let l = study.results.iter().find(|x| x.layout == layout).unwrap().latency.as_ref().unwrap();
            assert_eq!(l.server_ops, 0, "nothing reaches the server");
            let writes = if layout == RaidLayout::Raid0 { 4 } else { 8 };
            assert_eq!(l.flash_ops, [writes + 4, writes + 4], "{layout:?}");
        }
    }

    #[test]
    fn a_trace_without_timestamps_cannot_be_timed() {
        let trace = LoadedTrace {
            requests: vec![CompactRequest { time_ns: 0, offset: 0, len: 4096, volume: 0, op: Op::Read }],
            volume_names: vec!["v".into()],
            has_timestamps: false,
            sources: Vec::new(),
        };
        let timing = RaidTiming { model: LatencyModel::default(), speedup: 1.0 };
        let err = raid_study(&trace, 64 * 4096, 4096, &RaidLayout::ALL, Some(&timing)).err().unwrap();
        assert!(err.0.contains("timestamps"), "{err}");
    }
}
