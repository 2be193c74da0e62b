//! The discrete-event core: devices (flash, the storage server, and a
//! second flash device for RAID groups), each a FIFO queue in front of a
//! fixed number of servers, and requests that move through their plan's
//! phases as operations complete.
//!
//! Time is in nanoseconds of replay time. The caller feeds arrivals in time
//! order, after [`Simulator::advance_to`] has run every event up to the
//! arrival. Request state lives in a slab whose buffers are reused, so a
//! steady replay allocates nothing per request.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use cloudcache_trace::VolumeId;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::model::{DeviceModel, Distribution, LatencyModel};
use super::plan::{phase, Device, Dir, Plan, PlannedOp, Purpose};

/// Event tag bit marking "a server of device (low bit) became free";
/// without it the tag is the index of the flight whose operation completed.
const SERVER_FREE: u32 = 1 << 31;

/// What the simulator reports as it goes.
pub trait Observer {
    /// A client request of `volume` was answered `latency_ns` after it
    /// arrived at `arrival_ns`; `read` says whether it was a read.
    fn answered(&mut self, volume: VolumeId, read: bool, arrival_ns: u64, latency_ns: u64);
    /// An operation started being served at `now_ns`.
    fn issued(&mut self, now_ns: u64, op: &PlannedOp);
}

/// A request in progress.
#[derive(Default)]
struct Flight {
    arrival_ns: u64,
    volume: VolumeId,
    read: bool,
    record: bool,
    ack_after: Option<usize>,
    ops: Vec<PlannedOp>,
    /// `ops[phase_start[p]..phase_start[p + 1]]` is phase `p`.
    phase_start: [u32; phase::COUNT + 1],
    phase: usize,
    outstanding: u32,
}

struct DeviceState {
    model: DeviceModel,
    /// Added to every operation's completion: it occupies no server.
    delay_ns: u64,
    busy: u32,
    queue: VecDeque<(u32, u32)>,
    /// End of the last operation started, per volume, to tell sequential
    /// operations from random ones.
    last_end: Vec<u64>,
    busy_ns: u128,
    ops: u64,
}

impl DeviceState {
    fn new(model: DeviceModel, delay_ns: u64) -> Self {
        DeviceState {
            model,
            delay_ns,
            busy: 0,
            queue: VecDeque::new(),
            last_end: Vec::new(),
            busy_ns: 0,
            ops: 0,
        }
    }
}

/// Busy time and operations of one device.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DeviceTotals {
    /// Operations served.
    pub ops: u64,
    /// Sum of service times, in nanoseconds.
    pub busy_ns: u128,
    /// Servers (to turn busy time into utilization).
    pub servers: u32,
}

/// The event-driven timing simulator.
pub struct Simulator {
    devices: [DeviceState; 3],
    events: BinaryHeap<Reverse<(u64, u64, u32)>>,
    seq: u64,
    flights: Vec<Flight>,
    free: Vec<u32>,
    rng: ChaCha8Rng,
    now: u64,
}

impl Simulator {
    /// A simulator of `model` (validated by the caller).
    pub fn new(model: &LatencyModel) -> Self {
        let rtt = (model.network_rtt_us * 1000.0).round() as u64;
        Simulator {
            devices: [
                DeviceState::new(model.flash, 0),
                DeviceState::new(model.backend, rtt),
                DeviceState::new(model.flash, 0),
            ],
            events: BinaryHeap::new(),
            seq: 0,
            flights: Vec::new(),
            free: Vec::new(),
            rng: ChaCha8Rng::seed_from_u64(model.seed),
            now: 0,
        }
    }

    /// The current time.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Run every event up to and including time `t`, then set the clock to `t`.
    pub fn advance_to(&mut self, t: u64, obs: &mut dyn Observer) {
        self.run_until(t, obs);
        self.now = self.now.max(t);
    }

    /// Run until no work is left; returns the time the last operation ended.
    pub fn finish(&mut self, obs: &mut dyn Observer) -> u64 {
        self.run_until(u64::MAX, obs);
        self.now
    }

    fn run_until(&mut self, t: u64, obs: &mut dyn Observer) {
        while let Some(&Reverse((time, _, tag))) = self.events.peek() {
            if time > t {
                break;
            }
            self.events.pop();
            self.now = time;
            self.handle_event(tag, obs);
        }
    }

    /// Busy time and operations of a device so far.
    pub fn totals(&self, device: Device) -> DeviceTotals {
        let d = &self.devices[device as usize];
        DeviceTotals { ops: d.ops, busy_ns: d.busy_ns, servers: d.model.servers }
    }

