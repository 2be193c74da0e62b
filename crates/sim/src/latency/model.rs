//! Service-time models of the devices a host-side cache talks to: the local
//! flash device and the storage server behind the network. Defaults are
//! calibrated to seed 001's measurements (docs/latency.md gives the
//! derivation); a TOML file can override any of them.

use std::fmt;

use serde::{Deserialize, Serialize};

/// How a service time varies around its mean.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Distribution {
    /// Every operation of the same size takes the same time.
    Deterministic,
    /// Exponentially distributed with the computed mean (a memoryless server,
    /// the textbook model of a disk's seek-dominated service).
    Exponential,
}

/// The cost of one kind of operation on a device: a fixed part per operation
/// and a transfer part per 4 KiB.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpCost {
    /// Microseconds per operation that does not continue the previous one
    /// (a random access).
    pub random_us: f64,
    /// Microseconds per operation that starts where the device's previous
    /// operation on the same volume ended (no seek). Flash ignores order, so
    /// its defaults equal `random_us`.
    pub sequential_us: f64,
    /// Microseconds per 4 KiB transferred.
    pub per_4k_us: f64,
}

/// One device: a queue in front of `servers` identical servers (its
/// concurrency limit: flash channels, disk spindles).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceModel {
    /// Operations served at once; the rest wait in FIFO order.
    pub servers: u32,
    /// Reads.
    pub read: OpCost,
    /// Writes.
    pub write: OpCost,
    /// Trims (discards): a fixed cost, no transfer.
    pub trim_us: f64,
    /// Service-time variation.
    pub distribution: Distribution,
}

/// The whole timing model.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LatencyModel {
    /// The host's flash cache device.
    pub flash: DeviceModel,
    /// The storage server (iSCSI target and its disk).
    pub backend: DeviceModel,
    /// Network round trip to the storage server in microseconds: a pure
    /// delay added to every backend operation (it occupies no server).
    pub network_rtt_us: f64,
    /// Seed of the random service times (exponential distribution only).
    pub seed: u64,
}

impl Default for LatencyModel {
    /// Seed 001's testbed: an Intel 120 GB MLC SATA SSD in the host, an iSCSI
    /// target over Gigabit Ethernet on one 7.2K RPM SAS disk.
    fn default() -> Self {
        LatencyModel {
            flash: DeviceModel {
                servers: 8,
                // 91 + 16 = 107 us per 4 KiB read: the warm SATA cache read (§2.5).
                read: OpCost { random_us: 91.0, sequential_us: 91.0, per_4k_us: 16.0 },
                // 50 + 10 = 60 us per 4 KiB write: WB/WT cached writes (§2.5).
                write: OpCost { random_us: 50.0, sequential_us: 50.0, per_4k_us: 10.0 },
                trim_us: 10.0,
                distribution: Distribution::Deterministic,
            },
            backend: DeviceModel {
                servers: 1,
                // 100 RTT + 170 + 33 = 0.30 ms sequential 4 KiB read (§2.5 no cache);
                // 100 + 1000 + 33 = 1.13 ms random 4 KiB (§2.6: ~1.2 ms random r/w).
                read: OpCost { random_us: 1000.0, sequential_us: 170.0, per_4k_us: 33.0 },
                // 100 + 270 + 33 = 0.40 ms sequential 4 KiB write (§2.5 no cache).
                write: OpCost { random_us: 1000.0, sequential_us: 270.0, per_4k_us: 33.0 },
                trim_us: 50.0,
                distribution: Distribution::Deterministic,
            },
            network_rtt_us: 100.0,
            seed: 1,
        }
    }
}

/// A timing model that cannot work, with the setting named.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelError(pub String);

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ModelError {}

impl LatencyModel {
    /// Read a model from TOML; settings left out keep their defaults.
    pub fn from_toml_str(text: &str) -> Result<Self, ModelError> {
        let model: LatencyModel = toml::from_str(text).map_err(|e| ModelError(e.to_string()))?;
        model.validate()?;
        Ok(model)
    }

    /// Check every setting; the error names the one that is wrong.
    pub fn validate(&self) -> Result<(), ModelError> {
        for (name, device) in [("flash", &self.flash), ("backend", &self.backend)] {
            if device.servers == 0 {
                return Err(ModelError(format!("{name}.servers must be at least 1")));
            }
            for (field, value) in [
                ("read.random_us", device.read.random_us),
                ("read.sequential_us", device.read.sequential_us),
                ("read.per_4k_us", device.read.per_4k_us),
                ("write.random_us", device.write.random_us),
                ("write.sequential_us", device.write.sequential_us),
                ("write.per_4k_us", device.write.per_4k_us),
                ("trim_us", device.trim_us),
            ] {
                if !(value.is_finite() && value >= 0.0) {
                    return Err(ModelError(format!(
                        "{name}.{field} = {value} is not a non-negative number of microseconds"
                    )));
                }
            }
        }
        if !(self.network_rtt_us.is_finite() && self.network_rtt_us >= 0.0) {
            return Err(ModelError(format!(
                "network_rtt_us = {} is not a non-negative number of microseconds",
                self.network_rtt_us
            )));
        }
        Ok(())
    }
}

impl OpCost {
    /// Mean service time in nanoseconds of an operation of `bytes`.
    pub fn mean_ns(&self, sequential: bool, bytes: u64) -> f64 {
        let fixed = if sequential { self.sequential_us } else { self.random_us };
        (fixed + self.per_4k_us * bytes as f64 / 4096.0) * 1000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_reproduce_the_seed_measurements() {
        let m = LatencyModel::default();
        let rtt = m.network_rtt_us * 1000.0;
        // Warm cache read and cached write of one 4 KiB block.
        assert_eq!(m.flash.read.mean_ns(false, 4096), 107_000.0);
        assert_eq!(m.flash.write.mean_ns(false, 4096), 60_000.0);
        // No-cache sequential read ~0.3 ms, write ~0.4 ms, random ~1.2 ms.
        assert_eq!(rtt + m.backend.read.mean_ns(true, 4096), 303_000.0);
        assert_eq!(rtt + m.backend.write.mean_ns(true, 4096), 403_000.0);
        assert_eq!(rtt + m.backend.read.mean_ns(false, 4096), 1_133_000.0);
        m.validate().unwrap();
    }

    #[test]
    fn toml_overrides_and_rejects() {
        let m = LatencyModel::from_toml_str(
            "network_rtt_us = 0\n[backend]\nservers = 2\ndistribution = \"exponential\"\n\
             trim_us = 1\nread = { random_us = 5, sequential_us = 5, per_4k_us = 0 }\n\
             write = { random_us = 5, sequential_us = 5, per_4k_us = 0 }\n",
        )
        .unwrap();
        assert_eq!(m.backend.servers, 2);
        assert_eq!(m.backend.distribution, Distribution::Exponential);
        assert_eq!(m.flash, LatencyModel::default().flash);
        let err = LatencyModel::from_toml_str("[flash]\nservers = 0\n").unwrap_err();
        assert!(err.0.contains("missing field") || err.0.contains("servers"), "{err}");
        let mut bad = LatencyModel::default();
        bad.flash.servers = 0;
        assert!(bad.validate().unwrap_err().0.contains("flash.servers"));
        bad = LatencyModel::default();
        bad.backend.write.per_4k_us = -1.0;
        assert!(bad.validate().unwrap_err().0.contains("backend.write.per_4k_us"));
        assert!(LatencyModel::from_toml_str("speed = 3").unwrap_err().0.contains("unknown field"));
    }
}