    /// Start a request arriving now. `record` says whether its answer is a
    /// client latency (a flush is not).
    pub fn submit(
        &mut self,
        volume: VolumeId,
        read: bool,
        plan: &Plan,
        record: bool,
        obs: &mut dyn Observer,
    ) {
        let f = match self.free.pop() {
            Some(f) => f,
            None => {
                self.flights.push(Flight::default());
                (self.flights.len() - 1) as u32
            }
        };
        let flight = &mut self.flights[f as usize];
        flight.arrival_ns = self.now;
        flight.volume = volume;
        flight.read = read;
        flight.record = record;
        flight.ack_after = plan.ack_after;
        flight.ops.clear();
        for p in 0..phase::COUNT {
            flight.phase_start[p] = flight.ops.len() as u32;
            flight.ops.extend_from_slice(plan.phase(p));
        }
        flight.phase_start[phase::COUNT] = flight.ops.len() as u32;
        self.enter(f, 0, obs);
    }

    /// Move flight `f` to the first phase at or after `from` that has work,
    /// answering the client on the way if its phase is passed.
    fn enter(&mut self, f: u32, from: usize, obs: &mut dyn Observer) {
        let mut p = from;
        loop {
            let flight = &mut self.flights[f as usize];
            if p == phase::COUNT {
                self.free.push(f);
                return;
            }
            let (start, end) = (flight.phase_start[p], flight.phase_start[p + 1]);
            if start == end {
                if flight.ack_after == Some(p) {
                    self.answer(f, obs);
                }
                p += 1;
                continue;
            }
            flight.phase = p;
            flight.outstanding = end - start;
            for i in start..end {
                let device = self.flights[f as usize].ops[i as usize].device;
                self.offer(device, f, i, obs);
            }
            return;
        }
    }

    fn answer(&mut self, f: u32, obs: &mut dyn Observer) {
        let flight = &self.flights[f as usize];
        if flight.record {
            obs.answered(flight.volume, flight.read, flight.arrival_ns, self.now - flight.arrival_ns);
        }
    }

    /// Give operation `i` of flight `f` to its device: served now if a
    /// server is free, queued otherwise.
    fn offer(&mut self, device: Device, f: u32, i: u32, obs: &mut dyn Observer) {
        let d = &mut self.devices[device as usize];
        if d.busy < d.model.servers {
            self.start(device, f, i, obs);
        } else {
            d.queue.push_back((f, i));
        }
    }

    fn start(&mut self, device: Device, f: u32, i: u32, obs: &mut dyn Observer) {
        let op = self.flights[f as usize].ops[i as usize];
        obs.issued(self.now, &op);
        let d = &mut self.devices[device as usize];
        let v = op.volume as usize;
        if v >= d.last_end.len() {
            d.last_end.resize(v + 1, u64::MAX);
        }
        let sequential = d.last_end[v] == op.offset;
        d.last_end[v] = op.offset + op.len;
        let mean = match op.dir {
            Dir::Read => d.model.read.mean_ns(sequential, op.len),
            Dir::Write => d.model.write.mean_ns(sequential, op.len),
            Dir::Trim => d.model.trim_us * 1000.0,
        };
        let service = match d.model.distribution {
            Distribution::Deterministic => mean,
            // Inverse transform; 1 - u is in (0, 1], so the log is finite.
            Distribution::Exponential => -mean * (1.0 - self.rng.gen::<f64>()).ln(),
        }
        .round() as u64;
        d.busy += 1;
        d.ops += 1;
        d.busy_ns += u128::from(service);
        let delay = d.delay_ns;
        self.push_event(self.now + service, SERVER_FREE | device as u32);
        self.push_event(self.now + service + delay, f);
    }

    fn push_event(&mut self, time: u64, tag: u32) {
        self.seq += 1;
        self.events.push(Reverse((time, self.seq, tag)));
    }

    fn handle_event(&mut self, tag: u32, obs: &mut dyn Observer) {
        if tag & SERVER_FREE != 0 {
            let device = Device::ALL[(tag & 3) as usize];
            let d = &mut self.devices[device as usize];
            d.busy -= 1;
            if let Some((f, i)) = d.queue.pop_front() {
                self.start(device, f, i, obs);
            }
            return;
        }
        let f = tag;
        let flight = &mut self.flights[f as usize];
        flight.outstanding -= 1;
        if flight.outstanding == 0 {
            let p = flight.phase;
            if flight.ack_after == Some(p) {
                self.answer(f, obs);
            }
            self.enter(f, p + 1, obs);
        }
    }
}

/// Whether an operation loads the storage server on behalf of a purpose the
/// reports count apart.
pub fn backend_purpose(op: &PlannedOp) -> Option<Purpose> {
    (op.device == Device::Backend).then_some(op.purpose)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cloudcache_trace::Op;

    #[derive(Default)]
    struct Log {
        answers: Vec<(u64, u64)>,
        issued: u64,
    }

    impl Observer for Log {
        fn answered(&mut self, _v: VolumeId, _read: bool, arrival: u64, latency: u64) {
            self.answers.push((arrival, latency));
        }
        fn issued(&mut self, _now: u64, _op: &PlannedOp) {
            self.issued += 1;
        }
    }

    fn model(servers: u32) -> LatencyModel {
        let mut m = LatencyModel { network_rtt_us: 0.0, ..LatencyModel::default() };
        m.backend.servers = servers;
        m.backend.read.random_us = 1000.0;
        m.backend.read.sequential_us = 1000.0;
        m.backend.read.per_4k_us = 0.0;
        m
    }

    #[test]
    fn simultaneous_requests_queue_behind_one_server_and_share_two() {
        for (servers, expected) in
            [(1, vec![1_000_000, 2_000_000, 3_000_000]), (2, vec![1_000_000, 1_000_000, 2_000_000])]
        {
            let mut sim = Simulator::new(&model(servers));
            let mut log = Log::default();
            let mut plan = Plan::default();
            for i in 0..3u64 {
                // Far apart offsets: random accesses.
                plan.uncached(0, Op::Read, i << 30, 4096);
                sim.submit(0, true, &plan, true, &mut log);
            }
            sim.finish(&mut log);
            let latencies: Vec<u64> = log.answers.iter().map(|a| a.1).collect();
            assert_eq!(latencies, expected, "{servers} server(s)");
            assert_eq!(sim.totals(Device::Backend).ops, 3);
        }
    }

    #[test]
    fn network_delay_adds_latency_but_not_server_time() {
        let mut m = model(1);
        m.network_rtt_us = 100.0;
        let mut sim = Simulator::new(&m);
        let mut log = Log::default();
        let mut plan = Plan::default();
        plan.uncached(0, Op::Read, 1 << 30, 4096);
        sim.submit(0, true, &plan, true, &mut log);
        plan.uncached(0, Op::Read, 1 << 40, 4096);
        sim.submit(0, true, &plan, true, &mut log);
        sim.finish(&mut log);
        // The second waits for the server (1 ms), not for the first's reply.
        assert_eq!(log.answers, vec![(0, 1_100_000), (0, 2_100_000)]);
        assert_eq!(sim.totals(Device::Backend).busy_ns, 2_000_000);
    }

    #[test]
    fn sequential_operations_cost_less_on_the_server() {
        let mut m = model(1);
        m.backend.read.sequential_us = 200.0;
        let mut sim = Simulator::new(&m);
        let mut log = Log::default();
        let mut plan = Plan::default();
        plan.uncached(0, Op::Read, 0, 4096);
        sim.submit(0, true, &plan, true, &mut log);
        sim.finish(&mut log);
        plan.uncached(0, Op::Read, 4096, 4096);
        sim.submit(0, true, &plan, true, &mut log);
        let end = sim.finish(&mut log);
        assert_eq!(log.answers[1].1, 200_000);
        assert_eq!(end, 1_200_000);
    }

    #[test]
    fn background_phases_keep_the_device_busy_after_the_answer() {
        let m = model(1);
        let mut sim = Simulator::new(&m);
        let mut log = Log::default();
        let mut plan = Plan::default();
        plan.uncached(0, Op::Read, 1 << 30, 4096);
        // A second, background phase on the same server.
        plan.push(
            phase::CLEAN_WRITE,
            PlannedOp {
                device: Device::Backend,
                dir: Dir::Read,
                purpose: Purpose::WriteBack,
                volume: 0,
                offset: 1 << 40,
                len: 4096,
            },
        );
        sim.submit(0, true, &plan, true, &mut log);
        let end = sim.finish(&mut log);
        assert_eq!(log.answers, vec![(0, 1_000_000)]);
        assert_eq!(end, 2_000_000);
        assert_eq!(log.issued, 2);
    }
}
